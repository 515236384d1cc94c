#pragma once
// A plan (model choice + TrainingSetup + machines + data set), its `.wingspan.json` form, its
// evaluation, its tables and the text that names its parts. The window, the exports and
// `wingspan recipe --plan` read and write plans through here; plan_flags.hpp is the command
// line's way in. No arithmetic on memory happens here: every number comes from the planner
// (estimate_memory, evaluate, solve, estimate_run, build_table).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wingspan/memory_model.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/scenario.hpp"
#include "wingspan/setup.hpp"
#include "wingspan/units.hpp"
#include "wingspan/verdict.hpp"

namespace wingspan {

// What the model is: a bundled profile, a point on a family's size slider, or an imported
// Hugging Face config.json.
struct ModelChoice {
    std::string model_id;             // a bundled (or user) profile id
    std::string family;               // size slider: the family walked...
    std::int64_t target_params = 0;   // ...and the size asked for (0: use model_id)
    nlohmann::json config;            // imported config.json (object), else null
    std::string config_name;          // a label for the imported config

    bool operator==(const ModelChoice&) const = default;
};

// The data set a run trains on, for time and cost: examples × tokens × epochs.
struct Dataset {
    std::int64_t examples = 1000;
    std::int64_t tokens_per_example = 512;
    std::int64_t epochs = 1;
    double tokens() const { return double(examples) * double(tokens_per_example) * double(epochs); }
    bool operator==(const Dataset&) const = default;
};

// How llama.cpp serves a serve-mode plan (issue 30): `wingspan plan --method serve`'s --quant or
// --gguf, --kv-type, --n-gpu-layers, --flash-attn, --parallel and --ubatch; its --ctx is the
// plan's sequence length. Saved in the plan file as "llama_cpp" (when not these defaults).
struct LlamaCppChoice {
    std::string quant = "q4_k_m";
    std::string gguf_file;            // empty: the plan's model in `quant`
    std::string kv_type = "f16";
    std::int64_t n_gpu_layers = -1;   // -1: every layer and the output
    bool flash_attn = false;
    std::int64_t n_parallel = 1;      // sequences sharing the cache
    std::int64_t n_ubatch = 512;      // tokens per compute batch (llama.cpp's default)
    bool operator==(const LlamaCppChoice&) const = default;
    nlohmann::json to_json() const;
    static LlamaCppChoice from_json(const nlohmann::json& j);   // InputError naming the field
};

struct Plan {
    ModelChoice model;
    TrainingSetup setup;
    std::vector<std::string> machines;   // machine ids, in display order
    Dataset dataset;
    std::string framework;               // forced framework id; empty: each machine's default
    // Per machine id, the framework chosen for it in the machines list; a machine not listed
    // uses its usual one (ProfileLibrary::framework_for). `framework` above overrides both.
    std::map<std::string, std::string> machine_frameworks;
    // The fields the user set (edited in the window, or a saved plan's); the rest follow each
    // machine's framework, as `wingspan plan` leaves to it what its flags do not set (mlx-lm
    // adapts the last 16 layers without checkpointing). Precision: chosen unless auto.
    ChosenFields chosen;
    LlamaCppChoice llama_cpp;   // serve mode's llama.cpp settings

    // The lessons' example: Llama 3.1 8B, LoRA r16, seq 1024, batch 1, checkpointing on,
    // on the RTX 4090, Mac Studio M3 Ultra, T4, A100 80GB, a CPU laptop and this machine.
    static Plan lesson_default();

