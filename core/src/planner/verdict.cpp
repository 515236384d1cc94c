#include "wingspan/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <locale>
#include <iomanip>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"
#include "wingspan/framework_spec.hpp"
#include "wingspan/speed_model.hpp"
#include "wingspan/units.hpp"
#include "memory/objective_terms.hpp"

namespace wingspan {

using nlohmann::json;

const char* to_string(Fit f) {
    switch (f) {
        case Fit::Fits: return "fits";
        case Fit::Tight: return "tight";
        case Fit::No: return "no";
    }
    return "no";
}

std::int64_t usable_bytes(const MachineProfile& m, const FrameworkProfile& f) {
    if (m.kind == MachineKind::Unified && f.working_set_fraction < 1.0)
        return std::min(m.usable_bytes,
                        static_cast<std::int64_t>(double(m.memory_bytes) * f.working_set_fraction));
    return m.usable_bytes;
}

TrainingSetup adapt_setup(const TrainingSetup& s, const MachineProfile& m, std::vector<std::string>* notes,
                          std::string* precision_reason) {
    TrainingSetup out = s;
    std::string why = std::string(to_string(s.precision)) + " as asked (or the framework's default)";
    if (s.precision_auto) {
        // The trainer's --precision auto rule (trainer/src/run/precision_choice.cpp): bf16 products
        // without bf16 hardware are widened to fp32 first, so fp32 is the faster exact choice there.
        out.precision_auto = false;
        if (m.bf16) {
            out.precision = Precision::Bf16Mixed;
            why = "auto: " + m.name + " computes in bf16, so bf16-mixed";
        } else if (m.kind == MachineKind::Gpu) {
            out.precision = Precision::Fp16Mixed;
            why = "auto: " + m.name + " has no bf16, so fp16-mixed with loss scaling";
        } else {
            out.precision = Precision::Fp32;
            why = "auto: " + m.name + " has no bf16 instructions, so fp32 (faster than widened bf16 products)";
        }
    } else {
        const bool wants_bf16 = s.precision == Precision::Bf16Mixed || s.precision == Precision::Bf16;
        if (wants_bf16 && !m.bf16) {
            if (m.kind == MachineKind::Cpu) {
                out.precision = Precision::Fp32;
                why = m.name + " has no fast bf16: runs in fp32";
            } else {
                out.precision = Precision::Fp16Mixed;
                why = m.name + " has no bf16: fp16 mixed precision with loss scaling instead";
            }
            if (notes) notes->push_back(why);
        }
    }
    if (precision_reason) *precision_reason = why;
    return out;
}

namespace {
struct Flops {
    double forward = 0, training = 0;
};

Flops flops_per_token(const Architecture& arch, const TrainingSetup& setup) {
    // Matmul FLOPs: 2 per weight per token forward. The embedding lookup is free; the head
    // is a matmul even when tied.
    const double embedding = double(arch.vocab) * double(arch.hidden) +
                             (arch.learned_positions ? double(arch.max_positions) * double(arch.hidden) : 0.0);
    const double head = arch.tied_embeddings ? double(arch.vocab) * arch.hidden : 0.0;
    const double matmul_params = double(arch.active_parameter_count()) - embedding + head;
    const double attention = 2.0 * arch.layers * setup.seq_len * arch.q_dim();   // causal QKᵀ and PV
    const double adapter = double(count_parameters(arch, setup).adapter);
    Flops f;
    f.forward = 2.0 * matmul_params + attention + 2.0 * adapter;
    if (!setup.trains()) {
        f.training = f.forward;
        return f;
    }
    const double trainable_matmul = setup.method == Method::Full ? matmul_params : adapter;
    f.training = f.forward                  // forward
                 + f.forward                // gradients of activations (every layer)
                 + 2.0 * trainable_matmul   // gradients of trainable weights
                 + attention;               // attention backward is twice its forward
    if (setup.grad_checkpointing) f.training += f.forward;
    return f;
}
}  // namespace

double training_flops_per_token(const Architecture& arch, const TrainingSetup& setup) {
    return flops_per_token(arch, setup).training;
}

SpeedEstimate estimate_speed(const Architecture& arch, const TrainingSetup& setup,
                             const MachineProfile& m, const FrameworkProfile& f) {
    SpeedEstimate s;
    const Flops flops = flops_per_token(arch, setup);
    s.flops_per_token = flops.training;
    s.forward_flops_per_token = flops.forward;
    const SpeedFactors factors = speed_factors(m, f);
    const double devices = double(std::max<std::int64_t>(1, setup.devices));
    char buf[256];
    if (!setup.trains()) {
        // Serving: generated tokens per second over all sequences (decode reads every weight
        // and the KV cache once per step: bandwidth-bound), in the framework's own serving engine
        // where it is one (MLX on a Mac: serve_factors), else at the machine class's factors.
        const SpeedFactors serve_k = serve_factors(m, f, serve_engine(f.id));
        const ServeSpeed serve = serving_speed(arch, setup, m, serve_k);
        s.tokens_per_s = serve.decode_tokens_per_s;
        s.prefill_tokens_per_s = serve.prefill_tokens_per_s;
        std::snprintf(buf, sizeof buf, "decode: (%.3g B weights + %.3g B KV cache) per step / %.0f GB/s × %.2f",
                      serve.weight_bytes, serve.kv_bytes_per_step, m.bandwidth_gb_s, serve_k.bandwidth_efficiency);
        s.formula = buf;
        return s;
    }
    const StepTime step = training_step(arch, setup, m, f, factors);
    s.step_seconds = step.total_s();
    // Data parallel: every device runs its own micro-steps (the gradient exchange is not counted).
    s.tokens_per_s = step.tokens_per_s() * devices;
    s.achieved_tflops = s.tokens_per_s * s.flops_per_token / 1e12;
    std::snprintf(buf, sizeof buf,
                  "%.0f tokens / %.3g s per micro-step (matmuls %.0f %%, memory-bound %.0f %%, overhead %.0f %%)%s",
                  step.tokens, step.total_s(), 100 * (step.matmul_s + step.attention_s) / step.total_s(),
                  100 * (step.adapter_s + step.dequant_s + step.optimizer_s + step.elementwise_s + step.logits_s) /
                      step.total_s(),
                  100 * step.overhead_s / step.total_s(), setup.devices > 1 ? " × devices" : "");
    s.formula = buf;
    return s;
}

double checked_dataset_tokens(std::int64_t examples, std::int64_t tokens_per_example, std::int64_t epochs,
                              const std::string& where) {
    if (examples < 1 || tokens_per_example < 1 || epochs < 1)
        throw InputError(where + ": examples, tokens per example and epochs must each be at least 1");
    const double tokens = double(examples) * double(tokens_per_example) * double(epochs);
    if (!(tokens <= kMaxDatasetTokens)) {
        std::ostringstream msg;   // C locale: "7.85e+56" whatever the user's decimal separator
        msg.imbue(std::locale::classic());
        msg << where << ": " << std::setprecision(3) << tokens
            << " tokens (examples × tokens per example × epochs), more than the 10^15 a time or cost is given for";
        throw InputError(msg.str());
    }
    return tokens;
}

RunCost estimate_run(const SpeedEstimate& speed, const MachineProfile& m, double tokens) {
    RunCost c;
    c.tokens = tokens;
    c.seconds = speed.tokens_per_s > 0 ? tokens / speed.tokens_per_s : INFINITY;
    if (m.price_per_hour && std::isfinite(c.seconds)) c.dollars = *m.price_per_hour * c.seconds / 3600.0;
    return c;
}

// The memory side of a verdict: the estimate for v.setup and how it meets the machine.
static void judge_memory(MachineVerdict& v, const Architecture& arch, const FrameworkProfile& framework) {
    const MachineProfile& machine = *v.machine;
    v.estimate = estimate_memory(arch, v.setup, framework);
    const bool one_pool = machine.kind != MachineKind::Gpu;
    v.needed_bytes = v.estimate.total_bytes + (one_pool ? v.estimate.host_bytes : 0);
    if (v.estimate.reserved_device_fraction > 0) {   // GRPO's colocated vLLM: a share of the whole device
        const auto share = static_cast<std::int64_t>(v.estimate.reserved_device_fraction * double(machine.memory_bytes));
        v.needed_bytes += share;
        v.notes.push_back("a colocated vLLM engine takes " + std::to_string(v.estimate.reserved_device_fraction).substr(0, 4) +
                          " of the device's " + format_bytes(double(machine.memory_bytes)) + " (" +
                          format_bytes(double(share)) + ", TRL vllm_gpu_memory_utilization) beside training");
    }
    v.margin_bytes = v.usable_bytes - v.needed_bytes;
    if (v.needed_bytes > v.usable_bytes)
        v.fit = Fit::No;
    else if (double(v.margin_bytes) < kTightFraction * double(v.usable_bytes))
        v.fit = Fit::Tight;
    else
        v.fit = Fit::Fits;
    if (!one_pool && v.estimate.host_bytes > 0) {
        v.host_fits = v.estimate.host_bytes <= machine.host_memory_bytes;
        if (!v.host_fits) {
            v.fit = Fit::No;
            v.notes.push_back("offloaded state needs " + format_bytes(double(v.estimate.host_bytes)) +
                              " of host RAM; the machine has " +
                              format_bytes(double(machine.host_memory_bytes)));
        }
    }
}

MachineVerdict evaluate(const Architecture& arch, const TrainingSetup& setup, const MachineProfile& machine,
                        const FrameworkProfile& framework) {
    MachineVerdict v;
    v.machine = &machine;
    v.framework = &framework;
    v.setup = adapt_setup(setup, machine, &v.notes, &v.precision_reason);
    v.usable_bytes = usable_bytes(machine, framework);
    judge_memory(v, arch, framework);
    // Auto takes what fits: where fp32 does not and bf16-mixed would, bf16-mixed (as the trainer does).
    if (setup.precision_auto && v.setup.precision == Precision::Fp32 && v.fit == Fit::No) {
        MachineVerdict mixed = v;
        mixed.setup.precision = Precision::Bf16Mixed;
        mixed.notes.clear();
        judge_memory(mixed, arch, framework);
        if (mixed.fit != Fit::No) {
            mixed.precision_reason = "auto: fp32 would need " + format_bytes(double(v.needed_bytes)) + ", more than " +
                                     format_bytes(double(v.usable_bytes)) + "; bf16-mixed fits (slower here: bf16 products are widened)";
            mixed.notes.insert(mixed.notes.begin(), mixed.precision_reason);
            v = std::move(mixed);
        }
    }
    // A checkpoint format the machine's framework cannot load does not run there, whatever it needs.
    if (const std::string refused = checkpoint_not_loaded(v.setup, framework); !refused.empty()) {
        v.fit = Fit::No;
        v.notes.push_back(refused);
    }
    if (machine.kind == MachineKind::Unified && framework.working_set_fraction < 1.0)
        v.notes.push_back("the GPU may use " + std::to_string(int(framework.working_set_fraction * 100)) +
                          " % of unified memory by default");
    v.speed = estimate_speed(arch, v.setup, machine, framework);
    return v;
}

json MachineVerdict::to_json() const {
    json j = {{"id", machine->id},
              {"name", machine->name},
              {"framework", framework_spec(*framework)},
              {"usable_bytes", usable_bytes},
              {"needed_bytes", needed_bytes},
              {"margin_bytes", margin_bytes},
              {"verdict", to_string(fit)},
              {"precision", wingspan::to_string(setup.precision)},
              {"precision_reason", precision_reason},
              {"setup", setup.to_json()},   // as run on this machine with its framework's defaults
              {"peak_allocated_bytes", estimate.peak_allocated_bytes},
              {"total_bytes", estimate.total_bytes},
              {"host_bytes", estimate.host_bytes},
              {"tokens_per_s", speed.tokens_per_s},
              {"flops_per_token", speed.flops_per_token},
              {"notes", notes}};
    if (machine->price_per_hour) j["price_per_hour"] = *machine->price_per_hour;
    return j;
}

SolveFor parse_solve_for(const std::string& s) {
    if (s == "batch") return SolveFor::Batch;
    if (s == "seq") return SolveFor::Seq;
    if (s == "rank") return SolveFor::Rank;
    if (s == "size") return SolveFor::Size;
    throw InputError("unknown --solve '" + s + "' (expected batch, seq, rank or size)");
}

namespace {

// Largest v in [1, cap] with fits(v), for a predicate that holds up to some point and not
// after. Starting from a hint (the current setting), doubling or halving brackets the edge
// and bisection finds it: O(log) evaluations.
std::int64_t largest_fitting(std::int64_t cap, std::int64_t hint, const std::function<bool(std::int64_t)>& fits,
                             bool* unbounded) {
    *unbounded = false;
    hint = std::clamp<std::int64_t>(hint, 1, cap);
    std::int64_t good = 0, bad = 0;
    if (fits(hint)) {
        good = hint;
        bad = hint * 2;
        while (bad <= cap && fits(bad)) {
            good = bad;
            bad *= 2;
        }
        if (bad > cap) {
            if (good == cap || fits(cap)) {
                *unbounded = true;
                return cap;
            }
            bad = cap;
        }
    } else {
        bad = hint;
        good = hint / 2;
        while (good >= 1 && !fits(good)) {
            bad = good;
            good /= 2;
        }
        if (good < 1) return 0;
    }
    while (bad - good > 1) {
        const std::int64_t mid = good + (bad - good) / 2;
        (fits(mid) ? good : bad) = mid;
    }
    return good;
}

}  // namespace

Solution solve(SolveFor what, const Architecture& arch, const TrainingSetup& setup, const MachineProfile& machine,
               const FrameworkProfile& framework, const ProfileLibrary* library, const std::string& family,
               const SetupShaper& shape) {
    Solution sol;
    sol.what = what;
    auto shaped = [&](const TrainingSetup& s) { return shape ? shape(s) : s; };
    auto fits_with = [&](const Architecture& a, const TrainingSetup& s) {
        try {
            return evaluate(a, shaped(s), machine, framework).fit != Fit::No;
        } catch (const PlanTooLargeError&) {
            return false;   // beyond any machine: certainly not this one
        }
    };
    TrainingSetup s = setup;
    switch (what) {
        case SolveFor::Batch: {
            const std::int64_t cap = 1 << 16;
            auto fits = [&](std::int64_t v) {
                s.micro_batch = v;
                s.serve_batch = v;
                return fits_with(arch, s);
            };
            sol.value = largest_fitting(cap, setup.micro_batch, fits, &sol.unbounded);
            s.micro_batch = s.serve_batch = std::max<std::int64_t>(1, sol.value);
            break;
        }
        case SolveFor::Seq: {
            const std::int64_t cap = 1 << 20;
            // GRPO's (and a DPO with both lengths') sequence is prompt + completion: solve the
            // completion's length, the one that grows (objective_terms.hpp).
            const bool completion = sol.completion_length = sequence_from_lengths(setup);
            const std::int64_t start = completion ? objective_shape(setup).completion : setup.seq_len;
            auto fits = [&](std::int64_t v) {
                (completion ? s.objective.completion_len : s.seq_len) = v;
                return fits_with(arch, s);
            };
            sol.value = largest_fitting(cap, start, fits, &sol.unbounded);
            (completion ? s.objective.completion_len : s.seq_len) = std::max<std::int64_t>(1, sol.value);
            break;
        }
        case SolveFor::Rank: {
            if (setup.method != Method::Lora && setup.method != Method::Qlora)
                throw InputError("--solve rank needs --method lora or qlora");
            auto fits = [&](std::int64_t v) {
                s.lora_rank = v;
                return fits_with(arch, s);
            };
            sol.value = largest_fitting(arch.hidden, setup.lora_rank, fits, &sol.unbounded);
            s.lora_rank = std::max<std::int64_t>(1, sol.value);
            break;
        }
        case SolveFor::Size: {
            if (!library) throw InputError("--solve size needs the bundled model profiles");
            const auto members = library->family(family);
            if (members.empty()) throw InputError("no bundled models in family '" + family + "'");
            std::vector<Architecture> archs;
            for (const auto* m : members) archs.push_back(m->arch);
            // Members are sorted by size and memory grows with size: bisect over them.
            std::int64_t lo = -1, hi = static_cast<std::int64_t>(members.size());
            while (hi - lo > 1) {
                const std::int64_t mid = (lo + hi) / 2;
                (fits_with(members[mid]->arch, s) ? lo : hi) = mid;
            }
            if (lo < 0) {
                sol.value = 0;
                sol.at_value = evaluate(members.front()->arch, shaped(s), machine, framework);
                return sol;
            }
            sol.model_id = members[lo]->id;
            sol.value = members[lo]->arch.parameter_count();
            Architecture best = members[lo]->arch;
            if (lo + 1 < static_cast<std::int64_t>(members.size())) {
                // Between the largest member that fits and the next one, walk the interpolated
                // family to find the size where memory runs out.
                std::int64_t good = sol.value, bad = members[lo + 1]->arch.parameter_count();
                while (double(bad - good) > 0.01 * double(good)) {
                    const std::int64_t mid = good + (bad - good) / 2;
                    Architecture a = interpolate_family(archs, mid);
                    if (fits_with(a, s)) {
                        good = mid;
                        best = a;
                    } else {
                        bad = mid;
                    }
                }
                sol.value = best.parameter_count();
            } else {
                sol.unbounded = true;
            }
            sol.at_value = evaluate(best, shaped(s), machine, framework);
            return sol;
        }
    }
    sol.at_value = evaluate(arch, shaped(s), machine, framework);
    return sol;
}

}  // namespace wingspan
