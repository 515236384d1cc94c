#pragma once
// Tensor operations whose implementation depends on the device or the dtype, so the model and
// the optimizer stay device-generic:
//  - fp16 on a CPU whose libtorch has no half kernels (1.13: no half matmul, softmax, silu,
//    dropout): computed in fp32 from the fp16 values and rounded back to fp16, which is what a
//    GPU's fp16 matmul does (fp32 accumulation); differentiable like the native op.
//  - NF4 dequantization and AdamW written with tensor ops for GPUs (the CPU keeps its
//    single-pass kernels, which allocate nothing: the CPU memory figures do not move).
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "kernels/kernels_band.hpp"

namespace wingspan::train::ops {

// Whether this libtorch has CPU kernels for fp16 matmul, softmax and silu (probed once).
bool cpu_half_kernels();

at::Tensor matmul(const at::Tensor& a, const at::Tensor& b);

// Attention's a @ b over a causal band only (kernels_band.hpp), differentiable, its backward
// products banded too: which = Out for the scores (queries @ keysᵀ), Left for the output
// (probabilities @ values). Saves and allocates what matmul does; without a band (null), or for operands
// the CPU kernels do not take, it is matmul.
at::Tensor banded_matmul(const at::Tensor& a, const at::Tensor& b, const kernels::Band* band, kernels::BandedMatrix which);
// out = a @ b into an existing 2-D out; accumulate: out += a @ b (in fp32 on the CPU kernels, rounded
// once), allocating nothing on the CPU kernels' and libtorch's addmm_ paths.
void mm_out(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, bool accumulate = false);
at::Tensor softmax(const at::Tensor& x, std::int64_t dim);
at::Tensor silu(const at::Tensor& x);
at::Tensor dropout(const at::Tensor& x, double p, bool train);
// Causal attention of q [B, H, T, D] with k, v of the same heads.
at::Tensor causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// NF4 (double-quantized, core's nf4_layout) with tensor ops, on the tensors' device.
at::Tensor nf4_absmax(const at::Tensor& block_codes, const at::Tensor& group_scales, const at::Tensor& mean);
at::Tensor nf4_dequantize(const at::Tensor& codes, const at::Tensor& absmax, std::int64_t numel,
                          const std::vector<std::int64_t>& shape, at::ScalarType dtype);

// One AdamW update with tensor ops (same arithmetic as train.cpp's CPU kernel): gradient times
// gscale, moments, decoupled weight decay, bias corrections; master (fp32) when defined.
void adamw(at::Tensor& param, at::Tensor& master, const at::Tensor& grad, at::Tensor& m, at::Tensor& v, float lr,
           float b1, float b2, float eps, float wd, float bc1, float bc2_sqrt, float gscale);
// Sum of squares of a gradient as an fp32 tensor on its device (no host round trip).
at::Tensor sumsq(const at::Tensor& grad);

}  // namespace wingspan::train::ops
