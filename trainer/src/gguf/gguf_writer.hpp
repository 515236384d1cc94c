#pragma once
// GGUF version 3, the file format llama.cpp, Ollama and LM Studio load: a header (magic "GGUF",
// version, tensor and key counts), typed metadata key/values, tensor descriptions (name, ggml
// dimensions innermost first, ggml type, offset into the data section), then the tensors' data,
// each starting on a 32-byte boundary (general.alignment's default).
// Layout: ggml/include/gguf.h and ggml/src/gguf.cpp of ggml-org/llama.cpp; block layouts of the
// quantized types: ggml/src/ggml-common.h (block_q8_0, block_q4_0).
// No torch here: the writer takes bytes; gguf_quant.hpp makes them from floats.
#include <cstdint>
#include <string>
#include <vector>

#include "wingspan/safe_file.hpp"

namespace wingspan::train::gguf {

inline constexpr std::uint64_t kAlignment = 32;

// ggml_type values (ggml.h) of the types the exporter writes.
enum class GgmlType : std::uint32_t { F32 = 0, F16 = 1, Q4_0 = 2, Q8_0 = 8, BF16 = 30 };

struct TypeTraits {
    std::int64_t block_elements;   // elements one block holds (1 for plain floats)
    std::int64_t block_bytes;      // bytes of one block
    const char* name;
};
TypeTraits traits(GgmlType t);
// Bytes of a tensor of `elements` values whose rows have `row` elements; throws InputError
// when the row is not a whole number of blocks.
std::uint64_t tensor_bytes(GgmlType t, std::int64_t row, std::int64_t elements);

// Metadata key/values in the order they are added (GGUF value types: gguf.h's gguf_type).
class Metadata {
public:
    void add_u32(const std::string& key, std::uint32_t v);
    void add_i32(const std::string& key, std::int32_t v);
    void add_f32(const std::string& key, float v);
    void add_bool(const std::string& key, bool v);
    void add_string(const std::string& key, const std::string& v);
    void add_strings(const std::string& key, const std::vector<std::string>& v);
    void add_i32s(const std::string& key, const std::vector<std::int32_t>& v);
    void add_f32s(const std::string& key, const std::vector<float>& v);
    std::uint64_t count() const { return count_; }
    const std::string& bytes() const { return bytes_; }   // the serialized key/values

private:
    void key(const std::string& k, std::uint32_t type);
    std::string bytes_;
    std::uint64_t count_ = 0;
};

struct TensorDesc {
    std::string name;
    std::vector<std::int64_t> shape;   // PyTorch order (outermost first); written reversed, as ggml's ne
    GgmlType type = GgmlType::F32;
    std::uint64_t bytes() const;       // its data's size
};

// Writes the header at construction, then the tensors' data in the order given, in pieces of
// any size (the caller never holds more than a slice of one tensor), padding each tensor to
// the alignment when its last byte is in.
class Writer {
public:
    Writer(AtomicFile& file, const Metadata& meta, std::vector<TensorDesc> tensors);
    // More of the current tensor's data; throws InputError past its described size.
    void write(const void* data, std::uint64_t bytes);
    // Every tensor written? Throws InputError naming the first missing one otherwise.
    void finish() const;
    std::uint64_t total_bytes() const { return total_; }   // the whole file's size
    size_t written() const { return next_; }

private:
    AtomicFile& file_;
    std::vector<TensorDesc> tensors_;
    size_t next_ = 0;
    std::uint64_t in_tensor_ = 0;   // bytes of tensors_[next_] written so far
    std::uint64_t total_ = 0;
};

}  // namespace wingspan::train::gguf
