#pragma once
// The run panel (issue 5): launches wingspan-train with a plan's settings, shows what it
// really uses while it runs (memory per component against the prediction and a machine's
// ceiling, the process RSS sampled independently, loss, tokens/s, progress, stderr), stops it
// cleanly, compares predicted and measured at the end and keeps every run in the history.
//
// Three layers, each usable alone:
//   RunOptions / trainer_arguments / find_trainer   what to launch and where the trainer is
//   RunSession                                       one trainer process (QProcess), its
//                                                    RunRecord and run folder; no widgets
//   TimeChartData / TimeChartWidget (run_charts.hpp) the charts (Qt Charts)
//   RunPanel                                         the panel, assembled from parts:
//     run_form.cpp, run_live_view.cpp, run_results.cpp, run_history.cpp, run_compare.cpp
// Nothing here computes memory: the prediction comes from the trainer's `predicted` event
// (core linked into the trainer), the measurements from its `memory` events and /proc.
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <QElapsedTimer>
#include <QObject>
#include <QPointF>
#include <QPointer>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "wingspan/run_record.hpp"
#include "wingspan/ui/chart.hpp"
#include "wingspan/ui/export.hpp"
#include "wingspan/ui/plan.hpp"
#include "wingspan/ui/run_charts.hpp"
#include "wingspan/ui/run_device.hpp"
#include "wingspan/ui/run_model.hpp"
#include "wingspan/ui/model_download_dialog.hpp"
#include "wingspan/ui/run_ranks.hpp"
#include "wingspan/ui/run_try_it.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTabWidget;
class QTableView;
class QTimer;
class QToolButton;
class QTreeWidget;

namespace wingspan::ui {

class MainWindow;
class PairGrid;
class TableModel;

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
    // Set whenever something arrived; the panel clears it when it repaints.
    bool dirty() const { return dirty_; }
    void clearDirty() { dirty_ = false; }

    static constexpr size_t kMemorySamples = 2048;
    static constexpr size_t kStderrKept = 2000;
    static constexpr size_t kRssSamples = 2048;
    static constexpr qint64 kMaxLineBytes = 4 << 20;
    static constexpr qint64 kMaxStderrFileBytes = 16 << 20;

signals:
    void started();
    void stateChanged();
    void finished();

private:
    void onStdout();
    void onStderr();
    void ingestStderr(const QByteArray& chunk, bool flush);
    void onFinished(int code, QProcess::ExitStatus status);
    void onError(QProcess::ProcessError error);
    void sampleRss();
    void ingestLines(const QByteArray& chunk, bool flush);
    void finishRun(int code, int signal);

    QProcess* process_ = nullptr;
    QTimer* rss_timer_ = nullptr;
    QTimer* kill_timer_ = nullptr;
    RunRecord record_;
    RunOptions options_;
    std::filesystem::path folder_;
    QString out_dir_;
    QStringList arguments_;
    QByteArray stdout_buf_, stderr_buf_;
    bool skipping_long_line_ = false;
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

// ------------------------------------------------------------------ the panel ----

class RunPanel : public QWidget {
    Q_OBJECT
public:
    // `executable`: the wingspan program (the trainer and sample data are found beside it).
    explicit RunPanel(const QString& executable, const ProfileLibrary* lib = nullptr, QWidget* parent = nullptr);
    ~RunPanel() override;

    // Fills the launch settings from a plan (does not start).
    void setPlan(const Plan& plan);
    RunOptions options() const;                // the settings as the form shows them
    void setOptions(const RunOptions& options);
    // The "Train ▶" slot: settings from the plan, then start (asks first if a run is live).
    void trainPlan(const Plan& plan);
    bool start(QString* error = nullptr);      // launches with the form's settings
    // Start ▶ and Train ▶: starts, or when the plan's model is neither a local folder nor in the
    // Hugging Face cache, first offers its download (size shown) or another model to train.
    void startOrOfferDownload();
    // Train ▶'s guard (run_guard.hpp): false, with the reason in `error` and what fits offered
    // in the status line, when the run would not fit this machine or its memory cap.
    bool runFits(const RunOptions& options, QString* error);
    // The open download offer, if any (tests drive it).
    ModelDownloadDialog* downloadDialog() const { return download_dialog_; }
    void stop();                                // SIGTERM, SIGKILL after killTimeout()
    void killNow();
    bool isRunning() const;

