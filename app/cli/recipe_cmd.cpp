// `wingspan recipe`: a plan written out for a training framework (core/src/recipe*.cpp fills
// the templates in resources/recipes/). The plan flags are `wingspan plan`'s own: this command
// resolves them with the same PlanReport (plan_cmd.hpp), so both accept exactly the same plans.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdlib.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "plan_cmd.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/quoting.hpp"
#include "wingspan/recipe.hpp"
#include "wingspan/units.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan::cli {

namespace {

constexpr const char* kRecipeUsage = R"(usage: wingspan recipe --framework ID --out DIR [plan flags | --plan FILE] [options]

Writes the plan as a recipe for a training framework, in that framework's own keys, with a
memory reporter that speaks Wingspan's run protocol and the prediction (predicted.json):
  --framework hf-transformers|unsloth|torchtune|mlx-lm|axolotl|llama-factory
  --out DIR            the recipe folder (created; files in it are replaced)
  --plan FILE          a plan saved by the window (.wingspan.json) or a predicted.json;
                       plan flags given too override its values
  plan flags           as for `wingspan plan`: --model, --hf, --method, --seq, --batch, ...
  --data FILE.jsonl    chat data, one {"messages": [...]} per line (default: the bundled sample,
                       copied into DIR/data)
  --lr X  --schedule cosine|linear|constant  --warmup-ratio X  --max-steps N  --seed N
  --output-dir DIR     where the framework writes its checkpoints (default: output)
Then: cd DIR && wingspan watch --plan predicted.json -- <the command it prints>
)";

const std::map<std::string, std::string> kOwnValueOptions = {
    {"--framework", ""}, {"--out", ""},       {"--plan", ""},         {"--data", ""},   {"--lr", ""},
    {"--schedule", ""},  {"--warmup-ratio", ""}, {"--max-steps", ""}, {"--seed", ""}, {"--output-dir", ""}};

