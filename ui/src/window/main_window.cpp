#include "wingspan/ui/main_window.hpp"
#include "wingspan/ui/serve_gguf_panel.hpp"

#include <algorithm>

#include <QAction>
#include <QActionGroup>
#include <QComboBox>
#include <QDockWidget>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHeaderView>
#include <QScreen>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

enum TabIndex { TabMachines = 0, TabMethods = 1, TabSizes = 2, TabWhich = 3 };
enum TableIndex { TableMethods = 0, TableSizes = 1, TableMachines = 2 };

// A chart above its table, the chart taking the room.
// One line of text a row, a few px of air: the tables under the charts show all their rows
// in the room a 1280×720 screen leaves them.
void compact_rows(QTableView* view) {
    view->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
}

QSplitter* chart_over_table(MemoryChartWidget* chart, QTableView* table, int chart_height, int table_height) {
    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(chart);
    split->addWidget(table);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 0);
    split->setSizes({chart_height, table_height});
    split->setChildrenCollapsible(true);
    return split;
}

}  // namespace

// ------------------------------------------------------------------ construction ----

MainWindow::MainWindow(const QString& executable, Options options, QWidget* parent)
    : QMainWindow(parent), executable_(executable), options_(options) {
    init_resources();
    setWindowIcon(app_icon());
    setObjectName("wingspanMainWindow");
    user_dir_ = ProfileLibrary::user_dir();
    try {
        lib_ = ProfileLibrary::load(ProfileLibrary::default_dir(executable.toStdString()));
        lib_->add_machine(detect_this_machine());
    } catch (const std::exception& e) {
        load_error_ = qs(e.what());
        lib_.reset();
    }
    QString user_error;
    if (lib_) {
        try {
            lib_->load_user_profiles(user_dir_);
        } catch (const std::exception& e) {
            user_error = "Your own machines were skipped: " + qs(e.what());
        }
    }
    plan_ = Plan::lesson_default();
    table_timer_ = new QTimer(this);
    table_timer_->setSingleShot(true);
    table_timer_->setInterval(120);
    connect(table_timer_, &QTimer::timeout, this, &MainWindow::refreshVisibleTables);
    settings_timer_ = new QTimer(this);
    settings_timer_->setSingleShot(true);
    settings_timer_->setInterval(1500);
    connect(settings_timer_, &QTimer::timeout, this, &MainWindow::saveSettings);
    side_timer_ = new QTimer(this);
    side_timer_->setSingleShot(true);
    side_timer_->setInterval(90);
    connect(side_timer_, &QTimer::timeout, this, &MainWindow::updateSidePanels);

    if (!lib_) {
        buildErrorPage();
        resize(900, 560);
        return;
    }
    buildUi();
    buildMenus();
    if (options_.restore_settings) restoreSettings();
    else setPlan(plan_);
    if (!user_error.isEmpty()) showStatus(user_error, 15000);
}

MainWindow::~MainWindow() = default;

void MainWindow::showStatus(const QString& text, int ms) { statusBar()->showMessage(text, ms); }

