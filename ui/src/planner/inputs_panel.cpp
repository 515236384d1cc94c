#include "wingspan/ui/inputs_panel.hpp"
#include "wingspan/plan_lookup.hpp"

#include "planner/inputs_panel_items.hpp"

#include <algorithm>
#include <iterator>
#include <cmath>

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSlider>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include "wingspan/quant_formats.hpp"

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

constexpr LinearRole kTargetRoles[8] = {LinearRole::Q,    LinearRole::K,  LinearRole::V,    LinearRole::O,
                                        LinearRole::Gate, LinearRole::Up, LinearRole::Down, LinearRole::Head};

}  // namespace

InputsPanel::InputsPanel(const ProfileLibrary& lib, QWidget* parent) : QWidget(parent), lib_(&lib) {
    setObjectName("inputsPanel");
    setAccessibleName("Plan inputs");
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(10, 8, 6, 8);
    v->addWidget(buildModelBox());
    v->addWidget(buildMethodBox());
    v->addWidget(buildBatchBox());
    QWidget* advanced = buildAdvancedBox();
    v->addWidget(advanced);
    v->addStretch();
    // Fixed-size labels: their texts follow the size slider on every step, and a label that can
    // change size makes the whole panel lay itself out again each time. The parameter count
    // wraps within its two lines where the panel is narrow.
    size_label_->setWordWrap(false);
    const QSize two_lines(sizeHint().width() - 40, size_label_->fontMetrics().lineSpacing() * 2 + 4);
    size_label_->setFixedSize(two_lines);
    model_info_->setFixedSize(two_lines);
    populateModels();
}

void InputsPanel::setLibrary(const ProfileLibrary& lib) {
    lib_ = &lib;
    const QString keep = framework_->currentData().toString();
    syncing_ = true;
    framework_->clear();
    framework_->addItem("Each machine's own", QString());
    for (const auto& f : lib_->frameworks()) framework_->addItem(qs(f.name), qs(f.id));
    framework_->setCurrentIndex(std::max(0, framework_->findData(keep)));
    syncing_ = false;
    populateModels();
}

void InputsPanel::editedBySlider() {
    if (!syncing_) emit setupEdited(true);
}

void InputsPanel::focusModelSearch() {
    model_->setFocus(Qt::ShortcutFocusReason);
    model_->lineEdit()->selectAll();
}

void InputsPanel::showImportedName(const QString& text) {
    syncing_ = true;
    model_->setEditText(text);
    syncing_ = false;
}

// ---------------------------------------------------------------------- building ----

QWidget* InputsPanel::buildModelBox() {
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
    connect(import, &QPushButton::clicked, this, &InputsPanel::importConfigRequested);
    auto* from_hub = new QPushButton("Add from &Hub…");
    from_hub->setObjectName("addFromHub");
    from_hub->setToolTip("Any model on the Hugging Face Hub by its id: reads config.json and the safetensors "
                         "headers (exact parameter count), never the weights; remembered for next time");
    connect(from_hub, &QPushButton::clicked, this, &InputsPanel::importFromHubRequested);
    auto* import_row = new QHBoxLayout;
    import_row->addWidget(import);
    import_row->addWidget(from_hub);
    import_row->addStretch(1);
    mf->addLayout(import_row);
    connect(model_, &QComboBox::activated, this, &InputsPanel::onModelActivated);
    connect(size_, &QSlider::valueChanged, this, &InputsPanel::onSizeSlider);
    return model_box;
}

