#pragma once
// The Llama-family decoder (Llama, Mistral, Qwen2, Qwen3 with q/k norms; Gemma 1/2 and Phi-3 through
// model_variants.hpp) on libtorch: RMSNorm, RoPE (theta, linear and llama3 scaling),
// grouped-query attention, SwiGLU, tied or untied head, q/k/v biases; LoRA adapters and NF4
// (double-quantized, 64-element blocks, core's nf4_layout) frozen weights.
#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/linear.hpp"
#include "memory/memory.hpp"
#include "memory/tensor_bytes.hpp"
#include "wingspan/architecture.hpp"
#include "wingspan/setup.hpp"

namespace wingspan::train {

struct ModelConfig {
    std::string model_type = "llama";
    std::int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
    std::int64_t intermediate = 0, vocab = 0, max_positions = 2048;
    bool tied = false, qkv_bias = false, o_bias = false, mlp_bias = false;
    bool qk_norm = false;                  // Qwen3: RMSNorm of each head's q and k before RoPE
    double rms_eps = 1e-6;
    double rope_theta = 10000.0;
    std::string rope_type;                 // "", "default", "linear", "llama3"
    double rope_factor = 1.0, low_freq_factor = 1.0, high_freq_factor = 4.0;
    std::int64_t original_max_positions = 8192;
    // Gemma 1/2 and Phi-3 (read and used by model_variants.cpp).
    std::string activation = "silu";       // the MLP's gate: "silu", "gelu_tanh" or "gelu" (erf)
    bool norm_plus_one = false;            // Gemma: RMSNorm scales by (1 + weight), in fp32
    bool scale_embeddings = false;         // Gemma: embeddings × sqrt(hidden) in the weights' dtype
    bool sandwich_norms = false;           // Gemma 2: norm after attention, pre/post feedforward norms
    bool fused_qkv = false, fused_gate_up = false;   // Phi-3: qkv_proj and gate_up_proj
    double attn_scale = 0;                 // 0: head_dim^-0.5; Gemma 2: query_pre_attn_scalar^-0.5
    double attn_softcap = 0, final_softcap = 0;      // Gemma 2: cap · tanh(x / cap); 0: none
    std::int64_t sliding_window = 0;       // keys within this many positions of the query; 0: none
    std::vector<bool> sliding_layers;      // which layers use the window (all when empty)
    bool layer_slides(std::int64_t i) const {
        return sliding_window > 0 && (sliding_layers.empty() || sliding_layers[static_cast<size_t>(i)]);
    }
    std::vector<std::string> warnings;

    // Reads a Hugging Face config.json; throws InputError naming a missing or bad field.
    static ModelConfig from_hf(const nlohmann::json& config);
    // The same from the shape core already read from `config` (Architecture::from_hf_config).
    static ModelConfig from_architecture(const Architecture& shape, const nlohmann::json& config);
    std::vector<double> inv_freq() const;  // RoPE frequencies after scaling
};

// The built-in architecture used when no --model is given (a Llama-style decoder of about
// 3 M parameters; one step at sequence 128, batch 4 takes a fraction of a second on 2 cores).
nlohmann::json default_model_config(std::int64_t vocab);


struct Layer {
    at::Tensor input_norm, post_norm;
    at::Tensor q_norm, k_norm;         // [head_dim], Qwen3 only
    at::Tensor pre_ff_norm, post_ff_norm;   // Gemma 2 only
    // Phi-3 keeps its fused qkv_proj in q and gate_up_proj in gate; k, v and up are then unused
    // (out == 0) and left out of linears().
    Linear q, k, v, o, gate, up, down;
    std::vector<Linear*> linears() {
        std::vector<Linear*> all{&q, &k, &v, &o, &gate, &up, &down};
        std::erase_if(all, [](const Linear* l) { return l->out == 0; });
        return all;
    }
    std::vector<const Linear*> linears() const {
        std::vector<const Linear*> all{&q, &k, &v, &o, &gate, &up, &down};
        std::erase_if(all, [](const Linear* l) { return l->out == 0; });
        return all;
    }
};

struct ModelOptions {
    Method method = Method::Lora;
    Precision precision = Precision::Fp32;
    std::int64_t rank = 8;
    double alpha = 16;
    double dropout = 0;
    std::set<LinearRole> targets;
    bool sdpa = false;                 // at::_scaled_dot_product_attention instead of eager
    c10::Device device{c10::kCPU};     // where every tensor of the model lives
};

struct NamedTensor {
    std::string name;                  // HF / PEFT name
    at::Tensor tensor;
    Component component;
    bool trainable = false;
};

// Expected HF tensors of an architecture: name -> shape.
std::vector<std::pair<std::string, std::vector<std::int64_t>>> expected_tensors(const ModelConfig& c);

class Model {
public:
    Model(ModelConfig cfg, ModelOptions opt);
    // Supplies one HF tensor by name with the expected shape (any float dtype).
    using Source = std::function<at::Tensor(const std::string& name, const std::vector<std::int64_t>& shape)>;
    // Builds every tensor: from `source` or, when it is empty, random (normal, std 0.02, seeded).
    // Tensors are attributed to their components as they are made.
    void build(const Source& source, std::uint64_t seed);
    // Fresh LoRA adapters (A: Kaiming-uniform, B: zeros), seeded.
    void init_adapters(std::uint64_t seed);

