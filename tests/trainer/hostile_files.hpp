#pragma once
// Model files the hostile suites (test_trainer_hostile, test_reliability_trainer_hostile) write:
// a tiny Llama config and a byte-level tokenizer.json whose pre-tokenizer splits with a given
// pattern. Header-only, without the trainer's code (the process suite links only core).
#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wingspan::testing {

inline nlohmann::json tiny_llama_config() {
    return {{"model_type", "llama"},  {"hidden_size", 32},       {"intermediate_size", 48},
            {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
            {"vocab_size", 300},      {"tie_word_embeddings", true}, {"max_position_embeddings", 128}};
}

// Byte-level BPE (GPT-2's byte-to-character map, id = byte, no merges) split by `pattern` first.
inline std::string split_tokenizer(const std::string& pattern) {
    std::vector<int> bytes, chars;
    for (int b = 0; b < 256; ++b)
        if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) bytes.push_back(b), chars.push_back(b);
    for (int b = 0, n = 0; b < 256; ++b)
        if (std::find(bytes.begin(), bytes.end(), b) == bytes.end()) bytes.push_back(b), chars.push_back(256 + n++);
    nlohmann::json vocab = nlohmann::json::object();
    for (size_t i = 0; i < bytes.size(); ++i) {
        const unsigned c = static_cast<unsigned>(chars[i]);
        vocab[c < 0x80 ? std::string(1, char(c)) : std::string{char(0xC0 | (c >> 6)), char(0x80 | (c & 0x3F))}] = bytes[i];
    }
    return nlohmann::json{{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}},
                          {"pre_tokenizer",
                           {{"type", "Sequence"},
                            {"pretokenizers",
                             {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}},
                              {{"type", "ByteLevel"}, {"use_regex", false}}}}}},
                          {"decoder", {{"type", "ByteLevel"}}}}
        .dump();
}

}  // namespace wingspan::testing