double to_number(const std::string& flag, const std::string& v) {
    size_t used = 0;
    double x = 0;
    try {
        x = std::stod(v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != v.size() || !std::isfinite(x)) throw InputError(flag + " expects a number, got '" + v + "'");
    return x;
}

// A whole number in [min, 2^53]: every such count is exact in a double, so nothing wraps or
// rounds (1e19 would wrap an int64 to a negative seed or step count).
std::int64_t to_count(const std::string& flag, const std::string& v, std::int64_t min) {
    constexpr double kMax = 9007199254740992.0;   // 2^53
    const double x = to_number(flag, v);
    if (x != std::floor(x) || x < double(min) || x > kMax)
        throw InputError(flag + " expects a whole number from " + std::to_string(min) + " to 9007199254740992, got '" + v + "'");
    return std::int64_t(x);
}

// A private folder in the temporary directory (mkdtemp: a fresh name no one else can have made
// first), removed with everything in it however the command ends.
class ScratchFolder {
public:
    ScratchFolder() {
        std::string pattern = (fs::temp_directory_path() / "wingspan-recipe-XXXXXX").string();
        if (!::mkdtemp(pattern.data())) throw IoError("cannot create a temporary folder in " + fs::temp_directory_path().string());
        path_ = pattern;
    }
    ~ScratchFolder() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    ScratchFolder(const ScratchFolder&) = delete;
    ScratchFolder& operator=(const ScratchFolder&) = delete;
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

// A saved plan as `wingspan plan` flags (the window's .wingspan.json, or a recipe's predicted.json).
std::vector<std::string> plan_file_flags(const std::string& path, const ProfileLibrary& lib, const fs::path& scratch) {
    const json j = read_untrusted_json_file(path);   // regular file, bounded size and depth
    if (!j.is_object()) throw InputError("'" + path + "' is not a JSON plan");
    const json model = j.value("model", json::object());
    std::vector<std::string> f;
    const std::string id = model.value("id", "");
    bool bundled = false;
    for (const auto& m : lib.models()) bundled = bundled || m.id == id;
    if (bundled && !model.contains("params")) {
        f = {"--model", id};
    } else if (model.contains("params") && model.contains("family")) {
        f = {"--size", std::to_string(model["params"].get<std::int64_t>()), "--family", model["family"].get<std::string>()};
    } else if (model.contains("config") && model["config"].is_object()) {
        const fs::path cfg = scratch / "config.json";
        write_file_atomically(cfg, model["config"].dump() + "\n");
        f = {"--config", cfg.string()};
    } else {
        throw InputError(path + ": the plan names no model (model.id, model.family + params, or model.config)");
    }
    const TrainingSetup s = TrainingSetup::from_json(j.value("setup", json::object()));
    auto add = [&](const char* flag, const std::string& v) { f.insert(f.end(), {flag, v}); };
    add("--method", to_string(s.method));
    add("--precision", s.precision_auto ? "auto" : to_string(s.precision));
    add("--optimizer", to_string(s.optimizer));
    add("--attention", to_string(s.attention));
    add("--seq", std::to_string(s.seq_len));
    add("--batch", std::to_string(s.micro_batch));
    add("--grad-accum", std::to_string(s.grad_accum));
    add("--grad-checkpointing", s.grad_checkpointing ? "on" : "off");
    add("--loss-chunk", std::to_string(s.loss_chunk_tokens));
    add("--rank", std::to_string(s.lora_rank));
    std::ostringstream alpha, dropout;
    alpha << s.lora_alpha;
    dropout << s.lora_dropout;
    add("--alpha", alpha.str());
    add("--dropout", dropout.str());
    add("--targets", targets_to_string(s.lora_targets));
    if (s.method != Method::Full && s.effective_quantization() != Quantization::None)
        add("--quant", to_string(s.effective_quantization()));
    add("--devices", std::to_string(s.devices));
    if (s.sharding != Sharding::None) add("--sharding", to_string(s.sharding));
    if (s.offload) f.push_back("--offload");
    if (s.train_embeddings) f.push_back("--train-embeddings");
    if (auto d = j.find("dataset"); d != j.end() && d->is_object())
        for (const auto& [key, flag] : {std::pair{"examples", "--examples"}, {"epochs", "--epochs"},
                                        {"tokens_per_example", "--tokens-per-example"}})
            if (d->contains(key)) add(flag, std::to_string((*d)[key].get<std::int64_t>()));
    return f;
}

std::optional<std::string> last_value(const std::vector<std::string>& flags, const std::string& name) {
    std::optional<std::string> v;
    for (size_t i = 0; i + 1 < flags.size(); ++i)
        if (flags[i] == name) v = flags[i + 1];
    return v;
}

}  // namespace

int run_recipe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
               const std::string& executable) {
    std::map<std::string, std::string> own;
    std::vector<std::string> plan_flags;
    for (size_t i = 1; i < args.size(); ++i) {
        if (args[i] == "--help" || args[i] == "-h") {
            out << kRecipeUsage;
            return kExitOk;
        }
        if (kOwnValueOptions.count(args[i])) {
            if (i + 1 >= args.size()) throw InputError("option " + args[i] + " needs a value");
            own[args[i]] = args[i + 1];
            ++i;
        } else {
            plan_flags.push_back(args[i]);
        }
    }
    if (!own.count("--framework")) throw InputError("recipe needs --framework ID (see `wingspan recipe --help`)");
    if (!own.count("--out")) throw InputError("recipe needs --out DIR, the folder to write the recipe to");

    const fs::path recipes = recipe::default_dir(executable);
    const recipe::FrameworkInfo fw = recipe::framework(recipes, own["--framework"]);   // unknown: fails before any work
    const std::string profiles_dir =
        last_value(plan_flags, "--profiles").value_or(ProfileLibrary::default_dir(executable).string());
    ProfileLibrary lib = ProfileLibrary::load(profiles_dir);
    MachineProfile here = detect_this_machine();   // --machine ID may name it, as in `wingspan plan`
    const std::string this_machine = here.id;
    lib.add_machine(std::move(here));
    lib.load_user_profiles(ProfileLibrary::user_dir());

    std::optional<ScratchFolder> scratch;   // only a plan file's config needs one
    std::vector<std::string> plan_args;
    if (own.count("--plan")) {
        scratch.emplace();
        const auto from_file = plan_file_flags(own["--plan"], lib, scratch->path());
        plan_args.insert(plan_args.end(), from_file.begin(), from_file.end());
    }
    plan_args.insert(plan_args.end(), plan_flags.begin(), plan_flags.end());
    // The framework's profile decides what the plan leaves open (its precision, checkpointing,
    // adapted layers), as the framework itself would.
    plan_args.insert(plan_args.end(), {"--framework", recipe::profile_for(lib, fw).id});
    const PlanReport plan = make_plan_report(lib, plan_flags_of(plan_args), err);
    scratch.reset();

    recipe::Request req;
    req.framework = own["--framework"];
    req.model_id = plan.model.id;
    req.model_name = plan.model.name;
    req.family = plan.model.family;
    req.arch = plan.model.arch;
    req.setup = plan.setup;
    if (auto hf = last_value(plan_flags, "--hf")) req.model_repo = *hf;
    if (auto dir = last_value(plan_flags, "--model-dir")) req.model_repo = fs::absolute(*dir).string();
    if (own.count("--data")) req.data_path = own["--data"];
    if (own.count("--lr")) req.training.learning_rate = to_number("--lr", own["--lr"]);
    if (own.count("--lr") && req.training.learning_rate <= 0) throw InputError("--lr must be positive");
    if (own.count("--schedule")) req.training.schedule = own["--schedule"];
    if (own.count("--warmup-ratio")) req.training.warmup_ratio = to_number("--warmup-ratio", own["--warmup-ratio"]);
    if (req.training.warmup_ratio < 0 || req.training.warmup_ratio >= 1) throw InputError("--warmup-ratio must be in [0, 1)");
    if (own.count("--max-steps")) req.training.max_steps = to_count("--max-steps", own["--max-steps"], 1);
    if (own.count("--seed")) req.training.seed = to_count("--seed", own["--seed"], 0);
    if (own.count("--output-dir")) req.training.output_dir = own["--output-dir"];
    if (auto e = last_value(plan_args, "--epochs")) req.training.epochs = to_count("--epochs", *e, 1);
    if (auto e = last_value(plan_args, "--examples")) req.examples = to_count("--examples", *e, 1);

    // The machines named with --machine (plan's default list otherwise): their verdicts on the
    // command line, their notes (a T4 has no bf16, ...) in the README too.
    std::vector<std::string> verdicts;
    const bool machines_named = last_value(plan_flags, "--machine").has_value();
    bool all_without_bf16 = machines_named && !plan.verdicts.empty();
    for (const MachineVerdict& v : machines_named ? plan.verdicts : std::vector<MachineVerdict>{}) {
        verdicts.push_back(v.machine->name + ": " + to_string(v.fit) + ", needs " + format_bytes(double(v.needed_bytes)) +
                           " of " + format_bytes(double(v.usable_bytes)));
        for (const auto& n : v.notes) req.notes.push_back(n + ".");
        bool without_bf16 = false;   // a machine this library does not list (this machine) is not switched
        for (const auto& known : lib.machines())
            if (known.id == v.machine->id && known.id != this_machine) without_bf16 = !known.bf16;
        all_without_bf16 = all_without_bf16 && without_bf16;
    }
    // On machines without bf16 the planner already counts fp16 with loss scaling; so does the recipe.
    if (all_without_bf16 && (req.setup.precision == Precision::Bf16Mixed || req.setup.precision == Precision::Bf16)) {
        req.setup.precision = Precision::Fp16Mixed;
        req.notes.push_back("This recipe trains in fp16 mixed precision (the plan said " +
                            std::string(to_string(plan.setup.precision)) +
                            "), as the planner does for machines without bf16.");
    }

    const recipe::Recipe r = recipe::make(recipes, lib, req);
    const fs::path dir = own["--out"];
    recipe::write(r, dir);
    out << "wrote a " << r.framework.name << " recipe for " << req.model_name << " to " << dir.string() << " ("
        << r.files.size() << " files)\n";
    if (!r.notes.empty()) {
        out << "what " << r.framework.name << " does differently from the plan (also in README.md):\n";
        for (const auto& n : r.notes) out << "  - " << n << "\n";
    }
    for (const auto& v : verdicts) out << "the plan on " << v << "\n";
    // A shell line the user may paste: the folder as one shell word.
    out << "run it watched:\n  cd " << quoting::shell_word(dir.string()) << " && wingspan watch --plan predicted.json -- " << r.command
        << "\n";
    return kExitOk;
}

}  // namespace wingspan::cli
