#pragma once
// A model folder whose token counts are known by hand, for the suites that plan from data
// (test_core_data_lengths) and check those plans against wingspan-train (test_data_padding).
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "hostile_files.hpp"   // tests/trainer: split_tokenizer

namespace wingspan::testing {

// The hostile suites' byte-level BPE (one token per byte, no merges) with <|endoftext|> as id 256:
// a row of N bytes of text is N + 1 tokens (Plain chat format, its EOS appended), so every length
// is known by hand.
inline std::string byte_tokenizer_json() {
    nlohmann::json j = nlohmann::json::parse(split_tokenizer("\\s+|\\S+"));
    j["added_tokens"] = {{{"id", 256}, {"content", "<|endoftext|>"}, {"special", true}}};
    return j.dump();
}

inline void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// One `text` row of `bytes` bytes: bytes + 1 tokens with byte_tokenizer_json.
inline std::string text_row(size_t bytes) { return nlohmann::json{{"text", std::string(bytes, 'a')}}.dump() + "\n"; }

// config.json of a small Llama (4 layers, width 128, vocabulary 512; random weights) and the
// byte tokenizer: a folder both `wingspan plan --model-dir` and `wingspan-train --model` take.
inline std::filesystem::path write_tiny_model(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    write(dir / "config.json", nlohmann::json{{"model_type", "llama"},
                                              {"architectures", {"LlamaForCausalLM"}},
                                              {"hidden_size", 128},
                                              {"intermediate_size", 384},
                                              {"num_hidden_layers", 4},
                                              {"num_attention_heads", 4},
                                              {"num_key_value_heads", 2},
                                              {"vocab_size", 512},
                                              {"max_position_embeddings", 2048},
                                              {"tie_word_embeddings", true}}
                                   .dump());
    write(dir / "tokenizer.json", byte_tokenizer_json());
    return dir;
}

}  // namespace wingspan::testing
