#include "model/model.hpp"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>

#include "kernels/device.hpp"
#include "kernels/device_ops.hpp"
#include "kernels/kernels_fused.hpp"
#include "kernels/kernels_loss.hpp"
#include "kernels/kernels_softmax.hpp"
#include "model/model_variants.hpp"
#include "support/profile_scopes.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/nf4.hpp"

namespace wingspan::train {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;


Model::Model(ModelConfig cfg, ModelOptions opt) : cfg_(std::move(cfg)), opt_(std::move(opt)) {
    dtype_ = opt_.precision == Precision::Fp32        ? at::kFloat
             : opt_.precision == Precision::Fp16Mixed ? at::kHalf
                                                      : at::kBFloat16;
    inv_freq_ = cfg_.inv_freq();
    const std::int64_t q = cfg_.heads * cfg_.head_dim, kv = cfg_.kv_heads * cfg_.head_dim;
    layers_.resize(cfg_.layers);
    for (std::int64_t i = 0; i < cfg_.layers; ++i) {
        auto& L = layers_[i];
        const std::string p = "model.layers." + std::to_string(i) + ".";
        auto set = [&](Linear& l, const std::string& name, LinearRole role, std::int64_t in, std::int64_t out) {
            l.name = p + name;
            l.role = role;
            l.in = in;
            l.out = out;
            l.compute = dtype_;
        };
        set(L.q, "self_attn.q_proj", LinearRole::Q, cfg_.hidden, q);
        set(L.k, "self_attn.k_proj", LinearRole::K, cfg_.hidden, kv);
        set(L.v, "self_attn.v_proj", LinearRole::V, cfg_.hidden, kv);
        set(L.o, "self_attn.o_proj", LinearRole::O, q, cfg_.hidden);
        set(L.gate, "mlp.gate_proj", LinearRole::Gate, cfg_.hidden, cfg_.intermediate);
        set(L.up, "mlp.up_proj", LinearRole::Up, cfg_.hidden, cfg_.intermediate);
        set(L.down, "mlp.down_proj", LinearRole::Down, cfg_.intermediate, cfg_.hidden);
        configure_fused_layer(cfg_, L, opt_.targets);
    }
}

void Model::build(const Source& source, std::uint64_t seed) {
    at::NoGradGuard no_grad;
    const bool full = opt_.method == Method::Full;
    const bool qlora = opt_.method == Method::Qlora;
    const Component base = full ? Component::TrainableWeights : Component::FrozenWeights;
    at::Generator gen = at::detail::createCPUGenerator(seed);

    // Every tensor passes through here: read or drawn, then stored in the storage dtype.
    auto make = [&](const std::string& name, std::vector<std::int64_t> shape, bool is_norm) -> at::Tensor {
        at::Tensor t;
        {
            mem::Scope scope(Component::Activations);   // temporaries of the load
            if (source) {
                t = source(name, shape);
            } else if (is_norm) {   // Gemma's (1 + weight) norms start at zero
                t = cfg_.norm_plus_one ? at::zeros(shape, at::kFloat) : at::ones(shape, at::kFloat);
            } else {
                t = at::normal(0.0, 0.02, shape, gen, at::TensorOptions().dtype(at::kFloat));
            }
        }
        return t;
    };
    auto store = [&](const at::Tensor& t) {
        mem::Scope scope(base);
        // Fresh tensors of the right type are kept as they are (no second copy while loading);
        // on a GPU each tensor goes to the device as it is read, one at a time.
        at::Tensor s = t.scalar_type() == dtype_ && t.is_contiguous() && t.device() == opt_.device
                           ? t
                           : t.to(at::TensorOptions().device(opt_.device).dtype(dtype_)).contiguous();
        retag(s, base);
        return s;
    };
    auto dense = [&](const std::string& name, std::vector<std::int64_t> shape, bool is_norm = false) {
        return store(make(name, std::move(shape), is_norm));
    };

    embed_ = dense("model.embed_tokens.weight", {cfg_.vocab, cfg_.hidden});
    for (auto& L : layers_) {
        const std::string p = L.q.name.substr(0, L.q.name.find("self_attn"));
        L.input_norm = dense(p + "input_layernorm.weight", {cfg_.hidden}, true);
        for (Linear* l : L.linears()) {
            at::Tensor w = make(l->name + ".weight", {l->out, l->in}, false);
            if (qlora) {
                l->qweight = Nf4Weight::quantize(w.is_cpu() ? w : w.to(at::kCPU));
                l->qweight.to(opt_.device);
            } else {
                l->weight = store(w);
            }
            w.reset();
            const bool has_bias = ((l->role == LinearRole::Q || l->role == LinearRole::K || l->role == LinearRole::V) &&
                                   cfg_.qkv_bias) ||
                                  (l->role == LinearRole::O && cfg_.o_bias) ||
                                  ((l->role == LinearRole::Gate || l->role == LinearRole::Up ||
                                    l->role == LinearRole::Down) &&
                                   cfg_.mlp_bias);
            if (has_bias) {
                at::Tensor b;
                {
                    mem::Scope scope(Component::Activations);
                    b = source ? source(l->name + ".bias", {l->out}) : at::zeros({l->out}, at::kFloat);
                }
                l->bias = store(b);
            }
        }
        L.post_norm = dense(p + "post_attention_layernorm.weight", {cfg_.hidden}, true);
        if (cfg_.sandwich_norms) {
            L.pre_ff_norm = dense(p + "pre_feedforward_layernorm.weight", {cfg_.hidden}, true);
            L.post_ff_norm = dense(p + "post_feedforward_layernorm.weight", {cfg_.hidden}, true);
        }
        if (cfg_.qk_norm) {
            L.q_norm = dense(p + "self_attn.q_norm.weight", {cfg_.head_dim}, true);
            L.k_norm = dense(p + "self_attn.k_norm.weight", {cfg_.head_dim}, true);
        }
    }
    final_norm_ = dense("model.norm.weight", {cfg_.hidden}, true);
    if (!cfg_.tied) head_ = dense("lm_head.weight", {cfg_.vocab, cfg_.hidden});

    if (full) {
        for (auto& nt : tensors()) nt.tensor.set_requires_grad(true);
    } else {
        init_adapters(seed + 1);
    }
}

void Model::init_adapters(std::uint64_t seed) {
    at::NoGradGuard no_grad;
    at::Generator gen = at::detail::createCPUGenerator(seed);
    const double scaling = opt_.alpha / static_cast<double>(opt_.rank);
    for (auto& L : layers_) {
        for (Linear* l : L.linears()) {
            if (!opt_.targets.count(l->role)) continue;
            mem::Scope scope(Component::Adapters);
            // Kaiming-uniform with a = sqrt(5), as nn.Linear and PEFT initialise A.
            const double bound = 1.0 / std::sqrt(static_cast<double>(l->in));
            at::Tensor a = at::empty({opt_.rank, l->in}, at::kFloat);
            a.uniform_(-bound, bound, gen);
            l->lora_a = a.to(at::TensorOptions().device(opt_.device).dtype(dtype_)).contiguous();
            l->lora_b = at::zeros({l->out, opt_.rank}, at::TensorOptions().device(opt_.device).dtype(dtype_));
            retag(l->lora_a, Component::Adapters);
            retag(l->lora_b, Component::Adapters);
            l->lora_a.set_requires_grad(true);
            l->lora_b.set_requires_grad(true);
            l->lora_scaling = scaling;
            l->lora_dropout = opt_.dropout;
        }
    }
}

std::vector<NamedTensor> Model::tensors() const {
    std::vector<NamedTensor> out;
    const bool full = opt_.method == Method::Full;
    const Component base = full ? Component::TrainableWeights : Component::FrozenWeights;
    out.push_back({"model.embed_tokens.weight", embed_, base, full});
    for (const auto& L : layers_) {
        const std::string p = L.q.name.substr(0, L.q.name.find("self_attn"));
        out.push_back({p + "input_layernorm.weight", L.input_norm, base, full});
        for (const Linear* l : L.linears()) {
            if (l->qweight.defined()) {
                out.push_back({l->name + ".weight.nf4_codes", l->qweight.codes, Component::FrozenWeights, false});
                out.push_back({l->name + ".weight.nf4_block_codes", l->qweight.block_codes, Component::QuantConstants, false});
                out.push_back({l->name + ".weight.nf4_group_scales", l->qweight.group_scales, Component::QuantConstants, false});
                out.push_back({l->name + ".weight.nf4_mean", l->qweight.mean, Component::QuantConstants, false});
            } else {
                out.push_back({l->name + ".weight", l->weight, base, full});
            }
            if (l->bias.defined()) out.push_back({l->name + ".bias", l->bias, base, full});
            if (l->has_lora()) {
                const std::string peft = "base_model.model." + l->name;
                out.push_back({peft + ".lora_A.weight", l->lora_a, Component::Adapters, true});
                out.push_back({peft + ".lora_B.weight", l->lora_b, Component::Adapters, true});
            }
        }
        out.push_back({p + "post_attention_layernorm.weight", L.post_norm, base, full});
        if (L.pre_ff_norm.defined()) {
            out.push_back({p + "pre_feedforward_layernorm.weight", L.pre_ff_norm, base, full});
            out.push_back({p + "post_feedforward_layernorm.weight", L.post_ff_norm, base, full});
        }
        if (L.q_norm.defined()) {
            out.push_back({p + "self_attn.q_norm.weight", L.q_norm, base, full});
            out.push_back({p + "self_attn.k_norm.weight", L.k_norm, base, full});
        }
    }
    out.push_back({"model.norm.weight", final_norm_, base, full});
    if (!cfg_.tied) out.push_back({"lm_head.weight", head_, base, full});
    return out;
}

std::vector<NamedTensor> Model::trainable() const {
    std::vector<NamedTensor> out;
    for (auto& t : tensors())
        if (t.trainable) out.push_back(t);
    return out;
}

std::int64_t Model::base_parameter_count() const {
    std::int64_t n = 0;
    for (const auto& [name, shape] : expected_tensors(cfg_)) {
        std::int64_t e = 1;
        for (auto d : shape) e *= d;
        n += e;
    }
    return n;
}

std::int64_t Model::adapter_parameter_count() const {
    if (opt_.method == Method::Full) return 0;
    std::int64_t n = 0;
    for (const auto& L : layers_)
        for (const Linear* l : L.linears())
            if (opt_.targets.count(l->role)) n += opt_.rank * (l->in + l->out);
    return n;
}

// ---------------------------------------------------------------------------------------
// Forward

at::Tensor Model::rms_norm(const at::Tensor& x, const at::Tensor& w) const {
    // Plain RMSNorm is one fused op (kernels_fused.hpp: keeps the input and rstd); Gemma's
    // (1 + weight) norm keeps the composition below, as core's memory model counts it.
    if (!cfg_.norm_plus_one) return fused::rms_norm(x, w, cfg_.rms_eps);
    return unfused_rms_norm(x, w);
}

at::Tensor Model::unfused_rms_norm(const at::Tensor& x, const at::Tensor& w) const {
    WINGSPAN_PROFILE_SCOPE(profile::kRmsNorm);
    at::Tensor xf = x.scalar_type() == at::kFloat ? x : x.to(at::kFloat);
    at::Tensor y = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + cfg_.rms_eps);
    if (cfg_.norm_plus_one) return (y * (w.to(at::kFloat) + 1)).to(x.scalar_type());   // Gemma
    if (y.scalar_type() != x.scalar_type()) y = y.to(x.scalar_type());
    return y * w;
}

