// What "Train ▶" trains: the plan's model found on disk (a folder or the Hugging Face cache),
// and the plan compared with the run in plain words.
#include <algorithm>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLocale>

#include "wingspan/hub_download.hpp"
#include "wingspan/ui/run_model.hpp"

#include "wingspan/json_input.hpp"
#include "wingspan/plan_lookup.hpp"
#include "wingspan/ui/run_session.hpp"

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString method_word(Method m, std::int64_t rank) {
    switch (m) {
        case Method::Full: return "full fine-tune";
        case Method::Lora: return QString("LoRA r%1").arg(rank);
        case Method::Qlora: return QString("QLoRA r%1").arg(rank);
        case Method::Serve: return "serving";
    }
    return {};
}

QString precision_word(Precision p) {
    switch (p) {
        case Precision::Fp32: return "fp32";
        case Precision::Bf16Mixed: return "bf16 mixed";
        case Precision::Bf16: return "bf16";
        case Precision::Fp16Mixed: return "fp16 mixed";
    }
    return {};
}

}  // namespace

QString hf_hub_cache_dir() {
    // The same folder `wingspan download` and the window's download offer write into.
    return QString::fromStdString(hub::default_hf_hub_cache().string());
}

QString hf_cache_snapshot(const QString& repo, const QString& cache_dir) {
    if (repo.isEmpty() || !repo.contains('/')) return {};
    const QDir model(QDir(cache_dir).filePath("models--" + QString(repo).replace('/', "--")));
    if (!model.exists()) return {};
    // refs/main names the snapshot transformers would load.
    // A commit id: bounded, regular; absent or unreadable, the newest snapshot below is taken.
    const std::string ref = try_read_regular_file(model.filePath("refs/main").toStdString(), 4096).value_or("");
    if (!ref.empty()) {
        const QString commit = QString::fromStdString(ref).trimmed();
        const QString dir = model.filePath("snapshots/" + commit);
        if (!commit.isEmpty() && QFileInfo(QDir(dir).filePath("config.json")).isFile()) return QDir(dir).absolutePath();
    }
    QFileInfoList snaps = QDir(model.filePath("snapshots")).entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Time);
    for (const QFileInfo& s : snaps)
        if (QFileInfo(QDir(s.absoluteFilePath()).filePath("config.json")).isFile()) return s.absoluteFilePath();
    return {};
}

QString PlannedModel::missingText() const {
    QString s = name + " is not on this machine";
    if (!repo.isEmpty())
        s += QString(" (looked in %1 for %2)").arg(hf_hub_cache_dir(), repo) +
             ". Download it with `wingspan download " + repo + "` or `huggingface-cli download " + repo + "`";
    s += ", choose its folder (Folder…), or train the built-in demo model or random weights instead.";
    return s;
}

PlannedModel find_planned_model(const ProfileLibrary& lib, const Plan& plan) {
    PlannedModel m;
    if (const auto r = try_resolve_model(lib, plan.model)) {
        m.name = qs(r->name);
        m.params = r->arch.parameter_count();
        if (!r->interpolated && plan.model.config.is_null()) {
            const auto& models = lib.models();
            const auto it = std::find_if(models.begin(), models.end(), [&](const ModelProfile& p) { return p.id == r->id; });
            if (it != models.end()) m.repo = qs(it->hf_repo);
        }
    } else {
        m.name = qs(plan.model.model_id);
    }
    // An imported config names its repository or its folder.
    const QString imported = qs(plan.model.config_name);
    if (m.repo.isEmpty() && !imported.isEmpty()) {
        if (QFileInfo(QDir(imported).filePath("config.json")).isFile()) m.folder = QDir(imported).absolutePath();
        else if (imported.count('/') == 1 && !imported.startsWith('/')) m.repo = imported;
    }
    if (m.folder.isEmpty()) m.folder = hf_cache_snapshot(m.repo);
    return m;
}

QString cannot_train_reason(const Plan& plan) {
    if (plan.setup.method == Method::Serve)
        return "This plan serves the model (inference only): there is nothing to train. Choose Full, LoRA or QLoRA "
               "in the planner to train it.";
    // wingspan-train trains SFT, DPO and ORPO (issue 31); it must never train SFT under another label.
    const Objective o = plan.setup.objective.kind;
    if (o != Objective::Sft && o != Objective::Dpo && o != Objective::Orpo)
        return QString("This plan's objective is %1: wingspan-train trains SFT, DPO and ORPO. Export a recipe for a "
                       "framework that runs %1, or set the objective to SFT, DPO or ORPO to train it here.")
            .arg(QString::fromUtf8(to_string(o)).toUpper());
    // Its DPO reference is TRL's default (adapter-off for LoRA, a copy for full): another one
    // would train what the plan does not show.
    if (o == Objective::Dpo && plan.setup.objective.reference != Reference::Auto &&
        plan.setup.objective.reference != (plan.setup.method == Method::Full ? Reference::Copy : Reference::AdapterOff))
        return QString("This plan's DPO reference is %1: wingspan-train takes the base with the adapter off for "
                       "LoRA/QLoRA and a frozen copy for a full fine-tune. Set the reference to auto to train it here.")
            .arg(QString::fromUtf8(to_string(plan.setup.objective.reference)));
    return {};
}

