#include "memory/loss_memory.hpp"

#include <algorithm>
#include <cmath>

#include "wingspan/units.hpp"

namespace wingspan {

namespace {
std::string n(std::int64_t v) { return format_count(v); }
}  // namespace

LossMemory loss_of(std::vector<LossTensor> tensors, std::int64_t tokens, std::string formula, std::int64_t no_grad) {
    LossMemory out;
    for (const auto& t : tensors) {
        out.forward += t.forward;
        out.backward += t.backward;
        out.at_return += t.at_return;
        out.head_forward += t.head_forward;
        out.head_backward += t.head_backward;
        if (t.through_forward) out.through_forward += t.at_return;
    }
    out.tokens = tokens;
    out.formula = std::move(formula);
    out.no_grad = no_grad;
    std::erase_if(tensors, [](const LossTensor& t) {
        return t.forward == 0 && t.backward == 0 && t.at_return == 0 && t.head_forward == 0 && t.head_backward == 0;
    });
    out.tensors = std::move(tensors);
    return out;
}

std::int64_t loss_peak(const LossMemory& loss) {
    return std::max({loss.forward, loss.backward, loss.at_return, loss.head_forward + loss.through_forward, loss.head_backward});
}

bool fused_logprob_head(const FrameworkProfile& fw, const TrainingSetup& setup) {
    // TRL 1.16 patches the fused head in DPOTrainer, KTOTrainer and GRPOTrainer only (dpo_trainer.py
    // line 960, kto_trainer.py line 967, grpo_trainer.py line 1068); ORPO and CPO (SimPO) keep full logits.
    const Objective o = setup.objective.kind;
    return (o == Objective::Dpo || o == Objective::Kto || o == Objective::Grpo) &&
           fw.traits.objective.fused_logprob_head;
}

namespace {

std::int64_t objective_number(const FrameworkProfile& fw, const char* key, std::int64_t fallback) {
    const auto it = fw.behaviour.find("objective");
    return it != fw.behaviour.end() && it->is_object() ? it->value(key, fallback) : fallback;
}

// trl/kernels/chunked_logprob.py (TRL 1.16.0) ChunkedLogProbFunction, called by trl/trainer/utils.py
// add_fused_lm_head._fused_forward (lines 1599-1660) on the final hidden states:
//   forward  (lines 340-391): seven fp32 per-token statistics and mm_buf, one [min(N, 4096), 32,768]
//            tile in the compute dtype (its full width even for a smaller vocabulary), reused for every
//            [tokens, vocab] block; autograd saves the hidden states, the int64 targets and the fp32
//            log-sum-exp (and the entropy where asked), never logits;
//   backward (lines 398-453): recomputes every tile into a second mm_buf, turns it into the logits'
//            gradient in place and accumulates the hidden states' gradient in fp32 [N, hidden] (and the
//            head's, fp32 [vocab, hidden], only where the head trains).
// N: with Triton (CUDA, XPU: profile objective.logprob_labelled_only) only the labelled positions (the
// completions: utils.py line 1641 `compact`), the tile folded in place by a kernel; without it (the CPU)
// every position of the shifted rows, folded by torch ops whose fp32 temporaries are as large as the
// tile's valid [n, vocab] block (_forward_tile, lines 235-254: three at its peak; _backward_tile, lines
// 276-296: seven and the bool target mask; measured on torch 2.11 by tests/frameworks/check_trl_*_terms.py).
// The hidden states the function saves are counted with the activations (memory_model.cpp, final norm).
LossMemory fused_logprob_memory(const FrameworkProfile& fw, const TrainingSetup& setup, const LossShape& shape) {
    const std::int64_t V = shape.vocab, h = shape.hidden, e = shape.value_bytes;
    const std::int64_t tile_tokens = objective_number(fw, "logprob_tile_tokens", 4096);
    const std::int64_t tile_width = objective_number(fw, "logprob_tile_vocab", 32768);
    const bool labelled_only = fw.traits.objective.logprob_labelled_only;
    const std::int64_t shifted = shape.batch * std::max<std::int64_t>(setup.seq_len - 1, 1);
    const std::int64_t N = labelled_only ? std::min(shape.tokens, shifted) : shifted;
    const std::int64_t T = std::min(N, tile_tokens), block = T * std::min(V, tile_width);
    std::int64_t tile = T * tile_width * e;
    // An fp32 head under 16-bit autocast (a mixed-precision full fine-tune's, QLoRA's upcast one) is cast
    // per block: weight[start:end].to(compute_dtype), a [min(vocab, 32,768), hidden] copy (lines 356, 423).
    const bool mixed = setup.precision == Precision::Bf16Mixed || setup.precision == Precision::Fp16Mixed;
    const bool head_fp32 = e < 4 && mixed &&
                           (setup.method == Method::Full || (setup.method == Method::Qlora && fw.qlora_upcast_non_quantized));
    const std::int64_t head_cast = head_fp32 ? std::min(V, tile_width) * h * e : 0;
    tile += head_cast;
    // Per-token outputs besides the log-probs each objective asks for (fp32; is_top1 a bool):
    // DPO entropy, mean_logits, is_top1 (dpo_trainer.py line 958); KTO entropy, mean_logits
    // (kto_trainer.py line 969); GRPO entropy (grpo_trainer.py line 1072).
    const Objective o = setup.objective.kind;
    const bool entropy = true, top1 = o == Objective::Dpo;
    // Forward: the int64 targets (made before the call, saved), the seven statistics, log_z, the
    // log-probs and the fold's per-token reductions: 12 fp32 per token at the fold's peak.
    const std::int64_t per_token_fwd = 8 + 12 * 4;
    const std::int64_t cpu_fwd = labelled_only ? 0 : 3 * block * 4 + (top1 ? block : 0);
    // Backward: the saved targets, log_z and entropy, the log-probs' fp32 gradient, the fp32
    // accumulator of the hidden states' gradient (and its copy in the compute dtype as it returns),
    // the head's fp32 gradient where it trains.
    const bool head_trains = setup.method == Method::Full || setup.train_embeddings;
    const std::int64_t saved = N * (8 + 4 + (entropy ? 4 : 0));
    const std::int64_t cpu_bwd = labelled_only ? 0 : 7 * block * 4 + block;
    const std::int64_t hidden_grad = N * h * 4 + (e < 4 ? N * h * e : 0);
    const std::int64_t head_grad = head_trains ? V * h * 4 : 0;
    std::vector<LossTensor> tensors = {
        {"log-prob tile (mm_buf; recomputed in backward)", tile, tile},
        {"the torch fold's fp32 temporaries", cpu_fwd, cpu_bwd},
        {"int64 targets, fp32 log-sum-exp and entropy per position (saved)", saved, saved, true},
        {"fp32 statistics and outputs per position", N * per_token_fwd - saved, 0},
        {"the log-probs' fp32 gradient", 0, N * 4},
        {"the hidden states' gradient (fp32 accumulator and its copy)", 0, hidden_grad},
        {"the head's fp32 gradient", 0, head_grad},
    };
    // Under no_grad (a reference's log-probs): the forward's tile, statistics and outputs, nothing saved.
    const std::int64_t no_grad = tile + cpu_fwd + N * per_token_fwd;
    std::string formula =
        "TRL fused log-prob head (no logits kept): " + n(N) + (labelled_only ? " labelled" : "") +
        " positions in tiles of " + n(T) + " × " + n(tile_width) + " × " + std::to_string(e) + " B (" + n(T * tile_width * e) +
        " B; trl/kernels/chunked_logprob.py mm_buf) + " + std::to_string(per_token_fwd) +
        " B per position in forward (int64 targets, fp32 statistics and outputs)" +
        (labelled_only ? "" : " + the torch fold's fp32 temporaries of the tile's " + n(T) + " × " + n(std::min(V, tile_width)) + " block (3 in forward, 7 and a mask in backward)") +
        "; in backward the recomputed tile, the fp32 hidden-state gradient " + n(N) + " × " + n(h) + " × 4 B" +
        (e < 4 ? " and its " + std::to_string(e) + "-byte copy" : "") +
        (head_grad ? " and the head's fp32 gradient " + n(V) + " × " + n(h) + " × 4 B" : "") +
        (head_cast ? "; the fp32 head cast to the compute dtype block by block (" + n(head_cast) + " B)" : "");
    return loss_of(std::move(tensors), N, std::move(formula), no_grad);
}

// Apple's Cut Cross-Entropy as Unsloth 2025.1 called it: unsloth/models/llama.py CausalLM_fast_forward
// (3c789bc8, lines 1013-1026) passes the final hidden states and the head's weight to unsloth_zoo's
// fused_linear_cross_entropy (loss_utils.py @5572cc46 lines 141-166: linear_cross_entropy(...,
// shift=True, filter_eps="auto")), cut-cross-entropy 24.12.1 (@1f3ebdb) cce.py
// LinearCrossEntropyFunction. Per token N = b·s, per vocabulary entry V:
//   forward (lines 46-77): utils.py _build_flat_valids, the int64 index of each labelled position;
//            cce_lse_forward.py lines 168, 176: the fp32 log-sum-exp per token and the fp32 logit
//            average per vocabulary entry (filter_eps set); indexed_dot's fp32 per token; it saves
//            the hidden states (the final norm's output, counted with it), lse, the index, logit_avg;
//   backward (lines 83-117): argsort(logit_avg) as int32, and cce_backward.py lines 268-269
//            de = zeros_like(e) (the hidden states' gradient) and dc = zeros_like(c) (the head's, made
//            even for a frozen head and dropped as the node returns), lines 294-295 int32 locks
//            of about one per token and one per vocabulary entry.
LossMemory cut_cross_entropy_memory(const LossShape& shape) {
    const std::int64_t N = shape.tokens, V = shape.vocab, h = shape.hidden, e = shape.value_bytes;
    const std::int64_t saved = N * (4 + 8) + V * 4;
    std::vector<LossTensor> tensors = {
        {"fp32 log-sum-exp and int64 index per token, fp32 logit average per vocabulary entry (saved)", saved, saved, true},
        {"fp32 indexed dot per token", N * 4, 0},
        {"int32 vocabulary order", 0, V * 4},
        {"the hidden states' gradient", 0, N * h * e},
        {"the head's gradient (made even for a frozen head)", 0, V * h * e},
        {"int32 locks", 0, (N + V) * 4},
    };
    std::string formula = "Cut Cross-Entropy (no logits): " + n(N) + " tokens × 16 B in forward (fp32 log-sum-exp, int64 index, fp32 "
                          "dot) + " + n(V) + " vocab × 4 B logit average; in backward the hidden states' gradient " + n(N) +
                          " × " + n(h) + " × " + std::to_string(e) + " B and the head's " + n(V) + " × " + n(h) + " × " +
                          std::to_string(e) + " B (allocated even for a frozen head), the int32 vocabulary order and locks";
    return loss_of(std::move(tensors), 0, std::move(formula));
}

// prime-rl's FusedOutputLinear (266f5a66a src/prime_rl/trainer/models/layers/lm_head.py lines 69-171,
// profile loss.head_vocab_chunk): per-token log-probabilities from blocks of C vocabulary columns,
// never a [tokens, vocab] tensor. N = b·s tokens (every position), e the compute dtype.
//   forward  (lines 97-115): per block `logits = hidden @ w_chunk.t()` [N, C] (e B), its fp32 copy,
//            and in _online_logsumexp_and_weighted_update (lines 174-191) exp(x − m) and exp(x − m)·x,
//            fp32 [N, C] each, beside eight fp32 running statistics per token; saves the hidden
//            states (the final norm's output, counted with it), the labels (the inputs') and an fp32
//            log-Z per token, and returns fp32 log-probabilities and entropy per token;
//   backward (lines 126-171): grad_hidden = zeros_like(hidden) (the activations' gradient of the
//            final hidden state) and grad_weight = zeros_like(weight), the head's gradient in the
//            compute dtype for a head that trains or not; per block, at `p = exp(logits_f − logz)`,
//            the previous block's p and grad_logits (fp32) are still bound beside the new logits (e B),
//            their fp32 copy, the subtraction and the exponential: (e + 20) B per block element.
LossMemory vocab_chunked_head_memory(const LossShape& shape, std::int64_t columns) {
    const std::int64_t N = shape.tokens, V = shape.vocab, h = shape.hidden, e = shape.value_bytes;
    const std::int64_t C = std::min(V, columns);
    std::vector<LossTensor> tensors = {
        {"a block's logits, fp32 copy and exponentials", N * C * (e + 12), 0},
        {"fp32 running statistics per token", N * 8 * 4, 0},
        {"fp32 log-Z (saved), log-probs and entropy per token", N * 12, N * 12, true},
        {"the log-probs' fp32 gradient", 0, N * 4},
        {"the head's gradient in the compute dtype (zeros_like(weight))", 0, V * h * e},
        {"two blocks' logits, probabilities and gradients", 0, N * C * (e + 20)},
    };
    std::string formula = "vocabulary-blocked head (no logits kept): " + n(N) + " tokens × " + n(C) + " columns × (" +
                          std::to_string(e + 12) + " B in forward: the block's logits, fp32 copy, two fp32 exponentials; " +
                          std::to_string(e + 20) + " B in backward: the block recomputed beside the previous block's fp32 "
                          "probabilities and gradient) + 44 B per token in forward (fp32 statistics, log-Z, log-probs, "
                          "entropy) + the head's gradient " + n(V) + " × " + n(h) + " × " + std::to_string(e) +
                          " B in backward (prime-rl FusedOutputLinear)";
    return loss_of(std::move(tensors), N, std::move(formula), N * C * (e + 12) + N * 44);
}

// A quantized head is dequantized for each chunk's matmul, forward and backward: one copy in the
// compute dtype, or what the profile's quantization.dequantize_bytes_per_weight says the dequantization
// holds at once per weight (e.g. 4 under Lightning's BitsandbytesPrecision with bitsandbytes 0.41/0.42:
// an fp16 copy and its bf16 cast, bench/published/cases.json's LitGPT QLoRA cases). MLX's
// quantized_matmul reads the packed weights directly (quantization.matmul_reads_packed): nothing.
std::int64_t dequantized_head_bytes(const FrameworkProfile& fw, bool quantized, std::int64_t head_weights, std::int64_t e) {
    if (!fw.quantizes_head || !quantized) return 0;
    return fw.dequantized_weight_bytes(head_weights, static_cast<int>(e));
}

// The framework's own loss on the logits it returns (profile loss.*), chunk tokens at a time.
// Per token × vocab: the logits the model returns when it keeps them, the log-softmax the loss saves
// (fp32 when it upcasts), none of it when fused (the gradient is made in forward). Per chunk: the
// logits of a chunk not kept whole and the fp32 upcast in forward; in backward the two gradients of
// the log-softmax.
// A model that returns fp32 logits (loss.logits_fp32) keeps them at 4 B, and the loss has nothing
// left to upcast; its 16-bit head output lives only while it is upcast, so the moment the model
// returns holds both (e + 4 B) and, where the loop still holds the previous micro-batch's logits
// (loss.previous_logits_held), those too. LitGPT: Fabric's bf16-true (and bitsandbytes) precision
// wrapper converts the returned list of chunks to the default dtype, fp32 (lightning 2.6
// fabric/plugins/precision/half.py convert_output, bitsandbytes.py line 157, called by
// fabric/wrappers.py _FabricModule.forward line 138): 4 + 2 + 4 B then. Measured with the real
// litgpt 0.5.13 under Fabric on the CPU (bench/published/measure_litgpt_loss.py: the step's peak per
// token × vocab, 10.00 B at 1 × 512 tokens and 11.98 B at 2 × 256; 5.0 and 6.0 without Fabric):
// 10 B as the model returns, 8 B kept + 8 B per chunk token in the loss's backward.
// A quantized head is dequantized for each chunk's matmul: in forward, before the model returns,
// beside the head outputs made so far; in backward after the loss's backward, beside the logits the
// loop holds and their gradients in the head's dtype (autograd runs the later-made conversion and
// loss nodes first), each its own moment.
LossMemory framework_loss_memory(const FrameworkProfile& fw, const LossShape& shape, std::int64_t chunk, std::int64_t chunks) {
    const std::int64_t b = shape.batch, bs = shape.tokens, V = shape.vocab, h = shape.hidden, e = shape.value_bytes;
    const bool model_fp32 = fw.traits.loss.logits_fp32 && e < 4;
    const std::int64_t logits_e = model_fp32 ? 4 : e;
    const std::int64_t lsm = (fw.loss_upcast_fp32 || logits_e >= 4) ? 4 : e;
    const std::int64_t upcast = (fw.loss_upcast_fp32 && logits_e < 4) ? 4 : 0;
    const std::int64_t held = fw.loss_fused ? 0 : (fw.logits_held ? logits_e : 0) + lsm;
    const std::int64_t fwd_chunk = (fw.logits_held ? 0 : logits_e) + upcast + (fw.loss_fused ? 3 * lsm : 0);
    const std::int64_t bwd_chunk = fw.loss_fused ? 0 : 2 * lsm;
    const std::int64_t hidden_grad = fw.loss_fused ? bs * h * e : 0;   // made in forward, kept for backward
    const std::int64_t head_dequant = dequantized_head_bytes(fw, shape.quantized, V * h, e);
    const std::int64_t logits_kept = fw.loss_fused || !fw.logits_held ? 0 : logits_e;
    const std::int64_t upcast_source = model_fp32 && !fw.loss_fused ? bs * V * e : 0;
    const std::int64_t previous = fw.traits.loss.previous_logits_held && !fw.loss_fused && fw.logits_held ? bs * V * logits_e : 0;
    // The shifted logits made contiguous, a copy where the batch has more than one row, freed once the
    // log-softmax has its output: transformers 4.46-4.48 ForCausalLMLoss (loss/loss_utils.py lines 35-38
    // at 4.46.3) shifts the whole fp32 logits (logits.float(), then logits[..., :-1, :].contiguous());
    // LitGPT only the last head chunk (finetune/lora.py `logits[-1] = logits[-1][..., :-1, :]`, then
    // utils.py chunked_cross_entropy's `logit_chunk.reshape(-1, vocab)` of that slice).
    const std::int64_t positions = b > 0 ? bs / b : 0, per = fw.loss_chunk_positions;
    const std::int64_t shifted_positions = per > 0 && positions > 0 ? positions - (positions - 1) / per * per : positions;
    const std::int64_t shifted_copy = fw.traits.loss.shifts_logits_copy && b > 1 && !fw.loss_fused
                                          ? b * std::max<std::int64_t>(shifted_positions - 1, 0) * V * (upcast ? 4 : logits_e)
                                          : 0;
    // A soft-capped head (Gemma 2: logits = cap · tanh(logits / cap), transformers 5.25 modeling_gemma2.py
    // Gemma2ForCausalLM.forward lines 520-523, litgpt 0.5.13 model.py lines 172-179 per head chunk):
    // tanh keeps its output for backward, one more [tokens, vocab] in the head's dtype (the 16-bit
    // head's, where the upcast follows the cap) until the loss's backward reaches it; a chunked head's
    // earlier chunks' at its last chunk's matmul. (A fused loss caps inside its kernel.)
    const std::int64_t cap_e = model_fp32 ? e : logits_e;
    const std::int64_t softcap = shape.final_softcap && !fw.loss_fused ? bs * V * cap_e : 0;
    const std::int64_t softcap_before_last = softcap > 0 && per > 0 ? std::max<std::int64_t>(bs - chunk, 0) * V * cap_e : 0;
    const std::int64_t at_head = head_dequant > 0 ? 1 : 0;   // the head's own moments: a dequantized head only
    std::vector<LossTensor> tensors = {
        {"logits the model returns", bs * V * logits_kept, bs * V * logits_kept, true,
         at_head * (model_fp32 ? 0 : bs * V * logits_kept), bs * V * logits_kept, at_head * bs * V * logits_kept},
        {"the soft cap's tanh output", softcap, softcap, true, at_head * softcap_before_last, softcap, at_head * softcap_before_last},
        {std::string(lsm == 4 ? "fp32" : "16-bit") + " log-softmax", bs * V * (held - logits_kept), bs * V * (held - logits_kept), true},
        {"a chunk's logits, fp32 upcast and fused loss temporaries", chunk * V * fwd_chunk, 0},
        {"contiguous copy of the shifted fp32 logits", shifted_copy, 0},
        {"a chunk's two log-softmax gradients", 0, chunk * V * bwd_chunk},
        {"the hidden states' gradient made in forward", hidden_grad, hidden_grad, true},
        {"the 16-bit head output while it is upcast to fp32", 0, 0, false, at_head * upcast_source, upcast_source},
        {"the head output's gradient in the head's dtype", 0, 0, false, 0, 0, at_head * bs * V * e},
        {"quantized head dequantized for its matmul", 0, 0, false, head_dequant, 0, head_dequant},
        {"the previous micro-batch's logits, held until this forward returns", 0, 0, false, 0, previous, 0, true}};
    std::string formula =
        n(bs) + " tokens × " + n(V) + " vocab × " + std::to_string(held) + " B kept (" +
        (fw.loss_fused ? std::string("fused loss: nothing")
                       : std::string(fw.logits_held ? (model_fp32 ? "the model's fp32 logits + " : "logits + ") : "") +
                             (lsm == 4 ? "fp32" : "16-bit") + " log-softmax") +
        ") + " + std::to_string(chunks) + " chunk" + (chunks > 1 ? "s" : "") + " of " + n(chunk) + " tokens × (" +
        std::to_string(fwd_chunk) + " B in forward, " + std::to_string(bwd_chunk) + " B in backward)" +
        (hidden_grad ? " + the hidden states' gradient made in forward" : "") +
        (shifted_copy ? " + the shifted fp32 logits' contiguous copy in forward (" + n(shifted_copy) + " B)" : "") +
        (softcap ? " + the soft cap's tanh output, kept (" + n(bs) + " × " + n(V) + " × " + std::to_string(cap_e) + " B)" : "");
    if (upcast_source || previous)
        formula += "; as the model returns: its " + std::to_string(logits_e) + " B logits" +
                   (upcast_source ? " + the " + std::to_string(e) + " B head output they were upcast from" : "") +
                   (previous ? " + the previous micro-batch's " + std::to_string(logits_e) + " B logits" : "");
    if (head_dequant)
        formula += "; the quantized head dequantized for its matmul (" + n(head_dequant) +
                   " B), in forward beside the head outputs made so far, in backward beside the kept logits and their " +
                   std::to_string(e) + " B gradient";
    return loss_of(std::move(tensors), chunk, std::move(formula));
}

}  // namespace

std::int64_t loss_head_vocab_chunk(const FrameworkProfile& fw) {
    const auto it = fw.behaviour.find("loss");
    return it != fw.behaviour.end() && it->is_object() ? it->value("head_vocab_chunk", std::int64_t{0}) : 0;
}

bool compiled_loss(const FrameworkProfile& fw) {
    return fw.traits.compile.enabled && fw.traits.compile.fuses_loss_upcast;
}

LossMemory loss_memory(const FrameworkProfile& fw, const TrainingSetup& setup, const LossShape& shape) {
    const bool trains = setup.trains();
    const std::int64_t b = shape.batch, bs = shape.tokens, V = shape.vocab, h = shape.hidden, e = shape.value_bytes;
    const bool quantized = shape.quantized;
    std::int64_t logit_tokens = bs;
    if (setup.loss_chunk_tokens > 0) logit_tokens = std::min(bs, setup.loss_chunk_tokens);
    // The framework's own loss: how many tokens one chunk of it covers.
    const bool framework_loss = fw.behaviour.contains("loss") || fw.loss_fused;
    std::int64_t chunk = bs, chunks = 1;
    if (fw.loss_chunks > 0) chunk = (bs + fw.loss_chunks - 1) / fw.loss_chunks;
    if (fw.loss_chunk_tokens > 0) chunk = std::min(chunk, fw.loss_chunk_tokens);
    if (fw.loss_chunk_positions > 0) chunk = std::min(chunk, b * fw.loss_chunk_positions);
    if (fw.loss_chunk_fp32_bytes > 0) {
        // As many chunks (a multiple of loss_chunks_multiple) as keep one chunk's fp32 logits under the target.
        const double full = double(bs) * double(V) * 4.0;
        if (full > double(fw.loss_chunk_fp32_bytes)) {
            const double m = double(fw.loss_chunks_multiple);
            chunks = static_cast<std::int64_t>(std::ceil(full / double(fw.loss_chunk_fp32_bytes) / m - 1e-9) * m);
            chunk = (bs + chunks - 1) / chunks;
        }
    }
    if (setup.loss_chunk_tokens > 0) chunk = std::min(chunk, setup.loss_chunk_tokens);
    chunks = (bs + chunk - 1) / chunk;
    std::vector<LossTensor> tensors;
    std::string logits_formula;
    if (trains && fused_logprob_head(fw, setup)) return fused_logprob_memory(fw, setup, shape);
    if (const std::int64_t columns = loss_head_vocab_chunk(fw); trains && columns > 0)
        return vocab_chunked_head_memory(shape, columns);
    if (trains && fw.traits.loss.cut_cross_entropy && bs > fw.traits.loss.cut_cross_entropy_above_tokens)
        return cut_cross_entropy_memory(shape);
    if (!trains) {
        tensors = {{"last-token fp32 logits", b * V * 4, b * V * 4, true}};
        logits_formula = "last-token logits: b·vocab·4 B";
    } else if (fw.loss_in_place) {
        // Head and loss in one function (wingspan-train's LmHeadLossFn): it keeps the fp32
        // probabilities and turns them into the logits' gradient in place. Forward writes them
        // row by row in place (trainer/src/kernels/kernels_loss.cpp: no logsumexp temporary), from
        // the 16-bit logits of a 16-bit run, alive until the pass ends (an fp32 run overwrites its
        // logits); backward a 16-bit copy of the gradient for the matmuls. Per token: int64 label
        // index, label mask, int64 count. A soft cap (Gemma 2) is applied inside the same passes
        // (kernels_loss.cpp): it keeps each row's fp32 log-sum-exp and capped label logit, from
        // which backward recovers the capped logits for the cap's derivative.
        // Per token (measured with the counting allocator's live blocks at the component's peaks,
        // LmHeadLossFn and kernels_loss.cpp): the int64 label index and the bool mask, kept (9 B);
        // in forward fp32 row buffers: the pass's max, sum and log-sum-exp beside the 16-bit logits
        // (12 B), or, after the pass of an fp32 run, the log-sum-exp, label logit, their difference,
        // the mask as fp32 and the masked loss (20 B), less the two the cap keeps; in backward each
        // row's gradient scale (4 B: the mask's fp32 copy it is made from is a temporary of that
        // expression, freed before the logits' gradient and the hidden states' gradient exist —
        // measured at the loss backward's peak, Gemma 2 LoRA at 2 × 128, where 8 B was 1,016 B over).
        const std::int64_t low = e < 4 ? e : 0;
        const std::int64_t cap_rows = shape.final_softcap ? logit_tokens * 8 : 0;
        const std::int64_t forward_per_token = (low ? 12 : 20) - (cap_rows ? 8 : 0);
        tensors = {{"fp32 probabilities (the logits' gradient in backward)", logit_tokens * V * 4, logit_tokens * V * 4, true},
                   {"16-bit logits while their probabilities are written", logit_tokens * V * low, 0},
                   {"16-bit copy of the gradient for the matmuls", 0, logit_tokens * V * low},
                   {"label index and mask per token", 9 * bs, 9 * bs, true},
                   {"fp32 per-token buffers of the loss (row max, sum, log-sum-exp, label logit, masked loss)", forward_per_token * bs, 4 * bs},
                   {"the soft cap's log-sum-exp and label logit per token", cap_rows, cap_rows, true}};
        logits_formula = n(logit_tokens) + " tokens × " + n(V) + " vocab × (" + std::to_string(4 + low) +
                         " B in forward: fp32 probabilities" + (low ? " + the 16-bit logits" : ", written over the logits") +
                         "; " + std::to_string(4 + low) +
                         " B in backward: the probabilities become the gradient in place) + 9 B per token of label index "
                         "and mask + " + std::to_string(forward_per_token) +
                         " B per token of fp32 loss buffers in forward, 4 B in backward" +
                         (cap_rows ? " + 8 B per token for the soft cap's derivative (capped in the same passes)" : "") +
                         (logit_tokens < bs ? " (chunked loss)" : "");
    } else if (framework_loss && !fw.loss_fused && compiled_loss(fw)) {
        // Compiled (the framework runs torch.compile on its loss): the fp32 upcast, log-softmax and NLL of a chunk are
        // one generated kernel that saves only its 16-bit input (the chunk's logits) and an fp32
        // logsumexp per token; its backward writes the chunk's logits gradient in the compute dtype.
        const std::int64_t head_dequant = dequantized_head_bytes(fw, quantized, V * h, e);
        tensors = {{"16-bit logits (the compiled loss's input)", bs * V * e, bs * V * e, true},
                   {"fp32 logsumexp per token", bs * 4, bs * 4, true},
                   {"a chunk's 16-bit logits gradient", 0, chunk * V * e},
                   {"quantized head dequantized for its matmul", head_dequant, head_dequant}};
        logit_tokens = chunk;
        logits_formula = n(bs) + " tokens × " + n(V) + " vocab × " + std::to_string(e) +
                         " B kept (16-bit logits: the compiled loss fuses the fp32 upcast and saves only its input) + 4 B "
                         "logsumexp per token + " + std::to_string(chunks) + " chunk" + (chunks > 1 ? "s" : "") + " of " +
                         n(chunk) + " tokens × " + std::to_string(e) + " B logits gradient in backward" +
                         (head_dequant ? " + the quantized head dequantized for its matmul (" + n(head_dequant) + " B)" : "");
    } else if (framework_loss) {
        return framework_loss_memory(fw, shape, chunk, chunks);
    } else {
        // Forward end: the logits the model returns (16-bit, or fp32 in an fp32 run) and the
        // fp32 log-softmax the loss saves. During the log-softmax backward the fp32 gradient of
        // its output and the fp32 gradient of the logits are alive beside both.
        // (A soft-capped head keeps its tanh output too, as in the framework branch above.)
        const std::int64_t held = e < 4 ? e + 4 : 8;
        const std::int64_t softcap = shape.final_softcap ? logit_tokens * V * (held - 4) : 0;
        tensors = {{"logits the model returns", logit_tokens * V * (held - 4), logit_tokens * V * (held - 4), true},
                   {"the soft cap's tanh output", softcap, softcap, true},
                   {"fp32 log-softmax", logit_tokens * V * 4, logit_tokens * V * 4, true},
                   {"the log-softmax's two fp32 gradients", 0, logit_tokens * V * 8}};
        logits_formula = n(logit_tokens) + " tokens × " + n(V) + " vocab × (" + std::to_string(held) +
                         " B after forward: logits + fp32 log-softmax; +8 B in its backward: two fp32 gradients)" +
                         (softcap ? " + the soft cap's tanh output, kept (" + std::to_string(held - 4) + " B per token × vocab)" : "") +
                         (logit_tokens < bs ? " (chunked loss)" : "");
    }
    return loss_of(std::move(tensors), logit_tokens, std::move(logits_formula));
}

}  // namespace wingspan