at::Tensor Model::attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& mask) const {
    WINGSPAN_PROFILE_SCOPE(profile::kAttention);
    // q: [B, Hq, Tq, D]; k, v: [B, Hkv, Tk, D]. Query heads of one KV head are adjacent, so
    // grouping them as [B, Hkv, g*Tq, D] shares K and V without copying them.
    const std::int64_t B = q.size(0), Hq = q.size(1), T = q.size(2), D = q.size(3), Hkv = k.size(1);
    const std::int64_t Tk = k.size(2);
    const std::int64_t g = Hq / Hkv;
    const bool plain = cfg_.attn_scale == 0 && cfg_.attn_softcap == 0 && !(cfg_.sliding_window > 0 && Tk > cfg_.sliding_window);
    if (opt_.sdpa && Tk == T && plain) {
        at::Tensor kk = g > 1 ? k.repeat_interleave(g, 1) : k;
        at::Tensor vv = g > 1 ? v.repeat_interleave(g, 1) : v;
        auto out = ops::causal_sdpa(q, kk, vv);
        return out.transpose(1, 2).reshape({B, T, Hq * D});
    }
    const double scale = cfg_.attn_scale > 0 ? cfg_.attn_scale : 1.0 / std::sqrt(static_cast<double>(D));
    at::Tensor qg = (q * scale).reshape({B, Hkv, g * T, D});
    // The products keep to the causal band where the softmax reads only the band (not after
    // Gemma 2's soft cap, which reads every score).
    const std::optional<fused::CausalBand> cb = cfg_.attn_softcap > 0 ? std::nullopt : fused::causal_band(qg, mask);
    const kernels::Band* band = cb ? &cb->band : nullptr;
    at::Tensor scores = ops::banded_matmul(qg, k.transpose(-1, -2), band, kernels::BandedMatrix::Out);   // [B, Hkv, g*Tq, Tk]
    if (cfg_.attn_softcap > 0) scores = soft_cap(scores, cfg_.attn_softcap);   // Gemma 2, before the mask
    // Scores freed once probs exist; the mask's spans found once for the band and the softmax.
    at::Tensor probs = fused::masked_softmax(std::move(scores), mask, fused::Path::Auto, cb ? &cb->spans : nullptr);
    at::Tensor out = ops::banded_matmul(probs, v, band, kernels::BandedMatrix::Left);   // [B, Hkv, g*Tq, D]
    return out.view({B, Hq, T, D}).transpose(1, 2).reshape({B, T, Hq * D});
}

