#include "wingspan/memory_model.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "first_layer.hpp"
#include "loss_memory.hpp"
#include "objective_terms.hpp"
#include "storage_terms.hpp"
#include "wingspan/nf4.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/units.hpp"

namespace wingspan {

using nlohmann::json;

namespace {

const char* dtype_label(int bytes) { return bytes == 4 ? "fp32" : bytes == 2 ? "16-bit" : "8-bit"; }

std::string n(std::int64_t v) { return format_count(v); }

struct Sizes {
    std::int64_t b, s, h, q, kv, i, a, L, V, e;
};

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
        if (lora && g.kind == TensorKind::Linear && setup.lora_targets.count(g.role))
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

std::string slack_base_name(const FrameworkProfile& framework) {
    return framework.allocator_slack_of == "transient" ? "the activations and logits" : "the peak";
}

namespace {
// Whether the framework's fused kernels (profile section "kernels") leave this architecture out.
bool fw_kernels_skip(const FrameworkProfile& fw, const Architecture& arch) {
    const auto k = fw.behaviour.find("kernels");
    if (k == fw.behaviour.end() || !k->is_object() || !k->contains("unfused_model_types")) return false;
    for (const auto& t : k->at("unfused_model_types"))
        if (t.is_string() && t.get<std::string>() == arch.model_type) return true;
    return false;
}

// The architecture as the framework builds it: some keep an untied LM head (LitGPT copies the
// tied embedding into lm_head when it converts a checkpoint).
Architecture as_built(const Architecture& arch, const FrameworkProfile& fw) {
    Architecture a = arch;
    const auto model = fw.behaviour.find("model");
    if (model != fw.behaviour.end() && model->value("unties_embeddings", false)) a.tied_embeddings = false;
    return a;
}

// The framework as the setup's techniques run it: --compile turns on the profile's compile
// behaviour (a profile without a compile section has no data on what torch.compile changes, and
// keeps its prediction); --activation-offload keeps the checkpointed layer inputs in host RAM as
// a framework that always does it (Unsloth) — torchtune's OffloadActivations
// (torchtune/training/_activation_offloading.py) moves each saved tensor to pinned host memory in
// forward and brings it back one layer ahead in backward.
FrameworkProfile with_techniques(const FrameworkProfile& fw, const TrainingSetup& setup) {
    FrameworkProfile out = fw;
    if (setup.compile && out.behaviour.contains("compile") && out.behaviour["compile"].is_object())
        out.behaviour["compile"]["enabled"] = true;
    if (setup.activation_offload) out.checkpoint_offload = true;
    return out;
}
}  // namespace

MemoryEstimate estimate_memory(const Architecture& arch_in, const TrainingSetup& asked,
                               const FrameworkProfile& framework_in) {
    const FrameworkProfile fw = with_techniques(framework_in, asked);
    // The rows and sequence one forward of the policy runs under the objective (DPO: chosen and
    // rejected side by side; GRPO: B·G completions of prompt + completion): objective_terms.cpp.
    const ObjectiveShape objective = objective_shape(asked);
    const TrainingSetup setup = forward_setup(asked);
    const Architecture built = as_built(arch_in, fw);
    const Architecture& arch = built;
    require_plan_size_bounded(arch, setup);   // before any product can overflow
    MemoryEstimate est;
    const std::vector<TensorGroup> groups = arch.tensor_groups();
    est.params = count_parameters(arch, setup);
    const bool trains = setup.trains();
    const bool lora = setup.method == Method::Lora || setup.method == Method::Qlora;
    const Quantization quant = setup.effective_quantization();
    const Storage st = resolve_storage(fw, setup);
    // QLoRA preparation may upcast every non-quantized 16-bit parameter to fp32.
    const bool upcast_plain = quant != Quantization::None && setup.method == Method::Qlora && fw.qlora_upcast_non_quantized;
    const int frozen_bytes = upcast_plain ? 4 : st.frozen;
    const std::int64_t Lg = lora ? adapted_layers(arch, setup) : arch.layers;
    const std::int64_t N = std::max<std::int64_t>(1, setup.devices);
    const bool shard_optimizer = setup.sharding == Sharding::Zero1 ||
                                 setup.sharding == Sharding::Zero2 ||
                                 setup.sharding == Sharding::Zero3 || setup.sharding == Sharding::Fsdp;
    const bool shard_grads = setup.sharding == Sharding::Zero2 ||
                             setup.sharding == Sharding::Zero3 || setup.sharding == Sharding::Fsdp;
    const bool shard_params = setup.sharding == Sharding::Zero3 || setup.sharding == Sharding::Fsdp;
    const std::int64_t opt_div = (shard_optimizer && N > 1) ? N : 1;
    const std::int64_t grad_div = (shard_grads && N > 1) ? N : 1;
    const std::int64_t param_div = (shard_params && N > 1) ? N : 1;

    // ---- static state: walk every tensor group once ----
    std::int64_t frozen_plain = 0, frozen_plain_elems = 0;
    std::int64_t packed = 0, constants = 0, quant_elems = 0;
    std::int64_t trainable_w = 0, adapter_w = 0, grads = 0, master = 0, optimizer = 0;
    std::int64_t trainable_elems = 0, adapter_elems = 0, largest_trainable = 0, master_elems = 0;
    std::int64_t largest_adapted = 0;
    // One tensor's gradient, the largest (ZeRO-2's whole gradient in flight); the second figure
    // leaves out a tied embedding, whose gradient is held through the whole backward.
    std::int64_t largest_grad = 0, largest_grad_untied = 0;
    std::int64_t largest_quantized = 0, layer_param_elems = 0, down_quantized = 0;
    // Paged optimizer state (bitsandbytes unified memory): all of it, and the largest tensor's.
    std::int64_t paged = 0, paged_largest = 0;
    // Gradient bytes by when backward makes them (one layer's share for layer tensors): the
    // head and final norm first, then per layer the down projection, the rest of the MLP block
    // with its norm, the output projection, then q/k/v with the input norm; an untied embedding
    // last.
    std::int64_t g_head = 0, g_embed = 0, g_down = 0, g_mlp = 0, g_o = 0, g_qkv = 0;
    const TensorGroup* current_group = nullptr;
    auto add_trainable = [&](std::int64_t rows, std::int64_t cols, std::int64_t count,
                             bool adapter) {
        const std::int64_t el = rows * cols * count;
        const int wb = adapter ? st.adapter : st.weight;
        const int gbytes = st.grad_of(wb);
        (adapter ? adapter_w : trainable_w) += el * wb;
        (adapter ? adapter_elems : trainable_elems) += el;
        grads += el * gbytes;
        if (const TensorGroup* g = current_group) {
            const std::int64_t gb = el * gbytes;
            const bool in_layers = g->name.rfind("layers.", 0) == 0;
            if (!in_layers) {
                (g->kind == TensorKind::Embedding && !arch.tied_embeddings ? g_embed : g_head) += gb;
            } else {
                const std::int64_t per_layer = gb / (adapter ? std::max<std::int64_t>(1, Lg) : arch.layers);
                switch (g->role) {
                    case LinearRole::Down: g_down += per_layer; break;
                    case LinearRole::Gate: case LinearRole::Up: case LinearRole::Router:
                    case LinearRole::SharedGate: g_mlp += per_layer; break;
                    case LinearRole::O: g_o += per_layer; break;
                    case LinearRole::Q: case LinearRole::K: case LinearRole::V: g_qkv += per_layer; break;
                    default:   // norms (and their biases): half before attention, half before the MLP
                        g_mlp += per_layer / 2;
                        g_qkv += per_layer - per_layer / 2;
                        break;
                }
            }
        }
        master += el * st.master_of(wb);
        master_elems += st.master_of(wb) > 0 ? el : 0;
        optimizer += count * optimizer_bytes(setup.optimizer, st.moment, rows, cols);
        paged += count * paged_state_bytes(setup.optimizer, rows, cols);
        paged_largest = std::max(paged_largest, paged_state_bytes(setup.optimizer, rows, cols));
        largest_trainable = std::max(largest_trainable, rows * cols);
        largest_grad = std::max(largest_grad, rows * cols * gbytes);
        if (!(current_group && current_group->kind == TensorKind::Embedding && arch.tied_embeddings))
            largest_grad_untied = std::max(largest_grad_untied, rows * cols * gbytes);
    };
    for (const auto& g : groups) {
        current_group = &g;
        if (g.name.rfind("layers.", 0) == 0) layer_param_elems += g.total_elements() / arch.layers;
        const bool trainable =
            setup.method == Method::Full ||
            (lora && setup.train_embeddings &&
             (g.kind == TensorKind::Embedding || g.kind == TensorKind::Head));
        if (trainable) {
            add_trainable(g.rows, g.cols, g.count, false);
        } else if (quant != Quantization::None &&
                   (g.kind == TensorKind::Linear || (fw.quantizes_embeddings && g.kind == TensorKind::Embedding) ||
                    (fw.quantizes_head && g.kind == TensorKind::Head))) {
            QuantLayout l;
            if (fw.quant_format == "affine") {
                // MLX: bits per value packed in uint32 words, a scale and a bias per group.
                const std::int64_t bits = quant == Quantization::Int8 ? 8 : 4;
                l.packed_bytes = g.elements() * bits / 8;
                l.constant_bytes = (g.elements() + fw.quant_group - 1) / fw.quant_group * fw.quant_constant_bytes;
            } else {
                l = quant == Quantization::Int8 ? int8_layout(g.rows, g.cols)
                                                : nf4_layout(g.elements(), quant == Quantization::Nf4DoubleQuant);
            }
            packed += l.packed_bytes * g.count;
            constants += l.constant_bytes * g.count;
            quant_elems += g.total_elements();
            largest_quantized = std::max(largest_quantized, g.elements());
            if (g.role == LinearRole::Down) down_quantized = std::max(down_quantized, g.elements());
        } else {
            frozen_plain += g.total_elements() * frozen_bytes;
            frozen_plain_elems += g.total_elements();
        }
        if (lora && g.kind == TensorKind::Linear && setup.lora_targets.count(g.role)) {
            const std::int64_t adapted = adapted_count(arch, setup, g);
            add_trainable(setup.lora_rank, g.cols, adapted, true);   // A: r x d_in
            add_trainable(g.rows, setup.lora_rank, adapted, true);   // B: d_out x r
            if (setup.dora) add_trainable(g.rows, 1, adapted, true);   // DoRA magnitude per output row
            largest_adapted = std::max(largest_adapted, g.elements());
        }
    }
    est.params.quantized = quant_elems;
    if (!trains) trainable_w = grads = master = optimizer = paged = paged_largest = 0;

    auto term = [&](Component c, std::int64_t bytes, std::string formula,
                    std::map<std::string, double> inputs, bool host = false) {
        if (bytes > 0) est.terms.push_back({c, bytes, std::move(formula), std::move(inputs), host});
        return bytes;
    };
    const std::string per_dev = N > 1 ? " / " + std::to_string(N) + " devices" : "";

    // Weights. Frozen and quantized weights shard only under ZeRO-3/FSDP.
    const std::int64_t frozen_dev =
        term(Component::FrozenWeights, frozen_plain / param_div,
             std::to_string(frozen_bytes) + " B × " + n(frozen_plain_elems) + " frozen params (" +
                 dtype_label(frozen_bytes) + (quant != Quantization::None ? ", not quantized: embeddings, head, norms, biases" : "") +
                 (upcast_plain ? "; upcast to fp32 by the QLoRA preparation" : "") +
                 ")" + (param_div > 1 ? per_dev : ""),
             {{"bytes_per_param", frozen_bytes}, {"params", double(frozen_plain_elems)}, {"devices", double(param_div)}});
    std::int64_t packed_dev = 0, constants_dev = 0;
    if (quant != Quantization::None) {
        const bool int8 = quant == Quantization::Int8;
        packed_dev = term(Component::FrozenWeights, packed / param_div,
                          std::string(int8 ? "1 B" : "0.5 B") + " × " + n(quant_elems) + " " +
                              quantization_label(setup, fw) + " params (packed codes)" +
                              (param_div > 1 ? per_dev : ""),
                          {{"params", double(quant_elems)}, {"bytes_per_param", int8 ? 1.0 : 0.5}});
        constants_dev = term(
            Component::QuantConstants, constants / param_div,
            fw.quant_format == "affine"
                ? std::to_string(fw.quant_constant_bytes) + " B scale + bias per " + std::to_string(fw.quant_group) +
                      "-value group (" + n((quant_elems + fw.quant_group - 1) / fw.quant_group) + " groups)"
            : int8 ? "4 B fp32 scale per output row"
                 : quant == Quantization::Nf4DoubleQuant
                       ? "double quant: 1 B per 64-value block + 4 B per 256 blocks (" +
                             n(quant_elems / kNf4BlockSize) + " blocks)"
                       : "4 B fp32 absmax per 64-value block (" + n(quant_elems / kNf4BlockSize) +
                             " blocks)",
            {{"params", double(quant_elems)}, {"block", double(kNf4BlockSize)}});
    }
    // QLoRA set-up that leaves extra copies of the token embedding on the device (LitGPT swaps in
    // a StableEmbedding: the old one stays referenced, the new one has a gradient no optimizer
    // clears): count × vocab × hidden in the frozen dtype, held from the first step on.
    std::int64_t embedding_copies_dev = 0;
    if (const auto q = fw.behaviour.find("qlora");
        q != fw.behaviour.end() && quant != Quantization::None && setup.method == Method::Qlora) {
        const std::int64_t copies = q->value("extra_embedding_copies", std::int64_t(0));
        if (copies > 0)
            embedding_copies_dev = term(Component::FrozenWeights, copies * arch.vocab * arch.hidden * st.frozen,
                                        std::to_string(copies) + " extra copies of the embedding (" + n(arch.vocab) +
                                            " × " + n(arch.hidden) + " × " + std::to_string(st.frozen) +
                                            " B) left by the framework's QLoRA set-up",
                                        {{"copies", double(copies)}, {"vocab", double(arch.vocab)}, {"hidden", double(arch.hidden)}});
    }
    const std::int64_t adapters_dev =
        term(Component::Adapters, adapter_w,
             std::to_string(st.adapter) + " B × " + n(adapter_elems) + " adapter params (" + dtype_label(st.adapter) +
                 ", rank " + std::to_string(setup.lora_rank) + ", r·(d_in+d_out)" + (setup.dora ? " + d_out DoRA magnitude" : "") +
                 " per targeted linear: " + targets_to_string(setup.lora_targets) +
                 (Lg < arch.layers ? ", last " + std::to_string(Lg) + " of " + std::to_string(arch.layers) + " layers" : "") + ")",
             {{"bytes_per_param", st.adapter}, {"params", double(adapter_elems)}, {"rank", double(setup.lora_rank)}});
    const std::int64_t trainable_dev =
        term(Component::TrainableWeights, trainable_w / param_div,
             std::to_string(st.weight) + " B × " + n(trainable_elems) + " trainable params (" +
                 dtype_label(st.weight) + ")" + (param_div > 1 ? per_dev : ""),
             {{"bytes_per_param", st.weight}, {"params", double(trainable_elems)}});
    const std::int64_t all_trainable = trains ? trainable_elems + adapter_elems : 0;
    // Optimizer in backward (torchtune training/memory.py register_optim_in_bwd_hooks: a
    // post-accumulate-grad hook runs the parameter's step and zero_grad(), which frees the
    // gradient): one gradient at a time, the largest; a tied embedding's is held from the head's
    // backward until the embedding completes it, since the hook fires only once it is accumulated.
    const bool in_bwd = setup.optimizer_in_backward && trains;
    const std::int64_t tied_in_bwd = in_bwd && arch.tied_embeddings && g_head > 0 &&
                                             (setup.method == Method::Full || setup.train_embeddings)
                                         ? arch.vocab * arch.hidden * st.grad_of(st.weight)
                                         : 0;
    const std::int64_t grads_dev =
        in_bwd ? term(Component::Gradients, (tied_in_bwd > 0 ? largest_grad_untied : largest_grad) + tied_in_bwd,
                      "optimizer in backward: each gradient is stepped and freed as soon as it is ready, so one is "
                      "alive at a time, the largest (" + n(tied_in_bwd > 0 ? largest_grad_untied : largest_grad) + " B)" +
                          (tied_in_bwd > 0 ? " + the tied embedding's, held until complete (" + n(tied_in_bwd) + " B)" : ""),
                      {{"largest_gradient_bytes", double(tied_in_bwd > 0 ? largest_grad_untied : largest_grad)},
                       {"tied_embedding_bytes", double(tied_in_bwd)}})
               :
        term(Component::Gradients, grads / grad_div,
             (all_trainable > 0 && grads % all_trainable == 0 ? std::to_string(grads / all_trainable) + " B"
                                                              : "16/32-bit") +
                 " × " + n(all_trainable) + " trainable params (as their parameters' dtype)" +
                 (grad_div > 1 ? per_dev : ""),
             {{"bytes_per_param", all_trainable > 0 ? double(grads) / double(all_trainable) : 0.0}, {"params", double(all_trainable)}, {"devices", double(grad_div)}});
    // Collectives without bf16 (gloo in libtorch 1.13; profile bf16_collectives_in_fp32): bf16
    // gradients are reduced in fp32, so DDP's buckets and ZeRO-2's reduce bucket are fp32 — twice
    // the bf16 bytes they carry — and ZeRO-1 reduces each bf16 gradient through an fp32 copy.
    const bool bf16_grads = (setup.precision == Precision::Bf16Mixed || setup.precision == Precision::Bf16) &&
                            all_trainable > 0 && grads == 2 * all_trainable;
    const std::int64_t wire = fw.bf16_collectives_in_fp32 && bf16_grads && N > 1 ? 2 : 1;
    const std::string wire_note = wire > 1 ? " × 2 (bf16 gradients reduced in fp32: the collectives take no bf16)" : "";
    std::int64_t sync_buffers = 0;   // DDP's buckets or ZeRO-1's wire buffer, held throughout
    if (setup.sharding == Sharding::Ddp && N > 1)
        sync_buffers = term(Component::Gradients, grads * wire,
                           "DDP all-reduce buckets: a second copy of the gradients" + wire_note,
                           {{"bytes", double(grads)}, {"wire_factor", double(wire)}});
    // wingspan-train's ZeRO-1 (profile zero1_wire_buffer) reduces each gradient in place, one at a
    // time, through a wire buffer the size of the largest (fp32 for bf16 gradients), held throughout.
    if (setup.sharding == Sharding::Zero1 && N > 1 && grads > 0 && fw.zero1_wire_buffer)
        sync_buffers = term(Component::Gradients, largest_grad * wire,
                            "ZeRO-1 wire buffer: the largest gradient (" + n(largest_grad) + " B)" +
                                (wire > 1 ? " × 2 (in fp32)" : "") + ", held throughout",
                            {{"largest_gradient_bytes", double(largest_grad)}, {"wire_factor", double(wire)}});
    // ZeRO-2 as wingspan-train runs it (DeepSpeed's stage 2 with contiguous gradients works the
    // same way): each gradient, once autograd has made it, is copied into one flat bucket of
    // kGradientBucketBytes (all the gradients, if fewer) and freed; a full bucket is reduced to
    // the devices that own its ranges, each keeping its range in its shard. So beside the shard
    // a device holds the bucket throughout and, during backward, the whole gradient being copied
    // in (the largest one at most); a tied embedding's gradient is also held whole from the
    // head's backward to the embedding's, where it is completed in place.
    std::int64_t zero2_bucket = 0, zero2_in_flight = 0, zero2_tied = 0;
    if (setup.sharding == Sharding::Zero2 && N > 1 && grads > 0) {
        zero2_bucket = term(Component::Gradients, std::min(kGradientBucketBytes, grads) * wire,
                            "ZeRO-2 reduce bucket: min(" + n(kGradientBucketBytes) + " B, all gradients " + n(grads) +
                                " B), held throughout" + wire_note,
                            {{"bucket_bytes", double(kGradientBucketBytes)}, {"gradient_bytes", double(grads)},
                             {"wire_factor", double(wire)}});
        const bool tied_held = arch.tied_embeddings && fw.tied_grad_in_place && g_head > 0 &&
                               (setup.method == Method::Full || setup.train_embeddings);
        const std::int64_t tied = tied_held ? arch.vocab * arch.hidden * st.grad_of(st.weight) : 0;
        zero2_tied = tied;
        zero2_in_flight = term(Component::Gradients, (tied > 0 ? largest_grad_untied : largest_grad) + tied,
                               tied > 0 ? "ZeRO-2 whole gradients in flight in backward: the tied embedding's (" + n(tied) +
                                              " B, held until the embedding completes it) + the largest other one (" +
                                              n(largest_grad_untied) + " B) before it is copied into the bucket"
                                        : "ZeRO-2 whole gradient in flight in backward: the largest one (" + n(largest_grad) +
                                              " B) before it is copied into the bucket",
                               {{"largest_gradient_bytes", double(tied > 0 ? largest_grad_untied : largest_grad)},
                                {"tied_embedding_bytes", double(tied)}});
    }
    const bool offload = setup.offload && trains;
    const std::int64_t master_dev =
        term(Component::MasterWeights, master / opt_div,
             "4 B × " + n(trains ? master_elems : 0) + " trainable params (fp32 master copy)" +
                 (opt_div > 1 ? per_dev : ""),
             {{"bytes_per_param", 4}, {"params", double(trains ? master_elems : 0)}}, offload);
    // Paged optimizers (bitsandbytes/optim/optimizer.py get_state_buffer → F.get_paged, CUDA
    // unified memory): state buffers of tensors with 1e5 elements or more are not device
    // allocations; the driver pages them out to host RAM when the device is full and
    // prefetch_state brings one tensor's back for its update_step. The device keeps the fp32
    // absmax, the small tensors' state and the state of the tensor being stepped.
    // (Unified memory pages between a GPU and its host; a framework that runs only on a CPU or an
    // Apple GPU has no pages to move, and keeps the state where it is.)
    const bool pages_to_host = fw.devices.empty() || std::find(fw.devices.begin(), fw.devices.end(), "gpu") != fw.devices.end();
    const std::int64_t paged_host = offload || !pages_to_host ? 0 : paged / opt_div;
    const std::int64_t optimizer_dev =
        term(Component::OptimizerState, (optimizer - (paged_host > 0 ? paged : 0)) / opt_div,
             std::string(optimizer_formula(setup.optimizer, st.moment)) + ", " + n(all_trainable) +
                 " params" + (opt_div > 1 ? per_dev : "") +
                 (paged_host > 0 ? " − " + n(paged_host) + " B of paged state buffers (host RAM, below)" : ""),
             paged_host > 0 ? std::map<std::string, double>{{"params", double(all_trainable)}, {"paged_bytes", double(paged_host)}}
                            : std::map<std::string, double>{{"params", double(all_trainable)}},
             offload);
    // The data set the training process keeps in RAM as token ids (wingspan-train), when the plan names one.
    if (setup.dataset_tokens > 0 && fw.dataset_bytes_per_token > 0) {
        const auto data = static_cast<std::int64_t>(std::ceil(double(setup.dataset_tokens) * fw.dataset_bytes_per_token +
                                                              double(setup.dataset_examples) * fw.dataset_bytes_per_example));
        est.host_bytes += term(Component::FrameworkOverhead, data,
                               "the data set in host RAM as token ids: " + n(setup.dataset_tokens) + " tokens × " +
                                   n(std::llround(fw.dataset_bytes_per_token)) + " B + " + n(setup.dataset_examples) +
                                   " examples × " + n(std::llround(fw.dataset_bytes_per_example)) + " B",
                               {{"tokens", double(setup.dataset_tokens)}, {"examples", double(setup.dataset_examples)}},
                               true);
    }
    std::int64_t paged_resident = 0;
    if (paged_host > 0) {
        est.host_bytes += term(Component::OptimizerState, paged_host,
                               "paged optimizer state: the state buffers of tensors of 1e5 elements or more, in unified "
                               "memory paged out to host RAM (bitsandbytes get_state_buffer / F.get_paged)",
                               {{"paged_bytes", double(paged_host)}}, true);
        paged_resident = term(Component::OptimizerState, paged_largest,
                              "paged state of the tensor being stepped, prefetched to the device (bitsandbytes "
                              "prefetch_state): the largest tensor's " + n(paged_largest) + " B",
                              {{"largest_paged_bytes", double(paged_largest)}});
    }
    if (offload) {
        // CPU Adam also keeps an fp32 copy of the gradients on the host.
        est.host_bytes = master + optimizer + 4 * all_trainable;
        term(Component::Gradients, 4 * all_trainable, "fp32 gradients on the host for the CPU optimizer step",
             {{"params", double(all_trainable)}}, true);
    }

    // ---- activations ----
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
    auto scaled = [&](std::int64_t bytes) {
        return static_cast<std::int64_t>(std::llround(double(bytes) * act_factor));
    };

    // Tensors one decoder layer saves for backward. A norm keeps its input upcast to fp32 (in an
    // fp32 run the input itself, which is the residual stream), the fp32 reciprocal rms per
    // token and its output; a trainable norm weight also keeps the normalized input it
    // multiplies; some runtimes keep x² for the mean's backward too.
    // Compiled (the framework runs torch.compile, profile section "compile"): the partitioner
    // recomputes pointwise ops in backward, so a norm keeps only its 16-bit input and rstd, a gated
    // MLP its gate and up. The framework's own fused kernels (section "kernels") keep as little.
    const bool recompute_pointwise = behaviour_flag(fw, "compile", "enabled") && behaviour_flag(fw, "compile", "recomputes_pointwise");
    // A framework's fused kernels may cover only some architectures (kernels.unfused_model_types:
    // wingspan-train runs Gemma's (1 + weight) norm and GELU gate as plain ops).
    const bool fused_arch = !fw_kernels_skip(fw, arch);
    const bool kernel_norm = fused_arch && behaviour_flag(fw, "kernels", "norm_saves_input_only");
    const bool kernel_swiglu = fused_arch && behaviour_flag(fw, "kernels", "gated_mlp_saves_gate_up");
    // The gate activation times up as one op that keeps gate and up (the down projection still
    // keeps the product, its input): three b·s·i tensors instead of four.
    const bool kernel_gated_act = fused_arch && behaviour_flag(fw, "kernels", "gated_activation_saves_gate_up");
    // The norm's weight gradient recomputed from the kept input and rstd: no normalized copy.
    const bool norm_recomputes = kernel_norm && behaviour_flag(fw, "kernels", "norm_recomputes_normalized");
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
    const bool math_sdpa = setup.attention == Attention::Sdpa && behaviour_flag(fw, "attention", "sdpa_runs_math");
    // A framework that hands SDPA the grouped KV heads (enable_gqa) instead of repeating them first. Only
    // for unpadded SFT batches: TRL pads preference and GRPO batches, and with an attention mask
    // transformers repeats K/V (integrations/sdpa_attention.py use_gqa_in_sdpa).
    const bool sdpa_grouped = setup.attention == Attention::Sdpa && !math_sdpa && kvd < qd &&
                              setup.objective.kind == Objective::Sft && behaviour_flag(fw, "attention", "sdpa_grouped_kv");
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
    const std::int64_t eager_ws = trains && behaviour_flag(fw, "attention", "eager_scores_workspace") && scores > 0 ? scores * e : 0;
    const std::int64_t flash_ws = trains && behaviour_flag(fw, "attention", "flash_backward_workspace") && flash_kernel
                                      ? bs * qd * 4 + b * heads * s * 4 + (grouped_kernel ? 2 * bs * qd * e : 0)
                                      : 0;
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
    const bool keeps_quant_inputs = behaviour_flag(fw, "qlora", "keeps_linear_inputs") && setup.method == Method::Qlora &&
                                    quant != Quantization::None;
    const std::int64_t quant_inputs_saved = keeps_quant_inputs ? bs * (2 * h + qd + inner) * e : 0;
    // The opposite (profile qlora.quantized_linear_keeps_no_input): wingspan-train's 4-bit linear
    // keeps no input, where libtorch 1.13's frozen mm keeps its own. A linear's input then stays
    // only for an adapter's A product on it, which keeps it (with dropout the dropped copy instead,
    // counted in lora_saved). Terms that hold no linear input (a fused kernel's out, the gate and up
    // of SwiGLU) are left alone.
    const bool graph_attention = setup.attention == Attention::Eager || math_sdpa;
    LinearInputsKept kept;
    if (behaviour_flag(fw, "qlora", "quantized_linear_keeps_no_input") && setup.method == Method::Qlora &&
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
    // Beside the layers: the final norm, the token ids and labels (int64), the rotary cos/sin
    // (per sequence, as HF builds them from position ids; wingspan-train shares one table).
    // A framework that builds cos/sin from position ids of one row (HF: position_ids =
    // cache_position.unsqueeze(0) when none are passed) keeps one s·head_dim table for the batch.
    const std::int64_t rotary_rows = behaviour_flag(fw, "model", "rotary_table_once") ? s : bs;
    const std::int64_t inputs = bs * 16 + (arch.learned_positions ? 0 : 2 * rotary_rows * arch.head_dim * e);
    // Autograd keeps the final norm's output only for a head that trains (F.linear saves its input for
    // the weight's gradient); a frozen head (LoRA, QLoRA) needs no copy of it. Fused norm kernels and
    // compiled graphs keep what their own profiles say.
    // (Beyond SFT, TRL's fused log-prob head keeps the hidden states it multiplies: profile objective.fused_logprob_head.)
    const bool fused_logprob_head =
        setup.objective.kind != Objective::Sft && behaviour_flag(fw, "objective", "fused_logprob_head");
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
    const std::int64_t dequant_down = quant != Quantization::None && fw.quant_format != "affine" ? down_quantized * e : 0;
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

    std::int64_t act_forward = 0, act_top = 0, act_bottom = 0;
    std::int64_t act_top_mlp = 0, act_top_attn = 0, act_bottom_mlp = 0, act_bottom_attn = 0, act_forward_attention = 0;
    // The top layer's down projection as its backward returns: what the layer saved and the
    // gradient of the down projection's input (the moment its weight gradient exists whole).
    std::int64_t act_top_down = 0;
    std::string act_formula;
    if (!trains) {
        // Serving: one layer's prefill workspace, nothing kept across layers.
        act_forward = act_top = act_bottom =
            scaled(bs * (2 * h + 2 * inner + qd + 2 * kvd) * e +
                   (setup.attention == Attention::Eager ? b * heads * s * s * 4 : 0));
        act_formula = "prefill workspace of one layer: b·s·(2h + 2i + q_dim + 2·kv_dim)·" +
                      std::to_string(e) + " B";
    } else {
        std::int64_t top_base = 0, bottom_base = 0;
        if (ckpt) {
            // Every layer's input (and its checkpoint state) is kept; backward recomputes one
            // layer at a time, whose output and the checkpoint's own state are alive beside it.
            // Layers before the first adapted one need no gradient and keep nothing. With
            // offloaded checkpoints the inputs live in host RAM; one is on the device at a time.
            const std::int64_t kept_all = Lsaved * (layer_input + ckpt_state);
            const std::int64_t kept = fw.checkpoint_offload ? layer_input + Lsaved * ckpt_state : kept_all;
            if (fw.checkpoint_offload) est.host_bytes += Lsaved * layer_input;
            // fp32, or a fused norm that keeps its input as it is: the norm keeps the kept input.
            const std::int64_t shared_input = e >= 4 || kernel_norm ? layer_input : 0;
            const std::int64_t recomputed = layer_saved - shared_input + layer_input + ckpt_state + G;
            act_forward = kept + outside_layers + ckpt_mask;
            top_base = kept + inputs + ckpt_mask + recomputed;
            // (the checkpoint states live as long as the graph, not as long as the inputs)
            bottom_base = layer_input + Lsaved * ckpt_state + inputs + ckpt_mask + recomputed;
            act_formula = "checkpointing: " + std::to_string(Lsaved) + " layers × b·s·h·" + std::to_string(e) +
                          " B kept (" + n(layer_input) + " B each" + (fw.checkpoint_offload ? ", offloaded to host RAM" : "") +
                          ") + one layer recomputed in backward (" +
                          n(layer_saved) + " B: norms 2×" + norm_desc + "; attention " + n(attn_saved) + " [" +
                          attn_desc + "]; MLP " + n(mlp_saved) + (lora_saved ? "; LoRA " + n(lora_saved) : "") +
                          (quant_inputs_saved ? "; 4-bit linears' inputs kept by bitsandbytes " + n(quant_inputs_saved) : "") + unkept_desc +
                          ") + its backward";
        } else {
            act_forward = first_layer_saved + (Lsaved - 1) * layer_saved + outside_layers;
            top_base = act_forward - norm_saved + G;
            bottom_base = first_layer_saved + inputs + G;
            act_formula = std::to_string(Lsaved) + " layers × " + n(layer_saved) + " B saved per layer (norms 2×" +
                          norm_desc + "; attention " + n(attn_saved) + " [" + attn_desc + "]; MLP " +
                          n(mlp_saved) + (lora_saved ? "; LoRA " + n(lora_saved) : "") +
                          (quant_inputs_saved ? "; 4-bit linears' inputs kept by bitsandbytes " + n(quant_inputs_saved) : "") + unkept_desc + ")" +
                          (first_norm_outside ? ", the first adapted layer keeping only what follows its first adapter (" +
                                                            n(layer_saved - first_layer_saved) + " B less)"
                                                      : "") +
                          " + the backward of one layer";
        }
        // The flash backward of one layer's attention: its workspace and the q, k, v gradients,
        // once the MLP block, its norm and the output projection's adapter input are freed.
        const std::int64_t flash_extra = flash_ws > 0 ? flash_ws + bs * (qd + 2 * kvd) * e -
                                                            (mlp_saved + lora_mlp + norm_saved + lora_o) +
                                                            (unkept_product + unkept_post_norm) + (ckpt ? G : 0)
                                                      : 0;
        if (eager_ws > 0)   // the last layer's attention in forward: its MLP block and the final norm not yet run
            act_forward_attention = scaled(act_forward + eager_ws +
                                           (ckpt ? scores * score_bytes : -(mlp_saved - unkept_product + lora_mlp + norm_saved)));
        act_top_mlp = scaled(top_base + mlp_extra);
        act_top_down = std::min(act_top_mlp, scaled(top_base + inner_grad));
        act_bottom_mlp = scaled(bottom_base + mlp_extra);
        act_top_attn = attn_moment ? scaled(top_base + attn_extra) : flash_ws > 0 ? scaled(top_base + flash_extra) : 0;
        act_bottom_attn = attn_moment ? scaled(bottom_base + attn_extra) : flash_ws > 0 ? scaled(bottom_base + flash_extra) : 0;
        act_forward = scaled(act_forward);
        act_top = std::max(act_top_mlp, act_top_attn);
        act_bottom = std::max(act_bottom_mlp, act_bottom_attn);
    }
    std::map<std::string, double> act_inputs = {
        {"batch", double(b)}, {"seq", double(s)}, {"hidden", double(h)}, {"layers", double(L)},
        {"intermediate", double(inner)}, {"heads", double(heads)}, {"bytes_per_value", double(e)},
        {"framework_factor", act_factor}};
    const std::int64_t act_loss_backward = trains ? act_forward + scaled(G) : act_forward;
    term(Component::Activations, std::max({act_forward, act_forward_attention, act_loss_backward, act_top, act_bottom}),
         act_formula, act_inputs);
    if (eager_ws > 0)
        term(Component::Activations, eager_ws,
             "attention workspace (eager, forward): the masked scores b·heads·s²·" + std::to_string(e) + " B (" +
                 std::to_string(b) + "·" + std::to_string(heads) + "·" + n(s) + "²) beside the fp32 softmax",
             {{"batch", double(b)}, {"heads", double(heads)}, {"seq", double(s)}, {"bytes_per_value", double(e)}});
    if (flash_ws > 0)
        term(Component::Activations, flash_ws,
             "attention workspace (flash backward): fp32 dq accumulator b·s·q_dim·4 B + b·heads·s·4 B" +
                 std::string(grouped_kernel ? " + dk, dv expanded to every query head 2·b·s·q_dim·" + std::to_string(e) + " B" : ""),
             {{"tokens", double(bs)}, {"q_dim", double(qd)}, {"heads", double(heads)}, {"kv_dim", double(kvd)}});

    // ---- logits and loss (loss_memory.cpp) ----
    const LossMemory loss =
        loss_memory(fw, setup, LossShape{b, b * objective.logit_positions, V, h, e, quant != Quantization::None});
    const std::int64_t logits_forward = loss.forward, logits_backward = loss.backward;
    term(Component::LogitsLoss, std::max(logits_forward, logits_backward), loss.formula,
         {{"tokens", double(loss.tokens)}, {"vocab", double(V)}});

    // ---- KV cache (serving) ----
    std::int64_t kv_cache = 0;
    if (!trains)
        kv_cache = term(Component::KvCache, 2 * L * kvd * s * b * e,
                        "2 (k, v) × " + std::to_string(L) + " layers × " + n(kvd) + " kv_dim × " +
                            n(s) + " tokens × " + std::to_string(b) + " sequences × " +
                            std::to_string(e) + " B",
                        {{"layers", double(L)}, {"kv_dim", double(kvd)}, {"context", double(s)}, {"batch", double(b)}});

    // ---- phases ----
    const ObjectiveInputs objective_in{arch, asked, objective, frozen_dev + packed_dev + constants_dev + trainable_dev, e, inner,
                                       behaviour_flag(fw, "objective", "reference_before_policy")};
    const std::int64_t reference_dev = reference_weights(objective_in, est.terms);
    const std::int64_t master_on_dev = offload ? 0 : master_dev;
    const std::int64_t optimizer_on_dev = offload ? 0 : optimizer_dev;
    std::map<Component, std::int64_t> base = {
        {Component::FrozenWeights, frozen_dev + packed_dev + embedding_copies_dev},
        {Component::QuantConstants, constants_dev},
        {Component::Adapters, adapters_dev},
        {Component::TrainableWeights, trainable_dev},
        {Component::ReferenceModel, reference_dev},
        {Component::MasterWeights, master_on_dev},
        {Component::OptimizerState, optimizer_on_dev},
    };
    // ZeRO-3/FSDP gathers one layer's parameters (and prefetches the next).
    const std::int64_t gathered = param_div > 1 ? 2 * layer_param_elems * frozen_bytes : 0;
    const std::int64_t carried_grads = setup.grad_accum > 1 ? grads_dev : 0;
    auto phase = [&](std::string name, std::map<Component, std::int64_t> extra) {
        Phase p{std::move(name), base};
        for (auto& [c, v] : extra) p.bytes[c] += v;
        for (auto it = p.bytes.begin(); it != p.bytes.end();)
            it = it->second == 0 ? p.bytes.erase(it) : std::next(it);
        est.phases.push_back(std::move(p));
    };
    if (!trains) {
        // Serving dequantizes one weight at a time for its matmul.
        const std::int64_t dequant = quant != Quantization::None ? largest_quantized * e : 0;
        phase("decode", {{Component::KvCache, kv_cache},
                         {Component::Activations, act_forward + gathered + dequant},
                         {Component::LogitsLoss, logits_forward}});
    } else {
        // Gradients as backward makes them (all of them throughout with accumulation): the
        // head's first, then layer by layer from the last; the gradient bytes alive in the
        // last layer's backward grow while its saved activations shrink, so the peak of a
        // backward pass is in its first or its last layer.
        // DDP's all-reduce buckets (ZeRO-1's wire buffer) and ZeRO-2's shard and bucket are allocated once and held
        // throughout (forward too); ZeRO-2 has in backward no more whole gradients than backward
        // has made so far.
        auto grads_at = [&](std::int64_t bytes) {
            if (in_bwd) return std::min(grads_dev, bytes);
            if (zero2_bucket > 0) return grads_dev + zero2_bucket + std::min(zero2_in_flight, bytes);
            return std::max(carried_grads, bytes / grad_div) + sync_buffers;
        };
        // Inside a layer's backward (its MLP's or attention's peak), ZeRO-2 holds no whole weight
        // gradient of that layer: the down (or output) projection's is copied into the bucket and
        // freed as its linear's backward returns, before the inner gradients of the activation
        // (or the softmax) that make the peak exist; only a tied embedding's is still held.
        auto grads_in_layer = [&](std::int64_t bytes) {
            if (zero2_bucket > 0) return grads_dev + zero2_bucket + std::min(zero2_tied, bytes);
            // The step in backward likewise steps and frees it as its linear's backward returns
            // (AccumulateGrad nodes have the highest sequence number and run first: torch/csrc/
            // autograd/functions/accumulate_grad.cpp, Node(UINT64_MAX)); only a tied embedding's is held.
            if (in_bwd) return std::min(tied_in_bwd, bytes);
            return grads_at(bytes);
        };
        const std::int64_t held_grads = in_bwd            ? 0
                                        : zero2_bucket > 0 ? grads_dev + zero2_bucket
                                                           : carried_grads + sync_buffers;
        const std::int64_t g_layer = g_down + g_mlp + g_o + g_qkv;
        const std::int64_t g_all_but_embed = grads - g_embed;
        std::int64_t step_temp = 0;
        if (in_bwd && all_trainable > 0) {
            // One parameter's step at a time: per-tensor temporaries unless the step is fused.
            const bool adam_like = setup.optimizer == Optimizer::AdamW || setup.optimizer == Optimizer::Adafactor;
            if (fw.optimizer_step != "fused" && (adam_like || master > 0))
                step_temp = 4 * largest_trainable * (adam_like && master > 0 ? 2 : 1);
        } else if (!offload && all_trainable > 0) {
            const int temp_per_el = 4;
            const bool mixed = master > 0;
            if (setup.optimizer == Optimizer::AdamW || setup.optimizer == Optimizer::Adafactor) {
                if (fw.optimizer_step == "foreach")
                    step_temp = temp_per_el * all_trainable / opt_div;
                else if (fw.optimizer_step == "per_tensor")
                    step_temp = temp_per_el * largest_trainable * (mixed ? 2 : 1);
            } else if (mixed && fw.optimizer_step != "fused") {
                step_temp = temp_per_el * largest_trainable;
            }
        }
        // With the step in backward, each backward moment also holds one step's temporaries and the
        // paged state of the tensor being stepped.
        const std::int64_t step_in_bwd = in_bwd ? step_temp + paged_resident : 0;
        phase("forward_end", {{Component::Gradients, held_grads},
                              {Component::Activations, act_forward + gathered},
                              {Component::LogitsLoss, logits_forward}});
        if (act_forward_attention > 0)
            phase("forward_attention", {{Component::Gradients, held_grads},
                                        {Component::Activations, act_forward_attention + gathered}});
        phase("loss_backward", {{Component::Gradients, grads_at(g_head)},
                                {Component::OptimizerState, step_in_bwd},
                                {Component::Activations, act_loss_backward},
                                {Component::LogitsLoss, logits_backward}});
        // ZeRO-2: the down projection's whole gradient lives only until it is copied into the
        // bucket, while the layer's saved tensors and its input's gradient are alive.
        if ((zero2_bucket > 0 && zero2_in_flight > zero2_tied) || (in_bwd && grads_dev > tied_in_bwd))
            phase("backward_down_gradient", {{Component::Gradients, grads_at(g_head + g_down)},
                                             {Component::OptimizerState, step_in_bwd},
                                             {Component::Activations, act_top_down + gathered}});
        phase("backward", {{Component::Gradients, grads_in_layer(g_head + g_down)},
                           {Component::OptimizerState, step_in_bwd},
                           {Component::Activations, act_top_mlp + gathered}});
        if (act_top_attn > 0)
            phase("backward_attention", {{Component::Gradients, grads_in_layer(g_head + g_down + g_mlp + g_o)},
                                         {Component::OptimizerState, step_in_bwd},
                                         {Component::Activations, act_top_attn + gathered}});
        if (L > 1) {
            phase("backward_end", {{Component::Gradients, grads_in_layer(g_all_but_embed - g_layer + g_down)},
                                   {Component::OptimizerState, step_in_bwd},
                                   {Component::Activations, act_bottom_mlp + gathered}});
            if (act_bottom_attn > 0)
                phase("backward_end_attention",
                      {{Component::Gradients, grads_in_layer(g_all_but_embed - g_qkv)},
                       {Component::OptimizerState, step_in_bwd},
                       {Component::Activations, act_bottom_attn + gathered}});
        }
        // A tied embedding's dense gradient beside the head's, before autograd adds them: both wait in
        // the AccumulateGrad node's input buffer (torch/csrc/autograd/input_buffer.cpp InputBuffer::add),
        // and the head's weight gradient is a transposed view of its product, so the sum is a third
        // vocab × hidden tensor (aten::add, out of place; measured on torch 2.15 by
        // tests/frameworks/profile_terms.py: 3 × 113 MB alive for a 49,152 × 576 embedding).
        const bool tied_trains = arch.tied_embeddings && g_head > 0 &&
                                 (setup.method == Method::Full || setup.train_embeddings);
        if (tied_trains && !fw.tied_grad_in_place) {
            const std::int64_t dense = 2 * V * h * st.grad_of(st.weight) / grad_div;
            term(Component::Gradients, dense,
                 "tied embedding: its dense vocab × hidden gradient and their sum beside the head's (2 × vocab × "
                 "hidden, autograd adds the two out of place)",
                 {{"vocab", double(V)}, {"hidden", double(h)}});
            phase("embedding_backward", {{Component::Gradients, grads_dev + sync_buffers + zero2_bucket + dense},
                                         {Component::OptimizerState, step_in_bwd},
                                         {Component::Activations, scaled(inputs + G)}});
        }
        if (step_temp > 0)
            term(Component::OptimizerState, step_temp,
                 "optimizer step temporaries (" + fw.optimizer_step + ")", {{"bytes", double(step_temp)}});
        if (!in_bwd)
            phase("optimizer_step", {{Component::Gradients, grads_dev + sync_buffers + zero2_bucket},
                                     {Component::OptimizerState, step_temp + paged_resident}});
        for (auto& [name, extra] : objective_phases(objective_in, {held_grads, act_forward, logits_forward}, est.terms))
            phase(std::move(name), std::move(extra));
        est.reserved_device_fraction = asked.objective.kind == Objective::Grpo ? asked.objective.vllm_share : 0.0;
    }

    const Phase* peak = &est.phases.front();
    for (const auto& p : est.phases)
        if (p.total() > peak->total()) peak = &p;
    est.peak_phase = peak->name;
    est.peak_allocated_bytes = peak->total();
    const std::int64_t slack_base = slack_base_bytes(fw, peak->bytes);
    const std::int64_t slack = static_cast<std::int64_t>(std::llround(fw.allocator_slack * double(slack_base)));
    est.framework_overhead_bytes = fw.context_bytes + fw.workspace_bytes + slack;
    term(Component::FrameworkOverhead, est.framework_overhead_bytes,
         fw.name + ": context " + n(fw.context_bytes) + " B + workspace " + n(fw.workspace_bytes) +
             " B + allocator slack " + std::to_string(fw.allocator_slack * 100).substr(0, 4) + " % of " +
             slack_base_name(fw) +
             (fw.allocator_slack_of == "transient" ? " at the peak (" + n(slack_base) + " B)" : std::string()),
         {{"context_bytes", double(fw.context_bytes)}, {"workspace_bytes", double(fw.workspace_bytes)},
          {"allocator_slack", fw.allocator_slack}, {"slack_base_bytes", double(slack_base)}});
    est.components = peak->bytes;
    est.components[Component::FrameworkOverhead] = est.framework_overhead_bytes;
    est.total_bytes = est.peak_allocated_bytes + est.framework_overhead_bytes;
    return est;
}

}  // namespace wingspan
