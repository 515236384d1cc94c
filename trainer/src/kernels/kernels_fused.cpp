#include "kernels/kernels_fused.hpp"

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernels_row_math.hpp"
#include "memory/memory.hpp"
#include "support/profile_scopes.hpp"

namespace wingspan::train::fused {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

namespace {

using namespace row_math;

// ---------------------------------------------------------------------------------------
// RMSNorm rows

template <typename T>
__attribute__((always_inline)) inline float sum_squares(const T* x, std::int64_t n) {
    float acc[16] = {};
    std::int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int k = 0; k < 16; ++k) {
            const float v = ld(x + j + k);
            acc[k] += v * v;
        }
    float s = 0;
    for (int k = 0; k < 16; ++k) s += acc[k];
    for (; j < n; ++j) {
        const float v = ld(x + j);
        s += v * v;
    }
    return s;
}

template <typename T>
__attribute__((always_inline)) inline float dot3(const T* a, const float* b, const T* c, std::int64_t n) {
    float acc[16] = {};
    std::int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int k = 0; k < 16; ++k) acc[k] += ld(a + j + k) * b[j + k] * ld(c + j + k);
    float s = 0;
    for (int k = 0; k < 16; ++k) s += acc[k];
    for (; j < n; ++j) s += ld(a + j) * b[j] * ld(c + j);
    return s;
}

template <typename T>
__attribute__((always_inline)) inline void norm_forward_rows(const T* x, const float* w, T* y, float* rstd,
                                                             std::int64_t r0, std::int64_t r1, std::int64_t H,
                                                             float eps) {
    for (std::int64_t r = r0; r < r1; ++r) {
        const T* xr = x + r * H;
        T* yr = y + r * H;
        const float rs = 1.0f / std::sqrt(sum_squares(xr, H) / static_cast<float>(H) + eps);
        rstd[r] = rs;
        for (std::int64_t j = 0; j < H; ++j) st(yr + j, ld(xr + j) * rs * w[j]);
    }
}

// dx = rs · (w·dy − x · rs² · Σ(dy·w·x) / H); dw (when wanted) += dy · x · rs.
template <typename T>
__attribute__((always_inline)) inline void norm_backward_rows(const T* dy, const T* x, const float* rstd,
                                                              const float* w, T* dx, float* dw, std::int64_t r0,
                                                              std::int64_t r1, std::int64_t H) {
    for (std::int64_t r = r0; r < r1; ++r) {
        const T* dyr = dy + r * H;
        const T* xr = x + r * H;
        T* dxr = dx + r * H;
        const float rs = rstd[r];
        const float c = dot3(dyr, w, xr, H) * rs * rs / static_cast<float>(H);
        for (std::int64_t j = 0; j < H; ++j) st(dxr + j, rs * (w[j] * ld(dyr + j) - ld(xr + j) * c));
        if (dw)
            for (std::int64_t j = 0; j < H; ++j) dw[j] += ld(dyr + j) * ld(xr + j) * rs;
    }
}

WINGSPAN_CLONES void norm_forward_f32(const float* x, const float* w, float* y, float* rstd, std::int64_t r0,
                                      std::int64_t r1, std::int64_t H, float eps) {
    norm_forward_rows(x, w, y, rstd, r0, r1, H, eps);
}
WINGSPAN_CLONES void norm_forward_bf16(const std::uint16_t* x, const float* w, std::uint16_t* y, float* rstd,
                                       std::int64_t r0, std::int64_t r1, std::int64_t H, float eps) {
    norm_forward_rows(x, w, y, rstd, r0, r1, H, eps);
}
WINGSPAN_CLONES void norm_backward_f32(const float* dy, const float* x, const float* rstd, const float* w, float* dx,
                                       float* dw, std::int64_t r0, std::int64_t r1, std::int64_t H) {
    norm_backward_rows(dy, x, rstd, w, dx, dw, r0, r1, H);
}
WINGSPAN_CLONES void norm_backward_bf16(const std::uint16_t* dy, const std::uint16_t* x, const float* rstd,
                                        const float* w, std::uint16_t* dx, float* dw, std::int64_t r0, std::int64_t r1,
                                        std::int64_t H) {
    norm_backward_rows(dy, x, rstd, w, dx, dw, r0, r1, H);
}

