#include "kernels/kernels_loss.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>


namespace wingspan::train::kernels {

namespace {

// Rows per block on a CPU: about 256 KiB of fp32 (half of a small L2), at least one row.
std::int64_t block_rows(std::int64_t V) { return std::max<std::int64_t>(1, (256 * 1024) / (std::max<std::int64_t>(V, 1) * 4)); }

// Runs f(r0, r1) over [0, N) in blocks: on a CPU across the pool threads (each block single-
// threaded inside the region, so its ops allocate no reduction buffers), elsewhere once.
template <class F>
void for_row_blocks(const at::Tensor& t, const F& f) {
    const std::int64_t N = t.size(0);
    if (N == 0) return;
    if (!t.is_cpu()) {
        f(0, N);
        return;
    }
    const std::int64_t rows = block_rows(t.size(1)), blocks = (N + rows - 1) / rows;
    at::parallel_for(0, blocks, 1, [&](std::int64_t b0, std::int64_t b1) {
        for (std::int64_t b = b0; b < b1; ++b) f(b * rows, std::min(N, (b + 1) * rows));
    });
}

}  // namespace

at::Tensor probabilities_for(const at::Tensor& logits) {
    const bool low = logits.scalar_type() == at::kBFloat16 || logits.scalar_type() == at::kHalf;
    return low ? at::empty(logits.sizes(), logits.options().dtype(at::kFloat)) : logits;
}

at::Tensor softmax_rows(const at::Tensor& logits, at::Tensor& probs) {
    TORCH_CHECK(logits.dim() == 2 && probs.sizes() == logits.sizes() && at::isFloatingType(probs.scalar_type()) &&
                    probs.element_size() >= 4 && probs.is_contiguous(),
                "softmax_rows: logits [N, V] and contiguous fp32 (or fp64) probabilities of the same shape");
    const bool in_place = logits.is_same(probs);
    const std::int64_t N = logits.size(0);
    // Per row: the maximum, then the sum of exp(x - max); log-sum-exp = max + log(sum).
    at::Tensor max = at::empty({N, 1}, probs.options()), sum = at::empty({N, 1}, probs.options());
    for_row_blocks(probs, [&](std::int64_t r0, std::int64_t r1) {
        at::Tensor p = probs.narrow(0, r0, r1 - r0), m = max.narrow(0, r0, r1 - r0), s = sum.narrow(0, r0, r1 - r0);
        if (!in_place) p.copy_(logits.narrow(0, r0, r1 - r0));   // the exact widening of 16-bit values
        at::amax_out(m, p, {1}, /*keepdim=*/true);
        p.sub_(m).exp_();
        at::sum_out(s, p, {1}, /*keepdim=*/true);
        p.div_(s);
    });
    return sum.log_().add_(max).squeeze(1);
}

void scale_rows(at::Tensor& d, const at::Tensor& scale, at::Tensor& out) {
    TORCH_CHECK(d.dim() == 2 && out.sizes() == d.sizes() && scale.numel() == d.size(0) && d.is_contiguous(),
                "scale_rows: d [N, V], scale [N] and out [N, V]");
    const bool in_place = out.is_same(d);
    const at::Tensor column = scale.reshape({-1, 1});
    for_row_blocks(d, [&](std::int64_t r0, std::int64_t r1) {
        at::Tensor rows = d.narrow(0, r0, r1 - r0);
        rows.mul_(column.narrow(0, r0, r1 - r0));
        if (!in_place) out.narrow(0, r0, r1 - r0).copy_(rows);
    });
}

}  // namespace wingspan::train::kernels
