// The run panel's form (run_form.hpp): what trains, filled from the planner, read back as
// RunOptions; and the devices wingspan-train lists.
#include "run/run_form.hpp"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTimer>
#include <QToolButton>

#include "run/run_panel_text.hpp"
#include "wingspan/plan_lookup.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wingspan::ui {

using namespace run_text;

// ------------------------------------------------------------------ the form ----

namespace {
// A layout as one widget of the form.
QWidget* boxed(QLayout* l) {
    auto* box = new QWidget;
    l->setContentsMargins(0, 0, 0, 0);
    box->setLayout(l);
    return box;
}
// A field's label, which also names the field for screen readers.
QLabel* label(const QString& text, QWidget* buddy) {
    auto* l = new QLabel(text);
    l->setBuddy(buddy);
    if (buddy->accessibleName().isEmpty()) buddy->setAccessibleName(text);
    return l;
}
QSpinBox* spin(const char* name, int lo, int hi, const QString& tip) {
    auto* s = new QSpinBox;
    s->setObjectName(name);
    s->setRange(lo, hi);
    s->setToolTip(tip);
    s->setGroupSeparatorShown(true);
    return s;
}
}  // namespace

RunForm::RunForm(const ProfileLibrary* lib, const QString& sample_data, QWidget* parent) : PairGrid(parent), lib_(lib) {
    // Four pairs a row where the tab is wide, two or one where it is not (PairGrid).
    setObjectName("runForm");
    last_model_dir_ = QSettings().value("run/modelDir").toString();
    // The model the user chose last time (the demo, random weights, a folder) stays chosen.
    const QVariant choice = QSettings().value("run/modelChoice");
    if (choice.isValid() && choice.toInt() >= 0 && choice.toInt() <= int(RunOptions::ModelSource::Planned))
        model_choice_ = RunOptions::ModelSource(choice.toInt());
    addModelRows();
    addSetupRows();
    addPathRow(sample_data);
    addMachineRow();
    addRanksRow();
    connectEdits();
    populateModelSources();
}

RunForm::~RunForm() {
    if (devices_process_) {
        // Its finished signal must not reach a form half torn down.
        devices_process_->disconnect(this);
        devices_process_->kill();
        devices_process_->waitForFinished(2000);
    }
}

void RunForm::addModelRows() {
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
    connect(model_browse_, &QPushButton::clicked, this, &RunForm::chooseModelFolder);
    connect(model_, &QComboBox::currentIndexChanged, this, [this] { updateEnabled(); });
    auto* model_row = new QHBoxLayout;
    model_row->addWidget(model_, 1);
    model_row->addWidget(model_browse_);
    addWholeRow(label("Model", model_), boxed(model_row));
    model_note_ = new QLabel;
    model_note_->setObjectName("modelNote");
    model_note_->setWordWrap(true);
    QPalette muted = model_note_->palette();
    muted.setColor(QPalette::WindowText, muted.color(QPalette::PlaceholderText));
    model_note_->setPalette(muted);
    addWholeRow(new QLabel, model_note_);

}

