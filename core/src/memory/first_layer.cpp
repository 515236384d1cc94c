#include "memory/first_layer.hpp"

namespace wingspan {

// What the first adapted layer does not keep when nothing before it needs a gradient (no
// checkpointing, frozen embedding, adapters only): autograd saves a tensor only for a gradient it
// will compute, so that layer keeps only what lies after its first adapted linear. Measured on
// wingspan-train (built-in model, fp32 LoRA, seq 128): one target at a time, the trainer kept
// 1,024 (q) to 19,524 (down) B per token less than every layer's full set.
std::int64_t first_layer_unsaved(const TrainingSetup& setup, const std::vector<TensorGroup>& groups,
                                 const FirstLayerParts& p, bool gated, bool graph_attention, bool plain_mlp,
                                 bool fused_activation, const LinearInputsKept& kept) {
    auto adapted = [&](LinearRole r) { return setup.lora_targets.count(r) > 0; };
    // Phi-3's fused qkv_proj and gate_up_proj are one linear each (roles Q and Gate, no K or Up
    // linear beside them): one adapter makes q, k and v (or gate and up) need a gradient.
    auto has_linear = [&](LinearRole r) {
        for (const auto& g : groups)
            if (g.kind == TensorKind::Linear && g.role == r) return true;
        return false;
    };
    const bool fused_qkv = !has_linear(LinearRole::K), fused_gate_up = gated && !has_linear(LinearRole::Up);
    const bool q = adapted(LinearRole::Q), k = fused_qkv ? q : adapted(LinearRole::K), v = fused_qkv ? q : adapted(LinearRole::V);
    const bool gate = adapted(LinearRole::Gate), up = fused_gate_up ? gate : adapted(LinearRole::Up);
    // The input norm is outside the graph: only its output stays, for the q/k/v adapters.
    std::int64_t unsaved = p.norm - p.norm_out;
    if (q || k || v) {
        // Eager attention (or SDPA run as its graph): the scaled q is kept for k's gradient, k
        // for q's, v for the probabilities' (which need one when q or k has one).
        if (graph_attention) unsaved += (k ? 0 : p.q) + (q ? 0 : p.kv) + (q || k ? 0 : p.kv);
        return unsaved;
    }
    unsaved += kept.input_norm_out ? p.norm_out : 0;
    if (adapted(LinearRole::O)) return unsaved + p.attention - p.q;   // only o's input, the attention output
    unsaved += p.attention - (kept.attn_out ? 0 : p.q);
    // Gemma 2's norm of the attention output lies before the MLP's adapters too (measured: LoRA on
    // gate and up over-predicted its input and rstd, fp32 and bf16-mixed, before this line).
    unsaved += p.attn_output_norm;
    // MLP adapters first: the post-attention norm keeps only its output for gate/up adapters.
    unsaved += gate || up || !kept.post_norm_out ? p.norm - p.norm_out : p.norm;
    if (!plain_mlp) return unsaved;
    // A fused act(gate)·up keeps gate and up whenever either needs a gradient, none otherwise.
    if (gated && fused_activation) return unsaved + (gate || up ? 0 : 2) * p.inner;
    // silu(gate)·up: gate's output is kept for silu's gradient, silu's for up's, up's for silu's;
    // the product (down's input) stays. A plain MLP keeps up's output for the activation's gradient.
    if (gated) return unsaved + ((gate ? 0 : 2) + (up ? 0 : 1)) * p.inner;
    return unsaved + (up ? 0 : p.inner);
}

}  // namespace wingspan
