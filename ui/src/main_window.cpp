#include "wingspan/ui/main_window.hpp"
#include "wingspan/ui/recipe_dialog.hpp"
#include "wingspan/ui/hub_dialog.hpp"
#include "wingspan/ui/calibration_dialog.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QButtonGroup>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QCompleter>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMetaMethod>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QSettings>
#include <QShortcut>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStringListModel>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "wingspan/errors.hpp"
#include "wingspan/ui/machine_dialog.hpp"

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

constexpr std::int64_t kSeqSteps[] = {128,  192,   256,   384,   512,   768,   1024,  1536,  2048,  3072,  4096,
                                      6144, 8192,  12288, 16384, 24576, 32768, 49152, 65536, 98304, 131072};
constexpr int kSeqStepCount = int(std::size(kSeqSteps));
constexpr int kSizeSteps = 1000;

int seq_position(std::int64_t seq) {
    int best = 0;
    for (int i = 0; i < kSeqStepCount; ++i)
        if (std::fabs(std::log(double(kSeqSteps[i]) / double(seq))) < std::fabs(std::log(double(kSeqSteps[best]) / double(seq))))
            best = i;
    return best;
}

constexpr LinearRole kTargetRoles[7] = {LinearRole::Q,    LinearRole::K,  LinearRole::V,   LinearRole::O,
                                        LinearRole::Gate, LinearRole::Up, LinearRole::Down};

enum TabIndex { TabMachines = 0, TabMethods = 1, TabSizes = 2, TabWhich = 3 };
enum TableIndex { TableMethods = 0, TableSizes = 1, TableMachines = 2 };

template <typename E>
void add_enum_items(QComboBox* combo, std::initializer_list<std::pair<E, const char*>> items) {
    for (const auto& [value, label] : items) combo->addItem(label, QString(to_string(value)));
}

template <typename E>
void select_enum(QComboBox* combo, E value) {
    const int i = combo->findData(QString(to_string(value)));
    if (i >= 0) combo->setCurrentIndex(i);
}

QLabel* hint_label(const QString& text) {
    auto* l = new QLabel(text);
    l->setWordWrap(true);
    QFont f = l->font();
    f.setPointSizeF(f.pointSizeF() * 0.9);
    l->setFont(f);
    l->setForegroundRole(QPalette::PlaceholderText);
    return l;
}

int machine_rank(const MachineProfile& m) {
    // GPUs first, then unified memory, then CPU-only; the user's own last.
    const int kind = m.kind == MachineKind::Gpu ? 0 : m.kind == MachineKind::Unified ? 1 : 2;
    return (m.user_defined ? 10 : 0) + kind;
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
    if (!user_error.isEmpty()) statusBar()->showMessage(user_error, 15000);
}

MainWindow::~MainWindow() = default;

void MainWindow::buildErrorPage() {
    setWindowTitle("Wingspan — profiles not found");
    auto* page = new QWidget;
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(48, 40, 48, 40);
    auto* icon = new QLabel;
    icon->setPixmap(app_icon().pixmap(72, 72));
    auto* title = new QLabel("<h2>Wingspan cannot find its profiles</h2>");
    auto* text = new QLabel(
        "The models, machines and frameworks Wingspan computes with live in a <tt>profiles</tt> folder that ships "
        "with the program. It could not be loaded:<br><br><b>" +
        load_error_.toHtmlEscaped() +
        "</b><br><br>Wingspan looks in <tt>$WINGSPAN_PROFILES</tt>, then <tt>../share/wingspan/profiles</tt> next to "
        "the program, then the source tree it was built from. Reinstall the package, or set "
        "<tt>WINGSPAN_PROFILES</tt> to the folder and start Wingspan again.");
    text->setObjectName("loadError");
    text->setWordWrap(true);
    text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* quit = new QPushButton("&Quit");
    connect(quit, &QPushButton::clicked, this, &QWidget::close);
    layout->addWidget(icon);
    layout->addWidget(title);
    layout->addWidget(text);
    layout->addStretch();
    layout->addWidget(quit, 0, Qt::AlignRight);
    setCentralWidget(page);
}

void MainWindow::buildUi() {
    auto* splitter = new QSplitter(Qt::Horizontal);
    splitter->setChildrenCollapsible(false);

    auto* inputs_scroll = new QScrollArea;
    inputs_scroll->setWidgetResizable(true);
    inputs_scroll->setFrameShape(QFrame::NoFrame);
    QWidget* inputs = buildInputs();
    inputs_scroll->setWidget(inputs);
    // A fixed-size label: its text follows the size slider on every step, and a label that can
    // change size would make the whole panel lay itself out again each time.
    size_label_->setWordWrap(false);
    size_label_->setFixedSize(inputs->sizeHint().width() - 40, size_label_->fontMetrics().lineSpacing() * 2 + 4);
    inputs_scroll->setMinimumWidth(inputs->sizeHint().width() + 14);
    inputs_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);

    // Middle: the charts and tables.
    tabs_ = new QTabWidget;
    tabs_->setObjectName("tabs");
    tabs_->setDocumentMode(true);
    machine_chart_ = new MemoryChartWidget;
    machine_chart_->setObjectName("machineChart");
    machine_chart_->setWhatsThis("One stacked bar per machine: each colour is a component of memory at the peak of a "
                                 "training step. The dashed line is what the machine can use. Hover a segment for "
                                 "its bytes and formula; with the keyboard, use the arrow keys.");
    tabs_->addTab(machine_chart_, "&Machines");

    auto make_table = [&](int which, const QString& name) {
        auto* view = new QTableView;
        view->setObjectName(name);
        table_models_[which] = new TableModel(view);
        view->setModel(table_models_[which]);
        view->setAlternatingRowColors(true);
        view->setSelectionBehavior(QAbstractItemView::SelectRows);
        view->setEditTriggers(QAbstractItemView::NoEditTriggers);
        view->verticalHeader()->setVisible(false);
        view->horizontalHeader()->setStretchLastSection(false);
        view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
        view->setWordWrap(false);
        table_views_[which] = view;
        return view;
    };
    {
        auto* split = new QSplitter(Qt::Vertical);
        methods_chart_ = new MemoryChartWidget;
        methods_chart_->setObjectName("methodsChart");
        split->addWidget(methods_chart_);
        split->addWidget(make_table(TableMethods, "methodTable"));
        split->setStretchFactor(0, 1);
        split->setStretchFactor(1, 0);
        split->setSizes({640, 150});
        tabs_->addTab(split, "M&ethods");
    }
    {
        auto* split = new QSplitter(Qt::Vertical);
        sizes_chart_ = new MemoryChartWidget;
        sizes_chart_->setObjectName("sizesChart");
        split->addWidget(sizes_chart_);
        split->addWidget(make_table(TableSizes, "sizeTable"));
        split->setStretchFactor(0, 1);
        split->setStretchFactor(1, 0);
        split->setSizes({560, 230});
        tabs_->addTab(split, "&Sizes");
    }
    {
        auto* page = new QWidget;
        auto* layout = new QVBoxLayout(page);
        auto* data_row = new QHBoxLayout;
        auto* title = new QLabel("<b>Data set</b>");
        examples_ = new QSpinBox;
        examples_->setObjectName("examples");
        examples_->setRange(1, 100000000);
        examples_->setGroupSeparatorShown(true);
        examples_->setToolTip("Training examples. Changes time and cost only, never memory.");
        tokens_ = new QSpinBox;
        tokens_->setObjectName("tokensPerExample");
        tokens_->setRange(1, 10000000);
        tokens_->setGroupSeparatorShown(true);
        tokens_->setToolTip("Average tokens per example (prompt + answer). Changes time and cost only.");
        epochs_ = new QSpinBox;
        epochs_->setObjectName("epochs");
        epochs_->setRange(1, 1000);
        epochs_->setToolTip("Passes over the data set. Changes time and cost only.");
        auto* ex_label = new QLabel("E&xamples");
        ex_label->setBuddy(examples_);
        auto* tok_label = new QLabel("× t&okens each");
        tok_label->setBuddy(tokens_);
        auto* ep_label = new QLabel("× e&pochs");
        ep_label->setBuddy(epochs_);
        dataset_total_ = new QLabel;
        dataset_total_->setObjectName("datasetTotal");
        data_row->addWidget(title);
        data_row->addSpacing(8);
        data_row->addWidget(ex_label);
        data_row->addWidget(examples_);
        data_row->addWidget(tok_label);
        data_row->addWidget(tokens_);
        data_row->addWidget(ep_label);
        data_row->addWidget(epochs_);
        data_row->addSpacing(8);
        data_row->addWidget(dataset_total_);
        data_row->addStretch();
        layout->addLayout(data_row);
        layout->addWidget(make_table(TableMachines, "machineTable"), 1);
        layout->addWidget(hint_label("Max batch and max sequence: the largest values that still fit each machine, "
                                     "found by core's solver with everything else as above. Time and cost use the "
                                     "machine's estimated tokens/s and its rental price where it has one."));
        tabs_->addTab(page, "&Which machine trains what");
        for (QSpinBox* s : {examples_, tokens_, epochs_})
            connect(s, &QSpinBox::valueChanged, this, &MainWindow::readControls);
    }
    connect(tabs_, &QTabWidget::currentChanged, this, [this] { refreshVisibleTables(); });

    splitter->addWidget(inputs_scroll);
    splitter->addWidget(tabs_);
    splitter->addWidget(buildMachinesPanel());
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    splitter->setStretchFactor(2, 0);
    splitter->setSizes({inputs->sizeHint().width() + 14, 900, 340});

    stack_ = new QStackedWidget;
    stack_->addWidget(splitter);
    setCentralWidget(stack_);
    resize(1560, 960);
    populateModels();
    populateMachines();
}

