#include "optimizer.hpp"

#include <ATen/Parallel.h>

#include <cmath>

#include "device_ops.hpp"

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

}  // namespace

void adamw_step(ParamState& s, const at::Tensor& grad, std::int64_t step, double lr, double wd, double gscale) {
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
    } else if (pt == at::kFloat) {
        adamw_kernel(s.param.data_ptr<float>(), master, g.data_ptr<float>(), s.m.data_ptr<float>(),
                     s.v.data_ptr<float>(), n, lr, b1, b2, eps, wd, bc1, bc2s, gscale);
    } else if (s.m.scalar_type() == at::kFloat) {
        adamw_kernel(s.param.data_ptr<c10::BFloat16>(), master, g.data_ptr<c10::BFloat16>(), s.m.data_ptr<float>(),
                     s.v.data_ptr<float>(), n, lr, b1, b2, eps, wd, bc1, bc2s, gscale);
    } else {
        adamw_kernel(s.param.data_ptr<c10::BFloat16>(), master, g.data_ptr<c10::BFloat16>(),
                     s.m.data_ptr<c10::BFloat16>(), s.v.data_ptr<c10::BFloat16>(), n, lr, b1, b2, eps, wd, bc1,
                     bc2s, gscale);
    }
}

double grad_sumsq(const at::Tensor& grad) {
    at::Tensor g = grad.contiguous();
    const std::int64_t n = g.numel();
    auto reduce = [&](auto* p) {
        return at::parallel_reduce(
            0, n, 1 << 15, 0.0,
            [&](std::int64_t i0, std::int64_t i1, double acc) {
                for (std::int64_t i = i0; i < i1; ++i) {
                    const double x = static_cast<float>(p[i]);
                    acc += x * x;
                }
                return acc;
            },
            std::plus<double>());
    };
    if (g.scalar_type() == at::kFloat) return reduce(g.data_ptr<float>());
    if (g.scalar_type() == at::kHalf) return reduce(g.data_ptr<c10::Half>());
    return reduce(g.data_ptr<c10::BFloat16>());
}


}  // namespace wingspan::train