void MainWindow::buildUi() {
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);

    // Left: the inputs form, scrolling when the screen is short.
    inputs_ = new InputsPanel(*lib_);
    auto* inputs_scroll = new QScrollArea;
    inputs_scroll->setWidgetResizable(true);
    inputs_scroll->setFrameShape(QFrame::NoFrame);
    inputs_scroll->setWidget(inputs_);
    inputs_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    inputs_scroll->setMinimumWidth(inputs_->sizeHint().width() + 14);
    inputs_dock_ = new QDockWidget("Plan", this);
    inputs_dock_->setObjectName("inputsDock");
    inputs_dock_->setWidget(inputs_scroll);
    inputs_dock_->setFeatures(QDockWidget::DockWidgetClosable | QDockWidget::DockWidgetMovable |
                              QDockWidget::DockWidgetFloatable);
    addDockWidget(Qt::LeftDockWidgetArea, inputs_dock_);

    // Right: the machines list with the verdicts, a dock that folds away.
    machines_ = new MachinesPanel;
    machines_dock_ = new QDockWidget("Machines", this);
    machines_dock_->setObjectName("machinesDock");
    machines_dock_->setWidget(machines_);
    machines_dock_->setFeatures(inputs_dock_->features());
    addDockWidget(Qt::RightDockWidgetArea, machines_dock_);

    // Middle: the charts and tables.
    tabs_ = new QTabWidget;
    tabs_->setObjectName("tabs");
    tabs_->setDocumentMode(true);
    tabs_->setUsesScrollButtons(true);
    machine_chart_ = new MemoryChartWidget;
    machine_chart_->setObjectName("machineChart");
    machine_chart_->setWhatsThis("One stacked bar per machine: each colour is a component of memory at the peak of a "
                                 "training step. The dashed line is what the machine can use. Hover a segment for "
                                 "its bytes and formula; with the keyboard, use the arrow keys.");
    // Serve mode adds llama.cpp's serving view under the chart (issue 30): the GGUF components
    // split between GPU and host RAM, as `wingspan plan --method serve --quant/--gguf` gives them.
    serve_gguf_ = new ServeGgufPanel;
    serve_gguf_->setVisible(false);
    auto* machines_page = new QSplitter(Qt::Vertical);
    machines_page->setObjectName("machinesPage");
    machines_page->setChildrenCollapsible(false);
    machines_page->addWidget(machine_chart_);
    machine_chart_->setMinimumHeight(260);   // below that its labels overprint each other
    machines_page->addWidget(serve_gguf_);
    machines_page->setStretchFactor(0, 1);
    machines_page->setStretchFactor(1, 1);
    tabs_->addTab(machines_page, "&Machines");
    methods_chart_ = new MemoryChartWidget;
    methods_chart_->setObjectName("methodsChart");
    table_models_[TableMethods] = new TableModel(this);
    // Three methods × a row per component, total and machine: turned so that it scrolls down,
    // never sideways, in the tab's ~590 px at 1280×720 (it needed ~1,500 px across).
    table_models_[TableMethods]->setTransposed(true);
    QTableView* method_view = make_table_view(table_models_[TableMethods], "methodTable");
    // The names' column as wide as its longest name, the methods sharing the rest.
    method_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    connect(table_models_[TableMethods], &QAbstractItemModel::modelReset, method_view, [method_view] {
        if (method_view->model()->columnCount() > 0)
            method_view->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    });
    compact_rows(method_view);
    tabs_->addTab(chart_over_table(methods_chart_, method_view, 640, 150), "M&ethods");
    sizes_chart_ = new MemoryChartWidget;
    sizes_chart_->setObjectName("sizesChart");
    table_models_[TableSizes] = new TableModel(this);
    QTableView* size_view = make_table_view(table_models_[TableSizes], "sizeTable");
    compact_rows(size_view);
    // The table's six rows in ~150 px: the chart's 18 bars get the rest (at 1280×720 its plot
    // was ~130 px tall under the title, legend and key).
    tabs_->addTab(chart_over_table(sizes_chart_, size_view, 600, 160), "&Sizes");
    which_ = new WhichMachinePage;
    tabs_->addTab(which_, "&Which machine trains what");
    connect(tabs_, &QTabWidget::currentChanged, this, [this] { refreshVisibleTables(); });

    auto* centre = new QWidget;
    auto* cv = new QVBoxLayout(centre);
    cv->setContentsMargins(0, 0, 0, 0);
    cv->setSpacing(0);
    cv->addWidget(buildActionBar());
    cv->addWidget(tabs_, 1);
    // The keyboard's hover: what the focused bar or segment is, in words.
    focus_line_ = new QLabel;
    focus_line_->setObjectName("chartFocusLine");
    focus_line_->setAccessibleName("Focused chart element");
    focus_line_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    focus_line_->setMinimumWidth(10);
    focus_line_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    focus_line_->setContentsMargins(8, 2, 8, 2);
    cv->addWidget(focus_line_);

    stack_ = new QStackedWidget;
    stack_->addWidget(centre);
    setCentralWidget(stack_);
    // The screen's available area (a saved geometry replaces it when settings are restored).
    if (QScreen* screen = QGuiApplication::primaryScreen()) resize(screen->availableSize());
    else resize(1560, 960);
    machines_->populate(*lib_, unit_);
    which_->setMachineChoices(*lib_);
    // The machines list needs a name and a verdict a row; the room beyond that is the chart's
    // (left to themselves the docks took a third of a 1600-pixel window).
    resizeDocks({machines_dock_}, {std::min(360, width() / 4)}, Qt::Horizontal);
    connectParts();
}

