#include "kernels/kernels_softmax.hpp"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/device_ops.hpp"
#include "kernels/kernels_band.hpp"
#include "kernels/kernels_row_math.hpp"
#include "support/profile_scopes.hpp"

namespace wingspan::train::fused {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

namespace {

using namespace row_math;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Rows up to this wide keep their fp32 exponentials on the stack between the sum and the
// normalisation; wider ones compute them twice (attention rows are the key length).
constexpr std::int64_t kStackRow = 4096;

// v = x + m in fp32, and the row's maximum of v.
template <typename T, typename M>
__attribute__((always_inline)) inline float masked_row(const T* x, const M* m, float* v, std::int64_t n) {
    for (std::int64_t k = 0; k < n; ++k) v[k] = ld(x + k) + ld(m + k);
    return row_max(v, n, kNegInf);
}

// e = exp(v − hi) in place; a masked (−inf) position is exactly 0, as libtorch's exp(−inf).
__attribute__((always_inline)) inline void shifted_exp(float* v, float hi, std::int64_t n) {
    for (std::int64_t k = 0; k < n; ++k) v[k] = v[k] == kNegInf ? 0.0f : exp_approx(v[k] - hi);
}

// One row of width n: p = softmax(x + m), fp32 math, rounded once to T. A row masked
// everywhere has hi = −inf and sum 0: its entries are NaN, as libtorch's.
template <typename T, typename M>
__attribute__((always_inline)) inline void masked_softmax_row(const T* x, const M* m, T* p, std::int64_t n) {
    if (n <= kStackRow) {
        float e[kStackRow];
        const float hi = masked_row(x, m, e, n);
        shifted_exp(e, hi, n);
        const float inv = 1.0f / row_sum(e, n);
        for (std::int64_t k = 0; k < n; ++k) e[k] *= inv;
        narrow(e, p, n);
        return;
    }
    // Wider rows in chunks: the maximum, the sum, then the output, each recomputing v and e.
    float e[kChunk];
    float hi = kNegInf;
    for (std::int64_t j0 = 0; j0 < n; j0 += kChunk) {
        const std::int64_t c = std::min(kChunk, n - j0);
        const float h = masked_row(x + j0, m + j0, e, c);
        hi = h > hi ? h : hi;
    }
    float sum = 0;
    for (std::int64_t j0 = 0; j0 < n; j0 += kChunk) {
        const std::int64_t c = std::min(kChunk, n - j0);
        masked_row(x + j0, m + j0, e, c);
        shifted_exp(e, hi, c);
        sum += row_sum(e, c);
    }
    const float inv = 1.0f / sum;
    for (std::int64_t j0 = 0; j0 < n; j0 += kChunk) {
        const std::int64_t c = std::min(kChunk, n - j0);
        masked_row(x + j0, m + j0, e, c);
        shifted_exp(e, hi, c);
        for (std::int64_t k = 0; k < c; ++k) e[k] *= inv;
        narrow(e, p + j0, c);
    }
}

// dx = p · (dp − Σ dp·p), fp32 math, rounded once to T.
template <typename T>
__attribute__((always_inline)) inline void softmax_backward_row(const T* dp, const T* p, T* dx, std::int64_t n) {
    float acc[16] = {};
    std::int64_t k = 0;
    for (; k + 16 <= n; k += 16)
        for (int l = 0; l < 16; ++l) acc[l] += ld(dp + k + l) * ld(p + k + l);
    float dot = 0;
    for (; k < n; ++k) dot += ld(dp + k) * ld(p + k);
    for (float a : acc) dot += a;
    float e[kChunk];
    for (std::int64_t j0 = 0; j0 < n; j0 += kChunk) {
        const std::int64_t c = std::min(kChunk, n - j0);
        for (std::int64_t l = 0; l < c; ++l) e[l] = ld(p + j0 + l) * (ld(dp + j0 + l) - dot);
        narrow(e, dx + j0, c);
    }
}

using kernels::Span;

// Rows r0..r1 of out [rows, n], row r at position r mod T: row(r, t, lo, width) fills its span
// [lo, lo + width), every entry outside it is an exact zero. The row lambdas are always_inline:
// a lambda left out of line is compiled for the baseline ISA, not for the caller's clone.
template <typename T, typename Row>
__attribute__((always_inline)) inline void span_rows(T* out, const Span* spans, std::int64_t r0, std::int64_t r1,
                                                     std::int64_t T_, std::int64_t n, const Row& row) {
    for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t t = r % T_;
        const Span sp = spans[t];
        T* o = out + r * n;
        std::fill(o, o + sp.lo, T(0));
        row(r, t, sp.lo, sp.hi - sp.lo);
        std::fill(o + sp.hi, o + n, T(0));
    }
}

template <typename T, typename M>
__attribute__((always_inline)) inline void forward_rows(const T* x, const M* m, T* p, const Span* spans, std::int64_t r0,
                                                        std::int64_t r1, std::int64_t T_, std::int64_t n) {
    span_rows(p, spans, r0, r1, T_, n, [&](std::int64_t r, std::int64_t t, std::int64_t lo, std::int64_t w) __attribute__((always_inline)) {
        masked_softmax_row(x + r * n + lo, m + t * n + lo, p + r * n + lo, w);
    });
}

WINGSPAN_CLONES void forward_f32_f32(const float* x, const float* m, float* p, const Span* spans, std::int64_t r0,
                                     std::int64_t r1, std::int64_t T_, std::int64_t n) {
    forward_rows(x, m, p, spans, r0, r1, T_, n);
}
WINGSPAN_CLONES void forward_bf16_f32(const std::uint16_t* x, const float* m, std::uint16_t* p, const Span* spans,
                                      std::int64_t r0, std::int64_t r1, std::int64_t T_, std::int64_t n) {
    forward_rows(x, m, p, spans, r0, r1, T_, n);
}
WINGSPAN_CLONES void forward_bf16_bf16(const std::uint16_t* x, const std::uint16_t* m, std::uint16_t* p,
                                       const Span* spans, std::int64_t r0, std::int64_t r1, std::int64_t T_,
                                       std::int64_t n) {
    forward_rows(x, m, p, spans, r0, r1, T_, n);
}
// The gradient over each row's span only (the probabilities' gradient outside it may be
// unwritten: kernels_band.hpp).
template <typename T>
__attribute__((always_inline)) inline void backward_rows(const T* dp, const T* p, T* dx, const Span* spans,
                                                         std::int64_t r0, std::int64_t r1, std::int64_t T_, std::int64_t n) {
    span_rows(dx, spans, r0, r1, T_, n, [&](std::int64_t r, std::int64_t, std::int64_t lo, std::int64_t w) __attribute__((always_inline)) {
        softmax_backward_row(dp + r * n + lo, p + r * n + lo, dx + r * n + lo, w);
    });
}

WINGSPAN_CLONES void backward_f32(const float* dp, const float* p, float* dx, const Span* spans, std::int64_t r0,
                                  std::int64_t r1, std::int64_t T_, std::int64_t n) {
    backward_rows(dp, p, dx, spans, r0, r1, T_, n);
}
WINGSPAN_CLONES void backward_bf16(const std::uint16_t* dp, const std::uint16_t* p, std::uint16_t* dx,
                                   const Span* spans, std::int64_t r0, std::int64_t r1, std::int64_t T_, std::int64_t n) {
    backward_rows(dp, p, dx, spans, r0, r1, T_, n);
}

// The spans as autograd keeps them for backward: [lo, hi] pairs in an int list (no tensor, so
// no bytes in the saved-tensor count).
std::vector<std::int64_t> flatten(const std::vector<Span>& spans) {
    std::vector<std::int64_t> flat;
    flat.reserve(2 * spans.size());
    for (const Span& s : spans) flat.insert(flat.end(), {s.lo, s.hi});
    return flat;
}

std::vector<Span> unflatten(const std::vector<std::int64_t>& flat) {
    std::vector<Span> spans(flat.size() / 2);
    for (size_t t = 0; t < spans.size(); ++t) spans[t] = {flat[2 * t], flat[2 * t + 1]};
    return spans;
}

// Whether the CPU rows apply: contiguous scores [..., g·T, Tk] of fp32 or bf16, a contiguous
// [T, Tk] mask in fp32 or the scores' dtype.
bool cpu_mask(const at::Tensor& mask, at::ScalarType scores) {
    if (!mask.is_cpu() || mask.dim() != 2 || !mask.is_contiguous()) return false;
    return mask.scalar_type() == at::kFloat || mask.scalar_type() == scores;
}

bool cpu_rows(const at::Tensor& scores, const at::Tensor& mask) {
    if (!scores.is_cpu() || !cpu_kernel_dtype(scores.scalar_type()) || !scores.is_contiguous() || scores.dim() < 2)
        return false;
    if (!cpu_mask(mask, scores.scalar_type())) return false;
    if (mask.scalar_type() != at::kFloat && mask.scalar_type() != scores.scalar_type()) return false;
    const std::int64_t T = mask.size(0), n = scores.size(-1);
    return T > 0 && n > 0 && scores.size(-2) % T == 0 && mask.size(1) == n;
}

struct MaskedSoftmaxFn : public torch::autograd::Function<MaskedSoftmaxFn> {
    static Variable forward(AutogradContext* ctx, const Variable& scores, const Variable& mask,
                            const std::vector<Span>* given) {
        WINGSPAN_PROFILE_SCOPE(profile::kSoftmax);
        const std::int64_t T = mask.size(0), n = scores.size(-1), rows = scores.numel() / n;
        at::Tensor p = at::empty_like(scores, at::MemoryFormat::Contiguous);
        const bool f32_mask = mask.scalar_type() == at::kFloat;
        const std::vector<Span> spans = given ? *given : kernels::finite_spans(mask);
        at::parallel_for(0, rows, grain_rows(n), [&](std::int64_t r0, std::int64_t r1) {
            if (scores.scalar_type() == at::kFloat)
                forward_f32_f32(scores.data_ptr<float>(), mask.data_ptr<float>(), p.data_ptr<float>(), spans.data(), r0, r1,
                                T, n);
            else if (f32_mask)
                forward_bf16_f32(bits(scores), mask.data_ptr<float>(), bits(p), spans.data(), r0, r1, T, n);
            else
                forward_bf16_bf16(bits(scores), bits(mask), bits(p), spans.data(), r0, r1, T, n);
        });
        ctx->save_for_backward({p});
        ctx->saved_data["spans"] = flatten(spans);
        return p;
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        WINGSPAN_PROFILE_SCOPE(profile::kSoftmaxBackward);
        const at::Tensor p = ctx->get_saved_variables()[0];
        const at::Tensor dp = grads[0].scalar_type() == p.scalar_type() ? grads[0].contiguous()
                                                                         : grads[0].to(p.scalar_type()).contiguous();
        const std::vector<Span> spans = unflatten(ctx->saved_data["spans"].toIntVector());
        const auto T = static_cast<std::int64_t>(spans.size());
        const std::int64_t n = p.size(-1), rows = p.numel() / n;
        at::Tensor dx = at::empty_like(p, at::MemoryFormat::Contiguous);
        at::parallel_for(0, rows, grain_rows(n), [&](std::int64_t r0, std::int64_t r1) {
            if (p.scalar_type() == at::kFloat)
                backward_f32(dp.data_ptr<float>(), p.data_ptr<float>(), dx.data_ptr<float>(), spans.data(), r0, r1, T, n);
            else
                backward_bf16(bits(dp), bits(p), bits(dx), spans.data(), r0, r1, T, n);
        });
        return {dx, Variable(), Variable()};
    }
};

}  // namespace

