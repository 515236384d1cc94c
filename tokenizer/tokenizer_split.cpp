// The pre-tokenizers' splitting: PCRE2 regexes (Unicode classes, lookahead) and the
// Hugging Face split behaviors (Isolated, Removed, MergedWith*, Contiguous).
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <new>

#include <nlohmann/json.hpp>

#include "tokenizer_internal.hpp"
#include "wingspan/errors.hpp"

namespace wingspan::train::tok {

// A split pattern comes from a downloaded tokenizer.json, and a pattern with nested
// alternatives backtracks exponentially: (?:a|a){1,22}c|a|[^a] on 2000 'a' took 36 s and a
// 20,000-byte line held a run past SIGTERM. Real pre-tokenizer patterns need a few steps per
// match (tens of microseconds on a long line), so every match is bounded (PCRE2's match limit,
// which JIT code honours too, the interpreter's depth and heap limits, JIT's own stack) and so
// is each text as a whole (kTextBudget and a per-byte allowance of wall time): many matches
// just under the per-match limit cannot add up to minutes either. Going past any bound is an
// error naming the pattern, never a silently shorter split.
constexpr std::uint32_t kMatchLimit = 1'000'000;      // + 16 per byte still to match
constexpr std::uint32_t kDepthLimit = 10'000;         // + 2 per byte still to match
constexpr std::uint32_t kHeapLimitKib = 256u << 10;   // 256 MiB of backtracking frames
constexpr size_t kJitStackBytes = 8u << 20;
constexpr std::chrono::milliseconds kTextBudget{1000};
constexpr std::chrono::nanoseconds kTextBudgetPerByte{2000};

class RegexImpl {
public:
    explicit RegexImpl(const std::string& pattern) : pattern_(pattern) {
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
        pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);   // optional speed-up (the limits hold either way)
        data_ = pcre2_match_data_create_from_pattern(code_, nullptr);
        context_ = pcre2_match_context_create(nullptr);
        jit_stack_ = pcre2_jit_stack_create(32 * 1024, kJitStackBytes, nullptr);
        if (!data_ || !context_ || !jit_stack_) {
            free();
            throw std::bad_alloc();
        }
        pcre2_jit_stack_assign(context_, nullptr, jit_stack_);
        pcre2_set_heap_limit(context_, kHeapLimitKib);
    }
    ~RegexImpl() { free(); }
    RegexImpl(const RegexImpl&) = delete;
    RegexImpl& operator=(const RegexImpl&) = delete;

    // All non-overlapping matches as [begin, end) byte offsets. Throws InputError naming the
    // pattern when one match or the whole text needs more work than the bounds above allow.
    std::vector<std::pair<size_t, size_t>> find_all(std::string_view s) const {
        std::lock_guard<std::mutex> lock(mutex_);
        using Clock = std::chrono::steady_clock;
        const auto deadline = Clock::now() + kTextBudget + kTextBudgetPerByte * static_cast<std::int64_t>(s.size());
        std::vector<std::pair<size_t, size_t>> out;
        size_t pos = 0;
        while (pos <= s.size()) {
            // A long legitimate match (one word of a million letters) needs work in proportion.
            const auto rest = static_cast<std::uint32_t>(std::min<size_t>(s.size() - pos, 100'000'000));
            pcre2_set_match_limit(context_, kMatchLimit + 16 * rest);
            pcre2_set_depth_limit(context_, kDepthLimit + 2 * rest);
            const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), pos, 0,
                                       data_, context_);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) throw too_much_work(rc, s.size());
            if (Clock::now() > deadline) throw too_much_work(0, s.size());
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
    InputError too_much_work(int rc, size_t bytes) const {
        std::string why;
        if (rc == 0) {
            why = "took more than " + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                         kTextBudget + kTextBudgetPerByte * static_cast<std::int64_t>(bytes))
                                                         .count()) +
                  " ms";
        } else {
            PCRE2_UCHAR buf[256];
            pcre2_get_error_message(rc, buf, sizeof buf);
            why = "stopped: " + std::string(reinterpret_cast<char*>(buf));
        }
        // One line: the pattern as a JSON string (escaped), cut if it is long.
        std::string shown = nlohmann::json(pattern_.substr(0, 200)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        if (pattern_.size() > 200) shown += "...";
        return InputError("tokenizer: the split pattern " + shown + " needs too much work on a text of " +
                          std::to_string(bytes) + " bytes (" + why +
                          "; it backtracks catastrophically, so this tokenizer cannot be used)");
    }
    void free() {
        pcre2_jit_stack_free(jit_stack_);
        pcre2_match_context_free(context_);
        pcre2_match_data_free(data_);
        pcre2_code_free(code_);
    }

    std::string pattern_;
    pcre2_code* code_ = nullptr;
    pcre2_match_data* data_ = nullptr;
    pcre2_match_context* context_ = nullptr;
    pcre2_jit_stack* jit_stack_ = nullptr;
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
