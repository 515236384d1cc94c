#pragma once
// `wingspan plan --data FILE|FOLDER [--padding dynamic|packed|max]`: the data set's token lengths
// (tokenizer/data_file.hpp), summarised per framework (core's data_lengths.hpp) and printed.
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "data_file.hpp"
#include "wingspan/data_lengths.hpp"
#include "wingspan/plan_flags.hpp"
#include "wingspan/setup.hpp"

namespace wingspan::cli {

using train::DataLengths;

// The human-readable lines of plan's data section (histogram with the cap and the peak marked).
void print_data_summary(const DataLengths& d, const DataSummary& s, std::int64_t cap, std::ostream& out);

// A plan's --data, summarised once per framework (each has its own padding and row rule).
struct PlanData {
    std::optional<DataLengths> lengths;     // none: no --data
    TrainingSetup asked;                    // its --seq, micro batch and devices form the batches
    std::optional<Padding> padding;         // --padding; none: each framework's default
    std::int64_t epochs = 1;

    const DataSummary& summary(const std::string& framework_id) const;
    // `s` with the peak batch's sequence (and the data set's size where the framework holds it in
    // RAM); `s` itself without --data.
    TrainingSetup at_peak(TrainingSetup s, const std::string& framework_id) const;
    // The same for a setup other than the one asked (fit's candidates: another micro batch or
    // cap forms other batches), summarised afresh; `s` itself without --data.
    TrainingSetup at_peak_for(TrainingSetup s, const std::string& framework_id) const;
    DataSummary summary_for(const TrainingSetup& s, const std::string& framework_id) const;
    // Tokens the run computes on (its epochs'), or `fallback` without --data.
    double tokens(const std::string& framework_id, double fallback) const;
    // plan --json's `data` object.
    nlohmann::json to_json(const std::string& framework_id) const;

private:
    mutable std::map<std::string, DataSummary> summaries_;
};

// --data FILE|FOLDER [--padding] [--epochs] read with the model's tokenizer (--model-dir, or --hf in
// the HF cache); without --data, the flags' setup alone (and --padding alone is an InputError).
PlanData plan_data_from_flags(const PlanFlags& flags, const TrainingSetup& asked, std::ostream& err);

}  // namespace wingspan::cli
