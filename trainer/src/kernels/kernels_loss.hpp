#pragma once
// The cross-entropy's passes over the logits, forward and backward, for the SFT loss
// (LmHeadLossFn, trainer/src/model/model.cpp) and the preference objectives' log-probabilities
// (SequenceLogpFn, objective_preference.cpp): each row's fp32 probabilities and log-sum-exp, in one
// fp32 [N, V] tensor and nothing else of that size.
//
// Why: at::logsumexp makes a second fp32 [N, V] tensor (x - max, then its exp) beside the one the
// loss keeps, and on a CPU each whole-tensor op is one more trip through memory: the upcast, max,
// subtract, exp, sum, subtract and exp were seven passes over 201 MB for SmolLM2-135M's 49,152-word
// vocabulary at seq 256 × batch 4. Here a CPU thread takes a few rows at a time and runs every
// step on them while they are in its cache; other devices run the same in-place steps on the
// whole tensor. Either way the bytes are the same: the fp32 probabilities (the logits themselves
// in an fp32 run) and, in a 16-bit run, the 16-bit logits until the pass ends (profile
// libtorch-*.json loss_in_place; core/src/memory/loss_memory.cpp).
#include <ATen/ATen.h>

namespace wingspan::train::kernels {

// The cross-entropy of each row of logits [N, V] at its label: probs, the fp32 softmax kept for
// backward (the logits themselves unless they are 16-bit, so fp32 logits are overwritten; fp64 in
// the trainer's unit tests), each row's log-sum-exp [N] and its label's logit [N], in probs' dtype
// (the negative log-likelihood is lse − picked).
// label_index [N, 1] int64 in [0, V). Takes the logits by value and lets them go as soon as the
// pass has read them (move them in): beyond probs it allocates [N]- and [N, 1]-sized tensors only.
struct RowCrossEntropy {
    at::Tensor probs;
    at::Tensor lse;
    at::Tensor picked;
};
// cap > 0 (Gemma 2's final_logit_softcapping): each logit is soft-capped, cap · tanh(x / cap), in the
// same pass before the softmax (no tensor of the logits' size beyond probs), and picked is the
// capped label logit.
RowCrossEntropy cross_entropy_rows(at::Tensor logits, const at::Tensor& label_index, double cap = 0);

// What the gradient of soft-capped logits needs besides the probabilities: the cap, and each row's
// log-sum-exp and capped label logit as cross_entropy_rows returned them ([N], probs' dtype).
struct SoftCap {
    double cap = 0;   // 0: the logits were not capped
    at::Tensor lse;
    at::Tensor picked;
};

// Turns probs into the gradient of the loss with respect to the logits, in place: (p − onehot) ·
// scale[i] per row (scale [N] in probs' dtype), and returns it in `dtype`: probs itself, or a
// 16-bit copy for the 16-bit head matmuls written in the same pass. With a soft cap, also times
// the cap's derivative 1 − (y / cap)² at each capped logit y, recovered as log p + lse (the
// label's from picked, exact even where its probability underflowed), in the same pass.
at::Tensor logits_gradient(at::Tensor& probs, const at::Tensor& label_index, const at::Tensor& scale,
                           at::ScalarType dtype, const SoftCap& softcap = {});

}  // namespace wingspan::train::kernels
