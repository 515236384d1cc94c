#pragma once
// Training data: JSONL with `text`, `prompt`/`completion` or chat `messages`, rendered with a
// chat template, the loss masked to the answers, then packed or padded into batches.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <stdexcept>
#include <string>
#include <utility>
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
    std::int64_t held_bytes = 0;        // RAM the examples hold (ids, flags and each example's own bytes)
};
// Throws DataError (malformed content, naming the line) or InputError (unreadable file). With
// max_held_bytes > 0, a data set whose examples would hold more RAM than that is refused while it
// is read (a DataError saying how far it got), before it can take the machine's memory.
Dataset load_jsonl(const std::filesystem::path& file, const Tokenizer& tok, const ChatFormat& f,
                   double eval_fraction, std::uint64_t seed, std::int64_t max_held_bytes = 0);
// RAM an example holds: its 4-byte ids, its 1-byte flags and the Example itself.
std::int64_t example_bytes(const Example& e);

struct Batch {
    std::int64_t rows = 0, cols = 0;
    std::vector<std::int64_t> input;    // rows x cols
    std::vector<std::int64_t> labels;   // rows x cols, -100 where no loss
    std::int64_t target_tokens = 0;     // labels != -100
};
// Micro-batches of one epoch: examples in an order shuffled by (seed, epoch) when `shuffle`,
// packed into rows of `seq` tokens (or one padded example per row). drop_last drops a final
// partial batch. Only where each row's tokens lie is kept (the order, and for packing where each
// example starts in it: 16 B per example); a Batch is made when it is asked for. Making the whole
// epoch's int64 rows up front cost 37 B per token (20 MB of JSONL took 1 GB of RAM, issue 34).
// The examples must outlive this object.
class EpochBatches {
public:
    EpochBatches() = default;
    // Throws DataError when not even one batch can be formed.
    EpochBatches(const std::vector<Example>& examples, std::int64_t seq, std::int64_t batch, bool packing,
                 std::int32_t pad_id, std::uint64_t seed, std::int64_t epoch, bool shuffle, bool drop_last);
    // Batches another builder made whole (a small data set's own batching): handed out as they are.
    explicit EpochBatches(std::vector<Batch> made) : made_(std::move(made)), batches_(made_.size()) {}
    size_t size() const { return batches_; }
    bool empty() const { return batches_ == 0; }
    void clear() { *this = EpochBatches(); }
    void truncate(size_t n) { batches_ = std::min(batches_, n); }
    Batch operator[](size_t i) const;
    // Bytes this object holds (the order and the row starts), for the data set's memory.
    std::int64_t held_bytes() const;

private:
    // Row r's seq + 1 tokens (inputs and the next token for each label) into `in`/`lab`.
    void fill_row(std::int64_t r, std::int64_t* in, std::int64_t* lab) const;

    std::vector<Batch> made_;            // the batches given whole, if any
    const std::vector<Example>* examples_ = nullptr;
    std::vector<std::uint32_t> order_;   // example indices in this epoch's order
    std::vector<std::int64_t> starts_;   // packing: where order_[k] starts in the concatenation (size + 1)
    std::int64_t seq_ = 0, batch_ = 0, rows_ = 0;
    bool packing_ = false;
    std::int32_t pad_id_ = 0;
    size_t batches_ = 0;
};

// One line of a data file into `line` (without the newline), at most max_bytes: a longer one sets
// too_long. False at the end of the file. Shared by the SFT and the preference readers.
bool read_bounded_line(std::istream& in, std::string& line, size_t max_bytes, bool& too_long);
// A Fisher-Yates shuffle of v seeded by `seed` (the same order on every platform).
void shuffle_indices(std::vector<size_t>& v, std::uint64_t seed);
// Which of n items are held out for evaluation: `fraction` of them (at least one, never all), picked by
// a shuffle seeded from `seed`. Shared by the SFT and the preference readers.
std::vector<bool> held_out_items(size_t n, double fraction, std::uint64_t seed);

// The bundled sample data set: $WINGSPAN_SAMPLE_DATA, next to the executable, or the source tree.
// `name`: chat.jsonl (SFT) or preference.jsonl (DPO/ORPO pairs, the recipes' sample too).
std::filesystem::path default_sample_data(const std::filesystem::path& executable, const char* name = "chat.jsonl");

}  // namespace wingspan::train
