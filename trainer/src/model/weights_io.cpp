#include "model/weights_io.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/safe_file.hpp"

namespace wingspan::train {

namespace fs = std::filesystem;

std::function<std::optional<std::vector<std::int64_t>>(const std::string&)> base_shape_of(const WeightReader& r) {
    return [&r](const std::string& name) -> std::optional<std::vector<std::int64_t>> {
        if (!r.contains(name)) return std::nullopt;
        return r.info(name).shape;
    };
}

std::string one_line(const c10::Error& e) {
    const std::string m = e.what_without_backtrace();
    return m.substr(0, m.find('\n'));
}

at::ScalarType scalar_type_of(const std::string& d) {
    if (d == "F32") return at::kFloat;
    if (d == "BF16") return at::kBFloat16;
    if (d == "F16") return at::kHalf;
    if (d == "F64") return at::kDouble;
    if (d == "U8") return at::kByte;
    if (d == "I8") return at::kChar;
    if (d == "I16") return at::kShort;
    if (d == "I32") return at::kInt;
    if (d == "I64") return at::kLong;
    if (d == "BOOL") return at::kBool;
    throw InputError("safetensors dtype " + d + " is not supported by wingspan-train");
}

std::string safetensors_dtype_of(at::ScalarType t) {
    switch (t) {
        case at::kFloat: return "F32";
        case at::kBFloat16: return "BF16";
        case at::kHalf: return "F16";
        case at::kDouble: return "F64";
        case at::kByte: return "U8";
        case at::kChar: return "I8";
        case at::kShort: return "I16";
        case at::kInt: return "I32";
        case at::kLong: return "I64";
        case at::kBool: return "BOOL";
        default: throw std::runtime_error("no safetensors dtype for this tensor type");
    }
}

void WeightReader::add_file(const fs::path& file, const std::optional<std::vector<std::string>>& only) {
    const safetensors::Header h = safetensors::read_header(file);
    std::set<std::string> wanted;
    if (only) wanted.insert(only->begin(), only->end());
    for (const auto& t : h.tensors) {
        if (only && !wanted.count(t.name)) continue;
        if (entries_.count(t.name)) throw InputError("tensor " + t.name + " appears in more than one file");
        entries_[t.name] = Entry{file, h.data_offset, t};
    }
    files_.push_back(file);
}

std::optional<WeightReader> WeightReader::open_dir(const fs::path& dir) {
    WeightReader r;
    const fs::path single = dir / "model.safetensors";
    const fs::path index = dir / "model.safetensors.index.json";
    if (fs::exists(index)) {
        nlohmann::json j = read_untrusted_json_file(index);
        if (!j.contains("weight_map") || !j["weight_map"].is_object())
            throw InputError(index.string() + ": no \"weight_map\" object");
        std::map<std::string, std::vector<std::string>> by_file;
        for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
            if (!it.value().is_string()) throw InputError(index.string() + ": weight_map values must be file names");
            const std::string file = it.value().get<std::string>();
            // A shard is a file in this folder: never an absolute path or one that climbs out.
            const fs::path rel(file);
            bool climbs = false;
            for (const auto& part : rel) climbs |= part == "..";
            if (file.empty() || rel.is_absolute() || climbs)
                throw InputError(index.string() + ": shard \"" + file +
                                 "\" is not a file inside the model folder (absolute or '..' paths are refused)");
            by_file[file].push_back(it.key());
        }
        for (const auto& [file, names] : by_file) {
            const fs::path shard = dir / file;
            if (!fs::exists(shard)) throw InputError("shard " + shard.string() + " named in the index is missing");
            r.add_file(shard, names);
            for (const auto& n : names)
                if (!r.entries_.count(n))
                    throw InputError("tensor " + n + " is in the index but not in " + shard.string());
        }
        return r;
    }
    if (fs::exists(single)) {
        r.add_file(single, std::nullopt);
        return r;
    }
    return std::nullopt;
}

