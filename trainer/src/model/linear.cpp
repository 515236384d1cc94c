#include "model/linear.hpp"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "kernels/device_ops.hpp"
#include "kernels/kernels_nf4.hpp"
#include "memory/memory.hpp"
#include "memory/tensor_bytes.hpp"
#include "wingspan/nf4.hpp"

namespace wingspan::train {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

// ---------------------------------------------------------------------------------------
// NF4

namespace {

// Index of the nearest NF4 level to x (x in [-1, 1]).
inline std::uint8_t nf4_code(float x) {
    // Midpoints between consecutive levels.
    static const std::array<float, 15> mid = [] {
        std::array<float, 15> m{};
        for (int i = 0; i < 15; ++i) m[i] = 0.5f * (kNf4Levels[i] + kNf4Levels[i + 1]);
        return m;
    }();
    const auto it = std::upper_bound(mid.begin(), mid.end(), x);
    return static_cast<std::uint8_t>(it - mid.begin());
}

}  // namespace

std::int64_t Nf4Weight::data_bytes() const { return storage_bytes(codes); }
std::int64_t Nf4Weight::constant_bytes() const {
    return storage_bytes(block_codes) + storage_bytes(group_scales) + storage_bytes(mean);
}

Nf4Weight Nf4Weight::quantize(const at::Tensor& w_in) {
    Nf4Weight q;
    q.shape = w_in.sizes().vec();
    q.numel = w_in.numel();
    const QuantLayout layout = nf4_layout(q.numel, true);
    const std::int64_t n = q.numel, blocks = layout.blocks;
    const std::int64_t groups = (blocks + kDoubleQuantBlockSize - 1) / kDoubleQuantBlockSize;

    at::Tensor w = w_in.detach().to(at::kFloat).contiguous().view({-1});
    const float* wp = w.data_ptr<float>();

    std::vector<float> absmax(blocks);
    at::parallel_for(0, blocks, 64, [&](std::int64_t b0, std::int64_t b1) {
        for (std::int64_t b = b0; b < b1; ++b) {
            float m = 0;
            const std::int64_t e = std::min(n, (b + 1) * kNf4BlockSize);
            for (std::int64_t i = b * kNf4BlockSize; i < e; ++i) m = std::max(m, std::fabs(wp[i]));
            absmax[b] = m;
        }
    });
    double sum = 0;
    for (float a : absmax) sum += a;
    const float mean = blocks ? static_cast<float>(sum / blocks) : 0.f;

    {
        mem::Scope scope(Component::QuantConstants);
        q.block_codes = at::empty({blocks}, at::kByte);
        q.group_scales = at::empty({groups}, at::kFloat);
        q.mean = at::full({1}, mean, at::kFloat);
    }
    {
        mem::Scope scope(Component::FrozenWeights);
        q.codes = at::empty({layout.packed_bytes}, at::kByte);
    }
    auto* bc = q.block_codes.data_ptr<std::uint8_t>();
    auto* gs = q.group_scales.data_ptr<float>();
    std::vector<float> absmax_q(blocks);
    for (std::int64_t g = 0; g < groups; ++g) {
        const std::int64_t b0 = g * kDoubleQuantBlockSize, b1 = std::min(blocks, b0 + kDoubleQuantBlockSize);
        float s = 0;
        for (std::int64_t b = b0; b < b1; ++b) s = std::max(s, std::fabs(absmax[b] - mean));
        gs[g] = s;
        for (std::int64_t b = b0; b < b1; ++b) {
            int code = 128;
            if (s > 0) code = static_cast<int>(std::lround((absmax[b] - mean) / s * 127.0f)) + 128;
            code = std::clamp(code, 1, 255);
            bc[b] = static_cast<std::uint8_t>(code);
            absmax_q[b] = std::max(0.f, mean + static_cast<float>(code - 128) / 127.0f * s);
        }
    }
    auto* cp = q.codes.data_ptr<std::uint8_t>();
    at::parallel_for(0, blocks, 16, [&](std::int64_t b0, std::int64_t b1) {
        for (std::int64_t b = b0; b < b1; ++b) {
            const float inv = absmax_q[b] > 0 ? 1.0f / absmax_q[b] : 0.f;
            const std::int64_t e = std::min(n, (b + 1) * kNf4BlockSize);
            // Blocks hold an even number of elements, so a byte never straddles two blocks.
            for (std::int64_t i = b * kNf4BlockSize; i < e; i += 2) {
                const std::uint8_t hi = nf4_code(std::clamp(wp[i] * inv, -1.f, 1.f));
                const std::uint8_t lo = i + 1 < n ? nf4_code(std::clamp(wp[i + 1] * inv, -1.f, 1.f)) : 7;
                cp[i / 2] = static_cast<std::uint8_t>((hi << 4) | lo);
            }
        }
    });
    return q;
}

void Nf4Weight::to(const c10::Device& d) {
    if (codes.device() == d) return;
    {
        mem::Scope scope(Component::FrozenWeights);
        codes = codes.to(d);
    }
    mem::Scope scope(Component::QuantConstants);
    block_codes = block_codes.to(d);
    group_scales = group_scales.to(d);
    mean = mean.to(d);
}

at::Tensor Nf4Weight::absmax() const {
    if (!block_codes.is_cpu()) return ops::nf4_absmax(block_codes, group_scales, mean);
    const std::int64_t blocks = block_codes.numel();
    at::Tensor out = at::empty({blocks}, at::kFloat);
    const auto* bc = block_codes.data_ptr<std::uint8_t>();
    const auto* gs = group_scales.data_ptr<float>();
    const float m = mean.data_ptr<float>()[0];
    auto* o = out.data_ptr<float>();
    for (std::int64_t b = 0; b < blocks; ++b)
        o[b] = std::max(0.f, m + static_cast<float>(bc[b] - 128) / 127.0f * gs[b / kDoubleQuantBlockSize]);
    return out;
}

namespace {

template <typename T>
void dequant_kernel(const Nf4Weight& q, const float* absmax, T* out) {
    const std::int64_t n = q.numel;
    const auto* cp = q.codes.data_ptr<std::uint8_t>();
    const std::int64_t blocks = q.block_codes.numel();
    at::parallel_for(0, blocks, 64, [&](std::int64_t b0, std::int64_t b1) {
        float lut[16];
        for (std::int64_t b = b0; b < b1; ++b) {
            for (int k = 0; k < 16; ++k) lut[k] = kNf4Levels[k] * absmax[b];
            const std::int64_t e = std::min(n, (b + 1) * kNf4BlockSize);
            for (std::int64_t i = b * kNf4BlockSize; i < e; i += 2) {
                const std::uint8_t byte = cp[i / 2];
                out[i] = static_cast<T>(lut[byte >> 4]);
                if (i + 1 < n) out[i + 1] = static_cast<T>(lut[byte & 0xF]);
            }
        }
    });
}

}  // namespace

at::Tensor Nf4Weight::dequantize(at::ScalarType dtype) const {
    at::Tensor am = absmax();
    if (!codes.is_cpu()) return ops::nf4_dequantize(codes, am, numel, shape, dtype);
    at::Tensor out = at::empty(shape, dtype);
    if (dtype == at::kFloat)
        kernels::nf4_dequantize_f32(codes.data_ptr<std::uint8_t>(), am.data_ptr<float>(), numel, out.data_ptr<float>());
    else if (dtype == at::kBFloat16)
        kernels::nf4_dequantize_bf16(codes.data_ptr<std::uint8_t>(), am.data_ptr<float>(), numel,
                                     reinterpret_cast<std::uint16_t*>(out.data_ptr<c10::BFloat16>()));
    else if (dtype == at::kHalf)
        dequant_kernel<c10::Half>(*this, am.data_ptr<float>(), out.data_ptr<c10::Half>());
    else if (dtype == at::kDouble)   // for gradient checks
        dequant_kernel<double>(*this, am.data_ptr<float>(), out.data_ptr<double>());
    else
        throw std::runtime_error("nf4: unsupported dequantization dtype");
    return out;
}

namespace {

struct Nf4LinearFn : public torch::autograd::Function<Nf4LinearFn> {
    static Variable forward(AutogradContext* ctx, const Variable& x, const Nf4Weight* w, at::ScalarType compute) {
        ctx->saved_data["w"] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(w));
        ctx->saved_data["dtype"] = static_cast<std::int64_t>(compute);
        at::Tensor W = w->dequantize(compute);
        return ops::matmul(x, W.t());
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const auto* w = reinterpret_cast<const Nf4Weight*>(static_cast<std::intptr_t>(ctx->saved_data["w"].toInt()));
        const auto dtype = static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt());
        at::Tensor W = w->dequantize(dtype);
        return {ops::matmul(grads[0], W), Variable(), Variable()};
    }
};