QWidget* InputsPanel::buildMethodBox() {
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
    connect(method_, &QButtonGroup::idClicked, this, &InputsPanel::edited);

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
    for (int i = 0; i < int(std::size(kTargetRoles)); ++i) {
        const char* name = linear_role_name(kTargetRoles[i]);
        targets_[i] = new QCheckBox(name);
        targets_[i]->setObjectName(QString("target_") + name);
        targets_[i]->setToolTip(
            kTargetRoles[i] == LinearRole::Head
                ? QString("Put an adapter on the LM head (LitGPT lora_head, PEFT lm_head, torchtune apply_lora_to_output):\n"
                          "r·(hidden + vocab) adapter parameters, and the branch keeps its input for the backward pass.\n"
                          "Planned for those frameworks; wingspan-train adapts the layers' linears only.")
                : QString("Put adapters on the %1 projection of every layer: more adapter parameters,\n"
                          "and the LoRA branch keeps its input for the backward pass.")
                      .arg(name));
        targets->addWidget(targets_[i], i / 4, i % 4);
        connect(targets_[i], &QCheckBox::toggled, this, &InputsPanel::edited);
    }
    lf->addRow("Targets:", targets);
    quant_row_ = new QWidget;
    quant_ = new QComboBox;
    quant_->setObjectName("quantization");
    quant_->addItem("NF4 + double quant (QLoRA default)", "nf4-dq");
    quant_->addItem("NF4, 64-element blocks", "nf4");
    quant_->addItem("int8", "int8");
    // Pre-quantized checkpoints, loaded as stored by a serve plan (core/include/wingspan/quant_formats.hpp).
    // Short names (a long one widens the whole plan panel at 1280×720); the rest on hover.
    const struct {
        const char* name;
        const char* id;
        const char* hover;
    } checkpoints[] = {
        {"AWQ 4-bit (serve)", "awq", "an AWQ checkpoint (GEMM layout), loaded as stored: packed 4-bit codes, 16-bit scales"},
        {"GPTQ 4-bit (serve)", "gptq", "a GPTQ checkpoint, loaded as stored: packed 4-bit codes, scales, g_idx"},
        {"GPTQ 8-bit (serve)", "gptq-int8", "a GPTQ 8-bit checkpoint, loaded as stored"},
        {"fp8, tensor scales (serve)", "fp8", "an fp8 checkpoint with one fp32 scale per tensor"},
        {"fp8, channel scales (serve)", "fp8-channel", "an fp8 checkpoint with one fp32 scale per output row"},
        {"fp8, block scales (serve)", "fp8-block", "an fp8 checkpoint with one fp32 scale per 128 × 128 block"},
    };
    for (const auto& c : checkpoints) {
        quant_->addItem(c.name, c.id);
        quant_->setItemData(quant_->count() - 1, QString(c.hover), Qt::ToolTipRole);
    }
    quant_->addItem("None (16-bit)", "none");
    quant_->setToolTip("How the frozen base is stored: NF4 is 0.5 bytes per parameter plus one constant per 64-element\n"
                       "block; double quantization stores those constants in 8 bits too. int8 is 1 byte per parameter.");
    lf->addRow("&Base:", quant_);
    mg->addWidget(lora_box_);
    connect(rank_, &QSlider::valueChanged, this, &InputsPanel::editedBySlider);
    connect(quant_, &QComboBox::currentIndexChanged, this, &InputsPanel::edited);
    return method_box;
}

QWidget* InputsPanel::buildBatchBox() {
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
    connect(seq_, &QSlider::valueChanged, this, [this](int pos) {
        if (syncing_) return;
        syncing_ = true;
        seq_spin_->setValue(int(kSeqSteps[std::clamp(pos, 0, kSeqStepCount - 1)]));
        syncing_ = false;
        editedBySlider();
    });
    connect(seq_spin_, &QSpinBox::valueChanged, this, [this](int value) {
        if (syncing_) return;
        syncing_ = true;
        seq_->setValue(seq_position(value));
        syncing_ = false;
        edited();
    });
    connect(batch_, &QSpinBox::valueChanged, this, &InputsPanel::edited);
    connect(accum_, &QSpinBox::valueChanged, this, &InputsPanel::edited);
    connect(ckpt_, &QCheckBox::toggled, this, &InputsPanel::edited);
    return run_box;
}

// ---------------------------------------------------------------------- models ----

void InputsPanel::populateModels() {
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
    disconnect(model_->lineEdit(), &QLineEdit::returnPressed, this, nullptr);
    connect(model_->lineEdit(), &QLineEdit::returnPressed, this, [this] {
        const QString text = model_->lineEdit()->text().trimmed();
        if (model_->findText(text) >= 0) return;
        for (int i = 0; i < model_->count(); ++i)
            if (model_->itemText(i).contains(text, Qt::CaseInsensitive) ||
                model_->itemData(i).toString().contains(text, Qt::CaseInsensitive)) {
                onModelActivated(i);
                return;
            }
        emit statusMessage("No bundled model matches “" + text + "”. Try a family (qwen, llama, gemma) or a size.");
    });
    syncing_ = false;
}

