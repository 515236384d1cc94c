// Gemma 1/2 and Phi-3, read from the Hugging Face modelling code's semantics
// (transformers: models/gemma/modular_gemma.py, gemma2/modeling_gemma2.py, phi3/modular_phi3.py):
//  - Gemma: RMSNorm scales by (1 + weight) in fp32; embeddings × sqrt(hidden_size) rounded to the
//    weights' dtype; GeGLU with the tanh approximation; tied head by default.
//  - Gemma 2: the same plus a norm on the attention output before the residual, norms before and
//    after the MLP, scores scaled by query_pre_attn_scalar^-0.5 and soft-capped
//    (attn_logit_softcapping) before the mask, a sliding window on the layers that layer_types
//    names (even layers by default), and final logits soft-capped (final_logit_softcapping).
//  - Phi-3: qkv_proj = [q; k; v] and gate_up_proj = [gate; up] (rows), plain RoPE; longrope/su
//    scaling and partial rotary factors are refused rather than run wrongly.
#include "model/model_variants.hpp"

#include <cmath>
#include <limits>

#include "kernels/device_ops.hpp"
#include "model/model.hpp"
#include "wingspan/errors.hpp"

namespace wingspan::train {

using nlohmann::json;

namespace {

bool present(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

double number_or(const json& j, const char* key, double fallback) {
    if (!j.contains(key)) return fallback;
    if (j[key].is_null()) return 0;   // an explicit null switches the feature off, as in transformers
    if (!j[key].is_number()) throw InputError(std::string("config.json: \"") + key + "\" is not a number");
    const double v = j[key].get<double>();
    if (!(v >= 0)) throw InputError(std::string("config.json: \"") + key + "\" must not be negative");
    return v;
}

std::string activation_of(const json& j, const ModelConfig& c) {
    const bool gemma = c.model_type == "gemma" || c.model_type == "gemma2";
    std::string act;
    if (gemma && present(j, "hidden_activation")) {
        act = j["hidden_activation"].get<std::string>();
    } else {
        act = j.value("hidden_act", gemma ? "gelu_pytorch_tanh" : "silu");
        // Gemma checkpoints saved before hidden_activation existed say "gelu"; transformers then
        // runs the tanh approximation (Gemma's own) and warns.
        if (gemma && act == "gelu") act = "gelu_pytorch_tanh";
    }
    if (act == "silu" || act == "swish") return "silu";
    if (act == "gelu_pytorch_tanh" || act == "gelu_new" || act == "gelu_fast") return "gelu_tanh";
    if (act == "gelu") return "gelu";
    throw InputError("config.json: hidden_act \"" + act + "\" is not supported (silu, gelu, gelu_pytorch_tanh)");
}

}  // namespace

void read_variant_config(const json& j, ModelConfig& c) {
    c.activation = activation_of(j, c);
    const std::string& mt = c.model_type;
    if (mt == "gemma" || mt == "gemma2") {
        c.norm_plus_one = true;
        c.scale_embeddings = true;
        if (!present(j, "tie_word_embeddings")) c.tied = true;   // GemmaConfig's default
    }
    if (mt == "gemma2") {
        c.sandwich_norms = true;
        const double scalar = number_or(j, "query_pre_attn_scalar", 256);
        if (!(scalar > 0)) throw InputError("config.json: \"query_pre_attn_scalar\" must be positive");
        c.attn_scale = 1.0 / std::sqrt(scalar);
        c.attn_softcap = number_or(j, "attn_logit_softcapping", 50.0);
        c.final_softcap = number_or(j, "final_logit_softcapping", 30.0);
        c.sliding_window = static_cast<std::int64_t>(number_or(j, "sliding_window", 4096));
        c.sliding_layers.assign(static_cast<size_t>(c.layers), false);
        if (present(j, "layer_types")) {
            const auto& types = j["layer_types"];
            if (!types.is_array() || static_cast<std::int64_t>(types.size()) != c.layers)
                throw InputError("config.json: \"layer_types\" must list one type per layer");
            for (size_t i = 0; i < types.size(); ++i) c.sliding_layers[i] = types[i] == "sliding_attention";
        } else {
            for (std::int64_t i = 0; i < c.layers; i += 2) c.sliding_layers[static_cast<size_t>(i)] = true;
        }
    }
    if (mt == "mistral" || mt == "phi3")   // every layer, when the config names a window
        c.sliding_window = static_cast<std::int64_t>(number_or(j, "sliding_window", 0));
    if (mt == "phi3") {
        c.fused_qkv = c.fused_gate_up = true;
        if (present(j, "rope_scaling")) {
            const auto& r = j["rope_scaling"];
            const std::string type = r.is_object() ? r.value("rope_type", r.value("type", std::string("?"))) : "?";
            if (type != "default")
                throw InputError("config.json: Phi-3 rope_scaling \"" + type +
                                 "\" (the long-context variants) is not supported by wingspan-train; "
                                 "the 4k-context Phi-3 models (rope_scaling null) are");
        }
        if (present(j, "partial_rotary_factor") && j["partial_rotary_factor"].get<double>() != 1.0)
            throw InputError("config.json: partial_rotary_factor other than 1 is not supported by wingspan-train");
        if (c.qkv_bias || c.o_bias || c.mlp_bias)
            throw InputError("config.json: Phi-3 with biases is not a released architecture (attention_bias/mlp_bias)");
    }
}

void adjust_expected_tensors(const ModelConfig& c, std::vector<std::pair<std::string, std::vector<std::int64_t>>>& t) {
    if (!c.fused_qkv && !c.fused_gate_up && !c.sandwich_norms) return;
    const std::int64_t qkv = (c.heads + 2 * c.kv_heads) * c.head_dim;
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> out;
    for (auto& [name, shape] : t) {
        const std::string prefix = name.substr(0, name.find('.', name.find("layers.") + 7) + 1);
        if (c.fused_qkv && name.ends_with("self_attn.q_proj.weight")) {
            out.push_back({prefix + "self_attn.qkv_proj.weight", {qkv, c.hidden}});
        } else if (c.fused_qkv && (name.ends_with("self_attn.k_proj.weight") || name.ends_with("self_attn.v_proj.weight"))) {
            continue;
        } else if (c.fused_gate_up && name.ends_with("mlp.gate_proj.weight")) {
            out.push_back({prefix + "mlp.gate_up_proj.weight", {2 * c.intermediate, c.hidden}});
        } else if (c.fused_gate_up && name.ends_with("mlp.up_proj.weight")) {
            continue;
        } else {
            out.push_back({name, shape});
            if (c.sandwich_norms && name.ends_with("post_attention_layernorm.weight")) {
                out.push_back({prefix + "pre_feedforward_layernorm.weight", {c.hidden}});
                out.push_back({prefix + "post_feedforward_layernorm.weight", {c.hidden}});
            }
        }
    }
    t = std::move(out);
}

void configure_fused_layer(const ModelConfig& c, Layer& L, std::set<LinearRole>& targets) {
    if (c.fused_qkv) {
        L.q.name = L.q.name.substr(0, L.q.name.size() - 6) + "qkv_proj";   // "...self_attn.q_proj"
        L.q.out = (c.heads + 2 * c.kv_heads) * c.head_dim;
        L.k.out = L.v.out = 0;
        if (targets.count(LinearRole::K) || targets.count(LinearRole::V)) targets.insert(LinearRole::Q);
    }
    if (c.fused_gate_up) {
        L.gate.name = L.gate.name.substr(0, L.gate.name.size() - 9) + "gate_up_proj";   // "...mlp.gate_proj"
        L.gate.out = 2 * c.intermediate;
        L.up.out = 0;
        if (targets.count(LinearRole::Up)) targets.insert(LinearRole::Gate);
    }
}

namespace {

// fp16 on a CPU without half kernels (libtorch 1.13 has no half gelu or tanh there): computed
// in fp32 and rounded back, as device_ops does for matmul and silu.
bool half_emulated(const at::Tensor& x) {
    return x.is_cpu() && x.scalar_type() == at::kHalf && !ops::cpu_half_kernels();
}

}  // namespace

at::Tensor gate_activation(const ModelConfig& c, const at::Tensor& gate) {
    if (c.activation == "silu") return ops::silu(gate);
    const at::Tensor g = half_emulated(gate) ? gate.to(at::kFloat) : gate;
    const at::Tensor y = c.activation == "gelu_tanh" ? at::gelu(g, "tanh") : at::gelu(g);
    return y.scalar_type() == gate.scalar_type() ? y : y.to(gate.scalar_type());
}

at::Tensor soft_cap(const at::Tensor& x, double cap) {
    if (half_emulated(x)) return (at::tanh(x.to(at::kFloat) / cap) * cap).to(at::kHalf);
    return at::tanh(x / cap) * cap;
}

at::Tensor sliding_window_mask(const at::Tensor& causal, std::int64_t past, std::int64_t window) {
    const std::int64_t T = causal.size(0), K = causal.size(1);
    at::Tensor q = at::arange(past, past + T, at::kLong).unsqueeze(1);
    at::Tensor k = at::arange(K, at::kLong).unsqueeze(0);
    at::Tensor far = (k <= q - window).to(causal.device());
    return causal.masked_fill(far, -std::numeric_limits<float>::infinity());
}

std::vector<std::string> Model::target_modules() const {
    std::vector<std::string> out;
    if (opt_.method == Method::Full || layers_.empty()) return out;
    for (const Linear* l : layers_.front().linears()) {
        if (!opt_.targets.count(l->role)) continue;
        out.push_back(l->name.substr(l->name.rfind('.') + 1));
    }
    return out;
}

at::Tensor Model::logits(const at::Tensor& hidden) const {
    at::Tensor z = ops::matmul(hidden.to(at::kFloat), head_weight().to(at::kFloat).t());
    return cfg_.final_softcap > 0 ? soft_cap(z, cfg_.final_softcap) : z;
}

}  // namespace wingspan::train
