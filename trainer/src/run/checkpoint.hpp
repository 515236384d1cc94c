#pragma once
// A checkpoint folder as one unit. Its files are written one by one (each atomically), but
// the set is only valid once `wingspan-checkpoint.json` — the manifest with every file's size
// and checksum — is written last; the manifest is removed before the first file is replaced.
// A save killed half way therefore leaves no manifest, and `--resume` refuses the folder
// instead of mixing a new model with an old optimizer. trainer_state.json is read back
// with every field validated (an index from a file is never trusted).
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wingspan::train {

inline constexpr const char* kManifestFile = "wingspan-checkpoint.json";

class CheckpointManifest {
public:
    // Removes `dir`'s old manifest (the folder is incomplete from here until commit()).
    explicit CheckpointManifest(std::filesystem::path dir);
    void add(const std::string& file, std::uint64_t bytes, std::uint64_t checksum);
    // Anything with .bytes and .checksum (weights_io's FileDigest), without including torch here.
    template <typename Digest>
    void add(const std::string& file, const Digest& d) {
        add(file, d.bytes, d.checksum);
    }
    void commit();   // writes the manifest atomically; throws IoError

private:
    std::filesystem::path dir_;
    nlohmann::json files_ = nlohmann::json::object();
};

// Throws InputError when `dir` has no manifest or a file differs from it (missing, other
// size or checksum): the save that made it did not finish.
void verify_checkpoint(const std::filesystem::path& dir);

// trainer_state.json, validated: non-negative counters within their bounds, known strings,
// losses as numbers. Throws InputError naming the field.
struct TrainerState {
    std::int64_t step = 0, total_steps = 0, micro_batches = 0;
    std::string method, precision;
    std::int64_t rank = 0, seq = 0, batch = 0, grad_accum = 0;
    std::vector<double> losses;
    static TrainerState from_json(const nlohmann::json& j, const std::string& file);
};

// A fresh, exclusively created staging folder beside `target` (".<name>.tmp-XXXXXX").
std::filesystem::path make_staging_dir(const std::filesystem::path& target);
// Staging folders and temporary files a killed run left in `out` (our naming only).
int remove_stale_checkpoint_temporaries(const std::filesystem::path& out);

}  // namespace wingspan::train
