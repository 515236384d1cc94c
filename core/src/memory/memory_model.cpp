#include "wingspan/memory_model.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "memory/loss_memory.hpp"
#include "memory/phases.hpp"
#include "wingspan/model_attention.hpp"
#include "wingspan/nf4.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/units.hpp"

namespace wingspan {

using nlohmann::json;

namespace {

std::string n(std::int64_t v) { return format_count(v); }

}  // namespace

ParameterCounts count_parameters(const Architecture& arch, const TrainingSetup& setup) {
    ParameterCounts p;
    const bool lora = setup.method == Method::Lora || setup.method == Method::Qlora;
    const Quantization quant = setup.effective_quantization();
    for (const auto& g : arch.tensor_groups()) {
        const std::int64_t total = g.total_elements();
        p.total += total;
        const bool trainable =
            setup.method == Method::Full ||
            (lora && setup.train_embeddings &&
             (g.kind == TensorKind::Embedding || g.kind == TensorKind::Head));
        if (trainable)
            p.trainable += total;
        else {
            p.frozen += total;
            if (quant != Quantization::None && g.kind == TensorKind::Linear) p.quantized += total;
        }
        if (lora && lora_adapts(arch, setup, g))
            p.adapter += adapted_count(arch, setup, g) * (setup.lora_rank * (g.rows + g.cols) + (setup.dora ? g.rows : 0));
    }
    p.trainable += p.adapter;
    return p;
}

std::int64_t adapted_layers(const Architecture& arch, const TrainingSetup& setup) {
    return setup.lora_layers > 0 ? std::min(arch.layers, setup.lora_layers) : arch.layers;
}

std::int64_t adapted_count(const Architecture& arch, const TrainingSetup& setup, const TensorGroup& g) {
    if (g.name.rfind("layers.", 0) != 0 || arch.layers <= 0) return g.count;
    return g.count / arch.layers * adapted_layers(arch, setup);
}

bool lora_adapts(const Architecture& arch, const TrainingSetup& setup, const TensorGroup& g) {
    if (g.kind == TensorKind::Linear) return setup.lora_targets.count(g.role) > 0;
    if (!setup.lora_targets.count(LinearRole::Head)) return false;
    return g.kind == TensorKind::Head || (g.kind == TensorKind::Embedding && arch.tied_embeddings);
}

std::string slack_base_name(const std::string& slack_of) {
    return slack_of == "transient" ? "the activations and logits" : "the peak";
}
std::string slack_base_name(const FrameworkProfile& framework) { return slack_base_name(framework.allocator_slack_of); }

namespace {
// The architecture as the framework builds it: some keep an untied LM head (LitGPT copies the
// tied embedding into lm_head when it converts a checkpoint).
Architecture as_built(const Architecture& arch, const FrameworkProfile& fw) {
    Architecture a = arch;
    if (fw.traits.model.unties_embeddings) a.tied_embeddings = false;
    if (fw.traits.model.splits_fused_projections) a.split_fused_projections = true;
    return a;
}

// The framework as the setup's techniques run it: --compile turns on the profile's compile
// behaviour (a profile without a compile section has no data on what torch.compile changes, and
// keeps its prediction); --activation-offload keeps the checkpointed layer inputs in host RAM as
// a framework that always does it (Unsloth) — torchtune's OffloadActivations
// (torchtune/training/_activation_offloading.py) moves each saved tensor to pinned host memory in
// forward and brings it back one layer ahead in backward.
// Only a setup that asks for one of them changes the framework: the others use it as it is, with
// no copy (a profile carries its behaviour JSON and tables; copying it for each of 34 machines
// on every slider step was a fifth of the planner's estimate).
// The setup with the attention the model runs (wingspan/model_attention.hpp).
TrainingSetup with_model_attention(TrainingSetup setup, const Architecture& arch) {
    setup.attention = model_attention(arch, setup.attention);
    return setup;
}

bool changes_framework(const FrameworkProfile& fw, const TrainingSetup& setup) {
    return (setup.compile && fw.traits.compile.present) || setup.activation_offload;
}

FrameworkProfile with_techniques(const FrameworkProfile& fw, const TrainingSetup& setup) {
    FrameworkProfile out = fw;
    if (setup.compile && out.traits.compile.present) {
        out.traits.compile.enabled = true;
    }
    if (setup.activation_offload) out.checkpoint_offload = true;
    return out;
}

// The caching allocator's reserve in force: the profile's pair, or in a QLoRA plan the profile's
// QLoRA pair where it states one (read, not copied into a profile: this runs for every machine).
struct AllocatorReserve {
    double slack;
    const std::string& of;
    const char* key;
};
AllocatorReserve allocator_reserve(const FrameworkProfile& fw, const TrainingSetup& setup) {
    if (setup.method == Method::Qlora && fw.traits.qlora.allocator_slack >= 0)
        return {fw.traits.qlora.allocator_slack, fw.traits.qlora.allocator_slack_of, "qlora.allocator_slack"};
    return {fw.allocator_slack, fw.allocator_slack_of, "allocator_slack"};
}
}  // namespace

namespace {

// The logits' and the KV cache's rows (loss_memory.cpp); returns the logits at the end of forward
// and in the loss's backward, and the KV cache.
struct LogitsAndCache {
    LossMemory loss;
    std::int64_t kv_cache = 0;
};
LogitsAndCache write_logits_and_cache_rows(const PlanContext& c, const LayerActivations& a, RowWriter& w) {
    const std::int64_t b = a.b, s = a.s, e = a.e, L = a.L, V = a.V, kvd = a.kvd;
    const LossMemory loss =
        loss_memory(c.fw, c.setup,
                    LossShape{b, b * c.objective.logit_positions, V, a.h, e, c.quant != Quantization::None, c.arch.final_logit_softcap > 0 && !c.fw.traits.loss.skips_final_softcap});
    LogitsAndCache out{loss, 0};
    w.shown(figure(row("logits and loss buffers", Component::LogitsLoss, "global", "b·s·v (per chunk where chunked)",
                       loss.tokens * V, 0, "the head's output and the loss's saved tensors (loss_memory.cpp)"),
                   loss_peak(loss)),
            loss.formula, {{"tokens", double(loss.tokens)}, {"vocab", double(V)}});
    if (!c.trains) {
        // A cache allocated in blocks (mlx-lm: 256 positions) holds the context rounded up to a block.
        const std::int64_t step = c.fw.kv_cache_step, slots = step > 0 ? (s + step - 1) / step * step : s;
        const std::string held_text =
            slots != s ? n(slots) + " positions (" + n(s) + " tokens in blocks of " + n(step) + ")" : n(s) + " tokens";
        out.kv_cache = w.shown(figure(row("KV cache", Component::KvCache, "all layers", "2·L·kv·s·b", 2 * L * kvd * slots * b,
                                          double(e), "keys and values of every token, kept for decoding"),
                                      2 * L * kvd * slots * b * e),
                               "2 (k, v) × " + std::to_string(L) + " layers × " + n(kvd) + " kv_dim × " + held_text + " × " +
                                   std::to_string(b) + " sequences × " + std::to_string(e) + " B",
                               {{"layers", double(L)}, {"kv_dim", double(kvd)}, {"context", double(s)}, {"slots", double(slots)},
                                {"batch", double(b)}});
    }
    return out;
}

// Arrays the GPU's queued command buffers keep alive past their last use (profile queued_bytes):
// live bytes in every phase, beside whatever else the phase holds.
void write_queued_row(const FrameworkProfile& fw, RowWriter& w) {
    if (fw.queued_bytes <= 0) return;
    w.shown(held(row("arrays held by queued GPU work", Component::Activations, "global", "", 0, 0,
                     "arrays the GPU's committed command buffers keep until they complete, after their last use "
                     "(profile queued_bytes and its source)",
                     {"framework"}),
                 fw.queued_bytes),
            "what the GPU's queued command buffers keep alive (" + fw.name + ", profile queued_bytes)",
            {{"queued_bytes", double(fw.queued_bytes)}});
}

// The lifetime walk's result into the estimate: phases, the peak, the framework's overhead.
void finish_estimate(const FrameworkProfile& fw, const AllocatorReserve& reserve, const TensorInventory& inv,
                     MemoryEstimate& est) {
    for (std::size_t p = 0; p < inv.phases.size(); ++p) est.phases.push_back({inv.phases[p], inv.phase_bytes(p)});
    est.terms = terms_of(inv);
    const Phase* peak = &est.phases.front();
    for (const auto& p : est.phases)
        if (p.total() > peak->total()) peak = &p;
    est.peak_phase = peak->name;
    // What max_memory_allocated reads: each phase without what is allocated outside PyTorch's
    // allocator (a paged optimizer's state), at its own largest phase.
    for (std::size_t p = 0; p < est.phases.size(); ++p)
        est.peak_allocated_bytes = std::max(est.peak_allocated_bytes, est.phases[p].total() - inv.outside_allocator_bytes(p));
    const std::int64_t slack_base = slack_base_bytes(reserve.of, peak->bytes);
    const std::int64_t slack = static_cast<std::int64_t>(std::llround(reserve.slack * double(slack_base)));
    est.framework_overhead_bytes = fw.context_bytes + fw.workspace_bytes + slack;
    est.terms.push_back({Component::FrameworkOverhead, est.framework_overhead_bytes,
                         fw.name + ": context " + n(fw.context_bytes) + " B + workspace " + n(fw.workspace_bytes) +
                             " B + allocator slack " + std::to_string(reserve.slack * 100).substr(0, 4) + " % of " +
                             slack_base_name(reserve.of) +
                             (reserve.of == "transient" ? " at the peak (" + n(slack_base) + " B)" : std::string()) +
                             " (profile " + reserve.key + ")",
                         {{"context_bytes", double(fw.context_bytes)}, {"workspace_bytes", double(fw.workspace_bytes)},
                          {"allocator_slack", reserve.slack}, {"slack_base_bytes", double(slack_base)}},
                         false});
    if (est.framework_overhead_bytes <= 0) est.terms.pop_back();
    est.components = peak->bytes;
    est.components[Component::FrameworkOverhead] = est.framework_overhead_bytes;
    est.total_bytes = peak->total() + est.framework_overhead_bytes;
}

}  // namespace

MemoryEstimate estimate_memory(const Architecture& arch_in, const TrainingSetup& asked,
                               const FrameworkProfile& framework_in) {
    std::optional<FrameworkProfile> changed;
    if (changes_framework(framework_in, asked)) changed = with_techniques(framework_in, asked);
    const FrameworkProfile& fw = changed ? *changed : framework_in;
    // The rows and sequence one forward of the policy runs under the objective (DPO: chosen and
    // rejected side by side; GRPO: B·G completions of prompt + completion): objective_terms.cpp.
    const Architecture arch = as_built(arch_in, fw);
    const TrainingSetup setup = with_model_attention(forward_setup(asked), arch);
    require_plan_size_bounded(arch, setup);   // before any product can overflow
    const PlanContext c(arch, setup, asked, fw);
    MemoryEstimate est;
    est.params = count_parameters(arch, setup);
    est.inventory.activation_factor = fw.activation_factor;
    RowWriter w(est.inventory);

    const StateTotals totals = walk_tensor_groups(c);
    est.params.quantized = totals.quant_elems;
    const StateOnDevice d = write_state_rows(c, totals, w, est);

    LayerActivations a;
    norms_and_attention(c, a);
    layer_saved_tensors(c, a);
    outside_and_backward(c, totals, a);
    const ActivationMoments moments = activation_moments(c, a, est);
    write_activation_rows(c, a, moments, w);
    const LogitsAndCache logits = write_logits_and_cache_rows(c, a, w);
    write_queued_row(fw, w);

    // The reference model's weights (DPO, KTO, GRPO with a KL term), held the whole step.
    ObjectiveInputs objective_in{arch, asked, c.objective, d.frozen + d.packed + d.constants + d.trainable, a.e, a.inner,
                                 fw.traits.objective.reference_before_policy};
    // A reference scored through the framework's own fused head (TRL 1.16) holds its tile, not full logits.
    objective_in.reference_logprobs = logits.loss.no_grad;
    std::vector<MemoryTerm> reference_terms;
    const std::int64_t reference = reference_weights(objective_in, reference_terms);
    w.adopt_terms(reference_terms, "the objective's reference model (objective_terms.cpp)");
    w.add(held(row("reference model", Component::ReferenceModel, "all layers", "", 0, 0,
                   "the frozen reference the objective scores against (objective_terms.cpp)", {"objective"}),
               reference));

    const PhaseInputs phases{c, totals, d, a, moments, logits.loss, logits.kv_cache, objective_in};
    if (!c.trains)
        write_serving_phase(phases, w);
    else {
        write_training_phases(phases, w);
        est.reserved_device_fraction = asked.objective.kind == Objective::Grpo ? asked.objective.vllm_share : 0.0;
    }
    finish_estimate(fw, allocator_reserve(fw, asked), est.inventory, est);
    return est;
}

}  // namespace wingspan
