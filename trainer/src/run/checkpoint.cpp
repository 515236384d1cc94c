#include "run/checkpoint.hpp"

#include <cstdlib>
#include <regex>
#include <vector>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/safe_file.hpp"

namespace wingspan::train {

namespace fs = std::filesystem;
using nlohmann::json;

CheckpointManifest::CheckpointManifest(fs::path dir) : dir_(std::move(dir)) {
    std::error_code ec;
    fs::remove(dir_ / kManifestFile, ec);
}

void CheckpointManifest::add(const std::string& file, std::uint64_t bytes, std::uint64_t checksum) {
    files_[file] = {{"bytes", bytes}, {"fnv1a64", checksum}};
}

void CheckpointManifest::commit() {
    const json m = {{"format", "wingspan-checkpoint"}, {"version", 1}, {"files", files_}};
    write_file_atomically(dir_ / kManifestFile, m.dump(2) + "\n");
}

void verify_checkpoint(const fs::path& dir) {
    const fs::path mf = dir / kManifestFile;
    if (!fs::exists(mf))
        throw InputError(dir.string() + " is not a complete checkpoint: " + kManifestFile +
                         " is missing (the save that wrote it was interrupted, or it was not made by "
                         "wingspan-train)");
    const json m = read_untrusted_json_file(mf);
    if (!m.is_object() || !m.contains("files") || !m["files"].is_object())
        throw InputError(mf.string() + ": no \"files\" object");
    for (const auto& [name, entry] : m["files"].items()) {
        const fs::path p = fs::path(name);
        if (p.is_absolute() || p.filename() != p || name == "." || name == "..")
            throw InputError(mf.string() + ": file name \"" + name + "\" is not a plain name in the folder");
        if (!entry.is_object() || !entry.contains("bytes") || !entry["bytes"].is_number_unsigned() ||
            !entry.contains("fnv1a64") || !entry["fnv1a64"].is_number_unsigned())
            throw InputError(mf.string() + ": entry \"" + name + "\" needs unsigned \"bytes\" and \"fnv1a64\"");
        const fs::path f = dir / p;
        require_regular_file(f);
        std::error_code ec;
        const auto size = fs::file_size(f, ec);
        if (ec) throw InputError("checkpoint " + dir.string() + ": " + name + " is missing");
        if (size != entry["bytes"].get<std::uint64_t>() || file_checksum(f) != entry["fnv1a64"].get<std::uint64_t>())
            throw InputError("checkpoint " + dir.string() + ": " + name +
                             " differs from the manifest (another save changed it, or it is damaged)");
    }
}

namespace {

std::int64_t need_count(const json& j, const char* field, const std::string& file, std::int64_t max_value) {
    auto it = j.find(field);
    if (it == j.end() || !it->is_number_integer())
        throw InputError(file + ": \"" + field + "\" must be an integer");
    const std::int64_t v = it->get<std::int64_t>();
    if (v < 0 || v > max_value)
        throw InputError(file + ": \"" + field + "\" is " + std::to_string(v) + ", outside 0.." +
                         std::to_string(max_value));
    return v;
}

std::string need_string(const json& j, const char* field, const std::string& file) {
    auto it = j.find(field);
    if (it == j.end() || !it->is_string()) throw InputError(file + ": \"" + field + "\" must be a string");
    return it->get<std::string>();
}

}  // namespace

TrainerState TrainerState::from_json(const json& j, const std::string& file) {
    if (!j.is_object()) throw InputError(file + ": expected a JSON object");
    constexpr std::int64_t kMaxCount = std::int64_t(1) << 40;
    TrainerState s;
    s.step = need_count(j, "step", file, kMaxCount);
    s.total_steps = need_count(j, "total_steps", file, kMaxCount);
    s.grad_accum = need_count(j, "grad_accum", file, kMaxCount);
    s.micro_batches = need_count(j, "micro_batches", file, kMaxCount);
    // Each optimizer step consumed grad_accum micro-batches: any other count is not ours.
    if (s.micro_batches != s.step * s.grad_accum)
        throw InputError(file + ": \"micro_batches\" " + std::to_string(s.micro_batches) + " does not match step " +
                         std::to_string(s.step) + " × grad_accum " + std::to_string(s.grad_accum));
    s.method = need_string(j, "method", file);
    s.precision = need_string(j, "precision", file);
    s.rank = need_count(j, "rank", file, kMaxCount);
    s.seq = need_count(j, "seq", file, kMaxCount);
    s.batch = need_count(j, "batch", file, kMaxCount);
    if (auto it = j.find("losses"); it != j.end()) {
        if (!it->is_array()) throw InputError(file + ": \"losses\" must be an array of numbers");
        for (const auto& l : *it) {
            if (!l.is_number()) throw InputError(file + ": \"losses\" must be an array of numbers");
            s.losses.push_back(l.get<double>());
        }
    }
    return s;
}

fs::path make_staging_dir(const fs::path& target) {
    std::string pattern = (target.parent_path() / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw IoError("cannot create a folder beside " + target.string());
    return fs::path(buf.data());
}

int remove_stale_checkpoint_temporaries(const fs::path& out) {
    static const std::regex kStaging(R"(\..+\.tmp-[A-Za-z0-9]{6})");
    int removed = remove_stale_temporaries(out);
    std::error_code ec;
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(out, ec)) {
        if (e.is_symlink(ec) || !e.is_directory(ec)) continue;
        if (std::regex_match(e.path().filename().string(), kStaging)) dirs.push_back(e.path());
        else removed += remove_stale_temporaries(e.path());   // inside checkpoint-N folders
    }
    for (const auto& d : dirs)
        if (fs::remove_all(d, ec) > 0) ++removed;
    return removed;
}

}  // namespace wingspan::train
