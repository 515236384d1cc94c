// The run panel: assembles its parts (the form, the live view, the results, the history),
// starts and stops runs, and keeps the status line and the progress bar up to date.
#include <algorithm>
#include <fstream>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDesktopServices>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QTreeWidget>
#include <QUrl>
#include <QVBoxLayout>

#include "wingspan/ui/run_panel.hpp"
#include "wingspan/ui/run_status.hpp"
#include "wingspan/ui/widgets.hpp"

#include "run/run_form.hpp"
#include "run/run_status_line.hpp"
#include "run/run_top_bar.hpp"
#include "run/run_live_charts.hpp"
#include "run/run_panel_text.hpp"
#include "run/run_results_view.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan::ui {

using namespace run_text;

RunPanel::RunPanel(const QString& executable, const ProfileLibrary* lib, QWidget* parent)
    : QWidget(parent), lib_(lib), controller_(new RunController(executable, this)) {
    setObjectName("runPanel");
    buildUi();
    connect(controller_, &RunController::started, this, &RunPanel::onRunStarted);
    connect(controller_, &RunController::stateChanged, this, [this] {
        updateFormEnabled();
        refresh(true);
    });
    connect(controller_, &RunController::finished, this, &RunPanel::onSessionFinished);
    connect(controller_, &RunController::tick, this, [this] { refresh(false); });
    updateTrainerBanner();
    updateFormEnabled();   // no run yet: Start ▶ on, Stop ■ off
    refreshDevices();
    refreshHistory();
    refresh(true);
    if (!historyRuns().empty()) results_->showTab(RunResultsView::History);   // past runs, until there is a new one
}

RunPanel::~RunPanel() {
    // Stop a live trainer before the widgets it reports to are gone.
    controller_->disconnect(this);
    delete controller_;
    controller_ = nullptr;
}


// ------------------------------------------------------------------ building ----

void RunPanel::buildUi() {
    auto* root = new QVBoxLayout(this);
    root->setContentsMargins(6, 6, 6, 6);
    root->setSpacing(5);

    top_ = new RunTopBar;
    connect(top_, &RunTopBar::followClicked, this, &RunPanel::followPlanner);
    connect(top_, &RunTopBar::settingsToggled, this, &RunPanel::setSettingsVisible);
    connect(top_, &RunTopBar::startClicked, this, &RunPanel::startOrOfferDownload);
    connect(top_, &RunTopBar::stopClicked, this, [this] {
        if (controller_->isStopping()) killNow();
        else stop();
    });
    connect(top_, &RunTopBar::exportChosen, this, &RunPanel::exportMenu);
    connect(top_, &RunTopBar::exportAllChosen, this, &RunPanel::exportAllDialog);
    root->addWidget(top_);

    form_ = new RunForm(lib_, controller_->sampleData());
    connect(form_, &RunForm::changed, this, &RunPanel::updateRunHeader);
    connect(form_, &RunForm::devicesChanged, this, &RunPanel::devicesChanged);
    root->addWidget(form_);

    status_line_ = new RunStatusLine;
    connect(status_line_, &RunStatusLine::linkActivated, this, &RunPanel::takeFitOffer);
    connect(status_line_, &RunStatusLine::wholeProcessToggled, this, [this] {
        refresh(true);
        refreshSummary();
    });
    connect(status_line_, &RunStatusLine::backClicked, this, &RunPanel::showLive);
    root->addWidget(status_line_);

    split_ = new QSplitter(Qt::Vertical);
    split_->setChildrenCollapsible(false);
    live_charts_ = new RunLiveCharts;
    split_->addWidget(live_charts_);
    results_ = new RunResultsView(buildHistoryTab());
    connect(results_, &RunResultsView::chartTabChosen, this, [this] {
        // The bar chart needs some height to be read: make room when it is chosen.
        const QList<int> sizes = split_->sizes();
        if (sizes.size() == 2 && sizes[1] < 340 && sizes[0] + sizes[1] > 700) split_->setSizes({sizes[0] + sizes[1] - 340, 340});
    });
    split_->addWidget(results_);
    split_->setStretchFactor(0, 3);
    split_->setStretchFactor(1, 2);
    root->addWidget(split_, 1);
}

void RunPanel::setSettingsVisible(bool on) {
    form_->setVisible(on);
    top_->showSettingsOpen(on, on ? QString() : form_->summaryText());
}


void RunPanel::updateTrainerBanner() { top_->showTrainer(controller_->recheckTrainer()); }

void RunPanel::updateFormEnabled() {
    const bool active = isRunning();
    form_->setEnabled(!active);
    form_->setRunning(active);
    top_->showRunState(active, controller_->isStopping());
}