    // `.wingspan.json`: {"format":"wingspan-plan","version":1,"model":{...},"setup":{...},
    // "machines":[...],"dataset":{...}}. from_json throws InputError naming the field.
    nlohmann::json to_json() const;
    static Plan from_json(const nlohmann::json& j);
};

inline constexpr const char* kPlanFormat = "wingspan-plan";
// A plan is a person's choice of machines, not a data set: lists past these caps are refused
// with a clear error (every chart, table and verdict grows with them).
inline constexpr size_t kMaxPlanMachines = 256;
inline constexpr size_t kMaxPlanMachineFrameworks = 256;
inline constexpr size_t kMaxPlanIdLength = 256;
inline constexpr std::uint64_t kMaxPlanFileBytes = 4ull << 20;
inline constexpr const char* kPlanSuffix = ".wingspan.json";

// Reads / writes a plan file; errors are InputError with the path in the message.
Plan read_plan_file(const std::string& path);
void write_plan_file(const Plan& plan, const std::string& path);

// What the user chose of a plan (ChosenFields, precision from its auto flag).
ChosenFields chosen_fields(const Plan& plan);
// The setup a machine runs: the plan's with the machine's framework's defaults for what the
// user left open (core's apply_framework_defaults, as the CLI does per machine).
TrainingSetup setup_on(const TrainingSetup& setup, const FrameworkProfile& framework, const Plan& plan);

// The model a choice names, resolved against the library.
struct ResolvedModel {
    std::string id;
    std::string name;
    std::string family;
    Architecture arch;
    bool interpolated = false;   // a synthetic point between two real family members
};
ResolvedModel resolve_model(const ProfileLibrary& lib, const ModelChoice& choice);

// The size range a family's slider walks (smallest and largest real member).
struct FamilyRange {
    std::string family;
    std::vector<const ModelProfile*> members;   // by size
    std::int64_t min_params() const;
    std::int64_t max_params() const;
};
FamilyRange family_range(const ProfileLibrary& lib, const std::string& family);

// What core says about a plan. `error` is set (and the rest empty) when the plan is
// impossible (sequence 0, rank above the hidden size, an unknown model, ...).
struct Evaluation {
    ResolvedModel model;
    TrainingSetup setup;
    MemoryEstimate reference;                 // with the reference framework (PyTorch + CUDA)
    const FrameworkProfile* reference_framework = nullptr;
    std::vector<MachineVerdict> verdicts;     // one per plan machine found in the library
    std::vector<std::string> missing_machines;// plan machine ids the library does not have
    std::string error;
    bool ok() const { return error.empty(); }
};
// Reference framework: the plan's forced one, else "pytorch-cuda" (what the lessons assume).
const FrameworkProfile& reference_framework(const ProfileLibrary& lib, const Plan& plan);
// The framework a machine computes with in this plan: the plan's forced one, else the one
// chosen for that machine, else the machine's usual one.
const FrameworkProfile& framework_for(const ProfileLibrary& lib, const Plan& plan, const MachineProfile& m);
Evaluation evaluate_plan(const ProfileLibrary& lib, const Plan& plan);

// ---- tables (wingspan::Table, so the window, the exports and the CLI share one form) ----

// "Which machine trains what": per selected machine, fit and margin, the largest micro-batch
// and sequence length that fit (core's solver), tokens/s, time and cost for the data set.
Table machine_table(const ProfileLibrary& lib, const Plan& plan, const Evaluation& eval, ByteUnit unit);
// Full vs LoRA vs QLoRA for the same model and setup: a row per method, a column per
// component, the total, and the verdict on each selected machine.
Table method_table(const ProfileLibrary& lib, const Plan& plan, const Evaluation& eval, ByteUnit unit);
// The lesson's per-size table (1B–70B × full/LoRA/QLoRA), computed by core with this plan's
// setup (sequence, batch, checkpointing, ...) as the defaults. Uses the `lesson-sizes`
// scenario's rows and columns when the library has it.
Table size_table(const ProfileLibrary& lib, const Plan& plan, ByteUnit unit);
nlohmann::json size_scenario(const ProfileLibrary& lib, const Plan& plan);

// The three methods the comparison shows, as setups derived from the plan's.
std::vector<std::pair<std::string, TrainingSetup>> method_variants(const TrainingSetup& base);

// ---- text helpers (rendering only) ----
std::string short_machine_name(const MachineProfile& m);   // "RTX 4090", "Mac Studio M3 Ultra 96 GB"
std::string describe_setup(const TrainingSetup& s);         // "LoRA r16 · seq 1,024 × batch 1 · ..."
// The command line's full line: method, rank and targets, the framework's storage format, every
// technique on ("lora rank 16 on q,k,v,o · bf16-mixed · adamw · seq 1024 × batch 1 · ...").
std::string describe_setup_detailed(const TrainingSetup& s, const FrameworkProfile& fw);
std::string method_label(Method m);                         // "Full fine-tune", "LoRA", ...
std::string verdict_text(const MachineVerdict& v, ByteUnit unit);   // "fits · 4.0 GB free"
// The short form the Machines list and the Methods table show: "✓ 4.0 GB free", "✗ short 2.1 GB".
std::string verdict_mark_text(const MachineVerdict& v, ByteUnit unit);
std::string format_duration(double seconds);
std::string unit_name(ByteUnit u);                          // "GB" / "GiB"
double unit_bytes(ByteUnit u);                              // 1e9 / 2^30

}  // namespace wingspan
