#pragma once
// Fused RMSNorm, SwiGLU and rotary embedding for the decoder (issue 17).
//
// Why: in bf16-mixed each libtorch elementwise op widens bf16 to fp32, computes and narrows
// again on its own; a plain RMSNorm is six such passes, silu(gate)·up three, the rotary five, and
// each keeps its own intermediates for backward. Each op here is one autograd node that reads
// and writes every element once (CPU: one pass per forward and backward for fp32 and bf16,
// threads over rows with at::parallel_for), computes in fp32 and rounds once to the input's dtype,
// the numerics bf16-mixed defines. On other devices (and dtypes) the same node runs as ATen ops
// and saves the same tensors, so the memory the planner predicts does not depend on the path.
//
// What each keeps for backward (profile libtorch-*.json, section "kernels", in core's terms):
//  - rms_norm: its input as it is (16-bit in bf16-mixed) and the fp32 rstd per row; the weight's
//    gradient is recomputed from them (no normalized copy, no x², no fp32 copy of the input).
//  - swiglu: gate and up; silu is recomputed in backward (the down projection keeps the product).
//  - rotary: nothing but the shared cos/sin tables.
#include <ATen/ATen.h>

namespace wingspan::train::fused {

// Which implementation runs: Auto takes the CPU kernels where they apply (CPU, fp32 or bf16);
// Aten forces the tensor-op path (the path of GPUs; tests compare the two).
enum class Path { Auto, Aten };

// x · rstd · w over the last dimension, rstd = 1 / sqrt(mean(x²) + eps). x [..., H], w [H].
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps, Path path = Path::Auto);

// silu(gate) · up, same shapes (views allowed: Phi-3's narrowed gate_up).
at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up, Path path = Path::Auto);

// x · cos + rotate_half(x) · sin, rotate_half(x) = [-x2, x1] of the two halves of the last
// dimension. x [B, H, T, D] (any strides with a contiguous last dimension); cos, sin [T, D].
at::Tensor rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, Path path = Path::Auto);

}  // namespace wingspan::train::fused
