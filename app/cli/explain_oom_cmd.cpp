// `wingspan explain-oom [plan flags] < message.txt`: PyTorch's out-of-memory text read into
// figures (core/src/oom_message.cpp) and, with a plan, matched against the plan's phases and
// tensors with the nearest settings that fit (core/src/oom_advice.cpp). The plan flags are
// `wingspan plan`'s own, resolved by running `plan --json` in-process, as `recipe` does.
#include "explain_oom_cmd.hpp"

#include <iterator>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "cli.hpp"
#include "wingspan/data_lengths.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/oom_advice.hpp"
#include "wingspan/units.hpp"

namespace wingspan::cli {

namespace {

using nlohmann::json;

// A pasted traceback is a few kilobytes; more than this is not a message.
constexpr std::size_t kMaxMessageBytes = 1 << 20;

PeakBatch peak_of(const json& data) {
    PeakBatch p;
    p.rows = data.at("peak_batch").at("rows").get<std::int64_t>();
    p.cols = data.at("peak_batch").at("cols").get<std::int64_t>();
    return p;
}

std::string read_message(std::istream& in) {
    std::string text;
    char buf[4096];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        text.append(buf, std::size_t(in.gcount()));
        if (text.size() > kMaxMessageBytes) throw InputError("explain-oom: the message is over 1 MiB; paste only the error");
    }
    return text;
}

// The plan the flags describe, as `plan --json` resolves it (framework defaults applied).
json resolve_plan(std::vector<std::string> plan_args, std::ostream& err) {
    plan_args.insert(plan_args.begin(), "plan");
    plan_args.push_back("--json");
    std::ostringstream out, plan_err;
    const int code = run(plan_args, out, plan_err);
    err << plan_err.str();
    if (code != kExitOk) throw InputError("explain-oom: the plan flags do not make a plan (see above)");
    return json::parse(out.str());
}

void print_text(const OomDiagnosis& d, bool with_plan, std::ostream& out) {
    const OomReport& r = d.report;
    out << "PyTorch out-of-memory message (" << to_string(r.format) << ") on " << r.device << "\n";
    for (const auto& f : d.findings) out << "  " << f << "\n";
    if (!with_plan) {
        out << "\nGive the plan (--model/--hf/--size/--config, --method, --seq, --batch, ... or --from CONFIG) to see\n"
               "where in the step it ran out and the nearest settings that fit.\n";
        return;
    }
    out << "\nNearest settings (each checked by the planner on this device's "
        << format_bytes(double(d.ceiling_bytes), ByteUnit::GiB, 2) << "):\n";
    if (d.advice.empty()) out << "  none of batch, sequence, checkpointing, chunked loss, rank or method changes it\n";
    for (const auto& a : d.advice)
        out << (a.with_previous ? "  + " : "  ") << a.flag << " " << a.value << "   " << (a.fits ? "fits" : "does not fit") << " ("
            << format_bytes(double(a.needed_bytes), ByteUnit::GiB, 2) << ") — " << a.why << "\n";
}

}  // namespace

int run_explain_oom(const ProfileLibrary& lib, const ExplainOomRequest& request, std::istream& in, std::ostream& out,
                    std::ostream& err) {
    const std::string text = read_message(in);
    const std::optional<OomReport> report = parse_oom_message(text);
    if (!report) {
        err << "wingspan: not an OOM message I know: expected PyTorch's \"CUDA out of memory. Tried to allocate …\" "
               "or \"MPS backend out of memory (…)\" text\n";
        return kExitBadInput;
    }
    OomDiagnosis d;
    d.report = *report;
    d.findings = oom_findings(*report);
    if (request.with_plan) {
        std::vector<std::string> args = request.plan_args;
        // The device of the message decides the framework unless the user named one.
        if (!request.framework_given && !request.machine)
            args.insert(args.end(), {"--framework", ProfileLibrary::default_framework_id(
                                                        report->device == "mps" ? MachineKind::Unified : MachineKind::Gpu)});
        const json plan = resolve_plan(args, err);
        const Architecture arch = Architecture::from_hf_config(plan.at("model").at("config"));
        TrainingSetup setup = TrainingSetup::from_json(plan.at("setup"));
        // --data: the plan's memory is at the data's peak batch (its padded length), and so is the
        // diagnosis (core's at_peak_batch: the peak batch's columns as the sequence).
        if (plan.contains("data")) setup = at_peak_batch(setup, peak_of(plan.at("data")));
        const FrameworkProfile& fw = lib.framework(plan.at("framework").get<std::string>());
        d = diagnose_oom(*report, arch, setup, fw, request.machine);
    }
    if (request.json) {
        out << d.to_json().dump(2) << "\n";
        return kExitOk;
    }
    print_text(d, request.with_plan, out);
    return kExitOk;
}

}  // namespace wingspan::cli