// Export and Train ▶ stay in view whatever folds away.
QWidget* MainWindow::buildActionBar() {
    auto* bar = new QWidget;
    bar->setObjectName("actionBar");
    auto* h = new QHBoxLayout(bar);
    h->setContentsMargins(8, 4, 8, 4);
    auto* export_chart = new QPushButton("E&xport chart…");
    export_chart->setObjectName("exportChartButton");
    export_chart->setToolTip("Save the chart on screen as PNG, SVG or PDF");
    connect(export_chart, &QPushButton::clicked, this, &MainWindow::exportChartDialog);
    auto* export_table = new QPushButton("Export &table…");
    export_table->setObjectName("exportTableButton");
    export_table->setToolTip("Save the table on screen as CSV (exact bytes) or Markdown (rounded)");
    connect(export_table, &QPushButton::clicked, this, &MainWindow::exportTableDialog);
    // Train ▶ is one action (trainAction()): hidden until a run panel takes it, which then sets
    // its state and tooltip; the button shows the action.
    train_action_ = new QAction("Train ▶", this);
    train_action_->setObjectName("trainAction");
    train_action_->setToolTip("Train this plan with wingspan-train on this machine and watch its memory live");
    train_action_->setVisible(false);
    connect(train_action_, &QAction::triggered, this, &MainWindow::requestTrain);
    train_ = new QPushButton(train_action_->text());
    train_->setObjectName("trainButton");
    connect(train_, &QPushButton::clicked, train_action_, &QAction::trigger);
    scale_box_ = new QComboBox;
    scale_box_->setObjectName("chartScale");
    scale_box_->addItem("Scale: fit the ceilings", chart_scale_id(ChartScale::Auto));
    scale_box_->addItem("Scale: show every bar whole", chart_scale_id(ChartScale::Full));
    scale_box_->addItem("Scale: logarithmic", chart_scale_id(ChartScale::Log));
    scale_box_->setAccessibleName("Chart scale");
    scale_box_->setToolTip("When a bar is far past the others: cut it at the top and list what is hidden (default),\n"
                           "show every bar whole, or use a logarithmic axis");
    connect(scale_box_, &QComboBox::activated, this,
            [this](int i) { setChartScale(parse_chart_scale(scale_box_->itemData(i).toString())); });
    h->addWidget(export_chart);
    h->addWidget(export_table);
    h->addWidget(scale_box_);
    h->addStretch(1);
    h->addWidget(train_);
    auto show_action = [this] {
        train_->setVisible(train_action_->isVisible());
        train_->setEnabled(train_action_->isEnabled());
        train_->setToolTip(train_action_->toolTip());
    };
    show_action();
    connect(train_action_, &QAction::changed, train_, show_action);
    return bar;
}

