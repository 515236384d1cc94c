#include "data_cmd.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>

#include <nlohmann/json.hpp>

#include "chat_format.hpp"
#include "examples.hpp"
#include "tokenizer.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/hub_download.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/units.hpp"

namespace wingspan::cli {

namespace fs = std::filesystem;

namespace {

// 8 B per example kept: 2^26 examples are 512 MiB of lengths, the most a plan holds.
constexpr std::int64_t kMaxExamples = std::int64_t{1} << 26;
constexpr std::uintmax_t kProgressFileBytes = 16u << 20;

// wingspan-train's defaults (trainer/src/args.hpp): the planner replays its order with them.
constexpr std::uint64_t kTrainerSeed = 42;
constexpr double kTrainerEvalFraction = 0.05;

std::vector<fs::path> data_files(const fs::path& data) {
    std::error_code ec;
    if (!fs::is_directory(data, ec)) return {data};
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(data, ec)) {
        const std::string ext = entry.path().extension().string();
        if ((ext == ".jsonl" || ext == ".json") && entry.is_regular_file(ec)) files.push_back(entry.path());
    }
    if (ec) throw InputError("--data: cannot list " + data.string() + ": " + ec.message());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError("--data: the folder " + data.string() + " holds no .jsonl or .json file");
    return files;
}

void read_file(const fs::path& file, const train::Tokenizer& tok, const train::ChatFormat& f, DataLengths& d,
               std::map<std::string, std::int64_t>& formats, std::ostream& err) {
    require_regular_file(file);   // a named pipe would block here forever
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError("--data: cannot read " + file.string());
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(file, ec);
    const bool progress = !ec && size > kProgressFileBytes;
    int shown = 0;
    std::string line;
    bool too_long = false;
    std::int64_t n = 0;
    std::uintmax_t done = 0;
    while (train::read_bounded_line(in, line, train::kMaxDataLineBytes, too_long)) {
        ++n;
        ++d.lines;
        done += line.size() + 1;
        if (too_long)
            throw InputError(file.string() + ":" + std::to_string(n) + ": the line is longer than " +
                             std::to_string(train::kMaxDataLineBytes) + " bytes (one example); split it or shorten it");
        train::Example e;
        std::string format;
        try {
            if (!train::example_from_line(line, tok, f, n, e, format)) continue;
        } catch (const train::DataError& ex) {
            throw InputError(file.string() + ":" + std::to_string(n) + ": " + ex.what());
        }
        formats[format]++;
        if (e.ids.size() < 2) {   // nothing to predict: wingspan-train skips it too
            ++d.skipped;
            continue;
        }
        if (static_cast<std::int64_t>(d.lengths.size()) >= kMaxExamples)
            throw InputError("--data: more than " + std::to_string(kMaxExamples) + " examples by " + file.string() + ":" +
                             std::to_string(n) + "; plan from a part of the data set");
        d.lengths.push_back(static_cast<std::int64_t>(e.ids.size()));
        if (progress && done * 10 / size > static_cast<std::uintmax_t>(shown)) {
            shown = static_cast<int>(done * 10 / size);
            err << "wingspan: reading " << file.filename().string() << ": " << shown * 10 << " % (" << d.lengths.size()
                << " examples)\n"
                << std::flush;
        }
    }
}

}  // namespace

fs::path tokenizer_folder(const std::optional<std::string>& model_dir, const std::optional<std::string>& hf_repo,
                          const std::string& revision) {
    fs::path folder;
    if (model_dir) {
        folder = *model_dir;
    } else if (hf_repo) {
        auto snapshot = hub::find_cached_snapshot(*hf_repo, revision);
        if (!snapshot)
            throw InputError("--data needs " + *hf_repo + "'s tokenizer, which is not in the Hugging Face cache; "
                             "fetch it with `wingspan download " + *hf_repo + "`, or give --model-dir DIR");
        folder = *snapshot;
    } else {
        throw InputError("--data counts tokens with the model's own tokenizer and chat template: give the model as "
                         "--model-dir DIR (a folder with tokenizer.json) or --hf OWNER/NAME (downloaded with "
                         "`wingspan download OWNER/NAME`); a bundled --model profile has no tokenizer");
    }
    std::error_code ec;
    if (!fs::is_regular_file(folder / "tokenizer.json", ec))
        throw InputError("--data: the model folder " + folder.string() +
                         " has no tokenizer.json, so its tokens cannot be counted here");
    return folder;
}

DataLengths read_data_lengths(const fs::path& data, const fs::path& model_folder, std::ostream& err) {
    std::shared_ptr<train::Tokenizer> tok;
    train::ChatFormat format;
    try {
        tok = train::Tokenizer::from_file(model_folder / "tokenizer.json");
        format = train::chat_format_for_model(*tok, model_folder, "");
    } catch (const train::DataError& e) {
        throw InputError("--data: " + std::string(e.what()));
    }
    DataLengths d;
    d.chat_format = format.name();
    d.files = data_files(data);
    std::map<std::string, std::int64_t> formats;
    for (const auto& file : d.files) read_file(file, *tok, format, d, formats, err);
    if (d.lengths.empty())
        throw InputError("--data: " + data.string() + " holds no examples (" + std::to_string(d.lines) + " lines, " +
                         std::to_string(d.skipped) + " of under 2 tokens)");
    for (const auto& [k, v] : formats) d.formats += (d.formats.empty() ? "" : ", ") + k + ": " + std::to_string(v);
    return d;
}