// y = x W^T for a weight that trains. Same saved tensors as at::matmul (x and W), but the
// weight gradient is made inside the gradients component: autograd's own MmBackward would
// allocate it as working memory and the hook would move it only afterwards, so a measured
// activation peak could include a weight gradient.
struct TrainableLinearFn : public torch::autograd::Function<TrainableLinearFn> {
    static Variable forward(AutogradContext* ctx, const Variable& x, const Variable& weight) {
        ctx->save_for_backward({x, weight});
        return ops::matmul(x, weight.t());
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        auto s = ctx->get_saved_variables();
        const at::Tensor& x = s[0];
        const at::Tensor& w = s[1];
        const at::Tensor& g = grads[0];
        at::Tensor dx, dw;
        if (ctx->needs_input_grad(1)) {
            const at::Tensor g2 = g.reshape({-1, g.size(-1)}), x2 = x.reshape({-1, x.size(-1)});
            dw = weight_grad_mm(g2.t(), x2);
        }
        if (ctx->needs_input_grad(0)) dx = ops::matmul(g, w);
        return {dx, dw};
    }
};

// y = x Wᵀ + s · (x Aᵀ) Bᵀ for a frozen dense weight and an adapter without dropout, as one node.
// Saved tensors are the three products' (x, the scaled r-wide u = s · x Aᵀ, and the weights, which
// exist anyway). What it does not make: the adapter's output-sized product beside y in forward (u Bᵀ
// is added into y by the GEMM itself), and in backward the adapter's input gradient beside the frozen
// product's and their out-of-place sum (du A is added into g W by the GEMM): per adapted linear one
// output-sized tensor less in forward and two input-sized ones less in backward, and no add pass.
//   x [..., in], W [out, in], A [r, in], B [out, r];  u [..., r];  y, g [..., out]
// The node's forward: y and the scaled r-wide u. Also what the linear computes without autograd (a
// checkpointed layer's first forward, evaluation), so a recomputed layer gives the same bits.
struct LoraProduct {
    at::Tensor y, u;
};
LoraProduct lora_product(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& a, const at::Tensor& b,
                         double scaling) {
    LoraProduct p{ops::matmul(x, weight.t()), ops::matmul(x, a.t())};
    p.u.mul_(scaling);
    at::Tensor y2 = p.y.view({-1, p.y.size(-1)});
    ops::mm_out(y2, p.u.view({-1, p.u.size(-1)}), b.t(), /*accumulate=*/true);
    return p;
}

