#include "wingspan/architecture.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "wingspan/errors.hpp"

namespace wingspan {

using nlohmann::json;

const char* linear_role_name(LinearRole r) {
    switch (r) {
        case LinearRole::Q: return "q";
        case LinearRole::K: return "k";
        case LinearRole::V: return "v";
        case LinearRole::O: return "o";
        case LinearRole::Gate: return "gate";
        case LinearRole::Up: return "up";
        case LinearRole::Down: return "down";
        case LinearRole::Router: return "router";
        case LinearRole::SharedGate: return "shared_gate";
        case LinearRole::Head: return "head";
        case LinearRole::None: return "";
    }
    return "";
}

std::vector<TensorGroup> Architecture::tensor_groups() const {
    std::vector<TensorGroup> g;
    const std::int64_t L = layers;
    auto add = [&](std::string name, TensorKind kind, LinearRole role, std::int64_t rows,
                   std::int64_t cols, std::int64_t count, bool in_experts = false) {
        if (rows > 0 && cols > 0 && count > 0)
            g.push_back({std::move(name), kind, role, rows, cols, count, in_experts});
    };
    const bool layer_norm = norm == NormKind::LayerNorm;

    add("embed_tokens.weight", TensorKind::Embedding, LinearRole::None, vocab, hidden, 1);
    if (learned_positions)
        add("embed_positions.weight", TensorKind::PositionEmbedding, LinearRole::None,
            max_positions, hidden, 1);

    add("layers.*.norm.weight", TensorKind::Norm, LinearRole::None, hidden, 1, L * norms_per_layer);
    if (layer_norm)
        add("layers.*.norm.bias", TensorKind::Norm, LinearRole::None, hidden, 1, L * norms_per_layer);

    // Phi-3 stores q, k, v as one qkv_proj and gate, up as one gate_up_proj: the same parameters,
    // but LoRA adapts each fused matrix as one linear (PEFT's target_modules name them), unless the
    // framework splits them on loading (split_fused_projections).
    const bool fused = fuses_projections();
    if (fused) {
        add("layers.*.self_attn.qkv_proj.weight", TensorKind::Linear, LinearRole::Q, q_dim() + 2 * kv_dim(), hidden, L);
    } else {
        add("layers.*.self_attn.q_proj.weight", TensorKind::Linear, LinearRole::Q, q_dim(), hidden, L);
        add("layers.*.self_attn.k_proj.weight", TensorKind::Linear, LinearRole::K, kv_dim(), hidden, L);
        add("layers.*.self_attn.v_proj.weight", TensorKind::Linear, LinearRole::V, kv_dim(), hidden, L);
    }
    add("layers.*.self_attn.o_proj.weight", TensorKind::Linear, LinearRole::O, hidden, q_dim(), L);
    if (qkv_bias) {
        add("layers.*.self_attn.q_proj.bias", TensorKind::Bias, LinearRole::Q, q_dim(), 1, L);
        add("layers.*.self_attn.k_proj.bias", TensorKind::Bias, LinearRole::K, kv_dim(), 1, L);
        add("layers.*.self_attn.v_proj.bias", TensorKind::Bias, LinearRole::V, kv_dim(), 1, L);
    }
    if (o_bias) add("layers.*.self_attn.o_proj.bias", TensorKind::Bias, LinearRole::O, hidden, 1, L);
    if (qk_norm) {
        add("layers.*.self_attn.q_norm.weight", TensorKind::Norm, LinearRole::None, head_dim, 1, L);
        add("layers.*.self_attn.k_norm.weight", TensorKind::Norm, LinearRole::None, head_dim, 1, L);
    }

    auto add_mlp = [&](const std::string& prefix, std::int64_t inner, std::int64_t count,
                       bool in_experts) {
        if (fused && mlp == MlpKind::Gated) {
            add(prefix + ".gate_up_proj.weight", TensorKind::Linear, LinearRole::Gate, 2 * inner, hidden, count, in_experts);
        } else {
            if (mlp == MlpKind::Gated)
                add(prefix + ".gate_proj.weight", TensorKind::Linear, LinearRole::Gate, inner, hidden,
                    count, in_experts);
            add(prefix + ".up_proj.weight", TensorKind::Linear, LinearRole::Up, inner, hidden, count,
                in_experts);
        }
        add(prefix + ".down_proj.weight", TensorKind::Linear, LinearRole::Down, hidden, inner,
            count, in_experts);
        if (mlp_bias) {
            if (mlp == MlpKind::Gated)
                add(prefix + ".gate_proj.bias", TensorKind::Bias, LinearRole::Gate, inner, 1,
                    count, in_experts);
            add(prefix + ".up_proj.bias", TensorKind::Bias, LinearRole::Up, inner, 1, count,
                in_experts);
            add(prefix + ".down_proj.bias", TensorKind::Bias, LinearRole::Down, hidden, 1, count,
                in_experts);
        }
    };
    if (is_moe()) {
        add("layers.*.mlp.gate.weight", TensorKind::Linear, LinearRole::Router, experts, hidden, L);
        add_mlp("layers.*.mlp.experts.*", expert_intermediate, L * experts, true);
        if (shared_expert_intermediate > 0) {
            add_mlp("layers.*.mlp.shared_expert", shared_expert_intermediate, L, false);
            add("layers.*.mlp.shared_expert_gate.weight", TensorKind::Linear,
                LinearRole::SharedGate, 1, hidden, L);
        }
    } else {
        add_mlp("layers.*.mlp", intermediate, L, false);
    }

    add("norm.weight", TensorKind::Norm, LinearRole::None, hidden, 1, 1);
    if (layer_norm) add("norm.bias", TensorKind::Norm, LinearRole::None, hidden, 1, 1);
    if (!tied_embeddings)
        add("lm_head.weight", TensorKind::Head, LinearRole::None, vocab, hidden, 1);
    return g;
}

std::int64_t Architecture::parameter_count() const {
    std::int64_t n = 0;
    for (const auto& t : tensor_groups()) n += t.total_elements();
    return n;
}

std::int64_t Architecture::active_parameter_count() const {
    if (!is_moe()) return parameter_count();
    std::int64_t n = 0;
    for (const auto& t : tensor_groups()) {
        if (t.in_experts)
            n += t.total_elements() / experts * experts_per_token;
        else
            n += t.total_elements();
    }
    return n;
}

void Architecture::validate() const {
    auto need = [](bool ok, const char* field, const char* what) {
        if (!ok) throw InputError(std::string("architecture: '") + field + "' " + what);
    };
    need(hidden > 0, "hidden_size", "must be a positive integer");
    need(layers > 0, "num_hidden_layers", "must be a positive integer");
    need(heads > 0, "num_attention_heads", "must be a positive integer");
    need(kv_heads > 0 && kv_heads <= heads, "num_key_value_heads",
         "must be between 1 and num_attention_heads");
    need(heads % kv_heads == 0, "num_key_value_heads", "must divide num_attention_heads");
    need(head_dim > 0, "head_dim", "must be a positive integer");
    need(vocab > 0, "vocab_size", "must be a positive integer");
    need(is_moe() ? expert_intermediate > 0 : intermediate > 0, "intermediate_size",
         "must be a positive integer");
    need(!is_moe() || (experts_per_token > 0 && experts_per_token <= experts),
         "num_experts_per_tok", "must be between 1 and the number of experts");
    // Sizes from a downloaded file: bounded so the products below stay exact in 64 bits.
    constexpr std::int64_t kMaxDim = (std::int64_t(1) << 31) - 1;
    const std::pair<std::int64_t, const char*> sizes[] = {
        {hidden, "hidden_size"}, {layers, "num_hidden_layers"}, {heads, "num_attention_heads"},
        {head_dim, "head_dim"}, {vocab, "vocab_size"}, {intermediate, "intermediate_size"},
        {expert_intermediate, "moe_intermediate_size"},
        {shared_expert_intermediate, "shared_expert_intermediate_size"}, {experts, "num_experts"},
        {max_positions, "max_position_embeddings"}};
    for (const auto& [value, field] : sizes) {
        need(value <= kMaxDim, field, "is larger than any model can be (at most 2^31 - 1)");
        // Optional sizes may be 0 (absent); a negative one made a negative MoE width (UBSan, fuzz_config).
        need(value >= 0, field, "must not be negative");
    }
    long double params = 0;
    for (const auto& t : tensor_groups()) params += static_cast<long double>(t.rows) * t.cols * t.count;
    need(params <= 1e15L, "config.json", "describes more than 10^15 parameters; no machine can hold that model");
}

namespace {

// Reads a positive integer from the first of several field names.
std::int64_t read_int(const json& c, std::initializer_list<const char*> names, bool required,
                      std::int64_t fallback = 0) {
    for (const char* n : names) {
        auto it = c.find(n);
        if (it == c.end() || it->is_null()) continue;
        if (!it->is_number_integer() && !(it->is_number() && std::floor(it->get<double>()) == it->get<double>()))
            throw InputError(std::string("config.json: field '") + n +
                             "' must be an integer, got " + it->dump());
        return it->get<std::int64_t>();
    }
    if (required)
        throw InputError(std::string("config.json: missing field '") + *names.begin() + "'");
    return fallback;
}

bool read_bool(const json& c, const char* name, bool fallback, bool* present = nullptr) {
    auto it = c.find(name);
    if (present) *present = it != c.end() && !it->is_null();
    if (it == c.end() || it->is_null()) return fallback;
    if (!it->is_boolean())
        throw InputError(std::string("config.json: field '") + name + "' must be true or false");
    return it->get<bool>();
}

}  // namespace

// A field of the wrong JSON type anywhere below is the file's fault: bad input, not internal.
Architecture Architecture::from_hf_config(const json& c) try {
    if (!c.is_object()) throw InputError("config.json: expected a JSON object");
    Architecture a;
    a.model_type = c.value("model_type", std::string());
    if (a.model_type.empty()) {
        a.model_type = "llama";
        a.assumptions.push_back("model_type missing: read as a Llama-style decoder");
    }
    const std::string& mt = a.model_type;
    const bool gpt2 = mt == "gpt2";
    static const char* kKnown[] = {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2",
                                   "phi3", "gpt2", "mixtral", "qwen2_moe", "qwen3_moe", "smollm"};
    if (std::find_if(std::begin(kKnown), std::end(kKnown), [&](const char* k) { return mt == k; }) ==
        std::end(kKnown))
        a.assumptions.push_back("model_type '" + mt +
                                "' is not a bundled family: read as a Llama-style decoder");

    a.hidden = read_int(c, {"hidden_size", "n_embd", "d_model"}, true);
    a.layers = read_int(c, {"num_hidden_layers", "n_layer", "num_layers"}, true);
    a.heads = read_int(c, {"num_attention_heads", "n_head"}, true);
    a.kv_heads = read_int(c, {"num_key_value_heads"}, false, 0);
    if (a.kv_heads == 0) {
        a.kv_heads = a.heads;
        if (!gpt2 && mt != "llama" && mt != "phi3" && mt != "gemma")
            a.assumptions.push_back("num_key_value_heads missing: assumed equal to the attention heads (no GQA)");
    }
    a.head_dim = read_int(c, {"head_dim"}, false, 0);
    if (a.head_dim == 0) {
        if (a.heads <= 0 || a.hidden % a.heads != 0)
            throw InputError("config.json: hidden_size must be divisible by num_attention_heads when head_dim is absent");
        a.head_dim = a.hidden / a.heads;
    }
    a.vocab = read_int(c, {"vocab_size"}, true);
    a.max_positions = read_int(c, {"max_position_embeddings", "n_positions"}, false, 0);

    const bool tied_default = gpt2 || mt == "gemma" || mt == "gemma2";
    bool tied_present = false;
    a.tied_embeddings = read_bool(c, "tie_word_embeddings", tied_default, &tied_present);
    if (!tied_present && !gpt2 && !(mt == "gemma" || mt == "gemma2"))
        a.assumptions.push_back(std::string("tie_word_embeddings missing: assumed ") +
                                (tied_default ? "true" : "false"));

    if (auto it = c.find("rope_theta"); it != c.end() && it->is_number())
        a.rope_theta = it->get<double>();
    // Soft caps: a positive number; absent, null (Gemma 3 writes null) or 0 for none.
    auto softcap = [&](const char* key) {
        const auto it = c.find(key);
        if (it == c.end() || it->is_null()) return 0.0;
        if (!it->is_number() || !(it->get<double>() >= 0) || !std::isfinite(it->get<double>()))
            throw InputError(std::string("config.json: ") + key + " must be a number ≥ 0 or null");
        return it->get<double>();
    };
    a.attn_logit_softcap = softcap("attn_logit_softcapping");
    a.final_logit_softcap = softcap("final_logit_softcapping");

    if (gpt2) {
        // GPT-2's default 4 × hidden, for a hidden size validate() can accept (a hostile one
        // would overflow here; 0 is then refused as intermediate_size).
        const bool sane_hidden = a.hidden > 0 && a.hidden <= (std::int64_t(1) << 31);
        a.intermediate = read_int(c, {"n_inner"}, false, sane_hidden ? 4 * a.hidden : 0);
        a.mlp = MlpKind::Plain;
        a.norm = NormKind::LayerNorm;
        a.learned_positions = true;
        a.qkv_bias = a.o_bias = a.mlp_bias = true;
        if (a.max_positions == 0) {
            a.max_positions = 1024;
            a.assumptions.push_back("n_positions missing: assumed 1024");
        }
    } else {
        a.qkv_bias = mt == "qwen2" || mt == "qwen2_moe";
        if (read_bool(c, "attention_bias", false)) a.qkv_bias = a.o_bias = true;
        a.mlp_bias = read_bool(c, "mlp_bias", false);
        a.qk_norm = mt == "qwen3" || mt == "qwen3_moe";
        a.norms_per_layer = mt == "gemma2" ? 4 : 2;
        const bool moe = c.contains("num_local_experts") ||
                         (c.contains("num_experts") && !c["num_experts"].is_null() &&
                          read_int(c, {"num_experts"}, false, 0) > 0);
        if (moe) {
            a.experts = read_int(c, {"num_local_experts", "num_experts"}, true);
            a.experts_per_token = read_int(c, {"num_experts_per_tok"}, false, 2);
            a.expert_intermediate =
                read_int(c, {"moe_intermediate_size", "intermediate_size"}, true);
            a.shared_expert_intermediate =
                read_int(c, {"shared_expert_intermediate_size"}, false, 0);
            a.intermediate = read_int(c, {"intermediate_size"}, false, a.expert_intermediate);
        } else {
            a.intermediate = read_int(c, {"intermediate_size"}, true);
        }
    }
    a.validate();
    return a;
} catch (const json::exception& e) {
    throw InputError(std::string("config.json: a field has the wrong type (") + e.what() + ")");
}

json Architecture::to_hf_config() const {
    json c;
    c["model_type"] = model_type;
    if (model_type == "gpt2") {
        c["n_embd"] = hidden;
        c["n_layer"] = layers;
        c["n_head"] = heads;
        c["n_inner"] = intermediate;
        c["n_positions"] = max_positions;
        c["vocab_size"] = vocab;
        c["tie_word_embeddings"] = true;
        return c;
    }
    c["hidden_size"] = hidden;
    c["num_hidden_layers"] = layers;
    c["num_attention_heads"] = heads;
    c["num_key_value_heads"] = kv_heads;
    c["head_dim"] = head_dim;
    c["intermediate_size"] = intermediate;
    c["vocab_size"] = vocab;
    c["max_position_embeddings"] = max_positions;
    c["tie_word_embeddings"] = tied_embeddings;
    c["rope_theta"] = rope_theta;
    if (o_bias) c["attention_bias"] = true;
    if (mlp_bias) c["mlp_bias"] = true;
    if (attn_logit_softcap > 0) c["attn_logit_softcapping"] = attn_logit_softcap;
    if (final_logit_softcap > 0) c["final_logit_softcapping"] = final_logit_softcap;
    if (is_moe()) {
        c["num_experts"] = experts;
        c["num_experts_per_tok"] = experts_per_token;
        c["moe_intermediate_size"] = expert_intermediate;
        if (shared_expert_intermediate > 0)
            c["shared_expert_intermediate_size"] = shared_expert_intermediate;
    }
    return c;
}

Architecture interpolate_family(const std::vector<Architecture>& family, std::int64_t target) {
    if (family.empty()) throw InputError("interpolate_family: empty family");
    std::vector<std::pair<std::int64_t, const Architecture*>> sized;
    for (const auto& a : family) sized.emplace_back(a.parameter_count(), &a);
    std::sort(sized.begin(), sized.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    if (target <= sized.front().first) return *sized.front().second;
    if (target >= sized.back().first) return *sized.back().second;
    size_t hi = 1;
    while (sized[hi].first < target) ++hi;
    const auto& [pa, a] = sized[hi - 1];
    const auto& [pb, b] = sized[hi];
    // A member within 2 % is the real thing; a synthetic neighbour would only add noise.
    if (std::abs(static_cast<double>(target - pa)) <= 0.02 * pa) return *a;
    if (std::abs(static_cast<double>(pb - target)) <= 0.02 * pb) return *b;

    const double t = (std::log(double(target)) - std::log(double(pa))) /
                     (std::log(double(pb)) - std::log(double(pa)));
    auto lerp = [t](double x, double y) { return x + (y - x) * t; };
    Architecture s = *a;
    s.assumptions.clear();
    s.head_dim = a->head_dim;
    const double hidden = std::exp(lerp(std::log(double(a->hidden)), std::log(double(b->hidden))));
    s.heads = std::max<std::int64_t>(1, std::llround(hidden / s.head_dim));
    s.hidden = s.heads * s.head_dim;
    const double group = lerp(double(a->heads) / a->kv_heads, double(b->heads) / b->kv_heads);
    s.kv_heads = std::max<std::int64_t>(1, std::llround(s.heads / std::max(1.0, group)));
    while (s.heads % s.kv_heads != 0) --s.kv_heads;
    const double ratio = lerp(double(a->intermediate) / a->hidden, double(b->intermediate) / b->hidden);
    s.intermediate = std::max<std::int64_t>(256, std::llround(ratio * s.hidden / 256.0) * 256);
    if (s.is_moe()) s.expert_intermediate = s.intermediate;
    s.tied_embeddings = t < 0.5 ? a->tied_embeddings : b->tied_embeddings;
    // Depth is what lands the count on target: everything else per layer is now fixed.
    Architecture one = s;
    one.layers = 1;
    Architecture two = s;
    two.layers = 2;
    const std::int64_t per_layer = two.parameter_count() - one.parameter_count();
    const std::int64_t outside = one.parameter_count() - per_layer;
    s.layers = std::max<std::int64_t>(1, std::llround(double(target - outside) / per_layer));
    s.assumptions.push_back("interpolated between two real members of the family for the size slider");
    return s;
}

}  // namespace wingspan
