#include "kernels/device_ops.hpp"

#include <torch/csrc/autograd/custom_function.h>

#include <mutex>
#include <optional>

#include "kernels/kernels_gemm.hpp"
#include "support/torch_version.hpp"
#include "wingspan/nf4.hpp"

namespace wingspan::train::ops {

namespace {

bool emulated(const at::Tensor& t) { return t.scalar_type() == at::kHalf && t.is_cpu() && !cpu_half_kernels(); }

}  // namespace

bool cpu_half_kernels() {
    static const bool ok = [] {
        try {
            at::Tensor a = at::ones({2, 2}, at::kHalf);
            (void)at::mm(a, a);
            (void)at::softmax(a, -1);
            (void)at::silu(a);
            return true;
        } catch (const std::exception&) {
            return false;
        }
    }();
    return ok;
}

namespace {

// The causal band a batched product keeps to (kernels_band.hpp); none: the whole product.
struct BandUse {
    const kernels::Band* band = nullptr;
    kernels::BandedMatrix which = kernels::BandedMatrix::Out;
};

// a [..., M, K] @ b [K, N], or a [*, M, K] @ b [*, K, N] with equal batch dimensions (over `use`'s
// band when it has one), through kernels::mm_out / bmm_out; undefined when the kernels do not
// take these operands. Allocates only the output, as at::matmul's mm does.
at::Tensor fast_matmul(const at::Tensor& a, const at::Tensor& b, BandUse use = {}) {
    if (a.dim() < 2 || b.dim() < 2 || !kernels::fast_gemm_available()) return {};
    const std::int64_t K = a.size(-1), N = b.size(-1);
    if (b.size(-2) != K) return {};
    auto out_shape = a.sizes().vec();
    out_shape.back() = N;
    if (b.dim() == 2 && (a.dim() == 2 || a.is_contiguous())) {
        const at::Tensor a2 = a.dim() == 2 ? a : a.view({-1, K});
        at::Tensor out = at::empty(out_shape, a.options());
        at::Tensor out2 = out.view({a2.size(0), N});
        if (!kernels::handles(out2, a2, b)) return {};
        kernels::mm_out(out2, a2, b);
        return out;
    }
    // Batched: each [M, K] slice where it lies, whatever the strides of the leading dimensions, so
    // attention's K and V, views of their projections, are not copied (at::matmul copies a view it
    // cannot flatten, then saves the copy for backward). A strided a with a 2-D b (v_proj's input
    // gradient, [B, T, n] stored as [B, n, T]) shares b across the slices (stride 0) instead of
    // going through at::matmul's bmm.
    at::Tensor bb = b;
    if (b.dim() == 2) {
        auto b_shape = a.sizes().vec();
        b_shape[b_shape.size() - 2] = K;
        b_shape.back() = N;
        bb = b.expand(b_shape);
    }
    if (a.dim() != bb.dim()) return {};
    at::Tensor out = at::empty(out_shape, a.options());
    if (!kernels::handles_batched(out, a, bb)) return {};
    if (use.band) kernels::banded_bmm_out(out, a, bb, *use.band, use.which);
    else kernels::bmm_out(out, a, bb);
    return out;
}

// a @ b with autograd, both products of the backward through fast_matmul too. What it saves is
// what at::matmul's graph saves on the runtime the planner's libtorch-cpu rows describe: a linear
// (b 2-D) keeps both operands, a frozen weight's input too; a batched product (attention) keeps
// only what the other operand's gradient needs, as bmm does — layer 0's queries are not kept when
// its keys, from frozen embeddings through a frozen projection, want no gradient.
// Over a band, every product is banded, with the same outputs in the same order: scores s = q kᵀ
// (Out): dq = ds k (Left), dkᵀ = qᵀ ds (Right); output o = p v (Left): dp = do vᵀ (Out),
// dv = pᵀ do (LeftT). The band is kept as ints (no tensor bytes).
struct FastMatmulFn : public torch::autograd::Function<FastMatmulFn> {
    static torch::autograd::Variable forward(torch::autograd::AutogradContext* ctx, const torch::autograd::Variable& a,
                                             const torch::autograd::Variable& b, BandUse use) {
        const bool linear = b.dim() == 2;
        ctx->save_for_backward({linear || b.requires_grad() ? a : at::Tensor(), linear || a.requires_grad() ? b : at::Tensor()});
        if (use.band) {
            ctx->saved_data["band"] = std::vector<std::int64_t>{use.band->T, use.band->keys, use.band->chunk};
            ctx->saved_data["limit"] = use.band->limit;
            ctx->saved_data["scores"] = use.which == kernels::BandedMatrix::Out;
        }
        at::Tensor out = fast_matmul(a, b, use);
        return out.defined() ? out : at::matmul(a, b);
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        using kernels::BandedMatrix;
        auto s = ctx->get_saved_variables();
        const at::Tensor &a = s[0], &b = s[1];
        const at::Tensor g = grads[0].contiguous();
        std::optional<kernels::Band> band;
        bool scores = false;
        if (ctx->saved_data.count("band")) {
            const auto dims = ctx->saved_data["band"].toIntVector();
            band = kernels::Band{dims[0], dims[1], dims[2], ctx->saved_data["limit"].toIntVector()};
            scores = ctx->saved_data["scores"].toBool();
        }
        // A banded product falls back to the whole one where the kernels decline (the banded
        // inputs are zero off the band, and a whole output is whole).
        const auto product = [&](const at::Tensor& x, const at::Tensor& y, BandedMatrix which) {
            if (!band) return ops::matmul(x, y);
            at::Tensor r = fast_matmul(x, y, {&*band, which});
            return r.defined() ? r : at::matmul(x, y);
        };
        at::Tensor da, db;
        if (ctx->needs_input_grad(0)) da = product(g, b.transpose(-1, -2), scores ? BandedMatrix::Left : BandedMatrix::Out);
        if (ctx->needs_input_grad(1)) {
            if (b.defined() && b.dim() == 2) {   // a linear: b is always kept
                const std::int64_t K = a.size(-1), N = g.size(-1);
                // A transposed b (a weight's .t()) gets a gradient with its strides, as libtorch's
                // mm backward makes it: then the weight's own gradient is contiguous and autograd
                // keeps it without a copy (the measured gradient bytes stay the predicted ones).
                const bool b_transposed = b.stride(0) == 1 && b.stride(1) != 1;
                db = b_transposed ? ops::matmul(g.view({-1, N}).t(), a.reshape({-1, K})).t()
                                  : ops::matmul(a.reshape({-1, K}).t(), g.view({-1, N}));
            } else {
                db = product(a.transpose(-1, -2), g, scores ? BandedMatrix::Right : BandedMatrix::LeftT);
            }
        }
        return {da, db, torch::autograd::Variable()};
    }
};

bool fast_candidate(const at::Tensor& a, const at::Tensor& b) {
    if (!a.is_cpu() || !b.is_cpu() || a.scalar_type() != b.scalar_type()) return false;
    const auto dt = a.scalar_type();
    return dt == at::kFloat || dt == at::kBFloat16;
}

}  // namespace

at::Tensor matmul(const at::Tensor& a, const at::Tensor& b) {
    if (emulated(a) || emulated(b)) return at::matmul(a.to(at::kFloat), b.to(at::kFloat)).to(at::kHalf);
    if (fast_candidate(a, b)) {
        const bool grad = at::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad());
        if (!grad) {
            at::Tensor out = fast_matmul(a, b);
            if (out.defined()) return out;
        } else {
            // The shapes fast_matmul takes; should it still decline (an unusual stride), the
            // node's forward falls back to at::matmul and its backward stays correct.
            const bool two_d = b.dim() == 2 && a.dim() >= 2 && (a.dim() == 2 || a.is_contiguous());
            const bool batched = b.dim() > 2 && a.dim() == b.dim();
            if ((two_d || batched) && kernels::fast_gemm_available()) return FastMatmulFn::apply(a, b, BandUse{});
        }
    }
    return at::matmul(a, b);
}

