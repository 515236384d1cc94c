#include "gguf/gguf_vocab.hpp"

#include <map>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "chat_format.hpp"
#include "tokenizer.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"

namespace wingspan::train::gguf {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// llama_token_type (llama.cpp's include/llama.h), as gguf-py's TokenType.
enum TokenType : std::int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// Split patterns of the Hugging Face tokenizer.json files whose pre-tokenizers llama.cpp
// implements under these names (src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_LLAMA3 / _QWEN2).
constexpr const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::vector<json> steps_of(const json& pre) {
    if (pre.is_null()) return {};
    if (pre.value("type", "") == "Sequence" && pre.contains("pretokenizers")) {
        std::vector<json> out;
        for (const auto& p : pre["pretokenizers"]) out.push_back(p);
        return out;
    }
    return {pre};
}

// The name llama.cpp knows a byte-level pre-tokenizer by; throws InputError for any other.
std::string byte_level_pre_name(const json& pre) {
    const std::vector<json> s = steps_of(pre);
    auto is = [](const json& j, const char* type) { return j.is_object() && j.value("type", "") == type; };
    if (s.size() == 1 && is(s[0], "ByteLevel") && s[0].value("use_regex", true)) return "gpt-2";
    if (s.size() == 2 && is(s[0], "Digits") && s[0].value("individual_digits", false) && is(s[1], "ByteLevel") &&
        s[1].value("use_regex", true))
        return "smollm";
    if (s.size() == 2 && is(s[0], "Split") && is(s[1], "ByteLevel") && !s[1].value("use_regex", true) &&
        s[0].contains("pattern") && s[0]["pattern"].contains("Regex")) {
        const std::string p = s[0]["pattern"]["Regex"].get<std::string>();
        if (p == kLlama3Split) return "llama-bpe";
        if (p == kQwen2Split) return "qwen2";
    }
    throw InputError("tokenizer.json: its pre-tokenizer is none that llama.cpp implements by name (GPT-2, Llama 3, "
                     "Qwen2, SmolLM); a GGUF with another would tokenize differently, so it is not exported");
}

std::string merge_text(const json& m) {
    if (m.is_string()) return m.get<std::string>();
    if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
        return m[0].get<std::string>() + " " + m[1].get<std::string>();
    throw InputError("tokenizer.json: a merge that is neither \"a b\" nor [\"a\", \"b\"]");
}

bool looks_like_byte_token(const std::string& t) {
    static const std::regex byte(R"(<0x[0-9A-Fa-f]{2}>)");
    return std::regex_match(t, byte);
}

// Whether SentencePiece-style text starts with a ▁ the tokenizer adds (llama.cpp's
// tokenizer.ggml.add_space_prefix): a Prepend normalizer, or a Metaspace that prepends.
bool adds_space_prefix(const json& tj) {
    const json norm = tj.value("normalizer", json());
    for (const auto& n : steps_of(norm.is_object() && norm.value("type", "") == "Sequence"
                                      ? json{{"type", "Sequence"}, {"pretokenizers", norm.value("normalizers", json::array())}}
                                      : norm))
        if (n.is_object() && n.value("type", "") == "Prepend") return true;
    for (const auto& p : steps_of(tj.value("pre_tokenizer", json())))
        if (p.is_object() && p.value("type", "") == "Metaspace")
            return p.value("prepend_scheme", std::string(p.value("add_prefix_space", true) ? "always" : "never")) != "never";
    return false;
}

}  // namespace