at::Tensor Model::layer_forward(std::int64_t i, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                const at::Tensor& mask, KvCache* cache) const {
    const Layer& L = layers_[i];
    const std::int64_t B = x.size(0), T = x.size(1), D = cfg_.head_dim;
    at::Tensor h = rms_norm(x, L.input_norm);
    const std::int64_t nq = cfg_.heads * D, nkv = cfg_.kv_heads * D;
    at::Tensor qkv = cfg_.fused_qkv ? L.q.forward(h) : at::Tensor();   // Phi-3: [q | k | v]
    at::Tensor q = (qkv.defined() ? qkv.narrow(-1, 0, nq) : L.q.forward(h)).view({B, T, cfg_.heads, D}).transpose(1, 2);
    at::Tensor k = (qkv.defined() ? qkv.narrow(-1, nq, nkv) : L.k.forward(h)).view({B, T, cfg_.kv_heads, D}).transpose(1, 2);
    at::Tensor v = (qkv.defined() ? qkv.narrow(-1, nq + nkv, nkv) : L.v.forward(h)).view({B, T, cfg_.kv_heads, D}).transpose(1, 2);
    qkv.reset();
    h.reset();
    if (cfg_.qk_norm) {   // per head, over head_dim, before RoPE (on the transposed views: unfused)
        q = unfused_rms_norm(q, L.q_norm);
        k = unfused_rms_norm(k, L.k_norm);
    }
    q = fused::rotary(q, cos, sin);
    k = fused::rotary(k, cos, sin);
    if (cache) {
        if (cache->k[i].defined()) {
            k = at::cat({cache->k[i], k}, 2);
            v = at::cat({cache->v[i], v}, 2);
        }
        cache->k[i] = k;
        cache->v[i] = v;
    }
    at::Tensor a = attention(q, k, v.contiguous(), mask);
    q.reset();
    k.reset();
    v.reset();
    // Gemma 2 normalises the attention output and the MLP's input and output ("sandwich").
    at::Tensor y = cfg_.sandwich_norms ? x + rms_norm(L.o.forward(a), L.post_norm) : x + L.o.forward(a);
    a.reset();
    h = rms_norm(y, cfg_.sandwich_norms ? L.pre_ff_norm : L.post_norm);
    at::Tensor gu = cfg_.fused_gate_up ? L.gate.forward(h) : at::Tensor();   // Phi-3: [gate | up]
    const std::int64_t I = cfg_.intermediate;
    at::Tensor gate = gu.defined() ? gu.narrow(-1, 0, I) : L.gate.forward(h);
    at::Tensor up = gu.defined() ? gu.narrow(-1, I, I) : L.up.forward(h);
    // SwiGLU is one fused op keeping gate and up; a GELU gate (Gemma) stays the composition.
    at::Tensor m = cfg_.activation == "silu" ? fused::swiglu(gate, up) : gate_activation(cfg_, gate) * up;
    gate.reset();
    up.reset();
    h.reset();
    gu.reset();
    return cfg_.sandwich_norms ? y + rms_norm(L.down.forward(m), L.post_ff_norm) : y + L.down.forward(m);
}

