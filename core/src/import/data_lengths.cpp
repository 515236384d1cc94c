#include "wingspan/data_lengths.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"

namespace wingspan {

const char* to_string(Padding p) {
    switch (p) {
        case Padding::Dynamic: return "dynamic";
        case Padding::Packed: return "packed";
        case Padding::Max: return "max";
    }
    return "dynamic";
}

Padding parse_padding(const std::string& s) {
    if (s == "dynamic") return Padding::Dynamic;
    if (s == "packed") return Padding::Packed;
    if (s == "max") return Padding::Max;
    throw InputError("--padding expects dynamic (each batch to its longest row), packed (rows of exactly --seq "
                     "tokens) or max (every row to --seq), got '" + s + "'");
}

bool is_native_trainer(const std::string& id) { return id.rfind("libtorch", 0) == 0; }

// Each framework's own default when neither --padding nor a packing setting is given:
// - wingspan-train packs (trainer/src/args.hpp: Options::packing = true);
// - TRL's SFTTrainer (hf-transformers, unsloth) does not pack (trl/trainer/sft_config.py:
//   `packing: bool = False`) and its collator pads each batch to its longest example
//   (trl/trainer/sft_trainer.py DataCollatorForLanguageModeling, `pad(...)` to the batch's longest);
// - torchtune pads each batch to its longest (torchtune/data/_collate.py padded_collate_sft: "Pad a
//   batch of sequences to the longest sequence length in the batch"; `packed: False` in its recipes);
// - LitGPT the same (litgpt/data/base.py get_sft_collate_fn: "pads short sequences to the longest
//   element in the batch");
// - mlx-lm pads each batch to its longest rounded up to a multiple of 32, capped at max_seq_length
//   (mlx_lm/tuner/trainer.py iterate_batches: pad_to = 32).
Padding default_padding(const std::string& id) {
    return is_native_trainer(id) ? Padding::Packed : Padding::Dynamic;
}

std::int64_t padding_multiple(const std::string& id) { return id == "mlx-lm" ? 32 : 1; }

void shuffle_indices(std::vector<size_t>& v, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (size_t i = v.size(); i > 1; --i) {
        const size_t j = static_cast<size_t>(rng() % i);
        std::swap(v[i - 1], v[j]);
    }
}

std::vector<bool> held_out_items(size_t n, double fraction, std::uint64_t seed) {
    std::vector<size_t> idx(n);
    for (size_t i = 0; i < n; ++i) idx[i] = i;
    shuffle_indices(idx, seed ^ 0x5eedda7aULL);
    size_t n_eval = 0;
    if (fraction > 0 && n >= 2) n_eval = std::clamp<size_t>(static_cast<size_t>(std::llround(fraction * double(n))), 1, n - 1);
    std::vector<bool> is_eval(n, false);
    for (size_t i = 0; i < n_eval; ++i) is_eval[idx[i]] = true;
    return is_eval;
}

std::vector<std::uint32_t> epoch_order(size_t n, std::uint64_t seed, std::int64_t epoch, bool shuffle) {
    if (n > std::numeric_limits<std::uint32_t>::max()) throw InputError("more than 4,294,967,295 examples in one data set");
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    if (shuffle) shuffle_indices(order, seed * 1000003ULL + static_cast<std::uint64_t>(epoch));
    return {order.begin(), order.end()};
}

std::int64_t row_tokens(std::int64_t length, const Batching& b) {
    const std::int64_t row = b.last_token_only_label ? length - 1 : length;
    return std::clamp<std::int64_t>(row, 1, b.cap);
}

namespace {

// A dynamic batch's padded length: its longest row, rounded up to the multiple, capped.
std::int64_t padded(std::int64_t longest, const Batching& b) {
    const std::int64_t m = std::max<std::int64_t>(1, b.multiple);
    return std::min(b.cap, (longest + m - 1) / m * m);
}

std::int64_t group_rows(const Batching& b) { return b.micro_batch * std::max<std::int64_t>(1, b.devices); }

// The order known: every micro-batch the run takes, in its order; the longest sets the peak (the
// first of equals, which the run meets first).
PeakBatch replay(const std::vector<std::int64_t>& lengths, const Batching& b) {
    const std::int64_t rows = group_rows(b);
    const std::int64_t per_epoch = static_cast<std::int64_t>(lengths.size()) / rows;   // the last partial batch dropped
    if (per_epoch == 0)
        throw InputError("the data is too small for one batch of " + std::to_string(rows) + " examples (" +
                         std::to_string(lengths.size()) + " to train on)");
    const std::int64_t total = b.order->micro_batches > 0 ? b.order->micro_batches : per_epoch;
    PeakBatch peak{b.micro_batch, 0, false, -1, -1};
    const std::int64_t longest_possible = padded(row_tokens(*std::max_element(lengths.begin(), lengths.end()), b), b);
    std::vector<std::uint32_t> order;
    for (std::int64_t c = 0; c < total; ++c) {
        const std::int64_t epoch = c / per_epoch, index = c % per_epoch;
        if (index == 0) order = epoch_order(lengths.size(), b.order->seed, epoch, true);
        std::int64_t longest = 0;
        for (std::int64_t r = index * rows; r < (index + 1) * rows; ++r)
            longest = std::max(longest, row_tokens(lengths[order[static_cast<size_t>(r)]], b));
        const std::int64_t cols = padded(longest, b);
        if (cols > peak.cols) peak.cols = cols, peak.epoch = epoch, peak.index = index;
        if (peak.cols == longest_possible) break;   // nothing later can be longer
    }
    return peak;
}

// One epoch's padded tokens in the known order (global batches, the last partial one dropped).
std::int64_t replayed_epoch_tokens(const std::vector<std::int64_t>& lengths, const Batching& b) {
    const std::int64_t rows = group_rows(b);
    const std::vector<std::uint32_t> order = epoch_order(lengths.size(), b.order->seed, 0, true);
    std::int64_t sum = 0;
    for (std::int64_t first = 0; first + rows <= static_cast<std::int64_t>(order.size()); first += rows) {
        std::int64_t longest = 0;
        for (std::int64_t r = first; r < first + rows; ++r)
            longest = std::max(longest, row_tokens(lengths[order[static_cast<size_t>(r)]], b));
        sum += rows * padded(longest, b);
    }
    return sum;
}

}  // namespace

PeakBatch peak_batch(const std::vector<std::int64_t>& lengths, const Batching& b) {
    if (lengths.empty()) throw InputError("the data set holds no examples");
    if (b.cap < 1 || b.micro_batch < 1) throw InputError("the sequence cap and the micro batch must be at least 1");
    if (b.padding != Padding::Dynamic) return PeakBatch{b.micro_batch, b.cap, false, -1, -1};
    if (b.order) return replay(lengths, b);
    // The order unknown (a random sampler): the longest examples can meet in one batch.
    const std::int64_t longest = *std::max_element(lengths.begin(), lengths.end());
    return PeakBatch{b.micro_batch, padded(row_tokens(longest, b), b), true, -1, -1};
}

std::vector<LengthBin> length_histogram(const std::vector<std::int64_t>& lengths, int bins) {
    if (lengths.empty()) return {};
    const std::int64_t longest = std::max<std::int64_t>(1, *std::max_element(lengths.begin(), lengths.end()));
    const double raw = double(longest + 1) / double(std::max(1, bins));
    std::int64_t width = 1;
    for (std::int64_t p = 1; width < raw; p *= 10) {
        for (std::int64_t f : {1, 2, 5}) {
            width = f * p;
            if (width >= raw) break;
        }
    }
    std::vector<LengthBin> out(static_cast<size_t>(longest / width + 1));
    for (size_t i = 0; i < out.size(); ++i) {
        out[i].from = static_cast<std::int64_t>(i) * width;
        out[i].to = out[i].from + width;
    }
    for (std::int64_t n : lengths) out[static_cast<size_t>(std::max<std::int64_t>(0, n) / width)].count++;
    return out;
}

DataSummary summarize_lengths(const std::vector<std::int64_t>& lengths, const Batching& b) {
    DataSummary d;
    d.padding = b.padding;
    d.examples = static_cast<std::int64_t>(lengths.size());
    d.peak = peak_batch(lengths, b);
    d.shortest = *std::min_element(lengths.begin(), lengths.end());
    for (std::int64_t n : lengths) {
        d.tokens_total += n;
        d.longest = std::max(d.longest, n);
        if (b.padding != Padding::Packed && (b.last_token_only_label ? n - 1 : n) > b.cap) ++d.truncated_examples;
        if (b.padding == Padding::Dynamic && !b.order) d.tokens_per_epoch += row_tokens(n, b);
    }
    if (b.padding == Padding::Packed) d.tokens_per_epoch = d.tokens_total;
    else if (b.padding == Padding::Max) d.tokens_per_epoch = d.examples * b.cap;
    else if (b.order) d.tokens_per_epoch = replayed_epoch_tokens(lengths, b);
    d.histogram = length_histogram(lengths);
    return d;
}

nlohmann::json DataSummary::to_json() const {
    nlohmann::json bins = nlohmann::json::array();
    for (const auto& bin : histogram) bins.push_back({{"from", bin.from}, {"to", bin.to}, {"count", bin.count}});
    nlohmann::json peak_json = {{"rows", peak.rows}, {"cols", peak.cols}, {"worst_case", peak.worst_case}};
    if (peak.epoch >= 0) peak_json["epoch"] = peak.epoch, peak_json["micro_batch_index"] = peak.index;
    return {{"examples", examples},
            {"tokens_total", tokens_total},
            {"truncated_examples", truncated_examples},
            {"length_histogram", bins},
            {"peak_batch_tokens", peak.tokens()},
            {"peak_batch", peak_json},
            {"padding", to_string(padding)},
            {"longest_tokens", longest},
            {"shortest_tokens", shortest},
            {"tokens_per_epoch", tokens_per_epoch}};
}

// wingspan-train's defaults (trainer/src/args.hpp: --seed 42, --eval-fraction 0.05): the planner
// replays its order with them.
constexpr std::uint64_t kTrainerSeed = 42;
constexpr double kTrainerEvalFraction = 0.05;

DataSummary summarize_for_framework(const std::vector<std::int64_t>& lengths, const TrainingSetup& setup,
                                    const std::string& framework_id, const std::optional<Padding>& padding,
                                    std::int64_t epochs) {
    Batching b;
    b.cap = setup.seq_len;
    b.micro_batch = setup.micro_batch;
    b.devices = setup.devices;
    b.padding = padding.value_or(default_padding(framework_id));
    b.multiple = padding_multiple(framework_id);
    b.last_token_only_label = is_native_trainer(framework_id);
    if (!is_native_trainer(framework_id)) return summarize_lengths(lengths, b);
    // wingspan-train holds out 5 % for evaluation and shuffles the rest by its seed: the same
    // functions pick the same examples and the same order here.
    const std::vector<bool> held = held_out_items(lengths.size(), kTrainerEvalFraction, kTrainerSeed);
    std::vector<std::int64_t> train;
    for (size_t i = 0; i < lengths.size(); ++i)
        if (!held[i]) train.push_back(lengths[i]);
    const std::int64_t rows = b.micro_batch * std::max<std::int64_t>(1, b.devices);
    const std::int64_t per_epoch = static_cast<std::int64_t>(train.size()) / rows;
    b.order = Batching::Order{kTrainerSeed, per_epoch * std::max<std::int64_t>(1, epochs)};
    DataSummary s = summarize_lengths(train, b);
    // The data set is all of it; only the batches come from the training part.
    const DataSummary all = summarize_lengths(lengths, Batching{b.cap, b.micro_batch, b.devices, Padding::Max, 1,
                                                                   b.last_token_only_label, std::nullopt});
    s.examples = all.examples;
    s.tokens_total = all.tokens_total;
    s.truncated_examples = b.padding == Padding::Packed ? 0 : all.truncated_examples;
    s.longest = all.longest;
    s.shortest = all.shortest;
    s.histogram = all.histogram;
    return s;
}

TrainingSetup at_peak_batch(TrainingSetup s, const PeakBatch& peak) {
    if (peak.cols > 0) s.seq_len = peak.cols;
    return s;
}

}  // namespace wingspan
