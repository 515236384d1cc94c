#pragma once
// Where a plan fits: the verdict per machine, the largest settings that still fit, and how
// fast and how expensive a run would be.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "memory_model.hpp"
#include "profiles.hpp"
#include "setup.hpp"

namespace wingspan {

enum class Fit { Fits, Tight, No };
const char* to_string(Fit f);             // "fits", "tight", "no"
inline constexpr double kTightFraction = 0.10;   // within 10 % of the ceiling

struct SpeedEstimate {
    double flops_per_token = 0;           // training (forward + backward [+ recompute])
    double forward_flops_per_token = 0;
    double achieved_tflops = 0;
    double tokens_per_s = 0;              // training: trained tokens/s; serving: generated tokens/s
    double prefill_tokens_per_s = 0;      // serving only
    double step_seconds = 0;              // training: one micro-step (speed_model.hpp)
    std::string formula;
};

struct RunCost {
    double tokens = 0;
    double seconds = 0;
    std::optional<double> dollars;
};

struct MachineVerdict {
    const MachineProfile* machine = nullptr;
    const FrameworkProfile* framework = nullptr;
    TrainingSetup setup;                  // as run on this machine (e.g. fp16 on a T4)
    MemoryEstimate estimate;
    std::int64_t usable_bytes = 0;
    std::int64_t needed_bytes = 0;        // device total (unified: device + host)
    std::int64_t margin_bytes = 0;        // usable - needed (negative: short by)
    Fit fit = Fit::No;
    bool host_fits = true;                // offloaded state fits in host RAM
    std::vector<std::string> notes;       // adjustments and caveats, for the user
    std::string precision_reason;         // why setup.precision: asked for, the framework's, or auto's rule
    SpeedEstimate speed;
    nlohmann::json to_json() const;
};

// The ceiling a training process can use on this machine with this framework.
std::int64_t usable_bytes(const MachineProfile& m, const FrameworkProfile& f);
// The setup adjusted to what the machine supports (no bf16 -> fp16 mixed), with notes; precision
// "auto" becomes the machine's fastest exact precision (`precision_reason` says why).
TrainingSetup adapt_setup(const TrainingSetup& s, const MachineProfile& m,
                          std::vector<std::string>* notes = nullptr, std::string* precision_reason = nullptr);
MachineVerdict evaluate(const Architecture& arch, const TrainingSetup& setup,
                        const MachineProfile& machine, const FrameworkProfile& framework);

SpeedEstimate estimate_speed(const Architecture& arch, const TrainingSetup& setup,
                             const MachineProfile& machine, const FrameworkProfile& framework);
double training_flops_per_token(const Architecture& arch, const TrainingSetup& setup);
RunCost estimate_run(const SpeedEstimate& speed, const MachineProfile& machine, double tokens);

// The largest data set a time or cost is given for: 10^15 tokens (about 67 times Llama 3's 15 T
// pre-training tokens). Beyond it a plan is a typo or an attack, and its times overflow what a table,
// a CSV cell or a duration can show (issue 34: int64-max examples wrote "-9223372036854775808 s").
inline constexpr double kMaxDatasetTokens = 1e15;
// Throws InputError naming the fields when examples × tokens per example × epochs is not a positive count
// of at most kMaxDatasetTokens; `where` prefixes the message ("plan dataset", "--examples").
double checked_dataset_tokens(std::int64_t examples, std::int64_t tokens_per_example, std::int64_t epochs,
                              const std::string& where);

// ---- the solver: largest setting that still fits (0 / empty when not even the smallest) ----
enum class SolveFor { Batch, Seq, Rank, Size };
SolveFor parse_solve_for(const std::string&);

struct Solution {
    SolveFor what;
    std::int64_t value = 0;               // batch, sequence, rank, or parameters for Size
    std::string model_id;                 // Size: the largest bundled model of the family
    bool unbounded = false;               // hit the search ceiling without running out
    // Seq under GRPO (or DPO with both lengths given): the value is the completion's length.
    bool completion_length = false;
    MachineVerdict at_value;              // the verdict at the solution
};

// Each candidate setup as it will really run, before it is evaluated: `fit --data` plans every
// candidate batch (or cap) at the data set's peak batch for it (app/cli/data_cmd.hpp).
using SetupShaper = std::function<TrainingSetup(const TrainingSetup&)>;

// Monotone search (closed form where memory is affine in the variable, bisection elsewhere).
Solution solve(SolveFor what, const Architecture& arch, const TrainingSetup& setup,
               const MachineProfile& machine, const FrameworkProfile& framework,
               const ProfileLibrary* library = nullptr, const std::string& family = {},
               const SetupShaper& shape = {});

}  // namespace wingspan
