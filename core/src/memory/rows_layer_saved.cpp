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
    a.e = compute_dtype_bytes(setup.precision);
    a.b = trains ? setup.micro_batch : setup.serve_batch;
    a.s = setup.seq_len;
    a.h = arch.hidden;
    // QLoRA prepared by PEFT (profile qlora.upcast_non_quantized) under 16-bit autocast: the embedding
    // is fp32 (peft utils/other.py prepare_model_for_kbit_training, v0.13.2 lines 127-132), so the
    // residual stream is; each norm multiplies by its fp32 weight, and bitsandbytes' Linear4bit.forward
    // returns its input's dtype (nn/modules.py @0.45.0: matmul_4bit(x.to(compute_dtype), ...).to(inp_dtype)),
    // so the projections' outputs and the MLP's pointwise tensors are fp32 too; attention (SDPA / flash
    // under autocast) and the adapters' inputs are cast to 16 bits. The fp32 head under autocast is cast
    // per call, not cached (a frozen leaf), and its matmul saves that 16-bit copy for the input's
    // gradient. Measured on the CPU (transformers 5.25, torch 2.15; bench/published/measure_hf_qlora_terms.py):
    // one layer saves 3·b·s·i·2 B more (gate, up, act(gate) in fp32), the checkpointed inputs are fp32,
    // and the head saves a 16-bit copy of its weight.
    const bool autocast = setup.precision == Precision::Bf16Mixed || setup.precision == Precision::Fp16Mixed;
    a.fp32_stream = trains && c.upcast_plain && autocast && a.e < 4;
    a.stream_e = a.fp32_stream ? 4 : a.e;
    a.L = arch.layers;
    a.V = arch.vocab;
    a.qd = arch.q_dim();
    a.kvd = arch.kv_dim();
    a.heads = arch.heads;
    a.inner = arch.is_moe() ? arch.expert_intermediate * arch.experts_per_token +
                                  arch.shared_expert_intermediate
                            : arch.intermediate;
    a.bs = a.b * a.s;
    a.ckpt = setup.grad_checkpointing;
    a.act_factor = fw.activation_factor;
    // Layers that keep tensors for backward: from the first adapted one (all when embeddings train).
    a.Lsaved = setup.train_embeddings ? a.L : Lg;

    // Tensors one decoder layer saves for backward. A norm keeps its input upcast to fp32 (in an
    // fp32 run the input itself, which is the residual stream), the fp32 reciprocal rms per
    // token and its output; a trainable norm weight also keeps the normalized input it
    // multiplies; some runtimes keep x² for the mean's backward too.
    // Compiled (the framework runs torch.compile, profile section "compile"): the partitioner
    // recomputes pointwise ops in backward, so a norm keeps only its 16-bit input and rstd, a gated
    // MLP its gate and up. The framework's own fused kernels (section "kernels") keep as little.
    a.recompute_pointwise = fw.traits.compile.enabled && fw.traits.compile.recomputes_pointwise;
    // A framework's fused kernels may cover only some architectures (kernels.unfused_model_types:
    // wingspan-train runs Gemma's (1 + weight) norm and GELU gate as plain ops).
    a.fused_arch = fw.traits.kernels_cover(arch.model_type);
    a.kernel_norm = a.fused_arch && fw.traits.kernels.norm_saves_input_only;
    a.kernel_swiglu = a.fused_arch && fw.traits.kernels.gated_mlp_saves_gate_up;
    // The gate activation times up as one op that keeps gate and up (the down projection still
    // keeps the product, its input): three b·s·i tensors instead of four.
    a.kernel_gated_act = a.fused_arch && fw.traits.kernels.gated_activation_saves_gate_up;
    // The norm's weight gradient recomputed from the kept input and rstd: no normalized copy.
    a.norm_recomputes = a.kernel_norm && fw.traits.kernels.norm_recomputes_normalized;
    a.norms_train = setup.method == Method::Full;
    a.norm_input = a.bs * a.h * (a.recompute_pointwise || a.kernel_norm ? a.e : std::max<std::int64_t>(a.e, 4));
    a.norm_square = fw.norm_saves_square && !a.recompute_pointwise && !a.kernel_norm ? a.bs * a.h * 4 : 0;
    // A norm that scales in fp32 (profile model.norm_scales_in_fp32) keeps its normalized input in
    // fp32 and the fp32 weight it multiplies (per norm, not per token): a copy where the weight is
    // stored in 16 bits, and always for Gemma's (1 + weight), a new tensor.
    const bool scales_fp32 = fw.traits.model.norm_scales_in_fp32 && !a.recompute_pointwise && !a.kernel_norm;
    const int norm_weight_bytes = a.norms_train ? c.st.weight : c.frozen_bytes;
    const bool norm_plus_one = arch.model_type.rfind("gemma", 0) == 0;
    a.norm_weight_copy = scales_fp32 && (norm_weight_bytes < 4 || norm_plus_one) ? a.h * 4 : 0;
    a.norm_weighted = a.norms_train && !a.recompute_pointwise && !a.norm_recomputes
                          ? a.bs * a.h * (scales_fp32 ? 4 : a.e)
                          : 0;
    // Its backward chain (activations.hpp), less the fp32 normalized input a trained weight freed, plus its gradient.
    a.norm_backward_chain = scales_fp32 ? 4 * a.bs * a.h * 4 - a.norm_weighted + (a.norms_train ? a.h * 4 : 0) : 0;
    a.norm_out = a.recompute_pointwise ? 0 : a.bs * a.h * a.e;
    a.norm_saved = a.norm_input + a.norm_square + a.bs * 4 + a.norm_weighted + a.norm_out + a.norm_weight_copy;
    a.norm_desc = n(a.norm_saved) + (a.recompute_pointwise ? " B: 16-bit input, rstd (compiled)"
                                                          : a.kernel_norm ? " B: 16-bit input, rstd (fused kernel), output"
                                                          : " B: fp32 input, rstd, output");
    if (a.norm_weighted)
        a.norm_desc += scales_fp32 ? ", fp32 normalized input for the weight's gradient" : ", normalized input for the weight's gradient";
    if (a.norm_weight_copy) a.norm_desc += ", the weight's fp32 copy";
    if (a.norm_square) a.norm_desc += ", x² kept by the mean";
    a.attn_saved = 0;
    a.scores = 0;
    a.kv_saved_dim = fw.grouped_eager_attention ? a.kvd : a.qd;
    // Bytes per attention score: kept (fp32 softmax beside its 16-bit copy, or one copy in the
    // compute dtype) and of each of the two score gradients alive in the softmax's backward.
    a.score_bytes = fw.softmax_fp32 ? 4 + (a.e < 4 ? a.e : 0) : a.e;
    a.score_grad_bytes = fw.softmax_fp32 ? 4 : a.e;
    // A runtime without a fused SDPA kernel (libtorch 1.13 on CPU) runs it as the eager graph.
    a.math_sdpa = setup.attention == Attention::Sdpa && fw.traits.attention.sdpa_runs_math;
    // A framework that hands SDPA the grouped KV heads (enable_gqa) instead of repeating them first. Only
    // for unpadded SFT batches: TRL pads preference and GRPO batches, and with an attention mask
    // transformers repeats K/V (integrations/sdpa_attention.py use_gqa_in_sdpa).
    a.sdpa_grouped = setup.attention == Attention::Sdpa && !a.math_sdpa && a.kvd < a.qd &&
                     setup.objective.kind == Objective::Sft && fw.traits.attention.sdpa_grouped_kv;
    switch (setup.attention) {
        case Attention::Eager:
            a.scores = a.b * a.heads * a.s * a.s;
            a.attn_saved = 2 * a.bs * a.qd * a.e + 2 * a.bs * a.kv_saved_dim * a.e + a.scores * a.score_bytes;
            a.attn_desc = fw.grouped_eager_attention
                              ? "eager: q, out (b·s·q_dim), k, v shared by each query group (b·s·kv_dim) + softmax b·heads·s²"
                              : "eager: q, repeated k and v, out (b·s·q_dim each) + softmax b·heads·s²";
            break;
        case Attention::Sdpa:
            if (a.math_sdpa) {   // the runtime's SDPA is the eager graph: repeated K/V and the softmax kept
                a.scores = a.b * a.heads * a.s * a.s;
                a.attn_saved = 4 * a.bs * a.qd * a.e + a.scores * a.score_bytes;
                a.attn_desc = "SDPA on its math path: q, repeated k and v, out (b·s·q_dim each) + softmax b·heads·s²";
                break;
            }
            if (a.sdpa_grouped) {   // K and V passed with their own heads (enable_gqa): saved at kv_dim
                a.attn_saved = 2 * a.bs * a.qd * a.e + 2 * a.bs * a.kvd * a.e + a.b * a.heads * a.s * 4;
                a.attn_desc = "SDPA with grouped KV heads: q, out (b·s·q_dim), k, v (b·s·kv_dim) + logsumexp";
                break;
            }
            a.attn_saved = 4 * a.bs * a.qd * a.e + a.b * a.heads * a.s * 4;
            a.attn_desc = "SDPA: q, repeated k and v, out (b·s·q_dim each) + logsumexp";
            break;
        case Attention::Flash:
            a.attn_saved = 2 * a.bs * a.qd * a.e + 2 * a.bs * a.kvd * a.e + a.b * a.heads * a.s * 4;
            a.attn_desc = "flash: q, out (b·s·q_dim), k, v (b·s·kv_dim) + logsumexp";
            break;
    }
    // A v that is a view of the fused q/k/v output (profile model.v_views_fused_qkv: LitGPT, where
    // only grouped heads are repeated into a copy) keeps that output's storage alive as long as
    // the attention keeps v: its q and k thirds as well, b·s·(q_dim + kv_dim). Multi-head attention
    // only; a math-path SDPA saves its own repeated copies.
    a.fused_qkv_kept = fw.traits.model.v_views_fused_qkv && a.kvd == a.qd && !a.math_sdpa ? a.bs * (a.qd + a.kvd) * a.e : 0;
    if (a.fused_qkv_kept) {
        a.attn_saved += a.fused_qkv_kept;
        a.attn_desc += " + the fused q/k/v output the saved v views (multi-head: b·s·(q_dim + kv_dim))";
    }
    // Gemma 2's attention soft cap, cap · tanh(scores / cap) before the mask, where the scores are a
    // tensor (eager, or SDPA run as its graph): tanh keeps its output for backward, b·heads·s² in
    // the compute dtype (transformers 5.25 models/gemma2/modeling_gemma2.py eager_attention_forward
    // lines 195-198; litgpt 0.5.13 model.py scaled_dot_product_attention lines 583-585).
    a.softcap_scores = arch.attn_logit_softcap > 0 && a.scores > 0 ? a.scores * a.e : 0;
    if (a.softcap_scores) {
        a.attn_saved += a.softcap_scores;
        a.attn_desc += " + the soft-capped scores' tanh output b·heads·s²" +
                       std::string(c.asked.attention == Attention::Sdpa ? " (SDPA cannot cap the scores: eager)" : "");
    }
    // The attention kernel's own workspace (profile section "attention"), beyond what it saves.
    a.flash_kernel = (setup.attention == Attention::Sdpa && !a.math_sdpa) || setup.attention == Attention::Flash;
    // (SDPA as the reference calls it gets K and V already repeated; flash, and SDPA with enable_gqa,
    // get the grouped heads and expand dk, dv in their backward.)
    a.grouped_kernel = (setup.attention == Attention::Flash && a.kvd < a.qd) || a.sdpa_grouped;
    a.eager_ws = trains && fw.traits.attention.eager_scores_workspace && a.scores > 0 ? a.scores * a.e : 0;
    a.flash_ws = trains && fw.traits.attention.flash_backward_workspace && a.flash_kernel
                     ? a.bs * a.qd * 4 + a.b * a.heads * a.s * 4 + (a.grouped_kernel ? 2 * a.bs * a.qd * a.e : 0)
                     : 0;
}

