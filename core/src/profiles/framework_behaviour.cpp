#include "wingspan/framework_behaviour.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "wingspan/errors.hpp"
#include "wingspan/quant_formats.hpp"

namespace wingspan {

using nlohmann::json;

bool FrameworkBehaviour::kernels_cover(const std::string& model_type) const {
    return std::find(kernels.unfused_model_types.begin(), kernels.unfused_model_types.end(), model_type) ==
           kernels.unfused_model_types.end();
}

bool FrameworkBehaviour::loads_checkpoint(const std::string& format) const {
    return std::find(checkpoint_formats.begin(), checkpoint_formats.end(), format) != checkpoint_formats.end();
}

namespace {

// The accessor of one typed flag: (behaviour.*Section).*Member.
template <auto Section, auto Member>
bool& flag_at(FrameworkBehaviour& b) {
    return (b.*Section).*Member;
}

using B = FrameworkBehaviour;

// A flag key: its default is the typed struct's.
template <auto Section, auto Member>
BehaviourKey flag(const char* section, const char* key, const char* meaning) {
    FrameworkBehaviour defaults;
    return {section, key, "bool", flag_at<Section, Member>(defaults) ? "true" : "false", meaning, &flag_at<Section, Member>};
}

// The profile's own top-level keys (not behaviour sections), listed first in the README's table.
std::vector<BehaviourKey> profile_keys() {
    return {
        {"", "aliases", "array of strings", "none",
         "other ids that resolve to this profile (`hf-transformers` answers to `pytorch-cuda`, `mlx-lm` to `mlx`)"},
        {"", "devices", "array of strings", "all kinds",
         "where it runs: `gpu`, `unified`, `cpu` (the window offers a machine the frameworks of its kind)"},
        {"", "releases", "object", "none",
         "earlier releases whose behaviour differs, keyed by release (`\"2025.1\"`): each has a `summary` (the versions "
         "and the source that shows the difference) and `behaviour`, the sections that differ, applied over the profile as "
         "a JSON merge patch and checked like the profile's own. `--framework unsloth@2025.1` (and a published case's "
         "`framework_release`) plans with that release; the profile's own sections describe the current release"},
        {"", "queued_bytes", "integer", "0",
         "bytes of arrays that the GPU's queued work keeps alive after their last use, counted as allocated in every "
         "phase (MLX 0.29: a committed command buffer holds every array it touched until the GPU completes it, "
         "mlx/backend/metal/eval.cpp; evaluation waits once more than MAX_ACTIVE_TASKS = 10 are in flight, "
         "mlx/transforms.cpp; a buffer is committed once its arrays pass max_mb_per_buffer, 50 MiB on Max and Ultra chips, "
         "mlx/backend/metal/device.cpp: 11 × 50 MiB)"},
        {"", "kv_cache_step", "integer", "0 (exact)",
         "serving: the KV cache is allocated in blocks of this many positions, so a context holds its length rounded up "
         "(mlx-lm's `KVCache.step = 256`, mlx_lm/models/cache.py)"},
    };
}

// The "model" section: how the framework's own model code differs from the reference modules.
std::vector<BehaviourKey> model_keys() {
    return {
        flag<&B::model, &B::Model::rotary_table_once>(
            "model", "rotary_table_once",
            "the rotary cos/sin are built from one row of position ids and kept once per batch (s·head_dim each) instead "
            "of per row (b·s·head_dim)"),
        flag<&B::model, &B::Model::unties_embeddings>(
            "model", "unties_embeddings",
            "the framework's own model keeps a separate LM head even where the checkpoint ties it to the embedding (LitGPT "
            "copies it into `lm_head` when it converts a checkpoint)"),
        flag<&B::model, &B::Model::fused_qkv_lora>(
            "model", "fused_qkv_lora",
            "q, k and v are one linear and LoRA on it applies its dropout once to the shared input for all of them "
            "(LitGPT `qkv` with litgpt/lora.py LoRAQKVLinear: `F.linear(self.lora_dropout(x), self.lora_A)`): one "
            "dropped copy and mask (b·s·hidden·3 B) where separate q, k, v adapters keep one each"),
        flag<&B::model, &B::Model::v_views_fused_qkv>(
            "model", "v_views_fused_qkv",
            "v is a view of one fused q/k/v output wherever each query head has its own KV head (multi-head attention: "
            "nothing repeats K/V), so the attention that saves v keeps that whole output: b·s·(q_dim + kv_dim) more "
            "per layer (LitGPT)"),
        flag<&B::model, &B::Model::pads_partial_qkv_lora>(
            "model", "pads_partial_qkv_lora",
            "with LoRA on some but not all of q, k and v, the fused q/k/v adapter scatters its B outputs into the "
            "fused width (LitGPT `zero_pad`: `index_copy_`, whose backward keeps its whole source): b·s·(adapted "
            "q/k/v output dims) in the compute dtype and an int64 column index more per layer"),
        flag<&B::model, &B::Model::splits_fused_projections>(
            "model", "splits_fused_projections",
            "the framework loads a checkpoint's fused q/k/v and gate/up projections (Phi-3's qkv_proj, gate_up_proj) "
            "into its own layout: LoRA adapts q, k and v each (with model.fused_qkv_lora one dropout for the three) "
            "and gate and up are separate linears, each with its own adapter, where PEFT adapts each fused matrix as one "
            "linear (LitGPT: scripts/convert_hf_checkpoint.py splits gate_up_proj into mlp.fc_1 and mlp.fc_2)"),
        flag<&B::model, &B::Model::qkv_backward_moment>(
            "model", "qkv_backward_moment",
            "in a full fine-tune the first layer's q, k and v projections run their backward as a moment of its own, "
            "after the attention's: every weight gradient but the embedding's and the first input norm's exists, beside "
            "the input norm's saved tensors, q's input gradient and the norm output's gradient summed from v and k and "
            "from q (wingspan-train: separate q, k, v linears, autograd running them v, k, q)"),
        flag<&B::model, &B::Model::lora_linear_one_node>(
            "model", "lora_linear_one_node",
            "a frozen dense linear with an adapter and no dropout runs as one autograd node, the adapter's product "
            "added into the frozen product's output by the GEMM and, in backward, its input gradient into the frozen "
            "product's: the output's gradient is not held while a separate adapter node runs first (wingspan-train "
            "LoraLinearFn)"),
        flag<&B::model, &B::Model::frozen_linear_keeps_no_input>(
            "model", "frozen_linear_keeps_no_input",
            "a frozen linear saves no input for backward (torch's mm keeps its input only for its weight's gradient), "
            "so with LoRA or QLoRA a norm output, the attention output or the MLP product is kept only where an adapter "
            "with no dropout reads it; with `qlora.keeps_linear_inputs` they are all kept, by bitsandbytes, once"),
        flag<&B::model, &B::Model::norm_scales_in_fp32>(
            "model", "norm_scales_in_fp32",
            "RMSNorm scales by its weight in fp32 (LitGPT: `(x_normed * weight.float()).to(dtype)`): a trainable weight "
            "keeps the fp32 normalized input (b·s·hidden·4 B a norm, not in the compute dtype), and a 16-bit weight an "
            "fp32 copy of itself (hidden·4 B a norm) for the input's gradient")
    };
}

// The loss section's keys: what the head and the loss keep per token × vocab.
std::vector<BehaviourKey> loss_keys() {
    return {
        {"loss", "logits_held", "bool", "true", "the model returns the full logits and they live until backward"},
        {"loss", "upcast_fp32", "bool", "true", "the loss runs on fp32 logits (its saved log-softmax is fp32)"},
        {"loss", "fused", "bool", "false",
         "the loss and its gradient are computed in forward chunk by chunk; nothing per token × vocab is kept (Unsloth)"},
        {"loss", "chunks", "integer", "0 (none)", "a fixed number of chunks the tokens are split into (torchtune 8)"},
        {"loss", "chunk_positions", "integer", "0 (none)",
         "sequence positions per chunk, taken from every row of the micro-batch: b × this many tokens a chunk (LitGPT 128: "
         "`x.split(128, dim=1)` on [b, s, h])"},
        {"loss", "chunk_fp32_bytes", "integer", "0 (none)",
         "as many chunks (a multiple of `chunks_multiple`) as keep one chunk's fp32 logits under this many bytes (Unsloth: "
         "4 GiB)"},
        {"loss", "chunks_multiple", "integer", "1", "the chunk count is a multiple of this (Unsloth: 4)"},
        flag<&B::loss, &B::Loss::cut_cross_entropy>(
            "loss", "cut_cross_entropy",
            "Apple's Cut Cross-Entropy takes the hidden states and the head (cut-cross-entropy 24.12 `cce.py` "
            "LinearCrossEntropyFunction): no logits; forward keeps an fp32 log-sum-exp and an int64 index per token and an "
            "fp32 average per vocabulary entry, backward allocates the hidden states' and the head's gradients (`zeros_like`, "
            "the head's even when frozen). Unsloth 2025.1 (release `2025.1` of its profile)"),
        flag<&B::loss, &B::Loss::shifts_logits_copy>(
            "loss", "shifts_logits_copy",
            "the loss shifts the fp32 logits with `logits[..., :-1, :].contiguous()` (transformers 4.46.0 to at least 4.48.0 "
            "`loss/loss_utils.py` ForCausalLMLoss): one more fp32 b·(s−1)·vocab in forward when b > 1; one sequence's slice "
            "is already contiguous (release `4.46` of the hf-transformers profile). With `chunk_positions` only the last "
            "chunk is shifted and copied (LitGPT: `logits[-1][..., :-1, :]`, reshaped by chunked_cross_entropy)"),
        flag<&B::loss, &B::Loss::logits_fp32>(
            "loss", "logits_fp32",
            "the model returns fp32 logits (torchtune before #1390, e.g. 30c75d4a7 `torchtune/modules/transformer.py` line "
            "226 `output = self.output(h).float()`; LitGPT, whose Fabric precision wrapper converts the returned chunks to "
            "the default dtype): the logits kept until backward are 4 B per token × vocab where the compute dtype has 2, "
            "and the loss makes no fp32 copy of its own (the 16-bit head output lives only while it is upcast, beside its "
            "fp32 copy as the model returns)"),
        flag<&B::loss, &B::Loss::skips_final_softcap>(
            "loss", "skips_final_softcap",
            "the training path returns the head's logits without the model's final soft cap (Gemma 2 "
            "`final_logit_softcapping`, cap·tanh(logits / cap), whose tanh keeps its output: one more [tokens, vocab] in "
            "the head's dtype until the loss's backward). LitGPT 0.4.x: litgpt/lora.py GPT.forward with "
            "`lm_head_chunk_size` (its fine-tuning scripts pass 128) returned the chunks uncapped (@ 2b195c7f); capped "
            "from 17a58dfa (#1891, v0.5.5)"),
        flag<&B::loss, &B::Loss::previous_logits_held>(
            "loss", "previous_logits_held",
            "the training loop keeps the previous micro-batch's logits until the next forward returns (LitGPT "
            "finetune/lora.py: `logits = model(input_ids, lm_head_chunk_size=128)` rebinds them), and through their "
            "grad_fn that step's autograd graph: saved tensors are freed by backward, but what a custom autograd "
            "function keeps on its ctx is not, so with `qlora.keeps_linear_inputs` (bitsandbytes <= 0.43.1 MatMul4Bit "
            "`ctx.tensors = (A, B)`) the previous micro-batch's 4-bit linear inputs are alive at the end of the forward"),
        {"loss", "head_vocab_chunk", "integer", "0 (none)",
         "the head and the loss run together in blocks of this many vocabulary columns and return per-token "
         "log-probabilities, recomputing each block in backward: no [tokens, vocab] tensor (prime-rl 266f5a66a "
         "`src/prime_rl/trainer/models/layers/lm_head.py` FusedOutputLinear, 2048 for its RL trainer); forward keeps the "
         "hidden states, the int64 labels and an fp32 log-Z per token, backward makes the head's gradient in the compute "
         "dtype (`zeros_like(weight)`)"},
        {"loss", "cut_cross_entropy_above_tokens", "integer", "0 (always)",
         "with `cut_cross_entropy`, only batches of more tokens take it; smaller ones keep the profile's other loss keys "
         "(Unsloth 2025.1: 1,024, `if bsz*q_len <= 1024: RETURN_LOGITS = True`)"}
    };
}

}  // namespace

const std::vector<BehaviourKey>& behaviour_keys() {
    static const std::vector<BehaviourKey> keys = [] {
        std::vector<BehaviourKey> all = profile_keys();
        const std::vector<BehaviourKey> sections = {
        {"defaults", "precision", "string", "the planner's",
         "the precision the framework trains in when the user does not say: `bf16` (bf16-true: no autocast, no master), "
         "`bf16-mixed` (autocast), `fp32`, `fp16-mixed`"},
        {"defaults", "quantization", "string", "the planner's", "QLoRA storage when not given: `nf4`, `nf4-dq`, `int8`"},
        {"defaults", "grad_checkpointing", "bool", "the planner's", "`true` / `false` when the framework's recipe decides it"},
        {"defaults", "lora_layers", "integer", "0 (all)", "adapters on the last N layers (mlx-lm `--num-layers`, 16); 0 = all"},
        {"dtypes", "*", "object", "the textbook scheme",
         "bytes per element, keyed `\"<method>/<precision>\"` or `\"<precision>\"` (the method key wins field by field): "
         "`frozen`, `trainable`, `adapter`, `gradient` (absent: as its parameter), `master` (4: an fp32 copy of 16-bit "
         "trainables; 0: none), `moments` (AdamW state). Absent keys keep the precision's textbook scheme: fp32 4/4/–/4, "
         "bf16-mixed 2/2/4/4, bf16 2/2/–/2"},
        {"qlora", "extra_embedding_copies", "integer", "0",
         "copies of the token embedding a QLoRA set-up leaves on the device (LitGPT: the replaced table still referenced + "
         "the new one's uncleared gradient); 0 to 4"},
        {"qlora", "allocator_slack", "number", "the profile's `allocator_slack`",
         "the caching allocator's reserve in a QLoRA plan, in place of the profile's `allocator_slack` (0 to 1, a fraction "
         "of `qlora.allocator_slack_of`): a step's own sequence of allocations fragments the allocator differently for each "
         "method, so a figure replayed from a recorded QLoRA step (bench/allocator) applies to QLoRA plans only"},
        {"qlora", "allocator_slack_of", "string", "transient",
         "what `qlora.allocator_slack` is a fraction of: `peak` or `transient` (the activations and logits at the peak)"},
        {"qlora", "upcast_non_quantized", "bool", "false",
         "QLoRA preparation casts every non-quantized 16-bit parameter (embeddings, head, norms) to fp32 (peft "
         "`prepare_model_for_kbit_training`)"},
        flag<&B::qlora, &B::Qlora::keeps_linear_inputs>(
            "qlora", "keeps_linear_inputs",
            "the 4-bit linear keeps its input for backward (bitsandbytes ≤ 0.43.1 `MatMul4Bit`: `ctx.tensors = (A, B)`): per "
            "layer b·s·(2·hidden + q_dim + intermediate)·2 B more, plus the head's input. Off in the bundled profiles "
            "(current bitsandbytes keeps `(None, B)`); a published case measured with an older release sets it in its "
            "`framework_behaviour`"),
        flag<&B::qlora, &B::Qlora::quantized_linear_keeps_no_input>(
            "qlora", "quantized_linear_keeps_no_input",
            "the 4-bit linear keeps no input for backward (wingspan-train's NF4 op), where a frozen torch linear keeps its "
            "own: a linear's input stays only for an adapter's A product on it"),
        {"quantization", "format", "string", "nf4",
         "`nf4` (bitsandbytes / torchao: 64-value blocks, fp32 absmax or double quant) or `affine` (MLX: `group` values "
         "share a scale and a bias)"},
        {"quantization", "group", "integer", "64", "affine group size"},
        {"quantization", "constant_bytes", "integer", "4", "affine: bytes of constants per group (scale + bias in bf16: 4)"},
        {"quantization", "dequantize_bytes_per_weight", "number", "0 (one compute-dtype copy)",
         "bytes per element alive while a quantized weight (the down projection in backward, a quantized head for each "
         "chunk) is dequantized for its matmul, where the framework does it in several unfused ops (torchao's "
         "NF4Tensor.get_original_weight: 14.03; bitsandbytes 0.41/0.42 under Lightning's plugin, whose quantization state "
         "is fp16: the fp16 copy and its bf16 cast, 4); not with `compile.enabled`, whose generated kernel fuses the chain"},
        {"quantization", "checkpoints", "array of strings", "none",
         "the pre-quantized checkpoint formats it loads as stored for serving, as `--quant` names them: `awq`, `gptq`, "
         "`gptq-int8`, `fp8`, `fp8-channel`, `fp8-block` (core/include/wingspan/quant_formats.hpp prices their tensors); a "
         "serve plan in a format the machine's framework does not list does not run there"},
        {"quantization", "matmul_reads_packed", "bool", "false",
         "the quantized matmuls read the packed codes in their kernels, forward and backward (MLX `quantized_matmul`: "
         "the qmm/qmv kernels of mlx/backend/metal/quantized.cpp; its vjp is another quantized_matmul): no weight is "
         "dequantized whole for serving, for the down projection's backward or for a quantized head"},
        {"quantization", "embeddings", "bool", "false", "the token embedding is quantized too (MLX)"},
        {"quantization", "head", "bool", "false", "the LM head is quantized too (MLX; LitGPT via Fabric)"},
        {"checkpointing", "offload", "bool", "false",
         "checkpointed layer inputs live in host RAM (Unsloth's `\"unsloth\"` checkpointing)"},
        flag<&B::checkpointing, &B::Checkpointing::offload_keeps_first_input>(
            "checkpointing", "offload_keeps_first_input",
            "with `offload`, the first layer's input stays on the device as well where the embedding is frozen: its "
            "output is a leaf that requires grad (PEFT's and Unsloth's enable_input_require_grads hook), and autograd's "
            "gradient accumulator holds it for the whole step, whatever the offloader copies to host RAM"),
        flag<&B::objective, &B::Objective::reference_before_policy>(
            "objective", "reference_before_policy",
            "DPO/KTO score the reference (no_grad) before the policy's forward, not beside its graph and logits as TRL "
            "does (wingspan-train)"),
        flag<&B::objective, &B::Objective::fused_logprob_head>(
            "objective", "fused_logprob_head",
            "beyond SFT the framework takes per-token log-probs through a fused head that keeps the final hidden states "
            "for backward, even with a frozen head (TRL 1.16)"),
        flag<&B::objective, &B::Objective::logprob_labelled_only>(
            "objective", "logprob_labelled_only",
            "the fused log-prob head projects only the labelled positions and folds its tile in place (TRL 1.16 with "
            "Triton on CUDA/XPU, trl/trainer/utils.py `compact = _use_triton`) rather than every position with the torch "
            "fold's fp32 temporaries (the CPU)"),
        {"objective", "logprob_tile_tokens", "integer", "4096",
         "the fused log-prob head's tile: at most this many tokens projected at once (TRL 1.16 trl/kernels/chunked_logprob.py)"},
        {"objective", "logprob_tile_vocab", "integer", "32768",
         "the fused log-prob head's tile width in vocabulary entries, allocated whole even for a smaller vocabulary (TRL "
         "1.16 trl/trainer/utils.py: chunk 32,768)"},
        flag<&B::kernels, &B::Kernels::norm_saves_input_only>(
            "kernels", "norm_saves_input_only",
            "the framework's fused RMSNorm keeps its 16-bit input and rstd (Unsloth `Fast_RMS_Layernorm`)"),
        flag<&B::kernels, &B::Kernels::gated_mlp_saves_gate_up>(
            "kernels", "gated_mlp_saves_gate_up", "a fused SwiGLU MLP keeps its gate and up projections (Unsloth `LoRA_MLP`)"),
        flag<&B::kernels, &B::Kernels::norm_recomputes_normalized>(
            "kernels", "norm_recomputes_normalized",
            "the norm weight's gradient comes from the kept input and rstd: no normalized copy in full fine-tuning "
            "(wingspan-train, trainer/src/kernels/kernels_fused.cpp)"),
        flag<&B::kernels, &B::Kernels::gated_activation_saves_gate_up>(
            "kernels", "gated_activation_saves_gate_up",
            "act(gate)·up is one op keeping gate and up while the down projection keeps the product: three b·s·i tensors, "
            "not four (wingspan-train, trainer/src/kernels/kernels_fused.cpp)"),
        {"kernels", "unfused_model_types", "array of strings", "none",
         "the `model_type`s the kernels leave unfused keep the reference terms (wingspan-train: Gemma's (1 + weight) norm "
         "and GELU gate)"},
        flag<&B::compile, &B::Compile::enabled>(
            "compile", "enabled", "the framework runs torch.compile on the model and loss (torchtune's recipe key `compile`; off by default)"),
        flag<&B::compile, &B::Compile::fuses_loss_upcast>(
            "compile", "fuses_loss_upcast",
            "with `compile.enabled`, the loss's fp32 upcast + log-softmax is one generated kernel: the 16-bit logits and a "
            "per-token fp32 logsumexp are kept, nothing fp32 per token × vocab"),
        flag<&B::compile, &B::Compile::recomputes_pointwise>(
            "compile", "recomputes_pointwise",
            "with `compile.enabled`, pointwise ops are recomputed in backward (AOTAutograd's partitioner): a norm keeps its "
            "16-bit input and rstd, a gated MLP its gate and up outputs"),
        flag<&B::attention, &B::Attention::eager_scores_workspace>(
            "attention", "eager_scores_workspace",
            "eager attention materialises the masked scores (b·heads·s², compute dtype) beside its fp32 softmax in "
            "forward: a `forward_attention` phase with that workspace"),
        flag<&B::attention, &B::Attention::sdpa_runs_math>(
            "attention", "sdpa_runs_math",
            "the runtime has no fused SDPA kernel (libtorch 1.13 on CPU): `sdpa` runs as the eager graph, keeping q, K and "
            "V repeated to every query head, the output and the b·heads·s² softmax"),
        flag<&B::attention, &B::Attention::sdpa_grouped_kv>(
            "attention", "sdpa_grouped_kv",
            "the framework passes K and V to SDPA with their own (grouped) heads (`enable_gqa=True`) instead of repeating "
            "them to every query head: SDPA saves k and v at b·s·kv_dim, and its backward expands dk, dv like the `flash` "
            "kind"),
        flag<&B::attention, &B::Attention::flash_backward_workspace>(
            "attention", "flash_backward_workspace",
            "the flash / SDPA backward allocates an fp32 dq accumulator (b·s·q_dim·4 B + b·heads·s·4 B) and, for the "
            "`flash` kind with grouped KV heads, dk and dv expanded to every query head: a `backward_attention` phase"),
        };
        all.insert(all.end(), sections.begin(), sections.end());
        const std::vector<BehaviourKey> loss = loss_keys();
        all.insert(all.end(), loss.begin(), loss.end());
        const std::vector<BehaviourKey> model = model_keys();
        all.insert(all.end(), model.begin(), model.end());
        return all;
    }();
    return keys;
}

FrameworkBehaviour parse_framework_behaviour_flags(const json& j, const std::string& file) {
    FrameworkBehaviour b;
    for (const auto& k : behaviour_keys()) {
        if (!k.flag || !j.contains(k.section) || !j[k.section].is_object()) continue;
        const json& section = j[k.section];
        const auto v = section.find(k.key);
        if (v == section.end() || v->is_null()) continue;
        if (!v->is_boolean())
            throw ProfileError(file, std::string(k.section) + "." + k.key, "expected true or false, got " + v->dump());
        k.flag(b) = v->get<bool>();
    }
    b.compile.present = j.contains("compile") && j["compile"].is_object();
    if (const auto q = j.find("qlora"); q != j.end() && q->is_object() && q->contains("extra_embedding_copies")) {
        const json& v = q->at("extra_embedding_copies");
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 4)
            throw ProfileError(file, "qlora.extra_embedding_copies", "expected 0 to 4");
        b.qlora.extra_embedding_copies = v.get<std::int64_t>();
    }
    if (const auto q = j.find("qlora"); q != j.end() && q->is_object()) {
        if (const auto v = q->find("allocator_slack"); v != q->end()) {
            if (!v->is_number() || v->get<double>() < 0 || v->get<double>() > 1)
                throw ProfileError(file, "qlora.allocator_slack", "expected a number between 0 and 1");
            b.qlora.allocator_slack = v->get<double>();
        }
        if (const auto v = q->find("allocator_slack_of"); v != q->end()) {
            if (!v->is_string() || (*v != "peak" && *v != "transient"))
                throw ProfileError(file, "qlora.allocator_slack_of", "expected \"peak\" or \"transient\"");
            b.qlora.allocator_slack_of = v->get<std::string>();
        }
    }
    if (const auto l = j.find("loss"); l != j.end() && l->is_object() && l->contains("cut_cross_entropy_above_tokens")) {
        const json& v = l->at("cut_cross_entropy_above_tokens");
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
            throw ProfileError(file, "loss.cut_cross_entropy_above_tokens", "expected a token count of 0 or more");
        b.loss.cut_cross_entropy_above_tokens = v.get<std::int64_t>();
    }
    // Read where it is used (loss_memory.cpp loss_head_vocab_chunk); checked here with the other keys.
    if (const auto l = j.find("loss"); l != j.end() && l->is_object() && l->contains("head_vocab_chunk")) {
        const json& v = l->at("head_vocab_chunk");
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
            throw ProfileError(file, "loss.head_vocab_chunk", "expected a number of vocabulary columns, 0 or more");
    }
    if (const auto q = j.find("quantization"); q != j.end() && q->is_object() && q->contains("checkpoints")) {
        const json& list = q->at("checkpoints");
        if (!list.is_array() || !std::all_of(list.begin(), list.end(), [](const json& t) { return t.is_string(); }))
            throw ProfileError(file, "quantization.checkpoints", "expected an array of checkpoint format names");
        for (const auto& t : list) {
            const std::string name = t.get<std::string>();
            if (!names_checkpoint_format(name))
                throw ProfileError(file, "quantization.checkpoints", "'" + name + "' is not a checkpoint format");
            b.checkpoint_formats.push_back(name);
        }
    }
    if (const auto k = j.find("kernels"); k != j.end() && k->is_object() && k->contains("unfused_model_types")) {
        const json& list = k->at("unfused_model_types");
        if (!list.is_array() || !std::all_of(list.begin(), list.end(), [](const json& t) { return t.is_string(); }))
            throw ProfileError(file, "kernels.unfused_model_types", "expected an array of model_type strings");
        for (const auto& t : list) b.kernels.unfused_model_types.push_back(t.get<std::string>());
    }
    return b;
}

std::string behaviour_keys_markdown() {
    std::ostringstream out;
    out << kBehaviourTableBegin << "\n"
        << "| Field | Type | Default | Meaning |\n|---|---|---|---|\n";
    for (const auto& k : behaviour_keys()) {
        const std::string section = k.section;
        const std::string name = section.empty() ? k.key : std::string(k.key) == "*" ? section : section + "." + k.key;
        out << "| `" << name << "` | " << k.type << " | " << k.default_text << " | " << k.meaning << " |\n";
    }
    out << kBehaviourTableEnd << "\n";
    return out.str();
}

}  // namespace wingspan