namespace {

struct CheckpointFn : public torch::autograd::Function<CheckpointFn> {
    static Variable forward(AutogradContext* ctx, const Variable& x, const Model* model, std::int64_t layer,
                            const Variable& cos, const Variable& sin, const Variable& mask) {
        ctx->save_for_backward({x, cos, sin, mask});
        ctx->saved_data["model"] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(model));
        ctx->saved_data["layer"] = layer;
        // Dropout masks must be the same when the layer is recomputed.
        ctx->saved_data["rng"] = dev::default_generator(model->device()).get_state();
        return model->layer_forward(layer, x, cos, sin, mask);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        auto saved = ctx->get_saved_variables();
        const auto* model = reinterpret_cast<const Model*>(static_cast<std::intptr_t>(ctx->saved_data["model"].toInt()));
        const std::int64_t layer = ctx->saved_data["layer"].toInt();
        at::Tensor x = saved[0].detach().requires_grad_(true);
        at::Generator gen = dev::default_generator(model->device());
        at::Tensor rng_now = gen.get_state();
        gen.set_state(ctx->saved_data["rng"].toTensor());
        at::Tensor y;
        {
            at::AutoGradMode enable(true);
            y = model->layer_forward(layer, x, saved[1], saved[2], saved[3]);
        }
        gen.set_state(rng_now);
        torch::autograd::backward({y}, {grads[0]});
        return {x.grad(), Variable(), Variable(), Variable(), Variable(), Variable()};
    }
};

