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

RowCrossEntropy cross_entropy_rows(at::Tensor logits, const at::Tensor& label_index) {
    TORCH_CHECK(logits.dim() == 2 && label_index.dim() == 2 && label_index.size(0) == logits.size(0),
                "cross_entropy_rows: logits [N, V] and label indices [N, 1]");
    const bool low = logits.scalar_type() == at::kBFloat16 || logits.scalar_type() == at::kHalf;
    const std::int64_t N = logits.size(0);
    RowCrossEntropy out;
    out.probs = low ? at::empty(logits.sizes(), logits.options().dtype(at::kFloat)) : logits.contiguous();
    out.picked = logits.gather(1, label_index).squeeze(1).to(out.probs.scalar_type());   // before the pass
    // Per row: the maximum, then the sum of exp(x - max); log-sum-exp = max + log(sum).
    at::Tensor max = at::empty({N, 1}, out.probs.options()), sum = at::empty({N, 1}, out.probs.options());
    for_row_blocks(out.probs, [&](std::int64_t r0, std::int64_t r1) {
        at::Tensor p = out.probs.narrow(0, r0, r1 - r0), m = max.narrow(0, r0, r1 - r0), s = sum.narrow(0, r0, r1 - r0);
        if (low) p.copy_(logits.narrow(0, r0, r1 - r0));   // the exact widening of 16-bit values
        at::amax_out(m, p, {1}, /*keepdim=*/true);
        p.sub_(m).exp_();
        at::sum_out(s, p, {1}, /*keepdim=*/true);
        p.div_(s);
    });
    logits.reset();
    out.lse = sum.log_().add_(max).squeeze(1);
    return out;
}

at::Tensor logits_gradient(at::Tensor& probs, const at::Tensor& label_index, const at::Tensor& scale,
                           at::ScalarType dtype) {
    TORCH_CHECK(probs.dim() == 2 && probs.is_contiguous() && scale.numel() == probs.size(0),
                "logits_gradient: probabilities [N, V] and a scale per row");
    probs.scatter_add_(1, label_index, at::full({probs.size(0), 1}, -1.0, probs.options()));   // p − onehot
    at::Tensor out = dtype == probs.scalar_type() ? probs : at::empty(probs.sizes(), probs.options().dtype(dtype));
    const bool in_place = out.is_same(probs);
    const at::Tensor column = scale.reshape({-1, 1});
    for_row_blocks(probs, [&](std::int64_t r0, std::int64_t r1) {
        at::Tensor rows = probs.narrow(0, r0, r1 - r0);
        rows.mul_(column.narrow(0, r0, r1 - r0));
        if (!in_place) out.narrow(0, r0, r1 - r0).copy_(rows);
    });
    return out;
}

}  // namespace wingspan::train::kernels