    // Mean cross-entropy over labels != -100 (ids and labels: int64 [B, T]).
    at::Tensor loss(const at::Tensor& ids, const at::Tensor& labels, bool checkpointing) const;
    // Greedy continuation of `prompt` (no grad). `stop_requested`, when given, is asked before
    // each token: true ends the continuation there (a stop signal during the sample).
    std::vector<std::int64_t> generate(const std::vector<std::int64_t>& prompt, std::int64_t tokens,
                                       std::int64_t stop_id,
                                       const std::function<bool()>& stop_requested = {}) const;

    // Every stored tensor with its name and component (base, quantized parts, adapters).
    std::vector<NamedTensor> tensors() const;
    std::vector<NamedTensor> trainable() const;
    std::int64_t base_parameter_count() const;
    std::int64_t adapter_parameter_count() const;
    // PEFT's target_modules for the adapted linears ("q_proj", ...; Phi-3: "qkv_proj", "gate_up_proj").
    std::vector<std::string> target_modules() const;
    // Logits of final hidden states [.., H] (Gemma 2: soft-capped), in fp32.
    at::Tensor logits(const at::Tensor& hidden) const;
    const c10::Device& device() const { return opt_.device; }
    const ModelConfig& config() const { return cfg_; }
    // Preference tuning (objective_preference.cpp): the head's weight, and where a tied head
    // that trains leaves its gradient for the embedding's backward (nullptr: not tied or frozen).
    at::Tensor head() const { return head_weight(); }
    at::Tensor* tied_grad_slot() const;
    // The LoRA adapters in or out of every forward: out, the model is its base (DPO's reference
    // for a LoRA policy, as PEFT's disable_adapter() gives TRL; no copy).
    void set_adapters_enabled(bool on);
    at::ScalarType compute_dtype() const { return dtype_; }

    // Keys and values of earlier positions, per layer (generation only).
    struct KvCache {
        std::vector<at::Tensor> k, v;
        std::int64_t length = 0;
    };
    // One decoder layer (public for the checkpointing function). mask: [Tq, Tk] additive.
    at::Tensor layer_forward(std::int64_t i, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                             const at::Tensor& mask, KvCache* cache = nullptr) const;
    // Final-norm hidden states of ids [B, T] (positions continue after the cache, if given).
    at::Tensor hidden_states(const at::Tensor& ids, bool checkpointing, KvCache* cache = nullptr) const;

private:
    at::Tensor head_weight() const { return cfg_.tied ? embed_ : head_; }
    at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w) const;
    at::Tensor unfused_rms_norm(const at::Tensor& x, const at::Tensor& w) const;   // Gemma, q/k norms
    at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) const;

    ModelConfig cfg_;
    ModelOptions opt_;
    at::ScalarType dtype_ = at::kFloat;
    at::Tensor embed_, final_norm_, head_;
    std::vector<Layer> layers_;
    std::vector<double> inv_freq_;
    // A tied head's gradient between the loss's backward and the embedding's (see model.cpp).
    mutable at::Tensor tied_grad_;
};

// Cross-entropy of (hidden @ weight^T) against labels, with the logits, their fp32 upcast
// and their gradient attributed to logits_loss. hidden: [N, H], labels: int64 [N].
// tied_grad: for a head tied to a training embedding, where the head's weight gradient is left
// for the embedding's backward to complete in place (the loss then returns none for weight).
// final_softcap > 0 (Gemma 2): the logits are soft-capped, cap · tanh(x / cap), inside the same
// passes (kernels_loss.hpp), so a capped head costs what an uncapped one does plus 8 B per token.
at::Tensor lm_head_loss(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& labels,
                        at::Tensor* tied_grad = nullptr, double final_softcap = 0);

}  // namespace wingspan::train
