#pragma once
// The cross-entropy's pass over the logits (LmHeadLossFn, trainer/src/model/model.cpp): each
// row's fp32 probabilities and log-sum-exp, in one fp32 [N, V] tensor and nothing else of that
// size.
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

// Where softmax_rows writes the probabilities of these logits [N, V]: a new fp32 tensor for 16-bit
// logits, else the logits themselves (fp32, or fp64 in the trainer's unit tests).
at::Tensor probabilities_for(const at::Tensor& logits);

// probs[i, :] = softmax(logits[i, :]); returns each row's log-sum-exp, [N], in probs' dtype.
// probs is probabilities_for(logits) (contiguous; when it is the logits they are overwritten).
// Allocates [N]- and [N, 1]-sized tensors only.
at::Tensor softmax_rows(const at::Tensor& logits, at::Tensor& probs);

// out[i, :] = d[i, :] · scale[i] (d [N, V] and scale [N] in the probabilities' dtype): the loss's backward scaling of
// its probabilities-turned-gradient. out is d itself (in place) or a 16-bit [N, V] copy for the
// 16-bit head matmuls, written in the same pass.
void scale_rows(at::Tensor& d, const at::Tensor& scale, at::Tensor& out);

}  // namespace wingspan::train::kernels