void RunForm::addSetupRows() {
    // Rows 2-3: the setup (from the plan).
    method_ = new QComboBox;
    method_->setObjectName("runMethod");
    method_->addItem("LoRA", int(Method::Lora));
    method_->addItem("QLoRA", int(Method::Qlora));
    method_->addItem("Full fine-tune", int(Method::Full));
    connect(method_, &QComboBox::currentIndexChanged, this, [this] { updateEnabled(); });
    rank_ = spin("runRank", 1, 4096, "LoRA rank r (--rank); alpha is kept at the plan's ratio");
    seq_ = spin("runSeq", 8, 1 << 20, "Tokens per sequence (--seq)");
    batch_ = spin("runBatch", 1, 4096, "Sequences per micro-batch (--batch)");
    accum_ = spin("runAccum", 1, 4096, "Micro-batches per optimizer step (--grad-accum)");
    steps_ = spin("runSteps", 1, 10000000, "Optimizer steps to train (--steps)");
    steps_->setValue(60);
    precision_ = new QComboBox;
    precision_->setObjectName("runPrecision");
    precision_->addItem("auto", -1);   // the trainer's fastest exact precision on this machine
    precision_->addItem("fp32", int(Precision::Fp32));
    precision_->addItem("bf16 mixed", int(Precision::Bf16Mixed));
    precision_->addItem("bf16", int(Precision::Bf16));
    precision_->setToolTip("Storage of weights and gradients (--precision). bf16 mixed keeps an fp32 master copy of what trains.\n"
                           "auto: bf16 mixed where this CPU multiplies bf16 in hardware, else fp32 (the run's hello says which).");
    ckpt_ = new QCheckBox("Gradient checkpointing");
    ckpt_->setObjectName("runCheckpointing");
    ckpt_->setToolTip("--grad-checkpointing: keep one tensor per layer, recompute the rest in backward");
    // Rows 2 and 3: label, field, label, field, …
    const std::vector<std::pair<int, std::vector<std::pair<const char*, QWidget*>>>> fields = {
        {2, {{"Method", method_}, {"Rank", rank_}, {"Sequence", seq_}, {"Batch", batch_}}},
        {3, {{"Precision", precision_}, {"Accum.", accum_}, {"Steps", steps_}}}};
    for (const auto& [row, pairs] : fields) {
        for (const auto& [text, field] : pairs) addPair(label(text, field), field);
        if (row == 3) addPair(nullptr, ckpt_);
        endRow();
    }

}

void RunForm::addPathRow(const QString& sample_data) {
    // Row 4: data and output.
    data_ = new QLineEdit;
    data_->setObjectName("runData");
    data_->setPlaceholderText("the bundled sample (chat.jsonl)");
    data_->setToolTip("JSONL with text, prompt/completion or chat messages (--data). Empty: the bundled sample set\n" +
                      (sample_data.isEmpty() ? QString("(not found next to Wingspan)") : sample_data));
    auto* data_browse = new QToolButton;
    data_browse->setText("…");
    data_browse->setToolTip("Choose a data file");
    connect(data_browse, &QToolButton::clicked, this, &RunForm::chooseDataFile);
    out_ = new QLineEdit;
    out_->setObjectName("runOut");
    out_->setPlaceholderText("in the run's history folder");
    out_->setToolTip("Where the trainer writes adapters or weights and checkpoints (--out)");
    auto* out_browse = new QToolButton;
    out_browse->setText("…");
    out_browse->setToolTip("Choose an output folder");
    connect(out_browse, &QToolButton::clicked, this, &RunForm::chooseOutDir);
    auto* data_row = new QHBoxLayout;
    data_row->addWidget(data_, 1);
    data_row->addWidget(data_browse);
    auto* out_row = new QHBoxLayout;
    out_row->addWidget(out_, 1);
    out_row->addWidget(out_browse);
    addPair(label("Data", data_), boxed(data_row), 2);
    addPair(label("Output", out_), boxed(out_row), 2);
    endRow();

}

// Row 5: the device, the ceiling drawn and the memory cap.
void RunForm::addMachineRow() {
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
    connect(cap_mode_, &QComboBox::currentIndexChanged, this, [this] { updateEnabled(); });
    auto* cap_row = new QHBoxLayout;
    cap_row->addWidget(cap_mode_);
    cap_row->addWidget(cap_gb_, 1);
    device_ = new QComboBox;
    device_->setObjectName("runDevice");
    device_->setAccessibleName("Device");
    device_->setMinimumContentsLength(14);
    device_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    device_->setToolTip("Where the trainer runs (--device), from `wingspan-train devices`. On a GPU the verdict compares\n"
                        "with the GPU's memory, and the chart shows what its caching allocator reserved beside the\n"
                        "allocated tensors.");
    connect(device_, &QComboBox::activated, this, [this] {
        device_choice_ = device_->currentData().toString();
        updateEnabled();
        notifyChanged();
    });
    addPair(label("Device", device_), device_);
    addPair(label("Ceiling", machine_), machine_);
    addPair(label("Memory cap", cap_mode_), boxed(cap_row), 2);
    endRow();

}

