// The llama.cpp serving view of the planner's serve mode (see serve_gguf_panel.hpp).
#include "wingspan/ui/serve_gguf_panel.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

#include "wingspan/errors.hpp"
#include "wingspan/gguf_file.hpp"
#include "wingspan/plan.hpp"

namespace wingspan::ui {

namespace lc = llama_cpp;

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// A cell showing `bytes` in the window's unit; the exact bytes in its tooltip and data.
QTableWidgetItem* bytes_cell(std::uint64_t bytes, ByteUnit unit) {
    auto* item = new QTableWidgetItem(qs(format_bytes(double(bytes), unit)));
    item->setData(Qt::UserRole, QVariant::fromValue<qulonglong>(bytes));
    item->setToolTip(QLocale().toString(qulonglong(bytes)) + " bytes");
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

QTableWidgetItem* text_cell(const QString& text) {
    auto* item = new QTableWidgetItem(text);
    item->setToolTip(text);
    return item;
}

QTableWidget* table(const char* name, const QStringList& headers) {
    auto* t = new QTableWidget(0, int(headers.size()));
    t->setObjectName(name);
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->hide();
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    t->horizontalHeader()->setStretchLastSection(true);
    t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 6);   // compact rows: more of them show
    return t;
}

}  // namespace

ServeGgufPanel::ServeGgufPanel(QWidget* parent) : QWidget(parent) {
    setObjectName("serveGgufPanel");
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(4, 4, 4, 4);
    auto* g = new QGridLayout;
    quant_ = new QComboBox;
    quant_->setObjectName("serveQuant");
    for (const char* q : {"q4_k_m", "q5_k_m", "q6_k", "q8_0", "q4_0", "f16", "bf16", "f32"}) quant_->addItem(q, QString(q));
    quant_->setToolTip("--quant: each tensor in the type llama.cpp's quantizer gives it for this format");
    auto* file = new QPushButton("GGUF file…");
    file->setObjectName("serveGgufFile");
    file->setToolTip("--gguf FILE: sizes from the file's own tensors");
    connect(file, &QPushButton::clicked, this, &ServeGgufPanel::chooseFile);
    file_label_ = new QLabel;
    file_label_->setObjectName("serveGgufFileName");
    ctx_ = new QSpinBox;
    ctx_->setObjectName("serveCtx");
    ctx_->setRange(1, 1 << 20);
    ctx_->setValue(4096);
    ctx_->setGroupSeparatorShown(true);
    ctx_->setToolTip("--ctx: the context (KV cache cells): the plan's sequence length, set here or in the Plan panel.");
    kv_type_ = new QComboBox;
    kv_type_->setObjectName("serveKvType");
    for (const char* t : {"f16", "q8_0", "q4_0"}) kv_type_->addItem(t, QString(t));
    kv_type_->setToolTip("--kv-type: the K and V cache's type (a quantized V needs flash attention)");
    gpu_layers_ = new QSpinBox;
    gpu_layers_->setObjectName("serveGpuLayers");
    gpu_layers_->setRange(-1, 4096);
    gpu_layers_->setValue(-1);
    gpu_layers_->setSpecialValueText("all");
    gpu_layers_->setToolTip("--n-gpu-layers: the last N layers (and their KV) on the GPU; all: the output too");
    parallel_ = new QSpinBox;
    parallel_->setObjectName("serveParallel");
    parallel_->setRange(1, 256);
    parallel_->setToolTip("--parallel: sequences served at once, sharing the context's KV cells (llama.cpp's -np)");
    ubatch_ = new QSpinBox;
    ubatch_->setObjectName("serveUbatch");
    ubatch_->setRange(1, 65536);
    ubatch_->setValue(512);
    ubatch_->setGroupSeparatorShown(true);
    ubatch_->setToolTip("--ubatch: tokens per compute batch (llama.cpp's -ub, default 512); the compute buffer grows with it.\n"
                        "llama.cpp's -b (n_batch) only splits a prompt into ubatches: it changes no buffer.");
    flash_attn_ = new QCheckBox("Flash attention");
    flash_attn_->setObjectName("serveFlashAttn");
    flash_attn_->setToolTip("--flash-attn: no f32 score matrix in the compute buffer");
    g->addWidget(new QLabel("Weights:"), 0, 0);
    g->addWidget(quant_, 0, 1);
    g->addWidget(file, 0, 2);
    g->addWidget(flash_attn_, 0, 3);
    g->addWidget(file_label_, 0, 4, 1, 2);
    g->addWidget(new QLabel("Context:"), 1, 0);
    g->addWidget(ctx_, 1, 1);
    g->addWidget(new QLabel("KV cache:"), 1, 2);
    g->addWidget(kv_type_, 1, 3);
    g->addWidget(new QLabel("GPU layers:"), 1, 4);
    g->addWidget(gpu_layers_, 1, 5);
    g->addWidget(new QLabel("Parallel:"), 2, 0);
    g->addWidget(parallel_, 2, 1);
    g->addWidget(new QLabel("Ubatch:"), 2, 2);
    g->addWidget(ubatch_, 2, 3);
    v->addLayout(g);
    summary_ = new QLabel;
    summary_->setObjectName("serveSummary");
    summary_->setWordWrap(true);
    v->addWidget(summary_);
    engines_ = new QLabel;
    engines_->setObjectName("serveEngines");
    engines_->setWordWrap(true);
    v->addWidget(engines_);
    components_ = table("serveComponents", {"Component", "GPU", "Host RAM", "Total"});
    // Its four rows whole; the machines' table takes the rest of the height.
    components_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    components_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    components_->setFixedHeight(components_->horizontalHeader()->sizeHint().height() +
                                4 * components_->verticalHeader()->defaultSectionSize() + 2 * components_->frameWidth());
    v->addWidget(components_);
    // Short headers, each said in full on hover, and the host RAM in the host column's
    // tooltip: nine columns scrolled sideways at 1280×720 (issue 32). A long machine name wraps.
    machines_table_ = table("serveMachines", {"Machine", "llama.cpp", "GPU need", "Usable", "Host need", "Layers", "Context",
                                              "tok/s"});
    const char* header_tips[] = {"The machine (its full name on hover)",
                                 "llama.cpp's verdict: the GPU's share fits its usable memory and the host's share its RAM",
                                 "GPU memory needed: weights, KV cache and compute buffer of the layers on the GPU",
                                 "GPU memory usable by llama.cpp (unified memory: the share the GPU may wire)",
                                 "Host RAM needed by the layers kept on the CPU (its RAM on hover)",
                                 "Most GPU layers that fit (--n-gpu-layers)",
                                 "Longest context that fits (--ctx)",
                                 "Decode ≤ tokens/s: the memory-bandwidth ceiling of one sequence's decode"};
    for (int c = 0; c < machines_table_->columnCount(); ++c)
        machines_table_->horizontalHeaderItem(c)->setToolTip(header_tips[c]);
    machines_table_->setWordWrap(true);
    machines_table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    machines_table_->horizontalHeader()->setStretchLastSection(false);
    machines_table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    v->addWidget(machines_table_, 1);
    // A person's edit: recomputed, and the plan told (setChoice and setContext block these).
    auto user_edit = [this] {
        recompute();
        emit edited();
    };
    for (QComboBox* c : {quant_, kv_type_}) connect(c, &QComboBox::currentIndexChanged, this, user_edit);
    for (QSpinBox* s : {ctx_, gpu_layers_, parallel_, ubatch_}) connect(s, &QSpinBox::valueChanged, this, user_edit);
    connect(flash_attn_, &QCheckBox::toggled, this, user_edit);
}

