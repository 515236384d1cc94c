#include "kernels/kernels_loss.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/kernels_row_math.hpp"

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

// rows [n, V] of probabilities p become (p − onehot) · (1 − (y / cap)²), y = cap · tanh(x / cap) the
// capped logit: log p + lse where p > 0, picked at the label. A p that underflowed to 0 (a cap
// above ~40 with a large vocabulary) contributes 0 off the label whatever its y.
void soft_cap_gradient_rows(at::Tensor& rows, const at::Tensor& label_index, const at::Tensor& lse,
                            const at::Tensor& picked, double cap) {
    const std::int64_t n = rows.size(0), V = rows.size(1);
    if (rows.is_cpu()) {   // one pass, nothing allocated
        const at::Tensor labels = label_index.contiguous(), l = lse.contiguous(), y = picked.contiguous();
        AT_DISPATCH_FLOATING_TYPES(rows.scalar_type(), "soft_cap_gradient_rows", [&] {
            const std::int64_t* lab = labels.data_ptr<std::int64_t>();
            const scalar_t* lse_p = l.data_ptr<scalar_t>();
            const scalar_t* picked_p = y.data_ptr<scalar_t>();
            const scalar_t c = static_cast<scalar_t>(cap);
            scalar_t* first = rows.data_ptr<scalar_t>();
            for (std::int64_t i = 0; i < n; ++i) {
                scalar_t* row = first + i * V;
                const scalar_t label_p = row[lab[i]];
                for (std::int64_t j = 0; j < V; ++j) {
                    const scalar_t p = row[j];
                    const scalar_t u = (std::log(p) + lse_p[i]) / c;
                    row[j] = p > 0 ? p * (1 - u * u) : scalar_t(0);
                }
                const scalar_t u = picked_p[i] / c;
                row[lab[i]] = (label_p - 1) * (1 - u * u);
            }
        });
        return;
    }
    // Other devices: tensor steps over slices of about 8 MiB, the most this adds beside probs.
    const std::int64_t step = std::max<std::int64_t>(1, (8 << 20) / (std::max<std::int64_t>(V, 1) * 4));
    for (std::int64_t r0 = 0; r0 < n; r0 += step) {
        const std::int64_t m = std::min(step, n - r0);
        at::Tensor part = rows.narrow(0, r0, m);
        const at::Tensor lab = label_index.narrow(0, r0, m);
        const at::Tensor label_p = part.gather(1, lab);
        at::Tensor u = part.log().add_(lse.narrow(0, r0, m).reshape({-1, 1})).div_(cap);
        part.mul_(u.mul_(u).neg_().add_(1)).nan_to_num_(0.0);   // 0 · −inf where p underflowed
        const at::Tensor w = picked.narrow(0, r0, m).reshape({-1, 1}) / cap;
        part.scatter_(1, lab, (label_p - 1) * (1 - w * w));
    }
}

// ---------------------------------------------------------------------------------------
// CPU rows: one call per row, every pass over it while it is in cache (the tensor-op blocks
// above dispatch five ops per row of 49,152 logits, and libtorch's bf16 widening alone ran at
// 0.5 G values/s).

using namespace row_math;

// p = exp(x − max) / Σ, fp32, from a row of width V in T; the row's max and Σ into *max, *sum.
// Each pass is one simple loop, so each vectorises.
template <typename T>
__attribute__((always_inline)) inline void softmax_row_f32(const T* x, float* p, std::int64_t V, float* max,
                                                           float* sum) {
    const float m = row_max(x, V, -std::numeric_limits<float>::infinity());
    for (std::int64_t j = 0; j < V; ++j) p[j] = exp_approx(ld(x + j) - m);
    const float s = row_sum(p, V);
    for (std::int64_t j = 0; j < V; ++j) p[j] /= s;
    *max = m;
    *sum = s;
}

WINGSPAN_CLONES void softmax_rows_f32(const float* x, float* p, float* max, float* sum, std::int64_t r0,
                                      std::int64_t r1, std::int64_t V) {
    for (std::int64_t r = r0; r < r1; ++r) softmax_row_f32(x + r * V, p + r * V, V, max + r, sum + r);
}
WINGSPAN_CLONES void softmax_rows_bf16(const std::uint16_t* x, float* p, float* max, float* sum, std::int64_t r0,
                                       std::int64_t r1, std::int64_t V) {
    for (std::int64_t r = r0; r < r1; ++r) softmax_row_f32(x + r * V, p + r * V, V, max + r, sum + r);
}

// out = (p − onehot(label)) · scale per row, in T (p itself where T is fp32: in place).
template <typename T>
__attribute__((always_inline)) inline void gradient_row(const float* p, std::int64_t label, float scale, T* out,
                                                        std::int64_t V) {
    const float at_label = (p[label] - 1.0f) * scale;
    float buf[kChunk];
    for (std::int64_t j0 = 0; j0 < V; j0 += kChunk) {
        const std::int64_t c = std::min(kChunk, V - j0);
        for (std::int64_t k = 0; k < c; ++k) buf[k] = p[j0 + k] * scale;
        narrow(buf, out + j0, c);
    }
    st(out + label, at_label);
}

WINGSPAN_CLONES void gradient_rows_f32(float* p, const std::int64_t* labels, const float* scale, std::int64_t r0,
                                       std::int64_t r1, std::int64_t V) {
    for (std::int64_t r = r0; r < r1; ++r) gradient_row(p + r * V, labels[r], scale[r], p + r * V, V);
}
WINGSPAN_CLONES void gradient_rows_bf16(const float* p, const std::int64_t* labels, const float* scale,
                                        std::uint16_t* out, std::int64_t r0, std::int64_t r1, std::int64_t V) {
    for (std::int64_t r = r0; r < r1; ++r) gradient_row(p + r * V, labels[r], scale[r], out + r * V, V);
}