// The weight as fp32, once per call (H values, outside the counting allocator: no tensor).
std::vector<float> weight_f32(const at::Tensor& w) {
    std::vector<float> out(static_cast<size_t>(w.numel()));
    if (w.is_contiguous() && w.scalar_type() == at::kFloat) {
        std::copy(w.data_ptr<float>(), w.data_ptr<float>() + w.numel(), out.begin());
    } else if (w.is_contiguous() && w.scalar_type() == at::kBFloat16) {
        const std::uint16_t* p = bits(w);
        for (size_t j = 0; j < out.size(); ++j) out[j] = ld(p + j);
    } else {
        const at::Tensor wf = w.to(at::kFloat).contiguous();
        std::copy(wf.data_ptr<float>(), wf.data_ptr<float>() + wf.numel(), out.begin());
    }
    return out;
}

at::Tensor rstd_shape_empty(const at::Tensor& x) {
    auto sizes = x.sizes().vec();
    sizes.back() = 1;
    return at::empty(sizes, x.options().dtype(at::kFloat));
}

// The weight's gradient in the gradients component (autograd keeps it as .grad without a copy),
// as the trainable linears' weight gradients are made.
at::Tensor as_weight_grad(const at::Tensor& dw_f32, const at::Tensor& w) {
    mem::Scope scope(Component::Gradients);
    at::Tensor dw = at::empty(dw_f32.sizes(), w.options());
    dw.copy_(dw_f32);
    return dw;
}

