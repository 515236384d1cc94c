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

std::optional<MemoryEvent> as_memory(const Event& e);
std::optional<StepEvent> as_step(const Event& e);
std::optional<EvalEvent> as_eval(const Event& e);
std::optional<CheckpointEvent> as_checkpoint(const Event& e);
std::optional<LogEvent> as_log(const Event& e);
std::optional<ErrorEvent> as_error(const Event& e);
std::optional<DoneEvent> as_done(const Event& e);

}  // namespace wingspan::protocol
