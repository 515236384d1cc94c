#pragma once
// Attention's masked softmax as one autograd node (issue 35).
//
// Why: eager attention added the additive mask to the scores in place, then ran libtorch's softmax
// over them, and in backward libtorch's softmax gradient: three passes over b·heads·s² values per
// layer, each its own trip through memory, 3.5 % of a 135M-class LoRA step. Here one CPU pass per
// row adds the mask, takes the maximum, exponentiates, sums and normalises while the row is in
// cache, and one pass makes the gradient.
//
// The bytes are libtorch's: the node keeps its output (the probabilities, in the scores' dtype)
// as SoftmaxBackward0 does, forward allocates the probabilities beside the scores it is given,
// backward allocates the scores' gradient beside the probabilities' (core's attention rows).
// Other devices and dtypes run the in-place mask add and libtorch's softmax, as before.
#include <ATen/ATen.h>

#include <optional>
#include <vector>

#include "kernels/kernels_band.hpp"
#include "kernels/kernels_fused.hpp"   // Path

namespace wingspan::train::fused {

// softmax(scores + mask) over the last dimension. scores [..., g·T, Tk], contiguous (grouped query
// heads: the rows cycle through the T positions, row r at position r mod T); mask [T, Tk], added
// (0 or −inf, or any additive bias), in fp32 or the scores' dtype. A masked (−inf) position has
// probability exactly 0. Takes scores by value: the caller moves them in, and they are freed as
// soon as the probabilities exist.
// spans: the mask's (kernels::finite_spans), where the caller has them already.
at::Tensor masked_softmax(at::Tensor scores, const at::Tensor& mask, Path path = Path::Auto,
                          const std::vector<kernels::Span>* spans = nullptr);

// The mask's spans and the band attention's products may keep to (kernels_band.hpp) for scores
// computed from these queries under this mask: set where masked_softmax takes its CPU rows for
// them (then it reads each row's span only and writes zeros outside it, forward and backward) and
// the band skips enough; nullopt otherwise.
struct CausalBand {
    std::vector<kernels::Span> spans;
    kernels::Band band;
};
std::optional<CausalBand> causal_band(const at::Tensor& queries, const at::Tensor& mask);

}  // namespace wingspan::train::fused