void ServeGgufPanel::setChoice(const LlamaCppChoice& c) {
    const LlamaCppChoice now = choice();
    if (c == now) return;
    for (QWidget* w : std::initializer_list<QWidget*>{quant_, kv_type_, gpu_layers_, parallel_, ubatch_, flash_attn_})
        w->blockSignals(true);
    quant_->setCurrentIndex(std::max(0, quant_->findData(qs(c.quant))));
    kv_type_->setCurrentIndex(std::max(0, kv_type_->findData(qs(c.kv_type))));
    gpu_layers_->setValue(int(c.n_gpu_layers));
    parallel_->setValue(int(c.n_parallel));
    ubatch_->setValue(int(c.n_ubatch));
    flash_attn_->setChecked(c.flash_attn);
    for (QWidget* w : std::initializer_list<QWidget*>{quant_, kv_type_, gpu_layers_, parallel_, ubatch_, flash_attn_})
        w->blockSignals(false);
    QString error;
    if (qs(c.gguf_file) != file_ && !setGgufFile(qs(c.gguf_file), &error))
        summary_->setText("The plan's GGUF file cannot be served: " + error);
    else
        recompute();
}

LlamaCppChoice ServeGgufPanel::choice() const {
    LlamaCppChoice c;
    c.quant = quant_->currentData().toString().toStdString();
    c.gguf_file = file_.toStdString();
    c.kv_type = kv_type_->currentData().toString().toStdString();
    c.n_gpu_layers = gpu_layers_->value();
    c.flash_attn = flash_attn_->isChecked();
    c.n_parallel = parallel_->value();
    c.n_ubatch = ubatch_->value();
    return c;
}

