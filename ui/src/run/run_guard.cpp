#include "wingspan/ui/run_guard.hpp"

#include <algorithm>

#include <QLocale>
#include <QStringList>

#include "wingspan/ui/run_panel.hpp"

#include "run/run_form.hpp"

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// The plan's setup as wingspan-train will run it: the run's own settings win.
TrainingSetup run_setup(const TrainingSetup& planned, const RunOptions& o) {
    TrainingSetup s = planned;
    s.method = o.method == Method::Serve ? Method::Lora : o.method;
    s.lora_rank = std::max<std::int64_t>(1, o.rank);
    s.lora_alpha = o.alpha;
    if (s.method != Method::Qlora) s.quantization = Quantization::None;
    s.precision = o.precision;
    s.precision_auto = o.precision_auto;
    s.seq_len = o.seq;
    s.micro_batch = o.batch;
    s.grad_accum = o.grad_accum;
    s.grad_checkpointing = o.grad_checkpointing;
    s.devices = std::max<std::int64_t>(1, o.processes);
    s.sharding = s.devices > 1 ? o.sharding : Sharding::None;
    s.offload = false;
    return s;
}

}  // namespace

RunFitCheck check_run_fit(const ProfileLibrary* lib, const Plan* plan, const RunOptions& o) {
    RunFitCheck c;
    using Source = RunOptions::ModelSource;
    if (!lib || !plan || (o.model_source != Source::Planned && o.model_source != Source::PlanArchitecture)) return c;
    try {
        const ResolvedModel model = resolve_model(*lib, plan->model);
        const TrainingSetup setup = run_setup(plan->setup, o);
        MachineProfile here = lib->machine(kThisMachineId);
        // An asked-for precision is the one the trainer runs in (wingspan-train does bf16 on a
        // CPU too): planned as such, not adapted the way the planner adapts other frameworks.
        // Auto follows this machine's bf16 instructions, as the trainer's rule does.
        if (!o.precision_auto) here.bf16 = true;
        const FrameworkProfile* fw = &lib->framework_for(lib->machine(kThisMachineId));
        const bool gpu = o.device.startsWith("cuda");
        if (gpu) {
            if (const FrameworkProfile* cuda = lib->find_framework("libtorch-cuda")) fw = cuda;
        }
        const MachineVerdict v = evaluate(model.arch, setup, here, *fw);
        c.checked = true;
        c.needed_bytes = v.needed_bytes;
        c.usable_bytes = gpu && o.machine_ceiling > 0 ? o.machine_ceiling : v.usable_bytes;
        c.where = gpu ? o.device : QString("this machine");
        if (o.memory_limit > 0 && o.memory_limit < c.usable_bytes) {
            c.usable_bytes = o.memory_limit;
            c.where = "the memory cap";
        }
        c.fits = c.needed_bytes <= c.usable_bytes;
        // A shorter sequence to offer: halving until it fits (round numbers a person would type).
        for (std::int64_t seq = setup.seq_len / 2; !c.fits && seq >= 8; seq /= 2) {
            TrainingSetup shorter = setup;
            shorter.seq_len = seq;
            if (evaluate(model.arch, shorter, here, *fw).needed_bytes <= c.usable_bytes) {
                c.seq_that_fits = seq;
                break;
            }
        }
    } catch (const std::exception& e) {
        c.checked = true;
        c.fits = false;
        c.error = qs(e.what());
    }
    return c;
}

QString run_fit_problem(const RunFitCheck& c, const QString& model, ByteUnit unit) {
    if (!c.error.isEmpty()) return model + " cannot be planned for this run: " + c.error;
    return model + " does not fit " + c.where + " with these settings: it needs " +
           qs(format_bytes(double(c.needed_bytes), unit)) + ", " + qs(format_bytes(double(c.usable_bytes), unit)) +
           " usable (short " + qs(format_bytes(double(c.needed_bytes - c.usable_bytes), unit)) + ").";
}

}  // namespace wingspan::ui

// ------------------------------------------------------------------ the panel ----

namespace wingspan::ui {

bool RunPanel::runFits(const RunOptions& o, QString* error) {
    fit_offer_.clear();
    const RunFitCheck fit = check_run_fit(lib_, form_->hasPlan() ? &form_->plan() : nullptr, o);
    if (fit.fits) return true;
    const QString& planned = form_->plannedModel().name;
    const QString model = planned.isEmpty() ? o.model_label : planned;
    if (error) *error = run_fit_problem(fit, model, unit_);
    // What fits instead, one click each: the demo always, a shorter sequence when one fits.
    QStringList offers{"<a href=\"wingspan-run:demo\">train the built-in demo model</a>"};
    if (fit.seq_that_fits > 0)
        offers << QString("<a href=\"wingspan-run:seq:%1\">train with sequence %2</a>")
                      .arg(fit.seq_that_fits)
                      .arg(QLocale().toString(qlonglong(fit.seq_that_fits)));
    fit_offer_ = "<br>Nothing was started. Instead: " + offers.join(" or ") +
                 ", or choose a smaller model in the planner.";
    return false;
}

void RunPanel::takeFitOffer(const QString& link) {
    if (isRunning()) return;
    if (link == "wingspan-run:demo") {
        form_->chooseModelSource(RunOptions::ModelSource::BuiltIn);
    } else if (link.startsWith("wingspan-run:seq:")) {
        RunOptions o = options();
        o.seq = link.section(':', 2).toLongLong();
        if (o.seq < 8) return;
        setOptions(o);
    } else {
        return;
    }
    QString error;
    if (!start(&error)) showStartError(error);
}

}  // namespace wingspan::ui
