// From a plan to a recipe: resolves what the templates need that a plan does not say (where
// the framework loads the model from, the data, the prediction with the framework's profile).
#include <fstream>

#include "wingspan/errors.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/recipe.hpp"

namespace fs = std::filesystem;

namespace wingspan::recipe {

namespace {

constexpr const char* kPlaceholderRepo = "REPLACE-WITH/your-model";

std::string repo_for(const ProfileLibrary& lib, const Request& r) {
    if (!r.model_repo.empty()) return r.model_repo;
    for (const auto& m : lib.models())
        if (m.id == r.model_id && !m.hf_repo.empty()) return m.hf_repo;
    return kPlaceholderRepo;
}

std::int64_t count_lines(const fs::path& file) {
    std::ifstream in(file);
    std::int64_t n = 0;
    for (std::string line; std::getline(in, line);)
        if (line.find_first_not_of(" \t\r") != std::string::npos) ++n;
    return n;
}

// What one line of the data holds for an objective (the layouts TRL's trainers read).
std::string data_layout(Objective o) {
    switch (o) {
        case Objective::Sft: return "{\"messages\": [...]}";
        case Objective::Kto: return "{\"prompt\", \"completion\", \"label\"}";
        case Objective::Grpo: return "{\"prompt\", ...}";
        default: return "{\"prompt\", \"chosen\", \"rejected\"} (or chat-format chosen/rejected pairs)";
    }
}

}  // namespace

Recipe make(const fs::path& dir, const ProfileLibrary& lib, const Request& r) {
    const FrameworkInfo fw = framework(dir, r.framework);
    r.setup.validate(r.arch);
    const TrainingOptions& t = r.training;
    if (t.epochs < 1) throw InputError("epochs must be at least 1");
    if (!(t.learning_rate >= 0)) throw InputError("the learning rate must be positive");
    if (t.schedule != "cosine" && t.schedule != "linear" && t.schedule != "constant")
        throw InputError("the schedule must be cosine, linear or constant (got '" + t.schedule + "')");

    RecipeInput in;
    in.model_repo = repo_for(lib, r);
    in.model_label = r.model_name.empty() ? r.model_id : r.model_name;
    in.model_type = r.arch.to_hf_config().value("model_type", "");
    in.num_layers = r.arch.layers;
    in.tied_embeddings = r.arch.tied_embeddings;
    in.setup = r.setup;
    const FrameworkProfile& profile = profile_for(lib, fw);
    if (in.setup.precision_auto) {
        // Precision auto: the framework's default where it has one (as `wingspan recipe` plans it),
        // else bf16-mixed, a GPU's with bf16 (the notes switch machines without it to fp16).
        ChosenFields keep;
        keep.quantization = keep.grad_checkpointing = keep.lora_layers = true;
        in.setup = apply_framework_defaults(in.setup, profile, keep);
        in.setup.precision_auto = false;
    }
    in.training = r.training;
    in.notes = r.notes;
    in.predicted = prediction_json(r.model_id, in.model_label, r.family, r.arch, in.setup, profile);
    in.predicted["recipe"] = fw.id;   // `wingspan watch` names the run after it

    fs::path sample;
    if (r.data_path.empty()) {
        sample = sample_data_file(dir, fw.id, r.setup.objective.kind);
        if (sample.empty()) throw InputError("no data given and the bundled sample data was not found; pass --data FILE.jsonl");
        in.data_path = kSampleDataPath;
    } else {
        std::error_code ec;
        if (!fs::is_regular_file(r.data_path, ec))
            throw InputError("the data file '" + r.data_path + "' does not exist (a JSONL file, one " + data_layout(r.setup.objective.kind) +
                             " per line)");
        in.data_path = fs::absolute(r.data_path).lexically_normal().string();
        in.examples = count_lines(in.data_path);
    }
    if (!sample.empty()) in.examples = count_lines(sample);
    if (in.examples <= 0) in.examples = r.examples;

    if (in.model_repo == kPlaceholderRepo)
        in.notes.push_back("Wingspan knows no Hugging Face id for " + in.model_label + ": replace " + kPlaceholderRepo +
                           " in the recipe with it.");
    Recipe recipe = render(dir, r.framework, in);
    if (!sample.empty()) add_sample_data(recipe, sample);
    return recipe;
}

}  // namespace wingspan::recipe
