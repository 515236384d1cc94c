#pragma once
// The run protocol's events as types (issue 27, item 3): each kind read once from its JSON
// body into a struct, so readers (the run record, the window's run session, `wingspan watch`)
// use fields, not look-ups by name. A field that is missing or of the wrong type keeps the
// struct's default, as docs/protocol.md says a reader must; an event of another kind gives
// nothing. `Event` (protocol.hpp) stays the parsed line; these are views of it.
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "components.hpp"
#include "protocol.hpp"

namespace wingspan::protocol {

// How the run chose its precision (`hello` and `predicted` carry the same object).
struct PrecisionChoice {
    std::string precision;   // "fp32", "bf16-mixed", "fp16-mixed"; empty from an older trainer
    bool automatic = false;  // `--precision auto` chose it
    std::string reason;
};

// `hello`: the first line of a run (one per rank under --nproc).
struct HelloEvent {
    std::string trainer;       // "wingspan-train", or a recipe's loop
    std::string version;
    std::string command;       // "export" for `wingspan-train export`; empty for training
    std::string device = "cpu";
    std::string device_name;
    std::string framework;     // a recipe's framework (`wingspan watch`); empty from wingspan-train
    bool external = false;     // written by `wingspan watch` for another framework's run
    std::int64_t threads = 0;
    std::int64_t rank = 0;
    std::int64_t world_size = 1;
    std::int64_t pid = 0;
    std::int64_t params_total = 0;
    std::int64_t params_trainable = 0;
    std::string sharding;        // the plan's "sharding" ("none", "zero1", ...); empty without a plan
    std::string objective = "sft";
    PrecisionChoice precision;
    nlohmann::json plan;         // the setup the trainer runs (plan --json's "setup"); null if absent
};

// `predicted`: the planner's prediction for exactly this run.
struct PredictedEvent {
    std::map<Component, std::int64_t> components;        // at the predicted peak phase
    std::map<Component, std::int64_t> component_maxima;  // each component's largest; = components when absent
    std::int64_t peak_bytes = 0;                         // allocated tensors
    std::int64_t total_bytes = 0;                        // the process
    std::string framework;
    PrecisionChoice precision;
    // The micro-batch the prediction is made at (rows × padded columns).
    std::int64_t batch_rows = 0;
    std::int64_t batch_cols = 0;
    std::int64_t batch_tokens = 0;
    std::string padding;
    // CPU runs only (0 where absent): the speed model's figures and the calibration factor.
    double tokens_per_s = 0;
    double step_time_s = 0;
    double speed_scale = 1;
    std::string bf16_isa;    // CPU: "amx_bf16", "avx512_bf16", "none"
    std::string bf16_path;   // CPU: "hardware", "emulated"
};

struct MemoryEvent {
    std::int64_t step = 0;
    std::string phase;
    std::map<Component, std::int64_t> components;
    std::int64_t allocated_bytes = 0;
    std::int64_t peak_bytes = 0;
    std::int64_t rss_bytes = 0;
    std::int64_t rss_peak_bytes = 0;
};

struct StepEvent {
    std::int64_t step = 0;
    std::int64_t total_steps = 0;
    double loss = 0;
    double lr = 0;
    double tokens_per_s = 0;
    double step_time_s = 0;
    // DPO/ORPO (the `preference` object); NaN for SFT.
    double reward_margin = std::numeric_limits<double>::quiet_NaN();
    double reward_accuracy = std::numeric_limits<double>::quiet_NaN();
};

struct EvalEvent {
    std::int64_t step = 0;
    double loss = 0;
};

struct CheckpointEvent {
    std::int64_t step = 0;
    std::string path;
};

struct LogEvent {
    std::string level = "info";
    std::string message;
    std::string source;   // `wingspan watch`'s "stdout" / "stderr"; empty from a trainer
};

struct ErrorEvent {
    std::string code;
    std::string message;
    std::string component;   // out_of_memory: the component that asked
    std::int64_t bytes = 0;
    std::int64_t available_bytes = 0;
};

struct DoneEvent {
    std::string reason;   // "completed", "interrupted", "error"
    std::int64_t steps = 0;
    std::string checkpoint;
    std::int64_t peak_bytes = 0;
    std::int64_t rss_peak_bytes = 0;
};

std::optional<HelloEvent> as_hello(const Event& e);
std::optional<PredictedEvent> as_predicted(const Event& e);
std::optional<MemoryEvent> as_memory(const Event& e);
std::optional<StepEvent> as_step(const Event& e);
std::optional<EvalEvent> as_eval(const Event& e);
std::optional<CheckpointEvent> as_checkpoint(const Event& e);
std::optional<LogEvent> as_log(const Event& e);
std::optional<ErrorEvent> as_error(const Event& e);
std::optional<DoneEvent> as_done(const Event& e);

}  // namespace wingspan::protocol