// ------------------------------------------------------------------ running ----

bool RunPanel::isRunning() const { return controller_ && controller_->isRunning(); }

bool RunPanel::start(QString* error) {
    fit_offer_.clear();
    if (isRunning()) {
        if (error) *error = "a run is already going; stop it first";
        return false;
    }
    updateTrainerBanner();
    if (!controller_->trainer().ok()) {
        if (error) *error = controller_->trainer().problem;
        return false;
    }
    const RunOptions o = options();
    if (!runFits(o, error)) return false;
    return controller_->start(o, form_->hasPlan() ? form_->plan().to_json() : json(nullptr), error);   // onRunStarted follows
}

void RunPanel::onRunStarted() {
    loaded_.reset();
    log_feed_.logs_seen = 0;
    log_feed_.dropped_noted = false;
    results_->log()->clear();
    results_->log()->appendPlainText("$ " + controller_->trainer().path + " " + session()->arguments().join(' '));
    results_->log()->appendPlainText("run folder: " + qs(session()->folder().string()));
    results_->showTab(RunResultsView::Log);
    setSettingsVisible(false);
    const int h = std::max(400, split_->height());
    split_->setSizes({h * 70 / 100, h * 30 / 100});
    updateFormEnabled();
    refreshHistory();
    refresh(true);
    emit runStarted();
}

void RunPanel::trainPlan(const Plan& plan) {
    if (isRunning()) {
        status_line_->setStatus("<b>A run is in progress.</b> Stop it first to train the new plan.");
        return;
    }
    // Train ▶ trains what the plan shows: the settings follow it again.
    form_->setFollowsPlanner(true);
    setPlan(plan);
    if (const QString why = cannot_train_reason(plan); !why.isEmpty()) {
        status_line_->setStatus("<b>Not started:</b> " + why.toHtmlEscaped());
        return;
    }
    startOrOfferDownload();
}

void RunPanel::showStartError(const QString& error) {
    // A missing trainer is explained in the banner above; the status line only points there.
    const QString text = controller_->trainer().ok() ? error.toHtmlEscaped()
                                       : "wingspan-train is missing; the note above says how to build it (./dev.sh run).";
    status_line_->setStatus("<span style='color:#c2410c'><b>Cannot start:</b> " + text + "</span>" + fit_offer_);
}

void RunPanel::stop() { controller_->stop(); }      // stateChanged repaints

void RunPanel::killNow() { controller_->killNow(); }

void RunPanel::onSessionFinished() {
    updateFormEnabled();
    refresh(true);
    refreshSummary();
    refreshHistory();
    results_->showTab(RunResultsView::Summary);
    const int h = std::max(400, split_->height());
    split_->setSizes({h * 56 / 100, h * 44 / 100});   // the summary gets room at the end
    emit runFinished();   // the controller then closes a window waiting for the trainer
}


QString RunPanel::statusText() const { return status_line_->statusText(); }
QString RunPanel::stopMessage() const {
    if (loaded_) return {};
    return session() ? session()->stopMessage() : QString();
}

void RunPanel::refresh(bool force) {
    // Repaint only when something arrived (or to count down a stop), at most 5 times a second.
    if (!force && (!session() || (!session()->dirty() && session()->state() != RunSession::State::Stopping))) return;
    if (session()) session()->clearDirty();
    ++repaints_;
    // During a live run the charts redraw at most 2.5 times a second (the status line 5 times):
    // on a busy CPU reading the trainer's events comes before drawing them.
    const bool live_tick = !force && session() && session()->isActive() && !loaded_;
    if (live_charts_->due(live_tick)) live_charts_->show(chartInputs());
    appendLog();

    QString view;
    if (loaded_) view = "Showing the saved run <b>" + loaded_->label.toHtmlEscaped() + "</b> (" +
                        qs(loaded_->record.status_text()).toHtmlEscaped() + ").";
    if (overlay_)
        view += " Compared with <b>B</b>: " + describe(overlay_->options).toHtmlEscaped() + " (" +
                overlay_->label.toHtmlEscaped() + "), dotted lines.";
    status_line_->showViewBanner(view, !loaded_ ? QString() : session() ? "Back to the last run" : "Close");

    const bool live = !loaded_ && session() && session()->isActive();
    RunStatusFacts f;
    f.record = shownRecord();
    f.trainer_ok = controller_->trainer().ok();
    if (f.record) {
        f.planned_steps = (loaded_ ? loaded_->options : session()->options()).steps;
        f.live = live;
        f.stopping = live && session()->state() == RunSession::State::Stopping;
        f.stop_deadline_s = live ? session()->stopDeadlineSeconds() : 0;
        f.elapsed_s = live ? session()->elapsedSeconds() : 0;
        if (!live && !loaded_) f.launch_error = session()->launchError();
        if (const RankTrack* ranks = shownRanks(); ranks && ranks->multi()) f.ranks_summary = ranks->summaryText(unit_);
        f.stderr_dropped = live ? std::int64_t(session()->stderrDropped()) : 0;
        f.stop_message = stopMessage();
    }
    const ChartStyle style = ChartStyle::from_palette(palette());
    const QColor highlight = palette().color(QPalette::Highlight);
    status_line_->setStatus(run_status_html(f, {highlight, style.tight, style.fits, style.tight, style.no}));
    status_line_->setProgress(run_progress(f));
    if (!f.record) return;
    if (live || loaded_) refreshSummary();
}


