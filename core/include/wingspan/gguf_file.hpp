#pragma once
// A GGUF file's header read for serve planning (issue 30 item 3): the metadata scalars, each
// tensor's ggml type and byte size, and what llama.cpp allocates to serve it. Nothing but the
// header is read (a 16 GB model is a few MB of header); a damaged or hostile file is an
// InputError naming what is wrong, never a crash or an allocation sized by the file's claims.
// Format: ggml/src/gguf.cpp (ggml-org/llama.cpp); type sizes: ggml/src/ggml.c type_traits.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace wingspan::gguf {

// Bytes of `elements` values of ggml type `type` (blocks of 32 or 256); nullopt for a type this
// table does not know or a count that is not whole blocks.
std::optional<std::uint64_t> ggml_type_bytes(std::uint32_t type, std::uint64_t elements);
std::string ggml_type_name(std::uint32_t type);

struct TensorEntry {
    std::string name;
    std::vector<std::uint64_t> ne;   // ggml order: ne[0] innermost
    std::uint32_t type = 0;
    std::uint64_t bytes = 0;
};

struct File {
    std::uint32_t version = 0;
    // Scalars (integers as int64, floats as double, bools, strings); arrays by their length.
    std::map<std::string, std::variant<std::int64_t, double, bool, std::string>> values;
    std::map<std::string, std::uint64_t> array_lengths;
    std::vector<TensorEntry> tensors;

    std::string architecture() const;
    std::optional<std::int64_t> integer(const std::string& key) const;
    std::uint64_t tensor_bytes() const;   // all tensors' data
};

// Throws InputError for anything that is not a readable GGUF v2/v3 header.
File read_file(const std::filesystem::path& path);

// llama.cpp's KV cache (src/llama-kv-cache.cpp): per layer a K tensor of head_count_kv ×
// key_length values by kv_size cells and a V tensor the same with value_length, in type_k /
// type_v; kv_size is the context padded to 256 cells (llama_context's n_ctx; one unified cache
// whatever the parallel sequences); sliding-window and MLA caches as llama_cpp_terms.hpp sizes them.
struct KvCacheOptions {
    std::int64_t n_ctx = 4096;
    std::uint32_t type_k = 1, type_v = 1;   // ggml types: 1 F16, 8 Q8_0, 2 Q4_0
};
struct KvCacheBytes {
    std::int64_t cells = 0;
    std::uint64_t k_bytes = 0, v_bytes = 0;
    std::uint64_t total() const { return k_bytes + v_bytes; }
};
KvCacheBytes llama_cpp_kv_cache(const File& f, const KvCacheOptions& o);

}  // namespace wingspan::gguf