void MainWindow::connectParts() {
    connect(inputs_, &InputsPanel::setupEdited, this, [this](bool from_slider) {
        from_slider_ = from_slider;
        readControls();
        from_slider_ = false;
    });
    connect(inputs_, &InputsPanel::modelChosen, this, &MainWindow::onModelChosen);
    connect(inputs_, &InputsPanel::importConfigRequested, this, &MainWindow::importConfigDialog);
    connect(inputs_, &InputsPanel::importFromHubRequested, this, &MainWindow::importFromHubDialog);
    connect(inputs_, &InputsPanel::statusMessage, this, [this](const QString& t) { showStatus(t); });
    connect(machines_, &MachinesPanel::selectionEdited, this, &MainWindow::readControls);
    connect(machines_, &MachinesPanel::lessonMachinesRequested, this, [this] {
        Plan p = plan_;
        p.machines = Plan::lesson_default().machines;
        setPlan(p);
    });
    connect(machines_, &MachinesPanel::addRequested, this, &MainWindow::addMachineDialog);
    connect(machines_, &MachinesPanel::editRequested, this, &MainWindow::editMachineDialog);
    connect(machines_, &MachinesPanel::removeRequested, this, &MainWindow::removeUserMachine);
    connect(which_, &WhichMachinePage::datasetEdited, this, &MainWindow::readControls);
    // llama.cpp's settings belong to the plan (saved, reopened); its context is the plan's sequence.
    connect(serve_gguf_, &ServeGgufPanel::edited, this, [this] {
        Plan p = plan_;
        p.llama_cpp = serve_gguf_->choice();
        p.setup.seq_len = serve_gguf_->context();
        setPlan(p);
    });
    connect(which_, &WhichMachinePage::cellChosen, this, &MainWindow::loadGridCell);
    connect(which_, &WhichMachinePage::comparedChanged, this, [this] {
        dirty_[TableMachines] = true;
        refreshVisibleTables();
    });
    for (MemoryChartWidget* chart : {machine_chart_, methods_chart_, sizes_chart_})
        connect(chart, &MemoryChartWidget::focusTextChanged, this, [this](const QString& text) {
            focus_line_->setText(text);
            focus_line_->setToolTip(text);
        });
}

// ------------------------------------------------------------------------ sync ----

void MainWindow::setPlan(const Plan& plan) {
    if (!lib_) return;
    plan_ = plan;
    // Drop machines this library does not have (a user machine removed since) and say so.
    std::vector<std::string> kept, dropped;
    for (const auto& id : plan_.machines) {
        bool known = false;
        for (const auto& m : lib_->machines()) known |= m.id == id;
        (known ? kept : dropped).push_back(id);
    }
    plan_.machines = kept;
    if (!dropped.empty()) {
        std::string list;
        for (const auto& d : dropped) list += (list.empty() ? "" : ", ") + d;
        showStatus("Machines not found and left out: " + qs(list), 10000);
    }
    syncControls();
    recompute();
    emit planChanged();
}

void MainWindow::syncControls() {
    syncing_ = true;
    inputs_->showPlan(plan_);
    which_->showDataset(plan_.dataset);
    machines_->showPlan(plan_);
    syncing_ = false;
}

void MainWindow::readControls() {
    if (syncing_ || !lib_) return;
    const TrainingSetup before = plan_.setup;
    inputs_->readInto(plan_);
    // What the user changes is theirs from now on; the rest keeps following each framework.
    if (plan_.setup.grad_checkpointing != before.grad_checkpointing) plan_.chosen.grad_checkpointing = true;
    if (plan_.setup.quantization != before.quantization && plan_.setup.method == before.method)
        plan_.chosen.quantization = true;
    which_->readDataset(plan_.dataset);
    plan_.machines = machines_->checkedMachines(plan_.machines);
    plan_.machine_frameworks = machines_->machineFrameworks();
    recompute();
    emit planChanged();
}

void MainWindow::onModelChosen(const ModelChoice& choice, bool from_slider) {
    plan_.model = choice;
    if (!from_slider) inputs_->updateSizeSlider(plan_);
    from_slider_ = from_slider;
    recompute();
    from_slider_ = false;
    emit planChanged();
}

void MainWindow::setModel(const std::string& id) {
    plan_.model = ModelChoice{};
    plan_.model.model_id = id;
    inputs_->showPlan(plan_);
    recompute();
    emit planChanged();
}

// --------------------------------------------------------------------- compute ----