    // Honest Train ▶: why this plan cannot be trained (Serve plans), empty when it can. The
    // planner's Train ▶ button follows trainAvailabilityChanged (install_run_panel wires it).
    QString trainBlockedReason() const;
    // The run header: "Planner: X → this run: Y" (HTML) whenever the run differs from the plan.
    QString runHeaderText() const;
    PlanRunComparison planComparison() const;
    // The settings follow the planner until the user edits one; followPlanner() goes back.
    bool followsPlanner() const { return follow_planner_; }
    void followPlanner();
    // The plan's model and where its weights are (empty folder: not on this machine).
    const PlannedModel& plannedModel() const { return planned_; }
    // Devices from `wingspan-train devices` (the CPU alone when the trainer cannot list them).
    const DeviceChoice& devices() const { return devices_; }
    void refreshDevices();                      // asks the trainer again (asynchronously)
    bool devicesPending() const { return bool(devices_process_); }

    void setTrainerPath(const QString& path);  // overrides the search (tests, odd installs)
    TrainerLocation trainer() const { return trainer_; }
    void setStoreRoot(const std::filesystem::path& root);
    std::filesystem::path storeRoot() const { return store_root_; }
    void setKillTimeout(int ms) { kill_timeout_ms_ = ms; }
    int killTimeout() const { return kill_timeout_ms_; }
    void setUnit(ByteUnit unit);

    RunSession* session() const { return session_; }
    // The run the charts show: the live one, or one opened from the history.
    const RunRecord* shownRecord() const;
    std::filesystem::path shownFolder() const;
    // Each rank's memory for the shown run (world_size 1 for a single process).
    const RankTrack* shownRanks() const;
    bool showingHistory() const { return bool(loaded_); }
    const TimeChartData& memoryChart() const;
    const TimeChartData& lossChart() const;
    const TimeChartData& throughputChart() const;
    ChartData summaryChart() const;
    Table summaryTable() const;
    // "Peak on cuda:0: allocated …, reserved … — … of <device>'s … (fits, … free)"; on the CPU
    // the process total against the machine's ceiling.
    QString verdictText() const;
    QString statusText() const;                // the line under the buttons
    QString stopMessage() const;
    QString logText() const;
    QString sampleText() const;
    QString checkpointText() const;
    int repaintCount() const { return repaints_; }
    // "Try it" on the shown run: a prompt through the fine-tuned model (run_try_it.hpp).
    TryItBox* tryIt() const { return try_it_; }

    // History.
    void refreshHistory();
    std::vector<std::filesystem::path> historyRuns() const;
    bool openRun(const std::filesystem::path& folder, QString* error = nullptr);
    void showLive();
    bool overlayRun(const std::filesystem::path& folder, QString* error = nullptr);
    void clearOverlay();
    bool hasOverlay() const { return bool(overlay_); }
    // Writes the shown run's charts (png/svg/pdf) and summary table (csv/md) into `dir`.
    ExportResult exportCharts(const QString& dir, const QStringList& formats, const ImageOptions& options);

    // Closing `window` during a run asks, then stops the trainer and closes once it exited.
    void guardClose(QWidget* window);
    // True when the window may close now; otherwise a stop may have been started.
    bool confirmClose(QWidget* window);

signals:
    void runStarted();
    void runFinished();
    // The plan shown can (not) be trained, and why not.
    void trainAvailabilityChanged(bool can_train, const QString& reason);
    void devicesChanged();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void showEvent(QShowEvent* e) override;

private:
    friend RunPanel* install_run_panel(MainWindow& window, const QString& executable);
    bool plan_pending_ = false;
    std::function<Plan()> plan_source_;
    std::function<ByteUnit()> unit_source_;
    struct Loaded {
        std::filesystem::path folder;
        RunRecord record;
        RunOptions options;
        std::vector<QPointF> rss;
        QString log;
        QString label;
        QString stop_message;
        DeviceMemoryTrack device;
        RankTrack ranks;
    };
    void buildUi();
    QWidget* buildForm();
    // The form's rows (run_form.cpp), in order, and the edits that stop it following the planner.
    void addModelRows(PairGrid* g);
    void addSetupRows(PairGrid* g);
    void addPathRow(PairGrid* g);
    void addMachineRow(PairGrid* g);
    void addRanksRow(PairGrid* g);
    void connectFormEdits();
    QWidget* buildCharts();
    QWidget* buildBottom();        // run_results.cpp: summary, chart, log; the history tab from:
    QWidget* buildHistoryTab();    // run_history.cpp
    void populateModelSources();
    void updateTrainerBanner();
    void updateFormEnabled();
    void setSettingsVisible(bool on);
    void showStartError(const QString& error);
    void onSessionFinished();
    void refresh(bool force = false);       // rebuilds charts and texts from the shown run
    void refreshSummary();
    void appendLog();
    void exportMenu(int which);
    void exportAllDialog();
    RunChartInputs chartInputs() const;
    std::optional<Loaded> loadRun(const std::filesystem::path& folder, QString* error) const;
    void chooseModelFolder();
    void chooseDataFile();
    void chooseOutDir();
    void onFormEdited();                     // run_form.cpp: a field changed by the user
    void updateRunHeader();
    void populateDevices();
    QString verdictLine(const RunRecord& r, const RunOptions& o, const DeviceMemoryTrack* device,
                        const RankTrack* ranks = nullptr) const;

