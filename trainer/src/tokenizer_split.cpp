// The pre-tokenizers' splitting: PCRE2 regexes (Unicode classes, lookahead) and the
// Hugging Face split behaviors (Isolated, Removed, MergedWith*, Contiguous).
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <mutex>

#include "tokenizer_internal.hpp"
#include "wingspan/errors.hpp"

namespace wingspan::train::tok {

class RegexImpl {
public:
    explicit RegexImpl(const std::string& pattern) {
        int err = 0;
        PCRE2_SIZE off = 0;
        code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &off, nullptr);
        if (!code_) {
            PCRE2_UCHAR buf[256];
            pcre2_get_error_message(err, buf, sizeof buf);
            throw InputError("tokenizer: cannot compile the split pattern at offset " +
                             std::to_string(off) + ": " + reinterpret_cast<char*>(buf));
        }
        pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);   // optional speed-up
        data_ = pcre2_match_data_create_from_pattern(code_, nullptr);
    }
    ~RegexImpl() {
        pcre2_match_data_free(data_);
        pcre2_code_free(code_);
    }
    RegexImpl(const RegexImpl&) = delete;
    RegexImpl& operator=(const RegexImpl&) = delete;

    // All non-overlapping matches as [begin, end) byte offsets.
    std::vector<std::pair<size_t, size_t>> find_all(std::string_view s) const {
        std::lock_guard<std::mutex> lock(mutex_);
        std::vector<std::pair<size_t, size_t>> out;
        size_t pos = 0;
        while (pos <= s.size()) {
            const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), pos, 0,
                                       data_, nullptr);
            if (rc < 0) break;
            const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data_);
            const size_t b = ov[0], e = ov[1];
            if (e == b) {   // empty match: step one character on
                pos = b + (b < s.size() ? utf8_len(static_cast<unsigned char>(s[b])) : 1);
                continue;
            }
            out.emplace_back(b, e);
            pos = e;
        }
        return out;
    }

private:
    pcre2_code* code_ = nullptr;
    pcre2_match_data* data_ = nullptr;
    mutable std::mutex mutex_;
};

// One step of the pre-tokenizer pipeline: splits each piece into smaller pieces.

Regex::Regex(const std::string& pattern) : impl_(std::make_unique<RegexImpl>(pattern)) {}
Regex::~Regex() = default;
std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view s) const { return impl_->find_all(s); }

std::vector<std::string> split_by_matches(std::string_view s,
                                          const std::vector<std::pair<size_t, size_t>>& m,
                                          const std::string& behavior, bool invert) {
    // Mark pieces: (text, is_match).
    std::vector<std::pair<std::string_view, bool>> parts;
    size_t pos = 0;
    for (auto [b, e] : m) {
        if (b > pos) parts.emplace_back(s.substr(pos, b - pos), false);
        parts.emplace_back(s.substr(b, e - b), true);
        pos = e;
    }
    if (pos < s.size()) parts.emplace_back(s.substr(pos), false);
    if (invert)
        for (auto& p : parts) p.second = !p.second;

    std::vector<std::string> out;
    if (behavior == "Isolated") {
        for (auto& p : parts) out.emplace_back(p.first);
    } else if (behavior == "Removed") {
        for (auto& p : parts)
            if (!p.second) out.emplace_back(p.first);
    } else if (behavior == "MergedWithPrevious") {
        for (auto& p : parts) {
            if (p.second && !out.empty()) out.back() += std::string(p.first);
            else out.emplace_back(p.first);
        }
    } else if (behavior == "MergedWithNext") {
        std::string pending;
        for (auto& p : parts) {
            if (p.second) {
                pending += std::string(p.first);
            } else {
                out.push_back(pending + std::string(p.first));
                pending.clear();
            }
        }
        if (!pending.empty()) out.push_back(pending);
    } else if (behavior == "Contiguous") {
        bool prev_match = false;
        for (auto& p : parts) {
            if (!out.empty() && p.second && prev_match) out.back() += std::string(p.first);
            else out.emplace_back(p.first);
            prev_match = p.second;
        }
    } else {
        throw InputError("tokenizer: unsupported split behavior \"" + behavior + "\"");
    }
    return out;
}


}  // namespace wingspan::train::tok
