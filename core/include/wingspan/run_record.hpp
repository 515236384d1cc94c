#pragma once
// One training run as the launcher sees it: the protocol events it received, bounded in
// memory, the predicted-vs-measured summary, and its folder in the run history. Plain C++
// so the window, the command line (`wingspan calibrate`) and tests share it.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "components.hpp"
#include "profiles.hpp"
#include "protocol.hpp"

namespace wingspan {

struct MemorySample {
    double t = 0;
    std::int64_t step = 0;
    std::string phase;
    std::map<Component, std::int64_t> components;
    std::int64_t allocated_bytes = 0;
    std::int64_t peak_bytes = 0;
    std::int64_t rss_bytes = 0;
};

struct StepSample {
    double t = 0;
    std::int64_t step = 0;
    std::int64_t total_steps = 0;
    double loss = 0;
    double lr = 0;
    double tokens_per_s = 0;
};

struct ComponentComparison {
    Component component;
    std::int64_t predicted = 0;
    std::int64_t measured = 0;       // the largest live bytes seen for the component
    double error_percent() const;    // (predicted - measured) / measured × 100; 0 when both are 0
};

struct RunSummary {
    std::vector<ComponentComparison> components;
    std::int64_t predicted_peak = 0;     // allocated tensors
    std::int64_t measured_peak = 0;
    std::int64_t predicted_total = 0;    // what the process holds (RSS on CPU)
    std::int64_t measured_rss_peak = 0;
    double peak_error_percent() const;
    double total_error_percent() const;
};

enum class RunStatus { Running, Completed, Interrupted, Failed };
const char* to_string(RunStatus);

class RunRecord {
public:
    // Memory and step samples kept before pairs are merged (the peak of each memory pair and
    // the later step of each step pair survive); at most kMaxLogLines log lines are kept.
    explicit RunRecord(size_t max_memory_samples = 4096);
    static constexpr size_t kMaxLogLines = 2000;

    // Feeds one stdout line; malformed or unknown lines are counted and kept for the log,
    // never fatal. Returns the parsed event, if any.
    std::optional<protocol::Event> ingest_line(const std::string& line);
    void ingest(const protocol::Event& e);

    // The process ended: exit code, or the signal that killed it (0 if none).
    void finish(int exit_code, int signal = 0);

    const nlohmann::json& plan() const { return plan_; }
    const nlohmann::json& hello() const { return hello_; }
    const std::map<Component, std::int64_t>& predicted() const { return predicted_; }
    const std::map<Component, std::int64_t>& predicted_maxima() const { return predicted_maxima_; }
    std::int64_t predicted_peak() const { return predicted_peak_; }
    std::int64_t predicted_total() const { return predicted_total_; }
    const std::vector<MemorySample>& memory() const { return memory_; }
    const std::vector<StepSample>& steps() const { return steps_; }
    const std::vector<std::pair<std::int64_t, double>>& evals() const { return evals_; }
    const std::vector<std::string>& checkpoints() const { return checkpoints_; }
    const std::vector<std::string>& logs() const { return logs_; }
    const std::optional<protocol::Event>& last_error() const { return last_error_; }
    const std::optional<protocol::Event>& done() const { return done_; }
    std::int64_t malformed_lines() const { return malformed_; }
    // Log lines that arrived after kMaxLogLines and were counted, not kept (errors are always kept).
    std::int64_t dropped_log_lines() const { return dropped_logs_; }
    std::int64_t step_events() const { return step_events_; }
    std::int64_t memory_events() const { return memory_events_; }
    std::int64_t measured_peak() const { return measured_peak_; }
    std::int64_t measured_rss_peak() const { return rss_peak_; }
    std::map<Component, std::int64_t> measured_maxima() const { return measured_maxima_; }
    RunStatus status() const { return status_; }
    int exit_code() const { return exit_code_; }
    int exit_signal() const { return exit_signal_; }
    // "completed", "interrupted (SIGTERM)", "failed: exit code 3 — out_of_memory: ..."
    std::string status_text() const;
    RunSummary summary() const;

private:
    void add_memory(MemorySample s);
    void add_step(StepSample s);
    void add_log(std::string line, bool always = false);

    size_t max_samples_;
    nlohmann::json plan_, hello_;
    std::map<Component, std::int64_t> predicted_, predicted_maxima_, measured_maxima_;
    std::int64_t predicted_peak_ = 0, predicted_total_ = 0, measured_peak_ = 0, rss_peak_ = 0;
    std::vector<MemorySample> memory_;
    std::vector<StepSample> steps_;
    std::vector<std::pair<std::int64_t, double>> evals_;
    std::vector<std::string> checkpoints_, logs_;
    std::optional<protocol::Event> last_error_, done_;
    std::int64_t malformed_ = 0, memory_events_ = 0, step_events_ = 0, dropped_logs_ = 0;
    RunStatus status_ = RunStatus::Running;
    int exit_code_ = 0, exit_signal_ = 0;
};

// The run history: one folder per run under $XDG_DATA_HOME/wingspan/runs (or
// ~/.local/share/wingspan/runs): plan.json, events.jsonl (every line as received, appended
// as it arrives so a crash loses nothing), result.json (status, exit code) once it ends.
class RunStore {
public:
    explicit RunStore(std::filesystem::path root = default_root());
    static std::filesystem::path default_root();
    const std::filesystem::path& root() const { return root_; }

    // Creates a new run folder named after the time and the label: YYYYMMDD-HHMMSS-label.
    std::filesystem::path create(const nlohmann::json& plan, const std::string& label);
    // The label part of a run folder's name (the whole name if it does not start with a time).
    static std::string label_of(const std::filesystem::path& run);
    static void append_line(const std::filesystem::path& run, const std::string& line);
    static void write_result(const std::filesystem::path& run, const RunRecord& record);
    // Newest first.
    std::vector<std::filesystem::path> list() const;
    // Replays events.jsonl; a run without result.json is reported as failed (it crashed
    // together with its launcher). A result.json that is not ours (invalid, wrong types) is an
    // InputError naming the run, so listings skip that run and go on.
    static RunRecord load(const std::filesystem::path& run);

private:
    std::filesystem::path root_;
};

// Fits a framework's fixed costs from finished runs on this machine: total = context +
// (1 + slack) × peak allocated, by least squares of the relative error over (measured peak,
// measured RSS peak).
struct Calibration {
    FrameworkProfile profile;       // the base profile with the fitted context and slack
    size_t runs = 0;
    double error_before_percent = 0;   // mean |predicted total − measured RSS| / measured
    double error_after_percent = 0;
};
Calibration calibrate(const FrameworkProfile& base, const std::vector<RunRecord>& runs);
nlohmann::json framework_profile_to_json(const FrameworkProfile& f);

}  // namespace wingspan
