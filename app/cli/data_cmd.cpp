#include "data_cmd.hpp"

#include <algorithm>
#include <ostream>

#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"
#include "wingspan/units.hpp"

namespace wingspan::cli {


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
        it = summaries_.emplace(framework_id, summarize_for_framework(lengths->lengths, asked, framework_id, padding, epochs)).first;
    return it->second;
}

namespace {

TrainingSetup at_peak_of(TrainingSetup s, const DataSummary& d) {
    if (s.dataset_tokens == 0) {   // --examples/--tokens-per-example not given: the real data set
        s.dataset_tokens = d.tokens_total;
        s.dataset_examples = d.examples;
    }
    return at_peak_batch(s, d.peak);
}

}  // namespace

TrainingSetup PlanData::at_peak(TrainingSetup s, const std::string& framework_id) const {
    if (!lengths || !s.trains()) return s;
    return at_peak_of(s, summary(framework_id));
}

DataSummary PlanData::summary_for(const TrainingSetup& s, const std::string& framework_id) const {
    return summarize_for_framework(lengths->lengths, s, framework_id, padding, epochs);
}

TrainingSetup PlanData::at_peak_for(TrainingSetup s, const std::string& framework_id) const {
    if (!lengths || !s.trains()) return s;
    return at_peak_of(s, summary_for(s, framework_id));
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

// --data FILE|FOLDER read with the model's tokenizer (--model-dir, or --hf in the cache).
PlanData plan_data_from_flags(const PlanFlags& o, const TrainingSetup& asked, std::ostream& err) {
    PlanData d;
    d.asked = asked;
    d.epochs = o.integer("--epochs", 1);
    if (auto p = o.get("--padding")) d.padding = parse_padding(*p);
    auto file = o.get("--data");
    if (!file) {
        if (d.padding) throw InputError("--padding shapes the batches of --data FILE; give the data set too");
        return d;
    }
    const auto folder = train::tokenizer_folder(o.get("--model-dir"), o.get("--hf"), o.get("--revision").value_or("main"));
    d.lengths = train::read_data_lengths(*file, folder, err);
    return d;
}

}  // namespace wingspan::cli
