// The gradient rows (all of them, one at a time with the optimizer in backward, the collectives'
// buffers) and the optimizer rows (master weights, moments, paged or offloaded state).
#include <algorithm>
#include <cmath>

#include "state.hpp"

namespace wingspan {

namespace {
std::string n(std::int64_t v) { return format_count(v); }
}  // namespace

void write_gradient_rows(const PlanContext& c, const StateTotals& t, RowWriter& w, StateOnDevice& d) {
    const auto& setup = c.setup;
    const auto& arch = c.arch;
    const auto& fw = c.fw;
    const std::int64_t grads = t.grads;
    const bool tied_trains = arch.tied_embeddings && t.g_head > 0 && (setup.method == Method::Full || setup.train_embeddings);
    // Optimizer in backward (torchtune training/memory.py register_optim_in_bwd_hooks: a
    // post-accumulate-grad hook runs the parameter's step and zero_grad(), which frees the
    // gradient): one gradient at a time, the largest; a tied embedding's is held from the head's
    // backward until the embedding completes it, since the hook fires only once it is accumulated.
    d.in_bwd = setup.optimizer_in_backward && c.trains;
    const std::int64_t tied_in_bwd = d.in_bwd && tied_trains ? arch.vocab * arch.hidden * c.st.grad_of(c.st.weight) : 0;
    d.tied_in_bwd = tied_in_bwd;
    const std::int64_t one_grad = tied_in_bwd > 0 ? t.largest_grad_untied : t.largest_grad;
    if (d.in_bwd)
        d.grads = w.shown(figure(row("gradient being stepped", Component::Gradients, "one tensor", "the largest trainable tensor",
                                     0, c.st.grad_of(c.st.weight),
                                     "optimizer in backward: each gradient is stepped and freed as soon as it is ready "
                                     "(torchtune training/memory.py register_optim_in_bwd_hooks)",
                                     {"technique"}),
                                 one_grad + tied_in_bwd),
                          "optimizer in backward: each gradient is stepped and freed as soon as it is ready, so one is "
                          "alive at a time, the largest (" + n(one_grad) + " B)" +
                              (tied_in_bwd > 0 ? " + the tied embedding's, held until complete (" + n(tied_in_bwd) + " B)" : ""),
                          {{"largest_gradient_bytes", double(one_grad)}, {"tied_embedding_bytes", double(tied_in_bwd)}});
    else
        d.grads = w.shown(
            figure(row("gradients", Component::Gradients, "all layers", "trainable params", d.all_trainable, 0,
                       "one gradient per trainable parameter, in its parameter's dtype, made layer by layer in backward",
                       c.lora ? std::vector<std::string>{"lora"} : std::vector<std::string>{}),
                   grads / c.grad_div),
            (d.all_trainable > 0 && grads % d.all_trainable == 0 ? std::to_string(grads / d.all_trainable) + " B" : "16/32-bit") +
                " × " + n(d.all_trainable) + " trainable params (as their parameters' dtype)" + (c.grad_div > 1 ? c.per_dev : ""),
            {{"bytes_per_param", d.all_trainable > 0 ? double(grads) / double(d.all_trainable) : 0.0},
             {"params", double(d.all_trainable)},
             {"devices", double(c.grad_div)}});
    // Collectives without bf16 (gloo in libtorch 1.13; profile bf16_collectives_in_fp32): bf16
    // gradients are reduced in fp32, so DDP's buckets and ZeRO-2's reduce bucket are fp32 — twice
    // the bf16 bytes they carry — and ZeRO-1 reduces each bf16 gradient through an fp32 copy.
    const bool bf16_grads = (setup.precision == Precision::Bf16Mixed || setup.precision == Precision::Bf16) &&
                            d.all_trainable > 0 && grads == 2 * d.all_trainable;
    const std::int64_t wire = fw.bf16_collectives_in_fp32 && bf16_grads && c.N > 1 ? 2 : 1;
    const std::string wire_note = wire > 1 ? " × 2 (bf16 gradients reduced in fp32: the collectives take no bf16)" : "";
    auto sync_row = [&](const char* name, const char* why) {
        return row(name, Component::Gradients, "global", "", 0, 0, why, {"sharding"});
    };
    if (setup.sharding == Sharding::Ddp && c.N > 1)
        d.sync_buffers = w.shown(figure(sync_row("DDP all-reduce buckets", "DDP reduces the gradients through buckets held throughout"),
                                        grads * wire),
                                 "DDP all-reduce buckets: a second copy of the gradients" + wire_note,
                                 {{"bytes", double(grads)}, {"wire_factor", double(wire)}});
    // wingspan-train's ZeRO-1 (profile zero1_wire_buffer) reduces each gradient in place, one at a
    // time, through a wire buffer the size of the largest (fp32 for bf16 gradients), held throughout.
    if (setup.sharding == Sharding::Zero1 && c.N > 1 && grads > 0 && fw.zero1_wire_buffer)
        d.sync_buffers = w.shown(figure(sync_row("ZeRO-1 wire buffer", "each gradient is reduced through it, one at a time"),
                                        t.largest_grad * wire),
                                 "ZeRO-1 wire buffer: the largest gradient (" + n(t.largest_grad) + " B)" +
                                     (wire > 1 ? " × 2 (in fp32)" : "") + ", held throughout",
                                 {{"largest_gradient_bytes", double(t.largest_grad)}, {"wire_factor", double(wire)}});
    // ZeRO-2 as wingspan-train runs it (DeepSpeed's stage 2 with contiguous gradients works the
    // same way): each gradient, once autograd has made it, is copied into one flat bucket of
    // kGradientBucketBytes (all the gradients, if fewer) and freed; a full bucket is reduced to
    // the devices that own its ranges, each keeping its range in its shard. So beside the shard
    // a device holds the bucket throughout and, during backward, the whole gradient being copied
    // in (the largest one at most); a tied embedding's gradient is also held whole from the
    // head's backward to the embedding's, where it is completed in place.
    if (setup.sharding == Sharding::Zero2 && c.N > 1 && grads > 0) {
        d.zero2_bucket = w.shown(figure(sync_row("ZeRO-2 reduce bucket", "gradients are copied in and reduced to their owners"),
                                        std::min(kGradientBucketBytes, grads) * wire),
                                 "ZeRO-2 reduce bucket: min(" + n(kGradientBucketBytes) + " B, all gradients " + n(grads) +
                                     " B), held throughout" + wire_note,
                                 {{"bucket_bytes", double(kGradientBucketBytes)}, {"gradient_bytes", double(grads)},
                                  {"wire_factor", double(wire)}});
        const std::int64_t tied = tied_trains && fw.tied_grad_in_place ? arch.vocab * arch.hidden * c.st.grad_of(c.st.weight) : 0;
        d.zero2_tied = tied;
        const std::int64_t other = tied > 0 ? t.largest_grad_untied : t.largest_grad;
        d.zero2_in_flight = w.shown(
            figure(sync_row("ZeRO-2 whole gradient in flight", "made whole by autograd before it is copied into the bucket"),
                   other + tied),
            tied > 0 ? "ZeRO-2 whole gradients in flight in backward: the tied embedding's (" + n(tied) +
                           " B, held until the embedding completes it) + the largest other one (" + n(t.largest_grad_untied) +
                           " B) before it is copied into the bucket"
                     : "ZeRO-2 whole gradient in flight in backward: the largest one (" + n(t.largest_grad) +
                           " B) before it is copied into the bucket",
            {{"largest_gradient_bytes", double(other)}, {"tied_embedding_bytes", double(tied)}});
    }
    // After the step, ZeRO-1/-2 send each device's updated range of the parameters to the others in
    // place; where the collectives take no bf16, each bf16 piece (one tensor's part in one device's
    // range) travels through one fp32 buffer the size of the largest tensor (wingspan-train
    // distributed_sync.cpp GradientSync::after_update), a temporary of the optimizer step.
    if ((setup.sharding == Sharding::Zero1 || setup.sharding == Sharding::Zero2) && wire > 1 && grads > 0)
        d.broadcast_piece = w.shown(
            figure(row("ZeRO parameter piece on the wire (fp32)", Component::OptimizerState, "one tensor", "", t.largest_trainable, 4,
                       "the updated bf16 parameters are broadcast piece by piece through one fp32 buffer (the collectives take no bf16)",
                       {"sharding"}),
                   t.largest_trainable * 4),
            "ZeRO parameter broadcast after the step: one fp32 buffer the size of the largest tensor (" + n(t.largest_trainable) +
                " elements) × 4 B (the collectives take no bf16)",
            {{"elements", double(t.largest_trainable)}});
}

void write_optimizer_rows(const PlanContext& c, const StateTotals& t, RowWriter& w, StateOnDevice& d, MemoryEstimate& est) {
    const auto& setup = c.setup;
    const auto& fw = c.fw;
    d.offload = setup.offload && c.trains;
    const std::vector<std::string> lora_tag = c.lora ? std::vector<std::string>{"lora"} : std::vector<std::string>{};
    d.master = w.shown(held(row("master weights", Component::MasterWeights, "all layers", "trainable params", c.trains ? t.master_elems : 0,
                                4, "an fp32 copy of the 16-bit trainables the optimizer steps", lora_tag),
                            t.master / c.opt_div, d.offload),
                       "4 B × " + n(c.trains ? t.master_elems : 0) + " trainable params (fp32 master copy)" +
                           (c.opt_div > 1 ? c.per_dev : ""),
                       {{"bytes_per_param", 4}, {"params", double(c.trains ? t.master_elems : 0)}});
    // Paged optimizers (bitsandbytes/optim/optimizer.py get_state_buffer → F.get_paged, CUDA
    // unified memory): state buffers of tensors with 1e5 elements or more are not device
    // allocations; the driver pages them out to host RAM when the device is full and
    // prefetch_state brings one tensor's back for its update_step. The device keeps the fp32
    // absmax, the small tensors' state and the state of the tensor being stepped.
    // (Unified memory pages between a GPU and its host; a framework that runs only on a CPU or an
    // Apple GPU has no pages to move, and keeps the state where it is.)
    const bool pages_to_host = fw.devices.empty() || std::find(fw.devices.begin(), fw.devices.end(), "gpu") != fw.devices.end();
    const std::int64_t paged_host = d.offload || !pages_to_host ? 0 : t.paged / c.opt_div;
    d.optimizer = w.shown(
        held(row("optimizer state", Component::OptimizerState, "all layers", "trainable params", d.all_trainable, c.st.moment,
                 optimizer_formula(setup.optimizer, c.st.moment), lora_tag),
             (t.optimizer - (paged_host > 0 ? t.paged : 0)) / c.opt_div, d.offload),
        std::string(optimizer_formula(setup.optimizer, c.st.moment)) + ", " + n(d.all_trainable) + " params" +
            (c.opt_div > 1 ? c.per_dev : "") +
            (paged_host > 0 ? " − " + n(paged_host) + " B of paged state buffers (host RAM, below)" : ""),
        paged_host > 0 ? std::map<std::string, double>{{"params", double(d.all_trainable)}, {"paged_bytes", double(paged_host)}}
                       : std::map<std::string, double>{{"params", double(d.all_trainable)}});
    // The data set the training process keeps in RAM as token ids (wingspan-train), when the plan names one.
    if (setup.dataset_tokens > 0 && fw.dataset_bytes_per_token > 0) {
        const auto data = static_cast<std::int64_t>(std::ceil(double(setup.dataset_tokens) * fw.dataset_bytes_per_token +
                                                              double(setup.dataset_examples) * fw.dataset_bytes_per_example));
        est.host_bytes += w.shown(held(row("data set as token ids", Component::FrameworkOverhead, "global", "tokens", setup.dataset_tokens,
                                           fw.dataset_bytes_per_token, "the training process keeps its data set in RAM"),
                                       data, true),
                                  "the data set in host RAM as token ids: " + n(setup.dataset_tokens) + " tokens × " +
                                      n(std::llround(fw.dataset_bytes_per_token)) + " B + " + n(setup.dataset_examples) +
                                      " examples × " + n(std::llround(fw.dataset_bytes_per_example)) + " B",
                                  {{"tokens", double(setup.dataset_tokens)}, {"examples", double(setup.dataset_examples)}});
    }
    if (paged_host > 0) {
        est.host_bytes += w.shown(held(row("paged optimizer state", Component::OptimizerState, "all layers", "", 0, 0,
                                           "bitsandbytes optim/optimizer.py get_state_buffer → F.get_paged: unified memory "
                                           "the driver pages out to host RAM",
                                           {"technique"}),
                                       paged_host, true),
                                  "paged optimizer state: the state buffers of tensors of 1e5 elements or more, in unified "
                                  "memory paged out to host RAM (bitsandbytes get_state_buffer / F.get_paged)",
                                  {{"paged_bytes", double(paged_host)}});
        d.paged_resident = w.shown(figure(row("paged state being stepped", Component::OptimizerState, "one tensor", "", 0, 0,
                                              "bitsandbytes prefetch_state pages one tensor's state back for its step",
                                              {"technique"}),
                                          t.paged_largest),
                                   "paged state of the tensor being stepped, prefetched to the device (bitsandbytes "
                                   "prefetch_state): the largest tensor's " + n(t.paged_largest) + " B",
                                   {{"largest_paged_bytes", double(t.paged_largest)}});
    }
    if (d.offload) {
        // CPU Adam also keeps an fp32 copy of the gradients on the host.
        est.host_bytes = t.master + t.optimizer + 4 * d.all_trainable;
        w.shown(held(row("fp32 gradients on the host", Component::Gradients, "all layers", "trainable params", d.all_trainable, 4,
                         "the CPU optimizer steps from an fp32 copy of the gradients", {"technique"}),
                     4 * d.all_trainable, true),
                "fp32 gradients on the host for the CPU optimizer step", {{"params", double(d.all_trainable)}});
    }
}

}  // namespace wingspan