QWidget* MainWindow::buildInputs() {
    auto* panel = new QWidget;
    auto* v = new QVBoxLayout(panel);
    v->setContentsMargins(10, 8, 6, 8);

    // --- model
    auto* model_box = new QGroupBox("Model");
    auto* mf = new QVBoxLayout(model_box);
    model_ = new QComboBox;
    model_->setObjectName("modelSearch");
    model_->setEditable(true);
    model_->setInsertPolicy(QComboBox::NoInsert);
    model_->setMaxVisibleItems(20);
    model_->lineEdit()->setPlaceholderText("Search models…");
    model_->setToolTip("The model to train. Its parameter count sets the weights, gradients and optimizer state;\n"
                       "its width, depth and vocabulary set the activations and logits. Type to search.");
    auto* model_label = new QLabel("&Model:");
    model_label->setBuddy(model_);
    mf->addWidget(model_label);
    mf->addWidget(model_);
    model_info_ = new QLabel;
    model_info_->setObjectName("modelInfo");
    model_info_->setTextFormat(Qt::PlainText);
    model_info_->setWordWrap(true);
    mf->addWidget(model_info_);
    size_ = new QSlider(Qt::Horizontal);
    size_->setObjectName("sizeSlider");
    size_->setRange(0, kSizeSteps);
    size_->setPageStep(50);
    size_->setToolTip("Walks the model's family by size, between its real members (interpolating width, depth and\n"
                      "MLP ratio). Every byte of weights, gradients and optimizer state grows with it.");
    auto* size_caption = new QLabel("Si&ze in this family:");
    size_caption->setBuddy(size_);
    size_label_ = new QLabel;
    size_label_->setObjectName("sizeLabel");
    size_label_->setTextFormat(Qt::PlainText);
    size_label_->setWordWrap(true);
    mf->addWidget(size_caption);
    mf->addWidget(size_);
    mf->addWidget(size_label_);
    auto* import = new QPushButton("&Import config.json…");
    import->setToolTip("Plan for any Hugging Face model: open its config.json (hidden size, layers, heads, vocab, ...)");
    connect(import, &QPushButton::clicked, this, &MainWindow::importConfigDialog);
    auto* from_hub = new QPushButton("Add from &Hub…");
    from_hub->setObjectName("addFromHub");
    from_hub->setToolTip("Any model on the Hugging Face Hub by its id: reads config.json and the safetensors "
                         "headers (exact parameter count), never the weights; remembered for next time");
    connect(from_hub, &QPushButton::clicked, this, &MainWindow::importFromHubDialog);
    auto* import_row = new QHBoxLayout;
    import_row->addWidget(import);
    import_row->addWidget(from_hub);
    import_row->addStretch(1);
    mf->addLayout(import_row);
    v->addWidget(model_box);
    connect(model_, &QComboBox::activated, this, &MainWindow::onModelActivated);
    connect(size_, &QSlider::valueChanged, this, &MainWindow::onSizeSlider);

    // --- method
    auto* method_box = new QGroupBox("Method");
    auto* mg = new QVBoxLayout(method_box);
    auto* radios = new QGridLayout;
    method_ = new QButtonGroup(this);
    const std::pair<Method, const char*> methods[] = {
        {Method::Full, "&Full fine-tune"}, {Method::Lora, "&LoRA"}, {Method::Qlora, "&QLoRA"}, {Method::Serve, "Ser&ve"}};
    const char* method_tips[] = {
        "Every weight trains: 16-bit weights + gradients, fp32 master copy and two fp32 Adam moments —\n"
        "about 16 bytes per parameter before activations.",
        "The base is frozen in 16 bits (2 bytes per parameter); only small adapters train, so gradients and\n"
        "optimizer state shrink to the adapters' size.",
        "Like LoRA, with the frozen base stored in 4-bit NF4 (about 0.5 bytes per parameter plus quantization\n"
        "constants), dequantized block by block in the forward pass. Slower, much smaller.",
        "No training: weights plus the KV cache for the context (sequence) and the number of concurrent sequences (batch)."};
    const char* method_names[] = {"methodFull", "methodLora", "methodQlora", "methodServe"};
    for (int i = 0; i < 4; ++i) {
        auto* r = new QRadioButton(methods[i].second);
        r->setObjectName(method_names[i]);
        r->setToolTip(method_tips[i]);
        method_->addButton(r, int(methods[i].first));
        radios->addWidget(r, i / 2, i % 2);
    }
    mg->addLayout(radios);
    connect(method_, &QButtonGroup::idClicked, this, &MainWindow::readControls);

    lora_box_ = new QWidget;
    auto* lf = new QFormLayout(lora_box_);
    lf->setContentsMargins(0, 4, 0, 0);
    rank_ = new QSlider(Qt::Horizontal);
    rank_->setObjectName("rankSlider");
    rank_->setRange(0, 10);
    rank_->setPageStep(1);
    rank_->setToolTip("LoRA rank r: each targeted d_in × d_out weight gets r·(d_in + d_out) trainable parameters.\n"
                      "Doubling r doubles the adapters, their gradients and their optimizer state.");
    rank_label_ = new QLabel;
    rank_label_->setMinimumWidth(36);
    auto* rank_row = new QHBoxLayout;
    rank_row->addWidget(rank_, 1);
    rank_row->addWidget(rank_label_);
    auto* rank_caption = new QLabel("&Rank:");
    rank_caption->setBuddy(rank_);
    lf->addRow(rank_caption, rank_row);
    auto* targets = new QGridLayout;
    targets->setHorizontalSpacing(6);
    const char* target_names[7] = {"q", "k", "v", "o", "gate", "up", "down"};
    for (int i = 0; i < 7; ++i) {
        targets_[i] = new QCheckBox(target_names[i]);
        targets_[i]->setObjectName(QString("target_") + target_names[i]);
        targets_[i]->setToolTip(QString("Put adapters on the %1 projection of every layer: more adapter parameters,\n"
                                        "and the LoRA branch keeps its input for the backward pass.")
                                    .arg(target_names[i]));
        targets->addWidget(targets_[i], i / 4, i % 4);
        connect(targets_[i], &QCheckBox::toggled, this, &MainWindow::readControls);
    }
    lf->addRow("Targets:", targets);
    quant_row_ = new QWidget;
    quant_ = new QComboBox;
    quant_->setObjectName("quantization");
    quant_->addItem("NF4 + double quant (QLoRA default)", "nf4-dq");
    quant_->addItem("NF4, 64-element blocks", "nf4");
    quant_->addItem("int8", "int8");
    quant_->addItem("None (16-bit)", "none");
    quant_->setToolTip("How the frozen base is stored: NF4 is 0.5 bytes per parameter plus one constant per 64-element\n"
                       "block; double quantization stores those constants in 8 bits too. int8 is 1 byte per parameter.");
    lf->addRow("&Base:", quant_);
    mg->addWidget(lora_box_);
    connect(rank_, &QSlider::valueChanged, this, [this] {
        from_slider_ = true;
        readControls();
        from_slider_ = false;
    });
    connect(quant_, &QComboBox::currentIndexChanged, this, &MainWindow::readControls);
    v->addWidget(method_box);

    // --- sequence and batch
    auto* run_box = new QGroupBox("Batch and sequence");
    auto* rf = new QFormLayout(run_box);
    seq_ = new QSlider(Qt::Horizontal);
    seq_->setObjectName("seqSlider");
    seq_->setRange(0, kSeqStepCount - 1);
    seq_->setPageStep(2);
    seq_->setToolTip("Tokens per sequence (log scale, 128 to 128k). Activations and logits grow with it —\n"
                     "linearly with SDPA/flash attention, quadratically with eager attention's score matrix.");
    seq_spin_ = new QSpinBox;
    seq_spin_->setObjectName("seqSpin");
    seq_spin_->setRange(1, 1 << 20);
    seq_spin_->setGroupSeparatorShown(true);
    seq_spin_->setToolTip(seq_->toolTip());
    auto* seq_caption = new QLabel("Se&quence (tokens):");
    seq_caption->setBuddy(seq_spin_);
    rf->addRow(seq_caption, seq_spin_);
    rf->addRow(seq_);
    batch_ = new QSpinBox;
    batch_->setObjectName("batchSpin");
    batch_->setRange(1, 4096);
    batch_->setToolTip("Sequences per forward pass (micro-batch). Only activations and logits grow with it —\n"
                       "weights, gradients and optimizer state do not. Serving: concurrent sequences in the KV cache.");
    auto* batch_caption = new QLabel("Micro-&batch:");
    batch_caption->setBuddy(batch_);
    rf->addRow(batch_caption, batch_);
    accum_ = new QSpinBox;
    accum_->setObjectName("gradAccumSpin");
    accum_->setRange(1, 4096);
    accum_->setToolTip("Gradient accumulation: micro-batches per optimizer step. A larger effective batch for no extra\n"
                       "memory — gradients are summed in place. Changes time per step, not the peak.");
    auto* accum_caption = new QLabel("Gradient &accumulation:");
    accum_caption->setBuddy(accum_);
    rf->addRow(accum_caption, accum_);
    ckpt_ = new QCheckBox("Gradient &checkpointing");
    ckpt_->setObjectName("gradCheckpointing");
    ckpt_->setToolTip("Keep only each layer's input and recompute the rest in the backward pass: activations drop\n"
                      "from every layer's intermediates to one layer's, for about a third more compute.");
    rf->addRow(ckpt_);
    v->addWidget(run_box);
    connect(seq_, &QSlider::valueChanged, this, [this](int pos) {
        if (syncing_) return;
        syncing_ = true;
        seq_spin_->setValue(int(kSeqSteps[std::clamp(pos, 0, kSeqStepCount - 1)]));
        syncing_ = false;
        from_slider_ = true;
        readControls();
        from_slider_ = false;
    });
    connect(seq_spin_, &QSpinBox::valueChanged, this, [this](int value) {
        if (syncing_) return;
        syncing_ = true;
        seq_->setValue(seq_position(value));
        syncing_ = false;
        readControls();
    });
    connect(batch_, &QSpinBox::valueChanged, this, &MainWindow::readControls);
    connect(accum_, &QSpinBox::valueChanged, this, &MainWindow::readControls);
    connect(ckpt_, &QCheckBox::toggled, this, &MainWindow::readControls);

    // --- advanced
    advanced_toggle_ = new QToolButton;
    advanced_toggle_->setObjectName("advancedToggle");
    advanced_toggle_->setText("Precision, optimizer, devices…");
    advanced_toggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    advanced_toggle_->setArrowType(Qt::RightArrow);
    advanced_toggle_->setCheckable(true);
    advanced_toggle_->setAutoRaise(true);
    v->addWidget(advanced_toggle_);
    advanced_box_ = new QGroupBox;
    auto* af = new QFormLayout(advanced_box_);
    precision_ = new QComboBox;
    precision_->setObjectName("precision");
    add_enum_items<Precision>(precision_, {{Precision::Bf16Mixed, "bf16 mixed (fp32 master weights)"},
                                           {Precision::Fp16Mixed, "fp16 mixed (for GPUs without bf16)"},
                                           {Precision::Bf16, "pure bf16"},
                                           {Precision::Fp32, "fp32"}});
    precision_->setToolTip("Bytes per weight and activation. Mixed precision keeps 16-bit weights plus an fp32 master copy\n"
                           "of what trains (4 more bytes per trainable parameter); fp32 doubles weights and activations.\n"
                           "Machines without bf16 (T4, P100) run fp16 mixed instead.");
    af->addRow("&Precision:", precision_);
    optimizer_ = new QComboBox;
    optimizer_->setObjectName("optimizer");
    add_enum_items<Optimizer>(optimizer_, {{Optimizer::AdamW, "AdamW (two fp32 moments, 8 B/param)"},
                                           {Optimizer::AdamW8bit, "8-bit AdamW (2 B/param)"},
                                           {Optimizer::PagedAdamW8bit, "Paged 8-bit AdamW"},
                                           {Optimizer::Sgd, "SGD with momentum (4 B/param)"},
                                           {Optimizer::Adafactor, "Adafactor (factored, tiny)"}});
    optimizer_->setToolTip("Optimizer state per trainable parameter: AdamW keeps two fp32 moments (8 bytes), 8-bit AdamW\n"
                           "2 bytes, SGD with momentum 4 bytes, Adafactor a few bytes per row and column.");
    af->addRow("&Optimizer:", optimizer_);
    attention_ = new QComboBox;
    attention_->setObjectName("attention");
    add_enum_items<Attention>(attention_, {{Attention::Sdpa, "SDPA (memory-efficient)"},
                                           {Attention::Flash, "FlashAttention"},
                                           {Attention::Eager, "Eager (materialises scores)"}});
    attention_->setToolTip("Eager attention stores the heads × seq × seq score matrix per layer for the backward pass;\n"
                           "SDPA and FlashAttention never materialise it, so activations stay linear in the sequence.");
    af->addRow("A&ttention:", attention_);
    loss_chunk_ = new QSpinBox;
    loss_chunk_->setObjectName("lossChunk");
    loss_chunk_->setRange(0, 1 << 20);
    loss_chunk_->setSingleStep(256);
    loss_chunk_->setSpecialValueText("off (whole batch)");
    loss_chunk_->setToolTip("Compute the cross-entropy over this many tokens at a time: the fp32 logits buffer\n"
                            "(tokens × vocabulary × 4 bytes) shrinks to one chunk.");
    af->addRow("&Loss chunk:", loss_chunk_);
    train_embeddings_ = new QCheckBox("Train embeddings and head too");
    train_embeddings_->setObjectName("trainEmbeddings");
    train_embeddings_->setToolTip("LoRA/QLoRA: the embedding and output head train fully (new tokens, chat templates):\n"
                                  "their gradients, master copy and optimizer state are added.");
    af->addRow(train_embeddings_);
    devices_ = new QSpinBox;
    devices_->setObjectName("devices");
    devices_->setRange(1, 1024);
    devices_->setToolTip("GPUs training together. With DDP every device holds everything; ZeRO and FSDP split\n"
                         "optimizer state (1), gradients (2) and weights (3/FSDP) across them.");
    af->addRow("&Devices:", devices_);
    sharding_ = new QComboBox;
    sharding_->setObjectName("sharding");
    add_enum_items<Sharding>(sharding_, {{Sharding::None, "None (one device)"},
                                         {Sharding::Ddp, "DDP (replicate)"},
                                         {Sharding::Zero1, "ZeRO-1 (shard optimizer)"},
                                         {Sharding::Zero2, "ZeRO-2 (+ gradients)"},
                                         {Sharding::Zero3, "ZeRO-3 (+ weights)"},
                                         {Sharding::Fsdp, "FSDP (full shard)"}});
    sharding_->setToolTip(devices_->toolTip());
    af->addRow("S&harding:", sharding_);
    offload_ = new QCheckBox("Offload optimizer to host RAM");
    offload_->setObjectName("offload");
    offload_->setToolTip("Optimizer state and fp32 master weights move to system RAM: the GPU holds less, the step\n"
                         "is slower. On unified memory it is the same pool, so nothing is saved.");
    af->addRow(offload_);
    framework_ = new QComboBox;
    framework_->setObjectName("framework");
    framework_->addItem("Each machine's own", QString());
    for (const auto& f : lib_->frameworks()) framework_->addItem(qs(f.name), qs(f.id));
    framework_->setToolTip("The framework's fixed costs: runtime context, kernel workspaces and allocator slack (the\n"
                           "hatched segment), and its speed. By default each machine uses its own (CUDA, MLX, CPU).");
    af->addRow("&Framework:", framework_);
    advanced_box_->setVisible(false);
    v->addWidget(advanced_box_);
    connect(advanced_toggle_, &QToolButton::toggled, this, [this](bool on) {
        advanced_box_->setVisible(on);
        advanced_toggle_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    });
    for (QComboBox* c : {precision_, optimizer_, attention_, sharding_, framework_})
        connect(c, &QComboBox::currentIndexChanged, this, &MainWindow::readControls);
    for (QSpinBox* s : {loss_chunk_, devices_}) connect(s, &QSpinBox::valueChanged, this, &MainWindow::readControls);
    for (QCheckBox* c : {offload_, train_embeddings_}) connect(c, &QCheckBox::toggled, this, &MainWindow::readControls);

    v->addStretch();
    return panel;
}

