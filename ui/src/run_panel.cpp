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

#include "wingspan/ui/main_window.hpp"
#include "wingspan/ui/run_panel.hpp"
#include "wingspan/ui/run_status.hpp"
#include "wingspan/ui/widgets.hpp"

#include "run_form.hpp"
#include "run_panel_text.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan::ui {

using namespace run_text;

RunPanel::RunPanel(const QString& executable, const ProfileLibrary* lib, QWidget* parent)
    : QWidget(parent), executable_(executable), lib_(lib), controller_(new RunController(executable, this)) {
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
    refreshDevices();
    refreshHistory();
    refresh(true);
    if (!historyRuns().empty()) bottom_->setCurrentIndex(bottom_->count() - 1);   // past runs, until there is a new one
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

    banner_ = new QLabel;
    banner_->setObjectName("trainerBanner");
    banner_->setWordWrap(true);
    banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    banner_->setStyleSheet("QLabel { background: #fff4e5; color: #5a2d00; border: 1px solid #f0b36b; border-radius: 4px; padding: 6px; }");
    root->addWidget(banner_);

    // What trains, in plain view: "Planner: X → this run: Y" whenever they differ.
    auto* header_row = new QHBoxLayout;
    run_header_ = new QLabel;
    run_header_->setObjectName("runHeader");
    run_header_->setAccessibleName("What this run trains");
    run_header_->setWordWrap(true);
    run_header_->setTextFormat(Qt::RichText);
    run_header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    run_header_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    follow_ = new QPushButton("Follow the planner");
    follow_->setObjectName("runFollowPlanner");
    follow_->setToolTip("Fill the settings from the planner again (they stopped following it when you edited one)");
    follow_->hide();
    connect(follow_, &QPushButton::clicked, this, &RunPanel::followPlanner);
    header_row->addWidget(run_header_, 1);
    header_row->addWidget(follow_, 0, Qt::AlignTop);
    root->addLayout(header_row);

    // Top bar: the settings (folded while a run is shown), the buttons.
    auto* bar = new QHBoxLayout;
    settings_toggle_ = new QToolButton;
    settings_toggle_->setObjectName("runSettingsToggle");
    settings_toggle_->setAutoRaise(true);
    settings_toggle_->setCheckable(true);
    settings_toggle_->setChecked(true);
    settings_toggle_->setArrowType(Qt::DownArrow);
    settings_toggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    settings_toggle_->setText("Settings");
    settings_toggle_->setToolTip("Show or hide the launch settings");
    settings_summary_ = new QLabel;
    settings_summary_->setObjectName("runSettingsSummary");
    settings_summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    settings_summary_->setTextFormat(Qt::PlainText);
    connect(settings_toggle_, &QToolButton::toggled, this, [this](bool on) { setSettingsVisible(on); });
    start_ = new QPushButton("Start ▶");
    start_->setObjectName("runStart");
    start_->setDefault(true);
    QFont bf = start_->font();
    bf.setBold(true);
    start_->setFont(bf);
    connect(start_, &QPushButton::clicked, this, &RunPanel::startOrOfferDownload);
    stop_ = new QPushButton("Stop ■");
    stop_->setObjectName("runStop");
    stop_->setToolTip("SIGTERM: the trainer finishes its step, saves a checkpoint and exits; it is killed if it takes too long");
    connect(stop_, &QPushButton::clicked, this, [this] {
        if (controller_->isStopping()) killNow();
        else stop();
    });
    export_ = new QToolButton;
    export_->setObjectName("runExport");
    export_->setText("Export");
    export_->setPopupMode(QToolButton::InstantPopup);
    export_->setToolTip("Export the shown run's charts (PNG, SVG, PDF) and its summary table (CSV, Markdown)");
    auto* menu = new QMenu(export_);
    const char* items[] = {"&Memory chart…", "&Loss chart…", "&Throughput chart…", "&Predicted vs measured chart…",
                           "&Summary table…"};
    for (int i = 0; i < 5; ++i) menu->addAction(items[i], this, [this, i] { exportMenu(i); });
    menu->addSeparator();
    menu->addAction("&Everything to a folder…", this, &RunPanel::exportAllDialog);
    export_->setMenu(menu);
    bar->addWidget(settings_toggle_);
    bar->addWidget(settings_summary_, 1);
    bar->addWidget(start_);
    bar->addWidget(stop_);
    bar->addWidget(export_);
    root->addLayout(bar);

    form_ = new RunForm(lib_, controller_->sampleData());
    connect(form_, &RunForm::changed, this, &RunPanel::updateRunHeader);
    connect(form_, &RunForm::devicesChanged, this, &RunPanel::devicesChanged);
    root->addWidget(form_);

    auto* status_row = new QHBoxLayout;
    status_ = new QLabel;
    status_->setObjectName("runStatus");
    status_->setAccessibleName("Run status");
    status_->setTextFormat(Qt::RichText);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse | Qt::LinksAccessibleByKeyboard);
    connect(status_, &QLabel::linkActivated, this, &RunPanel::takeFitOffer);
    progress_ = new QProgressBar;
    progress_->setObjectName("runProgress");
    progress_->setAccessibleName("Training progress");
    progress_->setMinimumWidth(160);
    progress_->setMaximumWidth(300);
    progress_->setTextVisible(true);
    whole_process_ = new QCheckBox("Scale to the whole process");
    whole_process_->setObjectName("runWholeProcess");
    whole_process_->setToolTip("Off: the memory chart's axis fits the tensors (the planner's components) and the process RSS\n"
                               "is listed above it when it is larger. On: the axis also fits the RSS and the predicted process total.");
    connect(whole_process_, &QCheckBox::toggled, this, [this] {
        refresh(true);
        refreshSummary();
    });
    status_row->addWidget(status_, 1);
    status_row->addWidget(whole_process_, 0, Qt::AlignTop);
    status_row->addWidget(progress_, 0, Qt::AlignTop);
    root->addLayout(status_row);

    auto* view_row = new QHBoxLayout;
    view_banner_ = new QLabel;
    view_banner_->setObjectName("viewBanner");
    view_banner_->setWordWrap(true);
    back_live_ = new QPushButton("Back to the live run");
    connect(back_live_, &QPushButton::clicked, this, &RunPanel::showLive);
    view_row->addWidget(view_banner_, 1);
    view_row->addWidget(back_live_);
    root->addLayout(view_row);

    split_ = new QSplitter(Qt::Vertical);
    split_->setChildrenCollapsible(false);
    split_->addWidget(buildCharts());
    split_->addWidget(buildBottom());
    split_->setStretchFactor(0, 3);
    split_->setStretchFactor(1, 2);
    root->addWidget(split_, 1);
}

