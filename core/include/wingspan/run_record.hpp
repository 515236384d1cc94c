#pragma once
// One training run as the launcher sees it: the protocol events it received, bounded in
// memory, the predicted-vs-measured summary, and its folder in the run history. Plain C++
// so the window, the command line (`wingspan calibrate`) and tests share it.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "components.hpp"
#include "json_input.hpp"
#include "profiles.hpp"
#include "protocol.hpp"
#include "protocol_events.hpp"

namespace wingspan {

// A memory / step event as the record keeps it: the event's fields and its time.
struct MemorySample : protocol::MemoryEvent {
    double t = 0;
};

struct StepSample : protocol::StepEvent {
    double t = 0;
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
    // The planner's speed for this run (the `predicted` event's tokens_per_s and step_time_s; 0 when
    // the trainer could not predict it, e.g. on a GPU without a machine profile) and the speed_scale
    // of the framework profile it used.
    double predicted_tokens_per_s() const { return predicted_tokens_per_s_; }
    double predicted_step_time_s() const { return predicted_step_time_s_; }
    double predicted_speed_scale() const { return predicted_speed_scale_; }
    // The measured speed: the median over step events, the first (warm-up) step left out when
    // there are more; 0 before the first step.
    double measured_tokens_per_s() const;
    double measured_step_time_s() const;
    const std::vector<MemorySample>& memory() const { return memory_; }
    const std::vector<StepSample>& steps() const { return steps_; }
    const std::vector<std::pair<std::int64_t, double>>& evals() const { return evals_; }
    // The newest checkpoints (at most kMaxCheckpoints; events.jsonl has them all).
    const std::vector<std::string>& checkpoints() const { return checkpoints_; }
    static constexpr size_t kMaxCheckpoints = 256;
    std::int64_t checkpoint_events() const { return checkpoint_events_; }
    // What could not be read of the run's folder (a record cut at its cap, lines too long):
    // the record holds the rest. Empty for a whole record.
    const std::vector<std::string>& read_notes() const { return read_notes_; }
    void add_read_note(std::string note) { read_notes_.push_back(std::move(note)); }
    // Lines that were never fed (too long to read) counted with the malformed ones.
    void count_malformed(std::int64_t lines) { malformed_ += lines; }
    const std::vector<std::string>& logs() const { return logs_; }
    const std::optional<protocol::Event>& last_error() const { return last_error_; }
    const std::optional<protocol::Event>& done() const { return done_; }
    std::int64_t malformed_lines() const { return malformed_; }
    // Log lines that arrived after kMaxLogLines and were counted, not kept (errors are always kept).
    std::int64_t dropped_log_lines() const { return dropped_logs_; }
    std::int64_t step_events() const { return step_events_; }
    // Whether the run got through an optimizer step, where a step's peak lies (a run stopped
    // during setup measured only what it got to: "not reached", never an error).
    bool reached_peak() const { return !steps_.empty() || step_events_ > 0 || status_ == RunStatus::Completed; }
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
    void add_checkpoint(std::string path);