QWidget* MainWindow::buildMachinesPanel() {
    auto* panel = new QWidget;
    panel->setMinimumWidth(300);
    auto* v = new QVBoxLayout(panel);
    v->setContentsMargins(6, 8, 10, 8);
    auto* title = new QLabel("Mac&hines");
    QFont tf = title->font();
    tf.setBold(true);
    title->setFont(tf);
    machines_ = new QTreeWidget;
    machines_->setObjectName("machineList");
    title->setBuddy(machines_);
    machines_->setColumnCount(2);
    machines_->setHeaderLabels({"Machine", "Verdict"});
    machines_->setRootIsDecorated(false);
    machines_->setUniformRowHeights(true);
    machines_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    // A fixed verdict column: measuring every row's text on each slider move costs a frame.
    machines_->header()->setSectionResizeMode(1, QHeaderView::Fixed);
    machines_->header()->resizeSection(1, machines_->fontMetrics().horizontalAdvance("✗ short 1,234.5 GB") + 14);
    machines_->header()->setStretchLastSection(false);
    machines_->setToolTip("Tick the machines to compare. Space toggles the selected row.");
    connect(machines_, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem*, int column) {
        if (column == 0) readControls();
    });
    connect(machines_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
        const bool mine = item && item->data(0, Qt::UserRole + 1).toBool();
        edit_machine_->setEnabled(mine);
        remove_machine_->setEnabled(mine);
    });
    v->addWidget(title);
    v->addWidget(machines_, 1);

    auto* sel = new QHBoxLayout;
    auto* all = new QPushButton("All");
    all->setToolTip("Select every machine");
    auto* none = new QPushButton("None");
    auto* lesson = new QPushButton("Lesson's");
    lesson->setToolTip("The lessons' machines: RTX 4090, Mac Studio M3 Ultra, T4, A100 80GB, a CPU laptop and this machine");
    auto set_all = [this](bool on) {
        syncing_ = true;
        for (int i = 0; i < machines_->topLevelItemCount(); ++i)
            machines_->topLevelItem(i)->setCheckState(0, on ? Qt::Checked : Qt::Unchecked);
        syncing_ = false;
        readControls();
    };
    connect(all, &QPushButton::clicked, this, [set_all] { set_all(true); });
    connect(none, &QPushButton::clicked, this, [set_all] { set_all(false); });
    connect(lesson, &QPushButton::clicked, this, [this] {
        Plan p = plan_;
        p.machines = Plan::lesson_default().machines;
        setPlan(p);
    });
    sel->addWidget(all);
    sel->addWidget(none);
    sel->addWidget(lesson);
    v->addLayout(sel);

    auto* mine = new QHBoxLayout;
    auto* add = new QPushButton("&Add your machine…");
    add->setObjectName("addMachine");
    connect(add, &QPushButton::clicked, this, &MainWindow::addMachineDialog);
    edit_machine_ = new QPushButton("Edit…");
    edit_machine_->setEnabled(false);
    connect(edit_machine_, &QPushButton::clicked, this, &MainWindow::editMachineDialog);
    remove_machine_ = new QPushButton("Remove");
    remove_machine_->setEnabled(false);
    connect(remove_machine_, &QPushButton::clicked, this, &MainWindow::removeUserMachine);
    mine->addWidget(add, 1);
    mine->addWidget(edit_machine_);
    mine->addWidget(remove_machine_);
    v->addLayout(mine);

    summary_ = new QLabel;
    summary_->setObjectName("summary");
    summary_->setWordWrap(true);
    summary_->setTextFormat(Qt::RichText);
    summary_->setFrameShape(QFrame::StyledPanel);
    summary_->setMargin(8);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    v->addWidget(summary_);

    auto* exports = new QHBoxLayout;
    auto* export_chart = new QPushButton("E&xport chart…");
    connect(export_chart, &QPushButton::clicked, this, &MainWindow::exportChartDialog);
    auto* export_table = new QPushButton("Export &table…");
    connect(export_table, &QPushButton::clicked, this, &MainWindow::exportTableDialog);
    exports->addWidget(export_chart);
    exports->addWidget(export_table);
    v->addLayout(exports);

    train_ = new QPushButton("Train ▶");
    train_->setObjectName("trainButton");
    train_->setToolTip("Train this plan with wingspan-train on this machine and watch its memory live");
    train_->setVisible(train_connected_);
    connect(train_, &QPushButton::clicked, this, &MainWindow::requestTrain);
    v->addWidget(train_);
    return panel;
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu("&File");
    auto add = [this](QMenu* menu, const QString& text, const QKeySequence& key, auto slot) {
        QAction* a = menu->addAction(text);
        if (!key.isEmpty()) a->setShortcut(key);
        connect(a, &QAction::triggered, this, slot);
        return a;
    };
    add(file, "&New plan (the lessons' example)", QKeySequence::New, [this] {
        plan_path_.clear();
        setPlan(Plan::lesson_default());
    });
    add(file, "&Open plan…", QKeySequence::Open, &MainWindow::openPlanDialog);
    add(file, "&Save plan", QKeySequence::Save, &MainWindow::savePlanDialog);
    add(file, "Save plan &as…", QKeySequence::SaveAs, &MainWindow::savePlanAsDialog);
    file->addSeparator();
    add(file, "&Import model config.json…", QKeySequence(), &MainWindow::importConfigDialog);
    add(file, "Add model from the &Hub…", QKeySequence("Ctrl+Shift+H"), &MainWindow::importFromHubDialog);
    add(file, "Add model from a &folder…", QKeySequence(), &MainWindow::importFromFolderDialog);
    file->addSeparator();
    add(file, "Export &chart…", QKeySequence("Ctrl+E"), &MainWindow::exportChartDialog);
    add(file, "Export &table…", QKeySequence("Ctrl+Shift+E"), &MainWindow::exportTableDialog);
    add(file, "Export course &pack…", QKeySequence("Ctrl+Shift+P"), &MainWindow::exportCoursePackDialog);
    add(file, "Export &recipe…", QKeySequence(), [this] {
        if (lib_) RecipeDialog(*lib_, plan_, recipe::default_dir(QCoreApplication::applicationFilePath().toStdString()), this).exec();
    });
    add(file, "R&un a recipe…", QKeySequence(), [this] { RunRecipeDialog(RunStore::default_root(), this).exec(); });
    file->addSeparator();
    add(file, "&Quit", QKeySequence::Quit, &QWidget::close);

    QMenu* view = menuBar()->addMenu("&View");
    unit_group_ = new QActionGroup(this);
    QAction* gb = view->addAction("Units: &GB (10⁹ bytes)");
    QAction* gib = view->addAction("Units: G&iB (2³⁰ bytes)");
    for (QAction* a : {gb, gib}) {
        a->setCheckable(true);
        unit_group_->addAction(a);
    }
    gb->setData("GB");
    gib->setData("GiB");
    gb->setChecked(true);
    connect(unit_group_, &QActionGroup::triggered, this,
            [this](QAction* a) { setUnit(a->data().toString() == "GiB" ? ByteUnit::GiB : ByteUnit::GB); });
    view->addSeparator();
    theme_group_ = new QActionGroup(this);
    for (Theme t : {Theme::System, Theme::Light, Theme::Dark}) {
        QAction* a = view->addAction(t == Theme::System ? "&System colours" : t == Theme::Light ? "&Light" : "&Dark");
        a->setCheckable(true);
        a->setData(theme_id(t));
        theme_group_->addAction(a);
    }
    theme_group_->actions().first()->setChecked(true);
    connect(theme_group_, &QActionGroup::triggered, this, [this](QAction* a) { setTheme(parse_theme(a->data().toString())); });
    view->addSeparator();
    const char* tab_names[] = {"&Machines chart", "M&ethods", "&Sizes", "&Which machine trains what"};
    for (int i = 0; i < 4; ++i) {
        QAction* a = view->addAction(tab_names[i]);
        a->setShortcut(QKeySequence(QString("Ctrl+%1").arg(i + 1)));
        connect(a, &QAction::triggered, this, [this, i] { tabs_->setCurrentIndex(i); });
    }
    QAction* find = view->addAction("&Find model");
    find->setShortcut(QKeySequence::Find);
    connect(find, &QAction::triggered, this, [this] {
        model_->setFocus(Qt::ShortcutFocusReason);
        model_->lineEdit()->selectAll();
    });

    QMenu* machines = menuBar()->addMenu("M&achines");
    add(machines, "&Add your machine…", QKeySequence("Ctrl+M"), &MainWindow::addMachineDialog);
    add(machines, "&Edit selected machine…", QKeySequence(), &MainWindow::editMachineDialog);
    add(machines, "&Remove selected machine", QKeySequence(), &MainWindow::removeUserMachine);
    machines->addSeparator();
    add(machines, "&Calibrate from my runs…", QKeySequence(), &MainWindow::calibrateDialog);

    QMenu* help = menuBar()->addMenu("&Help");
    add(help, "&About Wingspan", QKeySequence(), [this] {
        QMessageBox::about(this, "About Wingspan",
                           "<h3>Wingspan " WINGSPAN_UI_VERSION "</h3><p>A planner for fine-tuning memory: what a training "
                           "run needs, component by component, and where it fits.</p><p>Every number comes from "
                           "Wingspan's memory model; hover a bar segment to see its formula. GB = 10⁹ bytes, "
                           "GiB = 2³⁰ bytes.</p>");
    });
}