std::optional<CausalBand> causal_band(const at::Tensor& queries, const at::Tensor& mask) {
    if (!queries.is_cpu() || !cpu_kernel_dtype(queries.scalar_type()) || !cpu_mask(mask, queries.scalar_type()))
        return std::nullopt;
    if (mask.size(0) == 0 || mask.size(1) == 0) return std::nullopt;
    std::vector<Span> spans = kernels::finite_spans(mask);
    std::optional<kernels::Band> band = kernels::band_of(spans, mask.size(1));
    if (!band) return std::nullopt;
    return CausalBand{std::move(spans), std::move(*band)};
}

at::Tensor masked_softmax(at::Tensor scores, const at::Tensor& mask, Path path, const std::vector<Span>* spans) {
    if (path == Path::Auto && cpu_rows(scores, mask)) return MaskedSoftmaxFn::apply(scores, mask, spans);
    {
        // Adding a constant has the identity as its gradient, so autograd need not see it: recorded,
        // the in-place add would make a CopySlices node whose backward clones the whole scores
        // gradient and copies it back. Nothing saved the raw scores.
        at::NoGradGuard constant_add;
        scores.view({-1, mask.size(-2), mask.size(-1)}).add_(mask);
    }
    return ops::softmax(scores, -1);
}

}  // namespace wingspan::train::fused