// ------------------------------------------------------------------ closing ----

void RunPanel::guardClose(QWidget* window) {
    if (window) window->installEventFilter(this);
}

bool RunPanel::confirmClose(QWidget* window) {
    if (!isRunning()) return true;
    if (controller_->closing()) return false;   // already stopping for this close
    QMessageBox box(QMessageBox::Question, "A training run is in progress", "Stop the run and close Wingspan?",
                    QMessageBox::NoButton, this);
    box.setObjectName("closeDuringRun");
    box.setInformativeText(QString("Wingspan sends SIGTERM: the trainer finishes its step, saves a checkpoint and exits "
                                   "(it is killed if that takes more than %1 s). The run stays in the history.")
                               .arg(controller_->killTimeout() / 1000));
    QPushButton* yes = box.addButton("Stop and close", QMessageBox::AcceptRole);
    box.addButton("Keep running", QMessageBox::RejectRole);
    box.setDefaultButton(yes);
    box.exec();
    if (box.clickedButton() != yes) return false;
    controller_->closeWhenFinished(window);
    stop();
    return false;
}

void RunPanel::showEvent(QShowEvent* e) {
    if (planner_.unit && planner_.unit() != unit_) setUnit(planner_.unit());
    if (planner_.moved && planner_.plan && !isRunning()) {
        planner_.moved = false;
        setPlan(planner_.plan());
    }
    QWidget::showEvent(e);
}

bool RunPanel::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::Close && watched->isWidgetType()) {
        if (!confirmClose(static_cast<QWidget*>(watched))) {
            event->ignore();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

// ------------------------------------------------------------------ the form ----

void RunPanel::setPlan(const Plan& plan) {
    controller_->showTrainAvailability(cannot_train_reason(plan));
    emit trainAvailabilityChanged(cannot_train_reason(plan).isEmpty(), cannot_train_reason(plan));
    form_->setPlan(plan);
}

RunOptions RunPanel::options() const { return form_->options(); }
void RunPanel::setOptions(const RunOptions& options) { form_->setOptions(options); }
bool RunPanel::followsPlanner() const { return form_->followsPlanner(); }
void RunPanel::followPlanner() { form_->followPlanner(); }
const PlannedModel& RunPanel::plannedModel() const { return form_->plannedModel(); }
const DeviceChoice& RunPanel::devices() const { return form_->devices(); }
void RunPanel::refreshDevices() { form_->refreshDevices(controller_->trainer()); }
bool RunPanel::devicesPending() const { return form_->devicesPending(); }
QString RunPanel::trainBlockedReason() const { return form_->trainBlockedReason(); }
PlanRunComparison RunPanel::planComparison() const { return form_->planComparison(); }

void RunPanel::setTrainerPath(const QString& path) {
    controller_->setTrainerPath(path);
    updateTrainerBanner();
    refreshDevices();
}

void RunPanel::setStoreRoot(const fs::path& root) {
    controller_->setStoreRoot(root);
    refreshHistory();
}

void RunPanel::setUnit(ByteUnit unit) {
    unit_ = unit;
    form_->setUnit(unit);
    refresh(true);
    refreshSummary();
    refreshHistory();
}

void RunPanel::setPlanSource(std::function<Plan()> plan, std::function<ByteUnit()> unit) {
    planner_.plan = std::move(plan);
    planner_.unit = std::move(unit);
}

void RunPanel::planSourceChanged() {
    planner_.moved = true;
    // Train ▶ follows the planner at once, the settings when the panel shows.
    if (planner_.plan) controller_->showTrainAvailability(cannot_train_reason(planner_.plan()));
}

void RunPanel::setTrainAction(QAction* action) {
    controller_->setTrainAction(action, planner_.plan ? cannot_train_reason(planner_.plan()) : trainBlockedReason());
}

}  // namespace wingspan::ui