DataSummary summarize_for(const DataLengths& d, const TrainingSetup& setup, const std::string& framework_id,
                          const std::optional<Padding>& padding, std::int64_t epochs) {
    Batching b;
    b.cap = setup.seq_len;
    b.micro_batch = setup.micro_batch;
    b.devices = setup.devices;
    b.padding = padding.value_or(default_padding(framework_id));
    b.multiple = padding_multiple(framework_id);
    b.last_token_only_label = is_native_trainer(framework_id);
    if (!is_native_trainer(framework_id)) return summarize_lengths(d.lengths, b);
    // wingspan-train holds out 5 % for evaluation and shuffles the rest by its seed: the same
    // functions pick the same examples and the same order here.
    const std::vector<bool> held = held_out_items(d.lengths.size(), kTrainerEvalFraction, kTrainerSeed);
    std::vector<std::int64_t> train;
    for (size_t i = 0; i < d.lengths.size(); ++i)
        if (!held[i]) train.push_back(d.lengths[i]);
    const std::int64_t rows = b.micro_batch * std::max<std::int64_t>(1, b.devices);
    const std::int64_t per_epoch = static_cast<std::int64_t>(train.size()) / rows;
    b.order = Batching::Order{kTrainerSeed, per_epoch * std::max<std::int64_t>(1, epochs)};
    DataSummary s = summarize_lengths(train, b);
    // The data set is all of it; only the batches come from the training part.
    const DataSummary all = summarize_lengths(d.lengths, Batching{b.cap, b.micro_batch, b.devices, Padding::Max, 1,
                                                                   b.last_token_only_label, std::nullopt});
    s.examples = all.examples;
    s.tokens_total = all.tokens_total;
    s.truncated_examples = b.padding == Padding::Packed ? 0 : all.truncated_examples;
    s.longest = all.longest;
    s.shortest = all.shortest;
    s.histogram = all.histogram;
    return s;
}

void print_data_summary(const DataLengths& d, const DataSummary& s, std::int64_t cap, std::ostream& out) {
    out << "Data: " << s.examples << " examples (" << d.formats << ", chat format " << d.chat_format << "), "
        << s.tokens_total << " tokens; longest " << s.longest << ", shortest " << s.shortest << " tokens";
    if (d.skipped > 0) out << "; " << d.skipped << " rows of under 2 tokens skipped";
    out << "\n";
    std::int64_t most = 1;
    for (const auto& bin : s.histogram) most = std::max(most, bin.count);
    for (const auto& bin : s.histogram) {
        const auto bar = static_cast<size_t>((bin.count * 40 + most - 1) / most);
        std::string marks;
        if (bin.from <= cap && cap < bin.to) marks += "  ← cap --seq " + std::to_string(cap);
        if (bin.from <= s.peak.cols && s.peak.cols < bin.to) marks += "  ← peak batch's rows";
        char label[64];
        std::snprintf(label, sizeof label, "  %7lld–%-7lld tokens %8lld ", static_cast<long long>(bin.from),
                      static_cast<long long>(bin.to - 1), static_cast<long long>(bin.count));
        out << label << std::string(bar, '#') << marks << "\n";
    }
    if (!s.histogram.empty() && cap >= s.histogram.back().to)
        out << "  ← cap --seq " << cap << " lies above the longest example\n";
    out << "Padding " << to_string(s.padding) << ": " << s.truncated_examples << " examples longer than the cap ("
        << cap << " tokens) are cut; the peak batch is " << s.peak.rows << " × " << s.peak.cols << " = "
        << s.peak.tokens() << " tokens";
    if (s.peak.worst_case) out << " (the order is random: the longest examples in one batch, the worst case)";
    else if (s.peak.epoch >= 0)
        out << " (epoch " << s.peak.epoch + 1 << ", micro-batch " << s.peak.index + 1 << " in the trainer's order)";
    out << "; memory is planned at it, time from " << s.tokens_per_epoch << " tokens per epoch\n";
}

const DataSummary& PlanData::summary(const std::string& framework_id) const {
    auto it = summaries_.find(framework_id);
    if (it == summaries_.end())
        it = summaries_.emplace(framework_id, summarize_for(*lengths, asked, framework_id, padding, epochs)).first;
    return it->second;
}

TrainingSetup PlanData::at_peak(TrainingSetup s, const std::string& framework_id) const {
    if (!lengths || !s.trains()) return s;
    const DataSummary& d = summary(framework_id);
    if (s.dataset_tokens == 0) {   // --examples/--tokens-per-example not given: the real data set
        s.dataset_tokens = d.tokens_total;
        s.dataset_examples = d.examples;
    }
    return at_peak_batch(s, d.peak);
}

double PlanData::tokens(const std::string& framework_id, double fallback) const {
    if (!lengths) return fallback;
    return double(summary(framework_id).tokens_per_epoch) * double(std::max<std::int64_t>(1, epochs));
}

nlohmann::json PlanData::to_json(const std::string& framework_id) const {
    nlohmann::json j = summary(framework_id).to_json();
    j["formats"] = lengths->formats;
    j["chat_format"] = lengths->chat_format;
    j["skipped_rows"] = lengths->skipped;
    j["lines"] = lengths->lines;
    j["framework_default_padding"] = to_string(default_padding(framework_id));
    nlohmann::json files = nlohmann::json::array();
    for (const auto& f : lengths->files) files.push_back(f.string());
    j["files"] = files;
    return j;
}

}  // namespace wingspan::cli
