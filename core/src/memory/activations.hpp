#pragma once
// What the forward pass saves for backward, layer by layer, and what is alive at each moment of
// the backward pass. Internal to core's memory model.
#include <cmath>
#include <cstdint>
#include <string>

#include "memory/first_layer.hpp"
#include "state.hpp"

namespace wingspan {

// Per-layer saved tensors and the figures the moments are built from (names as in the formulas:
// b batch, s sequence, h hidden, qd/kvd query/KV widths, inner the MLP's inner width, e bytes per
// value, G the gradient of a layer's output).
struct LayerActivations {
    // sizes and flags
    std::int64_t e = 0;
    // PEFT's QLoRA preparation under 16-bit autocast: the residual stream and the MLP's pointwise
    // tensors are fp32 (rows_layer_saved.cpp norms_and_attention); stream_e their bytes per value.
    bool fp32_stream = false;
    std::int64_t stream_e = 0;
    std::int64_t head_cast = 0;   // the fp32 head's 16-bit copy its matmul saves (same cause)
    std::int64_t b = 0;
    std::int64_t s = 0;
    std::int64_t h = 0;
    std::int64_t L = 0;
    std::int64_t V = 0;
    std::int64_t qd = 0;
    std::int64_t kvd = 0;
    std::int64_t heads = 0;
    std::int64_t inner = 0;
    std::int64_t bs = 0;
    std::int64_t Lsaved = 0;
    std::int64_t norm_input = 0;
    std::int64_t norm_square = 0;
    std::int64_t norm_weighted = 0;
    // What one norm's backward holds beside the saved tensors where it scales in fp32 as plain ops
    // (model.norm_scales_in_fp32, neither fused nor compiled), else 0: the cast gradient, the
    // normalized input's, x's through rstd and the mean's expanded back to [b, s, h] beside pow's
    // temporaries, four fp32 b·s·h tensors at once at the end of the chain.
    std::int64_t norm_backward_chain = 0;
    std::int64_t norm_weight_copy = 0;   // the fp32 weight a norm that scales in fp32 keeps (model.norm_scales_in_fp32)
    std::int64_t head_lora_saved = 0;    // the head's adapter: x·A^T, and the dropped input and mask
    std::int64_t norm_out = 0;
    std::int64_t norm_saved = 0;
    // Norms of each sublayer's output before its residual add (Gemma 2's post_attention_layernorm and
    // post_feedforward_layernorm): how many per layer, and what one keeps (not its output).
    std::int64_t output_norms = 0;
    std::int64_t output_norm_saved = 0;
    std::int64_t attn_saved = 0;
    std::int64_t softcap_scores = 0;   // the soft-capped scores' tanh output one layer keeps (Gemma 2)
    std::int64_t fused_qkv_kept = 0;   // the q and k thirds of a fused q/k/v output a saved v view keeps
    std::int64_t qkv_pad_source = 0;   // LitGPT's zero_pad source where only some of q, k, v are adapted
    bool frozen_keeps_none = false;    // a frozen linear keeps no input (profile model.frozen_linear_keeps_no_input)
    std::int64_t previous_quant_inputs = 0;   // the last micro-batch's 4-bit inputs, alive at forward_end
    std::int64_t scores = 0;
    std::int64_t kv_saved_dim = 0;
    std::int64_t score_bytes = 0;
    std::int64_t score_grad_bytes = 0;
    std::int64_t eager_ws = 0;
    std::int64_t flash_ws = 0;
    std::int64_t gated_tensors = 0;
    std::int64_t mlp_saved = 0;
    std::int64_t lora_saved = 0;
    std::int64_t lora_mlp = 0;
    std::int64_t lora_down = 0;
    std::int64_t lora_o = 0;
    std::int64_t quant_inputs_saved = 0;
    std::int64_t unkept_input_norm = 0;
    std::int64_t unkept_attn_out = 0;
    std::int64_t unkept_post_norm = 0;
    std::int64_t unkept_product = 0;
    std::int64_t unkept_inputs = 0;
    std::int64_t layer_saved = 0;
    std::int64_t layer_input = 0;
    std::int64_t first_layer_saved = 0;
    std::int64_t rotary_rows = 0;
    std::int64_t rotary_tables = 0;   // cos and sin (part of inputs)
    std::int64_t inputs = 0;
    std::int64_t final_norm = 0;
    // What the final norm's backward holds beyond the end of forward where it runs as plain fp32 ops
    // (a norm that scales in fp32, neither fused nor compiled; rows_layer_saved.cpp), else 0.
    std::int64_t final_norm_backward = 0;
    std::int64_t outside_layers = 0;
    // The last layer's down projection in forward, beyond the end of forward (rows_layer_saved.cpp).
    std::int64_t forward_down_extra = 0;
    std::int64_t ckpt_mask = 0;
    std::int64_t ckpt_mask_other = 0;   // the other layer kind's mask (alternating sliding and global), freed first
    std::int64_t forward_masks = 0;     // the additive masks alive through an eager forward (not kept without checkpoints)
    std::int64_t ckpt_state = 0;
    std::int64_t G = 0;
    std::int64_t inner_grad = 0;
    std::int64_t dequant_down = 0;
    // The down projection's dequantized copy where its backward is the MLP's larger moment (else 0).
    std::int64_t dequant_at_mlp_moment = 0;
    std::int64_t dora_compose = 0;
    std::int64_t mlp_extra = 0;
    // The MLP moment's inner-gradient part alone: below mlp_extra where the MLP output's own norm runs a
    // larger fp32 backward chain first, before the down projection's gradients exist.
    std::int64_t mlp_inner_extra = 0;
    std::int64_t attn_extra = 0;
    // The first layer's q projection backward relative to the bottom moments' base (qkv_moment).
    std::int64_t qkv_extra = 0;
    bool ckpt = false;
    bool recompute_pointwise = false;
    bool fused_arch = false;
    bool kernel_norm = false;
    bool kernel_swiglu = false;
    bool kernel_gated_act = false;
    bool norm_recomputes = false;
    bool norms_train = false;
    bool math_sdpa = false;
    bool sdpa_grouped = false;
    bool flash_kernel = false;
    bool grouped_kernel = false;
    bool gated = false;
    bool keeps_quant_inputs = false;
    bool graph_attention = false;
    bool first_norm_outside = false;
    bool fused_logprob_head = false;
    bool head_frozen = false;
    bool attn_moment = false;
    bool qkv_moment = false;   // the first layer's q/k/v backward is a moment of its own
    std::string norm_desc;
    std::string attn_desc;
    std::string unkept_desc;
    double act_factor = 1.0;
    LinearInputsKept kept;

