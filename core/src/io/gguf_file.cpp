#include "wingspan/gguf_file.hpp"

#include <cstring>
#include <fstream>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/llama_cpp_terms.hpp"

namespace wingspan::gguf {

namespace fs = std::filesystem;

namespace {

struct TypeSize {
    std::uint32_t id;
    const char* name;
    std::uint64_t block, bytes;
};
// ggml.h's enum ggml_type with type_traits' blck_size and type_size (ggml/src/ggml.c).
constexpr TypeSize kTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},        {2, "Q4_0", 32, 18},     {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},     {8, "Q8_0", 32, 34},     {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},  {12, "Q4_K", 256, 144},  {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},  {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},  {20, "IQ4_NL", 32, 18},  {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},       {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},       {28, "F64", 1, 8},       {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},  {35, "TQ2_0", 256, 66},  {39, "MXFP4", 32, 17},
};

const TypeSize* type_of(std::uint32_t t) {
    for (const auto& s : kTypes)
        if (s.id == t) return &s;
    return nullptr;
}

// gguf.h's gguf_type.
enum : std::uint32_t { kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };

// Reads the header, never trusting a count or length past what the file can hold.
class Cursor {
public:
    explicit Cursor(const fs::path& p) : path_(p), in_(p, std::ios::binary) {
        require_regular_file(p);
        if (!in_) throw InputError(p.string() + ": cannot be read");
        size_ = fs::file_size(p);
    }
    template <class T>
    T get() {
        T v;
        bytes(&v, sizeof v);
        return v;
    }
    void bytes(void* out, std::uint64_t n) {
        if (n > size_ - pos_) fail("ends inside its header");
        in_.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
        if (!in_) fail("cannot be read");
        pos_ += n;
    }
    std::string string() {
        const auto n = get<std::uint64_t>();
        if (n > size_ - pos_ || n > (64u << 20)) fail("has a string longer than the file");
        std::string s(n, '\0');
        bytes(s.data(), n);
        return s;
    }
    void skip(std::uint64_t n) {
        if (n > size_ - pos_) fail("ends inside its header");
        in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
        pos_ += n;
    }
    std::uint64_t left() const { return size_ - pos_; }
    [[noreturn]] void fail(const std::string& why) const { throw InputError(path_.string() + ": not a GGUF file we can read (it " + why + ")"); }

private:
    fs::path path_;
    std::ifstream in_;
    std::uint64_t size_ = 0, pos_ = 0;
};

std::uint64_t scalar_size(std::uint32_t t) {
    switch (t) {
        case kU8: case kI8: case kBool: return 1;
        case kU16: case kI16: return 2;
        case kU32: case kI32: case kF32: return 4;
        case kU64: case kI64: case kF64: return 8;
        default: return 0;
    }
}

void read_value(Cursor& c, File& f, const std::string& key, std::uint32_t type) {
    switch (type) {
        case kU8: f.values[key] = std::int64_t{c.get<std::uint8_t>()}; return;
        case kI8: f.values[key] = std::int64_t{c.get<std::int8_t>()}; return;
        case kU16: f.values[key] = std::int64_t{c.get<std::uint16_t>()}; return;
        case kI16: f.values[key] = std::int64_t{c.get<std::int16_t>()}; return;
        case kU32: f.values[key] = std::int64_t{c.get<std::uint32_t>()}; return;
        case kI32: f.values[key] = std::int64_t{c.get<std::int32_t>()}; return;
        case kU64: f.values[key] = static_cast<std::int64_t>(c.get<std::uint64_t>()); return;
        case kI64: f.values[key] = c.get<std::int64_t>(); return;
        case kF32: f.values[key] = double{c.get<float>()}; return;
        case kF64: f.values[key] = c.get<double>(); return;
        case kBool: f.values[key] = c.get<std::uint8_t>() != 0; return;
        case kString: f.values[key] = c.string(); return;
        case kArray: {
            const auto elem = c.get<std::uint32_t>();
            const auto n = c.get<std::uint64_t>();
            f.array_lengths[key] = n;
            if (elem == kString) {
                for (std::uint64_t i = 0; i < n; ++i) c.skip(c.get<std::uint64_t>());
            } else if (const auto s = scalar_size(elem); s > 0 && n <= c.left() / s) {
                c.skip(n * s);
            } else {
                c.fail("has an array of " + std::to_string(n) + " values of type " + std::to_string(elem));
            }
            return;
        }
        default: c.fail("has a value of unknown type " + std::to_string(type));
    }
}

}  // namespace

