#include "wingspan/oom_advice.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"
#include "wingspan/units.hpp"
#include "wingspan/verdict.hpp"

namespace wingspan {

namespace {

std::string gib(std::int64_t bytes) { return format_bytes(double(bytes), ByteUnit::GiB, 2); }

std::string percent(double part, double whole) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f %%", whole > 0 ? 100.0 * part / whole : 0.0);
    return buf;
}

// The plan's tensors a single request can be: one allocation each (the sizes PyTorch asks the
// allocator for), named for the user.
struct Candidate {
    std::string name;
    std::int64_t bytes;
};

std::vector<Candidate> single_tensors(const Architecture& a, const TrainingSetup& s) {
    const std::int64_t rows = s.micro_batch * s.seq_len;
    const std::int64_t e = compute_dtype_bytes(s.precision);
    std::vector<Candidate> c = {
        {"the logits in fp32 (batch × seq × vocab × 4 B), upcast for the loss", rows * a.vocab * 4},
        {"the logits (batch × seq × vocab × " + std::to_string(e) + " B)", rows * a.vocab * e},
        {"one MLP activation (batch × seq × intermediate × " + std::to_string(e) + " B)", rows * a.intermediate * e},
        {"one hidden state (batch × seq × hidden × " + std::to_string(e) + " B)", rows * a.hidden * e},
        {"the embedding or head weight (vocab × hidden × " + std::to_string(dtype_bytes(s.precision)) + " B)",
         a.vocab * a.hidden * dtype_bytes(s.precision)},
        {"one MLP weight (hidden × intermediate × " + std::to_string(dtype_bytes(s.precision)) + " B)",
         a.hidden * a.intermediate * dtype_bytes(s.precision)},
    };
    if (s.attention == Attention::Eager)
        c.push_back({"the eager attention scores (batch × heads × seq² × " + std::to_string(e) + " B)",
                     s.micro_batch * a.heads * s.seq_len * s.seq_len * e});
    return c;
}

// The candidate within a factor of 2 of the request, closest on a log scale.
std::string closest_tensor(const std::vector<Candidate>& cands, std::int64_t requested) {
    double best = std::log(2.0);
    std::string name;
    for (const auto& c : cands) {
        if (c.bytes <= 0 || requested <= 0) continue;
        const double d = std::fabs(std::log(double(c.bytes) / double(requested)));
        if (d < best) best = d, name = c.name;
    }
    return name;
}

bool fits_on(const Architecture& a, const TrainingSetup& s, const MachineProfile& m, const FrameworkProfile& f,
             std::int64_t* needed) {
    try {
        s.validate(a);
        const MachineVerdict v = evaluate(a, s, m, f);
        if (needed) *needed = v.needed_bytes;
        return v.fit != Fit::No;
    } catch (const std::exception&) {   // an impossible or unbounded variant never fits
        return false;
    }
}

bool add(OomDiagnosis& d, const Architecture& a, const TrainingSetup& s, const MachineProfile& m,
         const FrameworkProfile& f, std::string flag, std::string value, std::string why, bool chained = false) {
    OomAdvice adv{std::move(flag), std::move(value), false, 0, std::move(why), chained};
    adv.fits = fits_on(a, s, m, f, &adv.needed_bytes);
    d.advice.push_back(std::move(adv));
    return d.advice.back().fits;
}

// When no single change fits: the changes one after another, each on top of the ones before,
// until the plan fits (checkpointing, chunked loss, a lighter method, then the largest batch and
// the longest sequence the solver finds for what is left).
void chained_settings(OomDiagnosis& d, const Architecture& a, const TrainingSetup& setup, const MachineProfile& m,
                      const FrameworkProfile& f) {
    TrainingSetup s = setup;
    if (!s.grad_checkpointing) {
        s.grad_checkpointing = true;
        if (add(d, a, s, m, f, "--grad-checkpointing", "on", "first step", true)) return;
    }
    if (s.loss_chunk_tokens == 0 && !f.fused_loss) {
        s.loss_chunk_tokens = 1024;
        if (add(d, a, s, m, f, "--loss-chunk", "1024", "with the above", true)) return;
    }
    if (s.method == Method::Full || s.method == Method::Lora) {
        s.method = s.method == Method::Full ? Method::Lora : Method::Qlora;
        if (add(d, a, s, m, f, "--method", to_string(s.method), "with the above", true)) return;
    }
    if (s.micro_batch > 1) {
        const Solution b = solve(SolveFor::Batch, a, s, m, f);
        if (b.value >= 1 && b.value < s.micro_batch) {
            s.grad_accum *= (s.micro_batch + b.value - 1) / b.value;
            s.micro_batch = b.value;
            add(d, a, s, m, f, "--batch", std::to_string(b.value), "with the above", true);
            if (add(d, a, s, m, f, "--grad-accum", std::to_string(s.grad_accum), "keeps the effective batch", true))
                return;
        } else if (b.value == 0) {
            s.grad_accum *= s.micro_batch;
            s.micro_batch = 1;
            add(d, a, s, m, f, "--batch", "1", "with the above", true);
            add(d, a, s, m, f, "--grad-accum", std::to_string(s.grad_accum), "keeps the effective batch", true);
        }
    }
    if (s.objective.kind == Objective::Sft) {
        const Solution q = solve(SolveFor::Seq, a, s, m, f);
        if (q.value >= 1 && q.value < s.seq_len) {
            s.seq_len = q.value;
            add(d, a, s, m, f, "--seq", std::to_string(q.value), "with the above: longest sequence that fits", true);
        }
    }
}

// The nearest settings: each changes one thing (the micro batch keeps the effective batch through
// accumulation), found by the solver where it is a number.
void nearest_settings(OomDiagnosis& d, const Architecture& a, const TrainingSetup& setup, const MachineProfile& m,
                      const FrameworkProfile& f) {
    if (!setup.trains()) {
        const Solution b = solve(SolveFor::Batch, a, setup, m, f);
        if (b.value >= 1 && b.value < setup.serve_batch)
            add(d, a, b.at_value.setup, m, f, "--batch", std::to_string(b.value), "most concurrent sequences that fit");
        return;
    }
    if (!setup.grad_checkpointing) {
        TrainingSetup s = setup;
        s.grad_checkpointing = true;
        add(d, a, s, m, f, "--grad-checkpointing", "on", "recompute each layer in backward instead of keeping it");
    }
    if (setup.micro_batch > 1) {
        const Solution b = solve(SolveFor::Batch, a, setup, m, f);
        if (b.value >= 1 && b.value < setup.micro_batch) {
            TrainingSetup s = setup;
            s.micro_batch = b.value;
            s.grad_accum = setup.grad_accum * ((setup.micro_batch + b.value - 1) / b.value);
            add(d, a, s, m, f, "--batch", std::to_string(b.value), "largest micro batch that fits");
            add(d, a, s, m, f, "--grad-accum", std::to_string(s.grad_accum),
                "with --batch " + std::to_string(b.value) + ": keeps the effective batch at least as large");
        }
    }
    if (setup.loss_chunk_tokens == 0 && !f.fused_loss) {
        TrainingSetup s = setup;
        s.loss_chunk_tokens = 1024;
        add(d, a, s, m, f, "--loss-chunk", "1024", "cross-entropy 1,024 tokens at a time: no whole fp32 logits");
    }
    if (setup.objective.kind == Objective::Sft) {
        const Solution q = solve(SolveFor::Seq, a, setup, m, f);
        if (q.value >= 1 && q.value < setup.seq_len) {
            TrainingSetup s = setup;
            s.seq_len = q.value;
            add(d, a, s, m, f, "--seq", std::to_string(q.value), "longest sequence that fits (longer examples are cut)");
        }
    }
    if (setup.method == Method::Lora || setup.method == Method::Qlora) {
        const Solution r = solve(SolveFor::Rank, a, setup, m, f);
        if (r.value >= 1 && r.value < setup.lora_rank) {
            TrainingSetup s = setup;
            s.lora_rank = r.value;
            add(d, a, s, m, f, "--rank", std::to_string(r.value), "largest LoRA rank that fits");
        }
    }
    TrainingSetup s = setup;
    if (setup.method == Method::Full) {
        s.method = Method::Lora;
        add(d, a, s, m, f, "--method", "lora", "train adapters instead of every weight");
    } else if (setup.method == Method::Lora) {
        s.method = Method::Qlora;
        add(d, a, s, m, f, "--method", "qlora", "the frozen base in 4-bit NF4");
    }
    // Cutting the sequence alone drops data; unless another single change fits, show the chain too.
    if (std::none_of(d.advice.begin(), d.advice.end(), [](const OomAdvice& x) { return x.fits && x.flag != "--seq"; }))
        chained_settings(d, a, setup, m, f);
}

}  // namespace

