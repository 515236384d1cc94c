#pragma once
// Recipes: a plan written out in a training framework's own schema (a TRL/PEFT script, an
// Unsloth script, torchtune / mlx-lm / Axolotl / LLaMA-Factory configs), with a reporter that
// prints Wingspan's run protocol and the prediction beside it (predicted.json). The templates
// and each framework's key names and values are data under resources/recipes/; this file only
// fills them. Plain C++ (no Qt): the command line and the window share it.
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "architecture.hpp"
#include "profiles.hpp"
#include "setup.hpp"

namespace wingspan::recipe {

// One framework a recipe can be written for (resources/recipes/frameworks.json).
struct FrameworkInfo {
    std::string id;        // "hf-transformers"
    std::string name;      // "Hugging Face transformers + TRL + PEFT"
    std::string profile;   // the framework profile that predicts its runs while it has none of its own
};

// Where the recipe templates live: $WINGSPAN_RECIPES, then next to the executable
// (../share/wingspan/recipes, ../resources/recipes), then the source tree.
std::filesystem::path default_dir(const std::filesystem::path& executable = {});
std::vector<FrameworkInfo> frameworks(const std::filesystem::path& dir);
// Throws InputError listing the known ids.
FrameworkInfo framework(const std::filesystem::path& dir, const std::string& id);

// The frameworks whose recipes can train an objective ("dpo"): values.json's knobs.objective
// names it (SFT: those without the table too).
std::vector<std::string> frameworks_for_objective(const std::filesystem::path& dir, const std::string& objective);

// The profile that predicts a framework's runs: the library's profile named like the framework
// when there is one, else the one frameworks.json names. The one place that maps the two.
const FrameworkProfile& profile_for(const ProfileLibrary& lib, const FrameworkInfo& fw);

// The prediction written beside a recipe (predicted.json), the same fields as
// `wingspan plan --json` without the machines: components, component_maxima,
// peak_allocated_bytes, total_bytes, ..., "model", "setup", "framework".
nlohmann::json prediction_json(const std::string& model_id, const std::string& model_name,
                               const std::string& family, const Architecture& arch, const TrainingSetup& setup,
                               const FrameworkProfile& profile);

// What a recipe says that a plan does not: the optimizer's schedule, how long, where to.
struct TrainingOptions {
    double learning_rate = 0;         // 0: 2e-4 for LoRA/QLoRA, 2e-5 for a full fine-tune
    std::string schedule = "cosine";  // cosine | linear | constant
    double warmup_ratio = 0.03;
    std::int64_t epochs = 1;
    std::int64_t max_steps = 0;       // optimizer steps; 0: train for `epochs`
    std::string output_dir = "output";
    std::int64_t seed = 42;
};

// Everything a recipe says besides the plan's memory knobs.
struct RecipeInput {
    std::string model_repo;           // Hugging Face id or local folder the framework loads
    std::string model_label;          // "Llama 3.1 8B"
    std::string model_type;           // config.json's model_type ("llama", "qwen2", ...)
    std::int64_t num_layers = 0;      // decoder layers (mlx-lm's num_layers: all of them)
    bool tied_embeddings = false;     // the LM head is the embedding (an adapter on it is refused by some)
    TrainingSetup setup;
    TrainingOptions training;
    std::int64_t examples = 0;        // data set size, for step counts where a framework needs them
    std::string data_path;            // a JSONL file: chat ({"messages": [...]}) for SFT, the objective's layout else
    nlohmann::json predicted;         // prediction_json(...)
    std::vector<std::string> notes;   // said first in the README (what Wingspan could not fill in)
};

struct RecipeFile {
    std::string path;       // relative to the recipe folder
    std::string text;
    bool executable = false;
};

struct Recipe {
    FrameworkInfo framework;
    std::vector<RecipeFile> files;
    std::string command;              // what to run inside the recipe folder
    std::vector<std::string> notes;   // knobs the framework cannot express, and what it does instead
};

// Fills the framework's templates. Throws InputError when the plan cannot be written for it.
Recipe render(const std::filesystem::path& dir, const std::string& framework_id, const RecipeInput& in);
// The bundled chat sample beside the recipe templates (resources/sample-data/chat.jsonl), or
// an empty path when it is not there.
std::filesystem::path sample_data_file(const std::filesystem::path& dir);
// The bundled sample an objective trains on, in the layout the framework reads (values.json's
// "sample_data": {"dpo": "preference-chat.jsonl"}, else preference.jsonl for DPO/ORPO/SimPO,
// kto.jsonl for KTO, prompts.jsonl for GRPO, chat.jsonl for SFT); empty when it is not there.
std::filesystem::path sample_data_file(const std::filesystem::path& dir, const std::string& framework_id,
                                       Objective objective);
// Adds the sample as data/train.jsonl (and data/valid.jsonl, its last twentieth) so the recipe
// trains out of the box; returns the number of examples.
std::int64_t add_sample_data(Recipe& recipe, const std::filesystem::path& sample);
// Written into every recipe: {"framework": id, "command": [argv...]} (what Run a recipe… runs).
inline constexpr const char* kRecipeFile = "recipe.json";
// The recipe's data path when add_sample_data() supplies the data.
inline constexpr const char* kSampleDataPath = "data/train.jsonl";
// Writes every file (each to a temporary name, then renamed) into `out`, creating it.
void write(const Recipe& recipe, const std::filesystem::path& out);

// {{name}} substitutes; {{py:name}}, {{yaml:name}}, {{json:name}}, {{sh:name}} and {{line:name}}
// substitute the value quoted for that language (quoting.hpp); {{#name}}...{{/name}} keeps its
// text when name is set and not "false"/"False" and {{^name}}...{{/name}} when it is not.
// Names in `quoted_only` (free text: file names, model names) are refused bare. Throws
// InputError naming an unknown variable or quoting.
std::string render_template(const std::string& text, const std::map<std::string, std::string>& vars,
                            const std::set<std::string>& quoted_only = {});

// What the command line and the window ask for; make() does the rest (the model's Hugging Face
// id, the prediction with the framework's profile, the sample data when no data is given).
struct Request {
    std::string framework;                  // "hf-transformers", ...
    std::string model_id, model_name, family;
    Architecture arch;
    TrainingSetup setup;
    std::string model_repo;                 // empty: the bundled profile's hf_repo
    std::string data_path;                  // empty: the bundled sample, copied into the recipe
    TrainingOptions training;
    std::int64_t examples = 1000;           // used when the data cannot be counted
    std::vector<std::string> notes;         // said first in the README (the machine's, for one)
};
Recipe make(const std::filesystem::path& dir, const ProfileLibrary& lib, const Request& request);

}  // namespace wingspan::recipe