namespace {

VocabSummary add_tokenizer_keys(const fs::path& dir, std::int64_t vocab_size, Metadata& meta) {
    const fs::path file = dir / "tokenizer.json";
    if (!fs::exists(file))
        throw InputError("--model: " + dir.string() + " has no tokenizer.json; a GGUF needs the vocabulary (tokenizer.model "
                         "alone is not read)");
    const auto tok = Tokenizer::from_file(file);   // validates ids, merges, BOS/EOS
    const json tj = read_untrusted_json_file(file);
    const json& model = tj.at("model");
    const bool byte_level = !model.value("byte_fallback", false);

    // Every id of the embedding gets a token: the model's vocabulary, then the added tokens.
    std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
    std::vector<std::int32_t> types(static_cast<size_t>(vocab_size), kUnused);
    std::vector<bool> filled(static_cast<size_t>(vocab_size), false);
    auto place = [&](std::int64_t id, const std::string& text, std::int32_t type) {
        if (id < 0 || id >= vocab_size)
            throw InputError("tokenizer.json: token \"" + text.substr(0, 40) + "\" has id " + std::to_string(id) +
                             ", beyond the model's " + std::to_string(vocab_size) + " embedding rows");
        tokens[static_cast<size_t>(id)] = text;
        types[static_cast<size_t>(id)] = type;
        filled[static_cast<size_t>(id)] = true;
    };
    const std::optional<std::string> unk = model.contains("unk_token") && model["unk_token"].is_string()
                                               ? std::optional(model["unk_token"].get<std::string>())
                                               : std::nullopt;
    for (const auto& [text, id] : model.at("vocab").items()) {
        std::int32_t type = kNormal;
        if (!byte_level && looks_like_byte_token(text)) type = kByte;
        if (unk && text == *unk) type = kUnknown;
        place(id.get<std::int64_t>(), text, type);
    }
    for (const auto& a : tj.value("added_tokens", json::array()))
        place(a.at("id").get<std::int64_t>(), a.at("content").get<std::string>(), a.value("special", false) ? kControl : kUserDefined);
    for (std::int64_t i = 0; i < vocab_size; ++i)
        if (!filled[static_cast<size_t>(i)]) tokens[static_cast<size_t>(i)] = "[PAD" + std::to_string(i) + "]";

    VocabSummary s;
    std::vector<std::string> merges;
    for (const auto& m : model.value("merges", json::array())) merges.push_back(merge_text(m));
    s.merges = static_cast<std::int64_t>(merges.size());
    if (byte_level) {
        s.model = "gpt2";
        s.pre = byte_level_pre_name(tj.value("pre_tokenizer", json()));
        meta.add_string("tokenizer.ggml.model", s.model);
        meta.add_string("tokenizer.ggml.pre", s.pre);
        meta.add_strings("tokenizer.ggml.tokens", tokens);
        meta.add_i32s("tokenizer.ggml.token_type", types);
        meta.add_strings("tokenizer.ggml.merges", merges);
    } else {
        // llama.cpp's SentencePiece tokenizer merges the adjacent pair whose joined token scores
        // highest; Hugging Face's BPE merges the pair of lowest rank. A token's score is minus the
        // rank of the merge that makes it, so both pick the same pair.
        s.model = "llama";
        std::map<std::string, std::int64_t> rank_of;
        for (size_t r = 0; r < merges.size(); ++r) {
            const size_t space = merges[r].find(' ');
            rank_of.emplace(merges[r].substr(0, space) + merges[r].substr(space + 1), static_cast<std::int64_t>(r));
        }
        std::vector<float> scores(tokens.size(), 0.0f);
        for (size_t i = 0; i < tokens.size(); ++i)
            if (auto it = rank_of.find(tokens[i]); it != rank_of.end()) scores[i] = -static_cast<float>(it->second) - 1;
        meta.add_string("tokenizer.ggml.model", s.model);
        meta.add_strings("tokenizer.ggml.tokens", tokens);
        meta.add_f32s("tokenizer.ggml.scores", scores);
        meta.add_i32s("tokenizer.ggml.token_type", types);
        meta.add_bool("tokenizer.ggml.add_space_prefix", adds_space_prefix(tj));
    }
    s.tokens = vocab_size;
    if (auto b = tok->bos_id()) meta.add_u32("tokenizer.ggml.bos_token_id", static_cast<std::uint32_t>(*b));
    if (auto e = tok->eos_id()) meta.add_u32("tokenizer.ggml.eos_token_id", static_cast<std::uint32_t>(*e));
    if (unk)
        if (auto u = tok->token_id(*unk)) meta.add_u32("tokenizer.ggml.unknown_token_id", static_cast<std::uint32_t>(*u));
    if (fs::exists(dir / "tokenizer_config.json")) {
        const json tc = read_untrusted_json_file(dir / "tokenizer_config.json");
        json pad = tc.is_object() ? tc.value("pad_token", json()) : json();
        if (pad.is_object()) pad = pad.value("content", json());
        if (pad.is_string())
            if (auto p = tok->token_id(pad.get<std::string>())) meta.add_u32("tokenizer.ggml.padding_token_id", static_cast<std::uint32_t>(*p));
    }
    meta.add_bool("tokenizer.ggml.add_bos_token", tok->adds_bos());
    meta.add_bool("tokenizer.ggml.add_eos_token", tok->adds_eos());
    if (auto t = chat_template_of(dir)) {
        meta.add_string("tokenizer.chat_template", *t);
        s.has_chat_template = true;
    }
    for (const char* end : {"<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|endoftext|>", "</s>"})
        if (tok->token_id(end)) s.stop_tokens.push_back(end);
    return s;
}

}  // namespace

VocabSummary add_tokenizer(const fs::path& dir, std::int64_t vocab_size, Metadata& meta) {
    try {
        return add_tokenizer_keys(dir, vocab_size, meta);
    } catch (const json::exception& e) {   // a field of the wrong type: the file's fault
        throw InputError("tokenizer.json: malformed (" + std::string(e.what()) + ")");
    }
}

}  // namespace wingspan::train::gguf
