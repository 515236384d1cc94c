#include "tokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"

namespace wingspan::train {

namespace {

using nlohmann::json;

std::string utf8_of(unsigned cp) {
    std::string s;
    if (cp < 0x80) {
        s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return s;
}

// Length of the UTF-8 sequence starting with byte c (1 for stray bytes).
size_t utf8_len(unsigned char c) {
    if (c < 0x80) return 1;
    if ((c >> 5) == 0x6) return 2;
    if ((c >> 4) == 0xE) return 3;
    if ((c >> 3) == 0x1E) return 4;
    return 1;
}

// GPT-2's reversible byte -> printable character map used by byte-level BPE.
struct ByteMap {
    std::array<std::string, 256> to_str;
    std::unordered_map<std::string, unsigned char> to_byte;
    ByteMap() {
        std::vector<int> bs;
        for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
        for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
        for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
        std::vector<int> cs = bs;
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            if (std::find(bs.begin(), bs.end(), b) == bs.end()) {
                bs.push_back(b);
                cs.push_back(256 + n++);
            }
        }
        for (size_t i = 0; i < bs.size(); ++i) {
            to_str[bs[i]] = utf8_of(static_cast<unsigned>(cs[i]));
            to_byte[to_str[bs[i]]] = static_cast<unsigned char>(bs[i]);
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap m;
    return m;
}

const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class Regex {
public:
    explicit Regex(const std::string& pattern) {
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
    ~Regex() {
        pcre2_match_data_free(data_);
        pcre2_code_free(code_);
    }
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

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
struct PreStep {
    enum Kind { SplitRegex, SplitString, Digits, ByteLevelRegex } kind;
    std::shared_ptr<Regex> regex;
    std::string literal;
    std::string behavior = "Isolated";
    bool invert = false;
    bool individual_digits = false;
};

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

}  // namespace

struct Tokenizer::Impl {
    bool builtin = false;
    std::string origin;
    // Byte-level BPE
    std::unordered_map<std::string, std::int32_t> vocab;       // byte-mapped token text -> id
    std::vector<std::string> id_to_token;                      // byte-mapped text ("" for gaps)
    std::unordered_map<std::string, std::int32_t> merge_rank;  // "a b" -> rank
    bool ignore_merges = false;
    bool add_prefix_space = false;
    std::vector<PreStep> pre;
    // Added tokens (specials included), matched in the raw text before anything else.
    struct Added {
        std::string content;
        std::int32_t id;
        bool special;
        bool lstrip, rstrip;
    };
    std::vector<Added> added;                                   // longest first
    std::unordered_map<std::string, std::int32_t> added_ids;
    std::unordered_map<std::int32_t, const Added*> added_by_id;
    std::int64_t vocab_size = 0;
    std::vector<std::string> warnings;
    mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache;
    mutable std::mutex cache_mutex;

    void finish_added() {
        std::stable_sort(added.begin(), added.end(),
                         [](const Added& a, const Added& b) { return a.content.size() > b.content.size(); });
        for (const auto& a : added) {
            added_ids[a.content] = a.id;
            vocab_size = std::max<std::int64_t>(vocab_size, a.id + 1);
        }
        for (const auto& a : added) added_by_id[a.id] = &a;
    }

    std::vector<std::string> pre_tokenize(const std::string& text) const {
        std::vector<std::string> pieces{text};
        for (const auto& step : pre) {
            std::vector<std::string> next;
            for (const auto& p : pieces) {
                std::vector<std::string> parts;
                switch (step.kind) {
                    case PreStep::SplitRegex:
                    case PreStep::ByteLevelRegex:
                        parts = split_by_matches(p, step.regex->find_all(p), step.behavior, step.invert);
                        break;
                    case PreStep::SplitString: {
                        std::vector<std::pair<size_t, size_t>> m;
                        if (!step.literal.empty()) {
                            size_t at = 0;
                            while ((at = p.find(step.literal, at)) != std::string::npos) {
                                m.emplace_back(at, at + step.literal.size());
                                at += step.literal.size();
                            }
                        }
                        parts = split_by_matches(p, m, step.behavior, step.invert);
                        break;
                    }
                    case PreStep::Digits: {
                        std::vector<std::pair<size_t, size_t>> m;
                        for (size_t i = 0; i < p.size();) {
                            if (p[i] >= '0' && p[i] <= '9') {
                                size_t j = i + 1;
                                if (!step.individual_digits)
                                    while (j < p.size() && p[j] >= '0' && p[j] <= '9') ++j;
                                m.emplace_back(i, j);
                                i = j;
                            } else {
                                ++i;
                            }
                        }
                        parts = split_by_matches(p, m, "Isolated", false);
                        break;
                    }
                }
                for (auto& x : parts)
                    if (!x.empty()) next.push_back(std::move(x));
            }
            pieces = std::move(next);
        }
        return pieces;
    }

    // Byte-level BPE of one pre-token (raw bytes).
    void bpe(const std::string& piece, std::vector<std::int32_t>& out) const {
        const auto& bm = byte_map();
        std::string mapped;
        std::vector<std::string> symbols;
        symbols.reserve(piece.size());
        for (unsigned char c : piece) {
            symbols.push_back(bm.to_str[c]);
            mapped += bm.to_str[c];
        }
        {
            std::lock_guard<std::mutex> lock(cache_mutex);
            auto it = cache.find(mapped);
            if (it != cache.end()) {
                out.insert(out.end(), it->second.begin(), it->second.end());
                return;
            }
        }
        std::vector<std::int32_t> ids;
        auto whole = vocab.find(mapped);
        if (ignore_merges && whole != vocab.end()) {
            ids.push_back(whole->second);
        } else {
            while (symbols.size() > 1) {
                int best_rank = INT_MAX;
                size_t best = 0;
                for (size_t i = 0; i + 1 < symbols.size(); ++i) {
                    auto it = merge_rank.find(symbols[i] + " " + symbols[i + 1]);
                    if (it != merge_rank.end() && it->second < best_rank) {
                        best_rank = it->second;
                        best = i;
                    }
                }
                if (best_rank == INT_MAX) break;
                // Merge every occurrence of the best pair, left to right.
                const std::string a = symbols[best], b = symbols[best + 1];
                std::vector<std::string> merged;
                merged.reserve(symbols.size());
                for (size_t i = 0; i < symbols.size();) {
                    if (i + 1 < symbols.size() && symbols[i] == a && symbols[i + 1] == b) {
                        merged.push_back(a + b);
                        i += 2;
                    } else {
                        merged.push_back(symbols[i]);
                        ++i;
                    }
                }
                symbols = std::move(merged);
            }
            for (const auto& s : symbols) {
                auto it = vocab.find(s);
                if (it != vocab.end()) {
                    ids.push_back(it->second);
                    continue;
                }
                // A symbol missing from the vocabulary: fall back to its single bytes.
                for (size_t i = 0; i < s.size();) {
                    const size_t len = utf8_len(static_cast<unsigned char>(s[i]));
                    auto jt = vocab.find(s.substr(i, len));
                    if (jt != vocab.end()) ids.push_back(jt->second);
                    i += len;
                }
            }
        }
        out.insert(out.end(), ids.begin(), ids.end());
        std::lock_guard<std::mutex> lock(cache_mutex);
        if (cache.size() > 200000) cache.clear();
        cache.emplace(std::move(mapped), std::move(ids));
    }

    void encode_plain(const std::string& text, std::vector<std::int32_t>& out) const {
        if (text.empty()) return;
        if (builtin) {
            for (unsigned char c : text) out.push_back(c);
            return;
        }
        std::string t = text;
        if (add_prefix_space && !t.empty() && t[0] != ' ') t = " " + t;
        for (const auto& piece : pre_tokenize(t)) bpe(piece, out);
    }

    std::vector<std::int32_t> encode(std::string_view text) const {
        std::vector<std::int32_t> out;
        std::string pending;
        size_t i = 0;
        while (i < text.size()) {
            const Added* hit = nullptr;
            for (const auto& a : added) {
                if (!a.content.empty() && text.compare(i, a.content.size(), a.content) == 0) {
                    hit = &a;
                    break;
                }
            }
            if (!hit) {
                pending.push_back(text[i++]);
                continue;
            }
            if (hit->lstrip)
                while (!pending.empty() && std::isspace(static_cast<unsigned char>(pending.back())))
                    pending.pop_back();
            encode_plain(pending, out);
            pending.clear();
            out.push_back(hit->id);
            i += hit->content.size();
            if (hit->rstrip)
                while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
        }
        encode_plain(pending, out);
        return out;
    }

    std::string decode(const std::vector<std::int32_t>& ids, bool skip_special) const {
        std::string out;
        const auto& bm = byte_map();
        for (auto id : ids) {
            auto a = added_by_id.find(id);
            if (a != added_by_id.end()) {
                if (!(skip_special && a->second->special)) out += a->second->content;
                continue;
            }
            if (builtin) {
                if (id >= 0 && id < 256) out.push_back(static_cast<char>(id));
                continue;
            }
            if (id < 0 || static_cast<size_t>(id) >= id_to_token.size()) continue;
            const std::string& tok = id_to_token[id];
            for (size_t i = 0; i < tok.size();) {
                const size_t len = utf8_len(static_cast<unsigned char>(tok[i]));
                auto it = bm.to_byte.find(tok.substr(i, len));
                if (it != bm.to_byte.end()) out.push_back(static_cast<char>(it->second));
                else out += tok.substr(i, len);
                i += len;
            }
        }
        return out;
    }
};

namespace {

void add_pre_step(Tokenizer::Impl& impl, const json& p, const std::string& origin) {
    if (p.is_null()) return;
    const std::string type = p.value("type", "");
    if (type == "Sequence") {
        for (const auto& s : p.at("pretokenizers")) add_pre_step(impl, s, origin);
    } else if (type == "Split") {
        PreStep s;
        s.behavior = p.value("behavior", "Isolated");
        s.invert = p.value("invert", false);
        const auto& pat = p.at("pattern");
        if (pat.contains("Regex")) {
            s.kind = PreStep::SplitRegex;
            s.regex = std::make_shared<Regex>(pat.at("Regex").get<std::string>());
        } else if (pat.contains("String")) {
            s.kind = PreStep::SplitString;
            s.literal = pat.at("String").get<std::string>();
        } else {
            throw InputError(origin + ": Split pre-tokenizer without a pattern");
        }
        impl.pre.push_back(std::move(s));
    } else if (type == "ByteLevel") {
        if (p.value("add_prefix_space", false)) impl.add_prefix_space = true;
        if (p.value("use_regex", true)) {
            PreStep s;
            s.kind = PreStep::ByteLevelRegex;
            s.regex = std::make_shared<Regex>(kGpt2Pattern);
            impl.pre.push_back(std::move(s));
        }
    } else if (type == "Digits") {
        PreStep s;
        s.kind = PreStep::Digits;
        s.individual_digits = p.value("individual_digits", false);
        impl.pre.push_back(std::move(s));
    } else {
        throw InputError(origin + ": unsupported pre-tokenizer \"" + type +
                         "\" (byte-level BPE tokenizers are supported)");
    }
}

bool uses_byte_level(const json& j) {
    if (j.is_null()) return false;
    if (j.value("type", "") == "ByteLevel") return true;
    if (j.contains("pretokenizers"))
        for (const auto& s : j["pretokenizers"])
            if (uses_byte_level(s)) return true;
    if (j.contains("decoders"))
        for (const auto& s : j["decoders"])
            if (uses_byte_level(s)) return true;
    return false;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::shared_ptr<Tokenizer> Tokenizer::byte_level() {
    auto impl = std::make_unique<Impl>();
    impl->builtin = true;
    impl->origin = "built-in byte-level";
    impl->vocab_size = 256;
    const char* specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"};
    for (int i = 0; i < 4; ++i) impl->added.push_back({specials[i], 256 + i, true, false, false});
    impl->finish_added();
    return std::shared_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

std::shared_ptr<Tokenizer> Tokenizer::from_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError("cannot read tokenizer file " + file.string());
    std::stringstream ss;
    ss << in.rdbuf();
    return from_json_text(ss.str(), file.string());
}

std::shared_ptr<Tokenizer> Tokenizer::from_json_text(const std::string& text, const std::string& origin) {
    json j = parse_untrusted_json(text, origin);
    auto impl = std::make_unique<Impl>();
    impl->origin = origin;
    try {
        const auto& model = j.at("model");
        const std::string type = model.value("type", "BPE");
        if (type != "BPE") throw InputError(origin + ": unsupported tokenizer model \"" + type + "\" (BPE only)");
        if (!uses_byte_level(j.value("pre_tokenizer", json())) && !uses_byte_level(j.value("decoder", json())))
            throw InputError(origin + ": only byte-level BPE tokenizers are supported "
                             "(this one has no ByteLevel pre-tokenizer or decoder)");
        impl->ignore_merges = model.value("ignore_merges", false);
        for (auto it = model.at("vocab").begin(); it != model.at("vocab").end(); ++it) {
            const auto id = it.value().get<std::int32_t>();
            impl->vocab[it.key()] = id;
            if (static_cast<size_t>(id) >= impl->id_to_token.size()) impl->id_to_token.resize(id + 1);
            impl->id_to_token[id] = it.key();
        }
        impl->vocab_size = static_cast<std::int64_t>(impl->id_to_token.size());
        std::int32_t rank = 0;
        for (const auto& m : model.at("merges")) {
            std::string key;
            if (m.is_string()) key = m.get<std::string>();
            else if (m.is_array() && m.size() == 2) key = m[0].get<std::string>() + " " + m[1].get<std::string>();
            else throw InputError(origin + ": malformed merge entry " + m.dump());
            impl->merge_rank.emplace(std::move(key), rank++);
        }
        const json norm = j.value("normalizer", json());
        if (!norm.is_null()) {
            const std::string nt = norm.value("type", "");
            if (nt == "NFC") impl->warnings.push_back("NFC normalizer not applied (input is assumed to be NFC already)");
            else throw InputError(origin + ": unsupported normalizer \"" + nt + "\"");
        }
        add_pre_step(*impl, j.value("pre_tokenizer", json()), origin);
        if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
            for (const auto& a : j["added_tokens"]) {
                impl->added.push_back({a.at("content").get<std::string>(), a.at("id").get<std::int32_t>(),
                                       a.value("special", false), a.value("lstrip", false),
                                       a.value("rstrip", false)});
            }
        }
    } catch (const json::exception& e) {
        throw InputError(origin + ": malformed tokenizer.json (" + e.what() + ")");
    }
    impl->finish_added();
    return std::shared_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text) const { return impl_->encode(text); }
std::string Tokenizer::decode(const std::vector<std::int32_t>& ids, bool skip_special) const {
    return impl_->decode(ids, skip_special);
}
std::int64_t Tokenizer::vocab_size() const { return impl_->vocab_size; }
std::string Tokenizer::description() const { return impl_->origin; }
const std::vector<std::string>& Tokenizer::warnings() const { return impl_->warnings; }

std::optional<std::int32_t> Tokenizer::token_id(std::string_view content) const {
    auto a = impl_->added_ids.find(std::string(content));
    if (a != impl_->added_ids.end()) return a->second;
    if (impl_->builtin) return std::nullopt;
    // Vocabulary keys are byte-mapped.
    std::string mapped;
    for (unsigned char c : content) mapped += byte_map().to_str[c];
    auto v = impl_->vocab.find(mapped);
    if (v != impl_->vocab.end()) return v->second;
    return std::nullopt;
}

}  // namespace wingspan::train
