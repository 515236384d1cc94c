#pragma once
// A decoder-only transformer as described by a Hugging Face config.json, reduced to the
// facts the memory model needs, and an exact inventory of its parameter tensors.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace wingspan {

enum class MlpKind { Gated, Plain };          // SwiGLU/GeGLU (3 matrices) vs GPT-2 style (2)
enum class NormKind { RmsNorm, LayerNorm };   // LayerNorm carries a bias

// Which linear a tensor is, so LoRA and quantization can target it by its usual short name.
// Head is the LM head (lm_head), a LoRA target outside the layers (LitGPT lora_head, PEFT lm_head,
// torchtune apply_lora_to_output); a tied model's embedding plays that part.
enum class LinearRole { Q, K, V, O, Gate, Up, Down, Router, SharedGate, Head, None };
const char* linear_role_name(LinearRole r);   // "q", "k", ..., "head", "" for None

enum class TensorKind { Embedding, PositionEmbedding, Head, Linear, Bias, Norm };

// A group of identical parameter tensors: `count` tensors of shape rows x cols
// (cols == 1 for vectors). Linear weights are [out_features, in_features] as in PyTorch.
struct TensorGroup {
    std::string name;          // e.g. "layers.*.self_attn.q_proj.weight"
    TensorKind kind;
    LinearRole role = LinearRole::None;
    std::int64_t rows = 0;
    std::int64_t cols = 1;
    std::int64_t count = 1;
    bool in_experts = false;   // routed MoE expert weight (active only for top-k tokens)
    std::int64_t elements() const { return rows * cols; }
    std::int64_t total_elements() const { return rows * cols * count; }
};

struct Architecture {
    std::string model_type = "llama";   // config.json "model_type"
    std::int64_t hidden = 0;
    std::int64_t layers = 0;
    std::int64_t heads = 0;
    std::int64_t kv_heads = 0;
    std::int64_t head_dim = 0;
    std::int64_t intermediate = 0;
    std::int64_t vocab = 0;
    std::int64_t max_positions = 0;
    bool tied_embeddings = false;
    bool qkv_bias = false;              // Qwen2
    bool o_bias = false;
    bool mlp_bias = false;
    bool qk_norm = false;               // Qwen3: per-head RMSNorm on q and k
    int norms_per_layer = 2;            // Gemma-2 has 4: each sublayer's output is normed too
    // Gemma 2's soft caps, cap · tanh(x / cap), on the attention scores and on the logits
    // (config.json attn_logit_softcapping, final_logit_softcapping); 0: none.
    double attn_logit_softcap = 0;
    double final_logit_softcap = 0;
    bool learned_positions = false;     // GPT-2
    // Phi-3's checkpoint fuses q, k, v (qkv_proj) and gate, up (gate_up_proj); a framework that loads
    // them into its own layout (LitGPT: one q/k/v linear adapted per projection, separate gate and up
    // linears) plans them as separate linears (tensor_groups).
    bool split_fused_projections = false;
    MlpKind mlp = MlpKind::Gated;
    NormKind norm = NormKind::RmsNorm;
    double rope_theta = 10000.0;
    // Mixture of experts (0 experts: dense).
    std::int64_t experts = 0;
    std::int64_t experts_per_token = 0;
    std::int64_t expert_intermediate = 0;
    std::int64_t shared_expert_intermediate = 0;
    // Fields the reader had to assume, for a visible warning.
    std::vector<std::string> assumptions;

    std::int64_t q_dim() const { return heads * head_dim; }
    std::int64_t kv_dim() const { return kv_heads * head_dim; }
    bool is_moe() const { return experts > 0; }
    // q/k/v and gate/up as the fused matrices Phi-3's checkpoint stores, unless split_fused_projections.
    bool fuses_projections() const { return model_type == "phi3" && !split_fused_projections; }

    // Every parameter tensor, grouped by identical shape and role.
    std::vector<TensorGroup> tensor_groups() const;
    std::int64_t parameter_count() const;
    // Parameters a token actually passes through (MoE: top-k experts only); equals
    // parameter_count() for dense models. Used for FLOPs.
    std::int64_t active_parameter_count() const;
    // Checks internal consistency; throws InputError naming the field.
    void validate() const;

    // Reads config.json fields. Throws InputError naming a missing or malformed field.
    static Architecture from_hf_config(const nlohmann::json& config);
    nlohmann::json to_hf_config() const;
};

// A model family walked by the size slider: real architectures ordered by size.
// `scaled` returns an architecture of (close to) `target_params` by interpolating depth,
// width and MLP ratio between the two neighbouring real members; exact members come back
// unchanged.
Architecture interpolate_family(const std::vector<Architecture>& family_by_size,
                                std::int64_t target_params);

}  // namespace wingspan