WeightReader WeightReader::open_file(const fs::path& file) {
    WeightReader r;
    r.add_file(file, std::nullopt);
    return r;
}

std::vector<std::string> WeightReader::names() const {
    std::vector<std::string> n;
    for (const auto& [k, v] : entries_) n.push_back(k);
    return n;
}

const safetensors::TensorInfo& WeightReader::info(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) throw InputError("tensor " + name + " is missing from the weights");
    return it->second.info;
}

at::Tensor WeightReader::read(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) throw InputError("tensor " + name + " is missing from the weights");
    const Entry& e = it->second;
    at::Tensor t = at::empty(e.info.shape, scalar_type_of(e.info.dtype));
    const std::uint64_t bytes = e.info.end - e.info.begin;
    std::FILE* f = std::fopen(e.file.c_str(), "rb");
    if (!f) throw InputError("cannot open " + e.file.string());
    const bool ok = std::fseek(f, static_cast<long>(e.data_offset + e.info.begin), SEEK_SET) == 0 &&
                    std::fread(t.data_ptr(), 1, bytes, f) == bytes;
    std::fclose(f);
    if (!ok && bytes > 0) throw InputError("cannot read tensor " + name + " from " + e.file.string());
    return t;
}

std::string WeightReader::describe() const {
    if (files_.size() == 1) return files_[0].filename().string();
    return std::to_string(files_.size()) + " shards";
}

void check_weights(const WeightReader& r,
                   const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& expected,
                   std::vector<std::string>& ignored) {
    std::set<std::string> want;
    for (const auto& [name, shape] : expected) {
        want.insert(name);
        if (!r.contains(name)) throw InputError("tensor " + name + " is missing from the weights");
        const auto& info = r.info(name);
        if (info.shape != shape) {
            auto fmt = [](const std::vector<std::int64_t>& s) {
                std::string o = "[";
                for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
                return o + "]";
            };
            throw InputError("tensor " + name + " has shape " + fmt(info.shape) + " but config.json implies " +
                             fmt(shape));
        }
        if (info.dtype != "F32" && info.dtype != "BF16" && info.dtype != "F16")
            throw InputError("tensor " + name + " has dtype " + info.dtype + " (expected BF16, F16 or F32)");
    }
    for (const auto& name : r.names()) {
        if (want.count(name)) continue;
        if (name.find("rotary_emb.inv_freq") != std::string::npos || name == "lm_head.weight") {
            ignored.push_back(name);
            continue;
        }
        throw InputError("tensor " + name + " in the weights is not part of the architecture in config.json");
    }
}

FileDigest save_safetensors(const fs::path& file, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
    std::vector<safetensors::TensorInfo> infos;
    std::vector<at::Tensor> data;
    for (const auto& [name, t] : tensors) {
        safetensors::TensorInfo i;
        i.name = name;
        i.dtype = safetensors_dtype_of(t.scalar_type());
        i.shape = t.sizes().vec();
        infos.push_back(i);
        data.push_back(t.detach().contiguous());
    }
    const std::string header = safetensors::build_header(infos, metadata);
    AtomicFile f(file);
    unsigned char prefix[8];
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) prefix[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xFF);
    f.write(prefix, 8);
    f.write(header);
    for (const auto& t : data) {
        // A GPU tensor comes to the host one at a time, as it is written.
        const at::Tensor host = t.is_cpu() ? t : t.to(at::kCPU);
        f.write(host.data_ptr(), host.numel() * host.element_size());
    }
    f.commit();
    return {f.bytes_written(), f.checksum()};
}

std::map<std::string, at::Tensor> load_safetensors(const fs::path& file) {
    WeightReader r = WeightReader::open_file(file);
    std::map<std::string, at::Tensor> out;
    for (const auto& n : r.names()) out[n] = r.read(n);
    return out;
}

FileDigest write_file_atomic(const fs::path& file, const std::string& text) {
    AtomicFile f(file);
    f.write(text);
    f.commit();
    return {f.bytes_written(), f.checksum()};
}

}  // namespace wingspan::train
