// The activations at each moment of a step, and their rows.
#include <algorithm>
#include <cmath>

#include "activations.hpp"

namespace wingspan {

namespace {
std::string n(std::int64_t v) { return format_count(v); }

// Offloaded checkpoints: the first layer's input, which autograd holds on the device beside the one
// layer input brought back (profile checkpointing.offload_keeps_first_input). Only a frozen embedding's
// output is a leaf the hook makes require grad; a trained embedding's output is freed after layer 0.
std::int64_t first_input_held_on_device(const PlanContext& c, const LayerActivations& a) {
    const bool frozen_embedding = c.lora && !c.setup.train_embeddings;
    return c.fw.checkpoint_offload && c.fw.traits.checkpointing.offload_keeps_first_input && frozen_embedding && a.Lsaved > 0
               ? a.layer_input
               : 0;
}
}  // namespace

// The activations alive at each moment of a step: the end of forward, the last layer's attention
// in forward, the loss's backward, and the MLP and attention backward of the top and bottom layers.
ActivationMoments activation_moments(const PlanContext& c, const LayerActivations& a, MemoryEstimate& est) {
    const auto& setup = c.setup;
    const auto& fw = c.fw;
    const bool trains = c.trains;
    auto scaled = [&](std::int64_t bytes) { return a.scaled(bytes); };
    std::int64_t act_forward = 0, act_top = 0, act_bottom = 0;
    std::int64_t act_top_mlp = 0, act_top_attn = 0, act_bottom_mlp = 0, act_bottom_attn = 0, act_forward_attention = 0;
    // The top layer's down projection as its backward returns: what the layer saved and the
    // gradient of the down projection's input (the moment its weight gradient exists whole).
    std::int64_t act_top_down = 0;
    ActivationMoments::Raw raw;
    std::string act_formula;
    if (!trains) {
        // Serving: one layer's prefill workspace, nothing kept across layers.
        act_forward = act_top = act_bottom =
            scaled(a.bs * (2 * a.h + 2 * a.inner + a.qd + 2 * a.kvd) * a.e +
                   (setup.attention == Attention::Eager ? a.b * a.heads * a.s * a.s * 4 : 0));
        act_formula = "prefill workspace of one layer: b·s·(2h + 2i + q_dim + 2·kv_dim)·" +
                      std::to_string(a.e) + " B";
    } else {
        std::int64_t top_base = 0, bottom_base = 0, second_base = 0;
        const std::string output_norms =
            a.output_norms ? "; output norms " + std::to_string(a.output_norms) + "×" + n(a.output_norm_saved) + " B (input, rstd)" : "";
        if (a.ckpt) {
            // Every layer's input (and its checkpoint state) is kept; backward recomputes one
            // layer at a time, whose output and the checkpoint's own state are alive beside it.
            // Layers before the first adapted one need no gradient and keep nothing. With
            // offloaded checkpoints the inputs live in host RAM; one is on the device at a time.
            const std::int64_t kept_all = a.Lsaved * (a.layer_input + a.ckpt_state);
            const std::int64_t first_held = first_input_held_on_device(c, a);
            const std::int64_t kept = fw.checkpoint_offload ? a.layer_input + first_held + a.Lsaved * a.ckpt_state : kept_all;
            if (fw.checkpoint_offload) est.host_bytes += a.Lsaved * a.layer_input;
            // fp32, or a fused norm that keeps its input as it is: the norm keeps the kept input.
            const std::int64_t shared_input = a.stream_e >= 4 || a.kernel_norm ? a.layer_input : 0;
            const std::int64_t recomputed = a.layer_saved - shared_input + a.layer_input + a.ckpt_state + a.G;
            act_forward = kept + a.outside_layers + a.ckpt_mask + a.ckpt_mask_other;
            top_base = kept + a.inputs + a.ckpt_mask + a.ckpt_mask_other + recomputed;
            // (the checkpoint states live as long as the graph, not as long as the inputs)
            bottom_base = a.layer_input + first_held + a.Lsaved * a.ckpt_state + a.inputs + a.ckpt_mask + recomputed;
            // The second layer's backward: its own kept input too, and the other kind's mask, whose last
            // layer it is, where layers alternate sliding-window and global attention.
            if (a.ckpt_mask_other > 0 && a.Lsaved > 1) second_base = bottom_base + a.layer_input + a.ckpt_mask_other;
            act_formula = "checkpointing: " + std::to_string(a.Lsaved) + " layers × b·s·h·" + std::to_string(a.stream_e) +
                          " B kept (" + n(a.layer_input) + " B each" + (fw.checkpoint_offload ? ", offloaded to host RAM" : "") +
                          ") + one layer recomputed in backward (" +
                          n(a.layer_saved) + " B: norms 2×" + a.norm_desc + output_norms + "; attention " + n(a.attn_saved) + " [" +
                          a.attn_desc + "]; MLP " + n(a.mlp_saved) + (a.lora_saved ? "; LoRA " + n(a.lora_saved) : "") +
                          (a.quant_inputs_saved ? "; 4-bit linears' inputs kept by bitsandbytes " + n(a.quant_inputs_saved) : "") + a.unkept_desc +
                          ") + its backward";
        } else {
            act_forward = a.first_layer_saved + (a.Lsaved - 1) * a.layer_saved + a.outside_layers;
            top_base = act_forward - a.norm_saved - a.head_lora_saved + a.G;   // the head's backward has run
            act_forward += a.previous_quant_inputs;   // forward's end only
            bottom_base = a.first_layer_saved + a.inputs + a.G;
            act_formula = std::to_string(a.Lsaved) + " layers × " + n(a.layer_saved) + " B saved per layer (norms 2×" +
                          a.norm_desc + output_norms + "; attention " + n(a.attn_saved) + " [" + a.attn_desc + "]; MLP " +
                          n(a.mlp_saved) + (a.lora_saved ? "; LoRA " + n(a.lora_saved) : "") +
                          (a.quant_inputs_saved ? "; 4-bit linears' inputs kept by bitsandbytes " + n(a.quant_inputs_saved) : "") + a.unkept_desc + ")" +
                          (a.first_norm_outside ? ", the first adapted layer keeping only what follows its first adapter (" +
                                                            n(a.layer_saved - a.first_layer_saved) + " B less)"
                                                      : "") +
                          " + the backward of one layer" +
                          (a.previous_quant_inputs ? "; at the end of forward also the previous micro-batch's 4-bit linear inputs (" +
                                                         n(a.previous_quant_inputs) + " B: bitsandbytes keeps them on its ctx, "
                                                         "the loop holds that step's logits)"
                                                   : "");
        }
        // The flash backward of one layer's attention: its workspace and the q, k, v gradients,
        // once the MLP block, its norm and the output projection's adapter input are freed.
        const std::int64_t flash_extra = a.flash_ws > 0 ? a.flash_ws + a.bs * (a.qd + 2 * a.kvd) * a.e -
                                                            (a.after_attention_saved() + a.lora_o) + a.unkept_post_norm +
                                                            (a.ckpt ? a.G : 0)
                                                      : 0;
        if (a.eager_ws > 0)   // the last layer's attention in forward: its MLP block and the final norm not yet run
            act_forward_attention = scaled(act_forward + a.eager_ws +
                                           (a.ckpt ? a.scores * a.score_bytes : -a.after_attention_saved()));
        act_top_mlp = scaled(top_base + a.mlp_extra);
        act_top_down = std::min(act_top_mlp, scaled(top_base + a.inner_grad));
        act_bottom_mlp = scaled(bottom_base + a.mlp_extra);
        act_top_attn = a.attn_moment ? scaled(top_base + a.attn_extra) : a.flash_ws > 0 ? scaled(top_base + flash_extra) : 0;
        act_bottom_attn = a.attn_moment ? scaled(bottom_base + a.attn_extra) : a.flash_ws > 0 ? scaled(bottom_base + flash_extra) : 0;
        // The same moments before the activation factor: the saved-tensor rows plus one row per
        // backward moment (write_backward_rows) add up to these.
        raw.forward = act_forward;
        // The saved rows alive after forward's end (the previous micro-batch's 4-bit inputs are
        // counted at forward_end only), and the moments built on them where they are moments.
        const std::int64_t saved_rows = act_forward - a.previous_quant_inputs;
        raw.saved = saved_rows;
        raw.final_norm_backward = a.final_norm_backward > 0 ? saved_rows + a.final_norm_backward : 0;
        raw.forward_down = a.forward_down_extra > 0 ? saved_rows + a.forward_down_extra : 0;
        raw.top_mlp = top_base + a.mlp_extra;
        raw.top_down = scaled(top_base + a.inner_grad) < act_top_mlp ? top_base + a.inner_grad : raw.top_mlp;
        raw.bottom_mlp = bottom_base + a.mlp_extra;
        raw.top_attn = a.attn_moment ? top_base + a.attn_extra : a.flash_ws > 0 ? top_base + flash_extra : 0;
        raw.bottom_attn = a.attn_moment ? bottom_base + a.attn_extra : a.flash_ws > 0 ? bottom_base + flash_extra : 0;
        raw.bottom_qkv = a.qkv_moment ? bottom_base + a.qkv_extra : 0;
        if (second_base > 0) {
            raw.second_mlp = second_base + a.mlp_extra;
            raw.second_attn = a.attn_moment ? second_base + a.attn_extra : a.flash_ws > 0 ? second_base + flash_extra : 0;
        }
        act_forward = scaled(act_forward);
        act_top = std::max(act_top_mlp, act_top_attn);
        act_bottom = std::max({act_bottom_mlp, act_bottom_attn, scaled(raw.bottom_qkv), scaled(raw.second_mlp),
                               scaled(raw.second_attn)});
    }
    ActivationMoments m;
    m.forward = act_forward;
    m.forward_attention = act_forward_attention;
    m.loss_backward = trains ? act_forward + scaled(a.G) : act_forward;
    m.final_norm_backward = a.scaled(raw.final_norm_backward);
    m.forward_down = a.scaled(raw.forward_down);
    m.top = act_top;
    m.bottom = act_bottom;
    m.top_mlp = act_top_mlp;
    m.top_down = act_top_down;
    m.top_attn = act_top_attn;
    m.bottom_mlp = act_bottom_mlp;
    m.bottom_attn = act_bottom_attn;
    m.formula = act_formula;
    m.raw = raw;
    return m;
}

}  // namespace wingspan

