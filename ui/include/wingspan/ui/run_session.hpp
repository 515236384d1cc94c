#pragma once
// One wingspan-train run without a window (issue 27): what to launch (RunOptions, its command
// line, where the trainer and the sample data are) and RunSession, one trainer process with its
// RunRecord and run folder. No widgets: the run panel shows a session, the e2e tests drive one
// alone (tests/e2e/test_run_session.cpp). Its stdout is framed by core's bounded LineFramer and
// its stop follows core's supervisor policy (wingspan/line_framer.hpp, wingspan/process_stop.hpp).
#include <cstdint>
#include <deque>
#include <filesystem>
#include <optional>
#include <vector>

#include <QElapsedTimer>
#include <QObject>
#include <QPointF>
#include <QProcess>
#include <QString>
#include <QStringList>

#include <nlohmann/json.hpp>

#include "wingspan/line_framer.hpp"
#include "wingspan/process_stop.hpp"
#include "wingspan/run_record.hpp"
#include "wingspan/plan.hpp"
#include "wingspan/ui/run_device.hpp"
#include "wingspan/ui/run_ranks.hpp"

class QTimer;

namespace wingspan::ui {

// ------------------------------------------------------------------ launching ----

// What one run trains: the plan's setup as wingspan-train understands it, plus the things a
// plan does not say (model weights, data, steps, output folder, memory cap).
struct RunOptions {
    // Planned: the plan's own model with its pretrained weights, from a local folder or the
    // Hugging Face cache (model_dir; empty when it is not on this machine). BuiltIn (the demo)
    // and PlanArchitecture (random weights) only when the user chooses them.
    enum class ModelSource { BuiltIn, Folder, PlanArchitecture, Planned };
    ModelSource model_source = ModelSource::BuiltIn;
    QString model_dir;                 // Folder/Planned: a Hugging Face folder (config.json + safetensors)
    nlohmann::json model_config;       // PlanArchitecture: config.json written into the run folder
    QString model_label = "built-in"; // for the run's name and the history
    QString data_file;                 // empty: the bundled sample data
    Method method = Method::Lora;
    Objective objective = Objective::Sft;   // sft, dpo or orpo: what wingspan-train trains (issue 31)
    std::int64_t rank = kDefaultLoraRank;
    double alpha = kDefaultLoraAlpha;
    Precision precision = Precision::Fp32;
    bool precision_auto = true;        // --precision auto: the trainer picks (issue 35); `precision` unused
    std::int64_t seq = 128;
    std::int64_t batch = 4;
    std::int64_t grad_accum = 1;
    std::int64_t steps = 60;
    bool grad_checkpointing = false;
    QString out_dir;                   // empty: <run folder>/output
    std::int64_t memory_limit = 0;     // bytes; 0: none (--memory-limit)
    // Data-parallel ranks on this machine (--nproc; 1: one process) and how they share the
    // training state (--sharding ddp|zero1|zero2, passed only with several processes).
    std::int64_t processes = 1;
    Sharding sharding = Sharding::Ddp;
    int threads = 0;                   // 0: the trainer's default
    QStringList extra_args;            // appended as given (advanced use, tests)
    // --device (cpu, cuda:N, mps); empty: none passed (a trainer that cannot list devices).
    QString device;
    QString device_label;              // "cuda:0 · NVIDIA GeForce RTX 4090 · 24.0 GB", for the header
    // For the charts only: the machine whose ceiling is drawn.
    QString machine_id;
    QString machine_name;
    std::int64_t machine_ceiling = 0;

    nlohmann::json to_json() const;
    static RunOptions from_json(const nlohmann::json& j);   // missing fields keep defaults
};

// The plan's setup as wingspan-train can run it: Serve becomes LoRA, precisions the trainer
// lacks (fp16-mixed) become fp32, sequence/batch/rank/accumulation/checkpointing are kept.
// The ceiling is this plan's "this-machine" (else its first machine) when `lib` has it.
RunOptions run_options_for(const Plan& plan, const ProfileLibrary* lib);

// wingspan-train's command line for `o` (model folder, data file and output folder resolved).
QStringList trainer_arguments(const RunOptions& o, const QString& model_dir, const QString& data_file,
                              const QString& out_dir);

// Where wingspan-train is: $WINGSPAN_TRAINER, else next to `executable` (the wingspan
// program), else on $PATH. `problem` says what is wrong and how to build it.
struct TrainerLocation {
    QString path;
    QString problem;
    bool ok() const { return problem.isEmpty(); }
};
TrainerLocation find_trainer(const QString& executable);
TrainerLocation check_trainer(const QString& path);
// The bundled sample data, found the way wingspan-train finds its default.
QString find_sample_data(const QString& executable);

// Resident bytes of a process, read independently of what it reports (Linux /proc/<pid>/statm,
// macOS proc_pid_rusage); -1 when unknown.
std::int64_t process_rss_bytes(qint64 pid);

// ------------------------------------------------------------------ one run ----

// One trainer process and what it said. Reads stdout line by line into a RunRecord (bounded),
// appends every line to the run folder as it arrives, keeps the last stderr lines, samples the
// process RSS from outside, and stops it with SIGTERM, then SIGKILL after a timeout.
class RunSession : public QObject {
    Q_OBJECT
public:
    enum class State { Idle, Running, Stopping, Finished };
    enum class StopOutcome { None, Saved, ExitedAfterTerm, Killed };