    // What a layer saves after its attention: its MLP block, the MLP's norm and the output norms,
    // not yet made at the last layer's attention in forward, freed by a layer's attention backward.
    std::int64_t after_attention_saved() const {
        return mlp_saved - unkept_product + lora_mlp + norm_saved + output_norms * output_norm_saved;
    }
    // Bytes × the framework's activation_factor (relative to the reference implementation).
    std::int64_t scaled(std::int64_t bytes) const {
        return static_cast<std::int64_t>(std::llround(double(bytes) * act_factor));
    }
};
void norms_and_attention(const PlanContext& c, LayerActivations& a);
void layer_saved_tensors(const PlanContext& c, LayerActivations& a);
void outside_and_backward(const PlanContext& c, const StateTotals& t, LayerActivations& a);

// Activations at each moment of the step (already × activation_factor).
struct ActivationMoments {
    std::int64_t forward = 0, forward_attention = 0, forward_down = 0, loss_backward = 0, final_norm_backward = 0;
    std::int64_t top = 0, bottom = 0;
    std::int64_t top_mlp = 0, top_down = 0, top_attn = 0, bottom_mlp = 0, bottom_attn = 0;
    std::string formula;
    // Training: the forward's saved tensors and each backward moment before activation_factor.
    struct Raw {
        std::int64_t forward = 0, top_mlp = 0, top_down = 0, top_attn = 0, bottom_mlp = 0, bottom_attn = 0;
        std::int64_t bottom_qkv = 0;   // 0 where the first layer's q/k/v backward is no moment of its own
        // The second layer's MLP and attention backward (0 where they are no moments of their own):
        // checkpointed layers alternating sliding-window and global attention hold there one more
        // kept input and the other kind's mask than at the first layer, and one layer's gradients less.
        std::int64_t second_mlp = 0, second_attn = 0;
        // The saved rows alive after the model's forward has returned: forward less what only the
        // forward holds (the previous micro-batch's 4-bit linear inputs).
        std::int64_t saved = 0;
        std::int64_t final_norm_backward = 0;   // 0 where the final norm's backward is no moment of its own
        std::int64_t forward_down = 0;          // 0 where the last down projection's forward is below forward_end
    } raw;
};
ActivationMoments activation_moments(const PlanContext& c, const LayerActivations& a, MemoryEstimate& est);
// The activation rows: the largest moment's figure, the attention workspaces, and the saved
// tensors of the layers as the end of forward holds them (llm.c's activation table).
void write_activation_rows(const PlanContext& c, const LayerActivations& a, const ActivationMoments& m, RowWriter& w);
// The saved tensors at the end of forward, by kind (checkpoints, or each layer's norms, attention,
// MLP, LoRA intermediates, 4-bit linears' inputs), alive from forward_end to loss_backward (and
// the last layer's attention in forward, when that is a phase).
void write_saved_rows(const PlanContext& c, const LayerActivations& a, bool forward_attention, const std::string& last_phase,
                      RowWriter& w);
// The last layer's down projection in forward: what is not made yet and what that moment holds
// (a row of its own, in the phase forward_down).
void write_forward_down_row(const LayerActivations& a, RowWriter& w);
// One row per backward moment: what that moment holds beyond the saved tensors (freed layers as
// a negative part, the recomputed layer, the gradients of its inner activations), so the saved
// rows and it add up to the moment's activations.
void write_backward_row(const std::string& phase, std::int64_t moment_raw, const ActivationMoments& m, RowWriter& w);
// At an MLP backward moment of QLoRA: the quantized down projection dequantized for its input's
// gradient, a row of its own (the moment's other row holds the rest).
void write_dequantized_row(const std::string& phase, const LayerActivations& a, const PlanContext& c, RowWriter& w);

}  // namespace wingspan
