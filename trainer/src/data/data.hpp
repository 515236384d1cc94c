#pragma once
// Training data: JSONL rows (examples.hpp) read into examples, then packed or padded into batches.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "examples.hpp"
#include "wingspan/data_lengths.hpp"

namespace wingspan::train {

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
// packed into rows of `seq` tokens, or one example per row padded to `seq` (max) or to the batch's
// longest row (dynamic: a batch's cols vary). drop_last drops a final
// partial batch. Only where each row's tokens lie is kept (the order, and for packing where each
// example starts in it: 16 B per example); a Batch is made when it is asked for. Making the whole
// epoch's int64 rows up front cost 37 B per token (20 MB of JSONL took 1 GB of RAM, issue 34).
// The examples must outlive this object.
class EpochBatches {
public:
    EpochBatches() = default;
    // Throws DataError when not even one batch can be formed.
    EpochBatches(const std::vector<Example>& examples, std::int64_t seq, std::int64_t batch, Padding padding,
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
    // How this object forms rows, as the planner's data_lengths.hpp states it.
    Batching batching() const;

private:
    // Row r's cols inputs and their labels (the next token of each) into `in`/`lab`.
    void fill_row(std::int64_t r, std::int64_t cols, std::int64_t* in, std::int64_t* lab) const;

    std::vector<Batch> made_;            // the batches given whole, if any
    const std::vector<Example>* examples_ = nullptr;
    std::vector<std::uint32_t> order_;   // example indices in this epoch's order
    std::vector<std::int64_t> starts_;   // packing: where order_[k] starts in the concatenation (size + 1)
    std::int64_t seq_ = 0, batch_ = 0, rows_ = 0;
    Padding padding_ = Padding::Packed;
    std::int32_t pad_id_ = 0;
    size_t batches_ = 0;
};

// The order and the held-out split are core's (wingspan/data_lengths.hpp), so the planner
// forms the same batches as a run.
using wingspan::held_out_items;
using wingspan::shuffle_indices;

// The bundled sample data set: $WINGSPAN_SAMPLE_DATA, next to the executable, or the source tree.
// `name`: chat.jsonl (SFT) or preference.jsonl (DPO/ORPO pairs, the recipes' sample too).
std::filesystem::path default_sample_data(const std::filesystem::path& executable, const char* name = "chat.jsonl");

}  // namespace wingspan::train
