#pragma once
// The logits and loss buffers of one step under a framework's loss (chunked, upcast, fused,
// compiled), with the formula that explains them. Internal to core's memory model.
#include <cstdint>
#include <string>
#include <vector>

#include "wingspan/profiles.hpp"
#include "wingspan/setup.hpp"

namespace wingspan {

struct LossShape {
    std::int64_t batch = 0;          // sequences in the micro-batch (serving: concurrent sequences)
    std::int64_t tokens = 0;         // batch × sequence
    std::int64_t vocab = 0;
    std::int64_t hidden = 0;
    std::int64_t value_bytes = 0;    // compute dtype
    bool quantized = false;          // frozen linears are stored quantized
    bool final_softcap = false;      // the model soft-caps its logits (Gemma 2's final_logit_softcapping)
};

// One tensor (or a group of one kind) of the loss: its bytes at the end of forward and during the
// loss's backward. A kept tensor is the same allocation in both (forward == backward); otherwise
// each moment allocates its own (0: none there). The loss's other moments, each a phase of its own
// where it matters (rows_phases.cpp write_loss_rows), in step order:
//   head_forward   the head's matmul of its last chunk in forward (forward_head: a dequantized head);
//   at_return      as the model's forward returns, before the loss runs (forward_output: a wrapper that
//                  converts the returned logits, a loop that still holds the previous ones);
//   head_backward  the head's backward, after the loss's (head_backward: a dequantized head).
// through_forward: alive through the whole forward until it returns (the previous micro-batch's
// logits), so in every forward moment after forward_end; its bytes are its at_return.
struct LossTensor {
    std::string name;
    std::int64_t forward = 0;
    std::int64_t backward = 0;
    bool kept = false;
    std::int64_t head_forward = 0;
    std::int64_t at_return = 0;
    std::int64_t head_backward = 0;
    bool through_forward = false;
};

struct LossMemory {
    std::int64_t forward = 0;        // live at the end of forward
    std::int64_t backward = 0;       // live during the loss's backward
    std::int64_t at_return = 0;      // live when the model returns, before the loss (its tensors' at_return)
    std::int64_t head_forward = 0;   // live at the head's last matmul in forward (its tensors' head_forward)
    std::int64_t head_backward = 0;  // live at the head's backward (its tensors' head_backward)
    std::int64_t through_forward = 0;  // live through the whole forward (its through_forward tensors)
    std::int64_t tokens = 0;         // tokens one chunk covers
    std::string formula;
    // The same head run under no_grad for a reference model's log-probs (its forward transient,
    // nothing kept for backward); -1 where the framework materializes full logits for it.
    std::int64_t no_grad = -1;
    std::vector<LossTensor> tensors;   // forward and backward above are their sums
};

// The most the loss holds at any of its moments.
std::int64_t loss_peak(const LossMemory& loss);

// The loss's bytes from its tensors: forward and backward are their sums.
LossMemory loss_of(std::vector<LossTensor> tensors, std::int64_t tokens, std::string formula, std::int64_t no_grad = -1);

// True when the framework runs torch.compile (compile.enabled) and its compiled loss fuses the
// fp32 upcast (compile.fuses_loss_upcast).
bool compiled_loss(const FrameworkProfile& fw);

// The vocabulary columns per block of a head that runs with its loss inside the model (profile
// loss.head_vocab_chunk; prime-rl's FusedOutputLinear); 0: none.
std::int64_t loss_head_vocab_chunk(const FrameworkProfile& fw);

// TRL 1.16's fused log-prob head (profile objective.fused_logprob_head) beyond SFT: per-token
// log-probs from [tokens, 32,768] tiles, never the full logits (loss_memory.cpp fused_logprob_memory).
bool fused_logprob_head(const FrameworkProfile& fw, const TrainingSetup& setup);

LossMemory loss_memory(const FrameworkProfile& fw, const TrainingSetup& setup, const LossShape& shape);

}  // namespace wingspan
