#include "gguf/gguf_writer.hpp"

#include <bit>
#include <cstring>

#include "wingspan/errors.hpp"

namespace wingspan::train::gguf {

static_assert(std::endian::native == std::endian::little, "GGUF files are written little-endian, as in memory");

namespace {

// gguf.h's enum gguf_type.
enum ValueType : std::uint32_t {
    kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9,
};

template <class T>
void put(std::string& out, T v) {
    char raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    out.append(raw, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
    put<std::uint64_t>(out, s.size());
    out += s;
}

std::uint64_t padded(std::uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

TypeTraits traits(GgmlType t) {
    switch (t) {
        case GgmlType::F32: return {1, 4, "F32"};
        case GgmlType::F16: return {1, 2, "F16"};
        case GgmlType::BF16: return {1, 2, "BF16"};
        case GgmlType::Q8_0: return {32, 34, "Q8_0"};   // fp16 scale + 32 int8
        case GgmlType::Q4_0: return {32, 18, "Q4_0"};   // fp16 scale + 16 bytes of 4-bit pairs
    }
    throw InputError("unknown ggml type " + std::to_string(static_cast<std::uint32_t>(t)));
}

std::uint64_t tensor_bytes(GgmlType t, std::int64_t row, std::int64_t elements) {
    const TypeTraits tt = traits(t);
    if (row <= 0 || row % tt.block_elements != 0)
        throw InputError(std::string("a row of ") + std::to_string(row) + " values is not a whole number of " + tt.name +
                         " blocks of " + std::to_string(tt.block_elements));
    return static_cast<std::uint64_t>(elements / tt.block_elements) * static_cast<std::uint64_t>(tt.block_bytes);
}

std::uint64_t TensorDesc::bytes() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return tensor_bytes(type, shape.empty() ? 1 : shape.back(), n);
}

void Metadata::key(const std::string& k, std::uint32_t type) {
    put_string(bytes_, k);
    put<std::uint32_t>(bytes_, type);
    ++count_;
}
void Metadata::add_u32(const std::string& k, std::uint32_t v) { key(k, kU32), put(bytes_, v); }
void Metadata::add_i32(const std::string& k, std::int32_t v) { key(k, kI32), put(bytes_, v); }
void Metadata::add_f32(const std::string& k, float v) { key(k, kF32), put(bytes_, v); }
void Metadata::add_bool(const std::string& k, bool v) { key(k, kBool), put<std::uint8_t>(bytes_, v ? 1 : 0); }
void Metadata::add_string(const std::string& k, const std::string& v) { key(k, kString), put_string(bytes_, v); }
void Metadata::add_strings(const std::string& k, const std::vector<std::string>& v) {
    key(k, kArray);
    put<std::uint32_t>(bytes_, kString);
    put<std::uint64_t>(bytes_, v.size());
    for (const auto& s : v) put_string(bytes_, s);
}
void Metadata::add_i32s(const std::string& k, const std::vector<std::int32_t>& v) {
    key(k, kArray);
    put<std::uint32_t>(bytes_, kI32);
    put<std::uint64_t>(bytes_, v.size());
    for (auto x : v) put(bytes_, x);
}
void Metadata::add_f32s(const std::string& k, const std::vector<float>& v) {
    key(k, kArray);
    put<std::uint32_t>(bytes_, kF32);
    put<std::uint64_t>(bytes_, v.size());
    for (auto x : v) put(bytes_, x);
}

Writer::Writer(AtomicFile& file, const Metadata& meta, std::vector<TensorDesc> tensors)
    : file_(file), tensors_(std::move(tensors)) {
    std::string head = "GGUF";
    put<std::uint32_t>(head, 3);
    put<std::uint64_t>(head, tensors_.size());
    put<std::uint64_t>(head, meta.count());
    head += meta.bytes();
    std::uint64_t offset = 0;
    for (const auto& t : tensors_) {
        put_string(head, t.name);
        put<std::uint32_t>(head, static_cast<std::uint32_t>(t.shape.size()));
        for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) put<std::uint64_t>(head, static_cast<std::uint64_t>(*it));
        put<std::uint32_t>(head, static_cast<std::uint32_t>(t.type));
        put<std::uint64_t>(head, offset);
        offset = padded(offset + t.bytes());
    }
    head.resize(padded(head.size()), '\0');
    total_ = head.size() + offset;
    file_.write(head);
}

void Writer::write(const void* data, std::uint64_t bytes) {
    if (next_ >= tensors_.size()) throw InputError("gguf: more data written than the tensors described");
    const TensorDesc& t = tensors_[next_];
    const std::uint64_t size = t.bytes();
    if (bytes > size - in_tensor_)
        throw InputError("gguf: " + t.name + " gets more than the " + std::to_string(size) + " bytes of its description");
    file_.write(data, bytes);
    in_tensor_ += bytes;
    if (in_tensor_ == size) {
        static const char zeros[kAlignment] = {};
        file_.write(zeros, padded(size) - size);
        ++next_;
        in_tensor_ = 0;
    }
}

void Writer::finish() const {
    if (next_ != tensors_.size()) throw InputError("gguf: " + tensors_[next_].name + " was never written");
}

}  // namespace wingspan::train::gguf