at::Tensor banded_matmul(const at::Tensor& a, const at::Tensor& b, const kernels::Band* band, kernels::BandedMatrix which) {
    if (!band || a.dim() != b.dim() || !fast_candidate(a, b) || !kernels::fast_gemm_available()) return ops::matmul(a, b);
    const bool grad = at::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad());
    if (grad) return FastMatmulFn::apply(a, b, BandUse{band, which});
    at::Tensor out = fast_matmul(a, b, {band, which});
    return out.defined() ? out : ops::matmul(a, b);
}

void mm_out(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, bool accumulate) {
    if (!emulated(out)) {
        if (kernels::handles(out, a, b)) kernels::mm_out(out, a, b, accumulate);
        else if (accumulate) out.addmm_(a, b);
        else at::mm_out(out, a, b);
        return;
    }
    const at::Tensor p = at::mm(a.to(at::kFloat), b.to(at::kFloat));
    if (accumulate) out.copy_(out.to(at::kFloat).add_(p));
    else out.copy_(p);
}

at::Tensor softmax(const at::Tensor& x, std::int64_t dim) {
    return emulated(x) ? at::softmax(x.to(at::kFloat), dim).to(at::kHalf) : at::softmax(x, dim);
}

at::Tensor silu(const at::Tensor& x) { return emulated(x) ? at::silu(x.to(at::kFloat)).to(at::kHalf) : at::silu(x); }