bool cpu_rows(const at::Tensor& logits) {
    return logits.is_cpu() && logits.is_contiguous() && cpu_kernel_dtype(logits.scalar_type()) && logits.size(1) > 0;
}

}  // namespace

RowCrossEntropy cross_entropy_rows(at::Tensor logits, const at::Tensor& label_index, double cap) {
    TORCH_CHECK(logits.dim() == 2 && label_index.dim() == 2 && label_index.size(0) == logits.size(0),
                "cross_entropy_rows: logits [N, V] and label indices [N, 1]");
    const bool low = logits.scalar_type() == at::kBFloat16 || logits.scalar_type() == at::kHalf;
    const std::int64_t N = logits.size(0);
    RowCrossEntropy out;
    out.probs = low ? at::empty(logits.sizes(), logits.options().dtype(at::kFloat)) : logits.contiguous();
    out.picked = logits.gather(1, label_index).squeeze(1).to(out.probs.scalar_type());   // before the pass
    if (cap > 0) out.picked.div_(cap).tanh_().mul_(cap);
    // Per row: the maximum, then the sum of exp(x - max); log-sum-exp = max + log(sum).
    at::Tensor max = at::empty({N, 1}, out.probs.options()), sum = at::empty({N, 1}, out.probs.options());
    if (cap == 0 && cpu_rows(logits) && out.probs.scalar_type() == at::kFloat) {
        const std::int64_t V = logits.size(1);
        float* p = out.probs.data_ptr<float>();
        at::parallel_for(0, N, 1, [&](std::int64_t r0, std::int64_t r1) {
            if (low)
                softmax_rows_bf16(bits(logits), p, max.data_ptr<float>(), sum.data_ptr<float>(), r0, r1, V);
            else
                softmax_rows_f32(p, p, max.data_ptr<float>(), sum.data_ptr<float>(), r0, r1, V);
        });
    } else {
        for_row_blocks(out.probs, [&](std::int64_t r0, std::int64_t r1) {
            at::Tensor p = out.probs.narrow(0, r0, r1 - r0), m = max.narrow(0, r0, r1 - r0), s = sum.narrow(0, r0, r1 - r0);
            if (low) p.copy_(logits.narrow(0, r0, r1 - r0));   // the exact widening of 16-bit values
            if (cap > 0) p.div_(cap).tanh_().mul_(cap);
            at::amax_out(m, p, {1}, /*keepdim=*/true);
            p.sub_(m).exp_();
            at::sum_out(s, p, {1}, /*keepdim=*/true);
            p.div_(s);
        });
    }
    logits.reset();
    out.lse = sum.log_().add_(max).squeeze(1);
    return out;
}

at::Tensor logits_gradient(at::Tensor& probs, const at::Tensor& label_index, const at::Tensor& scale,
                           at::ScalarType dtype, const SoftCap& softcap) {
    TORCH_CHECK(probs.dim() == 2 && probs.is_contiguous() && scale.numel() == probs.size(0),
                "logits_gradient: probabilities [N, V] and a scale per row");
    const bool capped = softcap.cap > 0;
    TORCH_CHECK(!capped || (softcap.lse.numel() == probs.size(0) && softcap.picked.numel() == probs.size(0)),
                "logits_gradient: a soft cap needs each row's log-sum-exp and label logit");
    if (!capped && probs.is_cpu() && probs.scalar_type() == at::kFloat && (dtype == at::kFloat || dtype == at::kBFloat16)) {
        const std::int64_t N = probs.size(0), V = probs.size(1);
        const at::Tensor labels = label_index.contiguous(), sc = scale.contiguous();
        const std::int64_t* lab = labels.data_ptr<std::int64_t>();
        for (std::int64_t i = 0; i < N; ++i)
            TORCH_CHECK(lab[i] >= 0 && lab[i] < V, "logits_gradient: label ", lab[i], " outside the vocabulary of ", V);
        at::Tensor out = dtype == at::kFloat ? probs : at::empty(probs.sizes(), probs.options().dtype(dtype));
        at::parallel_for(0, N, 1, [&](std::int64_t r0, std::int64_t r1) {
            if (dtype == at::kFloat)
                gradient_rows_f32(probs.data_ptr<float>(), lab, sc.data_ptr<float>(), r0, r1, V);
            else
                gradient_rows_bf16(probs.data_ptr<float>(), lab, sc.data_ptr<float>(), bits(out), r0, r1, V);
        });
        return out;
    }
    if (!capped) probs.scatter_add_(1, label_index, at::full({probs.size(0), 1}, -1.0, probs.options()));   // p − onehot
    at::Tensor out = dtype == probs.scalar_type() ? probs : at::empty(probs.sizes(), probs.options().dtype(dtype));
    const bool in_place = out.is_same(probs);
    const at::Tensor column = scale.reshape({-1, 1});
    for_row_blocks(probs, [&](std::int64_t r0, std::int64_t r1) {
        at::Tensor rows = probs.narrow(0, r0, r1 - r0);
        if (capped)   // (p − onehot) · (1 − (y / cap)²)
            soft_cap_gradient_rows(rows, label_index.narrow(0, r0, r1 - r0), softcap.lse.narrow(0, r0, r1 - r0),
                                   softcap.picked.narrow(0, r0, r1 - r0), softcap.cap);
        rows.mul_(column.narrow(0, r0, r1 - r0));
        if (!in_place) out.narrow(0, r0, r1 - r0).copy_(rows);
    });
    return out;
}

}  // namespace wingspan::train::kernels
