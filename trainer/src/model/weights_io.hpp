#pragma once
// Safetensors in and out for torch tensors (the header format itself is core's
// wingspan/safetensors.hpp): single files, sharded folders with model.safetensors.index.json,
// writes through a temporary file and a rename.
#include <ATen/ATen.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "wingspan/safetensors.hpp"

namespace wingspan::train {

class WeightReader {
public:
    // model.safetensors, or model.safetensors.index.json and its shards; nullopt when the
    // folder has neither. Throws InputError for unreadable or malformed files.
    static std::optional<WeightReader> open_dir(const std::filesystem::path& dir);
    static WeightReader open_file(const std::filesystem::path& file);

    bool contains(const std::string& name) const { return entries_.count(name) != 0; }
    std::vector<std::string> names() const;
    const safetensors::TensorInfo& info(const std::string& name) const;
    // The tensor as stored (its dtype and shape). Throws InputError.
    at::Tensor read(const std::string& name) const;
    std::string describe() const;   // "model.safetensors" / "3 shards"

private:
    struct Entry {
        std::filesystem::path file;
        std::uint64_t data_offset = 0;
        safetensors::TensorInfo info;
    };
    void add_file(const std::filesystem::path& file, const std::optional<std::vector<std::string>>& only);
    std::map<std::string, Entry> entries_;
    std::vector<std::filesystem::path> files_;
};

// A base weight's stored shape by name, nullopt when `r` has none (adapter_config.hpp's BaseShape).
std::function<std::optional<std::vector<std::int64_t>>(const std::string&)> base_shape_of(const WeightReader& r);

// A libtorch error as one line: its message without the C++ stack trace c10 appends.
std::string one_line(const c10::Error& e);

at::ScalarType scalar_type_of(const std::string& safetensors_dtype);   // throws InputError
std::string safetensors_dtype_of(at::ScalarType t);

// Checks the file's tensors against the expected names and shapes: a missing, extra or
// misshapen tensor is an InputError naming it. Ignorable extras (rotary inv_freq buffers,
// a duplicated tied lm_head) are reported in `ignored`.
void check_weights(const WeightReader& r,
                   const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& expected,
                   std::vector<std::string>& ignored);

// What was written: its size and FNV-1a 64 checksum (for a checkpoint's manifest).
struct FileDigest {
    std::uint64_t bytes = 0;
    std::uint64_t checksum = 0;
};

// Writes tensors to `file` (core's AtomicFile: an exclusive temporary, checked writes, fsync,
// rename). Throws IoError.
FileDigest save_safetensors(const std::filesystem::path& file,
                      const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// All tensors of one file, by name.
std::map<std::string, at::Tensor> load_safetensors(const std::filesystem::path& file);
// Writes text to a file the same way. Throws IoError.
FileDigest write_file_atomic(const std::filesystem::path& file, const std::string& text);

}  // namespace wingspan::train
