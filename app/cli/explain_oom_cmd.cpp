// `wingspan explain-oom [plan flags] < message.txt`: PyTorch's out-of-memory text read into
// figures (core/src/import/oom_message.cpp) and, with a plan, matched against the plan's phases and
// tensors with the nearest settings that fit (core/src/import/oom_advice.cpp). The plan flags are
// `wingspan plan`'s own, resolved by the same PlanReport (plan_cmd.hpp) as `recipe` uses.
#include "explain_oom_cmd.hpp"
#include "plan_cmd.hpp"

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

std::string read_message(std::istream& in) {
    std::string text;
    char buf[4096];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        text.append(buf, std::size_t(in.gcount()));
        if (text.size() > kMaxMessageBytes) throw InputError("explain-oom: the message is over 1 MiB; paste only the error");
    }
    return text;
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
        const PlanReport plan = make_plan_report(lib, plan_flags_of(args), err);
        // --data: the plan's memory is at the data's peak batch (its padded length), and so is the
        // diagnosis.
        const TrainingSetup setup = plan.data.at_peak(plan.setup, plan.framework->id);
        const Architecture& arch = plan.model.arch;
        const FrameworkProfile& fw = *plan.framework;
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
