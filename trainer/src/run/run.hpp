#pragma once
// A training run of wingspan-train (train.cpp: setup and the entry points; run_steps.cpp: the
// steps, evaluation, the sample and `done`; run_checkpoint.cpp: saving and resuming;
// run_distributed.cpp: the data-parallel parts). Private to the trainer.
#include <ATen/ATen.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wingspan/trainer_invocation.hpp"
#include "chat_format.hpp"
#include "data/data.hpp"
#include "memory/device_memory.hpp"
#include "distributed/distributed.hpp"
#include "distributed/distributed_sync.hpp"
#include "memory/memory.hpp"
#include "model/model.hpp"
#include "model/objective_preference.hpp"
#include "optim/optimizer.hpp"
#include "optim/optimizer_in_backward.hpp"
#include "run/precision_choice.hpp"
#include "data/preference_data.hpp"
#include "support/stop_signals.hpp"
#include "tokenizer.hpp"
#include "model/weights_io.hpp"
#include "wingspan/memory_model.hpp"

namespace wingspan::train::detail {

namespace fs = std::filesystem;
using nlohmann::json;

// Whether a stop signal came (stop_signals.hpp): the run stops cleanly at the next point that
// checks it.
inline bool interrupted() { return stops::requested() != 0; }

// A failure with its protocol error code.
struct RunError : std::runtime_error {
    RunError(std::string code_, const std::string& msg, json extra_ = json::object())
        : std::runtime_error(msg), code(std::move(code_)), extra(std::move(extra_)) {}
    std::string code;
    json extra;
};

// A JSON file we did not write, read with the bounded reader; a bad one is `code_if_bad`.
json read_json_file(const fs::path& p, const char* code_if_bad);

// One training run, from the arguments to its `done` event.
class Run {
public:
    Run(TrainerInvocation o, std::string argv0, dist::JobEnv job) : opt_(std::move(o)), argv0_(std::move(argv0)), job_(std::move(job)) {}
    int execute();
    // Ends the memory sampler's thread: after a run that ended in an error, before its `done`, so no
    // sample can follow the last line (the sampler thread raced the error path's `done`).
    void stop_sampling() { sampler_.stop(); }

private:
    void load_inputs();
    void announce();
    void build_model();
    void build_optimizer();
    void resume();
    // The settings trainer_state.json records, and --resume's check of them against this run
    // (before the model is built: a LoRA checkpoint resumed as --method full says so).
    json state_settings() const;
    void check_resume_settings();
    void train_loop();
    double train_step(std::int64_t step);
    // --optimizer-in-backward: state i's AdamW step from its complete gradient, which it frees.
    void step_now(std::size_t state);
    double evaluate();
    void emit_eval(std::int64_t step, double loss);
    const Batch& next_batch();
    fs::path save(const fs::path& dir, bool final);
    std::string sample();
    void emit_done(const std::string& reason);
    void refuse_if_beyond_machine() const;
    bool stopped_during_setup();
    // Data parallel (issue 18; run_distributed.cpp, distributed*.cpp hold the logic).
    int world() const { return group_ ? group_->world_size() : 1; }
    bool sharded() const { return sync_ && sync_->sharded(); }
    at::Tensor grad_for(std::size_t state) const;
    bool stop_requested();
    fs::path save_checkpoint(const fs::path& dir, bool final);
    void swap_optimizer_state(std::vector<ParamState>& held);

    // Preference tuning, DPO and ORPO (objective_run.cpp).
    void load_preference_data();
    void check_preference_setup() const;
    void build_reference();
    at::Tensor preference_loss(const at::Tensor& ids, const at::Tensor& labels, double weight);
    double evaluate_preference();
    ModelOptions model_options() const;

    void select_device();
    // --precision auto (run_precision.cpp): the device's rule, a resumed checkpoint's precision,
    // and bf16-mixed where fp32 would not fit.
    void choose_precision();
    void fit_precision_to_memory(const FrameworkProfile& fw);
    std::int64_t memory_capacity() const;   // the device's memory (RAM for the CPU); 0: unknown
    FrameworkProfile framework_profile() const;

    TrainerInvocation opt_;
    PrecisionChoice precision_;        // what opt_.precision is and why
    std::string argv0_;
    dist::JobEnv job_;
    c10::Device device_{c10::kCPU};   // where every tensor of the run lives
    json hf_config_;
    ModelConfig cfg_;
    Architecture arch_;
    TrainingSetup setup_;
    // The micro-batch that sets the memory peak (wingspan/data_lengths.hpp): --batch × --seq, or with
    // --padding dynamic the longest padded batch this run takes, found by the planner's own rule.
    PeakBatch peak_batch_;
    std::int64_t step_tokens_ = 0;     // tokens (padding included) of the last step's micro-batches
    void find_peak_batch();
    TrainingSetup setup_at_peak() const { return at_peak_batch(setup_, peak_batch_); }
    std::shared_ptr<Tokenizer> tok_;
    ChatFormat chat_;
    Dataset data_;
    fs::path data_path_;
    std::optional<WeightReader> weights_;
    std::unique_ptr<Model> model_;
    std::vector<ParamState> states_;
    LossScaler scaler_;                // fp16-mixed only
    std::unique_ptr<StepInBackward> step_in_backward_;   // --optimizer-in-backward only
    std::int64_t backward_step_ = 0;   // the step and learning rate its hooks apply
    double backward_lr_ = 0;
    double last_loss_scale_ = 1.0;     // the scale of the last step's backward
    bool last_step_skipped_ = false;   // its gradients overflowed: no update
    double lr_ = 0;
    std::int64_t warmup_ = 0;
    std::int64_t total_steps_ = 0;
    std::int64_t step_ = 0;            // completed optimizer steps
    std::int64_t cursor_ = 0;          // micro-batches consumed since the start of training
    std::int64_t batches_per_epoch_ = 0;
    std::int64_t cached_epoch_ = -1;
    EpochBatches epoch_batches_;
    EpochBatches eval_batches_;
    Batch current_batch_;              // the micro-batch at hand, made from epoch_batches_
    std::vector<double> losses_;
    fs::path last_checkpoint_;
    std::unique_ptr<mem::DeviceTracking> tracking_;   // a GPU's bytes through c10's hook
    mem::Sampler sampler_;                            // stopped before tracking_ ends
    std::int64_t predicted_total_ = 0;   // the planner's bytes for this run (0: no prediction)
    Component predicted_largest_ = Component::FrozenWeights;
    std::unique_ptr<dist::Group> group_;
    std::unique_ptr<dist::GradientSync> sync_;
    at::Tensor shard_m_, shard_v_, shard_master_;   // zero1/zero2: this rank's optimizer shard
    bool stopping_ = false;
    PreferenceDataset pairs_;                 // --objective dpo|orpo: the pairs (data_ holds their chosen rows)
    std::unique_ptr<Model> reference_;        // DPO, full fine-tune: the frozen copy of the policy
    PreferenceMetrics step_metrics_, eval_metrics_;
};

}  // namespace wingspan::train::detail