struct LmHeadLossFn : public torch::autograd::Function<LmHeadLossFn> {
    static Variable forward(AutogradContext* ctx, const Variable& hidden, const Variable& weight,
                            const Variable& labels, at::Tensor* tied_grad, double final_softcap) {
        WINGSPAN_PROFILE_SCOPE(profile::kLoss);
        mem::Scope scope(Component::LogitsLoss);
        at::Tensor valid = labels.ne(-100);
        const std::int64_t n_valid = std::max<std::int64_t>(1, valid.sum().item<std::int64_t>());
        at::Tensor safe = labels.clamp_min(0).unsqueeze(1);
        auto [probs, lse, picked] =
            kernels::cross_entropy_rows(ops::matmul(hidden, weight.t()), safe, final_softcap);   // [N, V], [N], [N]
        at::Tensor loss = ((lse - picked) * valid).sum() / static_cast<double>(n_valid);
        // A soft-capped head (Gemma 2) keeps each row's log-sum-exp and label logit for the cap's
        // derivative: 2 × 4 B per token beside the probabilities.
        const bool capped = final_softcap > 0;
        ctx->save_for_backward({hidden, weight, probs, safe, valid, capped ? lse : at::Tensor(), capped ? picked : at::Tensor()});
        ctx->saved_data["final_softcap"] = final_softcap;
        ctx->saved_data["n_valid"] = n_valid;
        ctx->saved_data["tied_grad"] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(tied_grad));
        return loss;
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        WINGSPAN_PROFILE_SCOPE(profile::kLossBackward);
        mem::Scope scope(Component::LogitsLoss);
        auto s = ctx->get_saved_variables();
        const at::Tensor& hidden = s[0];
        const at::Tensor& weight = s[1];
        at::Tensor d = s[2];   // probabilities, turned into d loss / d logits in place
        const std::int64_t n_valid = ctx->saved_data["n_valid"].toInt();
        const at::Tensor scale = s[4].to(d.scalar_type()) * (grads[0].to(d.scalar_type()) / static_cast<double>(n_valid));
        const kernels::SoftCap cap{ctx->saved_data["final_softcap"].toDouble(), s[5], s[6]};
        const at::Tensor dl = kernels::logits_gradient(d, s[3], scale, hidden.scalar_type(), cap);
        // A tied head: the embedding adds its rows into this gradient in place (see EmbeddingFn).
        auto* tied = reinterpret_cast<at::Tensor*>(static_cast<std::intptr_t>(ctx->saved_data["tied_grad"].toInt()));
        const HeadGrads g = head_backward(dl, hidden, weight, ctx->needs_input_grad(0), ctx->needs_input_grad(1), tied);
        const at::Tensor& dh = g.hidden;
        const at::Tensor& dw = g.weight;
        return {dh, dw, Variable(), Variable(), Variable()};
    }
};