struct LoraLinearFn : public torch::autograd::Function<LoraLinearFn> {
    static Variable forward(AutogradContext* ctx, const Variable& x, const Variable& weight, const Variable& a,
                            const Variable& b, double scaling) {
        auto [y, u] = lora_product(x, weight, a, b, scaling);
        ctx->save_for_backward({x, weight, a, b, u});
        ctx->saved_data["scaling"] = scaling;
        return y;
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        auto s = ctx->get_saved_variables();
        const at::Tensor &x = s[0], &w = s[1], &a = s[2], &b = s[3], &u = s[4];
        const at::Tensor g = grads[0].contiguous();
        const at::Tensor g2 = g.view({-1, g.size(-1)}), x2 = x.reshape({-1, x.size(-1)}), u2 = u.view({-1, u.size(-1)});
        // As the separate products' backward ran: B's (its input's and its own gradient), then A's.
        at::Tensor du = ops::matmul(g2, b);                   // [N, r]
        const at::Tensor db = ops::matmul(g2.t(), u2);        // [out, r]
        du.mul_(ctx->saved_data["scaling"].toDouble());
        const at::Tensor da = ops::matmul(du.t(), x2);        // [r, in]
        at::Tensor dx;
        if (ctx->needs_input_grad(0)) {
            dx = ops::matmul(g, w);                           // [..., in]
            at::Tensor dx2 = dx.view({-1, dx.size(-1)});
            ops::mm_out(dx2, du, a, /*accumulate=*/true);
        }
        return {dx, Variable(), da, db, Variable()};
    }
};

}  // namespace

