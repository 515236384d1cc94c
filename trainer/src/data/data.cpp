#include "data/data.hpp"
#include "support/stop_signals.hpp"

#include <algorithm>
#include <limits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/user_dirs.hpp"

namespace wingspan::train {

std::int64_t example_bytes(const Example& e) {
    return static_cast<std::int64_t>(sizeof(Example) + e.ids.capacity() * sizeof(std::int32_t) + e.trained.capacity());
}

Dataset load_jsonl(const std::filesystem::path& file, const Tokenizer& tok, const ChatFormat& f,
                   double eval_fraction, std::uint64_t seed, std::int64_t max_held_bytes) {
    require_regular_file(file);   // a named pipe would block here forever
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError("cannot read data file " + file.string());
    Dataset d;
    std::vector<Example> all;
    std::map<std::string, std::int64_t> formats;
    std::string line;
    std::int64_t n = 0;
    bool too_long = false;
    while (read_bounded_line(in, line, kMaxDataLineBytes, too_long)) {
        ++n;
        if (n % 256 == 0) stops::throw_if_requested();   // a big data set stops while it is read
        if (too_long)
            throw DataError("line " + std::to_string(n) + " is longer than " + std::to_string(kMaxDataLineBytes) +
                                " bytes; split the example or shorten it",
                            n);
        Example e;
        std::string format;
        if (!example_from_line(line, tok, f, n, e, format)) continue;
        formats[format]++;
        if (e.ids.size() < 2) continue;
        // Appending the end token doubled the capacity: the data set is held at 5 B per token, not 10.
        e.ids.shrink_to_fit();
        e.trained.shrink_to_fit();
        d.held_bytes += example_bytes(e);
        if (max_held_bytes > 0 && d.held_bytes > max_held_bytes)
            throw DataError("the data set holds more than " + std::to_string(max_held_bytes) +
                                " B of RAM as tokens by line " + std::to_string(n) + " (" + std::to_string(d.tokens) +
                                " tokens so far, about 5 B each); that is the most this run gives it. Train on a part "
                                "of the file, or on a machine with more memory",
                            n);
        d.tokens += static_cast<std::int64_t>(e.ids.size());
        for (auto t : e.trained) d.trained_tokens += t;
        all.push_back(std::move(e));
    }
    d.lines = n;
    if (all.empty()) throw DataError(file.string() + " holds no examples", 0);
    for (const auto& [k, v] : formats) d.formats += (d.formats.empty() ? "" : ", ") + k + ": " + std::to_string(v);

    const std::vector<bool> is_eval = held_out_items(all.size(), eval_fraction, seed);
    for (size_t i = 0; i < all.size(); ++i) (is_eval[i] ? d.eval : d.train).push_back(std::move(all[i]));
    return d;
}

EpochBatches::EpochBatches(const std::vector<Example>& examples, std::int64_t seq, std::int64_t batch, Padding padding,
                           std::int32_t pad_id, std::uint64_t seed, std::int64_t epoch, bool shuffle, bool drop_last)
    : examples_(&examples), seq_(seq), batch_(batch), padding_(padding), pad_id_(pad_id) {
    try {
        order_ = epoch_order(examples.size(), seed, epoch, shuffle);   // the planner replays the same order
    } catch (const InputError& e) {
        throw DataError(e.what(), 0);
    }
    if (padding == Padding::Packed) {
        // Rows of seq inputs over the concatenation, each with the token after it for the last label.
        starts_.resize(order_.size() + 1, 0);
        for (size_t k = 0; k < order_.size(); ++k)
            starts_[k + 1] = starts_[k] + static_cast<std::int64_t>(examples[order_[k]].ids.size());
        const std::int64_t total = starts_.back();
        rows_ = total >= seq + 1 ? (total - 1) / seq : 0;
    } else {
        rows_ = static_cast<std::int64_t>(order_.size());   // one padded example per row
    }
    std::int64_t n = rows_ / batch;
    if (rows_ % batch != 0 && !drop_last) ++n;
    batches_ = static_cast<size_t>(n);
    if (batches_ == 0 && !examples.empty())
        throw DataError("the data is too small for one batch of " + std::to_string(batch) + " x " +
                            std::to_string(seq) + " tokens",
                        0);
}

Batching EpochBatches::batching() const {
    Batching b;
    b.cap = seq_;
    b.micro_batch = batch_;
    b.padding = padding_;
    b.last_token_only_label = true;   // fill_row: ids[0..n) in, ids[1..n] the labels
    return b;
}

void EpochBatches::fill_row(std::int64_t r, std::int64_t cols, std::int64_t* in, std::int64_t* lab) const {
    const auto& ex = *examples_;
    if (padding_ != Padding::Packed) {
        const Example& e = ex[order_[static_cast<size_t>(r)]];
        const std::int64_t n = std::min<std::int64_t>(static_cast<std::int64_t>(e.ids.size()) - 1, cols);
        std::fill(in, in + cols, pad_id_);
        std::fill(lab, lab + cols, -100);
        for (std::int64_t t = 0; t < n; ++t) {
            in[t] = e.ids[t];
            lab[t] = e.trained[t + 1] ? e.ids[t + 1] : -100;
        }
        return;
    }
    // The example holding token r·seq of the concatenation, then forward through the next ones.
    std::int64_t pos = r * seq_;
    size_t k = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), pos) - starts_.begin()) - 1;
    for (std::int64_t t = 0; t <= seq_; ++t, ++pos) {
        while (pos >= starts_[k + 1]) ++k;
        const Example& e = ex[order_[k]];
        const size_t at = static_cast<size_t>(pos - starts_[k]);
        const std::int64_t id = e.ids[at];
        if (t < seq_) in[t] = id;
        if (t > 0) lab[t - 1] = e.trained[at] ? id : -100;
    }
}