namespace wingspan {

void write_activation_rows(const PlanContext& c, const LayerActivations& a, const ActivationMoments& m, RowWriter& w) {
    const std::int64_t b = a.b, s = a.s, e = a.e, heads = a.heads;
    std::map<std::string, double> act_inputs = {
        {"batch", double(b)}, {"seq", double(s)}, {"hidden", double(a.h)}, {"layers", double(a.L)},
        {"intermediate", double(a.inner)}, {"heads", double(heads)}, {"bytes_per_value", double(e)},
        {"framework_factor", a.act_factor}};
    std::vector<std::string> tags;
    if (a.lora_saved > 0) tags.push_back("lora");
    if (a.ckpt && c.trains) tags.push_back("checkpointing");
    w.shown(figure(row("activations at their largest moment", Component::Activations, "all layers", "", 0, double(e),
                       "what forward saves for backward and one layer's backward holds, at the moment it peaks "
                       "(the phases count its parts)",
                       tags),
                   std::max({m.forward, m.forward_attention, m.forward_down, m.loss_backward, m.final_norm_backward, m.top, m.bottom})),
            m.formula, act_inputs);
    if (a.eager_ws > 0)
        w.shown(figure(row("eager attention scores", Component::Activations, "one layer", "b·heads·s²", b * heads * s * s, double(e),
                           "eager attention materialises the masked scores beside its fp32 softmax (profile "
                           "attention.eager_scores_workspace)"),
                       a.eager_ws),
                "attention workspace (eager, forward): the masked scores b·heads·s²·" + std::to_string(e) + " B (" +
                    std::to_string(b) + "·" + std::to_string(heads) + "·" + n(s) + "²) beside the fp32 softmax",
                {{"batch", double(b)}, {"heads", double(heads)}, {"seq", double(s)}, {"bytes_per_value", double(e)}});
    if (a.flash_ws > 0)
        w.shown(figure(row("flash backward workspace", Component::Activations, "one layer", "b·s·q·4 + b·heads·s·4", 0, 0,
                           "the flash / SDPA backward's fp32 dq accumulator (profile attention.flash_backward_workspace)"),
                       a.flash_ws),
                "attention workspace (flash backward): fp32 dq accumulator b·s·q_dim·4 B + b·heads·s·4 B" +
                    std::string(a.grouped_kernel ? " + dk, dv expanded to every query head 2·b·s·q_dim·" + std::to_string(e) + " B" : ""),
                {{"tokens", double(a.bs)}, {"q_dim", double(a.qd)}, {"heads", double(heads)}, {"kv_dim", double(a.kvd)}});
}

}  // namespace wingspan