struct RmsNormFn : public torch::autograd::Function<RmsNormFn> {
    static Variable forward(AutogradContext* ctx, const Variable& x, const Variable& w, double eps, bool aten) {
        WINGSPAN_PROFILE_SCOPE(profile::kRmsNorm);
        const std::int64_t H = x.size(-1);
        at::Tensor y, rstd;
        const bool cpu = !aten && x.is_cpu() && cpu_kernel_dtype(x.scalar_type()) && x.is_contiguous();
        if (cpu) {
            y = at::empty_like(x, at::MemoryFormat::Contiguous);
            rstd = rstd_shape_empty(x);
            const std::vector<float> wf = weight_f32(w);
            const std::int64_t rows = H ? x.numel() / H : 0;
            float* rp = rstd.data_ptr<float>();
            const auto e = static_cast<float>(eps);
            at::parallel_for(0, rows, grain_rows(H), [&](std::int64_t r0, std::int64_t r1) {
                if (x.scalar_type() == at::kFloat)
                    norm_forward_f32(x.data_ptr<float>(), wf.data(), y.data_ptr<float>(), rp, r0, r1, H, e);
                else
                    norm_forward_bf16(bits(x), wf.data(), bits(y), rp, r0, r1, H, e);
            });
        } else {
            const at::Tensor xf = x.to(at::kFloat);
            rstd = at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
            y = (xf * rstd * w.to(at::kFloat)).to(x.scalar_type());
        }
        ctx->save_for_backward({x, w, rstd});
        ctx->saved_data["aten"] = !cpu;
        return y;
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        WINGSPAN_PROFILE_SCOPE(profile::kRmsNormBackward);
        auto s = ctx->get_saved_variables();
        const at::Tensor &x = s[0], &w = s[1], &rstd = s[2];
        const std::int64_t H = x.size(-1);
        const bool want_dx = ctx->needs_input_grad(0), want_dw = ctx->needs_input_grad(1);
        at::Tensor dx, dw;
        if (!ctx->saved_data["aten"].toBool()) {
            const at::Tensor dy = grads[0].scalar_type() == x.scalar_type() ? grads[0].contiguous()
                                                                            : grads[0].to(x.scalar_type()).contiguous();
            dx = at::empty_like(x, at::MemoryFormat::Contiguous);
            const std::vector<float> wf = weight_f32(w);
            const std::int64_t rows = H ? x.numel() / H : 0;
            // Fixed chunks (not per thread) so the weight gradient's sum order, hence its bits,
            // does not depend on the thread count.
            const std::int64_t chunk = std::max<std::int64_t>(grain_rows(H), 32);
            const std::int64_t chunks = (rows + chunk - 1) / chunk;
            std::vector<float> partial(want_dw ? static_cast<size_t>(chunks * H) : 0, 0.0f);
            at::parallel_for(0, chunks, 1, [&](std::int64_t c0, std::int64_t c1) {
                for (std::int64_t c = c0; c < c1; ++c) {
                    const std::int64_t r0 = c * chunk, r1 = std::min(rows, r0 + chunk);
                    float* dwp = want_dw ? partial.data() + c * H : nullptr;
                    if (x.scalar_type() == at::kFloat)
                        norm_backward_f32(dy.data_ptr<float>(), x.data_ptr<float>(), rstd.data_ptr<float>(), wf.data(),
                                          dx.data_ptr<float>(), dwp, r0, r1, H);
                    else
                        norm_backward_bf16(bits(dy), bits(x),
                                           rstd.data_ptr<float>(), wf.data(), bits(dx), dwp, r0,
                                           r1, H);
                }
            });
            if (want_dw) {
                std::vector<float> sum(static_cast<size_t>(H), 0.0f);
                for (std::int64_t c = 0; c < chunks; ++c)
                    for (std::int64_t j = 0; j < H; ++j) sum[j] += partial[c * H + j];
                mem::Scope scope(Component::Gradients);
                dw = at::empty({H}, w.options());
                if (w.scalar_type() == at::kFloat)
                    std::copy(sum.begin(), sum.end(), dw.data_ptr<float>());
                else
                    dw.copy_(at::from_blob(sum.data(), {H}, at::kFloat));
            }
            if (!want_dx) dx = at::Tensor();
        } else {
            const at::Tensor xf = x.to(at::kFloat), dyf = grads[0].to(at::kFloat), wf = w.to(at::kFloat);
            const at::Tensor g = dyf * wf;
            if (want_dx) {
                const at::Tensor c = (g * xf).sum(-1, /*keepdim=*/true) * rstd * rstd / static_cast<double>(H);
                dx = ((g - xf * c) * rstd).to(x.scalar_type());
            }
            if (want_dw) dw = as_weight_grad((dyf * xf * rstd).reshape({-1, H}).sum(0), w);
        }
        return {dx, dw, Variable(), Variable()};
    }
};

// ---------------------------------------------------------------------------------------
// SwiGLU rows: gate and up rows of width I at their own row strides; out and grads contiguous.

template <typename T>
__attribute__((always_inline)) inline void swiglu_forward_row(const T* g, const T* u, T* m, std::int64_t I) {
    float gb[kChunk], ub[kChunk];
    for (std::int64_t j0 = 0; j0 < I; j0 += kChunk) {
        const std::int64_t n = std::min(kChunk, I - j0);
        widen(g + j0, gb, n);
        widen(u + j0, ub, n);
        for (std::int64_t k = 0; k < n; ++k) ub[k] = gb[k] * sigmoid(gb[k]) * ub[k];
        narrow(ub, m + j0, n);
    }
}

