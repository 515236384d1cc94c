#pragma once
// The run panel (issue 5): launches wingspan-train with a plan's settings, shows what it
// really uses while it runs (memory per component against the prediction and a machine's
// ceiling, the process RSS sampled independently, loss, tokens/s, progress, stderr), stops it
// cleanly, compares predicted and measured at the end and keeps every run in the history.
//
// The layers, each usable alone:
//   RunOptions / trainer_arguments / find_trainer   what to launch and where the trainer is
//   RunSession (run_session.hpp)                     one trainer process (QProcess), its
//                                                    RunRecord and run folder; no widgets
//   RunController (run_controller.hpp)               the session, its states, Train ▶
//   run_status.hpp, RunHistoryModel                  status text, ETA, progress; the history
//   TimeChartData / TimeChartWidget (run_charts.hpp) the charts (Qt Charts)
//   RunPanel                                         the assembly of the views (ui/src):
//     RunTopBar (banner, run header, buttons), RunForm (what trains), RunStatusLine,
//     RunLiveCharts, RunResultsView (summary, chart, log, Try it, history)
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
#include "wingspan/plan.hpp"
#include "wingspan/ui/run_charts.hpp"
#include "wingspan/ui/run_controller.hpp"
#include "wingspan/ui/run_device.hpp"
#include "wingspan/ui/run_history_model.hpp"
#include "wingspan/ui/run_model.hpp"
#include "wingspan/ui/model_download_dialog.hpp"
#include "wingspan/ui/run_ranks.hpp"
#include "wingspan/ui/run_session.hpp"
#include "wingspan/ui/run_try_it.hpp"

class QAction;
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
class QTreeView;

namespace wingspan::ui {

class MainWindow;
class PairGrid;
class RunForm;
class RunStatusLine;
class RunTopBar;
class RunLiveCharts;
class RunResultsView;
class TableModel;

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
    bool followsPlanner() const;
    void followPlanner();
    // The plan's model and where its weights are (empty folder: not on this machine).
    const PlannedModel& plannedModel() const;
    // Devices from `wingspan-train devices` (the CPU alone when the trainer cannot list them).
    const DeviceChoice& devices() const;
    void refreshDevices();                      // asks the trainer again (asynchronously)
    bool devicesPending() const;

    void setTrainerPath(const QString& path);  // overrides the search (tests, odd installs)
    TrainerLocation trainer() const { return controller_->trainer(); }
    void setStoreRoot(const std::filesystem::path& root);
    std::filesystem::path storeRoot() const { return controller_->storeRoot(); }
    void setKillTimeout(int ms) { controller_->setKillTimeout(ms); }
    int killTimeout() const { return controller_->killTimeout(); }
    void setUnit(ByteUnit unit);

    // The session, its states and Train ▶ (run_controller.hpp).
    RunController* controller() const { return controller_; }
    RunSession* session() const { return controller_ ? controller_->session() : nullptr; }
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
    TryItBox* tryIt() const;

    // History.
    void refreshHistory();
    std::vector<std::filesystem::path> historyRuns() const;
    RunHistoryModel* historyModel() const { return history_model_; }   // what the history lists
    bool openRun(const std::filesystem::path& folder, QString* error = nullptr);
    void showLive();
    bool overlayRun(const std::filesystem::path& folder, QString* error = nullptr);
    void clearOverlay();
    bool hasOverlay() const { return bool(overlay_); }
    // Writes the shown run's charts (png/svg/pdf) and summary table (csv/md) into `dir`.
    ExportResult exportCharts(const QString& dir, const QStringList& formats, const ImageOptions& options);

    // The planner the settings follow: read when the panel shows, once planSourceChanged() said
    // it moved (not on every slider step: the planner's frame budget is not ours to spend).
    void setPlanSource(std::function<Plan()> plan, std::function<ByteUnit()> unit);
    void planSourceChanged();
    // Train ▶, the planner's action: shown, and enabled with its tooltip when the plan trains,
    // disabled with the reason as its tooltip when it does not (Serve, KTO).
    void setTrainAction(QAction* action);

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
    QWidget* buildHistoryTab();    // run_history.cpp: the results view's History page
    void updateTrainerBanner();
    void updateFormEnabled();
    void setSettingsVisible(bool on);
    void showStartError(const QString& error);
    void onRunStarted();
    void onSessionFinished();
    void refresh(bool force = false);       // rebuilds charts and texts from the shown run
    void refreshSummary();
    void appendLog();
    void exportMenu(int which);
    void exportAllDialog();
    RunChartInputs chartInputs() const;
    std::optional<Loaded> loadRun(const std::filesystem::path& folder, QString* error) const;
    void updateRunHeader();
    QString verdictLine(const RunRecord& r, const RunOptions& o, const DeviceMemoryTrack* device,
                        const RankTrack* ranks = nullptr) const;

    void takeFitOffer(const QString& link);                 // run_guard.cpp
    void onDownloadChoice(ModelDownloadDialog* dialog);     // run_download.cpp

    // The planner the settings follow, read when the panel shows once it moved.
    struct PlannerSource {
        std::function<Plan()> plan;
        std::function<ByteUnit()> unit;
        bool moved = false;
    };
    PlannerSource planner_;
    RunController* controller_ = nullptr;    // run_controller.hpp: the session, its states, Train ▶
    const ProfileLibrary* lib_ = nullptr;
    ByteUnit unit_ = ByteUnit::GB;
    std::optional<Loaded> loaded_;           // a saved run shown instead of the live one
    std::optional<Loaded> overlay_;          // a saved run drawn over the shown one
    struct LogFeed {
        size_t logs_seen = 0;                // the live record's log lines already in the Log tab
        bool dropped_noted = false;          // "… log lines dropped" said once
    };
    LogFeed log_feed_;
    int repaints_ = 0;
    QString fit_offer_;                      // links to what fits, after a run the guard refused
    QPointer<ModelDownloadDialog> download_dialog_;

    // The parts, top to bottom.
    RunTopBar* top_ = nullptr;               // run_top_bar.hpp: banner, run header, buttons
    RunForm* form_ = nullptr;                // run_form.hpp
    RunStatusLine* status_line_ = nullptr;   // run_status_line.hpp
    QSplitter* split_ = nullptr;             // the live charts over the results
    RunLiveCharts* live_charts_ = nullptr;   // run_live_charts.hpp
    RunResultsView* results_ = nullptr;      // run_results_view.hpp: summary, chart, log, Try it, history
    QTreeView* history_ = nullptr;           // the History page, over:
    RunHistoryModel* history_model_ = nullptr;
};

// Adds the run panel as a tab of the planner window, connects "Train ▶" to it and guards
// closing the window during a run. Returns the panel (owned by the window).
RunPanel* install_run_panel(MainWindow& window, const QString& executable);

}  // namespace wingspan::ui
