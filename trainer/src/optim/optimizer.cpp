#include "optim/optimizer.hpp"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/device_ops.hpp"
#include "support/profile_scopes.hpp"

namespace wingspan::train {

namespace {


template <typename P, typename G, typename M>
void adamw_kernel(P* p, float* master, const G* g, M* m, M* v, std::int64_t n, float lr, float b1, float b2,
                  float eps, float wd, float bc1, float bc2_sqrt, float gscale) {
    at::parallel_for(0, n, 4096, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) {
            const float gi = static_cast<float>(g[i]) * gscale;
            const float mi = b1 * static_cast<float>(m[i]) + (1 - b1) * gi;
            const float vi = b2 * static_cast<float>(v[i]) + (1 - b2) * gi * gi;
            m[i] = static_cast<M>(mi);
            v[i] = static_cast<M>(vi);
            float w = master ? master[i] : static_cast<float>(p[i]);
            w *= 1 - lr * wd;
            w -= (lr / bc1) * mi / (std::sqrt(vi) / bc2_sqrt + eps);
            if (master) master[i] = w;
            p[i] = static_cast<P>(w);
        }
    });
}

// bf16-mixed's case (bf16 parameter and gradient, fp32 master and moments), written so the
// compiler vectorises it: the bf16 conversions as bit operations (round to nearest even, as
// c10::BFloat16 does; a NaN stays a NaN), one clone per vector width chosen at load time. The
// file is compiled without errno for sqrt (v is never negative) and without FMA contraction, so
// every clone rounds exactly as the scalar kernel above does.
__attribute__((target_clones("avx512f", "avx2", "default"))) void adamw_bf16_master_range(
    std::uint16_t* __restrict__ p, float* __restrict__ master, const std::uint16_t* __restrict__ g,
    float* __restrict__ m, float* __restrict__ v, std::int64_t n, float lr, float b1,
    float b2, float eps, float wd, float bc1, float bc2_sqrt, float gscale) {
    const float decay = 1 - lr * wd, step = lr / bc1;
    for (std::int64_t i = 0; i < n; ++i) {
        std::uint32_t gb = static_cast<std::uint32_t>(g[i]) << 16;
        float gf;
        std::memcpy(&gf, &gb, sizeof gf);
        const float gi = gf * gscale;
        const float mi = b1 * m[i] + (1 - b1) * gi;
        const float vi = b2 * v[i] + (1 - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        const float w = master[i] * decay - step * mi / (std::sqrt(vi) / bc2_sqrt + eps);
        master[i] = w;
        std::uint32_t wb;
        std::memcpy(&wb, &w, sizeof wb);
        const bool nan = (wb & 0x7fffffffu) > 0x7f800000u;
        const std::uint32_t rounded = (wb + 0x7fffu + ((wb >> 16) & 1u)) >> 16;
        p[i] = nan ? std::uint16_t{0x7fc0} : static_cast<std::uint16_t>(rounded);
    }
}

// fp32's case (fp32 parameter, gradient and moments, no master copy): the scalar kernel above with
// the pointers declared apart and the master branch gone, so the compiler vectorises it (the scalar
// one ran at a quarter of the memory bandwidth: 6 % of an fp32 full fine-tune's step). Same
// operations in the same order, so every clone rounds exactly as the scalar kernel does.
__attribute__((target_clones("avx512f", "avx2", "default"))) void adamw_fp32_range(
    float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m, float* __restrict__ v, std::int64_t n,
    float lr, float b1, float b2, float eps, float wd, float bc1, float bc2_sqrt, float gscale) {
    const float decay = 1 - lr * wd, step = lr / bc1;
    for (std::int64_t i = 0; i < n; ++i) {
        const float gi = g[i] * gscale;
        const float mi = b1 * m[i] + (1 - b1) * gi;
        const float vi = b2 * v[i] + (1 - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * decay - step * mi / (std::sqrt(vi) / bc2_sqrt + eps);
    }
}

}  // namespace

void adamw_step(ParamState& s, const at::Tensor& grad, std::int64_t step, double lr, double wd, double gscale) {
    WINGSPAN_PROFILE_SCOPE(profile::kAdamW);
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    const float bc1 = 1.0f - std::pow(b1, static_cast<float>(step));
    const float bc2s = std::sqrt(1.0f - std::pow(b2, static_cast<float>(step)));
    if (!s.param.is_cpu()) {   // a GPU: the same update with tensor ops
        ops::adamw(s.param, s.master, grad, s.m, s.v, lr, b1, b2, eps, wd, bc1, bc2s, gscale);
        return;
    }
    at::Tensor g = grad.contiguous();
    const std::int64_t n = s.param.numel();
    float* master = s.master.defined() ? s.master.data_ptr<float>() : nullptr;
    const auto pt = s.param.scalar_type();
    if (pt == at::kHalf) {   // fp16-mixed: fp32 master and moments
        adamw_kernel(s.param.data_ptr<c10::Half>(), master, g.data_ptr<c10::Half>(), s.m.data_ptr<float>(),
                     s.v.data_ptr<float>(), n, lr, b1, b2, eps, wd, bc1, bc2s, gscale);
    } else if (pt == at::kFloat && !master && g.scalar_type() == at::kFloat && s.m.scalar_type() == at::kFloat) {
        float* p = s.param.data_ptr<float>();
        const float* gp = g.data_ptr<float>();
        float* m = s.m.data_ptr<float>();
        float* v = s.v.data_ptr<float>();
        at::parallel_for(0, n, 1 << 14, [&](std::int64_t i0, std::int64_t i1) {
            adamw_fp32_range(p + i0, gp + i0, m + i0, v + i0, i1 - i0, lr, b1, b2, eps, wd, bc1, bc2s, gscale);
        });
    } else if (pt == at::kFloat) {
        adamw_kernel(s.param.data_ptr<float>(), master, g.data_ptr<float>(), s.m.data_ptr<float>(),
                     s.v.data_ptr<float>(), n, lr, b1, b2, eps, wd, bc1, bc2s, gscale);
    } else if (s.m.scalar_type() == at::kFloat && master && g.scalar_type() == at::kBFloat16) {
        auto* p = reinterpret_cast<std::uint16_t*>(s.param.data_ptr<c10::BFloat16>());
        const auto* gp = reinterpret_cast<const std::uint16_t*>(g.data_ptr<c10::BFloat16>());
        float* m = s.m.data_ptr<float>();
        float* v = s.v.data_ptr<float>();
        at::parallel_for(0, n, 1 << 14, [&](std::int64_t i0, std::int64_t i1) {
            adamw_bf16_master_range(p + i0, master + i0, gp + i0, m + i0, v + i0, i1 - i0, lr, b1, b2, eps, wd, bc1,
                                    bc2s, gscale);
        });
    } else if (s.m.scalar_type() == at::kFloat) {
        adamw_kernel(s.param.data_ptr<c10::BFloat16>(), master, g.data_ptr<c10::BFloat16>(), s.m.data_ptr<float>(),
                     s.v.data_ptr<float>(), n, lr, b1, b2, eps, wd, bc1, bc2s, gscale);
    } else {
        adamw_kernel(s.param.data_ptr<c10::BFloat16>(), master, g.data_ptr<c10::BFloat16>(),
                     s.m.data_ptr<c10::BFloat16>(), s.v.data_ptr<c10::BFloat16>(), n, lr, b1, b2, eps, wd, bc1,
                     bc2s, gscale);
    }
}

namespace {

// Sum of squares of [i0, i1) in double, eight independent running sums: one chain of dependent
// double adds waits ~4 cycles per element (a clipped step's norm over every gradient took ~2 % of a
// 135M-class step); eight lanes let the compiler keep a vector of sums. The partition is fixed by
// the range, so a run's norm does not depend on timing.
template <typename T>
inline __attribute__((always_inline)) double sumsq_lanes(const T* p, std::int64_t i0, std::int64_t i1) {
    constexpr int kLanes = 8;
    double lane[kLanes] = {};
    std::int64_t i = i0;
    for (; i + kLanes <= i1; i += kLanes)
        for (int j = 0; j < kLanes; ++j) {
            const double x = static_cast<float>(p[i + j]);
            lane[j] += x * x;
        }
    double acc = 0;
    for (; i < i1; ++i) {
        const double x = static_cast<float>(p[i]);
        acc += x * x;
    }
    for (int j = 0; j < kLanes; ++j) acc += lane[j];
    return acc;
}

#define WINGSPAN_SUMSQ(T)                                                                                      \
    __attribute__((target_clones("avx512f", "avx2", "default"))) double sumsq_range(const T* p, std::int64_t i0, \
                                                                                   std::int64_t i1) {           \
        return sumsq_lanes(p, i0, i1);                                                                         \
    }
WINGSPAN_SUMSQ(float)
WINGSPAN_SUMSQ(c10::BFloat16)
WINGSPAN_SUMSQ(c10::Half)
#undef WINGSPAN_SUMSQ

}  // namespace

double grad_sumsq(const at::Tensor& grad) {
    WINGSPAN_PROFILE_SCOPE(profile::kGradNorm);
    at::Tensor g = grad.contiguous();
    const std::int64_t n = g.numel();
    auto reduce = [&](auto* p) {
        return at::parallel_reduce(
            0, n, 1 << 15, 0.0,
            [&](std::int64_t i0, std::int64_t i1, double acc) { return acc + sumsq_range(p, i0, i1); },
            std::plus<double>());
    };
    if (g.scalar_type() == at::kFloat) return reduce(g.data_ptr<float>());
    if (g.scalar_type() == at::kHalf) return reduce(g.data_ptr<c10::Half>());
    return reduce(g.data_ptr<c10::BFloat16>());
}


}  // namespace wingspan::train
