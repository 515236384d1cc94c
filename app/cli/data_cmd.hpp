#pragma once
// `wingspan plan --data FILE|FOLDER [--padding dynamic|packed|max]`: the data set read with the
// model's own tokenizer and chat template (the trainer's reader, tokenizer/examples.hpp), kept as
// one token length per example, and summarised per framework (core's data_lengths.hpp).
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "wingspan/data_lengths.hpp"
#include "wingspan/setup.hpp"

namespace wingspan::cli {

struct DataLengths {
    std::vector<std::int64_t> lengths;   // tokens of each kept example, in file order (8 B each)
    std::int64_t lines = 0;              // lines read, blank ones included
    std::int64_t skipped = 0;            // rows of fewer than 2 tokens (the trainer skips them too)
    std::string formats;                 // "messages: 300, text: 2"
    std::string chat_format;             // the template the rows were rendered with
    std::vector<std::filesystem::path> files;
};

// The folder holding the model's tokenizer.json: --model-dir, else --hf's snapshot in the Hugging
// Face cache. Throws InputError saying how to give one when there is none here.
std::filesystem::path tokenizer_folder(const std::optional<std::string>& model_dir, const std::optional<std::string>& hf_repo,
                                       const std::string& revision);

// Reads a JSONL file, or every *.jsonl/*.json file of a folder (sorted by name), through the
// model's tokenizer and chat template. Progress goes to `err` for files over 16 MB. Throws
// InputError naming the file and line for anything malformed (bad JSON, invalid UTF-8, a line over
// 16 MiB, an empty data set, a pipe or device instead of a file).
DataLengths read_data_lengths(const std::filesystem::path& data, const std::filesystem::path& model_folder,
                              std::ostream& err);

// The batches `framework_id` forms of these lengths under `setup` (its --seq, micro batch and
// devices), with `padding` or the framework's default, over `epochs` epochs. wingspan-train's
// own order is replayed (seed 42, 5 % held out: its defaults); other frameworks shuffle at random,
// so their peak is the worst case.
DataSummary summarize_for(const DataLengths& d, const TrainingSetup& setup, const std::string& framework_id,
                          const std::optional<Padding>& padding, std::int64_t epochs);

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
    // Tokens the run computes on (its epochs'), or `fallback` without --data.
    double tokens(const std::string& framework_id, double fallback) const;
    // plan --json's `data` object.
    nlohmann::json to_json(const std::string& framework_id) const;

private:
    mutable std::map<std::string, DataSummary> summaries_;
};

}  // namespace wingspan::cli
