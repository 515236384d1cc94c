#pragma once
// A data set as the planner sees it: the token length of each example (after the model's chat
// template), and from them the batches a run really forms. Memory is planned at the batch that
// sets the peak (the longest padded micro-batch), time and cost from the real token count.
// wingspan-train forms its batches with the same functions (trainer/src/data/data.cpp), so its
// `predicted` event and the planner agree to the token.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "setup.hpp"

namespace wingspan {

// How examples become the rows of a micro-batch.
//   dynamic: each batch padded to its longest row (capped at --seq);
//   packed:  examples concatenated into rows of exactly --seq tokens;
//   max:     every row padded to --seq.
enum class Padding { Dynamic, Packed, Max };
const char* to_string(Padding);
// Throws InputError listing the spellings.
Padding parse_padding(const std::string&);

// What a framework does when the user names no padding (its own default, cited in the .cpp).
Padding default_padding(const std::string& framework_id);
// Dynamic padding rounds a batch's length up to a multiple of this (mlx-lm: 32), still capped.
std::int64_t padding_multiple(const std::string& framework_id);
// True for wingspan-train (the libtorch-* profiles): its rows hold an example's ids but the last
// (which is only a label), and its sampler's order is known (seeded, below).
bool is_native_trainer(const std::string& framework_id);

// wingspan-train's sampler, here so the planner can replay it. A Fisher-Yates shuffle seeded by
// `seed` (the same order on every platform; std::shuffle's algorithm is not fixed).
void shuffle_indices(std::vector<size_t>& v, std::uint64_t seed);
// Which of n items are held out for evaluation: `fraction` of them (at least one, never all),
// picked by a shuffle seeded from `seed`.
std::vector<bool> held_out_items(size_t n, double fraction, std::uint64_t seed);
// The order of n training examples in `epoch`: shuffled by (seed, epoch), or as given.
std::vector<std::uint32_t> epoch_order(size_t n, std::uint64_t seed, std::int64_t epoch, bool shuffle);

struct Batching {
    std::int64_t cap = 1024;          // --seq: the longest row
    std::int64_t micro_batch = 1;     // rows per device
    std::int64_t devices = 1;         // a global batch is micro_batch × devices rows, padded together
    Padding padding = Padding::Dynamic;
    std::int64_t multiple = 1;        // dynamic: lengths round up to this multiple (capped)
    // wingspan-train: a row holds length - 1 inputs (the last id is only the last label);
    // transformers-style trainers shift the labels inside the model: a row holds all `length`.
    bool last_token_only_label = false;
    // The sampler's order, when it is known (wingspan-train with its seed): the training examples
    // are taken in epoch_order, batches of micro_batch × devices rows, a final partial batch
    // dropped, for `micro_batches` batches (epochs follow one another). Unknown: the worst case,
    // the longest examples in one batch.
    struct Order {
        std::uint64_t seed = 42;
        std::int64_t micro_batches = 0;   // 0: one epoch
    };
    std::optional<Order> order;
};

// The tokens one example puts in its row under `b` (its padded share, before the batch pads).
std::int64_t row_tokens(std::int64_t length, const Batching& b);

struct PeakBatch {
    std::int64_t rows = 0;     // rows per device (the micro batch)
    std::int64_t cols = 0;     // padded length of each row
    bool worst_case = false;   // the order is unknown: the longest examples together
    std::int64_t epoch = -1;   // where the run meets it, when the order is known
    std::int64_t index = -1;   // micro-batch within the epoch
    std::int64_t tokens() const { return rows * cols; }   // peak_batch_tokens
};
// The micro-batch that sets the memory peak: the one with the longest padded rows. Throws
// InputError when `lengths` holds no example (or too few for one batch with the order known).
PeakBatch peak_batch(const std::vector<std::int64_t>& lengths, const Batching& b);

struct LengthBin {
    std::int64_t from = 0, to = 0;   // tokens, [from, to)
    std::int64_t count = 0;
};
// Equal-width bins of a "round" width (1, 2 or 5 × 10^k) covering 0 .. the longest, about `bins`.
std::vector<LengthBin> length_histogram(const std::vector<std::int64_t>& lengths, int bins = 16);

struct DataSummary {
    std::int64_t examples = 0;
    std::int64_t tokens_total = 0;         // every example's tokens, untruncated
    std::int64_t truncated_examples = 0;   // rows the cap cuts (none when packed: text runs on)
    std::int64_t longest = 0, shortest = 0;
    std::int64_t tokens_per_epoch = 0;     // what one epoch computes on: kept tokens, plus padding where it is known
    std::vector<LengthBin> histogram;
    PeakBatch peak;
    Padding padding = Padding::Dynamic;
    // plan --json's `data` object: examples, tokens_total, truncated_examples, length_histogram,
    // peak_batch_tokens, and the peak batch's shape.
    nlohmann::json to_json() const;
};
DataSummary summarize_lengths(const std::vector<std::int64_t>& lengths, const Batching& b);

// The batches `framework_id` forms of these lengths under `setup` (its seq_len cap, micro batch and
// devices), with `padding` or the framework's default, over `epochs` epochs. wingspan-train's own
// order is replayed (its defaults: seed 42, 5 % held out); other frameworks shuffle at random, so
// their peak is the worst case.
DataSummary summarize_for_framework(const std::vector<std::int64_t>& lengths, const TrainingSetup& setup,
                                    const std::string& framework_id, const std::optional<Padding>& padding,
                                    std::int64_t epochs);

// The setup the memory is planned at: the sequence the peak batch's rows really have.
TrainingSetup at_peak_batch(TrainingSetup s, const PeakBatch& peak);

}  // namespace wingspan