void RunForm::addRanksRow() {
    // Row 6: data-parallel ranks on this machine (wingspan-train --nproc / --sharding).
    processes_ = spin("runProcesses", 1, 64,
                      "Data-parallel ranks on this machine (--nproc N): one process each, each training its slice of every\n"
                      "global batch (the batch above is per rank). 1: a single process.");
    processes_->setValue(1);
    sharding_ = new QComboBox;
    sharding_->setObjectName("runSharding");
    sharding_->addItem("DDP (everything replicated)", int(Sharding::Ddp));
    sharding_->addItem("ZeRO-1 (optimizer state sharded)", int(Sharding::Zero1));
    sharding_->addItem("ZeRO-2 (optimizer state and gradients sharded)", int(Sharding::Zero2));
    sharding_->setMinimumContentsLength(20);   // the list shows each name whole
    sharding_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    sharding_->setToolTip("--sharding: what each rank holds. The trainer predicts each rank's memory for this sharding\n"
                          "(one device's share, from the planner's model) and the chart shows every rank against it.");
    addPair(label("Processes", processes_), processes_);
    addPair(label("Sharding", sharding_), sharding_, 2);
    connect(processes_, &QSpinBox::valueChanged, this, [this] {
        updateEnabled();
        notifyChanged();
    });
    connect(sharding_, &QComboBox::currentIndexChanged, this, [this] { notifyChanged(); });

}

void RunForm::connectEdits() {
    if (!lib_) machine_->addItem("—");
    // The user's edits stop the form from following the planner (code filling it does not).
    for (QSpinBox* sb : {rank_, seq_, batch_, accum_})
        connect(sb, &QSpinBox::valueChanged, this, &RunForm::onEdited);
    for (QComboBox* cb : {method_, precision_}) connect(cb, &QComboBox::currentIndexChanged, this, &RunForm::onEdited);
    connect(ckpt_, &QCheckBox::toggled, this, &RunForm::onEdited);
    connect(steps_, &QSpinBox::valueChanged, this, [this] { notifyChanged(); });
    connect(machine_, &QComboBox::currentIndexChanged, this, [this] { notifyChanged(); });
    // The model is the user's choice once they pick one; it stays through plan changes.
    connect(model_, &QComboBox::activated, this, [this] {
        model_choice_ = RunOptions::ModelSource(model_->currentData().toInt());
        QSettings().setValue("run/modelChoice", int(*model_choice_));
        notifyChanged();
    });
}


void RunForm::populateModelSources() {
    const auto current = model_->currentData().toInt();
    model_->blockSignals(true);
    model_->clear();
    model_note_->clear();
    if (has_plan_ && lib_) {
        // First the plan's own model with its pretrained weights, when they are on this machine.
        planned_ = find_planned_model(*lib_, plan_);
        model_->addItem(planned_.ok() ? QString("Plan's model: %1 (pretrained weights, %2)")
                                            .arg(planned_.name, QDir::toNativeSeparators(planned_.folder))
                                      : QString("Plan's model: %1 (not on this machine)").arg(planned_.name),
                        int(RunOptions::ModelSource::Planned));
        if (!planned_.ok()) model_note_->setText(planned_.missingText());
        if (const auto m = try_resolve_model(*lib_, plan_.model))
            model_->addItem(QString("Plan's architecture: %1 (%2 params, random weights)")
                                .arg(qs(m->name), qs(format_params_short(m->arch.parameter_count()))),
                            int(RunOptions::ModelSource::PlanArchitecture));
    }
    model_->addItem("Built-in demo model (3.1 M params, random weights)", int(RunOptions::ModelSource::BuiltIn));
    if (!last_model_dir_.isEmpty())
        model_->addItem("Folder: " + QDir(last_model_dir_).dirName(), int(RunOptions::ModelSource::Folder));
    model_note_->setVisible(!model_note_->text().isEmpty());
    // The user's choice, else the plan's model: random weights and the demo are never a default.
    int idx = model_->findData(model_choice_ ? int(*model_choice_) : current);
    if (idx < 0) idx = model_->findData(int(RunOptions::ModelSource::Planned));
    model_->setCurrentIndex(idx >= 0 ? idx : 0);
    model_->blockSignals(false);
    updateEnabled();
}


// ------------------------------------------------------------------ options ----

