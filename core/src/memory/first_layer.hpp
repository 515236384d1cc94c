#pragma once
// What the first adapted layer of a LoRA/QLoRA run does not keep for backward. Internal to
// core's memory model.
#include <cstdint>
#include <vector>

#include "wingspan/architecture.hpp"
#include "wingspan/setup.hpp"

namespace wingspan {

// Bytes one decoder layer saves, by part (in the memory model's terms).
struct FirstLayerParts {
    std::int64_t norm;        // one norm, all it keeps
    std::int64_t norm_out;    // of which its output
    std::int64_t attention;   // the attention block
    std::int64_t q;           // one b·s·q_dim tensor (the scaled q; the attention output)
    std::int64_t kv;          // k or v as the attention keeps it
    std::int64_t inner;       // one b·s·intermediate tensor of the MLP
    std::int64_t attn_output_norm = 0;   // the attention output's own norm (Gemma 2), all it keeps
};

// The inputs of a layer's frozen linears that it keeps for backward: all of them where a frozen
// linear keeps its input (libtorch 1.13's mm); under a 4-bit linear that keeps none (wingspan-
// train's NF4 op, profile qlora.quantized_linear_keeps_no_input) only those an adapter keeps.
struct LinearInputsKept {
    bool input_norm_out = true;   // the input norm's output (q, k, v's input)
    bool attn_out = true;         // the attention output (o's input)
    bool post_norm_out = true;    // the post-attention norm's output (gate and up's input)
    bool mlp_product = true;      // the MLP's product (down's input)
};

// Without checkpointing, with a frozen embedding and adapters only, nothing before the first
// adapted layer needs a gradient. `graph_attention`: attention runs as autograd ops (eager, or
// SDPA as its math graph), not one fused kernel; `plain_mlp`: the MLP's four (gated) or two
// tensors as the memory model counts them (no MoE, no compiled or fused MLP, no bitsandbytes
// keeping 4-bit inputs); `fused_activation`: of those, act(gate)·up is one op keeping gate and up
// (three tensors with the product). `kept`: what the layer keeps at all (what it does not keep is
// already missing from every layer and is not counted again here).
std::int64_t first_layer_unsaved(const TrainingSetup& setup, const std::vector<TensorGroup>& groups,
                                 const FirstLayerParts& p, bool gated, bool graph_attention, bool plain_mlp,
                                 bool fused_activation = false, const LinearInputsKept& kept = {});

}  // namespace wingspan