MachineProfile machine_from_oom(const OomReport& r, const MachineProfile* like) {
    MachineProfile m = like ? *like : MachineProfile{};
    m.id = "oom-" + r.device;
    m.name = "the device of the message (" + r.device + ")";
    // A plain device: its usable memory is the message's ceiling, so no unified working-set
    // fraction may cut it a second time (MPS's "max allowed" is already that limit).
    m.kind = MachineKind::Gpu;
    std::int64_t capacity = r.capacity_bytes.value_or(like ? like->memory_bytes : 0);
    // No limit in the message (MPS with PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0) and no machine
    // named: the run held `allocated` when a request on top of it failed, so what it could use
    // lies between the two; the lower end is planned (before: a ceiling of 0 B, nothing fit).
    if (!r.capacity_bytes && !like && r.allocated_bytes) capacity = *r.allocated_bytes + r.other_bytes.value_or(0);
    m.memory_bytes = capacity;
    m.usable_bytes = std::max<std::int64_t>(0, capacity - r.other_bytes.value_or(0));
    if (!like) m.bf16 = true;
    return m;
}

std::vector<std::string> oom_findings(const OomReport& r) {
    std::vector<std::string> out;
    std::string dev = "Device " + r.device;
    if (r.capacity_bytes)
        dev += (r.device == "mps" ? " with a limit (max allowed) of " : " with ") + gib(*r.capacity_bytes) +
               (r.device == "mps" ? "" : " in total");
    out.push_back(dev + "; the failing request: " + (r.requested_bytes ? gib(*r.requested_bytes) : "not given") +
                  (r.pool.empty() ? "" : " on the " + r.pool + " pool") + ".");
    if (r.allocated_bytes && r.capacity_bytes)
        out.push_back("Tensors of this process held " + gib(*r.allocated_bytes) + " (" +
                      percent(double(*r.allocated_bytes), double(*r.capacity_bytes)) + " of it)" +
                      (r.free_bytes ? "; " + gib(*r.free_bytes) + " was free" : std::string()) + ".");
    if (auto frag = r.fragmentation_bytes()) {
        std::string s = "Reserved by PyTorch but unallocated (fragmentation): " + gib(*frag) + ".";
        if (r.requested_bytes && *frag >= *r.requested_bytes)
            s += " That is more than the request: the free blocks are too scattered for it; "
                 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets the allocator grow segments instead.";
        out.push_back(s);
    }
    if (r.other_bytes && *r.other_bytes > 0)
        out.push_back((r.device == "mps" ? "Other allocations of the Metal device: " : "Other processes (or the driver) hold ") +
                      gib(*r.other_bytes) + ": not available to this run.");
    if (r.allocated_bytes && r.capacity_bytes && *r.allocated_bytes > *r.capacity_bytes)
        out.push_back("The message reports more allocated than the capacity: PyTorch counts memory it oversubscribed "
                      "(unified memory or a stale figure); the figures are kept as printed.");
    return out;
}

