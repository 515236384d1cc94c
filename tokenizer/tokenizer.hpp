#pragma once
// Tokenizers: a Hugging Face tokenizer.json with a BPE model, byte-level (GPT-2, Llama 3,
// Qwen2, SmolLM) or SentencePiece-style with byte fallback (Llama 2, Mistral, TinyLlama,
// Gemma), its normalizers (NFC, Prepend, Replace, ...), added and special tokens, and BOS/EOS
// from tokenizer_config.json; or the built-in byte-level tokenizer (256 bytes + 4 specials).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace wingspan::train {

class Tokenizer {
public:
    // The built-in tokenizer: ids 0..255 are bytes, then <|endoftext|>, <|im_start|>,
    // <|im_end|>, <|pad|>.
    static std::shared_ptr<Tokenizer> byte_level();
    // Throws InputError naming what is unsupported or malformed. Reads tokenizer_config.json
    // from the same folder when there is one.
    static std::shared_ptr<Tokenizer> from_file(const std::filesystem::path& file);
    static std::shared_ptr<Tokenizer> from_json_text(const std::string& text, const std::string& origin);

    ~Tokenizer();
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    // Token ids of the text; added/special tokens written in the text map to their ids. No
    // BOS/EOS is added.
    std::vector<std::int32_t> encode(std::string_view text) const;
    // encode(text), and in `shared` for each of `cuts` (byte offsets into text) how many leading
    // ids encode(text.substr(0, cut)) has in common with it: where a chat turn starts or ends
    // in the tokens. One pass: only the stretch between the last added token and a cut is
    // encoded again (linear in turns, where encoding each prefix was quadratic).
    std::vector<std::int32_t> encode_with_cuts(std::string_view text, const std::vector<size_t>& cuts,
                                               std::vector<size_t>& shared) const;
    std::string decode(const std::vector<std::int32_t>& ids, bool skip_special = false) const;
    // One more than the largest id.
    std::int64_t vocab_size() const;
    // Id of a token given by its text (added tokens first, then the vocabulary).
    std::optional<std::int32_t> token_id(std::string_view content) const;
    std::string description() const;
    // Warnings collected while reading the file (e.g. an ignored normalizer).
    const std::vector<std::string>& warnings() const;
    // BOS/EOS: from the post-processor's template, overridden by tokenizer_config.json
    // (bos_token, eos_token, add_bos_token, add_eos_token).
    std::optional<std::int32_t> bos_id() const;
    std::optional<std::int32_t> eos_id() const;
    bool adds_bos() const;   // a sequence starts with BOS
    bool adds_eos() const;
    // Applies a tokenizer_config.json object. Throws InputError for a BOS/EOS not in the vocabulary.
    void apply_config(const nlohmann::json& config, const std::string& origin);

    struct Impl;

private:
    explicit Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace wingspan::train
