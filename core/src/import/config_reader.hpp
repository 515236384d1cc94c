#pragma once
// Internal to core's config import (config_import.cpp, config_import_objectives.cpp): the record
// of one import (every key read, ignored or defaulted, and the plan flags it makes).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "wingspan/config_import.hpp"
#include "wingspan/errors.hpp"

namespace wingspan::config_reader {

using nlohmann::json;

inline std::string text_of(const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_number_integer()) return std::to_string(v.get<long long>());
    if (v.is_number()) {
        const double d = v.get<double>();
        if (d == std::floor(d) && std::fabs(d) < 1e15) return std::to_string((long long)d);
        return v.dump();
    }
    return v.dump();
}

// A config's number written as text ("8", " +8"), read as std::stoll would read all of it, but
// without exceptions: nullopt for anything else (trailing text, out of range).
inline std::optional<long long> whole_number(const std::string& text) {
    std::size_t start = text.find_first_not_of(" \t\n\v\f\r");
    if (start == std::string::npos) return std::nullopt;
    if (text[start] == '+' && start + 1 < text.size() && text[start + 1] != '-') ++start;
    long long x = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data() + start, end, x);
    if (error != std::errc() || stop != end) return std::nullopt;
    return x;
}

// Keeps the record of one import: every key read, ignored or defaulted, and the flags.
class Reader {
public:
    Reader(const json& doc, ConfigImport& out) : doc_(doc), out_(out) {}

    // Whether the document has a top-level key with a value, without marking it read.
    bool has(const std::string& key) const { return doc_.is_object() && doc_.contains(key) && !doc_[key].is_null(); }
    // The value at a dotted path ("lora_parameters.rank"); null-valued keys count as absent
    // (axolotl's examples leave unused keys empty), but are still marked seen.
    const json* get(const std::string& path) {
        const json* cur = &doc_;
        std::size_t start = 0;
        while (true) {
            const auto dot = path.find('.', start);
            const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
            if (!cur->is_object() || !cur->contains(part)) return nullptr;
            cur = &(*cur)[part];
            if (dot == std::string::npos) break;
            start = dot + 1;
        }
        seen_.insert(path.substr(0, path.find('.')));
        return cur->is_null() ? nullptr : cur;
    }
    bool truthy(const std::string& path) {
        const json* v = get(path);
        if (!v) return false;
        if (v->is_boolean()) return v->get<bool>();
        if (v->is_string()) return *v == "auto" || *v == "true" || *v == "True";
        if (v->is_number()) return v->get<double>() != 0;
        return false;
    }
    std::optional<long long> integer(const std::string& path) {
        const json* v = get(path);
        if (!v) return std::nullopt;
        if (v->is_number()) return (long long)std::llround(v->get<double>());
        if (v->is_string())
            if (const std::optional<long long> x = whole_number(v->get_ref<const std::string&>())) return x;
        throw InputError("config: " + path + " expects a whole number, got " + v->dump());
    }
    void flag_(const std::string& key, const std::string& flag, const std::string& value) { this->flag(key, flag, value); }
    void flag(const std::string& key, const std::string& flag, const std::string& value, const std::string& why = {}) {
        set_flag(flag, value);
        seen_.insert(key.substr(0, key.find('.')));   // a key read is not also listed as ignored
        out_.read.push_back({key, flag + (value.empty() ? "" : " " + value) + (why.empty() ? "" : " (" + why + ")")});
    }
    void assume(const std::string& key, const std::string& flag, const std::string& value, const std::string& why) {
        set_flag(flag, value);
        out_.defaults.push_back({key, flag + " " + value + ": " + why});
    }
    // A whole number read into `flag`, else (when given) the framework's default assumed.
    void count(const std::string& key, const std::string& flag, const char* fallback = nullptr, const std::string& why = {}) {
        if (auto v = integer(key)) flag_(key, flag, std::to_string(*v));
        else if (fallback) assume(key, flag, fallback, why);
    }
    // A switch read into on/off (`inverted`: the key disables it), else the default assumed.
    void on_off(const std::string& key, const std::string& flag, const char* fallback, const std::string& why,
                bool inverted = false) {
        if (get(key)) flag_(key, flag, truthy(key) != inverted ? "on" : "off");
        else if (fallback) assume(key, flag, fallback, why);
    }
    void note_read(const std::string& key, const std::string& note) {
        seen_.insert(key.substr(0, key.find('.')));
        out_.read.push_back({key, note});
    }
    void ignore(const std::string& key, const std::string& why) {
        seen_.insert(key.substr(0, key.find('.')));
        out_.ignored.push_back({key, why});
    }
    // A setting of the plan the format has no key for: listed with the defaults (the plan keeps its
    // own value, as it does where a file is silent), as "not expressible in <framework>: <what>".
    void not_expressible(const std::string& key, const std::string& framework, const std::string& what) {
        out_.defaults.push_back({key, "not expressible in " + framework + ": " + what});
    }
    std::string flag_value(const std::string& f) const { return out_.flag_value(f); }
    // Every top-level key nothing read: listed as ignored.
    void finish() {
        for (const auto& [k, v] : doc_.items())
            if (!seen_.count(k) && !v.is_null()) out_.ignored.push_back({k, "does not change the memory of a step"});
    }
    bool has_flag(const std::string& f) const {
        return std::any_of(out_.flags.begin(), out_.flags.end(), [&](const auto& p) { return p.first == f; });
    }

private:
    void set_flag(const std::string& flag, const std::string& value) {
        for (auto& [f, v] : out_.flags)
            if (f == flag) {
                v = value;
                return;
            }
        out_.flags.emplace_back(flag, value);
    }
    const json& doc_;
    ConfigImport& out_;
    std::set<std::string> seen_;
};

// The objective's keys (issue 31), config_import_objectives.cpp: TRL's DPO/KTO/CPO/GRPO configs,
// LLaMA-Factory's stage and pref_loss, torchtune's DPO loss.
void read_trl_objective(Reader& r);
// Whether a TRL file is GRPOConfig's (its keys): GRPO's sequence is prompt + completion, no max_length.
bool trl_grpo_keys(const Reader& r);
void read_llama_factory_objective(Reader& r);
void read_torchtune_objective(Reader& r);

}  // namespace wingspan::config_reader
