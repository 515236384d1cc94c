#include "device_ops.hpp"

#include <mutex>

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

at::Tensor matmul(const at::Tensor& a, const at::Tensor& b) {
    if (!emulated(a) && !emulated(b)) return at::matmul(a, b);
    return at::matmul(a.to(at::kFloat), b.to(at::kFloat)).to(at::kHalf);
}

void mm_out(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
    if (!emulated(out)) {
        at::mm_out(out, a, b);
        return;
    }
    out.copy_(at::mm(a.to(at::kFloat), b.to(at::kFloat)));
}

at::Tensor softmax(const at::Tensor& x, std::int64_t dim) {
    return emulated(x) ? at::softmax(x.to(at::kFloat), dim).to(at::kHalf) : at::softmax(x, dim);
}

at::Tensor silu(const at::Tensor& x) { return emulated(x) ? at::silu(x.to(at::kFloat)).to(at::kHalf) : at::silu(x); }

at::Tensor dropout(const at::Tensor& x, double p, bool train) {
    return emulated(x) ? at::dropout(x.to(at::kFloat), p, train).to(at::kHalf) : at::dropout(x, p, train);
}

at::Tensor causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    if (emulated(q))
        return std::get<0>(at::_scaled_dot_product_attention(q.to(at::kFloat), k.to(at::kFloat), v.to(at::kFloat), {},
                                                             0.0, false, true))
            .to(at::kHalf);
    return std::get<0>(at::_scaled_dot_product_attention(q, k, v, {}, 0.0, false, true));
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
