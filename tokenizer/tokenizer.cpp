#include "tokenizer.hpp"

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

#include "tokenizer_internal.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"

namespace wingspan::train {

namespace {

using nlohmann::json;
using tok::byte_map;
using tok::utf8_len;
using tok::Regex;
using tok::split_by_matches;

const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct PreStep {
    enum Kind { SplitRegex, SplitString, Digits, ByteLevelRegex, Metaspace } kind;
    std::shared_ptr<Regex> regex;
    std::string literal;
    std::string behavior = "Isolated";
    bool invert = false;
    bool individual_digits = false;
    // Metaspace: ' ' -> replacement (literal), "always"/"first"/"never" prepend it, split on it.
    std::string prepend_scheme = "always";
    bool split = true;
};

}  // namespace

struct Tokenizer::Impl {
    bool builtin = false;
    std::string origin;
    // BPE: byte-level (GPT-2, Llama 3, Qwen) maps raw bytes to printable characters before
    // the model; SentencePiece-style (Llama 2, Mistral, Gemma) uses ▁ for spaces and <0xXX>
    // byte tokens for what the vocabulary lacks.
    tok::BpeModel bpe_model;
    bool byte_level = false;
    tok::Normalizer normalizer;
    bool add_prefix_space = false;
    std::vector<PreStep> pre;
    // Decoding of SentencePiece-style vocabularies: ▁ -> ' ', <0xXX> -> the byte, then drop
    // this many leading spaces (the decoder's Strip, or Metaspace's added prefix).
    bool sp_decode = false;
    int strip_leading_spaces = 0;
    std::optional<std::int32_t> bos, eos;   // tokenizer_config.json (or the post-processor)
    bool add_bos = false, add_eos = false;
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

