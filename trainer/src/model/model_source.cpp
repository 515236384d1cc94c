#include "model/model_source.hpp"

#include <fstream>
#include <algorithm>

#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/hub_download.hpp"

namespace wingspan::train {

std::filesystem::path resolve_model_argument(const std::string& text) {
    std::error_code ec;
    if (std::filesystem::exists(text, ec)) return text;
    std::string repo = text, revision = "main";
    if (auto at = text.find('@'); at != std::string::npos) {
        repo = text.substr(0, at);
        revision = text.substr(at + 1);
    }
    const bool looks_like_id = std::count(repo.begin(), repo.end(), '/') == 1 && repo.front() != '/' &&
                               repo.front() != '.' && !revision.empty();
    if (!looks_like_id) throw InputError("--model: " + text + " does not exist");
    if (auto snap = hub::find_cached_snapshot(repo, revision)) return *snap;
    throw InputError("--model: " + text + " is not a folder, and " + repo + " (revision " + revision +
                     ") is not in the Hugging Face cache (" + hub::default_hf_hub_cache().string() +
                     "). Download it first: wingspan download " + repo +
                     (revision == "main" ? std::string() : " --revision " + revision));
}

std::filesystem::path adapter_dir_of(const std::filesystem::path& run) {
    for (const std::filesystem::path& d : {run, run / "final", run / "adapter"})
        if (std::filesystem::exists(d / "adapter_config.json") && std::filesystem::exists(d / "adapter_model.safetensors"))
            return d;
    throw InputError("--adapter: " + run.string() +
                     " has no adapter_config.json and adapter_model.safetensors (a LoRA or QLoRA run's output folder)");
}

nlohmann::json read_json_object(const std::filesystem::path& file) {
    nlohmann::json j = read_untrusted_json_file(file);   // a regular file, bounded depth
    if (!j.is_object()) throw InputError(file.string() + " is not a JSON object");
    return j;
}

}  // namespace wingspan::train
