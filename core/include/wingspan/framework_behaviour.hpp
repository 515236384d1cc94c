#pragma once
// How a framework keeps its tensors, beyond the reference (Hugging Face transformers' eager/SDPA
// modules): the flags of a framework profile's behaviour sections, typed and parsed once
// (profiles.cpp), so the memory model reads fields instead of JSON. Each default is the reference;
// each flag's "why" is written in kBehaviourKeys (framework_behaviour.cpp), from which
// profiles/frameworks/README.md's key table is generated.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace wingspan {

struct FrameworkBehaviour {
    struct Qlora {
        bool keeps_linear_inputs = false;              // bitsandbytes ≤ 0.43.1 MatMul4Bit keeps (A, B)
        bool quantized_linear_keeps_no_input = false;  // wingspan-train's NF4 op keeps no input
        std::int64_t extra_embedding_copies = 0;       // LitGPT's QLoRA set-up leaves these
        // The caching allocator's reserve in a QLoRA plan, in place of the profile's allocator_slack
        // and allocator_slack_of (< 0: the profile's pair), replayed from a recorded QLoRA step.
        double allocator_slack = -1;
        std::string allocator_slack_of = "transient";
    } qlora;
    struct Compile {
        bool present = false;             // the profile has data on what torch.compile changes
        bool enabled = false;             // the framework runs torch.compile
        bool fuses_loss_upcast = false;   // the loss's fp32 upcast + log-softmax is one kernel
        bool recomputes_pointwise = false;// the partitioner recomputes pointwise ops in backward
    } compile;
    struct Kernels {
        bool norm_saves_input_only = false;
        bool gated_mlp_saves_gate_up = false;
        bool gated_activation_saves_gate_up = false;
        bool norm_recomputes_normalized = false;
        std::vector<std::string> unfused_model_types;   // model_types the kernels leave as plain ops
    } kernels;
    struct Attention {
        bool eager_scores_workspace = false;
        bool flash_backward_workspace = false;
        bool sdpa_runs_math = false;
        bool sdpa_grouped_kv = false;
    } attention;
    struct Model {
        bool unties_embeddings = false;
        bool rotary_table_once = false;
        bool fused_qkv_lora = false;   // one q/k/v linear whose LoRA drops its input out once (LitGPT)
        bool v_views_fused_qkv = false;   // v stays a view of the fused q/k/v output where heads are not grouped
        bool pads_partial_qkv_lora = false;   // LoRA on some of q, k, v scatters into the fused width (LitGPT)
        bool frozen_linear_keeps_no_input = false;   // a frozen linear saves no input for backward
        bool norm_scales_in_fp32 = false;   // RMSNorm multiplies by weight.float(): fp32 x_normed and weight copy kept
        bool splits_fused_projections = false;   // Phi-3's qkv_proj and gate_up_proj loaded as separate linears (LitGPT)
        bool qkv_backward_moment = false;   // the first layer's q/k/v backward is a moment of its own (wingspan-train)
        bool lora_linear_one_node = false;   // an adapted frozen linear (no dropout) is one autograd node (wingspan-train)
    } model;
    struct Loss {
        // Apple's Cut Cross-Entropy (cut-cross-entropy 24.12): the loss and its gradients straight from
        // the hidden states and the head, no logits (Unsloth 2025.1 above 1,024 tokens).
        bool cut_cross_entropy = false;
        std::int64_t cut_cross_entropy_above_tokens = 0;   // tokens a batch must exceed to take it
        // The loss shifts a contiguous copy of the fp32 logits (transformers 4.46-4.48 ForCausalLMLoss):
        // one more fp32 [b, s-1, vocab] in forward where b > 1 (one sequence's slice is contiguous).
        bool shifts_logits_copy = false;
        // The model itself returns fp32 logits (torchtune before #1390: TransformerDecoder.forward's
        // `self.output(h).float()`): the logits kept are 4 B per token × vocab, no upcast copy is made.
        bool logits_fp32 = false;
        // The training path returns the head's logits without Gemma 2's final soft cap (LitGPT before
        // 0.5.5: lora.py GPT.forward with lm_head_chunk_size skipped it): no tanh output kept.
        bool skips_final_softcap = false;
        // The training loop holds the previous micro-batch's logits until the next forward returns
        // (LitGPT: `logits = model(...)` rebinds them), and through them that step's autograd graph.
        bool previous_logits_held = false;
    } loss;
    struct Objective {
        bool reference_before_policy = false;
        bool fused_logprob_head = false;
        bool logprob_labelled_only = false;   // the fused head's tile over labelled positions only
    } objective;
    struct Checkpointing {
        // With offloaded checkpoints the first layer's input stays on the device too: it is a leaf that
        // requires grad (the embeddings' enable_input_require_grads hook) and its gradient accumulator
        // holds it for the step, whatever the offloader copies to host RAM.
        bool offload_keeps_first_input = false;
    } checkpointing;

    // The pre-quantized checkpoint formats the framework loads as stored (quantization.checkpoints,
    // names as --quant spells them: "awq", "gptq", "fp8", ...); empty: it loads none.
    std::vector<std::string> checkpoint_formats;

    // Whether the fused kernels cover this model_type (kernels.unfused_model_types leaves it out).
    bool kernels_cover(const std::string& model_type) const;
    // Whether it loads checkpoints stored in `format` (a --quant name).
    bool loads_checkpoint(const std::string& format) const;
};

// One key of a framework profile's behaviour sections: where it lives, its type and default, and
// what it means (with the framework source that shows it).
struct BehaviourKey {
    const char* section;          // "compile"; "" for a top-level key
    const char* key;              // "enabled"
    const char* type;             // "bool", "integer", "string", "array of strings", "object"
    std::string default_text;     // "false", "nf4", "0 (all)"
    const char* meaning;
    // The FrameworkBehaviour flag this key sets, or nullptr for a key read into FrameworkProfile's
    // own fields (defaults, dtypes, quantization, loss, checkpointing, qlora.upcast_non_quantized).
    bool& (*flag)(FrameworkBehaviour&) = nullptr;
};
const std::vector<BehaviourKey>& behaviour_keys();

// Reads the typed flags of the behaviour sections of profile `j` (file names the errors); the
// sections' unknown keys were rejected before.
FrameworkBehaviour parse_framework_behaviour_flags(const nlohmann::json& j, const std::string& file);

// profiles/frameworks/README.md's key table, written from behaviour_keys(), between these markers.
inline constexpr const char* kBehaviourTableBegin = "<!-- behaviour keys: generated from core/src/profiles/framework_behaviour.cpp -->";
inline constexpr const char* kBehaviourTableEnd = "<!-- end of generated behaviour keys -->";
std::string behaviour_keys_markdown();

}  // namespace wingspan
