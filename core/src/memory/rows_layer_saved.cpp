// What one decoder layer keeps for backward under a framework: its norms, attention, MLP, LoRA
// and 4-bit linears, from each framework's own kernels and behaviour (profiles/frameworks).
#include <cmath>
#include <algorithm>

#include "activations.hpp"

namespace wingspan {

namespace {
std::string n(std::int64_t v) { return format_count(v); }
}  // namespace

// Sizes, and what each norm and the attention keep for backward under this framework.
void norms_and_attention(const PlanContext& c, LayerActivations& a) {
    const auto& setup = c.setup;
    const auto& arch = c.arch;
    const auto& fw = c.fw;
    const bool trains = c.trains;
    const std::int64_t Lg = c.Lg;
    const std::int64_t e = compute_dtype_bytes(setup.precision);
    const std::int64_t b = trains ? setup.micro_batch : setup.serve_batch;
    const std::int64_t s = setup.seq_len;
    const std::int64_t h = arch.hidden, L = arch.layers, V = arch.vocab;
    const std::int64_t qd = arch.q_dim(), kvd = arch.kv_dim(), heads = arch.heads;
    const std::int64_t inner = arch.is_moe() ? arch.expert_intermediate * arch.experts_per_token +
                                                   arch.shared_expert_intermediate
                                             : arch.intermediate;
    const std::int64_t bs = b * s;
    const bool ckpt = setup.grad_checkpointing;
    const double act_factor = fw.activation_factor;
    // Layers that keep tensors for backward: from the first adapted one (all when embeddings train).
    const std::int64_t Lsaved = setup.train_embeddings ? L : Lg;

    // Tensors one decoder layer saves for backward. A norm keeps its input upcast to fp32 (in an
    // fp32 run the input itself, which is the residual stream), the fp32 reciprocal rms per
    // token and its output; a trainable norm weight also keeps the normalized input it
    // multiplies; some runtimes keep x² for the mean's backward too.
    // Compiled (the framework runs torch.compile, profile section "compile"): the partitioner
    // recomputes pointwise ops in backward, so a norm keeps only its 16-bit input and rstd, a gated
    // MLP its gate and up. The framework's own fused kernels (section "kernels") keep as little.
    const bool recompute_pointwise = fw.traits.compile.enabled && fw.traits.compile.recomputes_pointwise;
    // A framework's fused kernels may cover only some architectures (kernels.unfused_model_types:
    // wingspan-train runs Gemma's (1 + weight) norm and GELU gate as plain ops).
    const bool fused_arch = fw.traits.kernels_cover(arch.model_type);
    const bool kernel_norm = fused_arch && fw.traits.kernels.norm_saves_input_only;
    const bool kernel_swiglu = fused_arch && fw.traits.kernels.gated_mlp_saves_gate_up;
    // The gate activation times up as one op that keeps gate and up (the down projection still
    // keeps the product, its input): three b·s·i tensors instead of four.
    const bool kernel_gated_act = fused_arch && fw.traits.kernels.gated_activation_saves_gate_up;
    // The norm's weight gradient recomputed from the kept input and rstd: no normalized copy.
    const bool norm_recomputes = kernel_norm && fw.traits.kernels.norm_recomputes_normalized;
    const bool norms_train = setup.method == Method::Full;
    const std::int64_t norm_input = bs * h * (recompute_pointwise || kernel_norm ? e : std::max<std::int64_t>(e, 4));
    const std::int64_t norm_square = fw.norm_saves_square && !recompute_pointwise && !kernel_norm ? bs * h * 4 : 0;
    const std::int64_t norm_weighted = norms_train && !recompute_pointwise && !norm_recomputes ? bs * h * e : 0;
    const std::int64_t norm_out = recompute_pointwise ? 0 : bs * h * e;
    const std::int64_t norm_saved = norm_input + norm_square + bs * 4 + norm_weighted + norm_out;
    std::string norm_desc = n(norm_saved) + (recompute_pointwise ? " B: 16-bit input, rstd (compiled)"
                                             : kernel_norm       ? " B: 16-bit input, rstd (fused kernel), output"
                                                                 : " B: fp32 input, rstd, output");
    if (norm_weighted) norm_desc += ", normalized input for the weight's gradient";
    if (norm_square) norm_desc += ", x² kept by the mean";
    std::int64_t attn_saved = 0, scores = 0;
    const std::int64_t kv_saved_dim = fw.grouped_eager_attention ? kvd : qd;
    // Bytes per attention score: kept (fp32 softmax beside its 16-bit copy, or one copy in the
    // compute dtype) and of each of the two score gradients alive in the softmax's backward.
    const std::int64_t score_bytes = fw.softmax_fp32 ? 4 + (e < 4 ? e : 0) : e;
    const std::int64_t score_grad_bytes = fw.softmax_fp32 ? 4 : e;
    std::string attn_desc;
    // A runtime without a fused SDPA kernel (libtorch 1.13 on CPU) runs it as the eager graph.
    const bool math_sdpa = setup.attention == Attention::Sdpa && fw.traits.attention.sdpa_runs_math;
    // A framework that hands SDPA the grouped KV heads (enable_gqa) instead of repeating them first. Only
    // for unpadded SFT batches: TRL pads preference and GRPO batches, and with an attention mask
    // transformers repeats K/V (integrations/sdpa_attention.py use_gqa_in_sdpa).
    const bool sdpa_grouped = setup.attention == Attention::Sdpa && !math_sdpa && kvd < qd &&
                              setup.objective.kind == Objective::Sft && fw.traits.attention.sdpa_grouped_kv;
    switch (setup.attention) {
        case Attention::Eager:
            scores = b * heads * s * s;
            attn_saved = 2 * bs * qd * e + 2 * bs * kv_saved_dim * e + scores * score_bytes;
            attn_desc = fw.grouped_eager_attention
                            ? "eager: q, out (b·s·q_dim), k, v shared by each query group (b·s·kv_dim) + softmax b·heads·s²"
                            : "eager: q, repeated k and v, out (b·s·q_dim each) + softmax b·heads·s²";
            break;
        case Attention::Sdpa:
            if (math_sdpa) {   // the runtime's SDPA is the eager graph: repeated K/V and the softmax kept
                scores = b * heads * s * s;
                attn_saved = 4 * bs * qd * e + scores * score_bytes;
                attn_desc = "SDPA on its math path: q, repeated k and v, out (b·s·q_dim each) + softmax b·heads·s²";
                break;
            }
            if (sdpa_grouped) {   // K and V passed with their own heads (enable_gqa): saved at kv_dim
                attn_saved = 2 * bs * qd * e + 2 * bs * kvd * e + b * heads * s * 4;
                attn_desc = "SDPA with grouped KV heads: q, out (b·s·q_dim), k, v (b·s·kv_dim) + logsumexp";
                break;
            }
            attn_saved = 4 * bs * qd * e + b * heads * s * 4;
            attn_desc = "SDPA: q, repeated k and v, out (b·s·q_dim each) + logsumexp";
            break;
        case Attention::Flash:
            attn_saved = 2 * bs * qd * e + 2 * bs * kvd * e + b * heads * s * 4;
            attn_desc = "flash: q, out (b·s·q_dim), k, v (b·s·kv_dim) + logsumexp";
            break;
    }
    // The attention kernel's own workspace (profile section "attention"), beyond what it saves.
    const bool flash_kernel = (setup.attention == Attention::Sdpa && !math_sdpa) || setup.attention == Attention::Flash;
    // (SDPA as the reference calls it gets K and V already repeated; flash, and SDPA with enable_gqa,
    // get the grouped heads and expand dk, dv in their backward.)
    const bool grouped_kernel = (setup.attention == Attention::Flash && kvd < qd) || sdpa_grouped;
    const std::int64_t eager_ws = trains && fw.traits.attention.eager_scores_workspace && scores > 0 ? scores * e : 0;
    const std::int64_t flash_ws = trains && fw.traits.attention.flash_backward_workspace && flash_kernel
                                      ? bs * qd * 4 + b * heads * s * 4 + (grouped_kernel ? 2 * bs * qd * e : 0)
                                      : 0;
    a.e = e;
    a.b = b;
    a.s = s;
    a.h = h;
    a.L = L;
    a.V = V;
    a.qd = qd;
    a.kvd = kvd;
    a.heads = heads;
    a.inner = inner;
    a.bs = bs;
    a.Lsaved = Lsaved;
    a.norm_input = norm_input;
    a.norm_square = norm_square;
    a.norm_weighted = norm_weighted;
    a.norm_out = norm_out;
    a.norm_saved = norm_saved;
    a.attn_saved = attn_saved;
    a.scores = scores;
    a.kv_saved_dim = kv_saved_dim;
    a.score_bytes = score_bytes;
    a.score_grad_bytes = score_grad_bytes;
    a.eager_ws = eager_ws;
    a.flash_ws = flash_ws;
    a.ckpt = ckpt;
    a.recompute_pointwise = recompute_pointwise;
    a.fused_arch = fused_arch;
    a.kernel_norm = kernel_norm;
    a.kernel_swiglu = kernel_swiglu;
    a.kernel_gated_act = kernel_gated_act;
    a.norm_recomputes = norm_recomputes;
    a.norms_train = norms_train;
    a.math_sdpa = math_sdpa;
    a.sdpa_grouped = sdpa_grouped;
    a.flash_kernel = flash_kernel;
    a.grouped_kernel = grouped_kernel;
    a.norm_desc = norm_desc;
    a.attn_desc = attn_desc;
    a.act_factor = act_factor;
}

// What one decoder layer saves (MLP, LoRA, 4-bit linears' inputs) and what the first one leaves out.
void layer_saved_tensors(const PlanContext& c, LayerActivations& a) {
    const auto& setup = c.setup;
    const auto& arch = c.arch;
    const auto& fw = c.fw;
    const auto& groups = c.groups;
    const bool lora = c.lora;
    const Quantization quant = c.quant;
    const auto e = a.e;
    const auto h = a.h;
    const auto L = a.L;
    const auto qd = a.qd;
    const auto inner = a.inner;
    const auto bs = a.bs;
    const auto norm_out = a.norm_out;
    const auto norm_saved = a.norm_saved;
    const auto attn_saved = a.attn_saved;
    const auto kv_saved_dim = a.kv_saved_dim;
    const auto ckpt = a.ckpt;
    const auto recompute_pointwise = a.recompute_pointwise;
    const auto kernel_swiglu = a.kernel_swiglu;
    const auto kernel_gated_act = a.kernel_gated_act;
    const auto math_sdpa = a.math_sdpa;
    const bool gated = arch.mlp == MlpKind::Gated;
    const std::int64_t gated_tensors = recompute_pointwise || kernel_swiglu ? 2 : kernel_gated_act ? 3 : 4;
    const std::int64_t mlp_saved = (gated ? gated_tensors : 2) * bs * inner * e + (arch.is_moe() ? bs * arch.experts * 4 : 0);
    // LoRA keeps each adapted linear's r-wide intermediate (and, with dropout, the dropped input
    // and its mask); by role, because backward frees them at different times.
    std::int64_t lora_saved = 0, lora_mlp = 0, lora_down = 0, lora_o = 0;
    if (lora) {
        for (const auto& g : groups) {
            if (g.kind != TensorKind::Linear || !setup.lora_targets.count(g.role)) continue;
            if (g.name.rfind("layers.", 0) != 0) continue;
            const std::int64_t per_layer = g.count / L;
            const double share = g.in_experts ? double(arch.experts_per_token) / arch.experts : 1.0;
            std::int64_t one = bs * setup.lora_rank * e;
            if (setup.lora_dropout > 0) one += bs * g.cols * (e + 1);
            if (setup.dora) one += bs * g.rows * e;   // DoRA rescales the base output: kept for the magnitude's gradient
            const auto bytes = static_cast<std::int64_t>(per_layer * share * one);
            lora_saved += bytes;
            if (g.role == LinearRole::O) lora_o += bytes;
            if (g.role == LinearRole::Down) lora_down += bytes;
            if (g.role == LinearRole::Gate || g.role == LinearRole::Up || g.role == LinearRole::Down ||
                g.role == LinearRole::Router || g.role == LinearRole::SharedGate)
                lora_mlp += bytes;
        }
    }
    // QLoRA under a bitsandbytes that keeps each 4-bit linear's input for backward (MatMul4Bit
    // ctx.tensors = (A, B) up to 0.43.1), where a frozen torch linear keeps none: per layer the
    // input of q/k/v and of the MLP (the two norm outputs), the attention output and the MLP's
    // inner activation; once, the final norm output that feeds the quantized head.
    const bool keeps_quant_inputs = fw.traits.qlora.keeps_linear_inputs && setup.method == Method::Qlora &&
                                    quant != Quantization::None;
    const std::int64_t quant_inputs_saved = keeps_quant_inputs ? bs * (2 * h + qd + inner) * e : 0;
    // The opposite (profile qlora.quantized_linear_keeps_no_input): wingspan-train's 4-bit linear
    // keeps no input, where libtorch 1.13's frozen mm keeps its own. A linear's input then stays
    // only for an adapter's A product on it, which keeps it (with dropout the dropped copy instead,
    // counted in lora_saved). Terms that hold no linear input (a fused kernel's out, the gate and up
    // of SwiGLU) are left alone.
    const bool graph_attention = setup.attention == Attention::Eager || math_sdpa;
    LinearInputsKept kept;
    if (fw.traits.qlora.quantized_linear_keeps_no_input && setup.method == Method::Qlora &&
        quant != Quantization::None) {
        auto adapter_keeps = [&](LinearRole r) { return setup.lora_dropout <= 0 && setup.lora_targets.count(r) > 0; };
        kept.input_norm_out = adapter_keeps(LinearRole::Q) || adapter_keeps(LinearRole::K) || adapter_keeps(LinearRole::V);
        kept.attn_out = adapter_keeps(LinearRole::O) || !graph_attention;
        kept.post_norm_out = adapter_keeps(LinearRole::Gate) || adapter_keeps(LinearRole::Up);
        kept.mlp_product = adapter_keeps(LinearRole::Down) || arch.is_moe() || recompute_pointwise || kernel_swiglu;
    }
    const std::int64_t unkept_input_norm = kept.input_norm_out ? 0 : norm_out;
    const std::int64_t unkept_attn_out = kept.attn_out ? 0 : bs * qd * e;
    const std::int64_t unkept_post_norm = kept.post_norm_out ? 0 : norm_out;
    const std::int64_t unkept_product = kept.mlp_product ? 0 : bs * inner * e;
    const std::int64_t unkept_inputs = unkept_input_norm + unkept_attn_out + unkept_post_norm + unkept_product;
    std::string unkept_desc;
    if (unkept_inputs) {
        auto part = [&](std::int64_t bytes, const char* what) {
            if (!bytes) return;
            unkept_desc += (unkept_desc.empty() ? "" : " + ") + std::string(what) + " " + n(bytes);
        };
        part(unkept_input_norm, "input norm's output b·s·h");
        part(unkept_attn_out, "attention output b·s·q_dim");
        part(unkept_post_norm, "post-attention norm's output b·s·h");
        part(unkept_product, "MLP product b·s·i");
        unkept_desc = "; minus inputs of 4-bit linears no adapter keeps (the 4-bit linear keeps none): " + unkept_desc +
                      " = −" + n(unkept_inputs);
    }
    const std::int64_t layer_saved =
        2 * norm_saved + attn_saved + mlp_saved + lora_saved + quant_inputs_saved - unkept_inputs;
    const std::int64_t layer_input = bs * h * e;
    // Without checkpointing, a frozen embedding's output needs no gradient, so the first layer's
    // input norm is outside the graph and keeps only its output (for the adapters after it).
    const bool first_norm_outside = !ckpt && setup.method != Method::Full && !setup.train_embeddings;
    const std::int64_t first_layer_saved =
        layer_saved - (first_norm_outside ? first_layer_unsaved(setup, groups, FirstLayerParts{norm_saved, norm_out, attn_saved,
                                                                                 bs * qd * e, bs * kv_saved_dim * e,
                                                                                 bs * inner * e},
                                                                 gated, graph_attention,
                                                                 !arch.is_moe() && !recompute_pointwise && !kernel_swiglu &&
                                                                     !keeps_quant_inputs,
                                                                 kernel_gated_act, kept)
                                          : 0);
    a.gated_tensors = gated_tensors;
    a.mlp_saved = mlp_saved;
    a.lora_saved = lora_saved;
    a.lora_mlp = lora_mlp;
    a.lora_down = lora_down;
    a.lora_o = lora_o;
    a.quant_inputs_saved = quant_inputs_saved;
    a.unkept_input_norm = unkept_input_norm;
    a.unkept_attn_out = unkept_attn_out;
    a.unkept_post_norm = unkept_post_norm;
    a.unkept_product = unkept_product;
    a.unkept_inputs = unkept_inputs;
    a.layer_saved = layer_saved;
    a.layer_input = layer_input;
    a.first_layer_saved = first_layer_saved;
    a.gated = gated;
    a.keeps_quant_inputs = keeps_quant_inputs;
    a.graph_attention = graph_attention;
    a.first_norm_outside = first_norm_outside;
    a.unkept_desc = unkept_desc;
    a.kept = kept;
}

// Beside the layers (the final norm, the inputs, the rotary tables, the checkpoints' extras) and
// what one layer's backward holds beyond what it saved.
void outside_and_backward(const PlanContext& c, const StateTotals& t, LayerActivations& a) {
    const auto& setup = c.setup;
    const auto& arch = c.arch;
    const auto& fw = c.fw;
    const Quantization quant = c.quant;
    const std::int64_t down_quantized = t.down_quantized, largest_adapted = t.largest_adapted;
    const auto e = a.e;
    const auto s = a.s;
    const auto h = a.h;
    const auto qd = a.qd;
    const auto inner = a.inner;
    const auto bs = a.bs;
    const auto norm_out = a.norm_out;
    const auto norm_saved = a.norm_saved;
    const auto scores = a.scores;
    const auto score_grad_bytes = a.score_grad_bytes;
    const auto mlp_saved = a.mlp_saved;
    const auto lora_mlp = a.lora_mlp;
    const auto lora_down = a.lora_down;
    const auto lora_o = a.lora_o;
    const auto unkept_attn_out = a.unkept_attn_out;
    const auto unkept_post_norm = a.unkept_post_norm;
    const auto unkept_product = a.unkept_product;
    const auto ckpt = a.ckpt;
    const auto recompute_pointwise = a.recompute_pointwise;
    const auto kernel_norm = a.kernel_norm;
    const auto math_sdpa = a.math_sdpa;
    const auto gated = a.gated;
    const auto keeps_quant_inputs = a.keeps_quant_inputs;
    // Beside the layers: the final norm, the token ids and labels (int64), the rotary cos/sin
    // (per sequence, as HF builds them from position ids; wingspan-train shares one table).
    // A framework that builds cos/sin from position ids of one row (HF: position_ids =
    // cache_position.unsqueeze(0) when none are passed) keeps one s·head_dim table for the batch.
    const std::int64_t rotary_rows = fw.traits.model.rotary_table_once ? s : bs;
    const std::int64_t inputs = bs * 16 + (arch.learned_positions ? 0 : 2 * rotary_rows * arch.head_dim * e);
    // Autograd keeps the final norm's output only for a head that trains (F.linear saves its input for
    // the weight's gradient); a frozen head (LoRA, QLoRA) needs no copy of it. Fused norm kernels and
    // compiled graphs keep what their own profiles say.
    // (Beyond SFT, TRL's fused log-prob head keeps the hidden states it multiplies: profile objective.fused_logprob_head.)
    const bool fused_logprob_head =
        setup.objective.kind != Objective::Sft && fw.traits.objective.fused_logprob_head;
    const bool head_frozen = setup.method != Method::Full && !setup.train_embeddings && !fused_logprob_head;
    const std::int64_t final_norm = norm_saved - (head_frozen && !kernel_norm && !recompute_pointwise ? norm_out : 0);
    const std::int64_t outside_layers = final_norm + inputs + (keeps_quant_inputs && fw.quantizes_head ? bs * h * e : 0);
    // Checkpointed layers keep the additive causal mask of eager attention (and of SDPA run as
    // the eager graph) as an argument.
    const std::int64_t ckpt_mask = ckpt && (setup.attention == Attention::Eager || math_sdpa) ? s * s * e : 0;
    const std::int64_t ckpt_state = ckpt ? fw.checkpoint_state_bytes : 0;

    // Backward of one layer, relative to what it saved plus the gradient of its output:
    // the MLP's backward holds the gradients of its inner activations (one fewer for a plain
    // MLP; a quantized down projection is dequantized beside the first of them), the adapted
    // down projection's r-wide input already freed.
    const std::int64_t G = bs * h * e;   // gradient of a layer's output, and of the final hidden state
    const std::int64_t inner_grad = bs * inner * e;
    // (torchao dequantizes in unfused ops that hold 14 B per weight at once: quantization.dequantize_bytes_per_weight.)
    const bool unfused_dequant = fw.quant_dequantize_bytes > 0 && !fw.traits.compile.enabled;
    const std::int64_t dequant_down =
        quant == Quantization::None || fw.quant_format == "affine" ? 0
        : unfused_dequant ? static_cast<std::int64_t>(std::llround(double(down_quantized) * fw.quant_dequantize_bytes))
                          : down_quantized * e;
    // DoRA composes W + s·B·A (fp32) of an adapted linear to take its column norms, forward and backward.
    const std::int64_t dora_compose = setup.dora ? 4 * largest_adapted : 0;
    // (A product down's input never kept was not there to be freed: one more inner tensor alive.)
    const std::int64_t mlp_extra =
        (gated ? inner_grad : 0) + std::max(inner_grad + unkept_product, dequant_down) - lora_down + dora_compose;
    // Eager attention's backward: the MLP block, its norm, the attention output and the output
    // projection's adapter input are freed; the softmax's backward holds the probabilities, their
    // gradient and the scores' gradient (a checkpointed layer also still holds its output's
    // gradient, kept by the checkpoint function).
    const bool attn_moment = scores > 0;
    const std::int64_t attn_extra = attn_moment ? 2 * scores * score_grad_bytes -
                                                      (mlp_saved + lora_mlp + norm_saved + bs * qd * e + lora_o) +
                                                      (unkept_product + unkept_post_norm + unkept_attn_out) + (ckpt ? G : 0)
                                                : 0;

    a.rotary_rows = rotary_rows;
    a.inputs = inputs;
    a.final_norm = final_norm;
    a.outside_layers = outside_layers;
    a.ckpt_mask = ckpt_mask;
    a.ckpt_state = ckpt_state;
    a.G = G;
    a.inner_grad = inner_grad;
    a.dequant_down = dequant_down;
    a.dequant_at_mlp_moment = dequant_down > inner_grad + unkept_product ? dequant_down : 0;
    a.dora_compose = dora_compose;
    a.mlp_extra = mlp_extra;
    a.attn_extra = attn_extra;
    a.fused_logprob_head = fused_logprob_head;
    a.head_frozen = head_frozen;
    a.attn_moment = attn_moment;
}

}  // namespace wingspan
