#pragma once
// A model folder's tokenizer as GGUF metadata, keyed as llama.cpp's convert_hf_to_gguf.py writes
// it (gguf-py/gguf/constants.py Keys.Tokenizer) and read by src/llama-vocab.cpp:
//   byte-level BPE (GPT-2, Llama 3, Qwen2, SmolLM): tokenizer.ggml.model "gpt2", the
//     pre-tokenizer's name in tokenizer.ggml.pre, tokens, token types and merges;
//   SentencePiece-style BPE (Llama 2, Mistral, TinyLlama): tokenizer.ggml.model "llama", tokens,
//     scores and token types;
// then the special token ids, add_bos/add_eos and the chat template.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/gguf_writer.hpp"

namespace wingspan::train::gguf {

struct VocabSummary {
    std::string model, pre;                 // tokenizer.ggml.model / .pre ("" for SentencePiece)
    std::int64_t tokens = 0, merges = 0;
    std::vector<std::string> stop_tokens;   // texts of the end-of-turn tokens the vocabulary has
    bool has_chat_template = false;
};

// Adds the tokenizer.* keys for a vocabulary of `vocab_size` rows (the embedding's; ids the
// tokenizer lacks become "[PAD<id>]" tokens of type UNUSED, as the converter writes them).
// Throws InputError for a tokenizer llama.cpp could not reproduce (an unknown pre-tokenizer,
// ids beyond the embedding, no tokenizer.json).
VocabSummary add_tokenizer(const std::filesystem::path& model_dir, std::int64_t vocab_size, Metadata& meta);

}  // namespace wingspan::train::gguf