// Embedding lookup whose weight trains. Its gradient is made in the gradients component; with a
// tied head it is the head's gradient (left in *tied_grad by the loss) with the looked-up rows
// added in place, instead of a second dense vocab × hidden tensor that autograd would add to
// the first out of place.
struct EmbeddingFn : public torch::autograd::Function<EmbeddingFn> {
    static Variable forward(AutogradContext* ctx, const Variable& weight, const Variable& ids, at::Tensor* tied_grad) {
        ctx->save_for_backward({ids});
        ctx->saved_data["rows"] = weight.size(0);
        ctx->saved_data["tied_grad"] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(tied_grad));
        return at::embedding(weight, ids);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const at::Tensor ids = ctx->get_saved_variables()[0];
        const std::int64_t rows = ctx->saved_data["rows"].toInt();
        auto* tied = reinterpret_cast<at::Tensor*>(static_cast<std::intptr_t>(ctx->saved_data["tied_grad"].toInt()));
        const at::Tensor& g = grads[0];
        // The gradient is the gradients component; what index_add_ needs on the way is working
        // memory. torch 2.x's CPU index_add_ along dim 0 runs as scatter_add
        // (aten/src/ATen/native/TensorAdvancedIndexing.cpp, index_add_cpu_out), which in a 16-bit
        // run holds 8 B × hidden of buffers while it runs (measured with torch 2.15: +2,048 B of
        // "gradients" at hidden 256, +512 B at hidden 64, none in fp32 or with libtorch 1.13).
        at::Tensor dw;
        if (tied && tied->defined()) {
            dw = std::move(*tied);
            *tied = at::Tensor();
            dw.index_add_(0, ids.reshape({-1}), g.reshape({-1, g.size(-1)}).to(dw.scalar_type()));
        } else {
            dw = at::embedding_dense_backward(g, ids, rows, -1, false);
            retag(dw, Component::Gradients);
        }
        return {dw, Variable(), Variable()};
    }
};

}  // namespace

at::Tensor lm_head_loss(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& labels,
                        at::Tensor* tied_grad, double final_softcap) {
    return LmHeadLossFn::apply(hidden, weight, labels, tied_grad, final_softcap);
}

