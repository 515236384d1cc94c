// The phases of a step, in order, with the rows alive only in one of them.
#include <algorithm>

#include "phases.hpp"

namespace wingspan {

void write_serving_phase(const PhaseInputs& in, RowWriter& w) {
    const auto& a = in.a;
    // ZeRO-3/FSDP gathers one layer's parameters (and prefetches the next).
    const std::int64_t gathered = in.c.param_div > 1 ? 2 * in.t.layer_param_elems * in.c.frozen_bytes : 0;
    // Serving dequantizes one weight at a time for its matmul (none where the kernels read the codes).
    const std::int64_t dequant =
        in.c.quant != Quantization::None ? in.c.fw.dequantized_weight_bytes(in.t.largest_quantized, static_cast<int>(a.e)) : 0;
    w.begin_phase("decode");
    w.moment("decode", Component::KvCache, in.kv_cache, "KV cache", "keys and values of every token of every sequence");
    w.moment("decode", Component::Activations, in.m.forward + gathered + dequant, "prefill workspace",
             "one layer's prefill workspace (+ a gathered layer's parameters, a dequantized weight)");
    w.moment("decode", Component::LogitsLoss, in.loss.forward, "logits", "the logits of the last positions");
}

namespace {

// Gradient bytes alive at each moment of backward.
struct GradientsAt {
    const PhaseInputs& in;
    std::int64_t carried;   // held across steps with accumulation
    // Gradients as backward makes them (all of them throughout with accumulation): the head's
    // first, then layer by layer from the last. DDP's all-reduce buckets (ZeRO-1's wire buffer)
    // and ZeRO-2's shard and bucket are allocated once and held throughout (forward too); ZeRO-2
    // has in backward no more whole gradients than backward has made so far.
    std::int64_t at(std::int64_t bytes) const {
        const auto& d = in.d;
        if (d.in_bwd) return std::min(d.grads, bytes);
        if (d.zero2_bucket > 0) return d.grads + d.zero2_bucket + std::min(d.zero2_in_flight, bytes);
        return std::max(carried, bytes / in.c.grad_div) + d.sync_buffers;
    }
    // Inside a layer's backward (its MLP's or attention's peak), ZeRO-2 holds no whole weight
    // gradient of that layer: the down (or output) projection's is copied into the bucket and
    // freed as its linear's backward returns, before the inner gradients of the activation
    // (or the softmax) that make the peak exist; only a tied embedding's is still held.
    std::int64_t in_layer(std::int64_t bytes) const {
        const auto& d = in.d;
        if (d.zero2_bucket > 0) return d.grads + d.zero2_bucket + std::min(d.zero2_tied, bytes);
        // The step in backward likewise steps and frees it as its linear's backward returns
        // (AccumulateGrad nodes have the highest sequence number and run first: torch/csrc/
        // autograd/functions/accumulate_grad.cpp, Node(UINT64_MAX)); only a tied embedding's is held.
        if (d.in_bwd) return std::min(d.tied_in_bwd, bytes);
        return at(bytes);
    }
    std::int64_t held() const {
        const auto& d = in.d;
        return d.in_bwd ? 0 : d.zero2_bucket > 0 ? d.grads + d.zero2_bucket : carried + d.sync_buffers;
    }
};

// The optimizer step's temporaries (per tensor in backward, or the whole step's).
std::int64_t step_temporaries(const PhaseInputs& in) {
    const auto& c = in.c;
    const auto& d = in.d;
    const auto& setup = c.setup;
    const std::int64_t largest = in.t.largest_trainable;
    const bool adam_like = setup.optimizer == Optimizer::AdamW || setup.optimizer == Optimizer::Adafactor;
    const bool mixed = in.t.master > 0;
    if (d.in_bwd && d.all_trainable > 0) {
        // One parameter's step at a time: per-tensor temporaries unless the step is fused.
        if (c.fw.optimizer_step != "fused" && (adam_like || mixed)) return 4 * largest * (adam_like && mixed ? 2 : 1);
        return 0;
    }
    if (d.offload || d.all_trainable <= 0) return 0;
    if (adam_like) {
        if (c.fw.optimizer_step == "foreach") return 4 * d.all_trainable / c.opt_div;
        if (c.fw.optimizer_step == "per_tensor") return 4 * largest * (mixed ? 2 : 1);
        return 0;
    }
    return mixed && c.fw.optimizer_step != "fused" ? 4 * largest : 0;
}

// One phase: its gradients, step state (optimizer), activations and logits beyond the whole-step rows.
// `paged` of the step state is a paged optimizer's state prefetched for its step: bitsandbytes
// allocates it with cudaMallocManaged (functional.py get_paged → cget_managed_ptr, @0.45.5 lines
// 209-217; csrc/pythonInterface.cpp line 387), outside PyTorch's caching allocator.
void moment(RowWriter& w, const std::string& phase, std::int64_t grads, std::int64_t step, std::int64_t acts,
            std::int64_t logits = 0, std::int64_t paged = 0) {
    w.begin_phase(phase);
    w.moment(phase, Component::Gradients, grads, "gradients alive", "gradients made so far (and the buffers that carry them)");
    w.moment(phase, Component::OptimizerState, step - paged, "optimizer step state", "one step's temporaries");
    if (paged > 0) {
        TensorRow r = row("paged state paged back for the step", Component::OptimizerState, "one tensor", "", 0, 0,
                          "bitsandbytes prefetch_state: one tensor's unified-memory state on the device, allocated outside "
                          "PyTorch's allocator (not in max_memory_allocated)",
                          {"technique"});
        r.bytes = paged;
        r.created = r.freed = phase;
        r.outside_allocator = true;
        w.add(std::move(r));
    }
    w.moment(phase, Component::Activations, acts, "activations alive", "saved tensors not yet freed + this moment's backward");
    w.moment(phase, Component::LogitsLoss, logits, "logits and loss buffers", "the loss's logits (loss_memory.cpp)");
}

// The loss's tensors, one row each: a kept one from the end of forward through the loss's backward,
// the others in the one moment that allocates them. The moments after forward_end in the phase order
// but before the loss (the last layer's forward_attention and forward_down; the head's last matmul,
// forward_head; the model's return, forward_output) take back what is kept and add what is alive
// then: the previous micro-batch's logits in each, a tensor's head_forward or at_return in its own.
// head_backward, after the loss's backward, holds the tensors' head_backward.
void write_loss_rows(const PhaseInputs& in, const std::vector<std::string>& forward_phases, bool head_backward, RowWriter& w) {
    std::int64_t kept = 0;
    auto loss_row = [&](const LossTensor& t, std::int64_t bytes, const std::string& created, const std::string& freed) {
        if (bytes == 0) return;
        TensorRow r = row(t.name, Component::LogitsLoss, "global", "", 0, 0, "the loss's own tensor (loss_memory.cpp)");
        r.bytes = bytes;
        r.created = created;
        r.freed = freed;
        w.add(std::move(r));
    };
    for (const auto& t : in.loss.tensors) {
        if (t.kept) {
            loss_row(t, t.forward, "forward_end", "loss_backward");
            kept += t.forward;
            continue;
        }
        loss_row(t, t.forward, "forward_end", "forward_end");
        loss_row(t, t.backward, "loss_backward", "loss_backward");
    }
    for (const auto& phase : forward_phases) {
        loss_row({"the loss's kept tensors, not made yet"}, -kept, phase, phase);
        for (const auto& t : in.loss.tensors) {
            const std::int64_t bytes = t.through_forward         ? t.at_return
                                       : phase == "forward_head"   ? t.head_forward
                                       : phase == "forward_output" ? t.at_return
                                                                   : 0;
            loss_row(t, bytes, phase, phase);
        }
    }
    if (head_backward)
        for (const auto& t : in.loss.tensors) loss_row(t, t.head_backward, "head_backward", "head_backward");
}

// FSDP2 with a tied embedding: one group, the root, holds the embedding (which is the head) and the
// final norm. Once backward reaches the head it is unsharded again, in the compute dtype, and stays
// so with the head's gradient, which waits in the tied parameter's AccumulateGrad input buffer for the
// embedding's (torch/csrc/autograd/input_buffer.cpp), until the group's post-backward reduce-scatter
// after the embedding's backward. prime-rl 266f5a66a src/prime_rl/trainer/model.py lines 151-195:
// fully_shard on each decoder layer, then on the root, whose own parameters are embed_tokens =
// lm_head and the norm when the embeddings are tied (MixedPrecisionPolicy param_dtype bf16). A head
// that runs its loss inside the model (loss.head_vocab_chunk) needs the unsharded weight already in
// the loss's backward, which also makes its gradient (loss_memory.cpp).
void write_fsdp_root_rows(const PhaseInputs& in, bool tied_trains, bool embedding_phase, const std::string& last,
                          RowWriter& w) {
    const auto& c = in.c;
    const auto& a = in.a;
    if (c.setup.sharding != Sharding::Fsdp || !tied_trains) return;
    const auto& phases = w.inventory().phases;
    const std::string first_layer = w.inventory().has_phase("backward_down_gradient") ? "backward_down_gradient" : "backward";
    const bool head_in_loss = loss_head_vocab_chunk(c.fw) > 0;
    const std::int64_t params = (a.V * a.h + a.h) * a.e, grad = a.V * a.h * a.e;
    TensorRow p = row("FSDP root group unsharded (embedding = head, final norm)", Component::TrainableWeights, "global",
                      "(v·h + h) × compute dtype", a.V * a.h + a.h, double(a.e),
                      "FSDP2 gathers the root group again when backward reaches the head and keeps it until the "
                      "group's post-backward, after the embedding's backward (tied embeddings: one group)",
                      {"sharding"});
    p.bytes = params;
    p.created = head_in_loss ? "loss_backward" : first_layer;
    p.freed = last;
    w.add(p);
    // At the embedding's backward its own row counts the tied gradients (rows_phases: embedding_backward).
    std::string grad_until = last;
    if (embedding_phase) {
        const auto e = std::find(phases.begin(), phases.end(), std::string("embedding_backward"));
        grad_until = e == phases.begin() ? last : *(e - 1);
    }
    TensorRow g = row("FSDP root group's head gradient, waiting for the embedding's", Component::Gradients, "global",
                      "v·h × compute dtype", a.V * a.h, double(a.e),
                      "the tied parameter's AccumulateGrad runs once both uses have their gradient: the head's waits "
                      "in its input buffer through every layer's backward",
                      {"sharding"});
    g.bytes = grad;
    g.created = first_layer;
    g.freed = grad_until;
    w.add(g);
    // The same bytes as terms, so each component's "max over phases" is explained (counted by the rows above).
    const std::string e = std::to_string(a.e) + " B";
    w.shown(figure(row("FSDP root group unsharded in backward", Component::TrainableWeights, "global", "", 0, 0,
                       "the rows above, as a term", {"sharding"}),
                   params),
            "FSDP root group unsharded in backward (tied embedding = head, final norm): (vocab × hidden + hidden) × " + e,
            {{"vocab", double(a.V)}, {"hidden", double(a.h)}});
    w.shown(figure(row("FSDP root group's waiting head gradient", Component::Gradients, "global", "", 0, 0,
                       "the rows above, as a term", {"sharding"}),
                   grad),
            "FSDP root group: the head's gradient waiting in backward for the embedding's: vocab × hidden × " + e,
            {{"vocab", double(a.V)}, {"hidden", double(a.h)}});
}

}  // namespace

void write_training_phases(const PhaseInputs& in, RowWriter& w) {
    const auto& c = in.c;
    const auto& t = in.t;
    const auto& d = in.d;
    const auto& a = in.a;
    const auto& m = in.m;
    const std::int64_t gathered = c.param_div > 1 ? 2 * t.layer_param_elems * c.frozen_bytes : 0;
    const GradientsAt g{in, c.setup.grad_accum > 1 ? d.grads : 0};
    const std::int64_t held_grads = g.held();
    const std::int64_t g_layer = t.g_down + t.g_mlp + t.g_o + t.g_qkv;
    const std::int64_t g_all_but_embed = t.grads - t.g_embed;
    const std::int64_t step_temp = step_temporaries(in);
    // With the step in backward, each backward moment also holds one step's temporaries and the
    // paged state of the tensor being stepped.
    const std::int64_t step_in_bwd = d.in_bwd ? step_temp + d.paged_resident : 0;
    const std::int64_t paged_in_bwd = d.in_bwd ? d.paged_resident : 0;
    const bool tied_trains = c.arch.tied_embeddings && t.g_head > 0 && (c.setup.method == Method::Full || c.setup.train_embeddings);
    const bool embedding_phase = tied_trains && !c.fw.tied_grad_in_place;
    const std::string last = embedding_phase     ? "embedding_backward"
                              : m.raw.bottom_qkv > 0 ? "backward_end_qkv"
                              : a.L > 1              ? (m.bottom_attn > 0 ? "backward_end_attention" : "backward_end")
                                                     : (m.top_attn > 0 ? "backward_attention" : "backward");
    // The saved activations are rows by kind (write_saved_rows), alive from the end of forward to
    // the last backward moment; each backward moment adds its own row (write_backward_row). Here
    // only what a sharded model gathers.
    moment(w, "forward_end", held_grads, 0, gathered);
    std::vector<std::string> forward_phases;
    if (m.forward_attention > 0) forward_phases.push_back("forward_attention");
    if (m.raw.forward_down > 0) forward_phases.push_back("forward_down");
    // The loss's own moments, where above its forward or backward (loss_memory.hpp LossTensor).
    const LossMemory& loss = in.loss;
    if (loss.head_forward + loss.through_forward > loss.forward) forward_phases.push_back("forward_head");
    if (loss.at_return > loss.forward) forward_phases.push_back("forward_output");
    for (const auto& phase : forward_phases) moment(w, phase, held_grads, 0, gathered);
    if (m.raw.forward_down > 0) write_forward_down_row(a, w);
    moment(w, "loss_backward", g.at(t.g_head), step_in_bwd, 0, 0, paged_in_bwd);
    const bool head_backward_phase = loss.head_backward > loss.backward;
    if (head_backward_phase) moment(w, "head_backward", g.at(t.g_head), step_in_bwd, 0, 0, paged_in_bwd);
    // A final norm run as plain fp32 ops: its backward's gradient chain beside every saved tensor,
    // the loss's tensors freed (rows_layer_saved.cpp final_norm_backward).
    if (m.raw.final_norm_backward > 0) {
        moment(w, "final_norm_backward", g.at(t.g_head), step_in_bwd, 0, 0, paged_in_bwd);
        write_backward_row("final_norm_backward", m.raw.saved + a.final_norm_backward, m, w);
    }
    // From the layers' backward on, the final norm's gradient exists beside the head's.
    const std::int64_t g_top = t.g_head + t.g_final_norm;
    write_loss_rows(in, forward_phases, head_backward_phase, w);
    write_saved_rows(c, a, m.forward_attention > 0, last, w);
    // `mlp`: an MLP moment at its inner gradients, which hold the dequantized down projection (its own
    // row) and the rest.
    auto backward = [&](const std::string& phase, std::int64_t grads, std::int64_t step, std::int64_t raw, bool mlp = false) {
        moment(w, phase, grads, step, gathered, 0, step > 0 ? paged_in_bwd : 0);
        if (mlp) write_dequantized_row(phase, a, c, w);
        write_backward_row(phase, raw - (mlp ? a.dequant_at_mlp_moment : 0), m, w);
    };
    // ZeRO-2: the down projection's whole gradient lives only until it is copied into the
    // bucket, while the layer's saved tensors and its input's gradient are alive.
    // The same moment with the step in backward: the down projection's gradient whole, just before its step.
    if (d.zero2_bucket > 0 && d.zero2_in_flight > d.zero2_tied)
        backward("backward_down_gradient", g.at(g_top + t.g_down), 0, m.raw.top_down);
    else if (d.in_bwd && d.grads > d.tied_in_bwd)
        backward("backward_down_gradient", g.at(g_top + t.g_down), step_in_bwd, m.raw.top_down);
    // An MLP's backward: where the MLP output's own norm holds more than the inner gradients, its fp32
    // backward chain is a moment of its own, before the down projection's backward has made that
    // projection's gradients (measured: Gemma 2 QLoRA, checkpointed, fp32); then the inner gradients
    // beside them.
    auto mlp_moment = [&](const std::string& phase, std::int64_t grads_before_down, std::int64_t raw) {
        const std::int64_t inner_raw = raw - (a.mlp_extra - a.mlp_inner_extra);
        if (inner_raw < raw) backward(phase + "_output_norm", g.in_layer(grads_before_down), step_in_bwd, raw);
        backward(phase, g.in_layer(grads_before_down + t.g_down), step_in_bwd, inner_raw, true);
    };
    mlp_moment("backward", g_top, m.raw.top_mlp);
    if (m.top_attn > 0) backward("backward_attention", g.in_layer(g_top + t.g_down + t.g_mlp + t.g_o), step_in_bwd, m.raw.top_attn);
    if (a.L > 1) {
        if (m.raw.second_mlp > 0) mlp_moment("backward_second_layer", g_all_but_embed - 2 * g_layer, m.raw.second_mlp);
        if (m.raw.second_attn > 0)
            backward("backward_second_layer_attention", g.in_layer(g_all_but_embed - g_layer - t.g_qkv), step_in_bwd,
                     m.raw.second_attn);
        mlp_moment("backward_end", g_all_but_embed - g_layer, m.raw.bottom_mlp);
        if (m.bottom_attn > 0) backward("backward_end_attention", g.in_layer(g_all_but_embed - t.g_qkv), step_in_bwd, m.raw.bottom_attn);
        // The first layer's q projection backward: every weight gradient but the embedding's and the first
        // input norm's (rows_layer_saved.cpp qkv_moment).
        if (m.raw.bottom_qkv > 0)
            backward("backward_end_qkv", g.in_layer(g_all_but_embed - t.g_qkv_norm), step_in_bwd, m.raw.bottom_qkv);
    }
    // A tied embedding's dense gradient beside the head's, before autograd adds them: both wait in
    // the AccumulateGrad node's input buffer (torch/csrc/autograd/input_buffer.cpp InputBuffer::add),
    // and the head's weight gradient is a transposed view of its product, so the sum is a third
    // vocab × hidden tensor (aten::add, out of place; measured on torch 2.15 by
    // tests/frameworks/profile_terms.py: 3 × 113 MB alive for a 49,152 × 576 embedding).
    if (embedding_phase) {
        const std::int64_t dense = 2 * a.V * a.h * c.st.grad_of(c.st.weight) / c.grad_div;
        w.shown(figure(row("tied embedding's dense gradients", Component::Gradients, "global", "2·v·h", 2 * a.V * a.h,
                           c.st.grad_of(c.st.weight),
                           "autograd adds the embedding's and the head's gradients out of place "
                           "(torch/csrc/autograd/input_buffer.cpp InputBuffer::add)"),
                       dense),
                "tied embedding: its dense vocab × hidden gradient and their sum beside the head's (2 × vocab × "
                "hidden, autograd adds the two out of place)",
                {{"vocab", double(a.V)}, {"hidden", double(a.h)}});
        moment(w, "embedding_backward", d.grads + d.sync_buffers + d.zero2_bucket + dense, step_in_bwd, 0, 0, paged_in_bwd);
        write_backward_row("embedding_backward", a.inputs + a.G, m, w);
    }
    write_fsdp_root_rows(in, tied_trains, embedding_phase, last, w);
    if (step_temp > 0)
        w.shown(figure(row("optimizer step temporaries", Component::OptimizerState, "one step", "", 0, 4,
                           "what the framework's optimizer step (" + c.fw.optimizer_step + ") allocates beside the state"),
                       step_temp),
                "optimizer step temporaries (" + c.fw.optimizer_step + ")", {{"bytes", double(step_temp)}});
    if (!d.in_bwd) moment(w, "optimizer_step", d.grads + d.sync_buffers + d.zero2_bucket, step_temp + d.paged_resident, 0, 0, d.paged_resident);
    // ZeRO-1/-2's parameter broadcast after the step (rows_gradients.cpp): ZeRO-1 has let its
    // gradients go, ZeRO-2 keeps its (zeroed) shard; the buffers held throughout stay.
    if (d.broadcast_piece > 0)
        moment(w, "parameter_broadcast", (c.setup.sharding == Sharding::Zero1 ? 0 : d.grads) + d.sync_buffers + d.zero2_bucket,
               d.broadcast_piece, 0);
    std::vector<MemoryTerm> objective_terms;
    for (auto& [name, extra] : objective_phases(in.objective, {held_grads, m.forward, in.loss.forward}, objective_terms)) {
        w.begin_phase(name);
        for (const auto& [component, bytes] : extra)
            w.moment(name, component, bytes, "objective's " + std::string(component_name(component)),
                     "the objective's own phase (objective_terms.cpp)", {"objective"});
    }
    w.adopt_terms(objective_terms, "the objective's own term (objective_terms.cpp)");
}

}  // namespace wingspan