void RunForm::setPlan(const Plan& plan) {
    plan_ = plan;
    has_plan_ = true;
    if (!follow_planner_) {
        // The user edited the settings: keep them, and say how the run differs from the plan.
        syncing_ = true;
        populateModelSources();
        syncing_ = false;
        notifyChanged();
        return;
    }
    const RunOptions keep = options();
    machine_->blockSignals(true);
    machine_->clear();
    if (lib_) {
        for (const auto& id : plan.machines) {
            if (const MachineProfile* m = lib_->find_machine(id))   // a plan may name a machine removed since
                machine_->addItem(qs(short_machine_name(*m)) + " · " + qs(format_bytes(double(m->usable_bytes), unit_)),
                                  qs(m->id));
        }
    }
    if (machine_->count() == 0) machine_->addItem("—");
    machine_->blockSignals(false);
    populateModelSources();
    RunOptions o = run_options_for(plan, lib_);
    o.steps = keep.steps;
    o.data_file = keep.data_file;
    o.out_dir = keep.out_dir;
    o.model_source = model_choice_.value_or(RunOptions::ModelSource::Planned);
    o.model_dir = keep.model_source == RunOptions::ModelSource::Folder ? keep.model_dir : QString();
    o.threads = keep.threads;
    o.extra_args = keep.extra_args;
    if (cap_mode_->currentIndex() == 2) o.memory_limit = keep.memory_limit;
    o.device = keep.device;
    o.processes = keep.processes;
    // The plan's sharding when the trainer can run it (ZeRO-3 and FSDP it cannot).
    o.sharding = plan.setup.sharding == Sharding::Zero1 || plan.setup.sharding == Sharding::Zero2 ||
                         plan.setup.sharding == Sharding::Ddp
                     ? plan.setup.sharding
                     : keep.sharding;
    const std::optional<RunOptions::ModelSource> choice = model_choice_;
    setOptions(o);
    model_choice_ = choice;   // following the plan is not a choice of model
    follow_planner_ = true;
    notifyChanged();
}