// ---------------------------------------------------------------------- population ----

void MainWindow::populateModels() {
    syncing_ = true;
    model_->clear();
    std::vector<const ModelProfile*> models;
    for (const auto& m : lib_->models()) models.push_back(&m);
    std::sort(models.begin(), models.end(), [](const ModelProfile* a, const ModelProfile* b) {
        if (a->family != b->family) return a->family < b->family;
        return a->arch.parameter_count() < b->arch.parameter_count();
    });
    QStringList names;
    for (const auto* m : models) {
        const QString text = qs(m->name) + "  ·  " + qs(format_params_short(m->arch.parameter_count()));
        model_->addItem(text, qs(m->id));
        model_->setItemData(model_->count() - 1,
                            qs(m->hf_repo.empty() ? m->id : m->hf_repo) + "\n" +
                                qs(format_count(m->arch.parameter_count())) + " parameters, family " + qs(m->family),
                            Qt::ToolTipRole);
        names << text;
    }
    auto* completer = new QCompleter(names, model_);
    completer->setCaseSensitivity(Qt::CaseInsensitive);
    completer->setFilterMode(Qt::MatchContains);
    completer->setCompletionMode(QCompleter::PopupCompletion);
    model_->setCompleter(completer);
    connect(completer, qOverload<const QString&>(&QCompleter::activated), this, [this](const QString& text) {
        const int i = model_->findText(text);
        if (i >= 0) onModelActivated(i);
    });
    connect(model_->lineEdit(), &QLineEdit::returnPressed, this, [this] {
        const QString text = model_->lineEdit()->text().trimmed();
        if (model_->findText(text) >= 0) return;
        for (int i = 0; i < model_->count(); ++i)
            if (model_->itemText(i).contains(text, Qt::CaseInsensitive) ||
                model_->itemData(i).toString().contains(text, Qt::CaseInsensitive)) {
                onModelActivated(i);
                return;
            }
        statusBar()->showMessage("No bundled model matches “" + text + "”. Try a family (qwen, llama, gemma) or a size.", 6000);
    });
    syncing_ = false;
}

