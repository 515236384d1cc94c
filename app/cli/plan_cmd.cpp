#include "plan_cmd.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <ostream>

#include "cli.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/framework_spec.hpp"
#include "wingspan/model_attention.hpp"
#include "wingspan/plan.hpp"
#include "wingspan/speed_model.hpp"
#include "wingspan/units.hpp"

namespace wingspan::cli {

using nlohmann::json;

std::string pad(const std::string& s, size_t width, bool right) {
    size_t cps = 0;
    for (unsigned char c : s) cps += (c & 0xC0) != 0x80;
    if (cps >= width) return s;
    return right ? std::string(width - cps, ' ') + s : s + std::string(width - cps, ' ');
}

PlanFlags plan_flags_of(const std::vector<std::string>& args) {
    PlanFlags f = PlanFlags::parse(args);
    if (!f.positional.empty()) throw InputError("unexpected argument '" + f.positional.front() + "'");
    return f;
}

namespace {

// plan --rows: the tensor inventory (one row per kind of tensor, with its lifetime) and each
// phase's allocated bytes from the lifetime walk, the peak marked.
int print_rows(const MemoryEstimate& est, bool as_json, std::ostream& out) {
    if (as_json) {
        out << json{{"rows", est.inventory.to_json()}, {"phases", est.to_json()["phases"]}, {"peak_phase", est.peak_phase}}.dump(2)
            << "\n";
        return 0;
    }
    out << est.inventory.table() << "\nphases (bytes allocated on one device, from the rows alive in each):\n";
    for (const auto& p : est.phases)
        out << "  " << p.name << ": " << format_count(p.total()) << " B" << (p.name == est.peak_phase ? "  <- peak" : "") << "\n";
    return 0;
}

}  // namespace

PlanReport make_plan_report(const ProfileLibrary& lib, const PlanFlags& o, std::ostream& err) {
    PlanReport r;
    r.model = model_from_flags(lib, o, err);
    const TrainingSetup asked = setup_from_flags(o, r.model.arch);
    r.chosen = chosen_from_flags(o);
    const FrameworkProfile* forced = framework_from_flags(lib, o);
    const auto machines = machines_from_flags(lib, o);
    r.framework = forced ? forced
                  : o.all("--machine").size() == 1 ? &lib.framework_for(*machines.front())
                                                   : &lib.framework(ProfileLibrary::default_framework_id(MachineKind::Gpu));
    TrainingSetup& setup = r.setup;
    setup = apply_framework_defaults(asked, *r.framework, r.chosen);
    setup.validate(r.model.arch);
    // A framework the user named must load the checkpoint format it is asked to serve.
    if (const std::string refused = forced ? checkpoint_not_loaded(setup, *forced) : ""; !refused.empty()) throw InputError(refused);
    // --data: each framework's batches of the real examples; memory at the peak batch, time from its tokens.
    r.data = plan_data_from_flags(o, asked, err);
    // Precision auto: the totals take the one machine's choice — its verdict's, so where fp32 does
    // not fit and bf16-mixed does the totals say bf16-mixed as its row does —, else what a GPU with
    // bf16 takes; each machine's verdict below makes its own (evaluate).
    if (setup.precision_auto && machines.size() == 1) {
        const MachineVerdict one = evaluate(r.model.arch, r.data.at_peak(setup, r.framework->id), *machines.front(), *r.framework);
        setup.precision_auto = false;
        setup.precision = one.setup.precision;
        r.precision_reason = one.precision_reason;
    } else if (setup.precision_auto) {
        setup.precision_auto = false;
        r.precision_reason = "auto: bf16-mixed for these totals (a GPU with bf16); each machine below takes its own";
    }
    r.estimate = estimate_memory(r.model.arch, r.data.at_peak(setup, r.framework->id), *r.framework);
    r.tokens = r.data.tokens(r.framework->id, dataset_tokens_from_flags(o));
    for (const auto* m : machines) {
        const FrameworkProfile& fw = forced ? *forced : lib.framework_for(*m);
        r.verdicts.push_back(
            evaluate(r.model.arch, r.data.at_peak(apply_framework_defaults(asked, fw, r.chosen), fw.id), *m, fw));
        r.machine_tokens.push_back(r.data.tokens(fw.id, r.tokens));
    }
    return r;
}

json plan_report_json(const PlanReport& r) {
    const ResolvedModel& model = r.model;
    const TrainingSetup& setup = r.setup;
    const FrameworkProfile& top_fw = *r.framework;
    const bool serving = r.serving();
    json j = r.estimate.to_json();
    j["model"] = {{"id", model.id}, {"name", model.name}, {"family", model.family},
                  {"config", model.arch.to_hf_config()}, {"assumptions", model.arch.assumptions}};
    j["setup"] = setup.to_json();
    j["framework"] = framework_spec(top_fw);
    j["precision_in_force"] = precision_in_force(setup, top_fw);
    j["attention_in_force"] = to_string(model_attention(model.arch, setup.attention));
    if (!r.precision_reason.empty()) j["precision_reason"] = r.precision_reason;
    j["quantization_format"] = quantization_label(setup, top_fw);
    j["objective_in_force"] = objective_summary(setup);
    if (!serving) {
        j["flops_per_token"] = training_flops_per_token(model.arch, setup);
        j["dataset_tokens"] = r.tokens;
    }
    if (r.data.lengths) j["data"] = r.data.to_json(top_fw.id);
    json machines_json = json::array();
    for (size_t i = 0; i < r.verdicts.size(); ++i) {
        const auto& v = r.verdicts[i];
        json m = v.to_json();
        m["framework"] = framework_spec(v.framework ? *v.framework : top_fw);
        if (!serving) {
            const RunCost cost = estimate_run(v.speed, *v.machine, r.machine_tokens[i]);
            m["run_seconds"] = cost.seconds;
            // The spread of measured/predicted on bench_throughput's held-back cases.
            m["run_seconds_likely"] = {cost.seconds * kTimeLow, cost.seconds * kTimeHigh};
            m["step_seconds"] = v.speed.step_seconds;
            m["run_cost_usd"] = cost.dollars ? json(*cost.dollars) : json(nullptr);
        }
        machines_json.push_back(m);
    }
    j["machines"] = machines_json;
    return j;
}

int cmd_plan(const ProfileLibrary& lib, const PlanFlags& o, std::ostream& out, std::ostream& err) {
    const PlanReport r = make_plan_report(lib, o, err);
    if (o.has("--rows")) return print_rows(r.estimate, o.has("--json"), out);
    if (o.has("--json")) {
        out << plan_report_json(r).dump(2) << "\n";
        return kExitOk;
    }
    const ResolvedModel& model = r.model;
    const TrainingSetup& setup = r.setup;
    const FrameworkProfile& top_fw = *r.framework;
    const MemoryEstimate& est = r.estimate;
    const PlanData& data = r.data;
    const bool serving = r.serving();
    const ByteUnit unit = o.unit();
    const auto& p = est.params;
    out << model.name << " (" << model.id << "): " << format_count(p.total) << " parameters, "
        << format_count(p.trainable) << " trainable";
    if (p.total > 0) out << " (" << std::fixed << std::setprecision(2) << 100.0 * double(p.trainable) / double(p.total) << " %)";
    out << "\n" << describe_setup_detailed(setup, top_fw) << "\n";
    if (data.lengths) print_data_summary(*data.lengths, data.summary(top_fw.id), setup.seq_len, out);
    for (const auto& a : model.arch.assumptions) out << "warning: " << a << "\n";
    out << "Framework for the totals below: " << top_fw.name << " [" << framework_spec(top_fw) << "]\n"
        << "Precision in force: " << precision_in_force(setup, top_fw)
        << (!r.precision_reason.empty() ? " (" + r.precision_reason + ")"
            : r.chosen.precision          ? std::string(" (--precision)")
            : top_fw.default_precision.empty() ? std::string()
                                               : std::string(" (the framework's default)"))
        << "\n";
    if (const Attention runs = model_attention(model.arch, setup.attention); runs != setup.attention)
        out << "Attention in force: " << to_string(runs) << " (" << to_string(setup.attention)
            << " was asked; SDPA's kernels cannot soft-cap the scores this model caps)\n";
    if (setup.effective_quantization() != Quantization::None)
        out << "Quantized storage: " << quantization_label(setup, top_fw) << "\n";
    out << "\n";
    const bool gib = unit == ByteUnit::GiB;
    // "at peak": the component at the peak phase (they sum to the total); "max": the most it
    // holds in any phase, what its formula computes (shown where it differs).
    const auto maxima = est.component_maxima();
    out << pad("Component", 24) << pad(std::string(gib ? "GiB" : "GB") + " at peak", 12, true)
        << pad("max", 8, true) << "   how (the formula gives the max over phases)\n";
    for (Component c : kAllComponents) {
        auto it = est.components.find(c);
        auto mx = maxima.find(c);
        const std::int64_t at_peak = it == est.components.end() ? 0 : it->second;
        const std::int64_t most = mx == maxima.end() ? 0 : mx->second;
        if (at_peak == 0 && most == 0) continue;
        std::string how = est.explain(c);
        std::replace(how.begin(), how.end(), '\n', ';');
        char value[32], max_value[32] = "";
        std::snprintf(value, sizeof value, "%.2f", double(at_peak) / (gib ? kGiB : kGB));
        if (most != at_peak) std::snprintf(max_value, sizeof max_value, "%.2f", double(most) / (gib ? kGiB : kGB));
        out << pad(std::string(component_label(c)), 24) << pad(value, 12, true) << pad(max_value, 8, true) << "   "
            << how << "\n";
    }
    out << "\nPeak of allocated tensors (" << est.peak_phase << "): " << format_bytes(double(est.peak_allocated_bytes), unit, 2)
        << "\nTotal the device holds at the peak:  " << format_bytes(double(est.total_bytes), unit, 2);
    if (est.host_bytes > 0) out << "\nHost RAM beside the device:          " << format_bytes(double(est.host_bytes), unit, 2);
    out << "\n\n";
    out << pad("Machine", 34) << pad("usable", 10, true) << pad("needed", 10, true) << pad("margin", 10, true) << "  "
        << pad("verdict", 8) << pad("framework", 17);
    if (!serving) out << pad("tokens/s", 10, true) << pad("time", 11, true) << pad("likely", 14, true) << pad("cost", 9, true);
    else out << pad("decode tok/s", 13, true);
    out << "\n";
    for (size_t i = 0; i < r.verdicts.size(); ++i) {
        const auto& v = r.verdicts[i];
        out << pad(v.machine->name.substr(0, 33), 34) << pad(format_bytes(double(v.usable_bytes), unit), 10, true)
            << pad(format_bytes(double(v.needed_bytes), unit), 10, true)
            << pad(format_bytes(double(v.margin_bytes), unit), 10, true) << "  " << pad(to_string(v.fit), 8)
            << pad(framework_spec(v.framework ? *v.framework : top_fw), 17);
        if (!serving) {
            const RunCost cost = estimate_run(v.speed, *v.machine, r.machine_tokens[i]);
            char tps[32], dollars[32] = "—";
            std::snprintf(tps, sizeof tps, "%.0f", v.speed.tokens_per_s);
            if (cost.dollars) std::snprintf(dollars, sizeof dollars, "$%.2f", *cost.dollars);
            out << pad(tps, 10, true) << pad(format_duration(cost.seconds), 11, true)
                << pad(likely_span(cost.seconds), 14, true) << pad(dollars, 9, true);
        } else {
            char tps[32];
            std::snprintf(tps, sizeof tps, "%.1f", v.speed.tokens_per_s);
            out << pad(tps, 13, true);
        }
        out << "\n";
        for (const auto& note : v.notes) out << "    note: " << note << "\n";
    }
    if (serving)
        out << "\nServing " << setup.serve_batch << " sequence" << (setup.serve_batch > 1 ? "s" : "") << " of up to "
            << format_count(setup.seq_len) << " tokens of context (weights, KV cache and one layer's prefill). "
            << "GB = 10^9 bytes, GiB = 2^30.\n";
    else
        out << "\nTime and cost for " << format_count(std::int64_t(r.tokens))
            << " training tokens (" << (data.lengths ? "--data's batches × --epochs" : "--examples × --tokens-per-example × --epochs")
            << "); \"likely\": the 10th–90th percentile of "
               "measured/predicted on the held-back cases of bench_throughput (bench/results/throughput.md). "
               "GB = 10^9 bytes, GiB = 2^30.\n";
    return kExitOk;
}

}  // namespace wingspan::cli
