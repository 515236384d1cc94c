#pragma once
// Everything about a training (or serving) run that changes its memory, apart from the
// architecture, the framework and the machine.
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "architecture.hpp"

namespace wingspan {

enum class Method { Full, Lora, Qlora, Serve };
enum class Precision { Fp32, Bf16Mixed, Bf16, Fp16Mixed };
// Paged optimizers (bitsandbytes PagedAdamW / PagedAdamW8bit) keep their large state buffers in CUDA
// unified memory that pages out to host RAM under pressure (bitsandbytes/optim/optimizer.py
// get_state_buffer: F.get_paged for tensors of 1e5 elements or more).
enum class Optimizer { AdamW, AdamW8bit, PagedAdamW8bit, Sgd, Adafactor, PagedAdamW };
enum class Attention { Eager, Sdpa, Flash };
enum class Sharding { None, Ddp, Zero1, Zero2, Zero3, Fsdp };
// Quantized frozen weights. Nf4, Nf4DoubleQuant and Int8 are what a framework makes of a 16-bit
// checkpoint as it loads it (bitsandbytes, torchao, MLX); the others are pre-quantized checkpoints
// that a serving engine loads as stored (quant_formats.hpp: AWQ 4-bit, GPTQ 4- and 8-bit, fp8 with
// per-tensor, per-channel or 128 × 128 block scales).
enum class Quantization { None, Nf4, Nf4DoubleQuant, Int8, Awq, Gptq, GptqInt8, Fp8, Fp8Channel, Fp8Block };
// The training objective: supervised fine-tuning, preference tuning, or RL with verifiable
// rewards. Each changes the rows a forward runs, the sequence, and what is held beside the policy.
enum class Objective { Sft, Dpo, Orpo, Simpo, Kto, Grpo };
// Where the reference log-probabilities of DPO, KTO and GRPO (beta > 0) come from. Auto: as the
// framework does it (TRL: the base with the adapter disabled for a PEFT policy, else a copy).
enum class Reference { Auto, Copy, AdapterOff, Precomputed, None };

// LoRA's rank and alpha when nothing says otherwise: the planner's, wingspan-train's and the
// window's one default (PEFT's LoraConfig defaults to r 8, alpha 8; most recipes use 16 / 32).
inline constexpr std::int64_t kDefaultLoraRank = 16;
inline constexpr double kDefaultLoraAlpha = 32;

const char* to_string(Method);
const char* to_string(Precision);
const char* to_string(Optimizer);
const char* to_string(Attention);
const char* to_string(Sharding);
const char* to_string(Quantization);
const char* to_string(Objective);
const char* to_string(Reference);
// Parsers throw InputError listing the accepted spellings.
Method parse_method(const std::string&);
Precision parse_precision(const std::string&);
// "auto" or a precision's name; sets precision_auto or precision. Throws InputError.
struct TrainingSetup;
void set_precision(TrainingSetup& s, const std::string& name);
Optimizer parse_optimizer(const std::string&);
Attention parse_attention(const std::string&);
Sharding parse_sharding(const std::string&);
Quantization parse_quantization(const std::string&);
Objective parse_objective(const std::string&);
Reference parse_reference(const std::string&);
// "q,k,v,o" / "all" / "attention" / "mlp" -> roles; throws InputError on unknown names.
std::set<LinearRole> parse_targets(const std::string&);
std::string targets_to_string(const std::set<LinearRole>&);

// The objective and the knobs of it that change memory. Lengths of 0 take the framework's
// defaults (GRPO: a 512-token prompt, as TRL 1.16 has no max_prompt_length, and its
// max_completion_length 512; the others: seq_len covers prompt and completion).
struct ObjectiveSetup {
    Objective kind = Objective::Sft;
    Reference reference = Reference::Auto;
    std::int64_t prompt_len = 0;
    std::int64_t completion_len = 0;
    std::int64_t generations = 8;      // GRPO: completions per prompt (TRL num_generations)
    double beta = 0.0;                 // GRPO: KL coefficient (TRL's default 0.0 loads no reference)
    double vllm_share = 0.0;           // GRPO: fraction of the GPU a colocated vLLM engine takes
};

struct TrainingSetup {
    Method method = Method::Lora;
    Precision precision = Precision::Bf16Mixed;
    // Precision "auto" (issue 35): each machine's fastest exact precision, chosen per machine by
    // adapt_setup (bf16-mixed where it computes in bf16; else fp32 on a CPU or Mac, fp16-mixed on a
    // GPU), as wingspan-train's --precision auto does. `precision` holds bf16-mixed meanwhile.
    bool precision_auto = false;
    Optimizer optimizer = Optimizer::AdamW;
    Attention attention = Attention::Sdpa;
    std::int64_t seq_len = 1024;
    std::int64_t micro_batch = 1;
    std::int64_t grad_accum = 1;
    bool grad_checkpointing = true;
    // Cross-entropy over this many tokens at a time (0: the whole micro-batch at once).
    std::int64_t loss_chunk_tokens = 0;
    // LoRA
    std::int64_t lora_rank = kDefaultLoraRank;
    double lora_alpha = kDefaultLoraAlpha;
    double lora_dropout = 0.0;
    std::set<LinearRole> lora_targets = {LinearRole::Q, LinearRole::K, LinearRole::V,
                                         LinearRole::O, LinearRole::Gate, LinearRole::Up,
                                         LinearRole::Down};
    bool train_embeddings = false;     // embeddings and head train fully besides adapters
    std::int64_t lora_layers = 0;      // adapters on the last N layers only (mlx-lm --num-layers; 0: all)
    bool dora = false;                 // DoRA: a trainable magnitude per output row of each adapted linear
    // The data set the training process holds, for frameworks that keep it in RAM as token ids
    // (profile dataset_bytes_per_token > 0): one epoch's tokens and examples; 0: not counted.
    std::int64_t dataset_tokens = 0;
    std::int64_t dataset_examples = 0;
    // QLoRA / quantized serving. Method::Qlora defaults to NF4 with double quantization.
    Quantization quantization = Quantization::None;
    // AWQ / GPTQ: input values that share a scale and a zero point (the checkpoint's group_size;
    // -1: one group over the whole input, GPTQ's per-channel form).
    std::int64_t quant_group_size = 128;
    // Serving
    std::int64_t serve_batch = 1;      // concurrent sequences; seq_len is the context
    // Parallelism
    std::int64_t devices = 1;
    Sharding sharding = Sharding::None;
    bool offload = false;              // optimizer state + master weights to host RAM (--optimizer-offload)
    // Memory techniques (issue 25), each a change in where a tensor lives or when it dies:
    // each parameter's optimizer step runs as soon as its gradient is ready and the gradient is
    // freed at once (torchtune optimizer_in_bwd: training/memory.py register_optim_in_bwd_hooks);
    bool optimizer_in_backward = false;
    // checkpointed activations live in host RAM, streamed back for backward (torchtune
    // enable_activation_offloading; Unsloth use_gradient_checkpointing="unsloth");
    bool activation_offload = false;
    // torch.compile on the model and loss, where the framework's profile says what it changes.
    bool compile = false;
    ObjectiveSetup objective;