void InputsPanel::onModelActivated(int index) {
    if (syncing_ || index < 0) return;
    ModelChoice choice;
    choice.model_id = model_->itemData(index).toString().toStdString();
    emit modelChosen(choice, false);
}

void InputsPanel::updateSizeSlider(const Plan& plan) {
    const bool imported = !plan.model.config.is_null();
    std::string family;
    std::int64_t params = 0;
    if (const auto r = try_resolve_model(*lib_, plan.model)) {
        family = r->family;
        params = r->arch.parameter_count();
    }
    current_model_id_ = plan.model.model_id;
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

void InputsPanel::onSizeSlider(int pos) {
    if (syncing_ || family_.members.size() < 2) return;
    const double lo = std::log(double(family_.min_params())), hi = std::log(double(family_.max_params()));
    const std::int64_t target = std::int64_t(std::llround(std::exp(lo + (hi - lo) * double(pos) / kSizeSteps)));
    ModelChoice choice;
    // Land exactly on a real member when the slider is close to one.
    for (const auto* m : family_.members) {
        const double mp = (std::log(double(m->arch.parameter_count())) - lo) / (hi - lo) * kSizeSteps;
        if (std::fabs(mp - pos) <= 6) {
            choice.model_id = m->id;
            syncing_ = true;
            const int i = model_->findData(qs(m->id));
            if (i >= 0) model_->setCurrentIndex(i);
            syncing_ = false;
            current_model_id_ = m->id;
            emit modelChosen(choice, true);
            return;
        }
    }
    choice.model_id = current_model_id_;
    choice.family = family_.family;
    choice.target_params = target;
    emit modelChosen(choice, true);
}

void InputsPanel::enableForMethod(const TrainingSetup& s) {
    const bool lora = s.method == Method::Lora || s.method == Method::Qlora;
    rank_->setEnabled(lora);
    rank_label_->setText(QString::number(s.lora_rank));
    for (auto* t : targets_) t->setEnabled(lora);
    quant_->setEnabled(s.method == Method::Qlora || s.method == Method::Serve);
    accum_->setEnabled(s.trains());
    ckpt_->setEnabled(s.trains());
    optimizer_->setEnabled(s.trains());
    offload_->setEnabled(s.trains());
    for (QCheckBox* c : {optimizer_in_backward_, activation_offload_, compile_}) c->setEnabled(s.trains());
    train_embeddings_->setEnabled(lora);
}

void InputsPanel::showPlan(const Plan& plan) {
    const bool was = syncing_;
    syncing_ = true;
    const TrainingSetup& s = plan.setup;
    if (plan.model.config.is_null()) {
        const int i = model_->findData(qs(plan.model.model_id));
        if (i >= 0) model_->setCurrentIndex(i);
    }
    updateSizeSlider(plan);
    if (auto* b = method_->button(int(s.method))) b->setChecked(true);
    rank_->setValue(std::clamp(int(std::lround(std::log2(double(std::max<std::int64_t>(1, s.lora_rank))))), 0, 10));
    for (int i = 0; i < int(std::size(kTargetRoles)); ++i) targets_[i]->setChecked(s.lora_targets.count(kTargetRoles[i]) > 0);
    {
        const int qi = quant_->findData(QString(to_string(s.effective_quantization())));
        quant_->setCurrentIndex(qi >= 0 ? qi : 0);
    }
    seq_spin_->setValue(int(std::min<std::int64_t>(s.seq_len, seq_spin_->maximum())));
    seq_->setValue(seq_position(s.seq_len));
    batch_->setValue(int(s.trains() ? s.micro_batch : s.serve_batch));
    accum_->setValue(int(s.grad_accum));
    ckpt_->setChecked(s.grad_checkpointing);
    if (s.precision_auto) precision_->setCurrentIndex(precision_->findData(QString("auto")));
    else select_enum(precision_, s.precision);
    select_enum(optimizer_, s.optimizer);
    select_enum(attention_, s.attention);
    loss_chunk_->setValue(int(s.loss_chunk_tokens));
    train_embeddings_->setChecked(s.train_embeddings);
    devices_->setValue(int(s.devices));
    select_enum(sharding_, s.sharding);
    offload_->setChecked(s.offload);
    optimizer_in_backward_->setChecked(s.optimizer_in_backward);
    activation_offload_->setChecked(s.activation_offload);
    compile_->setChecked(s.compile);
    framework_->setCurrentIndex(std::max(0, framework_->findData(qs(plan.framework))));
    enableForMethod(s);
    syncing_ = was;
}

void InputsPanel::readInto(Plan& plan) {
    TrainingSetup& s = plan.setup;
    s.method = Method(method_->checkedId() >= 0 ? method_->checkedId() : int(Method::Lora));
    s.lora_rank = std::int64_t(1) << rank_->value();
    s.lora_alpha = 2.0 * double(s.lora_rank);
    s.lora_targets.clear();
    for (int i = 0; i < int(std::size(kTargetRoles)); ++i)
        if (targets_[i]->isChecked()) s.lora_targets.insert(kTargetRoles[i]);
    const Quantization q = parse_quantization(quant_->currentData().toString().toStdString());
    // QLoRA quantizes a 16-bit checkpoint at load: a checkpoint format leaves it its default.
    const bool takes = s.method == Method::Serve || (s.method == Method::Qlora && !is_checkpoint_format(q));
    s.quantization = takes ? q : Quantization::None;
    s.seq_len = seq_spin_->value();
    s.micro_batch = batch_->value();
    s.serve_batch = batch_->value();
    s.grad_accum = accum_->value();
    s.grad_checkpointing = ckpt_->isChecked();
    set_precision(s, precision_->currentData().toString().toStdString());
    s.optimizer = parse_optimizer(optimizer_->currentData().toString().toStdString());
    s.attention = parse_attention(attention_->currentData().toString().toStdString());
    s.loss_chunk_tokens = loss_chunk_->value();
    s.train_embeddings = train_embeddings_->isChecked();
    s.devices = devices_->value();
    Sharding sh = parse_sharding(sharding_->currentData().toString().toStdString());
    // One device needs no strategy; several need one: follow what the user just changed.
    const bool was = syncing_;
    syncing_ = true;
    if (s.devices > 1 && sh == Sharding::None) {
        sh = Sharding::Ddp;
        select_enum(sharding_, sh);
    }
    s.sharding = sh;
    s.offload = offload_->isChecked();
    s.optimizer_in_backward = optimizer_in_backward_->isChecked();
    s.activation_offload = activation_offload_->isChecked();
    s.compile = compile_->isChecked();
    plan.framework = framework_->currentData().toString().toStdString();
    enableForMethod(s);
    syncing_ = was;
}

// The size the slider stands on: follows every step, as the slider itself does.
void InputsPanel::showEvaluation(const Plan& plan, const Evaluation& eval) {
    // The model resolves even when the setup does not validate: keep showing its size.
    if (eval.model.arch.layers == 0) return;
    const std::int64_t total = eval.model.arch.parameter_count();
    if (family_.members.size() >= 2) {
        QString size_text;
        if (eval.model.interpolated) {
            const ModelProfile* below = nullptr;
            const ModelProfile* above = nullptr;
            for (const auto* m : family_.members) {
                if (m->arch.parameter_count() < total) below = m;
                if (!above && m->arch.parameter_count() > total) above = m;
            }
            size_text = qs(format_params_short(total)) + " — interpolated";
            if (below && above) size_text += " between " + qs(below->name) + " and " + qs(above->name);
        } else {
            size_text = qs(format_params_short(total)) + " — " + qs(eval.model.name) + ", a real model";
        }
        size_text += "\n(" + qs(eval.model.family) + ": " + qs(format_params_short(family_.min_params())) + " to " +
                     qs(format_params_short(family_.max_params())) + ")";
        size_label_->setText(size_text);
    } else {
        size_label_->setText(plan.model.config.is_null() ? "the only bundled model of its family"
                                                         : "imported config: no family to walk");
    }
    QString info = qs(format_count(total)) + " parameters";
    if (!eval.model.family.empty() && plan.model.config.is_null()) info += " · family " + qs(eval.model.family);
    model_info_->setText(info);
}

}  // namespace wingspan::ui