RunOptions RunForm::options() const {
    RunOptions o;
    o.model_source = RunOptions::ModelSource(model_->currentData().toInt());
    o.model_label = "built-in";
    if (o.model_source == RunOptions::ModelSource::Folder) {
        o.model_dir = last_model_dir_;
        o.model_label = QDir(last_model_dir_).dirName();
    } else if (o.model_source == RunOptions::ModelSource::Planned) {
        o.model_dir = planned_.folder;
        o.model_label = planned_.repo.isEmpty() ? planned_.name : planned_.repo.section('/', 1);
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
    o.precision_auto = precision_->currentData().toInt() < 0;
    if (!o.precision_auto) o.precision = Precision(precision_->currentData().toInt());
    o.seq = seq_->value();
    o.batch = batch_->value();
    o.grad_accum = accum_->value();
    o.steps = steps_->value();
    o.grad_checkpointing = ckpt_->isChecked();
    o.data_file = data_->text().trimmed();
    o.out_dir = out_->text().trimmed();
    o.extra_args = extra_args_;
    o.threads = threads_;
    o.processes = processes_->value();
    o.sharding = Sharding(sharding_->currentData().toInt());
    if (lib_ && machine_->currentData().isValid()) {
        if (const MachineProfile* m = lib_->find_machine(machine_->currentData().toString().toStdString())) {
            o.machine_id = qs(m->id);
            o.machine_name = qs(short_machine_name(*m));
            o.machine_ceiling = m->usable_bytes;
        }
    }
    // A GPU's own memory is the ceiling a run on it meets (the machine list stays for the CPU).
    for (const DeviceInfo& d : devices_.devices)
        if (devices_.listed && d.id() == device_->currentData().toString()) {
            o.device = d.id();
            o.device_label = d.label();
            if (d.isGpu() && d.total_bytes > 0) {
                o.machine_id.clear();
                o.machine_name = d.name.isEmpty() ? d.id() : d.name;
                o.machine_ceiling = d.total_bytes;
            }
        }
    if (o.device_label.isEmpty()) o.device_label = "cpu";
    if (cap_mode_->currentIndex() == 1) o.memory_limit = o.machine_ceiling;
    else if (cap_mode_->currentIndex() == 2) o.memory_limit = std::llround(cap_gb_->value() * 1e9);
    if (o.model_source == RunOptions::ModelSource::PlanArchitecture && o.memory_limit == 0 && lib_) {
        // Random weights of a big architecture can ask for more than this machine has: cap at
        // what it can use, so the run ends with a clean out-of-memory event instead of the OS
        // killing it.
        if (const MachineProfile* here = lib_->find_machine(kThisMachineId)) o.memory_limit = here->usable_bytes;
    }
    return o;
}

void RunForm::setOptions(const RunOptions& o) {
    const bool was_syncing = syncing_;
    syncing_ = true;
    // Options given in code are the caller's choice of model (a test, a reopened run).
    if (o.model_source != RunOptions::ModelSource::Planned) model_choice_ = o.model_source;
    else model_choice_.reset();
    if (!o.device.isEmpty()) {
        device_choice_ = o.device;
        const int di = device_->findData(o.device);
        if (di >= 0) device_->setCurrentIndex(di);
    }
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
    precision_->setCurrentIndex(std::max(0, precision_->findData(o.precision_auto ? -1 : int(o.precision))));
    ckpt_->setChecked(o.grad_checkpointing);
    data_->setText(o.data_file);
    out_->setText(o.out_dir);
    extra_args_ = o.extra_args;
    threads_ = o.threads;
    processes_->setValue(int(std::clamp<std::int64_t>(o.processes, 1, processes_->maximum())));
    sharding_->setCurrentIndex(std::max(0, sharding_->findData(int(o.sharding))));
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
    syncing_ = was_syncing;
    updateEnabled();
    notifyChanged();
}

void RunForm::chooseModelFolder() {
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
    model_choice_ = RunOptions::ModelSource::Folder;
    notifyChanged();
}

void RunForm::chooseDataFile() {
    const QString f = QFileDialog::getOpenFileName(this, "Training data", data_->text().isEmpty() ? QDir::homePath() : data_->text(),
                                                   "JSON lines (*.jsonl *.json);;All files (*)");
    if (!f.isEmpty()) data_->setText(f);
}

void RunForm::chooseOutDir() {
    const QString d = QFileDialog::getExistingDirectory(this, "Output folder", out_->text().isEmpty() ? QDir::homePath() : out_->text());
    if (!d.isEmpty()) out_->setText(d);
}

// ------------------------------------------------------------------ following ----

void RunForm::onEdited() {
    if (syncing_) return;
    if (has_plan_) follow_planner_ = false;
    notifyChanged();
}

void RunForm::notifyChanged() {
    if (!syncing_) emit changed();
}

void RunForm::followPlanner() {
    follow_planner_ = true;
    if (has_plan_) setPlan(plan_);
}

QString RunForm::trainBlockedReason() const { return has_plan_ ? cannot_train_reason(plan_) : QString(); }

PlanRunComparison RunForm::planComparison() const {
    const RunOptions o = options();
    if (!has_plan_) return {};
    return compare_plan_and_run(lib_, plan_, o, o.device_label);
}

QString RunForm::summaryText() const {
    return describe(options()) + " · " + precision_->currentText() + (ckpt_->isChecked() ? " · checkpointing" : "");
}

void RunForm::setRunning(bool running) {
    running_ = running;
    updateEnabled();
}

void RunForm::updateEnabled() {
    rank_->setEnabled(method_->currentData().toInt() != int(Method::Full));
    cap_gb_->setEnabled(cap_mode_->currentIndex() == 2);
    sharding_->setEnabled(processes_->value() > 1);
    model_browse_->setEnabled(!running_);
}

// ------------------------------------------------------------------ the model offered ----

bool RunForm::offersModelSource(RunOptions::ModelSource source) const { return model_->findData(int(source)) >= 0; }

void RunForm::chooseModelSource(RunOptions::ModelSource source) {
    // For this run only: the next Train ▶ of a plan whose model is missing asks again, so the
    // demo or random weights never become a silent default.
    const int i = model_->findData(int(source));
    if (i >= 0) model_->setCurrentIndex(i);
    notifyChanged();
}

void RunForm::modelDownloaded(const QString& snapshot) {
    // The cache now has it: the plan's model is found there like any cached model.
    populateModelSources();
    if (planned_.folder.isEmpty()) planned_.folder = snapshot;   // a cache folder set elsewhere
    chooseModelSource(RunOptions::ModelSource::Planned);
}

}  // namespace wingspan::ui