void MainWindow::populateMachines() {
    syncing_ = true;
    machines_->clear();
    std::vector<const MachineProfile*> ms;
    for (const auto& m : lib_->machines()) ms.push_back(&m);
    std::stable_sort(ms.begin(), ms.end(), [](const MachineProfile* a, const MachineProfile* b) {
        if (machine_rank(*a) != machine_rank(*b)) return machine_rank(*a) < machine_rank(*b);
        if (a->id == kThisMachineId || b->id == kThisMachineId) return b->id == kThisMachineId;
        return a->usable_bytes < b->usable_bytes;
    });
    for (const auto* m : ms) {
        auto* item = new QTreeWidgetItem(machines_);
        item->setText(0, qs(short_machine_name(*m)) + (m->user_defined ? "  (yours)" : ""));
        item->setData(0, Qt::UserRole, qs(m->id));
        item->setData(0, Qt::UserRole + 1, m->user_defined);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(0, Qt::Unchecked);
        QString tip = "<b>" + qs(m->name).toHtmlEscaped() + "</b><br>" + qs(format_bytes(double(m->memory_bytes), unit_)) +
                      " memory, " + qs(format_bytes(double(usable_bytes(*m, lib_->framework_for(*m))), unit_)) +
                      " usable for training<br>" + qs(lib_->framework_for(*m).name).toHtmlEscaped();
        if (!m->bf16) tip += "<br>no bf16: trains in fp16 mixed precision";
        if (m->price_per_hour) tip += QString("<br>rents for about $%1/h").arg(*m->price_per_hour, 0, 'f', 2);
        if (auto it = m->sources.find("usable_bytes"); it != m->sources.end())
            tip += "<br><small>usable: " + qs(it->second).toHtmlEscaped() + "</small>";
        item->setToolTip(0, tip);
    }
    syncing_ = false;
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
        statusBar()->showMessage("Machines not found and left out: " + qs(list), 10000);
    }
    syncControls();
    recompute();
    emit planChanged();
}

void MainWindow::syncControls() {
    syncing_ = true;
    const TrainingSetup& s = plan_.setup;
    // Model.
    if (plan_.model.config.is_null()) {
        const int i = model_->findData(qs(plan_.model.model_id));
        if (i >= 0) model_->setCurrentIndex(i);
    }
    updateSizeSlider();
    // Method.
    if (auto* b = method_->button(int(s.method))) b->setChecked(true);
    rank_->setValue(std::clamp(int(std::lround(std::log2(double(std::max<std::int64_t>(1, s.lora_rank))))), 0, 10));
    rank_label_->setText(QString::number(s.lora_rank));
    for (int i = 0; i < 7; ++i) targets_[i]->setChecked(s.lora_targets.count(kTargetRoles[i]) > 0);
    {
        const int qi = quant_->findData(QString(to_string(s.effective_quantization())));
        quant_->setCurrentIndex(qi >= 0 ? qi : 0);
    }
    const bool lora = s.method == Method::Lora || s.method == Method::Qlora;
    rank_->setEnabled(lora);
    for (auto* t : targets_) t->setEnabled(lora);
    quant_->setEnabled(s.method == Method::Qlora || s.method == Method::Serve);
    // Sequence and batch.
    seq_spin_->setValue(int(std::min<std::int64_t>(s.seq_len, seq_spin_->maximum())));
    seq_->setValue(seq_position(s.seq_len));
    batch_->setValue(int(s.trains() ? s.micro_batch : s.serve_batch));
    accum_->setValue(int(s.grad_accum));
    accum_->setEnabled(s.trains());
    ckpt_->setChecked(s.grad_checkpointing);
    ckpt_->setEnabled(s.trains());
    // Advanced.
    select_enum(precision_, s.precision);
    select_enum(optimizer_, s.optimizer);
    optimizer_->setEnabled(s.trains());
    select_enum(attention_, s.attention);
    loss_chunk_->setValue(int(s.loss_chunk_tokens));
    train_embeddings_->setChecked(s.train_embeddings);
    train_embeddings_->setEnabled(lora);
    devices_->setValue(int(s.devices));
    select_enum(sharding_, s.sharding);
    offload_->setChecked(s.offload);
    offload_->setEnabled(s.trains());
    framework_->setCurrentIndex(std::max(0, framework_->findData(qs(plan_.framework))));
    // Data set.
    examples_->setValue(int(std::min<std::int64_t>(plan_.dataset.examples, examples_->maximum())));
    tokens_->setValue(int(std::min<std::int64_t>(plan_.dataset.tokens_per_example, tokens_->maximum())));
    epochs_->setValue(int(std::min<std::int64_t>(plan_.dataset.epochs, epochs_->maximum())));
    // Machines.
    for (int i = 0; i < machines_->topLevelItemCount(); ++i) {
        auto* item = machines_->topLevelItem(i);
        const std::string id = item->data(0, Qt::UserRole).toString().toStdString();
        const bool on = std::find(plan_.machines.begin(), plan_.machines.end(), id) != plan_.machines.end();
        item->setCheckState(0, on ? Qt::Checked : Qt::Unchecked);
    }
    syncing_ = false;
}