OomDiagnosis diagnose_oom(const OomReport& report, const Architecture& arch, const TrainingSetup& setup,
                          const FrameworkProfile& framework, const MachineProfile* like) {
    OomDiagnosis d;
    d.report = report;
    d.findings = oom_findings(report);
    const MachineProfile machine = machine_from_oom(report, like);
    d.ceiling_bytes = machine.usable_bytes;
    const MemoryEstimate est = estimate_memory(arch, setup, framework);
    d.plan_bytes = est.total_bytes;
    // The first phase (in step order) that does not fit under the ceiling, and in it the component
    // most above its own minimum over the step: what the step was building when it ran out.
    for (const auto& p : est.phases) {
        if (p.total() + est.framework_overhead_bytes <= d.ceiling_bytes) continue;
        d.failing_phase = p.name;
        std::int64_t most = -1;
        for (const auto& [c, bytes] : p.bytes) {
            std::int64_t least = bytes;
            for (const auto& q : est.phases) {
                auto it = q.bytes.find(c);
                least = std::min(least, it == q.bytes.end() ? 0 : it->second);
            }
            if (bytes - least > most) most = bytes - least, d.growing = c;
        }
        break;
    }
    if (report.requested_bytes) d.matching_tensor = closest_tensor(single_tensors(arch, setup), *report.requested_bytes);

    d.findings.push_back("The plan needs " + gib(d.plan_bytes) + " at its peak (" + est.peak_phase + ") of the " +
                         gib(d.ceiling_bytes) + " this device leaves it.");
    if (!d.failing_phase.empty()) {
        std::string s = "The plan crosses the ceiling first in phase " + d.failing_phase;
        if (d.growing) s += ", while " + std::string(component_label(*d.growing)) + " grows";
        d.findings.push_back(s + ".");
    } else {
        d.findings.push_back("The plan fits under the ceiling: the run differs from the plan (longer sequences "
                             "than --seq, another process, fragmentation or a setting not given here).");
    }
    if (!d.matching_tensor.empty())
        d.findings.push_back("The request is the size of " + d.matching_tensor + ": most likely that allocation.");
    else if (report.requested_bytes)
        d.findings.push_back("No single tensor of the plan is within a factor of 2 of the request.");
    nearest_settings(d, arch, setup, machine, framework);
    // Nothing of the plan fits because other allocations hold the device: that, not a setting, is the
    // advice (a no-max MPS message from a real run: 24 MiB this run's, 362.51 GiB other).
    const bool none_fits = std::none_of(d.advice.begin(), d.advice.end(), [](const OomAdvice& a) { return a.fits; });
    if (none_fits && report.other_bytes && *report.other_bytes > d.ceiling_bytes)
        d.findings.push_back("No setting of this plan fits in the " + gib(d.ceiling_bytes) + " the other allocations (" +
                             gib(*report.other_bytes) + ") leave: free that memory first (other processes or apps on "
                             "the device), then plan again.");
    return d;
}

nlohmann::json OomDiagnosis::to_json() const {
    nlohmann::json j = report.to_json();
    j["ceiling_bytes"] = ceiling_bytes;
    j["plan_bytes"] = plan_bytes;
    j["failing_phase"] = failing_phase.empty() ? nlohmann::json(nullptr) : nlohmann::json(failing_phase);
    j["component"] = growing ? nlohmann::json(std::string(component_name(*growing))) : nlohmann::json(nullptr);
    j["matching_tensor"] = matching_tensor.empty() ? nlohmann::json(nullptr) : nlohmann::json(matching_tensor);
    j["findings"] = findings;
    nlohmann::json adv = nlohmann::json::array();
    for (const auto& a : advice)
        adv.push_back({{"flag", a.flag}, {"value", a.value}, {"fits", a.fits}, {"needed_bytes", a.needed_bytes},
                       {"why", a.why}, {"with_previous", a.with_previous}});
    j["advice"] = adv;
    return j;
}

}  // namespace wingspan
