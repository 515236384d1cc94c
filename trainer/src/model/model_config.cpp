// A Hugging Face config.json as the trainer builds it (ModelConfig), the built-in demo model's
// config, and the tensors a checkpoint of that config must hold.
#include <cmath>
#include <set>

#include "model/model.hpp"
#include "model/model_variants.hpp"
#include "wingspan/errors.hpp"

namespace wingspan::train {

ModelConfig ModelConfig::from_hf(const nlohmann::json& j) { return from_architecture(Architecture::from_hf_config(j), j); }

// The shape (sizes, biases, tying, the families' defaults) comes from core's reader, the one
// config.json parser the planner uses too, so the trainer cannot build a different model than the
// one planned. Read here: only what the forward needs beyond the shape (norm epsilon, RoPE
// scaling, the Gemma/Phi-3 variants) and the families this trainer implements.
ModelConfig ModelConfig::from_architecture(const Architecture& a, const nlohmann::json& j) {
    ModelConfig c;
    c.model_type = a.model_type;
    static const std::set<std::string> supported = {"llama", "mistral", "qwen2", "qwen3", "smollm", "smollm2",
                                                    "gemma", "gemma2", "phi3"};
    if (!supported.count(c.model_type) || a.is_moe())
        throw InputError("config.json: model_type \"" + c.model_type +
                         (a.is_moe() ? "\" with experts" : "\"") +
                         " is not supported by wingspan-train (llama, mistral, qwen2, qwen3, gemma, gemma2, phi3)");
    c.hidden = a.hidden;
    c.layers = a.layers;
    c.heads = a.heads;
    c.kv_heads = a.kv_heads;
    c.head_dim = a.head_dim;
    c.intermediate = a.intermediate;
    c.vocab = a.vocab;
    if (a.max_positions > 0) c.max_positions = a.max_positions;
    c.tied = a.tied_embeddings;
    c.qkv_bias = a.qkv_bias;
    c.o_bias = a.o_bias;
    c.mlp_bias = a.mlp_bias;
    c.qk_norm = a.qk_norm;
    c.rope_theta = a.rope_theta;
    if (j.contains("rms_norm_eps") && j["rms_norm_eps"].is_number()) c.rms_eps = j["rms_norm_eps"].get<double>();
    if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
        const auto& r = j["rope_scaling"];
        c.rope_type = r.value("rope_type", r.value("type", std::string("default")));
        c.rope_factor = r.value("factor", 1.0);
        c.low_freq_factor = r.value("low_freq_factor", 1.0);
        c.high_freq_factor = r.value("high_freq_factor", 4.0);
        c.original_max_positions = r.value("original_max_position_embeddings", std::int64_t{8192});
        if (c.rope_type != "default" && c.rope_type != "linear" && c.rope_type != "llama3") {
            c.warnings.push_back("rope_scaling type \"" + c.rope_type +
                                 "\" is not implemented; plain RoPE is used (fine within the original context)");
            c.rope_type = "default";
        }
    }
    if (c.head_dim % 2 != 0) throw InputError("config.json: head_dim must be even for RoPE");
    read_variant_config(j, c);   // activation, Gemma and Phi-3 fields
    return c;
}

std::vector<double> ModelConfig::inv_freq() const {
    std::vector<double> f(head_dim / 2);
    for (std::int64_t i = 0; i < head_dim / 2; ++i)
        f[i] = 1.0 / std::pow(rope_theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
    if (rope_type == "linear") {
        for (auto& x : f) x /= rope_factor;
    } else if (rope_type == "llama3") {
        const double low_wavelen = original_max_positions / low_freq_factor;
        const double high_wavelen = original_max_positions / high_freq_factor;
        for (auto& x : f) {
            const double wavelen = 2 * M_PI / x;
            if (wavelen < high_wavelen) continue;
            if (wavelen > low_wavelen) {
                x /= rope_factor;
            } else {
                const double smooth = (original_max_positions / wavelen - low_freq_factor) /
                                      (high_freq_factor - low_freq_factor);
                x = (1 - smooth) * x / rope_factor + smooth * x;
            }
        }
    }
    return f;
}

nlohmann::json default_model_config(std::int64_t vocab) {
    return {{"architectures", {"LlamaForCausalLM"}},
            {"model_type", "llama"},
            {"hidden_size", 256},
            {"intermediate_size", 688},
            {"num_hidden_layers", 4},
            {"num_attention_heads", 8},
            {"num_key_value_heads", 4},
            {"head_dim", 32},
            {"vocab_size", vocab},
            {"max_position_embeddings", 2048},
            {"rms_norm_eps", 1e-5},
            {"rope_theta", 10000.0},
            {"tie_word_embeddings", true},
            {"attention_bias", false},
            {"mlp_bias", false},
            {"hidden_act", "silu"},
            {"torch_dtype", "float32"}};
}

std::vector<std::pair<std::string, std::vector<std::int64_t>>> expected_tensors(const ModelConfig& c) {
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> t;
    const std::int64_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
    t.push_back({"model.embed_tokens.weight", {c.vocab, c.hidden}});
    for (std::int64_t i = 0; i < c.layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        t.push_back({p + "input_layernorm.weight", {c.hidden}});
        t.push_back({p + "self_attn.q_proj.weight", {q, c.hidden}});
        if (c.qkv_bias) t.push_back({p + "self_attn.q_proj.bias", {q}});
        t.push_back({p + "self_attn.k_proj.weight", {kv, c.hidden}});
        if (c.qkv_bias) t.push_back({p + "self_attn.k_proj.bias", {kv}});
        t.push_back({p + "self_attn.v_proj.weight", {kv, c.hidden}});
        if (c.qkv_bias) t.push_back({p + "self_attn.v_proj.bias", {kv}});
        t.push_back({p + "self_attn.o_proj.weight", {c.hidden, q}});
        if (c.o_bias) t.push_back({p + "self_attn.o_proj.bias", {c.hidden}});
        if (c.qk_norm) {
            t.push_back({p + "self_attn.q_norm.weight", {c.head_dim}});
            t.push_back({p + "self_attn.k_norm.weight", {c.head_dim}});
        }
        t.push_back({p + "post_attention_layernorm.weight", {c.hidden}});
        t.push_back({p + "mlp.gate_proj.weight", {c.intermediate, c.hidden}});
        if (c.mlp_bias) t.push_back({p + "mlp.gate_proj.bias", {c.intermediate}});
        t.push_back({p + "mlp.up_proj.weight", {c.intermediate, c.hidden}});
        if (c.mlp_bias) t.push_back({p + "mlp.up_proj.bias", {c.intermediate}});
        t.push_back({p + "mlp.down_proj.weight", {c.hidden, c.intermediate}});
        if (c.mlp_bias) t.push_back({p + "mlp.down_proj.bias", {c.hidden}});
    }
    t.push_back({"model.norm.weight", {c.hidden}});
    if (!c.tied) t.push_back({"lm_head.weight", {c.vocab, c.hidden}});
    adjust_expected_tensors(c, t);
    return t;
}

}  // namespace wingspan::train