    explicit RunSession(QObject* parent = nullptr);
    ~RunSession() override;   // a live trainer is stopped (SIGTERM, wait, SIGKILL)

    // Creates the run folder in `store`, writes plan.json and launches. False with a message
    // when the trainer or the data cannot be used (nothing is created then).
    bool start(const QString& trainer, const RunOptions& options, const nlohmann::json& plan,
               const std::filesystem::path& store_root, const QString& sample_data, QString* error = nullptr);
    // SIGTERM; SIGKILL when it has not exited after `kill_after_ms`.
    void stop(int kill_after_ms);
    void killNow();
    bool waitForFinished(int ms);

    State state() const { return state_; }
    bool isActive() const { return state_ == State::Running || state_ == State::Stopping; }
    StopOutcome stopOutcome() const { return stop_outcome_; }
    QString stopMessage() const { return stop_message_; }   // what the panel says about the stop
    QString launchError() const { return launch_error_; }
    const RunRecord& record() const { return record_; }
    const RunOptions& options() const { return options_; }
    const std::filesystem::path& folder() const { return folder_; }
    QString outDir() const { return out_dir_; }
    QStringList arguments() const { return arguments_; }
    qint64 pid() const { return pid_; }
    double elapsedSeconds() const;
    double stopDeadlineSeconds() const;     // seconds until SIGKILL while stopping, else 0
    // (seconds on the trainer's clock, resident bytes) read by Wingspan from /proc every 200 ms.
    // Until the first protocol line arrives the GUI's clock is used; then all samples shift
    // so they line up with the trainer's `t` (which starts after libtorch has loaded).
    const std::vector<QPointF>& rssSamples() const { return rss_; }
    // The device's allocator: reserved bytes over time, when the trainer reports them.
    const DeviceMemoryTrack& deviceMemory() const { return device_memory_; }
    // Each rank's memory when the run has several (--nproc); the record follows rank 0.
    const RankTrack& ranks() const { return ranks_; }
    std::int64_t rssPeak() const { return rss_peak_; }
    // The last stderr lines (at most kStderrKept) and new ones since the last take.
    const std::deque<QString>& stderrTail() const { return stderr_tail_; }
    QStringList takeNewStderr();
    std::int64_t stderrDropped() const { return stderr_dropped_; }
    std::int64_t linesReceived() const { return lines_; }
    // Stdout lines over kMaxLineBytes: each is recorded as a `line_too_long` error, not read.
    std::int64_t overLongLines() const { return stdout_lines_.over_long_lines(); }
    // Writes to the run folder that failed (a full disk, the folder gone) and the first reason;
    // the run goes on, the record in memory stays whole.
    std::int64_t lostWrites() const { return lost_writes_; }
    QString recordingError() const { return recording_error_; }
    // Set whenever something arrived; the panel clears it when it repaints.
    bool dirty() const { return dirty_; }
    void clearDirty() { dirty_ = false; }

    static constexpr size_t kMemorySamples = 2048;
    static constexpr size_t kStderrKept = 2000;
    static constexpr size_t kRssSamples = 2048;
    static constexpr qint64 kMaxLineBytes = qint64(kMaxProtocolLineBytes);
    static constexpr qint64 kMaxStderrLineBytes = 8 << 10;
    static constexpr qint64 kMaxStderrFileBytes = 16 << 20;

signals:
    void started();
    void stateChanged();
    void finished();

private:
    void onStdout();
    void onStderr();
    void ingestStderr(const QByteArray& chunk, bool flush);
    QString stderrLine(const FramedLine& line);   // kept in the tail; returns the line as shown
    void onFinished(int code, QProcess::ExitStatus status);
    void onError(QProcess::ProcessError error);
    void sampleRss();
    void ingestLines(const QByteArray& chunk, bool flush);
    void finishRun(int code, int signal);
    void sendStopSignal(int signal);
    void onKillTimer();
    // Runs one write to the run folder; a failure is counted and its reason kept, never thrown.
    template <typename Write>
    void recordWrite(Write&& write);

    QProcess* process_ = nullptr;
    QTimer* rss_timer_ = nullptr;
    QTimer* kill_timer_ = nullptr;
    RunRecord record_;
    RunOptions options_;
    std::filesystem::path folder_;
    QString out_dir_;
    QStringList arguments_;
    LineFramer stdout_lines_{kMaxProtocolLineBytes}, stderr_lines_{std::size_t(kMaxStderrLineBytes)};
    process::StopLadder stop_ladder_;
    std::int64_t lost_writes_ = 0;
    QString recording_error_;
    std::deque<QString> stderr_tail_;
    QStringList stderr_new_;
    std::int64_t stderr_dropped_ = 0, stderr_file_bytes_ = 0, lines_ = 0;
    std::vector<QPointF> rss_;
    DeviceMemoryTrack device_memory_;
    RankTrack ranks_;
    void ingestEvent(const std::string& line);
    std::int64_t rss_peak_ = 0;
    std::optional<double> clock_offset_;   // GUI seconds − trainer seconds
    size_t rss_written_ = 0;
    void writeRss();
    QElapsedTimer clock_, stop_clock_;
    int kill_after_ms_ = 0;
    qint64 pid_ = 0;
    State state_ = State::Idle;
    StopOutcome stop_outcome_ = StopOutcome::None;
    bool stop_requested_ = false, killed_ = false, finished_ = false;
    bool killed_on_request_ = false;   // Kill now, not the grace running out
    QString stop_message_, launch_error_;
    bool dirty_ = false;
};

}  // namespace wingspan::ui