void RunPanel::setSettingsVisible(bool on) {
    form_->setVisible(on);
    settings_toggle_->blockSignals(true);
    settings_toggle_->setChecked(on);
    settings_toggle_->blockSignals(false);
    settings_toggle_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    settings_summary_->setText(on ? QString() : form_->summaryText());
}


void RunPanel::updateTrainerBanner() {
    const TrainerLocation& trainer = controller_->recheckTrainer();
    if (trainer.ok()) {
        banner_->hide();
        start_->setToolTip("Launch wingspan-train (" + trainer.path + ") with these settings");
    } else {
        banner_->setText("<b>Training is not available: the trainer is missing.</b> " + trainer.problem.toHtmlEscaped());
        banner_->show();
        start_->setToolTip(trainer.problem);
    }
}

void RunPanel::updateFormEnabled() {
    const bool active = isRunning();
    form_->setEnabled(!active);
    form_->setRunning(active);
    start_->setEnabled(!active);
    stop_->setEnabled(active);
    stop_->setText(controller_->isStopping() ? "Kill now" : "Stop ■");
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
    logs_seen_ = 0;
    logs_dropped_noted_ = false;
    log_->clear();
    log_->appendPlainText("$ " + controller_->trainer().path + " " + session()->arguments().join(' '));
    log_->appendPlainText("run folder: " + qs(session()->folder().string()));
    bottom_->setCurrentIndex(log_tab_);
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
        status_->setText("<b>A run is in progress.</b> Stop it first to train the new plan.");
        return;
    }
    // Train ▶ trains what the plan shows: the settings follow it again.
    form_->setFollowsPlanner(true);
    setPlan(plan);
    if (const QString why = cannot_train_reason(plan); !why.isEmpty()) {
        status_->setText("<b>Not started:</b> " + why.toHtmlEscaped());
        return;
    }
    startOrOfferDownload();
}