    std::vector<std::string> pre_tokenize(const std::string& text, bool first_section) const {
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
                    case PreStep::Metaspace: {
                        std::string t;
                        for (size_t at = 0, prev = 0;; prev = at + 1) {
                            at = p.find(' ', prev);
                            t.append(p, prev, at == std::string::npos ? std::string::npos : at - prev);
                            if (at == std::string::npos) break;
                            t += step.literal;
                        }
                        const bool prepend = step.prepend_scheme == "always" ||
                                             (step.prepend_scheme == "first" && first_section && &p == &pieces.front());
                        if (prepend && t.compare(0, step.literal.size(), step.literal) != 0) t = step.literal + t;
                        if (!step.split) {
                            parts.push_back(std::move(t));
                            break;
                        }
                        std::vector<std::pair<size_t, size_t>> m;
                        for (size_t at = 0; (at = t.find(step.literal, at)) != std::string::npos; at += step.literal.size())
                            m.emplace_back(at, at + step.literal.size());
                        parts = split_by_matches(t, m, "MergedWithNext", false);
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

    // BPE of one pre-token; byte-level tokenizers see its bytes as GPT-2's characters.
    void bpe(const std::string& piece, std::vector<std::int32_t>& out) const {
        std::string word;
        if (byte_level) {
            for (unsigned char c : piece) word += byte_map().to_str[c];
        } else {
            word = piece;
        }
        const bool cacheable = word.size() <= 256;   // SentencePiece pieces can be whole lines
        if (cacheable) {
            std::lock_guard<std::mutex> lock(cache_mutex);
            auto it = cache.find(word);
            if (it != cache.end()) {
                out.insert(out.end(), it->second.begin(), it->second.end());
                return;
            }
        }
        std::vector<std::int32_t> ids;
        bpe_model.encode(word, ids);
        out.insert(out.end(), ids.begin(), ids.end());
        if (!cacheable) return;
        std::lock_guard<std::mutex> lock(cache_mutex);
        if (cache.size() > 200000) cache.clear();
        cache.emplace(std::move(word), std::move(ids));
    }

    // One stretch of text between added tokens (Hugging Face normalizes and pre-tokenizes
    // each stretch on its own). `first`: the stretch starts the input.
    void encode_plain(const std::string& text, std::vector<std::int32_t>& out, bool first) const {
        if (text.empty()) return;
        if (builtin) {
            for (unsigned char c : text) out.push_back(c);
            return;
        }
        std::string t = normalizer.empty() ? text : normalizer.apply(text);
        if (add_prefix_space && !t.empty() && t[0] != ' ') t = " " + t;
        if (pre.empty()) {
            bpe(t, out);
            return;
        }
        for (const auto& piece : pre_tokenize(t, first)) bpe(piece, out);
    }

    // Encodes `text` from `from` on, which is 0 or where the walk over the whole text stood
    // right after an added token (its rstrip included): the walk from there depends on
    // nothing before it. `marks` (if given) gets (position, ids so far) after each added token.
    void walk(std::string_view text, size_t from, std::vector<std::int32_t>& out,
              std::vector<std::pair<size_t, size_t>>* marks, std::vector<size_t>* hit_starts = nullptr) const {
        std::string pending;
        size_t i = from, start = from;   // start: where `pending` begins in the text
        while (i < text.size()) {
            const Added* hit = nullptr;
            for (const auto& a : added) {
                if (!a.content.empty() && text.compare(i, a.content.size(), a.content) == 0) {
                    hit = &a;
                    break;
                }
            }
            if (!hit) {
                if (pending.empty()) start = i;
                pending.push_back(text[i++]);
                continue;
            }
            if (hit->lstrip)
                while (!pending.empty() && std::isspace(static_cast<unsigned char>(pending.back())))
                    pending.pop_back();
            encode_plain(pending, out, start == 0);
            pending.clear();
            if (hit_starts) hit_starts->push_back(i);
            out.push_back(hit->id);
            i += hit->content.size();
            if (hit->rstrip)
                while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
            if (marks) marks->emplace_back(i, out.size());
        }
        encode_plain(pending, out, start == 0);
    }

    std::vector<std::int32_t> encode(std::string_view text) const {
        std::vector<std::int32_t> out;
        walk(text, 0, out, nullptr);
        return out;
    }

    // encode(text), and for each cut what re-encoding text[0, cut) shares with it. The prefix's
    // walk equals the whole one up to the last added token before the cut, so only the stretch
    // from there to the cut is encoded again: linear in the text when added tokens (a chat
    // template's turn markers) delimit its stretches, where encoding every prefix was quadratic.
    std::vector<std::int32_t> encode_with_cuts(std::string_view text, const std::vector<size_t>& cuts,
                                               std::vector<size_t>& shared) const {
        std::vector<std::int32_t> ids;
        std::vector<std::pair<size_t, size_t>> marks{{0, 0}};   // (position, ids so far) after each added token
        std::vector<size_t> hit_starts;                         // where each added token starts
        walk(text, 0, ids, &marks, &hit_starts);
        shared.clear();
        for (size_t cut : cuts) {
            cut = std::min(cut, text.size());
            const auto after = std::upper_bound(marks.begin(), marks.end(), cut,
                                                [](size_t c, const auto& m) { return c < m.first; });
            const size_t mark = static_cast<size_t>(std::prev(after) - marks.begin());
            const auto [from, n] = marks[mark];
            if (builtin) {
                // One id per byte, specials above 255 and none a prefix of another: the prefix
                // shares every byte up to the cut or up to the next special, whichever is first.
                const size_t next = mark < hit_starts.size() ? hit_starts[mark] : text.size();
                shared.push_back(n + std::min(cut, next) - from);
                continue;
            }
            std::vector<std::int32_t> tail;
            walk(text.substr(0, cut), from, tail, nullptr);
            size_t at = n;
            for (size_t j = 0; j < tail.size() && at < ids.size() && tail[j] == ids[at]; ++j) ++at;
            shared.push_back(at);
        }
        return ids;
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
            if (id < 0 || static_cast<size_t>(id) >= bpe_model.id_to_token.size()) continue;
            const std::string& tok = bpe_model.id_to_token[static_cast<size_t>(id)];
            if (sp_decode) {
                unsigned byte = 0;
                if (tok.size() == 6 && std::sscanf(tok.c_str(), "<0x%2X>", &byte) == 1) {
                    out.push_back(static_cast<char>(byte));
                    continue;
                }
                static const std::string kSpace = "\u2581";
                for (size_t i = 0; i < tok.size();) {
                    if (tok.compare(i, kSpace.size(), kSpace) == 0) {
                        out.push_back(' ');
                        i += kSpace.size();
                    } else {
                        out.push_back(tok[i++]);
                    }
                }
                continue;
            }
            for (size_t i = 0; i < tok.size();) {
                const size_t len = utf8_len(static_cast<unsigned char>(tok[i]));
                auto it = bm.to_byte.find(tok.substr(i, len));
                if (it != bm.to_byte.end()) out.push_back(static_cast<char>(it->second));
                else out += tok.substr(i, len);
                i += len;
            }
        }
        if (sp_decode)
            for (int n = 0; n < strip_leading_spaces && !out.empty() && out.front() == ' '; ++n) out.erase(out.begin());
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
    } else if (type == "Metaspace") {
        PreStep s;
        s.kind = PreStep::Metaspace;
        s.literal = p.value("replacement", std::string("\u2581"));
        if (p.contains("prepend_scheme") && p["prepend_scheme"].is_string())
            s.prepend_scheme = p["prepend_scheme"].get<std::string>();
        else
            s.prepend_scheme = p.value("add_prefix_space", true) ? "always" : "never";
        s.split = p.value("split", true);
        impl.pre.push_back(std::move(s));
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

// Whether a pre-tokenizer, normalizer or decoder (or a Sequence of them) has a step of `type`.
bool uses_type(const json& j, const std::string& type) {
    if (!j.is_object()) return false;
    if (j.value("type", "") == type) return true;
    for (const char* list : {"pretokenizers", "normalizers", "decoders"})
        if (j.contains(list) && j[list].is_array())
            for (const auto& s : j[list])
                if (uses_type(s, type)) return true;
    return false;
}

bool uses_byte_level(const json& j) { return uses_type(j, "ByteLevel"); }

// Leading spaces the decoder drops: a Strip step's "start", or one for a Metaspace decoder
// that prepended ▁ (add_prefix_space / prepend_scheme other than "never").
int strip_start(const json& dec) {
    if (!dec.is_object()) return 0;
    const std::string type = dec.value("type", "");
    if (type == "Strip" && dec.value("content", " ") == " ") return dec.value("start", 0);
    if (type == "Metaspace")
        return dec.value("prepend_scheme", dec.value("add_prefix_space", true) ? "always" : "never") == "never" ? 0 : 1;
    if (dec.contains("decoders") && dec["decoders"].is_array())
        for (const auto& d : dec["decoders"])
            if (int n = strip_start(d)) return n;
    return 0;
}

// BOS/EOS the post-processor adds around a single sequence (TemplateProcessing), until
// tokenizer_config.json says otherwise.
void read_post_processor(Tokenizer::Impl& impl, const json& pp, const std::string& origin) {
    if (!pp.is_object()) return;
    if (pp.value("type", "") == "Sequence" && pp.contains("processors")) {
        for (const auto& p : pp["processors"]) read_post_processor(impl, p, origin);
        return;
    }
    if (pp.value("type", "") != "TemplateProcessing" || !pp.contains("single") || !pp["single"].is_array()) return;
    const auto& single = pp["single"];
    auto special_id = [&](const json& item) -> std::optional<std::int32_t> {
        if (!item.is_object() || !item.contains("SpecialToken")) return std::nullopt;
        const std::string name = item["SpecialToken"].value("id", "");
        if (pp.contains("special_tokens") && pp["special_tokens"].contains(name)) {
            const auto& ids = pp["special_tokens"][name].value("ids", json::array());
            if (ids.is_array() && ids.size() == 1) return tok::checked_id(ids[0], "special token " + name, origin);
        }
        return std::nullopt;
    };
    if (!single.empty())
        if (auto id = special_id(single.front())) {
            impl.bos = id;
            impl.add_bos = true;
        }
    if (single.size() > 1)
        if (auto id = special_id(single.back())) {
            impl.eos = id;
            impl.add_eos = true;
        }
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
    auto t = from_json_text(read_regular_file(file), file.string());
    // BOS/EOS and whether they are added come from tokenizer_config.json beside it.
    const auto config_file = file.parent_path() / "tokenizer_config.json";
    std::error_code ec;
    if (std::filesystem::exists(config_file, ec)) t->apply_config(read_untrusted_json_file(config_file), config_file.string());
    return t;
}

std::shared_ptr<Tokenizer> Tokenizer::from_json_text(const std::string& text, const std::string& origin) {
    json j = parse_untrusted_json(text, origin);
    auto impl = std::make_unique<Impl>();
    impl->origin = origin;
    try {
        if (!j.is_object()) throw InputError(origin + ": not a tokenizer.json (not a JSON object)");
        const auto& model = j.at("model");
        const std::string type = model.value("type", "BPE");
        if (type != "BPE")
            throw InputError(origin + ": unsupported tokenizer model \"" + type + "\" (BPE only: byte-level as in "
                             "GPT-2, Llama 3, Qwen, SmolLM, or SentencePiece-style as in Llama 2, Mistral, Gemma)");
        const json pre = j.value("pre_tokenizer", json());
        const json dec = j.value("decoder", json());
        impl->byte_level = uses_byte_level(pre) || uses_byte_level(dec);
        impl->bpe_model.load(model, origin);
        if (!impl->byte_level) {
            // SentencePiece-style: spaces become ▁ in a normalizer (Prepend + Replace) or a
            // Metaspace pre-tokenizer; the decoder turns them back.
            const bool metaspace = uses_type(pre, "Metaspace");
            if (!metaspace && !impl->bpe_model.byte_fallback && !uses_type(j.value("normalizer", json()), "Replace"))
                throw InputError(origin + ": a BPE tokenizer that is neither byte-level nor SentencePiece-style "
                                 "(no ByteLevel, no Metaspace, no byte_fallback); it is not supported");
            impl->sp_decode = true;
            impl->strip_leading_spaces = strip_start(dec);
        }
        impl->vocab_size = static_cast<std::int64_t>(impl->bpe_model.id_to_token.size());
        impl->normalizer.load(j.value("normalizer", json()), origin);
        add_pre_step(*impl, pre, origin);
        if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
            for (const auto& a : j["added_tokens"]) {
                const std::string content = a.at("content").get<std::string>();
                impl->added.push_back({content, tok::checked_id(a.at("id"), "added token \"" + content.substr(0, 40) + "\"", origin),
                                       a.value("special", false), a.value("lstrip", false),
                                       a.value("rstrip", false)});
            }
        }
        read_post_processor(*impl, j.value("post_processor", json()), origin);
    } catch (const json::exception& e) {
        throw InputError(origin + ": malformed tokenizer.json (" + e.what() + ")");
    }
    impl->finish_added();
    return std::shared_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text) const { return impl_->encode(text); }
std::vector<std::int32_t> Tokenizer::encode_with_cuts(std::string_view text, const std::vector<size_t>& cuts,
                                                      std::vector<size_t>& shared) const {
    return impl_->encode_with_cuts(text, cuts, shared);
}
std::string Tokenizer::decode(const std::vector<std::int32_t>& ids, bool skip_special) const {
    return impl_->decode(ids, skip_special);
}
std::int64_t Tokenizer::vocab_size() const { return impl_->vocab_size; }
std::string Tokenizer::description() const { return impl_->origin; }
const std::vector<std::string>& Tokenizer::warnings() const { return impl_->warnings; }
std::optional<std::int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<std::int32_t> Tokenizer::eos_id() const { return impl_->eos; }
bool Tokenizer::adds_bos() const { return impl_->add_bos && impl_->bos.has_value(); }
bool Tokenizer::adds_eos() const { return impl_->add_eos && impl_->eos.has_value(); }

void Tokenizer::apply_config(const nlohmann::json& config, const std::string& origin) {
    if (!config.is_object()) return;
    // "bos_token": "<s>" or {"content": "<s>", ...}; a token the vocabulary lacks is an error.
    auto token = [&](const char* key, std::optional<std::int32_t>& slot) {
        if (!config.contains(key) || config[key].is_null()) return;
        const json& v = config[key];
        const std::string text = v.is_string() ? v.get<std::string>() : v.is_object() ? v.value("content", "") : "";
        if (text.empty()) return;
        auto id = token_id(text);
        if (!id) throw InputError(origin + ": " + key + " \"" + text + "\" is not a token of the tokenizer");
        slot = id;
    };
    token("bos_token", impl_->bos);
    token("eos_token", impl_->eos);
    if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean()) impl_->add_bos = config["add_bos_token"].get<bool>();
    if (config.contains("add_eos_token") && config["add_eos_token"].is_boolean()) impl_->add_eos = config["add_eos_token"].get<bool>();
}

std::optional<std::int32_t> Tokenizer::token_id(std::string_view content) const {
    auto a = impl_->added_ids.find(std::string(content));
    if (a != impl_->added_ids.end()) return a->second;
    if (impl_->builtin) return std::nullopt;
    // Byte-level vocabulary keys are byte-mapped.
    std::string mapped;
    if (impl_->byte_level)
        for (unsigned char c : content) mapped += byte_map().to_str[c];
    else
        mapped = content;
    auto v = impl_->bpe_model.vocab.find(mapped);
    if (v != impl_->bpe_model.vocab.end()) return v->second;
    return std::nullopt;
}

}  // namespace wingspan::train