// a = g·σ(g): dg = dm · u · σ(g) · (1 + g · (1 − σ(g))), du = dm · a.
template <typename T>
__attribute__((always_inline)) inline void swiglu_backward_row(const T* dm, const T* g, const T* u, T* dg, T* du,
                                                               std::int64_t I) {
    float db[kChunk], gb[kChunk], ub[kChunk];
    for (std::int64_t j0 = 0; j0 < I; j0 += kChunk) {
        const std::int64_t n = std::min(kChunk, I - j0);
        widen(dm + j0, db, n);
        widen(g + j0, gb, n);
        widen(u + j0, ub, n);
        for (std::int64_t k = 0; k < n; ++k) {
            const float s = sigmoid(gb[k]), d = db[k], gv = gb[k];
            ub[k] = d * ub[k] * s * (1.0f + gv * (1.0f - s));   // dg
            gb[k] = d * gv * s;                                   // du
        }
        if (dg) narrow(ub, dg + j0, n);
        if (du) narrow(gb, du + j0, n);
    }
}

struct RowView {
    std::int64_t rows = 0, width = 0, stride = 0;
};

// Rows of a tensor whose last dimension is contiguous and whose other dimensions flatten into
// one (a contiguous tensor, or Phi-3's narrowed halves of gate_up); rows = 0 if not.
RowView row_view(const at::Tensor& t) {
    RowView v;
    if (t.dim() == 0 || t.stride(-1) != 1) return v;
    v.width = t.size(-1);
    v.rows = v.width ? t.numel() / v.width : 0;
    std::int64_t expect = t.dim() >= 2 ? t.stride(-2) : v.width;
    for (std::int64_t d = t.dim() - 2; d >= 0; --d) {
        if (t.size(d) != 1 && t.stride(d) != expect) return RowView{};
        expect *= t.size(d);
    }
    v.stride = t.dim() >= 2 ? t.stride(-2) : v.width;
    return v;
}

WINGSPAN_CLONES void swiglu_forward_f32(const float* g, const float* u, float* m, std::int64_t gs, std::int64_t us,
                                        std::int64_t r0, std::int64_t r1, std::int64_t I) {
    for (std::int64_t r = r0; r < r1; ++r) swiglu_forward_row(g + r * gs, u + r * us, m + r * I, I);
}
WINGSPAN_CLONES void swiglu_forward_bf16(const std::uint16_t* g, const std::uint16_t* u, std::uint16_t* m,
                                         std::int64_t gs, std::int64_t us, std::int64_t r0, std::int64_t r1,
                                         std::int64_t I) {
    for (std::int64_t r = r0; r < r1; ++r) swiglu_forward_row(g + r * gs, u + r * us, m + r * I, I);
}
WINGSPAN_CLONES void swiglu_backward_f32(const float* dm, const float* g, const float* u, float* dg, float* du,
                                         std::int64_t gs, std::int64_t us, std::int64_t r0, std::int64_t r1,
                                         std::int64_t I) {
    for (std::int64_t r = r0; r < r1; ++r)
        swiglu_backward_row(dm + r * I, g + r * gs, u + r * us, dg ? dg + r * I : nullptr, du ? du + r * I : nullptr, I);
}
WINGSPAN_CLONES void swiglu_backward_bf16(const std::uint16_t* dm, const std::uint16_t* g, const std::uint16_t* u,
                                          std::uint16_t* dg, std::uint16_t* du, std::int64_t gs, std::int64_t us,
                                          std::int64_t r0, std::int64_t r1, std::int64_t I) {
    for (std::int64_t r = r0; r < r1; ++r)
        swiglu_backward_row(dm + r * I, g + r * gs, u + r * us, dg ? dg + r * I : nullptr, du ? du + r * I : nullptr, I);
}

bool swiglu_cpu(const at::Tensor& g, const at::Tensor& u) {
    return g.is_cpu() && u.is_cpu() && cpu_kernel_dtype(g.scalar_type()) && u.scalar_type() == g.scalar_type() &&
           g.sizes() == u.sizes() && row_view(g).rows > 0 && row_view(u).rows > 0;
}

