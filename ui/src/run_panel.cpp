// The run panel: the launch form, live charts, progress, log, summary and history.
#include <algorithm>
#include <fstream>

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
#include "wingspan/ui/widgets.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString duration_text(double s) {
    if (s < 0) s = 0;
    const qint64 t = qint64(std::llround(s));
    if (t < 3600) return QString("%1:%2").arg(t / 60).arg(t % 60, 2, 10, QChar('0'));
    return QString("%1:%2:%3").arg(t / 3600).arg((t % 3600) / 60, 2, 10, QChar('0')).arg(t % 60, 2, 10, QChar('0'));
}

QString method_text(Method m) {
    switch (m) {
        case Method::Full: return "Full fine-tune";
        case Method::Lora: return "LoRA";
        case Method::Qlora: return "QLoRA";
        case Method::Serve: return "Serve";
    }
    return "LoRA";
}

QString describe(const RunOptions& o) {
    QString s = o.model_label + " · " + method_text(o.method);
    if (o.method != Method::Full) s += QString(" r%1").arg(o.rank);
    s += QString(" · seq %1 × %2").arg(o.seq).arg(o.batch);
    if (o.grad_accum > 1) s += QString(" × %1").arg(o.grad_accum);
    s += QString(" · %1 steps").arg(o.steps);
    if (o.memory_limit > 0) s += " · cap " + qs(format_bytes(double(o.memory_limit)));
    return s;
}

json read_json(const fs::path& p) {
    std::ifstream in(p);
    if (!in) return nullptr;
    return json::parse(in, nullptr, false);
}

QString read_tail(const fs::path& p, qint64 max_bytes) {
    QFile f(qs(p.string()));
    if (!f.open(QIODevice::ReadOnly)) return {};
    if (f.size() > max_bytes) f.seek(f.size() - max_bytes);
    QString text = QString::fromUtf8(f.readAll());
    if (f.size() > max_bytes) text = "[… earlier lines in " + qs(p.string()) + "]\n" + text.mid(text.indexOf('\n') + 1);
    return text;
}

QColor status_color(RunStatus s, const QPalette& pal) {
    const ChartStyle st = ChartStyle::from_palette(pal);
    switch (s) {
        case RunStatus::Completed: return st.fits;
        case RunStatus::Interrupted: return st.tight;
        case RunStatus::Failed: return st.no;
        case RunStatus::Running: return pal.color(QPalette::Highlight);
    }
    return st.text;
}

}  // namespace

RunPanel::RunPanel(const QString& executable, const ProfileLibrary* lib, QWidget* parent)
    : QWidget(parent), executable_(executable), lib_(lib) {
    setObjectName("runPanel");
    trainer_ = find_trainer(executable);
    sample_data_ = find_sample_data(executable);
    store_root_ = RunStore::default_root();
    last_model_dir_ = QSettings().value("run/modelDir").toString();
    buildUi();
    repaint_timer_ = new QTimer(this);
    repaint_timer_->setInterval(200);   // charts repaint on this clock, never per event
    connect(repaint_timer_, &QTimer::timeout, this, [this] { refresh(false); });
    populateModelSources();
    updateTrainerBanner();
    refreshHistory();
    refresh(true);
    if (!historyRuns().empty()) bottom_->setCurrentIndex(bottom_->count() - 1);   // past runs, until there is a new one
}

