#pragma once
// Training data: JSONL with `text`, `prompt`/`completion` or chat `messages`, rendered with a
// chat template, the loss masked to the answers, then packed or padded into batches.
#include <cstdint>
#include <filesystem>
#include <istream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tokenizer.hpp"

namespace wingspan::train {

struct Example {
    std::vector<std::int32_t> ids;
    std::vector<std::uint8_t> trained;   // trained[i]: the loss predicts ids[i]
};

// How conversations become tokens; chosen from the tokenizer's special tokens.
struct ChatFormat {
    // Llama2 .. Phi3: rendered by chat_format.cpp from the model's chat template.
    enum Kind { ChatML, Llama3, Plain, Llama2, Mistral, Zephyr, Gemma, Phi3 } kind = ChatML;
    bool from_template = false;          // chosen from a chat template or --chat-format
    bool is_template() const { return from_template || kind >= Llama2; }
    std::string default_system;          // a template's built-in system prompt (Qwen, SmolLM)
    bool llama31_dates = false;          // Llama 3.1's "Cutting Knowledge Date" system header
    std::int32_t eos = -1;               // appended to `text` and `completion` examples
    std::int32_t bos = -1;               // prepended to every example when >= 0
    std::int32_t pad = -1;
    std::string name() const;
};
ChatFormat chat_format_for(const Tokenizer& tok);

struct Message {
    std::string role, content;
};
// A conversation as tokens with the assistant turns (and their end token) trained. With
// `add_generation_prompt` the last (non-assistant) turn is followed by the assistant header.
Example render_chat(const std::vector<Message>& messages, const Tokenizer& tok, const ChatFormat& f,
                    bool add_generation_prompt = false);

// A malformed data file; `line` is 1-based (0: not about one line).
// Longest JSONL line accepted (one example); longer ones are a bad_data error naming the line.
inline constexpr size_t kMaxDataLineBytes = 16u << 20;

struct DataError : std::runtime_error {
    DataError(const std::string& msg, std::int64_t line_) : std::runtime_error(msg), line(line_) {}
    std::int64_t line;
};

struct Dataset {
    std::vector<Example> train, eval;
    std::int64_t lines = 0;
    std::int64_t tokens = 0;            // all tokens of all examples
    std::int64_t trained_tokens = 0;    // tokens the loss sees
    std::string formats;                // "messages: 300" etc.
};
// Throws DataError (malformed content, naming the line) or InputError (unreadable file).
Dataset load_jsonl(const std::filesystem::path& file, const Tokenizer& tok, const ChatFormat& f,
                   double eval_fraction, std::uint64_t seed);

struct Batch {
    std::int64_t rows = 0, cols = 0;
    std::vector<std::int64_t> input;    // rows x cols
    std::vector<std::int64_t> labels;   // rows x cols, -100 where no loss
    std::int64_t target_tokens = 0;     // labels != -100
};
// Micro-batches of one epoch: examples in an order shuffled by (seed, epoch) when `shuffle`,
// packed into rows of `seq` tokens (or one padded example per row). drop_last drops a final
// partial batch. Throws DataError when not even one batch can be formed.
std::vector<Batch> make_batches(const std::vector<Example>& examples, std::int64_t seq,
                                std::int64_t batch, bool packing, std::int32_t pad_id,
                                std::uint64_t seed, std::int64_t epoch, bool shuffle, bool drop_last);

// One line of a data file into `line` (without the newline), at most max_bytes: a longer one sets
// too_long. False at the end of the file. Shared by the SFT and the preference readers.
bool read_bounded_line(std::istream& in, std::string& line, size_t max_bytes, bool& too_long);
// A Fisher-Yates shuffle of v seeded by `seed` (the same order on every platform).
void shuffle_indices(std::vector<size_t>& v, std::uint64_t seed);

// The bundled sample data set: $WINGSPAN_SAMPLE_DATA, next to the executable, or the source tree.
// `name`: chat.jsonl (SFT) or preferences.jsonl (DPO/ORPO pairs).
std::filesystem::path default_sample_data(const std::filesystem::path& executable, const char* name = "chat.jsonl");

}  // namespace wingspan::train