PlanRunComparison compare_plan_and_run(const ProfileLibrary* lib, const Plan& plan, const RunOptions& run,
                                       const QString& run_device_label) {
    PlanRunComparison c;
    // Each side as a list of (what, text); a pair that reads differently is a difference.
    QString plan_model = qs(plan.model.model_id);
    QString plan_machine;
    if (lib)
        if (const auto m = try_resolve_model(*lib, plan.model)) plan_model = qs(m->name);
    // The machine the plan is drawn for: this machine when it lists it, else its first.
    plan_machine = run_options_for(plan, lib).machine_name;
    QString run_model, run_weights;
    switch (run.model_source) {
        case RunOptions::ModelSource::BuiltIn:
            run_model = "built-in demo model (3.1 M params)";
            run_weights = "random weights";
            break;
        case RunOptions::ModelSource::PlanArchitecture:
            run_model = plan_model + " architecture";
            run_weights = "random weights";
            break;
        case RunOptions::ModelSource::Folder:
            run_model = run.model_label;
            run_weights = "weights from " + run.model_dir;
            break;
        case RunOptions::ModelSource::Planned:
            run_model = plan_model;
            run_weights = run.model_dir.isEmpty() ? QString("not on this machine") : "pretrained weights from " + run.model_dir;
            break;
    }
    const Method plan_method = plan.setup.method;
    const std::int64_t plan_batch = plan.setup.trains() ? plan.setup.micro_batch : plan.setup.serve_batch;
    struct Pair {
        QString what, planned, ran;
    };
    const QString loc = QLocale().toString(qlonglong(plan.setup.seq_len));
    std::vector<Pair> pairs = {
        {"model", plan_model, run_model},
        {"weights", "pretrained weights", run_weights},
        {"method", method_word(plan_method, plan.setup.lora_rank), method_word(run.method, run.rank)},
        {"sequence", "seq " + loc + " × " + QString::number(plan_batch),
         "seq " + QLocale().toString(qlonglong(run.seq)) + " × " + QString::number(run.batch)},
        {"precision", plan.setup.precision_auto ? QString("auto") : precision_word(plan.setup.precision),
         run.precision_auto ? QString("auto") : precision_word(run.precision)},
        {"device", plan_machine.isEmpty() ? QString("this machine") : plan_machine, run_device_label},
    };
    // Data parallel: the plan's devices against the run's processes, named only when either
    // side has several.
    const auto ranks_word = [](std::int64_t n, Sharding sh, const QString& one, const QString& many) {
        return n > 1 ? QString("%1 %2 (%3)").arg(n).arg(many).arg(to_string(sh)) : "1 " + one;
    };
    if (plan.setup.devices > 1 || run.processes > 1)
        pairs.push_back({"processes", ranks_word(plan.setup.devices, plan.setup.sharding, "device", "devices"),
                         ranks_word(run.processes, run.sharding, "process", "processes")});
    QStringList planned, ran;
    for (const Pair& p : pairs) {
        bool same = p.planned == p.ran;
        if (p.what == "weights") same = run.model_source == RunOptions::ModelSource::Planned && !run.model_dir.isEmpty();
        if (p.what == "model")
            same = run.model_source == RunOptions::ModelSource::Planned ||
                   (run.model_source == RunOptions::ModelSource::Folder && run.model_label == plan_model);
        if (p.what == "processes")
            same = plan.setup.devices == run.processes && (run.processes <= 1 || plan.setup.sharding == run.sharding);
        if (p.what == "device") {
            // The plan's machine is where its memory was planned; the run is on this computer.
            same = (plan_machine.isEmpty() || plan_machine == "This machine" || plan_machine.startsWith("This ")) &&
                   (run_device_label.startsWith("cpu") || run_device_label.isEmpty());
        }
        if (!same) c.differences << p.what;
        planned << (same ? p.planned.toHtmlEscaped() : "<b>" + p.planned.toHtmlEscaped() + "</b>");
        ran << (same ? p.ran.toHtmlEscaped() : "<b>" + p.ran.toHtmlEscaped() + "</b>");
    }
    c.differs = !c.differences.isEmpty();
    if (c.differs)
        c.html = "Planner: " + planned.join(" · ") + " → this run: " + ran.join(" · ");
    else
        c.html = "This run trains the plan: " + ran.join(" · ");
    return c;
}

}  // namespace wingspan::ui