void MainWindow::readControls() {
    if (syncing_ || !lib_) return;
    TrainingSetup& s = plan_.setup;
    s.method = Method(method_->checkedId() >= 0 ? method_->checkedId() : int(Method::Lora));
    s.lora_rank = std::int64_t(1) << rank_->value();
    s.lora_alpha = 2.0 * double(s.lora_rank);
    s.lora_targets.clear();
    for (int i = 0; i < 7; ++i)
        if (targets_[i]->isChecked()) s.lora_targets.insert(kTargetRoles[i]);
    const Quantization q = parse_quantization(quant_->currentData().toString().toStdString());
    s.quantization = (s.method == Method::Qlora || s.method == Method::Serve) ? q : Quantization::None;
    s.seq_len = seq_spin_->value();
    s.micro_batch = batch_->value();
    s.serve_batch = batch_->value();
    s.grad_accum = accum_->value();
    s.grad_checkpointing = ckpt_->isChecked();
    s.precision = parse_precision(precision_->currentData().toString().toStdString());
    s.optimizer = parse_optimizer(optimizer_->currentData().toString().toStdString());
    s.attention = parse_attention(attention_->currentData().toString().toStdString());
    s.loss_chunk_tokens = loss_chunk_->value();
    s.train_embeddings = train_embeddings_->isChecked();
    s.devices = devices_->value();
    Sharding sh = parse_sharding(sharding_->currentData().toString().toStdString());
    // One device needs no strategy; several need one: follow what the user just changed.
    if (s.devices > 1 && sh == Sharding::None) {
        sh = Sharding::Ddp;
        syncing_ = true;
        select_enum(sharding_, sh);
        syncing_ = false;
    }
    s.sharding = sh;
    s.offload = offload_->isChecked();
    plan_.framework = framework_->currentData().toString().toStdString();
    plan_.dataset.examples = examples_->value();
    plan_.dataset.tokens_per_example = tokens_->value();
    plan_.dataset.epochs = epochs_->value();

    // Machines: keep the order they were ticked in, append new ones in list order.
    std::vector<std::string> checked;
    for (int i = 0; i < machines_->topLevelItemCount(); ++i) {
        auto* item = machines_->topLevelItem(i);
        if (item->checkState(0) == Qt::Checked) checked.push_back(item->data(0, Qt::UserRole).toString().toStdString());
    }
    std::vector<std::string> ordered;
    for (const auto& id : plan_.machines)
        if (std::find(checked.begin(), checked.end(), id) != checked.end()) ordered.push_back(id);
    for (const auto& id : checked)
        if (std::find(ordered.begin(), ordered.end(), id) == ordered.end()) ordered.push_back(id);
    plan_.machines = ordered;

    // Controls that only make sense for some methods.
    syncing_ = true;
    const bool lora = s.method == Method::Lora || s.method == Method::Qlora;
    rank_->setEnabled(lora);
    rank_label_->setText(QString::number(s.lora_rank));
    for (auto* t : targets_) t->setEnabled(lora);
    quant_->setEnabled(s.method == Method::Qlora || s.method == Method::Serve);
    accum_->setEnabled(s.trains());
    ckpt_->setEnabled(s.trains());
    optimizer_->setEnabled(s.trains());
    offload_->setEnabled(s.trains());
    train_embeddings_->setEnabled(lora);
    syncing_ = false;

    recompute();
    emit planChanged();
}

void MainWindow::updateSizeSlider() {
    const bool imported = !plan_.model.config.is_null();
    std::string family;
    std::int64_t params = 0;
    try {
        const ResolvedModel r = resolve_model(*lib_, plan_.model);
        family = r.family;
        params = r.arch.parameter_count();
    } catch (const std::exception&) {
    }
    family_ = imported ? FamilyRange{} : family_range(*lib_, family);
    const bool usable = family_.members.size() >= 2 && params > 0;
    const bool was = syncing_;
    syncing_ = true;
    size_->setEnabled(usable);
    if (usable) {
        const double lo = std::log(double(family_.min_params())), hi = std::log(double(family_.max_params()));
        const double t = (std::log(double(params)) - lo) / std::max(1e-9, hi - lo);
        size_->setValue(int(std::lround(std::clamp(t, 0.0, 1.0) * kSizeSteps)));
        size_->setToolTip("Walks the " + qs(family) + " family from " + qs(format_params_short(family_.min_params())) +
                          " to " + qs(format_params_short(family_.max_params())) +
                          ", interpolating width, depth and MLP ratio between its real members.\n"
                          "Weights, gradients and optimizer state grow with every parameter.");
    } else {
        size_->setValue(0);
        size_->setToolTip(imported ? "An imported config has no family to walk"
                                   : "This family has only one bundled model");
    }
    syncing_ = was;
}

void MainWindow::onSizeSlider(int pos) {
    if (syncing_ || family_.members.size() < 2) return;
    from_slider_ = true;
    struct Reset {
        bool& flag;
        ~Reset() { flag = false; }
    } reset{from_slider_};
    const double lo = std::log(double(family_.min_params())), hi = std::log(double(family_.max_params()));
    const std::int64_t target = std::int64_t(std::llround(std::exp(lo + (hi - lo) * double(pos) / kSizeSteps)));
    // Land exactly on a real member when the slider is close to one.
    for (const auto* m : family_.members) {
        const double mp = (std::log(double(m->arch.parameter_count())) - lo) / (hi - lo) * kSizeSteps;
        if (std::fabs(mp - pos) <= 6) {
            plan_.model = ModelChoice{};
            plan_.model.model_id = m->id;
            syncing_ = true;
            const int i = model_->findData(qs(m->id));
            if (i >= 0) model_->setCurrentIndex(i);
            syncing_ = false;
            recompute();
            emit planChanged();
            return;
        }
    }
    const std::string keep_id = plan_.model.model_id;
    plan_.model = ModelChoice{};
    plan_.model.model_id = keep_id;
    plan_.model.family = family_.family;
    plan_.model.target_params = target;
    recompute();
    emit planChanged();
}

void MainWindow::onModelActivated(int index) {
    if (syncing_ || index < 0) return;
    setModel(model_->itemData(index).toString().toStdString());
}

void MainWindow::setModel(const std::string& id) {
    plan_.model = ModelChoice{};
    plan_.model.model_id = id;
    syncing_ = true;
    const int i = model_->findData(qs(id));
    if (i >= 0) model_->setCurrentIndex(i);
    syncing_ = false;
    updateSizeSlider();
    recompute();
    emit planChanged();
}

void MainWindow::importFromHubDialog() {
    auto* dialog = new HubImportDialog(HubImportDialog::Source::Hub, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &HubImportDialog::imported, this, [this, dialog] { addImportedModel(*dialog->result()); });
    dialog->open();
}

void MainWindow::importFromFolderDialog() {
    auto* dialog = new HubImportDialog(HubImportDialog::Source::Folder, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &HubImportDialog::imported, this, [this, dialog] { addImportedModel(*dialog->result()); });
    dialog->open();
}

void MainWindow::addImportedModel(const hub::ImportedModel& m) {
    if (!lib_) return;
    try {
        hub::save_imported_profile(m, user_dir_);
    } catch (const std::exception& e) {
        statusBar()->showMessage("Imported, but not remembered: " + qs(e.what()), 8000);
    }
    lib_->add_model(m.profile);
    populateModels();
    setModel(m.profile.id);
}

void MainWindow::importConfigDialog() {
    const QString path = QFileDialog::getOpenFileName(this, "Import a Hugging Face config.json", QDir::homePath(),
                                                      "Model config (config.json *.json)");
    if (path.isEmpty()) return;
    std::ifstream in(path.toStdString());
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        QMessageBox::warning(this, "Import config.json", path + " is not a JSON object.");
        return;
    }
    try {
        Architecture::from_hf_config(j);
    } catch (const std::exception& e) {
        QMessageBox::warning(this, "Import config.json", "This config cannot be used:\n" + qs(e.what()));
        return;
    }
    plan_.model = ModelChoice{};
    plan_.model.config = j;
    QFileInfo fi(path);
    plan_.model.config_name = (fi.fileName() == "config.json" ? fi.dir().dirName() : fi.completeBaseName()).toStdString();
    syncing_ = true;
    model_->setEditText(qs(plan_.model.config_name) + " (imported)");
    syncing_ = false;
    updateSizeSlider();
    recompute();
    emit planChanged();
}

// --------------------------------------------------------------------- compute ----