// a @ b into a new tensor of the gradients component; a 16-bit matmul's own packing buffers
// stay working memory.
HeadGrads head_backward(const at::Tensor& dl, const at::Tensor& hidden, const at::Tensor& weight, bool want_hidden,
                        bool want_weight, at::Tensor* tied) {
    HeadGrads g;
    if (want_hidden) {
        mem::Scope act(Component::Activations);
        g.hidden = ops::matmul(dl, weight);
    }
    if (want_weight) {
        g.weight = weight_grad_mm(dl.t(), hidden);
        if (tied) {
            *tied = g.weight;
            g.weight = at::Tensor();
        }
    }
    return g;
}

at::Tensor weight_grad_mm(const at::Tensor& a, const at::Tensor& b) {
    at::Tensor out;
    {
        mem::Scope scope(Component::Gradients);
        out = at::empty({a.size(0), b.size(1)}, a.options());
    }
    ops::mm_out(out, a, b);
    return out;
}

at::Tensor nf4_linear(const at::Tensor& x, const Nf4Weight& w, at::ScalarType compute) {
    return Nf4LinearFn::apply(x, &w, compute);
}

// ---------------------------------------------------------------------------------------
// Layers

at::Tensor Linear::forward(const at::Tensor& x) const {
    // A frozen dense weight with an adapter and no dropout: one node (LoraLinearFn), or its product
    // without autograd.
    if (has_lora() && adapter_on && lora_dropout == 0 && !qweight.defined() && !bias.defined() && !weight.requires_grad() &&
        x.is_contiguous())
        return at::GradMode::is_enabled() ? LoraLinearFn::apply(x, weight, lora_a, lora_b, lora_scaling)
                                          : lora_product(x, weight, lora_a, lora_b, lora_scaling).y;
    at::Tensor y;
    if (qweight.defined())
        y = nf4_linear(x, qweight, compute);
    else if (weight.requires_grad() && at::GradMode::is_enabled())
        y = TrainableLinearFn::apply(x, weight);
    else
        y = ops::matmul(x, weight.t());
    if (bias.defined()) y = y + bias;
    if (has_lora() && adapter_on) {
        at::Tensor h = lora_dropout > 0 ? ops::dropout(x, lora_dropout, at::GradMode::is_enabled()) : x;
        // The scaling on the r-wide product (in place: no node saved it), not on the output: the
        // sum's backward then hands the output's gradient to the adapter as it is, where
        // y.add_(h, scaling) multiplied an output-sized copy of it per adapted linear (AddBackward0's
        // mul: 0.042 s of a 2.61 s 135M-class bf16 LoRA step under the profiler). Saved tensors are
        // unchanged: the scaled r-wide product is what B's product keeps, as it kept the unscaled.
        at::Tensor u = ops::matmul(h, lora_a.t());   // [..., r]
        u.mul_(lora_scaling);
        h = ops::matmul(u, lora_b.t());
        // Into the fresh product in place (no node saved it): forward makes no third output-sized
        // sum per adapted linear, which was the forward's peak in a 1-layer LoRA run.
        y.add_(h);
    }
    return y;
}

}  // namespace wingspan::train