struct SwiGluFn : public torch::autograd::Function<SwiGluFn> {
    static Variable forward(AutogradContext* ctx, const Variable& g, const Variable& u, bool aten) {
        WINGSPAN_PROFILE_SCOPE(profile::kSwiGlu);
        const bool cpu = !aten && swiglu_cpu(g, u);
        at::Tensor m;
        if (cpu) {
            const RowView gv = row_view(g), uv = row_view(u);
            const std::int64_t I = gv.width;
            m = at::empty(g.sizes(), g.options().memory_format(at::MemoryFormat::Contiguous));
            at::parallel_for(0, gv.rows, grain_rows(I), [&](std::int64_t r0, std::int64_t r1) {
                if (g.scalar_type() == at::kFloat)
                    swiglu_forward_f32(g.data_ptr<float>(), u.data_ptr<float>(), m.data_ptr<float>(), gv.stride, uv.stride,
                                       r0, r1, I);
                else
                    swiglu_forward_bf16(bits(g), bits(u),
                                        bits(m), gv.stride, uv.stride, r0, r1, I);
            });
        } else {
            const at::Tensor gf = g.to(at::kFloat);
            m = (gf * at::sigmoid(gf) * u.to(at::kFloat)).to(g.scalar_type());
        }
        ctx->save_for_backward({g, u});
        ctx->saved_data["aten"] = !cpu;
        return m;
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        WINGSPAN_PROFILE_SCOPE(profile::kSwiGluBackward);
        auto s = ctx->get_saved_variables();
        const at::Tensor &g = s[0], &u = s[1];
        const bool want_g = ctx->needs_input_grad(0), want_u = ctx->needs_input_grad(1);
        at::Tensor dg, du;
        if (!ctx->saved_data["aten"].toBool()) {
            const RowView gv = row_view(g), uv = row_view(u);
            const std::int64_t I = gv.width;
            const at::Tensor dm = grads[0].scalar_type() == g.scalar_type() ? grads[0].contiguous()
                                                                            : grads[0].to(g.scalar_type()).contiguous();
            const auto opts = g.options().memory_format(at::MemoryFormat::Contiguous);
            if (want_g) dg = at::empty(g.sizes(), opts);
            if (want_u) du = at::empty(g.sizes(), opts);
            at::parallel_for(0, gv.rows, grain_rows(I), [&](std::int64_t r0, std::int64_t r1) {
                if (g.scalar_type() == at::kFloat)
                    swiglu_backward_f32(dm.data_ptr<float>(), g.data_ptr<float>(), u.data_ptr<float>(),
                                        want_g ? dg.data_ptr<float>() : nullptr, want_u ? du.data_ptr<float>() : nullptr,
                                        gv.stride, uv.stride, r0, r1, I);
                else
                    swiglu_backward_bf16(bits(dm), bits(g),
                                         bits(u), want_g ? bits(dg) : nullptr,
                                         want_u ? bits(du) : nullptr, gv.stride, uv.stride, r0, r1, I);
            });
        } else {
            const at::Tensor gf = g.to(at::kFloat), dmf = grads[0].to(at::kFloat), sg = at::sigmoid(gf);
            if (want_g) dg = (dmf * u.to(at::kFloat) * sg * (1 + gf * (1 - sg))).to(g.scalar_type());
            if (want_u) du = (dmf * gf * sg).to(g.scalar_type());
        }
        return {dg, du, Variable()};
    }
};

// ---------------------------------------------------------------------------------------
// Rotary rows: y = x·cos + [−x2, x1]·sin; dx = dy·cos + [dy2·sin2, −dy1·sin1].