// What one decoder layer saves (MLP, LoRA, 4-bit linears' inputs) and what the first one leaves out.
void layer_saved_tensors(const PlanContext& c, LayerActivations& a) {
    const auto& setup = c.setup;
    const auto& arch = c.arch;
    const auto& fw = c.fw;
    const auto& groups = c.groups;
    const bool lora = c.lora;
    const Quantization quant = c.quant;
    a.gated = arch.mlp == MlpKind::Gated;
    a.gated_tensors = a.recompute_pointwise || a.kernel_swiglu ? 2 : a.kernel_gated_act ? 3 : 4;
    a.mlp_saved = (a.gated ? a.gated_tensors : 2) * a.bs * a.inner * a.e + (arch.is_moe() ? a.bs * arch.experts * 4 : 0);
    // In an fp32 stream the reference MLP's pointwise tensors are fp32 (the gate, up and activation;
    // a plain MLP's first projection); the down projection's input is kept as its adapter's 16-bit cast.
    if (a.fp32_stream && a.gated_tensors == 4) a.mlp_saved += (a.gated ? 3 : 1) * a.bs * a.inner * (4 - a.e);
    // LoRA keeps each adapted linear's r-wide intermediate (and, with dropout, the dropped input
    // and its mask); by role, because backward frees them at different times.
    a.lora_saved = a.lora_mlp = a.lora_down = a.lora_o = 0;
    if (lora) {
        // A fused q/k/v linear (profile model.fused_qkv_lora) drops its input out once for all three.
        bool qkv_input_dropped = false;
        // ... and where only some of q, k, v are adapted (profile model.pads_partial_qkv_lora), scatters
        // their B outputs into the fused width (LitGPT zero_pad: index_copy_, whose backward keeps
        // its whole source): b·s·(adapted q/k/v output dims) in the compute dtype, and the int64
        // column index.
        std::int64_t qkv_adapted = 0, qkv_adapted_cols = 0;
        for (const auto& g : groups) {
            if (g.kind != TensorKind::Linear || !setup.lora_targets.count(g.role)) continue;
            if (g.name.rfind("layers.", 0) != 0) continue;
            const std::int64_t per_layer = g.count / a.L;
            const double share = g.in_experts ? double(arch.experts_per_token) / arch.experts : 1.0;
            std::int64_t one = a.bs * setup.lora_rank * a.e;
            const bool qkv = g.role == LinearRole::Q || g.role == LinearRole::K || g.role == LinearRole::V;
            const bool shares_dropout = qkv && fw.traits.model.fused_qkv_lora && qkv_input_dropped;
            if (setup.lora_dropout > 0 && !shares_dropout) one += a.bs * g.cols * (a.e + 1);
            qkv_input_dropped = qkv_input_dropped || qkv;
            if (qkv) {
                ++qkv_adapted;
                qkv_adapted_cols += g.rows;
            }
            if (setup.dora) one += a.bs * g.rows * a.e;   // DoRA rescales the base output: kept for the magnitude's gradient
            const auto bytes = static_cast<std::int64_t>(per_layer * share * one);
            a.lora_saved += bytes;
            if (g.role == LinearRole::O) a.lora_o += bytes;
            if (g.role == LinearRole::Down) a.lora_down += bytes;
            if (g.role == LinearRole::Gate || g.role == LinearRole::Up || g.role == LinearRole::Down ||
                g.role == LinearRole::Router || g.role == LinearRole::SharedGate)
                a.lora_mlp += bytes;
        }
        if (fw.traits.model.pads_partial_qkv_lora && qkv_adapted > 0 && qkv_adapted < 3) {
            a.qkv_pad_source = a.bs * qkv_adapted_cols * a.e + qkv_adapted_cols * 8;
            a.lora_saved += a.qkv_pad_source;
        }
    }
    // QLoRA under a bitsandbytes that keeps each 4-bit linear's input for backward (MatMul4Bit
    // ctx.tensors = (A, B) up to 0.43.1), where a frozen torch linear keeps none: per layer the
    // input of q/k/v and of the MLP (the two norm outputs), the attention output and the MLP's
    // inner activation; once, the final norm output that feeds the quantized head.
    a.keeps_quant_inputs = fw.traits.qlora.keeps_linear_inputs && setup.method == Method::Qlora &&
                           quant != Quantization::None;
    // A frozen linear saves no input (profile model.frozen_linear_keeps_no_input: torch's mm saves
    // its input only for its weight's gradient), so the reference rows below, which count every
    // linear's input as kept, already hold what bitsandbytes keeps: the same tensors, counted once.
    a.frozen_keeps_none = fw.traits.model.frozen_linear_keeps_no_input &&
                          (setup.method == Method::Lora || setup.method == Method::Qlora);
    a.quant_inputs_saved =
        a.keeps_quant_inputs && !a.frozen_keeps_none ? a.bs * (2 * a.h + a.qd + a.inner) * a.e : 0;
    // MatMul4Bit's ctx.tensors is a plain attribute that backward does not free: a loop that holds the
    // previous micro-batch's logits (profile loss.previous_logits_held) holds that step's graph and
    // so its inputs through the next forward, every layer's (and the 4-bit head's), without checkpointing.
    a.previous_quant_inputs = a.keeps_quant_inputs && fw.traits.loss.previous_logits_held && !a.ckpt
                                  ? a.Lsaved * a.bs * (2 * a.h + a.qd + a.inner) * a.e + (fw.quantizes_head ? a.bs * a.h * a.e : 0)
                                  : 0;
    // The opposite (profile qlora.quantized_linear_keeps_no_input): wingspan-train's 4-bit linear
    // keeps no input, where libtorch 1.13's frozen mm keeps its own. A linear's input then stays
    // only for an adapter's A product on it, which keeps it (with dropout the dropped copy instead,
    // counted in lora_saved). Terms that hold no linear input (a fused kernel's out, the gate and up
    // of SwiGLU) are left alone.
    a.graph_attention = setup.attention == Attention::Eager || a.math_sdpa;
    a.kept = LinearInputsKept{};
    const bool quantized_keeps_none =
        fw.traits.qlora.quantized_linear_keeps_no_input && setup.method == Method::Qlora && quant != Quantization::None;
    if (quantized_keeps_none || (a.frozen_keeps_none && !a.keeps_quant_inputs)) {
        auto adapter_keeps = [&](LinearRole r) { return setup.lora_dropout <= 0 && setup.lora_targets.count(r) > 0; };
        a.kept.input_norm_out = adapter_keeps(LinearRole::Q) || adapter_keeps(LinearRole::K) || adapter_keeps(LinearRole::V);
        a.kept.attn_out = adapter_keeps(LinearRole::O) || !a.graph_attention;
        a.kept.post_norm_out = adapter_keeps(LinearRole::Gate) || adapter_keeps(LinearRole::Up);
        a.kept.mlp_product = adapter_keeps(LinearRole::Down) || arch.is_moe() || a.recompute_pointwise || a.kernel_swiglu;
    }
    a.unkept_input_norm = a.kept.input_norm_out ? 0 : a.norm_out;
    a.unkept_attn_out = a.kept.attn_out ? 0 : a.bs * a.qd * a.e;
    a.unkept_post_norm = a.kept.post_norm_out ? 0 : a.norm_out;
    a.unkept_product = a.kept.mlp_product ? 0 : a.bs * a.inner * a.e;
    a.unkept_inputs = a.unkept_input_norm + a.unkept_attn_out + a.unkept_post_norm + a.unkept_product;
    if (a.unkept_inputs) {
        auto part = [&](std::int64_t bytes, const char* what) {
            if (!bytes) return;
            a.unkept_desc += (a.unkept_desc.empty() ? "" : " + ") + std::string(what) + " " + n(bytes);
        };
        part(a.unkept_input_norm, "input norm's output b·s·h");
        part(a.unkept_attn_out, "attention output b·s·q_dim");
        part(a.unkept_post_norm, "post-attention norm's output b·s·h");
        part(a.unkept_product, "MLP product b·s·i");
        a.unkept_desc = std::string(quantized_keeps_none ? "; minus inputs of 4-bit linears no adapter keeps (the 4-bit linear keeps none): "
                                                         : "; minus inputs of frozen linears no adapter keeps (a frozen linear keeps none): ") +
                        a.unkept_desc + " = −" + n(a.unkept_inputs);
    }
    // Gemma 2 also norms each sublayer's output before its residual add (modeling_gemma2.py
    // Gemma2DecoderLayer.forward lines 307-327): such a norm keeps its fp32 input and rstd (and the
    // normalized input where its weight trains), not its output, which only the residual add reads.
    a.output_norms = std::max(0, arch.norms_per_layer - 2);
    a.output_norm_saved = a.norm_saved - a.norm_out;
    a.layer_saved = 2 * a.norm_saved + a.output_norms * a.output_norm_saved + a.attn_saved + a.mlp_saved + a.lora_saved +
                    a.quant_inputs_saved - a.unkept_inputs;
    a.layer_input = a.bs * a.h * a.stream_e;
    // Without checkpointing, a frozen embedding's output needs no gradient, so the first layer's
    // input norm is outside the graph and keeps only its output (for the adapters after it).
    a.first_norm_outside = !a.ckpt && setup.method != Method::Full && !setup.train_embeddings;
    a.first_layer_saved =
        a.layer_saved - (a.first_norm_outside ? first_layer_unsaved(setup, groups, FirstLayerParts{a.norm_saved, a.norm_out, a.attn_saved,
                                                                                 a.bs * a.qd * a.e, a.bs * a.kv_saved_dim * a.e,
                                                                                 a.bs * a.inner * a.e,
                                                                                 a.output_norms > 0 ? a.output_norm_saved : 0},
                                                                 a.gated, a.graph_attention,
                                                                 !arch.is_moe() && !a.recompute_pointwise && !a.kernel_swiglu &&
                                                                     !a.keeps_quant_inputs,
                                                                 a.kernel_gated_act, a.kept)
                                          : 0);
}

