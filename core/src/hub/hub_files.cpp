// Which files of a Hub repository a download takes (--include globs, as huggingface_hub
// matches them, else the files a run needs) and the cache folder a repository goes to.
#include <optional>
#include <set>
#include <string>

#include "wingspan/hub_download.hpp"

namespace wingspan::hub {

std::string hf_cache_folder_name(const std::string& repo_id) {
    std::string s = "models--";
    for (char c : repo_id) s += c == '/' ? std::string("--") : std::string(1, c);
    return s;
}

bool glob_match(const std::string& pattern, const std::string& name) {
    // Iterative matcher with backtracking to the last '*'.
    size_t p = 0, n = 0, star = std::string::npos, mark = 0;
    auto class_match = [&](size_t& pp, char c) {   // pp at '['; returns match, moves pp past ']'
        size_t i = pp + 1;
        bool negate = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
        if (negate) ++i;
        bool hit = false;
        size_t first = i;
        while (i < pattern.size() && (pattern[i] != ']' || i == first)) {
            if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
                if (c >= pattern[i] && c <= pattern[i + 2]) hit = true;
                i += 3;
            } else {
                if (c == pattern[i]) hit = true;
                ++i;
            }
        }
        if (i >= pattern.size()) return std::optional<bool>();   // no closing ']': literal '['
        pp = i + 1;
        return std::optional<bool>(hit != negate);
    };
    while (n < name.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            mark = n;
            continue;
        }
        if (p < pattern.size() && pattern[p] == '[') {
            size_t pp = p;
            auto m = class_match(pp, name[n]);
            if (m && *m) {
                p = pp;
                ++n;
                continue;
            }
            if (!m && name[n] == '[') {
                ++p;
                ++n;
                continue;
            }
        } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
            ++p;
            ++n;
            continue;
        }
        if (star == std::string::npos) return false;
        p = star + 1;
        n = ++mark;
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

bool needed_for_run(const std::string& file) {
    static const std::set<std::string> kNamed = {
        "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model",
        "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt", "chat_template.jinja",
        "chat_template.json", "model.safetensors.index.json"};
    if (file.find('/') != std::string::npos) return false;   // sub-folders hold other formats (onnx/, original/)
    if (kNamed.count(file)) return true;
    return file.size() > 12 && file.compare(file.size() - 12, 12, ".safetensors") == 0;
}

}  // namespace wingspan::hub
