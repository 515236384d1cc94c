#pragma once
// A data set file (or a folder of them) read with a model folder's own tokenizer and chat
// template through the trainer's row reader (examples.hpp), kept as one token length per example:
// what the planner needs of it (`wingspan plan --data`, the window's data dialog).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace wingspan::train {

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

// Where a reading stands (bytes of every file read so far, of their total), for a window's
// progress bar; returning false stops the reading, and read_data_lengths throws ReadCancelled.
// Called every 256 lines and every MiB, so a cancel is seen within that much work.
using DataProgress = std::function<bool(std::uintmax_t done, std::uintmax_t total)>;
struct ReadCancelled : std::runtime_error {
    ReadCancelled() : std::runtime_error("reading the data set was cancelled") {}
};
DataLengths read_data_lengths(const std::filesystem::path& data, const std::filesystem::path& model_folder,
                              std::ostream& err, const DataProgress& progress);

}  // namespace wingspan::train