void MainWindow::recompute() {
    if (!lib_) return;
    eval_ = evaluate_plan(*lib_, plan_);
    machines_data_ = machines_chart(eval_, unit_);
    machines_data_.scale = scale_;
    machine_chart_->setData(machines_data_);
    inputs_->showEvaluation(plan_, eval_);
    // While a slider moves, the chart follows every step and the panels beside it at most
    // ~11 times a second; everything else updates them at once.
    if (from_slider_) {
        if (!side_timer_->isActive()) side_timer_->start();
    } else {
        side_timer_->stop();
        updateSidePanels();
    }
    markTablesDirty();
    const QString name = plan_path_.isEmpty() ? "untitled plan" : QFileInfo(plan_path_).fileName();
    setWindowTitle("Wingspan — " + qs(eval_.ok() ? eval_.model.name : std::string("plan")) + " — " + name);
    if (options_.save_settings) settings_timer_->start();
}

const ChartData& MainWindow::machineChart() const { return machines_data_; }

ChartData MainWindow::methodsChart() const { return methods_chart(*lib_, plan_, eval_, unit_); }

void MainWindow::updateSidePanels() {
    machines_->showVerdicts(eval_, unit_);
    const bool serving = eval_.ok() && eval_.setup.method == Method::Serve;
    if (serving && !serve_gguf_->isVisibleTo(this)) {
        // Shown: about half the page for the chart, the rest for llama.cpp's tables.
        if (auto* page = qobject_cast<QSplitter*>(serve_gguf_->parentWidget())) {
            const int h = std::max(page->height(), 560);
            const int chart = std::max(280, h * 9 / 20);   // its bars and labels still readable
            page->setSizes({chart, h - chart});
        }
    }
    serve_gguf_->setVisible(serving);
    if (serving) {
        std::vector<const MachineProfile*> machines;
        for (const auto& v : eval_.verdicts) machines.push_back(v.machine);
        std::vector<ServeGgufPanel::ChartAnswer> answers;
        for (const auto& v : eval_.verdicts) {
            const std::string& fw = v.framework->name;
            const std::string engine = fw.substr(0, std::min(fw.find(" ("), fw.find(" +")));
            answers.push_back({v.machine, qs(engine), v.fit != Fit::No});
        }
        const Quantization q = eval_.setup.effective_quantization();
        serve_gguf_->setChartAnswers(q == Quantization::None ? QString("16-bit") : qs(to_string(q)), std::move(answers));
        serve_gguf_->setChoice(plan_.llama_cpp);
        serve_gguf_->setContext(eval_.model.arch, eval_.model.name, machines, eval_.setup.seq_len, unit_);
    }
    updateSummary();
}

void MainWindow::updateSummary() {
    if (!eval_.ok()) {
        machines_->setSummary("This plan cannot be computed:\n" + qs(eval_.error) +
                              "\nChange that setting and the chart comes back.");
        return;
    }
    const ParameterCounts& pc = eval_.reference.params;
    QString text = qs(eval_.model.name) + "\n" + qs(format_count(pc.total)) + " parameters";
    if (eval_.setup.trains())
        text += ", " + qs(format_count(pc.trainable)) + " trainable (" +
                QString::number(100.0 * double(pc.trainable) / double(std::max<std::int64_t>(1, pc.total)), 'f', 2) + " %)";
    const std::string& fw = eval_.reference_framework->name;
    text += "\nWith " + qs(fw.substr(0, fw.find(" ("))) + ": " +
            qs(format_bytes(double(eval_.reference.peak_allocated_bytes), unit_)) + " allocated at the peak (" +
            qs(eval_.reference.peak_phase) + "), " + qs(format_bytes(double(eval_.reference.total_bytes), unit_)) +
            " held by the device";
    for (const auto& a : eval_.model.arch.assumptions) text += "\nNote: " + qs(a);
    machines_->setSummary(text);
}

void MainWindow::markTablesDirty() {
    for (bool& d : dirty_) d = true;
    table_timer_->start();
}

void MainWindow::refreshVisibleTables() {
    if (!lib_) return;
    switch (tabs_->currentIndex()) {
        case TabMethods: refreshTable(TableMethods); break;
        case TabSizes: refreshTable(TableSizes); break;
        case TabWhich: refreshTable(TableMachines); break;
        default: break;
    }
}

