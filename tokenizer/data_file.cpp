#include "data_file.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>

#include "chat_format.hpp"
#include "examples.hpp"
#include "tokenizer.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/hub_download.hpp"
#include "wingspan/json_input.hpp"

namespace wingspan::train {

namespace fs = std::filesystem;

namespace {

// 8 B per example kept: 2^26 examples are 512 MiB of lengths, the most a plan holds.
constexpr std::int64_t kMaxExamples = std::int64_t{1} << 26;
constexpr std::uintmax_t kProgressFileBytes = 16u << 20;

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

// The bytes read before this file and of all files, and the caller's callback (may be empty).
struct Progress {
    const DataProgress& report;
    std::uintmax_t before = 0, total = 0, reported = 0;
    void at(std::uintmax_t done_here, std::int64_t line) {
        if (!report) return;
        const std::uintmax_t done = before + done_here;
        if (line % 256 != 0 && done - reported < (1u << 20)) return;
        reported = done;
        if (!report(done, total)) throw ReadCancelled();
    }
};

void read_file(const fs::path& file, const Tokenizer& tok, const ChatFormat& f, DataLengths& d,
               std::map<std::string, std::int64_t>& formats, std::ostream& err, Progress& reporter) {
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
    while (read_bounded_line(in, line, kMaxDataLineBytes, too_long)) {
        ++n;
        ++d.lines;
        done += line.size() + 1;
        reporter.at(done, n);
        if (too_long)
            throw InputError(file.string() + ":" + std::to_string(n) + ": the line is longer than " +
                             std::to_string(kMaxDataLineBytes) + " bytes (one example); split it or shorten it");
        Example e;
        std::string format;
        try {
            if (!example_from_line(line, tok, f, n, e, format)) continue;
        } catch (const DataError& ex) {
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
    return read_data_lengths(data, model_folder, err, DataProgress());
}

DataLengths read_data_lengths(const fs::path& data, const fs::path& model_folder, std::ostream& err,
                              const DataProgress& progress) {
    std::shared_ptr<Tokenizer> tok;
    ChatFormat format;
    try {
        tok = Tokenizer::from_file(model_folder / "tokenizer.json");
        format = chat_format_for_model(*tok, model_folder, "");
    } catch (const DataError& e) {
        throw InputError("--data: " + std::string(e.what()));
    }
    DataLengths d;
    d.chat_format = format.name();
    d.files = data_files(data);
    std::map<std::string, std::int64_t> formats;
    Progress reporter{progress};
    std::error_code ec;
    for (const auto& file : d.files) reporter.total += fs::is_regular_file(file, ec) ? fs::file_size(file, ec) : 0;
    for (const auto& file : d.files) {
        read_file(file, *tok, format, d, formats, err, reporter);
        reporter.before += fs::is_regular_file(file, ec) ? fs::file_size(file, ec) : 0;
        if (progress && !progress(reporter.before, reporter.total)) throw ReadCancelled();
    }
    if (d.lengths.empty())
        throw InputError("--data: " + data.string() + " holds no examples (" + std::to_string(d.lines) + " lines, " +
                         std::to_string(d.skipped) + " of under 2 tokens)");
    for (const auto& [k, v] : formats) d.formats += (d.formats.empty() ? "" : ", ") + k + ": " + std::to_string(v);
    return d;
}

}  // namespace wingspan::train