    QString executable_;
    const ProfileLibrary* lib_ = nullptr;
    Plan plan_;
    bool has_plan_ = false;
    TrainerLocation trainer_;
    QString trainer_override_;
    QString sample_data_;
    std::filesystem::path store_root_;
    int kill_timeout_ms_ = 60000;
    ByteUnit unit_ = ByteUnit::GB;
    RunSession* session_ = nullptr;
    std::optional<Loaded> loaded_;
    std::optional<Loaded> overlay_;
    size_t logs_seen_ = 0;
    bool logs_dropped_noted_ = false;
    int repaints_ = 0;
    QElapsedTimer charts_clock_;   // the live charts' last redraw
    QPointer<QWidget> closing_window_;
    QString last_model_dir_;
    bool follow_planner_ = true;
    bool syncing_ = false;                   // the form is being filled by code, not the user
    std::optional<RunOptions::ModelSource> model_choice_;   // what the user chose to train
    PlannedModel planned_;
    DeviceChoice devices_;
    QString device_choice_;                  // the device id the user chose
    QPointer<QProcess> devices_process_;
    QStringList extra_args_;
    int threads_ = 0;

    TimeChartData memory_data_, loss_data_, throughput_data_;

    // Form.
    QComboBox* model_ = nullptr;
    QPushButton* model_browse_ = nullptr;
    QLabel* model_note_ = nullptr;
    QComboBox* method_ = nullptr;
    QSpinBox* rank_ = nullptr;
    QSpinBox* seq_ = nullptr;
    QSpinBox* batch_ = nullptr;
    QSpinBox* accum_ = nullptr;
    QSpinBox* steps_ = nullptr;
    QComboBox* precision_ = nullptr;
    QCheckBox* ckpt_ = nullptr;
    QCheckBox* whole_process_ = nullptr;
    QLineEdit* data_ = nullptr;
    QLineEdit* out_ = nullptr;
    QComboBox* machine_ = nullptr;
    QComboBox* cap_mode_ = nullptr;
    QDoubleSpinBox* cap_gb_ = nullptr;
    QPushButton* start_ = nullptr;
    QPushButton* stop_ = nullptr;
    QLabel* banner_ = nullptr;
    QLabel* run_header_ = nullptr;
    QPushButton* follow_ = nullptr;
    QComboBox* device_ = nullptr;
    QSpinBox* processes_ = nullptr;
    QComboBox* sharding_ = nullptr;
    QWidget* form_ = nullptr;
    QToolButton* settings_toggle_ = nullptr;
    QLabel* settings_summary_ = nullptr;
    QSplitter* split_ = nullptr;

    // Status.
    QLabel* status_ = nullptr;
    QString fit_offer_;   // links to what fits, after a run the guard refused
    void takeFitOffer(const QString& link);
    QProgressBar* progress_ = nullptr;
    QLabel* view_banner_ = nullptr;
    QPushButton* back_live_ = nullptr;

    // Charts.
    TimeChartWidget* memory_chart_ = nullptr;
    TimeChartWidget* loss_chart_ = nullptr;
    TimeChartWidget* throughput_chart_ = nullptr;

    // Bottom.
    QTabWidget* bottom_ = nullptr;
    int log_tab_ = 2;
    int chart_tab_ = 1;
    QTableView* summary_view_ = nullptr;
    TableModel* summary_model_ = nullptr;
    RunSummaryChartView* summary_chart_ = nullptr;
    QLabel* summary_text_ = nullptr;
    QPlainTextEdit* sample_ = nullptr;
    QPlainTextEdit* log_ = nullptr;
    TryItBox* try_it_ = nullptr;
    QPointer<ModelDownloadDialog> download_dialog_;
    void onDownloadChoice(ModelDownloadDialog* dialog);   // run_download.cpp
    void chooseModelSource(RunOptions::ModelSource source);
    QTreeWidget* history_ = nullptr;
    QToolButton* export_ = nullptr;
    QTimer* repaint_timer_ = nullptr;
};

// Adds the run panel as a tab of the planner window, connects "Train ▶" to it and guards
// closing the window during a run. Returns the panel (owned by the window).
RunPanel* install_run_panel(MainWindow& window, const QString& executable);

}  // namespace wingspan::ui