namespace wingspan {

namespace {
// A saved tensor kind alive from the end of forward to the loss's backward (the backward
// moments' own rows count what is left of it there), scaled with its group by activation_factor.
TensorRow saved(std::string name, std::string scope, std::string shape, std::int64_t bytes, std::string why,
                std::vector<std::string> tags = {}, int group = 1, const std::string& freed = "loss_backward") {
    TensorRow r = row(std::move(name), Component::Activations, std::move(scope), std::move(shape), 0, 0, std::move(why),
                      std::move(tags));
    r.bytes = bytes;
    r.created = "forward_end";
    r.freed = freed;
    r.scale_group = group;
    return r;
}
}  // namespace

void write_saved_rows(const PlanContext& c, const LayerActivations& a, bool forward_attention, const std::string& last_phase,
                      RowWriter& w) {
    // The saved tensors live until the last moment of backward; the backward moments' rows take
    // away what each has freed by then.
    auto kept_until = [&](std::string name, std::string scope, std::string shape, std::int64_t bytes, std::string why,
                          std::vector<std::string> tags = {}) {
        return saved(std::move(name), std::move(scope), std::move(shape), bytes, std::move(why), std::move(tags), 1, last_phase);
    };
    const std::string layers = std::to_string(a.Lsaved) + " layers";
    // What the previous micro-batch's logits hold lives until the model's forward returns.
    const TensorInventory& inv = w.inventory();
    const std::string previous_until = inv.has_phase("forward_output") ? "forward_output"
                                       : inv.has_phase("forward_head") ? "forward_head"
                                                                       : "forward_end";
    if (a.ckpt) {
        const std::int64_t first_held = first_input_held_on_device(c, a);
        const std::int64_t on_device = c.fw.checkpoint_offload ? a.layer_input + first_held : a.Lsaved * a.layer_input;
        w.add(kept_until("checkpointed layer inputs", layers, "b·s·h per layer", on_device,
                    !c.fw.checkpoint_offload ? "checkpointing keeps each layer's input and recomputes the layer in backward"
                    : first_held ? "one layer input on the device, and the first layer's, which autograd holds (profile "
                                   "checkpointing.offload_keeps_first_input); the others in host RAM (activation offload)"
                                 : "one layer input on the device; the others in host RAM (activation offload)",
                    {"checkpointing"}));
        if (c.fw.checkpoint_offload) {
            TensorRow host = saved("checkpointed layer inputs in host RAM", layers, "b·s·h per layer", a.Lsaved * a.layer_input,
                                   "offloaded checkpoints (Unsloth \"unsloth\" checkpointing, torchtune OffloadActivations)",
                                   {"checkpointing", "technique"}, 0, last_phase);
            host.on_host = true;
            w.add(std::move(host));
        }
        w.add(kept_until("checkpoint state", layers, "per layer", a.Lsaved * a.ckpt_state, "the checkpoint function's own state (RNG)",
                    {"checkpointing"}));
        w.add(kept_until("causal mask kept by checkpointed attention", "global", "s²", a.ckpt_mask,
                    "eager attention's additive mask is a checkpoint argument", {"checkpointing"}));
        // (the first layer's backward moments count it freed, as they count the layers above)
        w.add(kept_until("the other layer kind's mask (sliding or global)", "global", "s²", a.ckpt_mask_other,
                         "layers alternating sliding-window and global attention: each kind's mask is its layers' "
                         "argument, freed after the last layer of that kind",
                         {"checkpointing"}));
    } else {
        w.add(kept_until("norms' saved tensors", layers, "2 norms × (b·s·h input, b·s rstd, b·s·h output …)", a.Lsaved * 2 * a.norm_saved,
                    a.norm_desc));
        w.add(kept_until("sublayer output norms' saved tensors", layers, "2 norms × (b·s·h input, b·s rstd …)",
                    a.Lsaved * a.output_norms * a.output_norm_saved,
                    "Gemma 2 norms the attention's and the MLP's outputs before the residual add: each keeps its input "
                    "and rstd, not its output"));
        w.add(kept_until("attention's saved tensors", layers, "q, k, v, out + softmax or logsumexp", a.Lsaved * a.attn_saved, a.attn_desc));
        w.add(kept_until("MLP's saved tensors", layers, "b·s·i per kept tensor", a.Lsaved * a.mlp_saved,
                    "the MLP's projections and activation kept for backward"));
        w.add(kept_until("LoRA intermediates", layers, "b·s·r per adapted linear (+ b·s·d_in and a mask with dropout, b·s·d_out with DoRA)",
                    a.Lsaved * a.lora_saved, "each adapter's A output (r wide) is B's input, kept for B's gradient", {"lora"}));
        w.add(kept_until("4-bit linears' inputs", layers, "b·s·(2h + q + i)", a.Lsaved * a.quant_inputs_saved,
                    "bitsandbytes ≤ 0.43.1 MatMul4Bit keeps its input (profile qlora.keeps_linear_inputs)", {"qlora"}));
        w.add(saved("the previous micro-batch's 4-bit linear inputs", layers, "b·s·(2h + q + i) (+ b·s·h for a 4-bit head)",
                    a.previous_quant_inputs,
                    "bitsandbytes <= 0.43.1 keeps each input on its autograd ctx, which backward does not free; the loop "
                    "holds the previous logits and so that graph until this forward returns (profile loss.previous_logits_held)",
                    {"qlora"}, 1, previous_until));
        w.add(kept_until("inputs no 4-bit linear keeps", layers, "b·s·h, b·s·q, b·s·i", -a.Lsaved * a.unkept_inputs,
                    "the 4-bit linear keeps no input (profile qlora.quantized_linear_keeps_no_input)", {"qlora"}));
        w.add(kept_until("first adapted layer before its first adapter", "layer 0", "", a.first_layer_saved - a.layer_saved,
                    "a frozen embedding's output needs no gradient: the first layer keeps only what follows its first adapter",
                    {"lora"}));
    }
    w.add(kept_until("final norm's saved tensors", "global", "b·s·h …", a.final_norm, "the norm before the head"));
    w.add(kept_until("the head adapter's saved tensors", "global", "b·s·r (+ b·s·h·(e + 1) with dropout)", a.head_lora_saved,
                     "LoRA on the LM head keeps x·Aᵀ and, with dropout, the dropped input and its mask", {"lora"}));
    w.add(kept_until("token ids, labels, rotary tables", "global", "b·s·16 + 2·rows·head_dim", a.inputs,
                "int64 ids and labels; cos/sin per row (or once: profile model.rotary_table_once)"));
    w.add(saved("fp32 head's 16-bit copy", "global", "v·h", a.head_cast,
                "the fp32 head (QLoRA preparation) is cast for each call under autocast and its matmul keeps the copy for "
                "the hidden states' gradient until the head's backward",
                {"qlora"}, 0));
    if (a.keeps_quant_inputs && c.fw.quantizes_head)
        w.add(kept_until("4-bit head's input", "global", "b·s·h", a.bs * a.h * a.e, "the quantized head keeps its input", {"qlora"}));
    if (forward_attention) {
        // The last layer's attention in forward: its scores workspace; its MLP block and the final
        // norm not yet run (or, checkpointed, the recomputed softmax).
        TensorRow ws = saved("eager scores workspace (last layer, forward)", "one layer", "b·heads·s²", a.eager_ws,
                             "profile attention.eager_scores_workspace");
        ws.created = ws.freed = "forward_attention";
        w.add(std::move(ws));
        TensorRow delta = saved(a.ckpt ? "softmax of the last layer (forward)" : "the last layer's MLP block and final norm not yet run",
                                "one layer", "", a.ckpt ? a.scores * a.score_bytes : -a.after_attention_saved(),
                                "what the forward holds at the last layer's attention");
        delta.created = delta.freed = "forward_attention";
        w.add(std::move(delta));
    }
    TensorRow grad = saved("gradient of the final hidden state", "global", "b·s·h", a.G, "the loss's backward hands it to the last layer", {}, 2);
    // Made by the head's backward: where that is a moment of its own (a dequantized head), there, at
    // most b·s·h (the first chunk's gradient of a chunked head is less), and not in the loss's.
    grad.created = grad.freed = inv.has_phase("head_backward") ? "head_backward" : "loss_backward";
    w.add(std::move(grad));
}

void write_forward_down_row(const LayerActivations& a, RowWriter& w) {
    TensorRow r = row("the last layer's down projection in forward", Component::Activations, "one layer",
                      "b·s·i product + dequantized h·i + b·s·h output + s² masks − what is not made yet", 0, 0,
                      "the MLP product it multiplies (kept by nothing), a 4-bit weight dequantized for it, its output and "
                      "the eager attention masks; the final norm, the head's and the down projection's adapters and the "
                      "MLP output's norm not yet run");
    r.bytes = a.forward_down_extra;
    r.created = r.freed = "forward_down";
    r.scale_group = 1;
    w.add(std::move(r));
}

void write_backward_row(const std::string& phase, std::int64_t moment_raw, const ActivationMoments& m, RowWriter& w) {
    static const std::map<std::string, std::string> kWhat = {
        {"final_norm_backward", "the final norm's backward as plain fp32 ops: four fp32 b·s·h tensors (its cast gradient "
                                "and the chain's temporaries); the loss's tensors freed"},
        {"backward_down_gradient", "the top layer's down projection backward: its input's gradient beside the saved tensors"},
        {"backward", "the top layer's MLP backward: its output's gradient and the MLP's inner gradients (a checkpointed "
                     "layer recomputed); the final norm freed"},
        {"backward_output_norm", "the top layer's MLP output norm backward: its fp32 chain beside the recomputed layer, "
                                 "before the down projection's gradients exist"},
        {"backward_second_layer_output_norm", "the second layer's MLP output norm backward: its fp32 chain, before the "
                                              "down projection's gradients exist"},
        {"backward_end_output_norm", "the first layer's MLP output norm backward: its fp32 chain, before the down "
                                     "projection's gradients exist"},
        {"backward_attention", "the top layer's attention backward: the softmax's or flash kernel's gradients; its MLP block freed"},
        {"backward_second_layer", "the second layer's MLP backward: the layers above it freed, its own kept input and "
                                  "the other attention kind's mask still held (layers alternating sliding and global)"},
        {"backward_second_layer_attention", "the second layer's attention backward: the layers above it freed, its kept "
                                            "input and the other attention kind's mask still held"},
        {"backward_end", "the first layer's MLP backward: the layers above it freed"},
        {"backward_end_attention", "the first layer's attention backward: the layers above it freed"},
        {"backward_end_qkv", "the first layer's q projection backward: its input norm's saved tensors, q's input gradient and "
                             "the norm output's gradient from v and k and from q; the rest of the layer freed"},
        {"embedding_backward", "the embedding's backward: only the inputs and the first layer's input gradient left"},
    };
    TensorRow r = row("held at " + phase + " beyond the saved tensors", Component::Activations, "one layer", "", 0, 0,
                      kWhat.count(phase) ? kWhat.at(phase) : phase);
    r.bytes = moment_raw - m.raw.saved;
    r.created = r.freed = phase;
    r.scale_group = 1;
    w.add(std::move(r));
}

void write_dequantized_row(const std::string& phase, const LayerActivations& a, const PlanContext& c, RowWriter& w) {
    if (a.dequant_at_mlp_moment == 0) return;
    // bitsandbytes (MatMul4Bit.backward, bitsandbytes/autograd/_functions.py @0.45.5 line 493):
    // grad_A = grad_output @ dequantize_4bit(B).t(), one compute-dtype copy of the weight beside the
    // input's gradient it makes; torchao's NF4Tensor holds more while it dequantizes (profile
    // quantization.dequantize_bytes_per_weight). The sources are in the framework's profile.
    const bool unfused = c.fw.quant_dequantize_bytes > 0 && !c.fw.traits.compile.enabled;
    const double per_weight = unfused ? c.fw.quant_dequantize_bytes : double(a.e);
    TensorRow r = row("4-bit down projection dequantized for its backward", Component::Activations, "one layer", "h·i",
                      std::llround(double(a.dequant_at_mlp_moment) / per_weight), per_weight,
                      unfused ? "torchao's NF4 dequantization: the codes, their scales and 16-bit copies alive together "
                                "(profile quantization.dequantize_bytes_per_weight)"
                              : "the quantized weight dequantized to the compute dtype for its input's gradient, beside "
                                "that gradient (bitsandbytes MatMul4Bit.backward; profile sources "
                                "quantization.dequantize_bytes_per_weight)",
                      {"qlora"});
    r.bytes = a.dequant_at_mlp_moment;
    r.created = r.freed = phase;
    r.scale_group = 1;
    w.add(std::move(r));
}

}  // namespace wingspan
