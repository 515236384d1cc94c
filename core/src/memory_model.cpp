#include "wingspan/memory_model.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "wingspan/nf4.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/units.hpp"

namespace wingspan {

using nlohmann::json;

std::int64_t Phase::total() const {
    std::int64_t t = 0;
    for (const auto& [c, b] : bytes) t += b;
    return t;
}

std::map<Component, std::int64_t> MemoryEstimate::component_maxima() const {
    std::map<Component, std::int64_t> out;
    for (const auto& p : phases)
        for (const auto& [c, b] : p.bytes) out[c] = std::max(out[c], b);
    out[Component::FrameworkOverhead] = framework_overhead_bytes;
    return out;
}

const MemoryTerm* MemoryEstimate::term(Component c) const {
    for (const auto& t : terms)
        if (t.component == c) return &t;
    return nullptr;
}

std::string MemoryEstimate::explain(Component c) const {
    std::string out;
    for (const auto& t : terms) {
        if (t.component != c) continue;
        if (!out.empty()) out += "\n";
        out += t.formula + " = " + format_count(t.bytes) + " B" + (t.on_host ? " (host RAM)" : "");
    }
    return out;
}

namespace {

// How a trainable tensor is stored under a precision scheme (bytes per element).
struct TrainableStorage {
    int weight, grad, master, moment;
};

TrainableStorage storage_for(Precision p) {
    switch (p) {
        case Precision::Fp32: return {4, 4, 0, 4};
        case Precision::Bf16Mixed:
        case Precision::Fp16Mixed: return {2, 2, 4, 4};
        case Precision::Bf16: return {2, 2, 0, 2};
    }
    return {4, 4, 0, 4};
}

const char* dtype_label(int bytes) { return bytes == 4 ? "fp32" : bytes == 2 ? "16-bit" : "8-bit"; }

std::string n(std::int64_t v) { return format_count(v); }

// bitsandbytes' 8-bit optimizers keep tensors under 4096 elements in 32-bit and quantize the
// rest blockwise with an fp32 absmax per 2048 values of each of the two states.
constexpr std::int64_t k8bitMinElements = 4096;
constexpr std::int64_t k8bitBlock = 2048;

std::int64_t optimizer_bytes(Optimizer opt, int moment_bytes, std::int64_t rows, std::int64_t cols) {
    const std::int64_t elements = rows * cols;
    switch (opt) {
        case Optimizer::AdamW: return 2 * moment_bytes * elements;
        case Optimizer::AdamW8bit:
        case Optimizer::PagedAdamW8bit:
            if (elements < k8bitMinElements) return 8 * elements;
            return 2 * elements + 2 * 4 * ((elements + k8bitBlock - 1) / k8bitBlock);
        case Optimizer::Sgd: return moment_bytes * elements;
        case Optimizer::Adafactor:
            if (rows > 1 && cols > 1) return 4 * (rows + cols);
            return 4 * elements;
    }
    return 0;
}

const char* optimizer_formula(Optimizer opt, int moment_bytes) {
    switch (opt) {
        case Optimizer::AdamW:
            return moment_bytes == 4 ? "AdamW: 2 fp32 moments = 8 B × trainable params"
                                     : "AdamW: 2 bf16 moments = 4 B × trainable params";
        case Optimizer::AdamW8bit:
        case Optimizer::PagedAdamW8bit:
            return "8-bit AdamW: 2 × 1 B per param + fp32 absmax per 2048 values (tensors < 4096 "
                   "elements stay 8 B)";
        case Optimizer::Sgd: return "SGD momentum: 1 moment per trainable param";
        case Optimizer::Adafactor: return "Adafactor: fp32 row + column factors per matrix, full for vectors";
    }
    return "";
}

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
            p.adapter += g.count * setup.lora_rank * (g.rows + g.cols);
    }
    p.trainable += p.adapter;
    return p;
}