void RunPanel::showStartError(const QString& error) {
    // A missing trainer is explained in the banner above; the status line only points there.
    const QString text = controller_->trainer().ok() ? error.toHtmlEscaped()
                                       : "wingspan-train is missing; the note above says how to build it (./dev.sh run).";
    status_->setText("<span style='color:#c2410c'><b>Cannot start:</b> " + text + "</span>" + fit_offer_);
}

void RunPanel::stop() { controller_->stop(); }      // stateChanged repaints

void RunPanel::killNow() { controller_->killNow(); }

void RunPanel::onSessionFinished() {
    updateFormEnabled();
    refresh(true);
    refreshSummary();
    refreshHistory();
    bottom_->setCurrentIndex(0);
    const int h = std::max(400, split_->height());
    split_->setSizes({h * 56 / 100, h * 44 / 100});   // the summary gets room at the end
    emit runFinished();   // the controller then closes a window waiting for the trainer
}


QString RunPanel::statusText() const { return status_->text(); }
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
    if (!live_tick || !charts_clock_.isValid() || charts_clock_.elapsed() >= 400) {
        charts_clock_.restart();
        const RunChartInputs in = chartInputs();
        memory_data_ = run_memory_chart(in);
        loss_data_ = run_loss_chart(in);
        throughput_data_ = run_throughput_chart(in);
        memory_chart_->setData(memory_data_);
        loss_chart_->setData(loss_data_);
        throughput_chart_->setData(throughput_data_);
    }
    appendLog();

    view_banner_->setVisible(bool(loaded_) || bool(overlay_));
    back_live_->setVisible(bool(loaded_));
    back_live_->setText(session() ? "Back to the last run" : "Close");
    if (loaded_ || overlay_) {
        QString text;
        if (loaded_) text = "Showing the saved run <b>" + loaded_->label.toHtmlEscaped() + "</b> (" +
                            qs(loaded_->record.status_text()).toHtmlEscaped() + ").";
        if (overlay_)
            text += " Compared with <b>B</b>: " + describe(overlay_->options).toHtmlEscaped() + " (" +
                    overlay_->label.toHtmlEscaped() + "), dotted lines.";
        view_banner_->setText(text);
    }

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
    status_->setText(run_status_html(f, {highlight, style.tight, style.fits, style.tight, style.no}));
    const RunProgress p = run_progress(f);
    progress_->setTextVisible(true);
    progress_->setRange(p.minimum, p.maximum);
    progress_->setValue(p.value);
    if (p.maximum > 0) progress_->setFormat(p.format);
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
    if (unit_source_ && unit_source_() != unit_) setUnit(unit_source_());
    if (plan_pending_ && plan_source_ && !isRunning()) {
        plan_pending_ = false;
        setPlan(plan_source_());
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
    plan_source_ = std::move(plan);
    unit_source_ = std::move(unit);
}

void RunPanel::planSourceChanged() {
    plan_pending_ = true;
    // Train ▶ follows the planner at once, the settings when the panel shows.
    if (plan_source_) controller_->showTrainAvailability(cannot_train_reason(plan_source_()));
}

void RunPanel::setTrainAction(QAction* action) {
    controller_->setTrainAction(action, plan_source_ ? cannot_train_reason(plan_source_()) : trainBlockedReason());
}

// ------------------------------------------------------------------ install ----

RunPanel* install_run_panel(MainWindow& window, const QString& executable) {
    auto* panel = new RunPanel(executable, window.hasLibrary() ? &window.library() : nullptr);
    const int index = window.addRunTab(panel, "R&un");
    if (index < 0) {
        delete panel;
        return nullptr;
    }
    panel->setUnit(window.unit());
    if (window.hasLibrary()) panel->setPlan(window.plan());
    // The settings follow the planner while the run tab is out of sight, applied when it shows.
    panel->setPlanSource([&window] { return window.plan(); }, [&window] { return window.unit(); });
    QObject::connect(&window, &MainWindow::planChanged, panel, &RunPanel::planSourceChanged);
    QObject::connect(&window, &MainWindow::trainRequested, panel, [&window, panel, index](const Plan& plan) {
        window.tabs()->setCurrentIndex(index);
        panel->setUnit(window.unit());
        panel->trainPlan(plan);
    });
    panel->setTrainAction(window.trainAction());
    panel->guardClose(&window);
    return panel;
}

}  // namespace wingspan::ui