at::Tensor Model::hidden_states(const at::Tensor& ids, bool checkpointing, KvCache* cache) const {
    const std::int64_t T = ids.size(1);
    const std::int64_t past = cache ? cache->length : 0;
    // Angles in double on the CPU (not every device has float64), then to the device; the double
    // [T, D] angles, positions and frequencies are freed here, not held through the layers.
    const auto on_device = at::TensorOptions().device(opt_.device).dtype(dtype_);
    at::Tensor cos, sin;
    {
        at::Tensor pos = at::arange(past, past + T, at::kDouble).unsqueeze(1);
        at::Tensor freq = at::tensor(inv_freq_, at::kDouble).unsqueeze(0);
        at::Tensor angles = pos * freq;                                    // [T, D/2]
        angles = at::cat({angles, angles}, -1);                            // [T, D]
        cos = angles.cos().to(on_device);
        sin = angles.sin().to(on_device);
    }
    // Query t (absolute past + t) sees keys 0 .. past + t.
    at::Tensor mask = at::full({T, past + T}, -std::numeric_limits<float>::infinity(), on_device).triu(past + 1);
    if (cache && cache->k.empty()) {
        cache->k.resize(cfg_.layers);
        cache->v.resize(cfg_.layers);
    }
    const bool embed_trains = embed_.requires_grad() && at::GradMode::is_enabled();
    at::Tensor x = embed_trains ? EmbeddingFn::apply(embed_, ids, cfg_.tied ? &tied_grad_ : nullptr)
                                : at::embedding(embed_, ids);
    // Gemma: × sqrt(hidden) rounded to the weights' dtype first, as transformers does.
    if (cfg_.scale_embeddings) x = x * at::scalar_tensor(std::sqrt(static_cast<double>(cfg_.hidden)), x.options());
    const at::Tensor window = cfg_.sliding_window > 0 ? sliding_window_mask(mask, past, cfg_.sliding_window) : mask;
    for (std::int64_t i = 0; i < cfg_.layers; ++i) {
        const at::Tensor& layer_mask = cfg_.layer_slides(i) ? window : mask;
        if (checkpointing && !cache && at::GradMode::is_enabled()) {
            // The checkpointed function needs an input that requires grad to be in the graph.
            if (!x.requires_grad()) x = x.detach().requires_grad_(true);
            x = CheckpointFn::apply(x, this, i, cos, sin, layer_mask);
        } else {
            x = layer_forward(i, x, cos, sin, layer_mask, cache);
        }
    }
    if (cache) cache->length += T;
    return rms_norm(x, final_norm_);
}

at::Tensor* Model::tied_grad_slot() const {
    return cfg_.tied && embed_.requires_grad() && at::GradMode::is_enabled() ? &tied_grad_ : nullptr;
}

void Model::set_adapters_enabled(bool on) {
    for (auto& layer : layers_)
        for (Linear* l : layer.linears()) l->adapter_on = on;
}

at::Tensor Model::loss(const at::Tensor& ids, const at::Tensor& labels, bool checkpointing) const {
    at::Tensor h = hidden_states(ids, checkpointing);
    const bool tied_trains = cfg_.tied && embed_.requires_grad() && at::GradMode::is_enabled();
    return lm_head_loss(h.reshape({-1, cfg_.hidden}), head_weight(), labels.reshape({-1}),
                        tied_trains ? &tied_grad_ : nullptr, cfg_.final_softcap);
}

std::vector<std::int64_t> Model::generate(const std::vector<std::int64_t>& prompt, std::int64_t tokens,
                                          std::int64_t stop_id, const std::function<bool()>& stop_requested) const {
    at::NoGradGuard no_grad;
    std::vector<std::int64_t> out;
    if (prompt.empty() || tokens <= 0) return out;
    KvCache cache;
    std::vector<std::int64_t> ctx = prompt;
    if (static_cast<std::int64_t>(ctx.size()) > cfg_.max_positions - tokens)
        ctx.erase(ctx.begin(), ctx.end() - std::max<std::int64_t>(1, cfg_.max_positions - tokens));
    at::Tensor ids = at::tensor(ctx, at::kLong).unsqueeze(0).to(opt_.device);
    for (std::int64_t t = 0; t < tokens; ++t) {
        if (stop_requested && stop_requested()) break;
        at::Tensor h = hidden_states(ids, false, &cache);
        at::Tensor last = h.select(1, h.size(1) - 1);                    // [1, H]
        const std::int64_t next = ops::matmul(last, head_weight().t()).argmax(-1).item<std::int64_t>();
        if (next == stop_id) break;
        out.push_back(next);
        ids = at::full({1, 1}, next, at::TensorOptions().dtype(at::kLong).device(opt_.device));
    }
    return out;
}

}  // namespace wingspan::train