std::int64_t ServeGgufPanel::context() const { return ctx_->value(); }

void ServeGgufPanel::setChartAnswers(const QString& weights, std::vector<ChartAnswer> answers) {
    chart_weights_ = weights;
    chart_answers_ = std::move(answers);
    writeEnginesText();
}

QString ServeGgufPanel::enginesText() const { return engines_->text(); }

void ServeGgufPanel::writeEnginesText() {
    if (chart_answers_.empty() || !plan_) {
        engines_->clear();
        return;
    }
    QStringList engines;
    for (const ChartAnswer& a : chart_answers_)
        if (!engines.contains(a.engine)) engines << a.engine;
    const QString weights = file_.isEmpty() ? quant_->currentText() : QFileInfo(file_).fileName();
    QString text = QString("Two engines: the chart above serves the %1 model with %2; this table serves %3 with llama.cpp.")
                       .arg(chart_weights_, engines.join(" or "), weights);
    QStringList differ;
    for (const ChartAnswer& a : chart_answers_)
        for (const lc::MachineFit& f : fits_)
            if (f.machine == a.machine && f.fits != a.fits)
                differ << qs(short_machine_name(*a.machine)) + " (chart " + (a.fits ? "✓" : "✗") + ", llama.cpp " +
                              (f.fits ? "✓" : "✗") + ")";
    text += differ.isEmpty() ? " Both give the same verdict on every machine."
                             : " Their verdicts differ on " + differ.join(", ") + ".";
    engines_->setText(text);
}

void ServeGgufPanel::setContext(const Architecture& arch, const std::string& model_name,
                                std::vector<const MachineProfile*> machines, std::int64_t n_ctx, ByteUnit unit) {
    ctx_->blockSignals(true);
    ctx_->setValue(int(std::clamp<std::int64_t>(n_ctx, ctx_->minimum(), ctx_->maximum())));
    ctx_->blockSignals(false);
    arch_ = arch;
    model_name_ = model_name;
    machines_ = std::move(machines);
    unit_ = unit;
    recompute();
}

bool ServeGgufPanel::setGgufFile(const QString& path, QString* error) {
    if (path.isEmpty()) {
        file_model_.reset();
        file_.clear();
    } else {
        try {
            file_model_ = lc::model_from_gguf(gguf::read_file(path.toStdString()));
            file_ = path;
        } catch (const std::exception& e) {
            if (error) *error = QString::fromUtf8(e.what());
            return false;
        }
    }
    file_label_->setText(file_.isEmpty() ? QString() : QFileInfo(file_).fileName());
    quant_->setEnabled(file_.isEmpty());
    recompute();
    return true;
}

void ServeGgufPanel::chooseFile() {
    const QString path = QFileDialog::getOpenFileName(this, "GGUF file", QString(), "GGUF (*.gguf);;All files (*)");
    if (path.isEmpty()) return;
    QString error;
    if (!setGgufFile(path, &error)) summary_->setText("This file cannot be served: " + error);
    else emit edited();
}

lc::ServeOptions ServeGgufPanel::options() const {
    lc::ServeOptions o;
    o.n_ctx = ctx_->value();
    o.n_gpu_layers = gpu_layers_->value();
    o.type_k = o.type_v = lc::parse_cache_type(kv_type_->currentData().toString().toStdString());
    o.flash_attn = flash_attn_->isChecked();
    o.n_parallel = parallel_->value();
    o.n_ubatch = ubatch_->value();
    // llama.cpp needs flash attention for a quantized V cache (llama_init_from_model refuses it
    // without); the CLI turns it on when --flash-attn is not given, the box shows it.
    if (o.type_v != 1 && o.type_v != 0) o.flash_attn = true;
    return o;
}

QString ServeGgufPanel::errorText() const { return plan_ ? QString() : summary_->text(); }