RunPanel::~RunPanel() {
    if (session_) {
        // Stop a live trainer before the widgets it reports to are gone.
        session_->disconnect(this);
        delete session_;
        session_ = nullptr;
    }
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
    connect(start_, &QPushButton::clicked, this, [this] {
        QString error;
        if (!start(&error)) showStartError(error);
    });
    stop_ = new QPushButton("Stop ■");
    stop_->setObjectName("runStop");
    stop_->setToolTip("SIGTERM: the trainer finishes its step, saves a checkpoint and exits; it is killed if it takes too long");
    connect(stop_, &QPushButton::clicked, this, [this] {
        if (session_ && session_->state() == RunSession::State::Stopping) killNow();
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

    form_ = buildForm();
    root->addWidget(form_);

    auto* status_row = new QHBoxLayout;
    status_ = new QLabel;
    status_->setObjectName("runStatus");
    status_->setTextFormat(Qt::RichText);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    progress_ = new QProgressBar;
    progress_->setObjectName("runProgress");
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
    settings_summary_->setText(on ? QString() : describe(options()) + " · " + precision_->currentText() +
                                                   (ckpt_->isChecked() ? " · checkpointing" : ""));
}

QWidget* RunPanel::buildForm() {
    auto* w = new QWidget;
    w->setObjectName("runForm");
    auto* g = new QGridLayout(w);
    g->setContentsMargins(4, 0, 4, 0);
    g->setHorizontalSpacing(8);
    g->setVerticalSpacing(4);
    auto label = [](const QString& text, QWidget* buddy) {
        auto* l = new QLabel(text);
        l->setBuddy(buddy);
        return l;
    };
    auto spin = [](const char* name, int lo, int hi, const QString& tip) {
        auto* s = new QSpinBox;
        s->setObjectName(name);
        s->setRange(lo, hi);
        s->setToolTip(tip);
        s->setGroupSeparatorShown(true);
        return s;
    };

    // Row 0: the model, and what it means for the plan's model.
    model_ = new QComboBox;
    model_->setObjectName("runModel");
    model_->setMinimumContentsLength(24);
    model_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    model_->setToolTip("What trains. The built-in model (3 M parameters, random weights) runs in seconds on any machine.\n"
                       "\"Plan's architecture\" builds the planner's model with random weights: exact memory, no download\n"
                       "(large models need that much RAM). A folder holds a Hugging Face model: config.json + safetensors.");
    model_browse_ = new QPushButton("Folder…");
    model_browse_->setToolTip("Train a model from a local Hugging Face folder (config.json, *.safetensors, tokenizer.json)");
    connect(model_browse_, &QPushButton::clicked, this, &RunPanel::chooseModelFolder);
    connect(model_, &QComboBox::currentIndexChanged, this, [this] { updateFormEnabled(); });
    auto* model_row = new QHBoxLayout;
    model_row->addWidget(model_, 1);
    model_row->addWidget(model_browse_);
    g->addWidget(label("Model", model_), 0, 0);
    g->addLayout(model_row, 0, 1, 1, 7);
    model_note_ = new QLabel;
    model_note_->setObjectName("modelNote");
    model_note_->setWordWrap(true);
    QPalette muted = model_note_->palette();
    muted.setColor(QPalette::WindowText, muted.color(QPalette::PlaceholderText));
    model_note_->setPalette(muted);
    g->addWidget(model_note_, 1, 1, 1, 7);

    // Rows 2-3: the setup (from the plan).
    method_ = new QComboBox;
    method_->setObjectName("runMethod");
    method_->addItem("LoRA", int(Method::Lora));
    method_->addItem("QLoRA", int(Method::Qlora));
    method_->addItem("Full fine-tune", int(Method::Full));
    connect(method_, &QComboBox::currentIndexChanged, this, [this] { updateFormEnabled(); });
    rank_ = spin("runRank", 1, 4096, "LoRA rank r (--rank); alpha is kept at the plan's ratio");
    seq_ = spin("runSeq", 8, 1 << 20, "Tokens per sequence (--seq)");
    batch_ = spin("runBatch", 1, 4096, "Sequences per micro-batch (--batch)");
    accum_ = spin("runAccum", 1, 4096, "Micro-batches per optimizer step (--grad-accum)");
    steps_ = spin("runSteps", 1, 10000000, "Optimizer steps to train (--steps)");
    steps_->setValue(60);
    precision_ = new QComboBox;
    precision_->setObjectName("runPrecision");
    precision_->addItem("fp32", int(Precision::Fp32));
    precision_->addItem("bf16 mixed", int(Precision::Bf16Mixed));
    precision_->addItem("bf16", int(Precision::Bf16));
    precision_->setToolTip("Storage of weights and gradients (--precision). bf16 mixed keeps an fp32 master copy of what trains.");
    ckpt_ = new QCheckBox("Gradient checkpointing");
    ckpt_->setObjectName("runCheckpointing");
    ckpt_->setToolTip("--grad-checkpointing: keep one tensor per layer, recompute the rest in backward");
    // Rows 2 and 3: label, field, label, field, …
    const std::vector<std::pair<int, std::vector<std::pair<const char*, QWidget*>>>> fields = {
        {2, {{"Method", method_}, {"Rank", rank_}, {"Sequence", seq_}, {"Batch", batch_}}},
        {3, {{"Precision", precision_}, {"Accum.", accum_}, {"Steps", steps_}}}};
    for (const auto& [row, pairs] : fields)
        for (size_t i = 0; i < pairs.size(); ++i) {
            g->addWidget(label(pairs[i].first, pairs[i].second), row, int(2 * i));
            g->addWidget(pairs[i].second, row, int(2 * i + 1));
        }
    g->addWidget(ckpt_, 3, 6, 1, 2);

    // Row 4: data and output. Row 5: the ceiling drawn and the memory cap.
    data_ = new QLineEdit;
    data_->setObjectName("runData");
    data_->setPlaceholderText("the bundled sample (chat.jsonl)");
    data_->setToolTip("JSONL with text, prompt/completion or chat messages (--data). Empty: the bundled sample set\n" +
                      (sample_data_.isEmpty() ? QString("(not found next to Wingspan)") : sample_data_));
    auto* data_browse = new QToolButton;
    data_browse->setText("…");
    data_browse->setToolTip("Choose a data file");
    connect(data_browse, &QToolButton::clicked, this, &RunPanel::chooseDataFile);
    out_ = new QLineEdit;
    out_->setObjectName("runOut");
    out_->setPlaceholderText("in the run's history folder");
    out_->setToolTip("Where the trainer writes adapters or weights and checkpoints (--out)");
    auto* out_browse = new QToolButton;
    out_browse->setText("…");
    out_browse->setToolTip("Choose an output folder");
    connect(out_browse, &QToolButton::clicked, this, &RunPanel::chooseOutDir);
    auto* data_row = new QHBoxLayout;
    data_row->addWidget(data_, 1);
    data_row->addWidget(data_browse);
    auto* out_row = new QHBoxLayout;
    out_row->addWidget(out_, 1);
    out_row->addWidget(out_browse);
    g->addWidget(label("Data", data_), 4, 0);
    g->addLayout(data_row, 4, 1, 1, 3);
    g->addWidget(label("Output", out_), 4, 4);
    g->addLayout(out_row, 4, 5, 1, 3);

    machine_ = new QComboBox;
    machine_->setObjectName("runMachine");
    machine_->setMinimumContentsLength(14);
    machine_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    machine_->setToolTip("The machine whose usable memory is drawn as the ceiling");
    cap_mode_ = new QComboBox;
    cap_mode_->setObjectName("runCapMode");
    cap_mode_->addItem("no cap");
    cap_mode_->addItem("at the ceiling");
    cap_mode_->addItem("custom");
    cap_mode_->setToolTip("--memory-limit: rehearse a smaller machine. An allocation past the cap stops the run\n"
                          "with an out-of-memory error naming the component, instead of the OS killing it.");
    cap_gb_ = new QDoubleSpinBox;
    cap_gb_->setObjectName("runCapGb");
    cap_gb_->setDecimals(3);
    cap_gb_->setRange(0.001, 100000);
    cap_gb_->setValue(1.0);
    cap_gb_->setSuffix(" GB");
    connect(cap_mode_, &QComboBox::currentIndexChanged, this, [this] { updateFormEnabled(); });
    auto* cap_row = new QHBoxLayout;
    cap_row->addWidget(cap_mode_);
    cap_row->addWidget(cap_gb_, 1);
    g->addWidget(label("Ceiling", machine_), 5, 0);
    g->addWidget(machine_, 5, 1, 1, 3);
    g->addWidget(label("Memory cap", cap_mode_), 5, 4);
    g->addLayout(cap_row, 5, 5, 1, 3);
    for (int c : {1, 3, 5, 7}) g->setColumnStretch(c, 1);

    if (!lib_) machine_->addItem("—");
    return w;
}

QWidget* RunPanel::buildCharts() {
    auto* split = new QSplitter(Qt::Horizontal);
    split->setChildrenCollapsible(false);
    memory_chart_ = new TimeChartWidget;
    memory_chart_->setObjectName("runMemoryChart");
    memory_chart_->setMinimumSize(360, 240);
    loss_chart_ = new TimeChartWidget;
    loss_chart_->setObjectName("runLossChart");
    throughput_chart_ = new TimeChartWidget;
    throughput_chart_->setObjectName("runThroughputChart");
    auto* right = new QSplitter(Qt::Vertical);
    right->setChildrenCollapsible(false);
    right->addWidget(loss_chart_);
    right->addWidget(throughput_chart_);
    split->addWidget(memory_chart_);
    split->addWidget(right);
    split->setStretchFactor(0, 5);
    split->setStretchFactor(1, 3);
    return split;
}

QWidget* RunPanel::buildBottom() {
    bottom_ = new QTabWidget;
    bottom_->setObjectName("runBottom");
    bottom_->setDocumentMode(true);

    // Summary.
    auto* summary = new QWidget;
    auto* sh = new QHBoxLayout(summary);
    sh->setContentsMargins(4, 4, 4, 4);
    auto* left = new QVBoxLayout;
    summary_text_ = new QLabel;
    summary_text_->setObjectName("runSummaryText");
    summary_text_->setWordWrap(true);
    summary_text_->setTextFormat(Qt::RichText);
    summary_text_->setTextInteractionFlags(Qt::TextBrowserInteraction);
    summary_text_->setOpenExternalLinks(false);
    connect(summary_text_, &QLabel::linkActivated, this,
            [](const QString& link) { QDesktopServices::openUrl(QUrl::fromLocalFile(link)); });
    summary_model_ = new TableModel(this);
    summary_view_ = new QTableView;
    summary_view_->setObjectName("runSummaryTable");
    summary_view_->setModel(summary_model_);
    summary_view_->verticalHeader()->hide();
    summary_view_->horizontalHeader()->setStretchLastSection(true);
    summary_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    summary_view_->setAlternatingRowColors(true);
    summary_view_->verticalHeader()->setDefaultSectionSize(summary_view_->fontMetrics().height() + 8);
    summary_view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    sample_ = new QPlainTextEdit;
    sample_->setObjectName("runSample");
    sample_->setReadOnly(true);
    sample_->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
    sample_->setPlaceholderText("The text the model generates at the end of the run appears here.");
    left->addWidget(summary_text_);
    left->addWidget(summary_view_, 1);
    auto* right = new QVBoxLayout;
    auto* sample_label = new QLabel("Sample the model generated at the end:");
    sample_label->setBuddy(sample_);
    right->addWidget(sample_label);
    right->addWidget(sample_, 1);
    sh->addLayout(left, 3);
    sh->addLayout(right, 2);
    bottom_->addTab(summary, "Summar&y");

    // Predicted vs measured as the planner draws it: two stacked bars.
    summary_chart_ = new MemoryChartWidget;
    summary_chart_->setObjectName("runSummaryChart");
    summary_chart_->setMinimumSize(280, 180);
    bottom_->addTab(summary_chart_, "Predicted vs measured");
    chart_tab_ = bottom_->count() - 1;
    connect(bottom_, &QTabWidget::currentChanged, this, [this](int index) {
        // The bar chart needs some height to be read: make room when it is chosen.
        if (index != chart_tab_ || !split_) return;
        const QList<int> sizes = split_->sizes();
        if (sizes.size() == 2 && sizes[1] < 340 && sizes[0] + sizes[1] > 700)
            split_->setSizes({sizes[0] + sizes[1] - 340, 340});
    });

    // Log.
    log_ = new QPlainTextEdit;
    log_->setObjectName("runLog");
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(5000);   // bounded, however much the trainer writes
    log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    log_->setLineWrapMode(QPlainTextEdit::NoWrap);
    log_->setPlaceholderText("The trainer's stderr, its log events and every line Wingspan could not read.");
    bottom_->addTab(log_, "Lo&g");
    log_tab_ = bottom_->count() - 1;

    // History.
    auto* hist = new QWidget;
    auto* hv = new QVBoxLayout(hist);
    hv->setContentsMargins(4, 4, 4, 4);
    history_ = new QTreeWidget;
    history_->setObjectName("runHistory");
    history_->setRootIsDecorated(false);
    history_->setUniformRowHeights(true);
    history_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    history_->setHeaderLabels({"Run", "Settings", "Status", "Tensors peak", "Predicted", "Error", "RSS peak"});
    history_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    history_->header()->setSectionResizeMode(1, QHeaderView::Stretch);
    history_->header()->setStretchLastSection(false);
    connect(history_, &QTreeWidget::itemDoubleClicked, this, [this](QTreeWidgetItem* item) {
        QString error;
        if (!openRun(fs::path(item->data(0, Qt::UserRole).toString().toStdString()), &error))
            QMessageBox::warning(this, "Open run", error);
    });
    auto* hb = new QHBoxLayout;
    auto selected = [this]() -> std::optional<fs::path> {
        auto items = history_->selectedItems();
        if (items.isEmpty()) return std::nullopt;
        return fs::path(items.first()->data(0, Qt::UserRole).toString().toStdString());
    };
    auto* open = new QPushButton("Open");
    open->setToolTip("Show this run's charts, summary and log");
    connect(open, &QPushButton::clicked, this, [this, selected] {
        if (auto p = selected()) {
            QString error;
            if (!openRun(*p, &error)) QMessageBox::warning(this, "Open run", error);
        }
    });
    auto* compare = new QPushButton("Compare with shown run");
    compare->setToolTip("Draw the selected run over the shown one, dotted (memory, loss, tokens/s)");
    connect(compare, &QPushButton::clicked, this, [this, selected] {
        auto items = history_->selectedItems();
        if (items.size() == 2) {
            // Two selected: show the first, compare with the second.
            QString error;
            if (!openRun(fs::path(items[0]->data(0, Qt::UserRole).toString().toStdString()), &error) ||
                !overlayRun(fs::path(items[1]->data(0, Qt::UserRole).toString().toStdString()), &error))
                QMessageBox::warning(this, "Compare runs", error);
            return;
        }
        if (auto p = selected()) {
            QString error;
            if (!overlayRun(*p, &error)) QMessageBox::warning(this, "Compare runs", error);
        }
    });
    auto* uncompare = new QPushButton("Clear comparison");
    connect(uncompare, &QPushButton::clicked, this, &RunPanel::clearOverlay);
    auto* folder = new QPushButton("Show folder");
    connect(folder, &QPushButton::clicked, this, [selected] {
        if (auto p = selected()) QDesktopServices::openUrl(QUrl::fromLocalFile(qs(p->string())));
    });
    auto* remove = new QPushButton("Delete…");
    connect(remove, &QPushButton::clicked, this, [this, selected] {
        auto p = selected();
        if (!p) return;
        if (session_ && session_->isActive() && session_->folder() == *p) return;
        if (QMessageBox::question(this, "Delete run", "Delete " + qs(p->filename().string()) + " and everything in its folder?") !=
            QMessageBox::Yes)
            return;
        std::error_code ec;
        fs::remove_all(*p, ec);
        if (loaded_ && loaded_->folder == *p) showLive();
        refreshHistory();
    });
    auto* reload = new QPushButton("Refresh");
    connect(reload, &QPushButton::clicked, this, &RunPanel::refreshHistory);
    for (QWidget* b : {open, compare, uncompare, folder, remove}) hb->addWidget(b);
    hb->addStretch(1);
    hb->addWidget(reload);
    hv->addWidget(history_, 1);
    hv->addLayout(hb);
    bottom_->addTab(hist, "History");
    return bottom_;
}

void RunPanel::populateModelSources() {
    const auto current = model_->currentData().toInt();
    model_->blockSignals(true);
    model_->clear();
    model_->addItem("Built-in test model (3.1 M params, random weights)", int(RunOptions::ModelSource::BuiltIn));
    model_note_->clear();
    if (has_plan_ && lib_) {
        try {
            const ResolvedModel m = resolve_model(*lib_, plan_.model);
            const std::int64_t params = m.arch.parameter_count();
            model_->addItem(QString("Plan's architecture: %1 (%2 params, random weights)")
                                .arg(qs(m.name), qs(format_params_short(params))),
                            int(RunOptions::ModelSource::PlanArchitecture));
            model_note_->setText(QString("The plan's %1 can train here with random weights (its exact memory, no "
                                         "download) or from its folder; the built-in model runs in seconds anywhere.")
                                     .arg(qs(m.name)));
        } catch (const std::exception&) {
        }
    }
    if (!last_model_dir_.isEmpty())
        model_->addItem("Folder: " + QDir(last_model_dir_).dirName(), int(RunOptions::ModelSource::Folder));
    model_note_->setVisible(!model_note_->text().isEmpty());
    int idx = model_->findData(current);
    model_->setCurrentIndex(idx >= 0 ? idx : 0);
    model_->blockSignals(false);
    updateFormEnabled();
}

void RunPanel::updateTrainerBanner() {
    if (!trainer_override_.isEmpty()) trainer_ = check_trainer(trainer_override_);
    if (trainer_.ok()) {
        banner_->hide();
        start_->setToolTip("Launch wingspan-train (" + trainer_.path + ") with these settings");
    } else {
        banner_->setText("<b>Training is not available: the trainer is missing.</b> " + trainer_.problem.toHtmlEscaped());
        banner_->show();
        start_->setToolTip(trainer_.problem);
    }
}

void RunPanel::updateFormEnabled() {
    const bool active = isRunning();
    form_->setEnabled(!active);
    start_->setEnabled(!active);
    stop_->setEnabled(active);
    stop_->setText(session_ && session_->state() == RunSession::State::Stopping ? "Kill now" : "Stop ■");
    rank_->setEnabled(method_->currentData().toInt() != int(Method::Full));
    cap_gb_->setEnabled(cap_mode_->currentIndex() == 2);
    model_browse_->setEnabled(!active);
}

// ------------------------------------------------------------------ options ----

void RunPanel::setPlan(const Plan& plan) {
    plan_ = plan;
    has_plan_ = true;
    const RunOptions keep = options();
    machine_->blockSignals(true);
    machine_->clear();
    if (lib_) {
        for (const auto& id : plan.machines) {
            try {
                const MachineProfile& m = lib_->machine(id);
                machine_->addItem(qs(short_machine_name(m)) + " · " + qs(format_bytes(double(m.usable_bytes), unit_)),
                                  qs(m.id));
            } catch (const std::exception&) {
            }
        }
    }
    if (machine_->count() == 0) machine_->addItem("—");
    machine_->blockSignals(false);
    populateModelSources();
    RunOptions o = run_options_for(plan, lib_);
    o.steps = keep.steps;
    o.data_file = keep.data_file;
    o.out_dir = keep.out_dir;
    o.model_source = keep.model_source;
    o.model_dir = keep.model_dir;
    o.threads = keep.threads;
    o.extra_args = keep.extra_args;
    if (cap_mode_->currentIndex() == 2) o.memory_limit = keep.memory_limit;
    setOptions(o);
}

RunOptions RunPanel::options() const {
    RunOptions o;
    o.model_source = RunOptions::ModelSource(model_->currentData().toInt());
    o.model_label = "built-in";
    if (o.model_source == RunOptions::ModelSource::Folder) {
        o.model_dir = last_model_dir_;
        o.model_label = QDir(last_model_dir_).dirName();
    } else if (o.model_source == RunOptions::ModelSource::PlanArchitecture && lib_ && has_plan_) {
        try {
            const ResolvedModel m = resolve_model(*lib_, plan_.model);
            o.model_config = m.arch.to_hf_config();
            o.model_label = qs(m.id.empty() ? m.name : m.id) + "-random";
        } catch (const std::exception&) {
            o.model_source = RunOptions::ModelSource::BuiltIn;
        }
    }
    o.method = Method(method_->currentData().toInt());
    o.rank = rank_->value();
    o.alpha = has_plan_ && plan_.setup.lora_rank > 0 ? plan_.setup.lora_alpha / double(plan_.setup.lora_rank) * double(o.rank)
                                                     : 2.0 * double(o.rank);
    o.precision = Precision(precision_->currentData().toInt());
    o.seq = seq_->value();
    o.batch = batch_->value();
    o.grad_accum = accum_->value();
    o.steps = steps_->value();
    o.grad_checkpointing = ckpt_->isChecked();
    o.data_file = data_->text().trimmed();
    o.out_dir = out_->text().trimmed();
    o.extra_args = extra_args_;
    o.threads = threads_;
    if (lib_ && machine_->currentData().isValid()) {
        try {
            const MachineProfile& m = lib_->machine(machine_->currentData().toString().toStdString());
            o.machine_id = qs(m.id);
            o.machine_name = qs(short_machine_name(m));
            o.machine_ceiling = m.usable_bytes;
        } catch (const std::exception&) {
        }
    }
    if (cap_mode_->currentIndex() == 1) o.memory_limit = o.machine_ceiling;
    else if (cap_mode_->currentIndex() == 2) o.memory_limit = std::llround(cap_gb_->value() * 1e9);
    if (o.model_source == RunOptions::ModelSource::PlanArchitecture && o.memory_limit == 0 && lib_) {
        // Random weights of a big architecture can ask for more than this machine has: cap at
        // what it can use, so the run ends with a clean out-of-memory event instead of the OS
        // killing it.
        try {
            o.memory_limit = lib_->machine(kThisMachineId).usable_bytes;
        } catch (const std::exception&) {
        }
    }
    return o;
}

void RunPanel::setOptions(const RunOptions& o) {
    int mi = model_->findData(int(o.model_source));
    if (o.model_source == RunOptions::ModelSource::Folder && !o.model_dir.isEmpty()) {
        last_model_dir_ = o.model_dir;
        populateModelSources();
        mi = model_->findData(int(o.model_source));
    }
    if (mi >= 0) model_->setCurrentIndex(mi);
    method_->setCurrentIndex(std::max(0, method_->findData(int(o.method == Method::Serve ? Method::Lora : o.method))));
    rank_->setValue(int(o.rank));
    seq_->setValue(int(o.seq));
    batch_->setValue(int(o.batch));
    accum_->setValue(int(o.grad_accum));
    steps_->setValue(int(std::min<std::int64_t>(o.steps, steps_->maximum())));
    precision_->setCurrentIndex(std::max(0, precision_->findData(int(o.precision))));
    ckpt_->setChecked(o.grad_checkpointing);
    data_->setText(o.data_file);
    out_->setText(o.out_dir);
    extra_args_ = o.extra_args;
    threads_ = o.threads;
    if (!o.machine_id.isEmpty()) {
        const int i = machine_->findData(o.machine_id);
        if (i >= 0) machine_->setCurrentIndex(i);
    }
    if (o.memory_limit > 0 && !(o.machine_ceiling > 0 && o.memory_limit == o.machine_ceiling)) {
        cap_mode_->setCurrentIndex(2);
        cap_gb_->setValue(double(o.memory_limit) / 1e9);
    } else if (o.memory_limit > 0) {
        cap_mode_->setCurrentIndex(1);
    } else {
        cap_mode_->setCurrentIndex(0);
    }
    updateFormEnabled();
}

void RunPanel::chooseModelFolder() {
    const QString dir = QFileDialog::getExistingDirectory(this, "Model folder (config.json + safetensors)",
                                                          last_model_dir_.isEmpty() ? QDir::homePath() : last_model_dir_);
    if (dir.isEmpty()) return;
    if (!QFileInfo(QDir(dir).filePath("config.json")).isFile()) {
        QMessageBox::warning(this, "Model folder",
                             dir + " has no config.json. Choose the folder of a Hugging Face model (config.json, "
                                   "model.safetensors or its shards, tokenizer.json).");
        return;
    }
    last_model_dir_ = dir;
    QSettings().setValue("run/modelDir", dir);
    populateModelSources();
    model_->setCurrentIndex(model_->findData(int(RunOptions::ModelSource::Folder)));
}

void RunPanel::chooseDataFile() {
    const QString f = QFileDialog::getOpenFileName(this, "Training data", data_->text().isEmpty() ? QDir::homePath() : data_->text(),
                                                   "JSON lines (*.jsonl *.json);;All files (*)");
    if (!f.isEmpty()) data_->setText(f);
}

void RunPanel::chooseOutDir() {
    const QString d = QFileDialog::getExistingDirectory(this, "Output folder", out_->text().isEmpty() ? QDir::homePath() : out_->text());
    if (!d.isEmpty()) out_->setText(d);
}

void RunPanel::setTrainerPath(const QString& path) {
    trainer_override_ = path;
    trainer_ = check_trainer(path);
    updateTrainerBanner();
}

void RunPanel::setStoreRoot(const fs::path& root) {
    store_root_ = root;
    refreshHistory();
}

void RunPanel::setUnit(ByteUnit unit) {
    unit_ = unit;
    refresh(true);
    refreshSummary();
    refreshHistory();
}

// ------------------------------------------------------------------ running ----

bool RunPanel::isRunning() const { return session_ && session_->isActive(); }

bool RunPanel::start(QString* error) {
    if (isRunning()) {
        if (error) *error = "a run is already going; stop it first";
        return false;
    }
    updateTrainerBanner();
    if (!trainer_.ok()) {
        if (error) *error = trainer_.problem;
        return false;
    }
    auto* s = new RunSession(this);
    QString err;
    const RunOptions o = options();
    if (!s->start(trainer_.path, o, has_plan_ ? plan_.to_json() : json(nullptr), store_root_, sample_data_, &err)) {
        delete s;
        if (error) *error = err;
        return false;
    }
    if (session_) {
        session_->disconnect(this);
        session_->deleteLater();
    }
    session_ = s;
    connect(s, &RunSession::finished, this, &RunPanel::onSessionFinished);
    connect(s, &RunSession::stateChanged, this, [this] {
        updateFormEnabled();
        refresh(true);
    });
    loaded_.reset();
    logs_seen_ = 0;
    logs_dropped_noted_ = false;
    log_->clear();
    log_->appendPlainText("$ " + trainer_.path + " " + s->arguments().join(' '));
    log_->appendPlainText("run folder: " + qs(s->folder().string()));
    bottom_->setCurrentIndex(log_tab_);
    setSettingsVisible(false);
    const int h = std::max(400, split_->height());
    split_->setSizes({h * 70 / 100, h * 30 / 100});
    repaint_timer_->start();
    updateFormEnabled();
    refreshHistory();
    refresh(true);
    emit runStarted();
    return true;
}

void RunPanel::trainPlan(const Plan& plan) {
    if (isRunning()) {
        status_->setText("<b>A run is in progress.</b> Stop it first to train the new plan.");
        return;
    }
    setPlan(plan);
    QString error;
    if (!start(&error)) showStartError(error);
}

void RunPanel::showStartError(const QString& error) {
    // A missing trainer is explained in the banner above; the status line only points there.
    const QString text = trainer_.ok() ? error.toHtmlEscaped()
                                       : "wingspan-train is missing; the note above says how to build it (./dev.sh run).";
    status_->setText("<span style='color:#c2410c'><b>Cannot start:</b> " + text + "</span>");
}

void RunPanel::stop() {
    if (!isRunning()) return;
    session_->stop(kill_timeout_ms_);
    updateFormEnabled();
    refresh(true);
}

void RunPanel::killNow() {
    if (!isRunning()) return;
    session_->killNow();
    refresh(true);
}

void RunPanel::onSessionFinished() {
    repaint_timer_->stop();
    updateFormEnabled();
    refresh(true);
    refreshSummary();
    refreshHistory();
    bottom_->setCurrentIndex(0);
    const int h = std::max(400, split_->height());
    split_->setSizes({h * 56 / 100, h * 44 / 100});   // the summary gets room at the end
    emit runFinished();
    if (closing_window_) {
        QPointer<QWidget> w = closing_window_;
        QTimer::singleShot(0, this, [w] {
            if (w) w->close();
        });
    }
}

// ------------------------------------------------------------------ showing ----

const RunRecord* RunPanel::shownRecord() const {
    if (loaded_) return &loaded_->record;
    return session_ ? &session_->record() : nullptr;
}

fs::path RunPanel::shownFolder() const {
    if (loaded_) return loaded_->folder;
    return session_ ? session_->folder() : fs::path();
}

const TimeChartData& RunPanel::memoryChart() const { return memory_data_; }
const TimeChartData& RunPanel::lossChart() const { return loss_data_; }
const TimeChartData& RunPanel::throughputChart() const { return throughput_data_; }

RunChartInputs RunPanel::chartInputs() const {
    RunChartInputs in;
    in.unit = unit_;
    in.whole_process = whole_process_ && whole_process_->isChecked();
    if (loaded_) {
        in.record = &loaded_->record;
        in.rss = &loaded_->rss;
        in.options = &loaded_->options;
        in.title = "Memory · " + describe(loaded_->options);
    } else if (session_) {
        in.record = &session_->record();
        in.rss = &session_->rssSamples();
        in.options = &session_->options();
        in.title = "Memory · " + describe(session_->options());
    }
    if (overlay_) {
        in.overlay = &overlay_->record;
        in.overlay_rss = &overlay_->rss;
        const RunOptions& b = overlay_->options;
        in.overlay_label = "B (" + method_text(b.method) + (b.method == Method::Full ? QString() : QString(" r%1").arg(b.rank)) +
                           QString(", %1×%2)").arg(b.seq).arg(b.batch);
    }
    return in;
}

ChartData RunPanel::summaryChart() const {
    const RunRecord* r = shownRecord();
    if (!r) return {};
    const RunOptions* o = loaded_ ? &loaded_->options : session_ ? &session_->options() : nullptr;
    return run_summary_chart(*r, o, {}, unit_, whole_process_ && whole_process_->isChecked());
}

Table RunPanel::summaryTable() const {
    const RunRecord* r = shownRecord();
    return r ? run_summary_table(*r, unit_) : Table{};
}

QString RunPanel::statusText() const { return status_->text(); }
QString RunPanel::stopMessage() const {
    if (loaded_) return {};
    return session_ ? session_->stopMessage() : QString();
}
QString RunPanel::logText() const { return log_->toPlainText(); }
QString RunPanel::sampleText() const { return sample_->toPlainText(); }
QString RunPanel::checkpointText() const {
    const RunRecord* r = shownRecord();
    return r && !r->checkpoints().empty() ? qs(r->checkpoints().back()) : QString();
}

void RunPanel::appendLog() {
    if (loaded_ || !session_) return;
    QStringList lines = session_->takeNewStderr();
    const auto& logs = session_->record().logs();
    for (; logs_seen_ < logs.size(); ++logs_seen_) {
        const QString l = qs(logs[logs_seen_]);
        lines << (l.startsWith("ignored:") ? "wingspan › " + l : "trainer › " + l);
    }
    if (!logs_dropped_noted_ && session_->record().dropped_log_lines() > 0) {
        logs_dropped_noted_ = true;
        lines << "wingspan › the trainer's log passed " + QString::number(RunRecord::kMaxLogLines) +
                     " lines; further lines are counted, not shown (events.jsonl in the run folder has them all)";
    }
    if (lines.isEmpty()) return;
    constexpr int kHead = 60, kTail = 340;
    if (lines.size() > kHead + kTail) {
        const qsizetype skipped = lines.size() - kHead - kTail;
        QStringList kept = lines.mid(0, kHead);
        kept << QString("wingspan › … %1 lines not shown here (stderr.log and events.jsonl in the run folder have them all)")
                    .arg(skipped);
        kept << lines.mid(lines.size() - kTail);
        lines = kept;
    }
    log_->appendPlainText(lines.join('\n'));
}

void RunPanel::refresh(bool force) {
    // Repaint only when something arrived (or to count down a stop), at most 5 times a second.
    if (!force && (!session_ || (!session_->dirty() && session_->state() != RunSession::State::Stopping))) return;
    if (session_) session_->clearDirty();
    ++repaints_;
    const RunChartInputs in = chartInputs();
    memory_data_ = run_memory_chart(in);
    loss_data_ = run_loss_chart(in);
    throughput_data_ = run_throughput_chart(in);
    memory_chart_->setData(memory_data_);
    loss_chart_->setData(loss_data_);
    throughput_chart_->setData(throughput_data_);
    appendLog();

    view_banner_->setVisible(bool(loaded_) || bool(overlay_));
    back_live_->setVisible(bool(loaded_));
    back_live_->setText(session_ ? "Back to the last run" : "Close");
    if (loaded_ || overlay_) {
        QString text;
        if (loaded_) text = "Showing the saved run <b>" + loaded_->label.toHtmlEscaped() + "</b> (" +
                            qs(loaded_->record.status_text()).toHtmlEscaped() + ").";
        if (overlay_)
            text += " Compared with <b>B</b>: " + describe(overlay_->options).toHtmlEscaped() + " (" +
                    overlay_->label.toHtmlEscaped() + "), dotted lines.";
        view_banner_->setText(text);
    }

    const RunRecord* r = shownRecord();
    if (!r) {
        status_->setText(trainer_.ok() ? "Ready. <b>Start ▶</b> trains with these settings; <b>Train ▶</b> in the planner "
                                         "fills them from the plan and starts."
                                       : "<span style='color:#c2410c'>Training needs wingspan-train; the note above says "
                                         "how to build it.</span>");
        progress_->setRange(0, 1);
        progress_->setValue(0);
        progress_->setFormat("no run");
        return;
    }
    const bool live = !loaded_ && session_ && session_->isActive();
    const auto& steps = r->steps();
    const std::int64_t step = steps.empty() ? 0 : steps.back().step;
    std::int64_t total = steps.empty() ? 0 : steps.back().total_steps;
    const RunOptions* o = loaded_ ? &loaded_->options : &session_->options();
    if (total <= 0) total = o->steps;
    QStringList parts;
    if (live) {
        const bool stopping = session_->state() == RunSession::State::Stopping;
        if (stopping) {
            parts << QString("<b style='color:%1'>■ Stopping</b>: SIGTERM sent; waiting for the trainer to finish its step "
                             "and save (SIGKILL in %2 s)")
                         .arg(ChartStyle::from_palette(palette()).tight.name())
                         .arg(std::ceil(session_->stopDeadlineSeconds()));
        } else {
            parts << QString("<b style='color:%1'>● Running</b>").arg(palette().color(QPalette::Highlight).name());
        }
        if (steps.empty()) parts << "setting up (loading the model and data)";
        else parts << QString("step %1 of %2").arg(step).arg(total);
        if (!steps.empty()) {
            parts << QLocale().toString(steps.back().tokens_per_s, 'f', 0) + " tokens/s";
            parts << QString("loss %1").arg(steps.back().loss, 0, 'f', 3);
        }
        parts << duration_text(session_->elapsedSeconds()) + " elapsed";
        progress_->setTextVisible(true);
        if (steps.empty()) {
            progress_->setRange(0, 0);   // busy until the first step
        } else {
            progress_->setRange(0, int(std::min<std::int64_t>(total, 1 << 30)));
            progress_->setValue(int(std::min(step, total)));
            // ETA from the last steps' pace.
            const size_t n = std::min<size_t>(steps.size(), 12);
            const auto& a = steps[steps.size() - n];
            const auto& b = steps.back();
            double per_step = n > 1 && b.step > a.step ? (b.t - a.t) / double(b.step - a.step)
                                                       : b.t / double(std::max<std::int64_t>(1, b.step));
            const double eta = per_step * double(std::max<std::int64_t>(0, total - step));
            progress_->setFormat(QString("%p% · ETA %1").arg(duration_text(eta)));
        }
    } else {
        const RunStatus st = r->status();
        const QString icon = st == RunStatus::Completed ? "✓" : st == RunStatus::Interrupted ? "■" : "✗";
        QString text = qs(r->status_text());
        if (!text.isEmpty()) text[0] = text[0].toUpper();
        parts << QString("<b style='color:%1'>%2 %3</b>").arg(status_color(st, palette()).name(), icon, text.toHtmlEscaped());
        if (!steps.empty()) parts << QString("%1 of %2 steps").arg(step).arg(total);
        double last_t = r->done() ? r->done()->t : 0;
        if (!r->memory().empty()) last_t = std::max(last_t, r->memory().back().t);
        if (last_t > 0) parts << "in " + duration_text(last_t);
        if (!steps.empty()) parts << "final loss " + QString::number(steps.back().loss, 'f', 3);
        if (!loaded_ && !session_->launchError().isEmpty()) parts << session_->launchError().toHtmlEscaped();
        progress_->setTextVisible(true);
        progress_->setRange(0, int(std::max<std::int64_t>(1, std::min<std::int64_t>(total, 1 << 30))));
        progress_->setValue(int(std::min(step, total)));
        progress_->setFormat(st == RunStatus::Completed ? QString("done") : QString("%p% · ") + qs(to_string(st)));
    }
    if (r->malformed_lines() > 0)
        parts << QString("<span style='color:%1'>%2 unreadable line%3 ignored (see Log)</span>")
                     .arg(ChartStyle::from_palette(palette()).tight.name())
                     .arg(r->malformed_lines())
                     .arg(r->malformed_lines() == 1 ? "" : "s");
    if (live && session_->stderrDropped() > 0) parts << QString("%1 stderr lines skipped").arg(session_->stderrDropped());
    QString html = parts.join(" · ");
    const QString stop_message = stopMessage();
    if (!stop_message.isEmpty()) html += "<br>" + stop_message.toHtmlEscaped();
    status_->setText(html);
    if (live || loaded_) refreshSummary();
}

void RunPanel::refreshSummary() {
    const RunRecord* r = shownRecord();
    summary_model_->setTable(summaryTable());
    summary_view_->resizeColumnsToContents();
    summary_chart_->setData(summaryChart());
    if (!r) {
        summary_text_->clear();
        sample_->clear();
        return;
    }
    QString html;
    const bool live = !loaded_ && session_ && session_->isActive();
    if (live) html = "<b>So far</b> (the run is still going; the table fills in as the peaks arrive).";
    else {
        QString st = qs(r->status_text());
        if (!st.isEmpty()) st[0] = st[0].toUpper();
        html = "<b>" + st.toHtmlEscaped() + "</b>";
    }
    if (!r->checkpoints().empty()) {
        const QString ck = qs(r->checkpoints().back());
        html += "<br>Checkpoint: <a href=\"" + ck.toHtmlEscaped() + "\">" + ck.toHtmlEscaped() + "</a>";
    } else if (!live) {
        html += "<br>No checkpoint was saved.";
    }
    const fs::path folder = shownFolder();
    if (!folder.empty()) {
        const QString f = qs(folder.string());
        html += "<br>Run folder: <a href=\"" + f.toHtmlEscaped() + "\">" + f.toHtmlEscaped() + "</a>";
    }
    const QString msg = loaded_ ? loaded_->stop_message : stopMessage();
    if (!msg.isEmpty()) html += "<br>" + msg.toHtmlEscaped();
    summary_text_->setText(html);
    QString sample = r->done() ? qs(r->done()->string_field("sample")) : QString();
    if (sample.trimmed().isEmpty()) sample.clear();   // whitespace only: the note below says so
    if (sample_->toPlainText() != sample) sample_->setPlainText(sample);
    sample_->setPlaceholderText(!r->done() ? "The text the model generates at the end of the run appears here."
                                : sample.trimmed().isEmpty()
                                    ? "The model generated only whitespace: it has not learned enough yet (random "
                                      "weights and a few steps)."
                                    : QString());
}

// ------------------------------------------------------------------ history ----

std::vector<fs::path> RunPanel::historyRuns() const {
    try {
        return RunStore(store_root_).list();
    } catch (const std::exception&) {
        return {};
    }
}

void RunPanel::refreshHistory() {
    if (!history_) return;
    const QString selected =
        history_->currentItem() ? history_->currentItem()->data(0, Qt::UserRole).toString() : QString();
    history_->clear();
    const auto runs = historyRuns();
    int shown = 0;
    for (const auto& run : runs) {
        if (++shown > 500) break;
        auto* item = new QTreeWidgetItem(history_);
        item->setData(0, Qt::UserRole, qs(run.string()));
        item->setText(0, qs(run.filename().string()));
        const json plan = read_json(run / "plan.json");
        if (plan.is_object() && plan.contains("options")) item->setText(1, describe(RunOptions::from_json(plan["options"])));
        const json result = read_json(run / "result.json");
        const bool live = session_ && session_->isActive() && session_->folder() == run;
        if (live) {
            item->setText(2, "running");
        } else if (result.is_object()) {
            const std::string status = result.value("status", std::string("failed"));
            item->setText(2, qs(status));
            item->setToolTip(2, qs(result.value("status_text", status)));
            const RunStatus st = status == "completed" ? RunStatus::Completed
                                 : status == "interrupted" ? RunStatus::Interrupted
                                                           : RunStatus::Failed;
            item->setForeground(2, status_color(st, palette()));
            const auto measured = result.value("measured_peak_bytes", std::int64_t(0));
            const auto predicted = result.value("predicted_peak_bytes", std::int64_t(0));
            const auto rss = result.value("measured_rss_peak_bytes", std::int64_t(0));
            if (measured > 0) item->setText(3, format_run_bytes(double(measured), unit_));
            if (predicted > 0) item->setText(4, format_run_bytes(double(predicted), unit_));
            if (measured > 0 && predicted > 0)
                item->setText(5, QString::asprintf("%+.1f %%", 100.0 * double(predicted - measured) / double(measured)));
            if (rss > 0) item->setText(6, format_run_bytes(double(rss), unit_));
        } else {
            item->setText(2, "failed (no result)");
            item->setToolTip(2, "The run ended together with its launcher; its events are kept");
            item->setForeground(2, status_color(RunStatus::Failed, palette()));
        }
        if (qs(run.string()) == selected) history_->setCurrentItem(item);
    }
    for (int c = 2; c < history_->columnCount(); ++c) history_->resizeColumnToContents(c);
}

std::optional<RunPanel::Loaded> RunPanel::loadRun(const fs::path& folder, QString* error) const {
    try {
        Loaded l;
        l.folder = folder;
        l.record = RunStore::load(folder);
        l.label = qs(folder.filename().string());
        const json plan = read_json(folder / "plan.json");
        if (plan.is_object() && plan.contains("options")) l.options = RunOptions::from_json(plan["options"]);
        std::ifstream rss(folder / "rss.csv");
        double t = 0;
        char comma = 0;
        long long bytes = 0;
        while (rss >> t >> comma >> bytes) {
            l.rss.push_back({t, double(bytes)});
            if (l.rss.size() > RunSession::kRssSamples * 2) {
                std::vector<QPointF> merged;
                for (size_t i = 0; i + 1 < l.rss.size(); i += 2)
                    merged.push_back(l.rss[i].y() >= l.rss[i + 1].y() ? l.rss[i] : l.rss[i + 1]);
                l.rss = std::move(merged);
            }
        }
        const json launcher = read_json(folder / "launcher.json");
        if (launcher.is_object()) l.stop_message = qs(launcher.value("stop_message", std::string()));
        l.log = read_tail(folder / "stderr.log", 256 * 1024);
        return l;
    } catch (const std::exception& e) {
        if (error) *error = QString("cannot open the run %1: %2").arg(qs(folder.string()), e.what());
        return std::nullopt;
    }
}

bool RunPanel::openRun(const fs::path& folder, QString* error) {
    if (session_ && session_->isActive() && session_->folder() == folder) {
        showLive();
        return true;
    }
    auto l = loadRun(folder, error);
    if (!l) return false;
    loaded_ = std::move(l);
    if (overlay_ && overlay_->folder == folder) overlay_.reset();
    setSettingsVisible(false);
    log_->clear();
    QStringList lines;
    for (const auto& s : loaded_->record.logs()) lines << "trainer › " + qs(s);
    log_->setPlainText(loaded_->log + (loaded_->log.isEmpty() ? "" : "\n") + lines.join('\n'));
    refresh(true);
    refreshSummary();
    return true;
}

void RunPanel::showLive() {
    loaded_.reset();
    log_->clear();
    if (session_) {
        log_->appendPlainText("$ " + trainer_.path + " " + session_->arguments().join(' '));
        QStringList lines;
        for (const QString& l : session_->stderrTail()) lines << l;
        for (const auto& l : session_->record().logs()) lines << "trainer › " + qs(l);
        log_->appendPlainText(lines.join('\n'));
        session_->takeNewStderr();
        logs_seen_ = session_->record().logs().size();
    }
    refresh(true);
    refreshSummary();
}

bool RunPanel::overlayRun(const fs::path& folder, QString* error) {
    if (folder == shownFolder()) {
        if (error) *error = "that is the run already shown; choose another one to compare";
        return false;
    }
    auto l = loadRun(folder, error);
    if (!l) return false;
    overlay_ = std::move(l);
    refresh(true);
    return true;
}

void RunPanel::clearOverlay() {
    overlay_.reset();
    refresh(true);
}

// ------------------------------------------------------------------ exports ----

ExportResult RunPanel::exportCharts(const QString& dir, const QStringList& formats, const ImageOptions& options) {
    ExportResult result;
    if (!shownRecord()) {
        result.errors << "there is no run to export";
        return result;
    }
    QDir().mkpath(dir);
    const fs::path folder = shownFolder();
    const QString base = folder.empty() ? QString("run") : qs(folder.filename().string());
    const RunChartInputs in = chartInputs();
    const std::vector<std::pair<QString, TimeChartData>> charts = {
        {"memory", run_memory_chart(in)}, {"loss", run_loss_chart(in)}, {"throughput", run_throughput_chart(in)}};
    const ChartData summary = summaryChart();
    const Table table = summaryTable();
    for (const QString& f : formats) {
        QString error;
        if (f == "png" || f == "svg" || f == "pdf") {
            for (const auto& [name, data] : charts) {
                const QString path = QDir(dir).filePath(base + "-" + name + "." + f);
                if (export_time_chart(data, path, options, &error)) result.files << path;
                else result.errors << error;
            }
            const QString path = QDir(dir).filePath(base + "-summary." + f);
            if (export_chart(summary, path, options, &error)) result.files << path;
            else result.errors << error;
        } else if (f == "csv" || f == "md") {
            const QString path = QDir(dir).filePath(base + "-summary." + f);
            if (export_table(table, path, &error)) result.files << path;
            else result.errors << error;
        } else {
            result.errors << "unknown format '" + f + "' (png, svg, pdf, csv, md)";
        }
    }
    return result;
}

void RunPanel::exportMenu(int which) {
    if (!shownRecord()) {
        QMessageBox::information(this, "Export", "There is no run to export yet.");
        return;
    }
    const fs::path folder = shownFolder();
    const QString base = folder.empty() ? QString("run") : qs(folder.filename().string());
    const char* names[] = {"memory", "loss", "throughput", "summary", "summary"};
    const char* what[] = {"memory chart", "loss chart", "throughput chart", "predicted vs measured chart", "summary table"};
    const bool chart = which < 4;
    ExportDialog dialog(what[which], QDir::home().filePath(base + "-" + names[which] + (chart ? ".png" : ".csv")), chart, this);
    if (dialog.exec() != QDialog::Accepted) return;
    QString error;
    bool ok = false;
    const RunChartInputs in = chartInputs();
    switch (which) {
        case 0: ok = export_time_chart(run_memory_chart(in), dialog.path(), dialog.options(), &error); break;
        case 1: ok = export_time_chart(run_loss_chart(in), dialog.path(), dialog.options(), &error); break;
        case 2: ok = export_time_chart(run_throughput_chart(in), dialog.path(), dialog.options(), &error); break;
        case 3: ok = export_chart(summaryChart(), dialog.path(), dialog.options(), &error); break;
        default: ok = export_table(summaryTable(), dialog.path(), &error); break;
    }
    if (!ok) QMessageBox::warning(this, "Export", error);
}

void RunPanel::exportAllDialog() {
    if (!shownRecord()) {
        QMessageBox::information(this, "Export", "There is no run to export yet.");
        return;
    }
    const QString dir = QFileDialog::getExistingDirectory(this, "Export the run's charts and summary to", QDir::homePath());
    if (dir.isEmpty()) return;
    const ExportResult r = exportCharts(dir, {"png", "svg", "pdf", "csv", "md"}, ImageOptions{});
    if (r.ok()) QMessageBox::information(this, "Export", QString("Wrote %1 files to %2.").arg(r.files.size()).arg(dir));
    else QMessageBox::warning(this, "Export", r.errors.join('\n'));
}

// ------------------------------------------------------------------ closing ----

void RunPanel::guardClose(QWidget* window) {
    if (window) window->installEventFilter(this);
}

bool RunPanel::confirmClose(QWidget* window) {
    if (!isRunning()) return true;
    if (closing_window_) return false;   // already stopping for this close
    QMessageBox box(QMessageBox::Question, "A training run is in progress", "Stop the run and close Wingspan?",
                    QMessageBox::NoButton, this);
    box.setObjectName("closeDuringRun");
    box.setInformativeText(QString("Wingspan sends SIGTERM: the trainer finishes its step, saves a checkpoint and exits "
                                   "(it is killed if that takes more than %1 s). The run stays in the history.")
                               .arg(kill_timeout_ms_ / 1000));
    QPushButton* yes = box.addButton("Stop and close", QMessageBox::AcceptRole);
    box.addButton("Keep running", QMessageBox::RejectRole);
    box.setDefaultButton(yes);
    box.exec();
    if (box.clickedButton() != yes) return false;
    closing_window_ = window;
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
    // The settings follow the planner while the run tab is out of sight, applied when it shows
    // (not on every slider move: the planner's frame budget is not ours to spend).
    QObject::connect(&window, &MainWindow::planChanged, panel, [panel] { panel->plan_pending_ = true; });
    panel->plan_source_ = [&window] { return window.plan(); };
    panel->unit_source_ = [&window] { return window.unit(); };
    QObject::connect(&window, &MainWindow::trainRequested, panel, [&window, panel, index](const Plan& plan) {
        window.tabs()->setCurrentIndex(index);
        panel->setUnit(window.unit());
        panel->trainPlan(plan);
    });
    panel->guardClose(&window);
    return panel;
}

}  // namespace wingspan::ui