// Beside the layers (the final norm, the inputs, the rotary tables, the checkpoints' extras) and
// what one layer's backward holds beyond what it saved.
void outside_and_backward(const PlanContext& c, const StateTotals& t, LayerActivations& a) {
    const auto& setup = c.setup;
    const auto& arch = c.arch;
    const auto& fw = c.fw;
    const Quantization quant = c.quant;
    const std::int64_t down_quantized = t.down_quantized, largest_adapted = t.largest_adapted;
    // Beside the layers: the final norm, the token ids and labels (int64), the rotary cos/sin
    // (per sequence, as HF builds them from position ids; wingspan-train shares one table).
    // A framework that builds cos/sin from position ids of one row (HF: position_ids =
    // cache_position.unsqueeze(0) when none are passed) keeps one s·head_dim table for the batch.
    a.rotary_rows = fw.traits.model.rotary_table_once ? a.s : a.bs;
    a.rotary_tables = arch.learned_positions ? 0 : 2 * a.rotary_rows * arch.head_dim * a.stream_e;
    a.inputs = a.bs * 16 + a.rotary_tables;
    // Autograd keeps the final norm's output only for a head that trains (F.linear saves its input for
    // the weight's gradient); a frozen head (LoRA, QLoRA) needs no copy of it. Fused norm kernels and
    // compiled graphs keep what their own profiles say.
    // (Beyond SFT, TRL's fused log-prob head keeps the hidden states it multiplies: profile objective.fused_logprob_head.)
    a.fused_logprob_head =
        setup.objective.kind != Objective::Sft && fw.traits.objective.fused_logprob_head;
    a.head_frozen = setup.method != Method::Full && !setup.train_embeddings && !a.fused_logprob_head;
    a.head_cast = a.fp32_stream && !a.fused_logprob_head && !fw.quantizes_head ? a.V * a.h * a.e : 0;
    // LoRA on the head (target "head"; LitGPT lora_head, litgpt/lora.py LoRALinear.forward lines 165-172:
    // pretrained + (lora_dropout(x) @ A^T @ B^T) * scaling) keeps its r-wide x·A^T and, with dropout, the
    // dropped input and its mask; without dropout the input itself, the final norm's output, which a
    // frozen head alone would free. Measured with the real litgpt 0.5.13 on the CPU (Gemma-shaped, bf16,
    // dropout 0.1): b·s·(h·(e + 1) + r·e), the mask a bool on CUDA.
    const bool head_adapted = c.lora && setup.lora_targets.count(LinearRole::Head) > 0;
    const bool head_adapter_reads_norm_out = head_adapted && setup.lora_dropout <= 0;
    a.head_lora_saved =
        head_adapted ? a.bs * setup.lora_rank * a.e + (setup.lora_dropout > 0 ? a.bs * a.h * (a.e + 1) : 0) : 0;
    // A head whose loss runs in place (profile loss_in_place: wingspan-train's LmHeadLossFn) keeps the
    // hidden states it multiplies whether or not its weight trains.
    a.final_norm = a.norm_saved - (a.head_frozen && !head_adapter_reads_norm_out && !a.kernel_norm && !a.recompute_pointwise &&
                                           !fw.loss_in_place
                                       ? a.norm_out
                                       : 0);
    // The final norm's backward chain (norm_backward_chain) runs after the loss has freed its logits
    // and the head's backward its input (the norm's output, where the head or its adapter kept it).
    // Measured with wingspan-train's counting allocator on Gemma 2 (Model::unfused_rms_norm), 128 × 2,
    // fp32 and bf16-mixed: LoRA within 1,532 B of the end of forward + 4·b·s·h·4, the full fine-tune
    // within 8 B with the rest.
    const bool head_kept_norm_out = a.final_norm == a.norm_saved && !a.recompute_pointwise;
    a.final_norm_backward = a.norm_backward_chain > 0 ? a.norm_backward_chain - (head_kept_norm_out ? a.norm_out : 0) : 0;
    a.outside_layers = a.final_norm + a.head_lora_saved + a.inputs +
                       (a.keeps_quant_inputs && fw.quantizes_head ? a.bs * a.h * a.e : 0);
    // Checkpointed layers keep the additive causal mask of eager attention (and of SDPA run as
    // the eager graph) as an argument.
    // Gemma 2 and 3 alternate sliding-window and global layers: each kind's mask is an argument of
    // its layers, two s² masks (wingspan-train Model::hidden_states; transformers' mask mapping
    // builds one per layer type, transformers 5.25 models/gemma2/modeling_gemma2.py lines 431-433).
    // The first layer's kind outlives the other's, whose last layer is done before the first's backward.
    const bool alternating_windows = arch.model_type == "gemma2" || arch.model_type == "gemma3";
    const std::int64_t mask = setup.attention == Attention::Eager || a.math_sdpa ? a.s * a.s * a.e : 0;
    a.ckpt_mask = a.ckpt ? mask : 0;
    a.ckpt_mask_other = alternating_windows && a.Lsaved > 1 ? a.ckpt_mask : 0;
    // Without checkpoints the masks are no saved tensors, but alive through the forward.
    a.forward_masks = (alternating_windows ? 2 : 1) * mask;
    a.ckpt_state = a.ckpt ? fw.checkpoint_state_bytes : 0;

    // Backward of one layer, relative to what it saved plus the gradient of its output:
    // the MLP's backward holds the gradients of its inner activations (one fewer for a plain
    // MLP; a quantized down projection is dequantized beside the first of them), the adapted
    // down projection's r-wide input already freed.
    a.G = a.bs * a.h * a.stream_e;   // gradient of a layer's output, and of the final hidden state
    a.inner_grad = a.bs * a.inner * a.stream_e;
    // (torchao dequantizes in unfused ops that hold 14 B per weight at once: quantization.dequantize_bytes_per_weight.)
    a.dequant_down = quant == Quantization::None ? 0 : fw.dequantized_weight_bytes(down_quantized, static_cast<int>(a.e));
    // DoRA composes W + s·B·A (fp32) of an adapted linear to take its column norms, forward and backward.
    a.dora_compose = setup.dora ? 4 * largest_adapted : 0;
    // (A product down's input never kept was not there to be freed: one more inner tensor alive.)
    // (The MLP output's own norm, where there is one, ran its backward first: freed.)
    // An adapted down projection whose output has its own norm: that norm's backward made the output's
    // gradient (without the norm it is the layer's output gradient, G); the adapter's backward runs
    // first, so it is held for the frozen product's (measured: Gemma 2, LoRA on down, checkpointed).
    // (Not with a 4-bit down projection: measured, its product's backward does not wait for it; nor where the
    // adapted linear is one node (profile model.lora_linear_one_node): it takes the gradient once and is done.)
    const bool down_one_node = fw.traits.model.lora_linear_one_node && setup.lora_dropout <= 0 && !arch.mlp_bias;
    const std::int64_t down_out_grad =
        a.lora_down > 0 && a.output_norms > 0 && down_quantized == 0 && !down_one_node ? a.bs * a.h * a.e : 0;
    a.mlp_extra = down_out_grad + (a.gated ? a.inner_grad : 0) + std::max(a.inner_grad + a.unkept_product, a.dequant_down) - a.lora_down +
                  a.dora_compose - (a.output_norms > 0 ? a.output_norm_saved : 0);
    // Before it, the MLP output's own norm runs its backward chain beside everything the layer saved
    // (and before the down projection's backward has made its gradients: rows_phases.cpp mlp_moment).
    a.mlp_inner_extra = a.mlp_extra;
    if (a.output_norms > 0) a.mlp_extra = std::max(a.mlp_extra, a.norm_backward_chain);
    // Eager attention's backward: the MLP block, its norm, the attention output and the output
    // projection's adapter input are freed; the softmax's backward holds the probabilities, their
    // gradient and the scores' gradient (a checkpointed layer also still holds its output's
    // gradient, kept by the checkpoint function).
    a.attn_moment = a.scores > 0;
    a.attn_extra = a.attn_moment ? 2 * a.scores * a.score_grad_bytes -
                                     (a.after_attention_saved() + a.bs * a.qd * a.e + a.lora_o) +
                                     (a.unkept_post_norm + a.unkept_attn_out) + (a.ckpt ? a.G : 0)
                               : 0;

    // The first layer's q, k and v projections in backward (profile model.qkv_backward_moment: measured in
    // wingspan-train with the counting allocator's live blocks at the step's peak, 135M-class full fine-tunes
    // at 128 x 1, fp32 and bf16-mixed, eager and SDPA, checkpointed or not, to the byte). Made q, k, v in
    // forward, autograd runs them v, k, q after the attention's backward: at q's all three weight gradients
    // exist (only the input norm's is still to come), and beside the input norm's saved tensors are q's input
    // gradient, the norm output's gradient summed from v and k, and q's own before it is added. The rest of
    // the layer's saved tensors are freed and, without checkpointing, the rotary tables (their last use is
    // this layer's rotary backward); a checkpointed layer keeps them as its arguments, and holds its output's
    // gradient beside the recomputed graph's. A full fine-tune only (the weight gradients are what make it a
    // peak); not a fused q/k/v (one input gradient, nothing summed), per-head q/k norms or sublayer output norms.
    a.qkv_moment = fw.traits.model.qkv_backward_moment && setup.method == Method::Full && a.L > 1 && !arch.fuses_projections() &&
                   !arch.qk_norm && a.output_norms == 0;
    if (a.qkv_moment) {
        const std::int64_t input_grads = a.bs * a.qd * a.e + 2 * a.bs * a.h * a.e;
        a.qkv_extra = a.ckpt ? a.norm_saved - a.layer_saved + a.G + input_grads
                             : a.norm_saved - a.first_layer_saved - a.rotary_tables + input_grads;
    }

    a.dequant_at_mlp_moment = a.dequant_down > a.inner_grad + a.unkept_product ? a.dequant_down : 0;

    // The last layer's down projection in forward, as its product is allocated: the MLP product it
    // multiplies (a local where nothing keeps it), its dequantized weight (a 4-bit one), the product
    // itself and the attention masks are alive; the final norm, the head's adapter, the down
    // projection's own adapter and the MLP output's norm have not run. Below the end of forward unless
    // the saved tensors are few: QLoRA with adapters on some linears at 128 tokens was -1.2 % (fp32)
    // and -1.5 % (bf16-mixed), measured with the counting allocator's live blocks at the forward's peak.
    a.forward_down_extra = a.ckpt ? 0
                                  : a.unkept_product + a.dequant_down + a.bs * a.h * a.e + a.forward_masks - a.final_norm -
                                        a.head_lora_saved - a.lora_down - (a.output_norms > 0 ? a.output_norm_saved : 0);
}

}  // namespace wingspan
