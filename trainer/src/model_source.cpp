#include "model_source.hpp"
#include <algorithm>

#include "wingspan/errors.hpp"
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

}  // namespace wingspan::train
