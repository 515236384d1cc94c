#pragma once
// Pieces of the tokenizer shared by tokenizer.cpp, tokenizer_bpe.cpp and
// tokenizer_normalize.cpp. Not used outside them.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace wingspan::train::tok {

// Ids a tokenizer file may use: 0 .. kMaxTokenId. Larger (or negative) ids are a damaged or
// hostile file, refused before anything is sized by them.
inline constexpr std::int64_t kMaxTokenId = (1 << 24) - 1;

// Checks one id read from `origin`; throws InputError naming `what` and the allowed range.
std::int32_t checked_id(const nlohmann::json& value, const std::string& what, const std::string& origin);

std::string utf8_of(unsigned cp);
// Length of the UTF-8 sequence starting with byte c (1 for stray bytes).
std::size_t utf8_len(unsigned char c);

// GPT-2's reversible byte -> printable character map used by byte-level BPE.
struct ByteMap {
    std::array<std::string, 256> to_str;
    std::unordered_map<std::string, unsigned char> to_byte;
    ByteMap();
};
const ByteMap& byte_map();

// The BPE model of a tokenizer.json ("model": {"type": "BPE", ...}) over token ids, merging
// as Hugging Face tokenizers does (lowest rank first, then leftmost), with SentencePiece's
// byte fallback (<0xXX> tokens for characters outside the vocabulary) and unknown tokens.
class BpeModel {
public:
    // Reads vocab and merges, validating every id and every merge. Throws InputError.
    void load(const nlohmann::json& model, const std::string& origin);
    // Appends the ids of one pre-token. Its characters are looked up as they are (byte-level
    // tokenizers map bytes to characters before calling this).
    void encode(std::string_view word, std::vector<std::int32_t>& out) const;

    std::unordered_map<std::string, std::int32_t> vocab;   // token text -> id
    std::vector<std::string> id_to_token;                  // "" for gaps
    bool byte_fallback = false;
    bool ignore_merges = false;
    bool fuse_unk = false;
    std::optional<std::int32_t> unk_id;

private:
    struct Merge {
        std::int32_t rank;
        std::int32_t new_id;
    };
    static std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
    }
    const Merge* find_merge(std::int32_t a, std::int32_t b) const;
    void merge_all(std::vector<std::int32_t>& ids) const;
    std::unordered_map<std::uint64_t, Merge> merges_;
    std::array<std::int32_t, 256> byte_tokens_{};   // <0xXX> ids, -1 if absent
};

// A tokenizer.json "normalizer": NFC/NFD/NFKC/NFKD (ICU), Prepend, Replace (string pattern),
// Lowercase, Strip, and Sequence of these. Throws InputError for any other.
class Normalizer {
public:
    void load(const nlohmann::json& j, const std::string& origin);
    std::string apply(std::string text) const;
    bool empty() const { return steps_.empty(); }

private:
    struct Step {
        enum Kind { NFC, NFD, NFKC, NFKD, Prepend, Replace, Lowercase, Strip } kind;
        std::string a, b;   // Prepend: a; Replace: a -> b
        bool left = false, right = false;
    };
    std::vector<Step> steps_;
};

// A PCRE2 regex (UTF, Unicode properties), compiled once, usable from several threads.
class RegexImpl;
class Regex {
public:
    explicit Regex(const std::string& pattern);   // throws InputError naming the offset
    ~Regex();
    // All non-overlapping matches as [begin, end) byte offsets.
    std::vector<std::pair<size_t, size_t>> find_all(std::string_view s) const;

private:
    std::unique_ptr<RegexImpl> impl_;
};

// Splits s at the matches with a Hugging Face split behavior; `invert` swaps matches and gaps.
std::vector<std::string> split_by_matches(std::string_view s, const std::vector<std::pair<size_t, size_t>>& m,
                                          const std::string& behavior, bool invert);

}  // namespace wingspan::train::tok