void MainWindow::refreshTable(int which) {
    if (!dirty_[which]) return;
    dirty_[which] = false;
    switch (which) {
        case TableMethods:
            methods_chart_->setData([&] {
                ChartData d = methods_chart(*lib_, plan_, eval_, unit_);
                d.scale = scale_;
                return d;
            }());
            table_models_[which]->setTable(method_table(*lib_, plan_, eval_, unit_));
            break;
        case TableSizes: {
            std::vector<const MachineProfile*> ms;
            for (const auto& v : eval_.verdicts) ms.push_back(v.machine);
            try {
                const nlohmann::json s = size_scenario(*lib_, plan_);
                ChartData d = size_chart(*lib_, s, ms, unit_);
                d.scale = scale_;
                sizes_chart_->setData(std::move(d));
                table_models_[which]->setTable(build_table(*lib_, s, unit_));
            } catch (const std::exception& e) {
                ChartData d;
                d.title = "The size table cannot be computed";
                d.empty_message = qs(e.what());
                d.is_error = true;
                sizes_chart_->setData(d);
                table_models_[which]->setTable(Table{});
            }
            break;
        }
        case TableMachines:
            which_->setGrid(machine_grid(*lib_, plan_, unit_, which_->compared()), unit_);
            which_->setMachineTable(machine_table(*lib_, plan_, eval_, unit_), plan_.dataset.tokens());
            break;
    }
}

const Table& MainWindow::machineTable() {
    refreshTable(TableMachines);
    return which_->machineTable();
}
const MachineGrid& MainWindow::machineGrid() {
    refreshTable(TableMachines);
    return which_->grid();
}

void MainWindow::loadGridCell(int row, int column) {
    const MachineGrid& g = machineGrid();
    if (row < 0 || row >= int(g.cells.size()) || column < 0 || column >= int(g.cells[size_t(row)].size())) return;
    const GridCell cell = g.cells[size_t(row)][size_t(column)];
    if (!cell.error.empty()) return;
    setPlan(plan_for_cell(plan_, cell));
    tabs_->setCurrentIndex(TabMachines);
    showStatus("Loaded " + qs(g.row_labels[size_t(row)]) + " · " + qs(g.column_labels[size_t(column)]) + " from the grid");
}

const Table& MainWindow::methodTable() {
    refreshTable(TableMethods);
    return table_models_[TableMethods]->table();
}
const Table& MainWindow::sizeTable() {
    refreshTable(TableSizes);
    return table_models_[TableSizes]->table();
}

void MainWindow::setChartScale(ChartScale scale) {
    scale_ = scale;
    if (scale_box_) scale_box_->setCurrentIndex(std::max(0, scale_box_->findData(chart_scale_id(scale))));
    if (!lib_) return;
    recompute();
    refreshVisibleTables();
}

void MainWindow::setUnit(ByteUnit unit) {
    unit_ = unit;
    if (unit_group_)
        for (QAction* a : unit_group_->actions()) a->setChecked(a->data().toString() == qs(unit_name(unit)));
    if (lib_) {
        machines_->populate(*lib_, unit_);
        syncControls();
        recompute();
    }
}

void MainWindow::setTheme(Theme t) {
    theme_ = t;
    apply_theme(t);
    if (theme_group_)
        for (QAction* a : theme_group_->actions()) a->setChecked(parse_theme(a->data().toString()) == t);
    // Widgets receive the new palette through posted events: recolour once they have it.
    QTimer::singleShot(0, this, [this] {
        if (!lib_) return;
        machines_->showVerdicts(eval_, unit_);
        machine_chart_->setData(machines_data_);
        markTablesDirty();
        refreshVisibleTables();
    });
    if (options_.save_settings) settings_timer_->start();
}

// ------------------------------------------------------------------ run hook ----

int MainWindow::addRunTab(QWidget* widget, const QString& title) {
    if (!tabs_) return -1;
    // In a scroll area: a tall run panel must not stop the window from fitting a small screen.
    auto* scroll = new QScrollArea;
    scroll->setObjectName("runTabScroll");
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(widget);
    return tabs_->addTab(scroll, title);
}

void MainWindow::requestTrain() {
    if (eval_.ok()) emit trainRequested(plan_);
}

}  // namespace wingspan::ui
