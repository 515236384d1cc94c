// The safetensors container header: parsing, validation and writing. No torch here; the
// trainer reads and writes tensor data itself with the offsets computed here.
#include "wingspan/safetensors.hpp"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "wingspan/checked_math.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"

namespace wingspan::safetensors {

namespace {

[[noreturn]] void fail(const std::string& what) { throw InputError("safetensors: " + what); }

}  // namespace

std::int64_t TensorInfo::elements() const {
    std::int64_t n = 1;
    for (auto d : shape) n = checked_mul(n, d, "safetensors: tensor \"" + name + "\"");
    return n;
}

std::int64_t Header::total_elements() const {
    std::int64_t n = 0;
    for (const auto& t : tensors) n = checked_add(n, t.elements(), "safetensors: the tensors' elements");
    return n;
}

std::map<std::string, std::int64_t> Header::elements_by_dtype() const {
    std::map<std::string, std::int64_t> out;
    for (const auto& t : tensors) out[t.dtype] += t.elements();
    return out;
}

int dtype_size(const std::string& dtype) {
    static const std::map<std::string, int> sizes = {
        {"BOOL", 1}, {"U8", 1},   {"I8", 1},   {"F8_E4M3", 1}, {"F8_E5M2", 1},
        {"I16", 2},  {"U16", 2},  {"F16", 2},  {"BF16", 2},    {"I32", 4},
        {"U32", 4},  {"F32", 4},  {"I64", 8},  {"U64", 8},     {"F64", 8},
    };
    auto it = sizes.find(dtype);
    if (it == sizes.end()) fail("unknown dtype \"" + dtype + "\"");
    return it->second;
}

std::uint64_t parse_header_length(const unsigned char prefix[8]) {
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[i];
    if (n > kMaxHeaderBytes)
        fail("header of " + std::to_string(n) + " bytes exceeds the limit of " +
             std::to_string(kMaxHeaderBytes));
    if (n < 2) fail("header of " + std::to_string(n) + " bytes is too short");
    return n;
}

Header parse_header(const std::string& json_text, std::uint64_t header_bytes,
                    std::uint64_t data_size) {
    std::string why;
    auto parsed = try_parse_untrusted_json(json_text, &why);
    if (!parsed) fail("header: " + why);
    const nlohmann::json j = std::move(*parsed);
    if (!j.is_object()) fail("header is not a JSON object");

    Header h;
    h.header_bytes = header_bytes;
    h.data_offset = 8 + header_bytes;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& name = it.key();
        const auto& v = it.value();
        if (name == "__metadata__") {
            if (!v.is_object()) fail("__metadata__ is not an object");
            for (auto m = v.begin(); m != v.end(); ++m) {
                if (!m.value().is_string()) fail("__metadata__ value \"" + m.key() + "\" is not a string");
                h.metadata[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        if (!v.is_object()) fail("tensor \"" + name + "\": entry is not an object");
        TensorInfo t;
        t.name = name;
        if (!v.contains("dtype") || !v["dtype"].is_string()) fail("tensor \"" + name + "\": missing dtype");
        if (!v.contains("shape") || !v["shape"].is_array()) fail("tensor \"" + name + "\": missing shape");
        if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
            fail("tensor \"" + name + "\": data_offsets must be [begin, end]");
        t.dtype = v["dtype"].get<std::string>();
        int esize = 0;
        try {
            esize = dtype_size(t.dtype);
        } catch (const InputError&) {
            fail("tensor \"" + name + "\": unknown dtype \"" + t.dtype + "\"");
        }
        for (const auto& d : v["shape"]) {
            if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
                fail("tensor \"" + name + "\": shape entries must be non-negative integers");
            t.shape.push_back(d.get<std::int64_t>());
        }
        for (const auto& o : v["data_offsets"])
            if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<std::int64_t>() >= 0))
                fail("tensor \"" + name + "\": data_offsets must be non-negative integers");
        t.begin = v["data_offsets"][0].get<std::uint64_t>();
        t.end = v["data_offsets"][1].get<std::uint64_t>();
        if (t.end < t.begin) fail("tensor \"" + name + "\": data_offsets end before begin");
        // Checked: a shape like [2^62, 2] must not wrap to the size of empty offsets.
        const std::uint64_t expect = static_cast<std::uint64_t>(checked_mul(t.elements(), esize, "safetensors: tensor \"" + name + "\" bytes"));
        if (t.end - t.begin != expect)
            fail("tensor \"" + name + "\": " + std::to_string(t.end - t.begin) +
                 " bytes in data_offsets but shape and dtype need " + std::to_string(expect));
        if (data_size > 0 && t.end > data_size)
            fail("tensor \"" + name + "\": data ends at byte " + std::to_string(t.end) +
                 " past the end of the data (" + std::to_string(data_size) + " bytes)");
        h.tensors.push_back(std::move(t));
    }

    // No overlaps; tensors cover the data section without holes (as the reference checks).
    std::vector<const TensorInfo*> by_offset;
    for (const auto& t : h.tensors) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    std::uint64_t pos = 0;
    for (const TensorInfo* t : by_offset) {
        if (t->begin < pos) fail("tensor \"" + t->name + "\" overlaps another tensor");
        if (t->begin > pos) fail("gap in the data before tensor \"" + t->name + "\"");
        pos = t->end;
    }
    if (data_size > 0 && pos != data_size)
        fail(std::to_string(data_size - pos) + " bytes of data past the last tensor");
    // File order: order of data offsets (JSON object key order is not significant).
    std::stable_sort(h.tensors.begin(), h.tensors.end(),
                     [](const TensorInfo& a, const TensorInfo& b) { return a.begin < b.begin; });
    return h;
}

Header read_header(const std::filesystem::path& file) {
    require_regular_file(file);   // a named pipe would block the open below forever
    std::ifstream in(file, std::ios::binary);
    if (!in) fail("cannot open " + file.string());
    std::error_code ec;
    const std::uint64_t file_size = std::filesystem::file_size(file, ec);
    if (ec) fail("cannot read the size of " + file.string());
    unsigned char prefix[8];
    if (!in.read(reinterpret_cast<char*>(prefix), 8)) fail(file.string() + " is shorter than 8 bytes");
    std::uint64_t n = 0;
    try {
        n = parse_header_length(prefix);
    } catch (const InputError& e) {
        fail(file.string() + ": " + std::string(e.what()).substr(13));
    }
    if (8 + n > file_size)
        fail(file.string() + ": header of " + std::to_string(n) + " bytes runs past the end of the file");
    std::string text(n, '\0');
    if (!in.read(text.data(), static_cast<std::streamsize>(n))) fail("cannot read the header of " + file.string());
    try {
        const std::uint64_t data_size = file_size - 8 - n;
        Header h = parse_header(text, n, data_size);
        if (data_size == 0 && !h.tensors.empty() && h.tensors.back().end > 0)
            fail("tensor data missing");
        return h;
    } catch (const InputError& e) {
        throw InputError(std::string(e.what()) + " (in " + file.string() + ")");
    }
}

std::string build_header(const std::vector<TensorInfo>& tensors,
                         const std::map<std::string, std::string>& metadata) {
    // nlohmann::ordered_json keeps the tensors in the order given, as the reference writer does.
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    if (!metadata.empty()) {
        nlohmann::ordered_json m = nlohmann::ordered_json::object();
        for (const auto& [k, v] : metadata) m[k] = v;
        j["__metadata__"] = m;
    }
    std::uint64_t pos = 0;
    for (const auto& t : tensors) {
        const std::uint64_t bytes = static_cast<std::uint64_t>(t.elements()) * dtype_size(t.dtype);
        j[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {pos, pos + bytes}}};
        pos += bytes;
    }
    std::string text = j.dump();
    while (text.size() % 8 != 0) text.push_back(' ');
    return text;
}

}  // namespace wingspan::safetensors