Batch EpochBatches::operator[](size_t i) const {
    if (!made_.empty()) return made_[i];
    Batch b;
    const std::int64_t first = static_cast<std::int64_t>(i) * batch_;
    b.rows = std::min<std::int64_t>(batch_, rows_ - first);
    b.cols = seq_;
    if (padding_ == Padding::Dynamic) {
        // The batch's longest row, by the rule the planner's peak_batch uses (data_lengths.hpp).
        const Batching rule = batching();
        std::int64_t longest = 1;
        for (std::int64_t k = 0; k < b.rows; ++k)
            longest = std::max(longest, row_tokens(static_cast<std::int64_t>((*examples_)[order_[static_cast<size_t>(first + k)]].ids.size()), rule));
        b.cols = longest;
    }
    b.input.resize(static_cast<size_t>(b.rows * b.cols));
    b.labels.resize(static_cast<size_t>(b.rows * b.cols));
    for (std::int64_t k = 0; k < b.rows; ++k)
        fill_row(first + k, b.cols, b.input.data() + k * b.cols, b.labels.data() + k * b.cols);
    for (auto l : b.labels) b.target_tokens += l != -100;
    return b;
}

std::int64_t EpochBatches::held_bytes() const {
    size_t made = 0;
    for (const Batch& b : made_) made += (b.input.capacity() + b.labels.capacity()) * sizeof(std::int64_t);
    return static_cast<std::int64_t>(made + order_.capacity() * sizeof(std::uint32_t) +
                                     starts_.capacity() * sizeof(std::int64_t));
}

std::filesystem::path default_sample_data(const std::filesystem::path& executable, const char* name) {
    namespace fs = std::filesystem;
    const bool chat = std::string(name) == "chat.jsonl";
    if (const char* env = std::getenv("WINGSPAN_SAMPLE_DATA"); chat && env && *env) return env;
    std::vector<fs::path> candidates;
    for (const fs::path& dir : bundled_data_dirs(executable, "sample-data", "resources/sample-data"))
        candidates.push_back(dir / name);
    for (const auto& c : candidates) {
        std::error_code ec;
        if (fs::exists(c, ec)) return fs::weakly_canonical(c, ec);
    }
    return candidates.empty() ? fs::path(name) : candidates.front();
}

}  // namespace wingspan::train