template <typename T>
__attribute__((always_inline)) inline void rotary_row(const T* x, const T* c, const T* s, T* y, std::int64_t D,
                                                      bool backward) {
    const std::int64_t h = D / 2;
    if (!backward) {
        for (std::int64_t j = 0; j < h; ++j) st(y + j, ld(x + j) * ld(c + j) - ld(x + j + h) * ld(s + j));
        for (std::int64_t j = h; j < D; ++j) st(y + j, ld(x + j) * ld(c + j) + ld(x + j - h) * ld(s + j));
    } else {
        for (std::int64_t j = 0; j < h; ++j) st(y + j, ld(x + j) * ld(c + j) + ld(x + j + h) * ld(s + j + h));
        for (std::int64_t j = h; j < D; ++j) st(y + j, ld(x + j) * ld(c + j) - ld(x + j - h) * ld(s + j - h));
    }
}

// Element offsets of row (b, h, t) of a [B, H, T, D] tensor, and of its elements (sd: 1 but for
// a transposed view).
struct Rows4 {
    std::int64_t H, T, sb, sh, st, sd;
    std::int64_t offset(std::int64_t row) const {
        const std::int64_t t = row % T, bh = row / T;
        return (bh / H) * sb + (bh % H) * sh + t * st;
    }
};

Rows4 rows4(const at::Tensor& t) { return {t.size(1), t.size(2), t.stride(0), t.stride(1), t.stride(2), t.stride(3)}; }

// The same rows where x or y is a transposed view (the key's gradient arrives as the transpose of
// the scores product's): element by element, the loads strided. Small (one key head per row).
template <typename T>
void rotary_rows_strided(const T* x, Rows4 xr, const T* c, const T* s, T* y, Rows4 yr, std::int64_t r0,
                         std::int64_t r1, std::int64_t D, bool backward) {
    const std::int64_t h = D / 2;
    for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t t = r % xr.T;
        const T* xp = x + xr.offset(r);
        const T* cp = c + t * D;
        const T* sp = s + t * D;
        T* yp = y + yr.offset(r);
        for (std::int64_t j = 0; j < D; ++j) {
            const float other = ld(xp + (j < h ? j + h : j - h) * xr.sd);
            // forward: [−x2, x1]·sin; backward: [x2·sin2, −x1·sin1]
            const float rot = backward ? (j < h ? other * ld(sp + j + h) : -other * ld(sp + j - h))
                                       : (j < h ? -other * ld(sp + j) : other * ld(sp + j));
            st(yp + j * yr.sd, ld(xp + j * xr.sd) * ld(cp + j) + rot);
        }
    }
}

template <typename T>
__attribute__((always_inline)) inline void rotary_rows(const T* x, Rows4 xr, const T* c, const T* s, T* y, Rows4 yr,
                                                       std::int64_t r0, std::int64_t r1, std::int64_t D, bool backward) {
    for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t t = r % xr.T;
        rotary_row(x + xr.offset(r), c + t * D, s + t * D, y + yr.offset(r), D, backward);
    }
}

WINGSPAN_CLONES void rotary_f32(const float* x, Rows4 xr, const float* c, const float* s, float* y, Rows4 yr,
                                std::int64_t r0, std::int64_t r1, std::int64_t D, bool backward) {
    rotary_rows(x, xr, c, s, y, yr, r0, r1, D, backward);
}
WINGSPAN_CLONES void rotary_bf16(const std::uint16_t* x, Rows4 xr, const std::uint16_t* c, const std::uint16_t* s,
                                 std::uint16_t* y, Rows4 yr, std::int64_t r0, std::int64_t r1, std::int64_t D,
                                 bool backward) {
    rotary_rows(x, xr, c, s, y, yr, r0, r1, D, backward);
}

bool rotary_cpu(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    return x.is_cpu() && x.dim() == 4 && cpu_kernel_dtype(x.scalar_type()) && cos.scalar_type() == x.scalar_type() &&
           sin.scalar_type() == x.scalar_type() && cos.dim() == 2 && sin.sizes() == cos.sizes() &&
           cos.size(0) == x.size(2) && cos.size(1) == x.size(3) && cos.is_contiguous() && sin.is_contiguous();
}

