#pragma once
// One training run as wingspan-train runs it: its command line (issue 3 is the contract for the
// flag names) as one type with one set of defaults. The trainer parses its argv with from_args();
// the window, the CLI and anything else that starts a run fills one in and calls to_args().
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "wingspan/architecture.hpp"
#include "wingspan/data_lengths.hpp"
#include "wingspan/setup.hpp"

namespace wingspan {

inline constexpr std::int64_t kMinMemoryLimit = 1 << 20;   // 1 MiB: below it nothing can run

// How wingspan-train's idle OpenMP threads wait, unless the environment says (OMP_WAIT_POLICY or
// GOMP_SPINCOUNT): libgomp reads it before main(), so the trainer re-executes itself once to set
// it, and whatever starts the trainer sets it to save that. A short spin (about 10,000 pause
// loops, then sleep): a step runs thousands of parallel regions, and waking a sleeping thread for
// each (OMP_WAIT_POLICY=passive) cost 2-6 % of a 135M-class LoRA step; libgomp's default spin
// (300,000) made two trainers sharing two cores 45 % slower each, this one none (measured:
// bench/results/trainer-vs-transformers.md).
inline constexpr const char* kOmpSpinVariable = "GOMP_SPINCOUNT";
inline constexpr const char* kOmpSpinCount = "10000";

struct TrainerInvocation {
    std::string model_dir;          // empty: the built-in default architecture
    std::string data_file;          // empty: the bundled sample data
    std::string tokenizer_file;     // empty: <model>/tokenizer.json, else byte-level
    std::string chat_format;        // empty: from the model's chat template (chat_format.hpp)
    Method method = Method::Lora;
    bool method_given = false;
    std::int64_t rank = kDefaultLoraRank;
    double alpha = kDefaultLoraAlpha;
    double dropout = 0.0;
    std::set<LinearRole> targets = {LinearRole::Q, LinearRole::K, LinearRole::V, LinearRole::O,
                                    LinearRole::Gate, LinearRole::Up, LinearRole::Down};
    Precision precision = Precision::Fp32;
    bool precision_auto = true;     // --precision auto (the default): chosen per device (precision_choice.hpp)
    std::int64_t seq = 128;
    std::int64_t batch = 4;
    std::int64_t grad_accum = 1;
    std::int64_t steps = 0;         // 0: from epochs (or the default)
    std::int64_t epochs = 0;
    std::optional<double> lr;       // default depends on method and on pretrained weights
    double weight_decay = 0.0;
    double max_grad_norm = 1.0;
    bool max_grad_norm_given = false;
    std::int64_t warmup_steps = -1; // -1: 10 % of the steps
    double min_lr_ratio = 0.1;
    bool grad_checkpointing = false;
    // Each parameter's AdamW step runs in backward as soon as its gradient is ready (issue 25;
    // optimizer_in_backward.hpp): no clipping, no accumulation, one process.
    bool optimizer_in_backward = false;
    // How examples become rows (wingspan/data_lengths.hpp): packed (the default), dynamic (each
    // micro-batch padded to its longest row) or max (every row padded to --seq).
    Padding padding = Padding::Packed;
    bool packing() const { return padding == Padding::Packed; }
    std::string out_dir;
    std::string resume_dir;
    std::int64_t memory_limit = 0;  // bytes, 0: none; else at least kMinMemoryLimit
    int threads = 0;                // 0: hardware cores
    std::uint64_t seed = 42;
    std::int64_t eval_every = -1;   // -1: five evaluations per run; 0: only at the end
    double eval_fraction = 0.05;
    std::int64_t eval_batches = 8;
    std::int64_t save_every = 0;    // 0: only at the end (and on interruption)
    std::int64_t sample_tokens = 48;
    std::int64_t sample_every_ms = 50;
    std::string attention = "eager";   // eager | sdpa (at::_scaled_dot_product_attention)
    double initial_loss_scale = 65536;      // fp16-mixed: the first loss scale (PyTorch GradScaler's)
    std::int64_t loss_scale_growth = 2000;  // fp16-mixed: good steps before the scale doubles
    std::string device = "auto";       // auto | cpu | cuda | cuda:N | mps (device.hpp resolves it)
    // Data parallel (issue 18): ranks started here, how state is sharded, collective timeout.
    int nproc = 1;
    Sharding sharding = Sharding::Ddp;
    int dist_timeout_s = 120;
    // Preference tuning (issue 31): sft (the default), dpo or orpo, with data rows of
    // prompt/chosen/rejected. --beta is DPO's β and ORPO's λ, both `beta` in TRL, default 0.1
    // (huggingface/trl f2cd577: trl/trainer/dpo_config.py:283, trl/experimental/orpo/orpo_config.py:91).
    Objective objective = Objective::Sft;
    std::optional<double> beta;
    double beta_or_default() const { return beta.value_or(0.1); }
    bool preference() const { return objective != Objective::Sft; }

    // Parses wingspan-train's arguments (argv without the program). Throws ArgError naming the
    // flag; `help` is set for --help (then nothing is checked).
    static TrainerInvocation from_args(const std::vector<std::string>& args, bool& help);
    // The arguments that give this run back through from_args(): the method, precision, sequence,
    // batch and length always (a run folder's recorded command states its setup even if a default
    // changes), every other option only where it differs from the default.
    std::vector<std::string> to_args() const;
    bool operator==(const TrainerInvocation&) const = default;
};

// Thrown for a bad command line; the message names the flag.
struct ArgError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string trainer_usage();

}  // namespace wingspan