std::optional<std::uint64_t> ggml_type_bytes(std::uint32_t type, std::uint64_t elements) {
    const TypeSize* t = type_of(type);
    if (!t || elements % t->block != 0) return std::nullopt;
    return elements / t->block * t->bytes;
}

std::string ggml_type_name(std::uint32_t type) {
    const TypeSize* t = type_of(type);
    return t ? t->name : "type " + std::to_string(type);
}

std::string File::architecture() const {
    const auto it = values.find("general.architecture");
    return it != values.end() && std::holds_alternative<std::string>(it->second) ? std::get<std::string>(it->second) : "";
}

std::optional<std::int64_t> File::integer(const std::string& key) const {
    const auto it = values.find(key);
    if (it == values.end() || !std::holds_alternative<std::int64_t>(it->second)) return std::nullopt;
    return std::get<std::int64_t>(it->second);
}

std::uint64_t File::tensor_bytes() const {
    std::uint64_t n = 0;
    for (const auto& t : tensors) n += t.bytes;
    return n;
}

File read_file(const fs::path& path) {
    Cursor c(path);
    char magic[4];
    c.bytes(magic, 4);
    if (std::memcmp(magic, "GGUF", 4) != 0) c.fail("does not start with \"GGUF\"");
    File f;
    f.version = c.get<std::uint32_t>();
    if (f.version != 2 && f.version != 3) c.fail("is version " + std::to_string(f.version) + ", not 2 or 3");
    const auto n_tensors = c.get<std::uint64_t>(), n_kv = c.get<std::uint64_t>();
    // Each key/value takes at least 12 bytes and each tensor description at least 24.
    if (n_kv > c.left() / 12 || n_tensors > c.left() / 24) c.fail("claims more entries than it has bytes");
    for (std::uint64_t i = 0; i < n_kv; ++i) {
        const std::string key = c.string();
        read_value(c, f, key, c.get<std::uint32_t>());
    }
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
        TensorEntry t;
        t.name = c.string();
        const auto dims = c.get<std::uint32_t>();
        if (dims == 0 || dims > 4) c.fail("has a tensor of " + std::to_string(dims) + " dimensions");
        std::uint64_t elements = 1;
        for (std::uint32_t d = 0; d < dims; ++d) {
            const auto ne = c.get<std::uint64_t>();
            if (ne == 0 || ne > (std::uint64_t{1} << 40) || elements > (std::uint64_t{1} << 50) / ne)
                c.fail("has a tensor " + t.name + " of impossible size");
            elements *= ne;
            t.ne.push_back(ne);
        }
        t.type = c.get<std::uint32_t>();
        c.get<std::uint64_t>();   // offset into the data section
        const auto bytes = ggml_type_bytes(t.type, elements);
        if (!bytes) c.fail("has tensor " + t.name + " of " + ggml_type_name(t.type) + " that is not whole blocks");
        t.bytes = *bytes;
        f.tensors.push_back(std::move(t));
    }
    return f;
}

KvCacheBytes llama_cpp_kv_cache(const File& f, const KvCacheOptions& o) {
    llama_cpp::ServeOptions serve;
    serve.n_ctx = o.n_ctx;
    serve.type_k = o.type_k;
    serve.type_v = o.type_v;
    const auto kv = llama_cpp::kv_cache(llama_cpp::model_from_gguf(f), serve);
    return {kv.cells, kv.k_bytes, kv.v_bytes};
}

}  // namespace wingspan::gguf