void MainWindow::recompute() {
    if (!lib_) return;
    eval_ = evaluate_plan(*lib_, plan_);
    machines_data_ = machines_chart(eval_, unit_);
    machine_chart_->setData(machines_data_);
    updateSizeLabel();
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

// The size the slider stands on: follows every step, as the slider itself does.
void MainWindow::updateSizeLabel() {
    // The model resolves even when the setup does not validate: keep showing its size.
    if (eval_.model.arch.layers == 0) return;
    ParameterCounts pc;
    pc.total = eval_.model.arch.parameter_count();
    if (family_.members.size() >= 2) {
        QString size_text;
        if (eval_.model.interpolated) {
            const ModelProfile* below = nullptr;
            const ModelProfile* above = nullptr;
            for (const auto* m : family_.members) {
                if (m->arch.parameter_count() < pc.total) below = m;
                if (!above && m->arch.parameter_count() > pc.total) above = m;
            }
            size_text = qs(format_params_short(pc.total)) + " — interpolated";
            if (below && above) size_text += " between " + qs(below->name) + " and " + qs(above->name);
        } else {
            size_text = qs(format_params_short(pc.total)) + " — " + qs(eval_.model.name) + ", a real model";
        }
        size_text += "\n(" + qs(eval_.model.family) + ": " + qs(format_params_short(family_.min_params())) + " to " +
                     qs(format_params_short(family_.max_params())) + ")";
        size_label_->setText(size_text);
    } else {
        size_label_->setText(plan_.model.config.is_null() ? "the only bundled model of its family"
                                                          : "imported config: no family to walk");
    }
}

void MainWindow::updateSidePanels() {
    updateMachineVerdicts();
    updateSummary();
}

void MainWindow::updateMachineVerdicts() {
    const bool dark = palette().color(QPalette::Base).lightness() < 128;
    const QColor fits(dark ? "#3ccf9f" : "#007a5a"), tight(dark ? "#f5b342" : "#b36b00"), no(dark ? "#ff7a45" : "#c2410c");
    const bool was = syncing_;
    syncing_ = true;
    machines_->blockSignals(true);
    for (int i = 0; i < machines_->topLevelItemCount(); ++i) {
        auto* item = machines_->topLevelItem(i);
        const std::string id = item->data(0, Qt::UserRole).toString().toStdString();
        const MachineVerdict* v = nullptr;
        for (const auto& candidate : eval_.verdicts)
            if (candidate.machine->id == id) v = &candidate;
        if (!v) {
            const QString text = item->checkState(0) == Qt::Checked && !eval_.ok() ? "—" : "";
            if (item->text(1) != text) item->setText(1, text);
            item->setData(1, Qt::ForegroundRole, QVariant());
            if (!item->toolTip(1).isEmpty()) item->setToolTip(1, {});
            continue;
        }
        const double margin = double(v->margin_bytes);
        QString text;
        switch (v->fit) {
            case Fit::Fits: text = "✓ " + qs(format_bytes(margin, unit_)) + " free"; break;
            case Fit::Tight: text = "! tight, " + qs(format_bytes(margin, unit_)) + " free"; break;
            case Fit::No: text = margin < 0 ? "✗ short " + qs(format_bytes(-margin, unit_)) : "✗ host RAM"; break;
        }
        if (item->text(1) != text) item->setText(1, text);
        const QColor colour = v->fit == Fit::Fits ? fits : v->fit == Fit::Tight ? tight : no;
        if (item->foreground(1).color() != colour) item->setForeground(1, colour);
        QString tip = qs(verdict_text(*v, unit_)) + "\nneeds " + qs(format_count(v->needed_bytes)) + " bytes of " +
                      qs(format_count(v->usable_bytes)) + " usable";
        for (const auto& n : v->notes) tip += "\n" + qs(n);
        if (item->toolTip(1) != tip) item->setToolTip(1, tip);
    }
    machines_->blockSignals(false);
    syncing_ = was;
}

void MainWindow::updateSummary() {
    if (!eval_.ok()) {
        if (eval_.model.arch.layers > 0)
            model_info_->setText(qs(format_count(eval_.model.arch.parameter_count())) + " parameters · family " +
                                 qs(eval_.model.family));
        summary_->setTextFormat(Qt::PlainText);
        summary_->setText("This plan cannot be computed:\n" + qs(eval_.error) +
                          "\nChange that setting and the chart comes back.");
        return;
    }
    const ParameterCounts& pc = eval_.reference.params;
    QString info = qs(format_count(pc.total)) + " parameters";
    if (!eval_.model.family.empty() && plan_.model.config.is_null()) info += " · family " + qs(eval_.model.family);
    model_info_->setText(info);

    // Plain text: this label changes on every slider move, and rich text costs a frame.
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
    summary_->setTextFormat(Qt::PlainText);
    summary_->setText(text);
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
            methods_chart_->setData(methods_chart(*lib_, plan_, eval_, unit_));
            table_models_[which]->setTable(method_table(*lib_, plan_, eval_, unit_));
            break;
        case TableSizes: {
            std::vector<const MachineProfile*> ms;
            for (const auto& v : eval_.verdicts) ms.push_back(v.machine);
            try {
                const nlohmann::json s = size_scenario(*lib_, plan_);
                sizes_chart_->setData(size_chart(*lib_, s, ms, unit_));
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
            table_models_[which]->setTable(machine_table(*lib_, plan_, eval_, unit_));
            dataset_total_->setText("= " + qs(format_count(std::int64_t(plan_.dataset.tokens()))) + " tokens");
            break;
    }
}

const Table& MainWindow::machineTable() {
    refreshTable(TableMachines);
    return table_models_[TableMachines]->table();
}
const Table& MainWindow::methodTable() {
    refreshTable(TableMethods);
    return table_models_[TableMethods]->table();
}
const Table& MainWindow::sizeTable() {
    refreshTable(TableSizes);
    return table_models_[TableSizes]->table();
}

void MainWindow::setUnit(ByteUnit unit) {
    unit_ = unit;
    if (unit_group_)
        for (QAction* a : unit_group_->actions()) a->setChecked(a->data().toString() == qs(unit_name(unit)));
    if (lib_) {
        populateMachines();
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
        updateMachineVerdicts();
        markTablesDirty();
        refreshVisibleTables();
    });
    if (options_.save_settings) settings_timer_->start();
}

// ------------------------------------------------------------------ files ----

bool MainWindow::openPlan(const QString& path, QString* error) {
    try {
        Plan p = read_plan_file(path.toStdString());
        resolve_model(*lib_, p.model);   // an unknown model is an error, not a blank chart
        plan_path_ = path;
        setPlan(p);
        statusBar()->showMessage("Opened " + path, 5000);
        return true;
    } catch (const std::exception& e) {
        if (error) *error = qs(e.what());
        return false;
    }
}

bool MainWindow::savePlan(const QString& path, QString* error) {
    QString target = path;
    if (!target.endsWith(".json", Qt::CaseInsensitive)) target += kPlanSuffix;
    try {
        write_plan_file(plan_, target.toStdString());
        plan_path_ = target;
        recompute();
        statusBar()->showMessage("Saved " + target, 5000);
        return true;
    } catch (const std::exception& e) {
        if (error) *error = qs(e.what());
        return false;
    }
}

void MainWindow::openPlanDialog() {
    QSettings settings;
    const QString path = QFileDialog::getOpenFileName(this, "Open plan", settings.value("lastDir", QDir::homePath()).toString(),
                                                      "Wingspan plans (*.wingspan.json);;JSON (*.json)");
    if (path.isEmpty()) return;
    settings.setValue("lastDir", QFileInfo(path).absolutePath());
    QString error;
    if (!openPlan(path, &error)) QMessageBox::warning(this, "Open plan", "This plan cannot be opened:\n\n" + error);
}

void MainWindow::savePlanDialog() {
    if (plan_path_.isEmpty()) return savePlanAsDialog();
    QString error;
    if (!savePlan(plan_path_, &error)) QMessageBox::warning(this, "Save plan", error);
}

void MainWindow::savePlanAsDialog() {
    QSettings settings;
    const QString suggested =
        QDir(settings.value("lastDir", QDir::homePath()).toString()).filePath(qs(eval_.model.id) + kPlanSuffix);
    const QString path = QFileDialog::getSaveFileName(this, "Save plan", suggested, "Wingspan plans (*.wingspan.json)");
    if (path.isEmpty()) return;
    settings.setValue("lastDir", QFileInfo(path).absolutePath());
    QString error;
    if (!savePlan(path, &error)) QMessageBox::warning(this, "Save plan", error);
}

QString MainWindow::currentChartName() const {
    switch (tabs_->currentIndex()) {
        case TabMethods: return "methods";
        case TabSizes: return "sizes";
        default: return "machines";
    }
}

void MainWindow::exportChartDialog() {
    if (!lib_) return;
    QSettings settings;
    const QString name = currentChartName();
    const QString dir = settings.value("exportDir", QDir::homePath()).toString();
    ExportDialog dlg("chart", QDir(dir).filePath(qs(eval_.model.id) + "-" + name + ".png"), true, this);
    if (dlg.exec() != QDialog::Accepted) return;
    ChartData data = machines_data_;
    if (name == "methods") {
        refreshTable(TableMethods);
        data = methods_chart_->data();
    } else if (name == "sizes") {
        refreshTable(TableSizes);
        data = sizes_chart_->data();
    }
    QString error;
    if (export_chart(data, dlg.path(), dlg.options(), &error)) {
        settings.setValue("exportDir", QFileInfo(dlg.path()).absolutePath());
        statusBar()->showMessage("Exported " + dlg.path(), 6000);
    } else {
        QMessageBox::warning(this, "Export chart", error);
    }
}

void MainWindow::exportTableDialog() {
    if (!lib_) return;
    QSettings settings;
    const int tab = tabs_->currentIndex();
    const QString name = tab == TabMethods ? "methods" : tab == TabSizes ? "sizes" : tab == TabWhich ? "which-machine" : "memory";
    const QString dir = settings.value("exportDir", QDir::homePath()).toString();
    ExportDialog dlg("table", QDir(dir).filePath(qs(eval_.model.id) + "-" + name + ".csv"), false, this);
    if (dlg.exec() != QDialog::Accepted) return;
    const Table t = tab == TabMethods ? methodTable() : tab == TabSizes ? sizeTable() : tab == TabWhich ? machineTable()
                                                                                                        : chart_table(machines_data_);
    QString error;
    if (export_table(t, dlg.path(), &error)) {
        settings.setValue("exportDir", QFileInfo(dlg.path()).absolutePath());
        statusBar()->showMessage("Exported " + dlg.path(), 6000);
    } else {
        QMessageBox::warning(this, "Export table", error);
    }
}

void MainWindow::exportCoursePackDialog() {
    if (!lib_) return;
    QSettings settings;
    const QString dir = QFileDialog::getExistingDirectory(this, "Export course pack into…",
                                                          settings.value("exportDir", QDir::homePath()).toString());
    if (dir.isEmpty()) return;
    settings.setValue("exportDir", dir);
    QApplication::setOverrideCursor(Qt::WaitCursor);
    const ExportResult r = export_course_pack(*lib_, plan_, dir, {"png", "svg", "pdf", "csv", "md"}, ImageOptions{}, unit_);
    QApplication::restoreOverrideCursor();
    if (r.ok())
        QMessageBox::information(this, "Course pack", QString("Wrote %1 files to %2 (index.md lists them).").arg(r.files.size()).arg(dir));
    else
        QMessageBox::warning(this, "Course pack",
                             QString("Wrote %1 files; %2 failed:\n\n%3").arg(r.files.size()).arg(r.errors.size()).arg(r.errors.join("\n")));
}

// ------------------------------------------------------------------ machines ----

void MainWindow::setUserDir(const std::filesystem::path& dir) {
    user_dir_ = dir;
    reloadUserMachines();
}

void MainWindow::reloadUserMachines() {
    if (!lib_) return;
    try {
        ProfileLibrary fresh = ProfileLibrary::load(ProfileLibrary::default_dir(executable_.toStdString()));
        fresh.add_machine(detect_this_machine());
        fresh.load_user_profiles(user_dir_);
        eval_ = Evaluation{};   // holds pointers into the old library
        lib_ = std::move(fresh);
    } catch (const std::exception& e) {
        statusBar()->showMessage("Your machines could not be reloaded: " + qs(e.what()), 10000);
        return;
    }
    populateModels();
    populateMachines();
    setPlan(plan_);
}

void MainWindow::calibrateDialog() {
    if (!lib_) return;
    CalibrationDialog dlg(*lib_, RunStore::default_root(), user_dir_, this);
    if (dlg.exec() != QDialog::Accepted || dlg.savedPath().empty()) return;
    reloadUserMachines();   // reloads the user's frameworks too
    statusBar()->showMessage("Calibrated framework saved: " + qs(dlg.savedPath().string()) +
                                 " — “This machine” and the trainer's predictions use it now", 10000);
}

void MainWindow::addMachineDialog() {
    if (!lib_) return;
    MachineDialog dlg(*lib_, nullptr, this);
    if (dlg.exec() != QDialog::Accepted) return;
    if (!dlg.save(user_dir_)) {
        QMessageBox::warning(this, "Add your machine", dlg.error());
        return;
    }
    const auto m = dlg.machine();
    reloadUserMachines();
    if (m) {
        Plan p = plan_;
        if (std::find(p.machines.begin(), p.machines.end(), m->id) == p.machines.end()) p.machines.push_back(m->id);
        setPlan(p);
    }
}

void MainWindow::editMachineDialog() {
    auto* item = machines_->currentItem();
    if (!lib_ || !item || !item->data(0, Qt::UserRole + 1).toBool()) return;
    const MachineProfile& m = lib_->machine(item->data(0, Qt::UserRole).toString().toStdString());
    MachineDialog dlg(*lib_, &m, this);
    if (dlg.exec() != QDialog::Accepted) return;
    if (!dlg.save(user_dir_)) {
        QMessageBox::warning(this, "Edit your machine", dlg.error());
        return;
    }
    reloadUserMachines();
}

void MainWindow::removeUserMachine() {
    auto* item = machines_->currentItem();
    if (!lib_ || !item || !item->data(0, Qt::UserRole + 1).toBool()) return;
    const QString id = item->data(0, Qt::UserRole).toString();
    if (QMessageBox::question(this, "Remove your machine", "Remove “" + item->text(0) + "” from your machines?") !=
        QMessageBox::Yes)
        return;
    std::error_code ec;
    std::filesystem::remove(user_dir_ / "machines" / (id.toStdString() + ".json"), ec);
    Plan p = plan_;
    p.machines.erase(std::remove(p.machines.begin(), p.machines.end(), id.toStdString()), p.machines.end());
    plan_ = p;
    reloadUserMachines();
}

// ------------------------------------------------------------------ run hook ----

int MainWindow::addRunTab(QWidget* widget, const QString& title) { return tabs_ ? tabs_->addTab(widget, title) : -1; }

void MainWindow::requestTrain() {
    if (eval_.ok()) emit trainRequested(plan_);
}

void MainWindow::connectNotify(const QMetaMethod& signal) {
    if (signal == QMetaMethod::fromSignal(&MainWindow::trainRequested)) {
        train_connected_ = true;
        if (train_) train_->setVisible(true);
    }
    QMainWindow::connectNotify(signal);
}

// ------------------------------------------------------------------ settings ----

void MainWindow::saveSettings() {
    if (!options_.save_settings || !lib_) return;
    QSettings s;
    s.setValue("plan", QString::fromStdString(plan_.to_json().dump()));
    s.setValue("planPath", plan_path_);
    s.setValue("unit", qs(unit_name(unit_)));
    s.setValue("theme", theme_id(theme_));
    s.setValue("geometry", saveGeometry());
}

void MainWindow::restoreSettings() {
    QSettings s;
    unit_ = s.value("unit").toString() == "GiB" ? ByteUnit::GiB : ByteUnit::GB;
    if (unit_group_)
        for (QAction* a : unit_group_->actions()) a->setChecked(a->data().toString() == qs(unit_name(unit_)));
    const Theme t = parse_theme(s.value("theme", "system").toString());
    if (t != Theme::System) setTheme(t);
    if (s.contains("geometry")) restoreGeometry(s.value("geometry").toByteArray());
    Plan p = Plan::lesson_default();
    const QString saved = s.value("plan").toString();
    if (!saved.isEmpty()) {
        try {
            Plan restored = Plan::from_json(nlohmann::json::parse(saved.toStdString()));
            resolve_model(*lib_, restored.model);
            p = restored;
            plan_path_ = s.value("planPath").toString();
        } catch (const std::exception& e) {
            statusBar()->showMessage("Your last plan could not be restored (" + qs(e.what()) + "); showing the lessons' example.",
                                     10000);
        }
    }
    populateMachines();
    setPlan(p);
}

void MainWindow::closeEvent(QCloseEvent* e) {
    saveSettings();
    e->accept();
}

}  // namespace wingspan::ui