void ServeGgufPanel::recompute() {
    const lc::ServeOptions o = options();
    flash_attn_->blockSignals(true);
    flash_attn_->setChecked(o.flash_attn);
    flash_attn_->setEnabled(o.type_v == 1 || o.type_v == 0);
    flash_attn_->blockSignals(false);
    plan_.reset();
    fits_.clear();
    components_->setRowCount(0);
    machines_table_->setRowCount(0);
    engines_->clear();
    std::optional<lc::ServeModel> model;
    try {
        if (file_model_) model = file_model_;
        else if (arch_) model = lc::model_from_architecture(*arch_, quant_->currentData().toString().toStdString());
        if (!model) return;
        plan_ = lc::plan(*model, o);
        for (const MachineProfile* m : machines_) fits_.push_back(lc::machine_fit(*m, *model, o));
    } catch (const std::exception& e) {
        summary_->setText("This serve plan cannot be computed: " + QString::fromUtf8(e.what()));
        emit changed();
        return;
    }
    const lc::ServePlan& p = *plan_;
    summary_->setText(QString("llama.cpp serving %1 (%2, %3 layers): %4 of %3 layers on the GPU%5, n_ctx %6, KV %7, flash "
                              "attention %8.")
                          .arg(file_.isEmpty() ? qs(model_name_) + " in " + quant_->currentText() : QFileInfo(file_).fileName(),
                               qs(model->architecture))
                          .arg(p.layers)
                          .arg(p.gpu_layers)
                          .arg(p.output_on_gpu ? " and the output" : "")
                          .arg(QLocale().toString(qlonglong(o.n_ctx)))
                          .arg(qs(gguf::ggml_type_name(o.type_k)))
                          .arg(o.flash_attn ? "on" : "off") +
                      QString(" %1 sequence%2 at once, ubatch %3 tokens.")
                          .arg(o.n_parallel)
                          .arg(o.n_parallel == 1 ? "" : "s")
                          .arg(QLocale().toString(qlonglong(std::min(o.n_ctx, o.n_ubatch)))));
    const struct {
        const char* name;
        std::uint64_t gpu, host;
    } rows[] = {{"frozen_weights", p.weights_gpu, p.weights_host},
                {"kv_cache", p.kv_gpu, p.kv_host},
                {"compute_buffer", p.compute_gpu, p.compute_host},
                {"total", p.gpu_total(), p.host_total()}};
    components_->setRowCount(int(std::size(rows)));
    for (int r = 0; r < int(std::size(rows)); ++r) {
        components_->setItem(r, 0, text_cell(rows[r].name));
        components_->setItem(r, 1, bytes_cell(rows[r].gpu, unit_));
        components_->setItem(r, 2, bytes_cell(rows[r].host, unit_));
        components_->setItem(r, 3, bytes_cell(rows[r].gpu + rows[r].host, unit_));
    }
    machines_table_->setRowCount(int(fits_.size()));
    for (int r = 0; r < int(fits_.size()); ++r) {
        const lc::MachineFit& f = fits_[size_t(r)];
        machines_table_->setItem(r, 0, text_cell(qs(short_machine_name(*f.machine))));
        machines_table_->item(r, 0)->setToolTip(qs(f.machine->name));
        machines_table_->setItem(r, 1, text_cell(f.fits ? "✓ fits" : "✗ does not fit"));
        machines_table_->setItem(r, 2, bytes_cell(f.device_needed, unit_));
        machines_table_->setItem(r, 3, bytes_cell(f.device_usable, unit_));
        QTableWidgetItem* host = f.machine->kind == MachineKind::Gpu ? bytes_cell(f.host_needed, unit_) : text_cell("—");
        if (f.host_available > 0)
            host->setToolTip(host->toolTip() + " of " + qs(format_bytes(double(f.host_available), unit_)) + " host RAM");
        machines_table_->setItem(r, 4, host);
        machines_table_->setItem(r, 5, text_cell(f.most_gpu_layers ? QString::number(*f.most_gpu_layers) : "—"));
        machines_table_->setItem(r, 6, text_cell(f.longest_context < 0 ? "none" : QLocale().toString(qlonglong(f.longest_context))));
        machines_table_->setItem(
            r, 7, text_cell(f.decode_tokens_per_s_ceiling ? QString::number(*f.decode_tokens_per_s_ceiling, 'f', 0) : "—"));
    }
    writeEnginesText();
    emit changed();
}

}  // namespace wingspan::ui