MemoryEstimate estimate_memory(const Architecture& arch, const TrainingSetup& setup,
                               const FrameworkProfile& fw) {
    MemoryEstimate est;
    const std::vector<TensorGroup> groups = arch.tensor_groups();
    est.params = count_parameters(arch, setup);
    const bool trains = setup.trains();
    const bool lora = setup.method == Method::Lora || setup.method == Method::Qlora;
    const Quantization quant = setup.effective_quantization();
    const TrainableStorage st = storage_for(setup.precision);
    const int frozen_bytes = dtype_bytes(setup.precision);
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
    std::int64_t trainable_elems = 0, adapter_elems = 0, largest_trainable = 0;
    std::int64_t largest_quantized = 0, layer_param_elems = 0;
    auto add_trainable = [&](std::int64_t rows, std::int64_t cols, std::int64_t count,
                             bool adapter) {
        const std::int64_t el = rows * cols * count;
        (adapter ? adapter_w : trainable_w) += el * st.weight;
        (adapter ? adapter_elems : trainable_elems) += el;
        grads += el * st.grad;
        master += el * st.master;
        optimizer += count * optimizer_bytes(setup.optimizer, st.moment, rows, cols);
        largest_trainable = std::max(largest_trainable, rows * cols);
    };
    for (const auto& g : groups) {
        if (g.name.rfind("layers.", 0) == 0) layer_param_elems += g.total_elements() / arch.layers;
        const bool trainable =
            setup.method == Method::Full ||
            (lora && setup.train_embeddings &&
             (g.kind == TensorKind::Embedding || g.kind == TensorKind::Head));
        if (trainable) {
            add_trainable(g.rows, g.cols, g.count, false);
        } else if (quant != Quantization::None && g.kind == TensorKind::Linear) {
            const QuantLayout l = quant == Quantization::Int8
                                      ? int8_layout(g.rows, g.cols)
                                      : nf4_layout(g.elements(), quant == Quantization::Nf4DoubleQuant);
            packed += l.packed_bytes * g.count;
            constants += l.constant_bytes * g.count;
            quant_elems += g.total_elements();
            largest_quantized = std::max(largest_quantized, g.elements());
        } else {
            frozen_plain += g.total_elements() * frozen_bytes;
            frozen_plain_elems += g.total_elements();
        }
        if (lora && g.kind == TensorKind::Linear && setup.lora_targets.count(g.role)) {
            add_trainable(setup.lora_rank, g.cols, g.count, true);   // A: r x d_in
            add_trainable(g.rows, setup.lora_rank, g.count, true);   // B: d_out x r
        }
    }
    if (!trains) trainable_w = grads = master = optimizer = 0;

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
                 ")" + (param_div > 1 ? per_dev : ""),
             {{"bytes_per_param", frozen_bytes}, {"params", double(frozen_plain_elems)}, {"devices", double(param_div)}});
    std::int64_t packed_dev = 0, constants_dev = 0;
    if (quant != Quantization::None) {
        const bool int8 = quant == Quantization::Int8;
        packed_dev = term(Component::FrozenWeights, packed / param_div,
                          std::string(int8 ? "1 B" : "0.5 B") + " × " + n(quant_elems) +
                              (int8 ? " int8" : " NF4") + " params (packed codes)" +
                              (param_div > 1 ? per_dev : ""),
                          {{"params", double(quant_elems)}, {"bytes_per_param", int8 ? 1.0 : 0.5}});
        constants_dev = term(
            Component::QuantConstants, constants / param_div,
            int8 ? "4 B fp32 scale per output row"
                 : quant == Quantization::Nf4DoubleQuant
                       ? "double quant: 1 B per 64-value block + 4 B per 256 blocks (" +
                             n(quant_elems / kNf4BlockSize) + " blocks)"
                       : "4 B fp32 absmax per 64-value block (" + n(quant_elems / kNf4BlockSize) +
                             " blocks)",
            {{"params", double(quant_elems)}, {"block", double(kNf4BlockSize)}});
    }
    const std::int64_t adapters_dev =
        term(Component::Adapters, adapter_w,
             std::to_string(st.weight) + " B × " + n(adapter_elems) + " adapter params (rank " +
                 std::to_string(setup.lora_rank) + ", r·(d_in+d_out) per targeted linear: " +
                 targets_to_string(setup.lora_targets) + ")",
             {{"bytes_per_param", st.weight}, {"params", double(adapter_elems)}, {"rank", double(setup.lora_rank)}});
    const std::int64_t trainable_dev =
        term(Component::TrainableWeights, trainable_w / param_div,
             std::to_string(st.weight) + " B × " + n(trainable_elems) + " trainable params (" +
                 dtype_label(st.weight) + ")" + (param_div > 1 ? per_dev : ""),
             {{"bytes_per_param", st.weight}, {"params", double(trainable_elems)}});
    const std::int64_t all_trainable = trains ? trainable_elems + adapter_elems : 0;
    const std::int64_t grads_dev =
        term(Component::Gradients, grads / grad_div,
             std::to_string(st.grad) + " B × " + n(all_trainable) + " trainable params" +
                 (grad_div > 1 ? per_dev : ""),
             {{"bytes_per_param", st.grad}, {"params", double(all_trainable)}, {"devices", double(grad_div)}});
    std::int64_t ddp_buckets = 0;
    if (setup.sharding == Sharding::Ddp && N > 1)
        ddp_buckets = term(Component::Gradients, grads,
                           "DDP all-reduce buckets: a second copy of the gradients", {{"bytes", double(grads)}});
    const bool offload = setup.offload && trains;
    const std::int64_t master_dev =
        term(Component::MasterWeights, master / opt_div,
             "4 B × " + n(all_trainable) + " trainable params (fp32 master copy)" +
                 (opt_div > 1 ? per_dev : ""),
             {{"bytes_per_param", 4}, {"params", double(all_trainable)}}, offload);
    const std::int64_t optimizer_dev =
        term(Component::OptimizerState, optimizer / opt_div,
             std::string(optimizer_formula(setup.optimizer, st.moment)) + ", " + n(all_trainable) +
                 " params" + (opt_div > 1 ? per_dev : ""),
             {{"params", double(all_trainable)}}, offload);
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
    const double act_factor = fw.activation_factor;
    auto scaled = [&](std::int64_t bytes) {
        return static_cast<std::int64_t>(std::llround(double(bytes) * act_factor));
    };

    // Tensors one decoder layer saves for backward in the reference implementation.
    const std::int64_t norm_saved = 2 * bs * h * e + bs * 4;   // input, output, fp32 rstd
    std::int64_t attn_saved = 0;
    std::string attn_desc;
    switch (setup.attention) {
        case Attention::Eager:
            // q, repeated k and v, attention output; softmax probabilities in fp32 (plus the
            // 16-bit copy the value matmul keeps).
            attn_saved = 4 * bs * qd * e + b * heads * s * s * (4 + (e < 4 ? e : 0));
            attn_desc = "eager: q, k, v, out (b·s·q_dim each) + softmax b·heads·s²";
            break;
        case Attention::Sdpa:
            attn_saved = 4 * bs * qd * e + b * heads * s * 4;
            attn_desc = "SDPA: q, repeated k and v, out (b·s·q_dim each) + logsumexp";
            break;
        case Attention::Flash:
            attn_saved = 2 * bs * qd * e + 2 * bs * kvd * e + b * heads * s * 4;
            attn_desc = "flash: q, out (b·s·q_dim), k, v (b·s·kv_dim) + logsumexp";
            break;
    }
    const std::int64_t mlp_saved =
        (arch.mlp == MlpKind::Gated ? 4 : 2) * bs * inner * e +
        (arch.is_moe() ? bs * arch.experts * 4 : 0);
    std::int64_t lora_saved = 0;
    if (lora) {
        for (const auto& g : groups) {
            if (g.kind != TensorKind::Linear || !setup.lora_targets.count(g.role)) continue;
            if (g.name.rfind("layers.", 0) != 0) continue;
            const std::int64_t per_layer = g.count / L;
            const double share = g.in_experts ? double(arch.experts_per_token) / arch.experts : 1.0;
            std::int64_t one = bs * setup.lora_rank * e;
            if (setup.lora_dropout > 0) one += bs * g.cols * (e + 1);
            lora_saved += static_cast<std::int64_t>(per_layer * share * one);
        }
    }
    const std::int64_t layer_saved = 2 * norm_saved + attn_saved + mlp_saved + lora_saved;
    const std::int64_t layer_input = bs * h * e;
    // Final norm and the ids the embedding lookup keeps.
    const std::int64_t outside_layers = norm_saved + bs * 8;
    // One layer's backward workspace: gradients of its largest intermediates.
    const std::int64_t layer_backward = 2 * bs * inner * e + 2 * bs * h * e;

    std::int64_t act_forward = 0, act_backward = 0;
    std::string act_formula;
    if (!trains) {
        // Serving: one layer's prefill workspace, nothing kept across layers.
        act_forward = act_backward =
            scaled(bs * (2 * h + 2 * inner + qd + 2 * kvd) * e +
                   (setup.attention == Attention::Eager ? b * heads * s * s * 4 : 0));
        act_formula = "prefill workspace of one layer: b·s·(2h + 2i + q_dim + 2·kv_dim)·" +
                      std::to_string(e) + " B";
    } else if (setup.grad_checkpointing) {
        act_forward = scaled(L * layer_input + outside_layers);
        act_backward = scaled(L * layer_input + outside_layers + layer_saved + layer_backward);
        act_formula = "checkpointing: " + std::to_string(L) + " layers × b·s·h·" +
                      std::to_string(e) + " B kept (" + n(layer_input) +
                      " B each) + one layer recomputed (" + n(layer_saved) + " B: " + attn_desc + ")";
    } else {
        act_forward = scaled(L * layer_saved + outside_layers);
        act_backward = scaled(layer_saved + outside_layers + layer_backward + L * layer_input);
        act_formula = std::to_string(L) + " layers × " + n(layer_saved) +
                      " B saved per layer (norms 2×" + n(norm_saved) + ", attention " +
                      n(attn_saved) + " [" + attn_desc + "], MLP " + n(mlp_saved) +
                      (lora_saved ? ", LoRA " + n(lora_saved) : "") + ")";
    }
    std::map<std::string, double> act_inputs = {
        {"batch", double(b)}, {"seq", double(s)}, {"hidden", double(h)}, {"layers", double(L)},
        {"intermediate", double(inner)}, {"heads", double(heads)}, {"bytes_per_value", double(e)},
        {"framework_factor", act_factor}};
    term(Component::Activations, std::max(act_forward, act_backward), act_formula, act_inputs);

    // ---- logits and loss ----
    std::int64_t logit_tokens = bs;
    if (setup.loss_chunk_tokens > 0) logit_tokens = std::min(bs, setup.loss_chunk_tokens);
    if (fw.fused_loss) logit_tokens = std::min<std::int64_t>(bs, 4096);
    std::int64_t logits_forward = 0, logits_backward = 0;
    std::string logits_formula;
    if (!trains) {
        logits_forward = logits_backward = b * V * 4;
        logits_formula = "last-token logits: b·vocab·4 B";
    } else {
        // Forward end: the logits the model returns (16-bit, or fp32 in an fp32 run) and the
        // fp32 log-softmax the loss saves. During the log-softmax backward the fp32 gradient of
        // its output and the fp32 gradient of the logits are alive beside both.
        const std::int64_t held = e < 4 ? e + 4 : 8;
        logits_forward = logit_tokens * V * held;
        logits_backward = logit_tokens * V * (held + 8);
        logits_formula = n(logit_tokens) + " tokens × " + n(V) + " vocab × (" + std::to_string(held) +
                         " B after forward: logits + fp32 log-softmax; +8 B in its backward: two fp32 gradients)" +
                         (logit_tokens < bs ? " (chunked loss)" : "");
    }
    term(Component::LogitsLoss, std::max(logits_forward, logits_backward), logits_formula,
         {{"tokens", double(logit_tokens)}, {"vocab", double(V)}});

    // ---- KV cache (serving) ----
    std::int64_t kv_cache = 0;
    if (!trains)
        kv_cache = term(Component::KvCache, 2 * L * kvd * s * b * e,
                        "2 (k, v) × " + std::to_string(L) + " layers × " + n(kvd) + " kv_dim × " +
                            n(s) + " tokens × " + std::to_string(b) + " sequences × " +
                            std::to_string(e) + " B",
                        {{"layers", double(L)}, {"kv_dim", double(kvd)}, {"context", double(s)}, {"batch", double(b)}});

    // ---- phases ----
    const std::int64_t master_on_dev = offload ? 0 : master_dev;
    const std::int64_t optimizer_on_dev = offload ? 0 : optimizer_dev;
    std::map<Component, std::int64_t> base = {
        {Component::FrozenWeights, frozen_dev + packed_dev},
        {Component::QuantConstants, constants_dev},
        {Component::Adapters, adapters_dev},
        {Component::TrainableWeights, trainable_dev},
        {Component::MasterWeights, master_on_dev},
        {Component::OptimizerState, optimizer_on_dev},
    };
    // ZeRO-3/FSDP gathers one layer's parameters (and prefetches the next).
    const std::int64_t gathered = param_div > 1 ? 2 * layer_param_elems * frozen_bytes : 0;
    // QLoRA dequantizes one weight at a time for its matmul.
    const std::int64_t dequant = quant != Quantization::None ? largest_quantized * e : 0;
    const std::int64_t carried_grads = setup.grad_accum > 1 ? grads_dev : 0;
    auto phase = [&](std::string name, std::map<Component, std::int64_t> extra) {
        Phase p{std::move(name), base};
        for (auto& [c, v] : extra) p.bytes[c] += v;
        for (auto it = p.bytes.begin(); it != p.bytes.end();)
            it = it->second == 0 ? p.bytes.erase(it) : std::next(it);
        est.phases.push_back(std::move(p));
    };
    if (!trains) {
        phase("decode", {{Component::KvCache, kv_cache},
                         {Component::Activations, act_forward + gathered + dequant},
                         {Component::LogitsLoss, logits_forward}});
    } else {
        phase("forward_end", {{Component::Gradients, carried_grads},
                              {Component::Activations, act_forward + gathered + dequant},
                              {Component::LogitsLoss, logits_forward}});
        phase("loss_backward", {{Component::Gradients, carried_grads},
                                {Component::Activations, act_forward},
                                {Component::LogitsLoss, logits_backward}});
        phase("backward", {{Component::Gradients, grads_dev + ddp_buckets},
                           {Component::Activations, act_backward + gathered + dequant}});
        std::int64_t step_temp = 0;
        if (!offload && all_trainable > 0) {
            const int temp_per_el = 4;
            const bool mixed = st.master > 0;
            if (setup.optimizer == Optimizer::AdamW || setup.optimizer == Optimizer::Adafactor) {
                if (fw.optimizer_step == "foreach")
                    step_temp = temp_per_el * all_trainable / opt_div;
                else if (fw.optimizer_step == "per_tensor")
                    step_temp = temp_per_el * largest_trainable * (mixed ? 2 : 1);
            } else if (mixed && fw.optimizer_step != "fused") {
                step_temp = temp_per_el * largest_trainable;
            }
        }
        if (step_temp > 0)
            term(Component::OptimizerState, step_temp,
                 "optimizer step temporaries (" + fw.optimizer_step + ")", {{"bytes", double(step_temp)}});
        phase("optimizer_step", {{Component::Gradients, grads_dev + ddp_buckets},
                                 {Component::OptimizerState, step_temp}});
    }

    const Phase* peak = &est.phases.front();
    for (const auto& p : est.phases)
        if (p.total() > peak->total()) peak = &p;
    est.peak_phase = peak->name;
    est.peak_allocated_bytes = peak->total();
    const std::int64_t slack =
        static_cast<std::int64_t>(std::llround(fw.allocator_slack * est.peak_allocated_bytes));
    est.framework_overhead_bytes = fw.context_bytes + fw.workspace_bytes + slack;
    term(Component::FrameworkOverhead, est.framework_overhead_bytes,
         fw.name + ": context " + n(fw.context_bytes) + " B + workspace " + n(fw.workspace_bytes) +
             " B + allocator slack " + std::to_string(fw.allocator_slack * 100).substr(0, 4) +
             " % of the peak",
         {{"context_bytes", double(fw.context_bytes)}, {"workspace_bytes", double(fw.workspace_bytes)},
          {"allocator_slack", fw.allocator_slack}});
    est.components = peak->bytes;
    est.components[Component::FrameworkOverhead] = est.framework_overhead_bytes;
    est.total_bytes = est.peak_allocated_bytes + est.framework_overhead_bytes;
    return est;
}