    size_t max_samples_;
    nlohmann::json plan_, hello_;
    std::map<Component, std::int64_t> predicted_, predicted_maxima_, measured_maxima_;
    std::int64_t predicted_peak_ = 0, predicted_total_ = 0, measured_peak_ = 0, rss_peak_ = 0;
    double predicted_tokens_per_s_ = 0, predicted_step_time_s_ = 0, predicted_speed_scale_ = 1.0;
    std::vector<MemorySample> memory_;
    std::vector<StepSample> steps_;
    std::vector<std::pair<std::int64_t, double>> evals_;
    std::vector<std::string> checkpoints_, logs_;
    std::optional<protocol::Event> last_error_, done_;
    std::vector<std::string> read_notes_;
    std::int64_t malformed_ = 0, memory_events_ = 0, step_events_ = 0, dropped_logs_ = 0, checkpoint_events_ = 0;
    RunStatus status_ = RunStatus::Running;
    int exit_code_ = 0, exit_signal_ = 0;
};

// result.json as written by RunStore::write_result, read with every field's type checked.
struct RunResultFile {
    std::string status = "failed";   // "completed", "interrupted" or "failed"
    std::string status_text;
    int exit_code = 1, signal = 0;
    std::int64_t predicted_peak = 0, measured_peak = 0, predicted_total = 0, measured_rss_peak = 0;
    std::optional<bool> reached_peak;   // absent in records written before it was
    std::string note;   // non-empty when only part of the file was read, and why
    RunStatus run_status() const;
};

// One run folder as a history listing shows it, read without trusting it: the plan and how it
// ended, each read from a regular file of bounded size, with the types checked. Never throws:
// what could not be read is named in `problem`, and what could is kept.
struct RunListing {
    std::filesystem::path folder;
    nlohmann::json plan;                    // plan.json, or null when unreadable
    std::optional<RunResultFile> result;    // none: no result.json (running, or ended with its launcher)
    std::string problem;                    // empty for a readable record
    bool readable() const { return problem.empty(); }
};

// The caps of a run folder's files. Records stay far below them by design (RunStore::write_result
// keeps the newest kMaxCheckpoints); past them a file is refused or read in part.
inline constexpr std::uint64_t kMaxRunPlanBytes = 16ull << 20;
inline constexpr std::uint64_t kMaxRunResultBytes = 1ull << 20;        // read whole, as a tree
inline constexpr std::uint64_t kMaxRunResultScanBytes = 64ull << 20;   // read for its top-level fields only
inline constexpr std::uint64_t kMaxRunEventsBytes = 256ull << 20;      // events.jsonl: the first 256 MiB
inline constexpr std::size_t kMaxRunEventLineBytes = 4u << 20;

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
    // result.json: how it ended, the summary, the newest kMaxResultCheckpoints checkpoints.
    static void write_result(const std::filesystem::path& run, const RunRecord& record);
    static constexpr size_t kMaxResultCheckpoints = 100;
    // Newest first.
    std::vector<std::filesystem::path> list() const;
    // Replays events.jsonl; a run without result.json is reported as failed (it crashed
    // together with its launcher). A record that is not ours (a file that is a folder, pipe or
    // device, invalid JSON, wrong types) is an InputError naming the run, so listings name that
    // run as unreadable and go on; a file past its cap is read in part (RunRecord::read_notes).
    static RunRecord load(const std::filesystem::path& run);
    // The light read a history list needs (plan.json and result.json only); never throws.
    static RunListing read_listing(const std::filesystem::path& run);
    // The bounded, typed readers load and read_listing share. Throw InputError naming the file.
    static nlohmann::json read_plan(const std::filesystem::path& run);
    static std::optional<RunResultFile> read_result(const std::filesystem::path& run);
    // Calls `line` for each line of events.jsonl (missing: none), within kMaxRunEventsBytes;
    // lines past kMaxRunEventLineBytes are skipped and counted. Throws InputError for a
    // folder, pipe or device.
    static LineReadStats for_each_event_line(const std::filesystem::path& run,
                                           const std::function<void(std::string_view)>& line);

private:
    std::filesystem::path root_;
};

// Fits a framework's fixed costs from finished runs on this machine: total = context +
// (1 + slack) × peak allocated, by least squares of the relative error over (measured peak,
// measured RSS peak). Runs whose trainer predicted their speed also fit this machine's speed:
// speed_scale = the median of measured ÷ predicted tokens/s (the prediction taken without the
// scale it was made with).
struct Calibration {
    FrameworkProfile profile;       // the base profile with the fitted context, slack and speed scale
    size_t runs = 0;
    double error_before_percent = 0;   // mean |predicted total − measured RSS| / measured
    double error_after_percent = 0;
    size_t speed_runs = 0;             // runs with a predicted and a measured tokens/s
    double speed_error_before_percent = 0;   // mean |predicted − measured tokens/s| / measured, base profile's scale
    double speed_error_after_percent = 0;    // the same with the fitted scale
};
Calibration calibrate(const FrameworkProfile& base, const std::vector<RunRecord>& runs);
nlohmann::json framework_profile_to_json(const FrameworkProfile& f);

}  // namespace wingspan