// x [B, H, T, D] through the row kernel into a tensor with x's layout (empty_like keeps a
// transposed view's strides, as libtorch's elementwise ops do, so later reshapes copy where
// they copied before).
at::Tensor rotary_cpu_apply(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, bool backward,
                            const at::Tensor& layout) {
    at::Tensor y = at::empty_like(layout);
    const std::int64_t D = x.size(3), rows = x.size(0) * x.size(1) * x.size(2);
    const Rows4 xr = rows4(x), yr = rows4(y);
    const bool strided = xr.sd != 1 || yr.sd != 1;
    at::parallel_for(0, rows, grain_rows(D), [&](std::int64_t r0, std::int64_t r1) {
        if (strided && x.scalar_type() == at::kFloat)
            rotary_rows_strided(x.data_ptr<float>(), xr, cos.data_ptr<float>(), sin.data_ptr<float>(), y.data_ptr<float>(),
                                yr, r0, r1, D, backward);
        else if (strided)
            rotary_rows_strided(bits(x), xr, bits(cos), bits(sin), bits(y), yr, r0, r1, D, backward);
        else if (x.scalar_type() == at::kFloat)
            rotary_f32(x.data_ptr<float>(), xr, cos.data_ptr<float>(), sin.data_ptr<float>(), y.data_ptr<float>(), yr, r0,
                       r1, D, backward);
        else
            rotary_bf16(bits(x), xr, bits(cos), bits(sin),
                        bits(y), yr, r0, r1, D, backward);
    });
    return y;
}

at::Tensor rotate_half(const at::Tensor& x) {
    const std::int64_t h = x.size(-1) / 2;
    return at::cat({-x.narrow(-1, h, h), x.narrow(-1, 0, h)}, -1);
}

struct RotaryFn : public torch::autograd::Function<RotaryFn> {
    static Variable forward(AutogradContext* ctx, const Variable& x, const Variable& cos, const Variable& sin,
                            bool aten) {
        WINGSPAN_PROFILE_SCOPE(profile::kRotary);
        const bool cpu = !aten && rotary_cpu(x, cos, sin);
        at::Tensor y;
        if (cpu) {
            y = rotary_cpu_apply(x, cos, sin, false, x);
        } else {
            const at::Tensor xf = x.to(at::kFloat);
            y = (xf * cos.to(at::kFloat) + rotate_half(xf) * sin.to(at::kFloat)).to(x.scalar_type());
        }
        ctx->save_for_backward({cos, sin});
        ctx->saved_data["aten"] = !cpu;
        return y;
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        WINGSPAN_PROFILE_SCOPE(profile::kRotaryBackward);
        auto s = ctx->get_saved_variables();
        const at::Tensor &cos = s[0], &sin = s[1];
        const at::Tensor& dy = grads[0];
        at::Tensor dx;
        if (!ctx->saved_data["aten"].toBool() && rotary_cpu(dy, cos, sin)) {
            dx = rotary_cpu_apply(dy, cos, sin, true, dy);
        } else {
            const at::Tensor d = dy.to(at::kFloat), ds = d * sin.to(at::kFloat);
            const std::int64_t h = d.size(-1) / 2;
            // The transpose of rotate_half: [v1, v2] -> [v2, -v1].
            const at::Tensor rt = at::cat({ds.narrow(-1, h, h), -ds.narrow(-1, 0, h)}, -1);
            dx = (d * cos.to(at::kFloat) + rt).to(dy.scalar_type());
        }
        return {dx, Variable(), Variable(), Variable()};
    }
};

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps, Path path) {
    return RmsNormFn::apply(x, w, eps, path == Path::Aten);
}

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up, Path path) {
    return SwiGluFn::apply(gate, up, path == Path::Aten);
}

at::Tensor rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, Path path) {
    return RotaryFn::apply(x, cos, sin, path == Path::Aten);
}

}  // namespace wingspan::train::fused