nlohmann::json MemoryEstimate::to_json() const {
    json comps = json::object();
    for (const auto& [c, b] : components) comps[std::string(component_name(c))] = b;
    json terms_json = json::array();
    for (const auto& t : terms)
        terms_json.push_back({{"component", component_name(t.component)},
                              {"bytes", t.bytes},
                              {"formula", t.formula},
                              {"inputs", t.inputs},
                              {"on_host", t.on_host}});
    json phases_json = json::array();
    for (const auto& p : phases) {
        json pb = json::object();
        for (const auto& [c, b] : p.bytes) pb[std::string(component_name(c))] = b;
        phases_json.push_back({{"name", p.name}, {"allocated_bytes", p.total()}, {"components", pb}});
    }
    return {{"params",
             {{"total", params.total},
              {"trainable", params.trainable},
              {"frozen", params.frozen},
              {"quantized", params.quantized},
              {"adapter", params.adapter}}},
            {"components", comps},
            {"component_maxima", protocol::components_to_json(component_maxima())},
            {"peak_phase", peak_phase},
            {"peak_allocated_bytes", peak_allocated_bytes},
            {"framework_overhead_bytes", framework_overhead_bytes},
            {"total_bytes", total_bytes},
            {"host_bytes", host_bytes},
            {"phases", phases_json},
            {"terms", terms_json}};
}

}  // namespace wingspan
