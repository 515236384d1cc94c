#include "loss_memory.hpp"

#include <algorithm>
#include <cmath>

#include "wingspan/units.hpp"

namespace wingspan {

namespace {
std::string n(std::int64_t v) { return format_count(v); }
}  // namespace

bool behaviour_flag(const FrameworkProfile& fw, const char* section, const char* key) {
    const auto it = fw.behaviour.find(section);
    return it != fw.behaviour.end() && it->is_object() && it->value(key, false);
}

bool compiled_loss(const FrameworkProfile& fw) {
    return behaviour_flag(fw, "compile", "enabled") && behaviour_flag(fw, "compile", "fuses_loss_upcast");
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
    std::int64_t logits_forward = 0, logits_backward = 0;
    std::string logits_formula;
    if (!trains) {
        logits_forward = logits_backward = b * V * 4;
        logits_formula = "last-token logits: b·vocab·4 B";
    } else if (fw.loss_in_place) {
        // Head and loss in one function: it keeps the fp32 probabilities and turns them into the
        // logits' gradient in place. Forward briefly holds a second fp32 [tokens, vocab] inside
        // logsumexp (16-bit: the logits and their fp32 upcast); backward a 16-bit copy of the
        // gradient for the matmuls. Per token: int64 label index, label mask, int64 count.
        logits_forward = logit_tokens * V * 8 + 17 * bs;
        logits_backward = logit_tokens * V * (4 + (e < 4 ? e : 0)) + 17 * bs;
        logits_formula = n(logit_tokens) + " tokens × " + n(V) +
                         " vocab × (8 B in forward: fp32 probabilities + logsumexp's fp32 temporary; " +
                         std::to_string(4 + (e < 4 ? e : 0)) +
                         " B in backward: the probabilities become the gradient in place) + 17 B per token of label buffers" +
                         (logit_tokens < bs ? " (chunked loss)" : "");
    } else if (framework_loss && !fw.loss_fused && compiled_loss(fw)) {
        // Compiled (the framework runs torch.compile on its loss): the fp32 upcast, log-softmax and NLL of a chunk are
        // one generated kernel that saves only its 16-bit input (the chunk's logits) and an fp32
        // logsumexp per token; its backward writes the chunk's logits gradient in the compute dtype.
        const std::int64_t head_dequant = fw.quantizes_head && quantized && fw.quant_format != "affine" ? V * h * e : 0;
        logits_forward = bs * V * e + bs * 4 + head_dequant;
        logits_backward = bs * V * e + bs * 4 + chunk * V * e + head_dequant;
        logit_tokens = chunk;
        logits_formula = n(bs) + " tokens × " + n(V) + " vocab × " + std::to_string(e) +
                         " B kept (16-bit logits: the compiled loss fuses the fp32 upcast and saves only its input) + 4 B "
                         "logsumexp per token + " + std::to_string(chunks) + " chunk" + (chunks > 1 ? "s" : "") + " of " +
                         n(chunk) + " tokens × " + std::to_string(e) + " B logits gradient in backward" +
                         (head_dequant ? " + the quantized head dequantized for its matmul (" + n(head_dequant) + " B)" : "");
    } else if (framework_loss) {
        // Per token × vocab: the logits the model returns when it keeps them, the log-softmax the
        // loss saves (fp32 when it upcasts), none of it when fused (the gradient is made in
        // forward). Per chunk: the logits of a chunk not kept whole and the fp32 upcast in
        // forward; in backward the two gradients of the log-softmax.
        const std::int64_t lsm = (fw.loss_upcast_fp32 || e >= 4) ? 4 : e;
        const std::int64_t upcast = (fw.loss_upcast_fp32 && e < 4) ? 4 : 0;
        const std::int64_t held = fw.loss_fused ? 0 : (fw.logits_held ? e : 0) + lsm;
        const std::int64_t fwd_chunk = (fw.logits_held ? 0 : e) + upcast + (fw.loss_fused ? 3 * lsm : 0);
        const std::int64_t bwd_chunk = fw.loss_fused ? 0 : 2 * lsm;
        const std::int64_t hidden_grad = fw.loss_fused ? bs * h * e : 0;   // made in forward, kept for backward
        // A quantized head is dequantized (compute dtype) for each chunk's matmul, forward and backward.
        // (MLX's quantized_matmul reads the packed weights directly: nothing dequantized.)
        const std::int64_t head_dequant = fw.quantizes_head && quantized && fw.quant_format != "affine" ? V * h * e : 0;
        logits_forward = bs * V * held + chunk * V * fwd_chunk + hidden_grad + head_dequant;
        logits_backward = bs * V * held + chunk * V * bwd_chunk + hidden_grad + head_dequant;
        logit_tokens = chunk;
        logits_formula = n(bs) + " tokens × " + n(V) + " vocab × " + std::to_string(held) + " B kept (" +
                         (fw.loss_fused ? std::string("fused loss: nothing")
                                        : std::string(fw.logits_held ? "logits + " : "") + (lsm == 4 ? "fp32" : "16-bit") +
                                              " log-softmax") +
                         ") + " + std::to_string(chunks) + " chunk" + (chunks > 1 ? "s" : "") + " of " + n(chunk) +
                         " tokens × (" + std::to_string(fwd_chunk) + " B in forward, " + std::to_string(bwd_chunk) +
                         " B in backward)" + (hidden_grad ? " + the hidden states' gradient made in forward" : "") +
                         (head_dequant ? " + the quantized head dequantized for its matmul (" + n(head_dequant) + " B)" : "");
    } else {
        // Forward end: the logits the model returns (16-bit, or fp32 in an fp32 run) and the
        // fp32 log-softmax the loss saves. During the log-softmax backward the fp32 gradient of
        // its output and the fp32 gradient of the logits are alive beside both.
        const std::int64_t held = e < 4 ? e + 4 : 8;
        logits_forward = logit_tokens * V * held;
        logits_backward = logit_tokens * V * (held + 8);
        logits_formula = n(logit_tokens) + " tokens × " + n(V) + " vocab × (" + std::to_string(held) +
                         " B after forward: logits + fp32 log-softmax; +8 B in its backward: two fp32 gradients)" +
                         (logit_tokens < bs ? " (chunked loss)" : "");
    }
    return {logits_forward, logits_backward, logit_tokens, logits_formula};
}

}  // namespace wingspan