    // The quantization in force (QLoRA without an explicit choice means NF4 + double quant).
    Quantization effective_quantization() const;
    bool trains() const { return method != Method::Serve; }
    // Throws InputError for impossible values (sequence 0, rank > hidden, ...).
    void validate(const Architecture& arch) const;   // includes require_plan_size_bounded
    void validate_objective() const;                  // the objective's knobs fit together

    nlohmann::json to_json() const;
    static TrainingSetup from_json(const nlohmann::json&);   // missing fields keep defaults
};

// Bytes of one element of a storage dtype.
int dtype_bytes(Precision p);                // compute/storage dtype of weights
int compute_dtype_bytes(Precision p);        // activations: 2 for bf16/fp16 schemes, 4 for fp32

// Bytes beyond any machine (2^60, about 1.15 EB); plans above it are refused before the
// memory model multiplies sizes, so no product can overflow 64 bits into a small number.
inline constexpr long double kMaxPlanBytes = 1152921504606846976.0L;
// Throws PlanTooLargeError when a generous upper bound of the plan's bytes (computed in long
// double: weights and optimizer state, activations, attention scores, logits, KV cache)
// exceeds kMaxPlanBytes.
void require_plan_size_bounded(const Architecture& arch, const TrainingSetup& setup);

}  // namespace wingspan