at::Tensor dropout(const at::Tensor& x, double p, bool train) {
    return emulated(x) ? at::dropout(x.to(at::kFloat), p, train).to(at::kHalf) : at::dropout(x, p, train);
}

namespace {
at::Tensor sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if WINGSPAN_TORCH_AT_LEAST(2, 0)   // public from 2.0, returning the output only
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
#else
    return std::get<0>(at::_scaled_dot_product_attention(q, k, v, {}, 0.0, false, /*is_causal=*/true));
#endif
}
}  // namespace

at::Tensor causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    if (emulated(q)) return sdpa(q.to(at::kFloat), k.to(at::kFloat), v.to(at::kFloat)).to(at::kHalf);
    return sdpa(q, k, v);
}

at::Tensor nf4_absmax(const at::Tensor& block_codes, const at::Tensor& group_scales, const at::Tensor& mean) {
    const std::int64_t blocks = block_codes.numel();
    // Same float operations as the CPU kernel, in its order: mean + (code - 128) / 127 * scale.
    // The divisor is a tensor: a scalar divisor becomes a reciprocal multiply on some devices.
    const at::Tensor scale = group_scales.repeat_interleave(kDoubleQuantBlockSize).narrow(0, 0, blocks);
    const at::Tensor divisor = at::full({1}, 127.0f, group_scales.options());
    return ((block_codes.to(at::kFloat) - 128).div(divisor) * scale + mean).clamp_min(0);
}

at::Tensor nf4_dequantize(const at::Tensor& codes, const at::Tensor& absmax, std::int64_t numel,
                          const std::vector<std::int64_t>& shape, at::ScalarType dtype) {
    const at::Tensor levels =
        at::tensor(std::vector<float>(kNf4Levels.begin(), kNf4Levels.end()), at::kFloat).to(codes.device());
    // Two 4-bit codes per byte, the first element in the high nibble.
    at::Tensor index = at::stack({at::bitwise_right_shift(codes, 4), at::bitwise_and(codes, 15)}, 1)
                           .view({-1})
                           .narrow(0, 0, numel)
                           .to(at::kLong);
    at::Tensor values = levels.index_select(0, index);
    index.reset();
    const at::Tensor per_element = absmax.repeat_interleave(kNf4BlockSize).narrow(0, 0, numel);
    return values.mul_(per_element).to(dtype).view(shape);
}

void adamw(at::Tensor& param, at::Tensor& master, const at::Tensor& grad, at::Tensor& m, at::Tensor& v, float lr,
           float b1, float b2, float eps, float wd, float bc1, float bc2_sqrt, float gscale) {
    // One fp32 temporary the size of the tensor: the scaled gradient, then the denominator.
    at::Tensor g = grad.to(at::kFloat) * gscale;
    m.mul_(b1).add_(g, 1 - b1);
    v.mul_(b2).addcmul_(g, g, 1 - b2);
    at::Tensor& denom = g;
    at::sqrt_out(denom, v).div_(bc2_sqrt).add_(eps);
    at::Tensor w = master.defined() ? master : param.to(at::kFloat);
    w.mul_(1 - lr * wd);
    w.addcdiv_(m.to(at::kFloat), denom, -(lr / bc1));
    if (!w.is_same(param)) param.copy_(w);
}

at::Tensor sumsq(const at::Tensor& grad) {
    const at::Tensor g = grad.to(at::kFloat);
    return (g * g).sum();
}

}  // namespace wingspan::train::ops
