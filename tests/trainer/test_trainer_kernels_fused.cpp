// Fused RMSNorm, SwiGLU and rotary (trainer/src/kernels/kernels_fused.cpp), attention's masked
// softmax (kernels_softmax.cpp) and the loss's CPU rows (kernels_loss.cpp) against the plain libtorch
// composition evaluated in double: forward and backward, fp32 to ~1e-6 relative and bf16 to its
// rounding; the CPU kernels and the tensor-op path (GPUs') agree; odd widths (not a multiple of
// 16), one token, Phi-3's narrowed gate/up and the transposed q/k views the decoder passes; and
// the bytes each op keeps for backward (the counting allocator), which core's memory model
// counts (profile libtorch-*.json, section "kernels").
#include <QtTest>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <limits>

#include "kernels/kernels_fused.hpp"
#include "kernels/kernels_loss.hpp"
#include "kernels/kernels_softmax.hpp"
#include "memory/memory.hpp"

using namespace wingspan;
using namespace wingspan::train;

namespace {

constexpr double kEps = 1e-5;

at::Tensor rms_norm_reference(const at::Tensor& x, const at::Tensor& w) {
    return x * at::rsqrt(x.pow(2).mean(-1, true) + kEps) * w;
}

at::Tensor rotate_half(const at::Tensor& x) {
    const std::int64_t h = x.size(-1) / 2;
    return at::cat({-x.narrow(-1, h, h), x.narrow(-1, 0, h)}, -1);
}

// Largest |a − b| relative to the largest |b| (a, b any float dtype).
double rel_error(const at::Tensor& a, const at::Tensor& b) {
    const at::Tensor ad = a.to(at::kDouble), bd = b.to(at::kDouble);
    const double scale = std::max(bd.abs().max().item<double>(), 1e-30);
    return (ad - bd).abs().max().item<double>() / scale;
}

// Every element within `ulps` bf16 units of the reference's (8 bits of mantissa: 2^-8 relative
// per ulp), allowing for a double reference that rounds the other way at a tie.
bool within_bf16(const at::Tensor& got, const at::Tensor& ref_double, double ulps = 1.0) {
    const at::Tensor g = got.to(at::kDouble), r = ref_double.to(at::kDouble);
    const at::Tensor tol = r.abs() * (ulps * std::ldexp(1.0, -8)) + 1e-30;
    const at::Tensor bad = (g - r).abs() > tol;
    if (bad.any().item<bool>()) {
        const auto i = bad.reshape({-1}).nonzero()[0].item<std::int64_t>();
        qWarning("element %lld: %.9g vs reference %.9g", static_cast<long long>(i),
                 g.reshape({-1})[i].item<double>(), r.reshape({-1})[i].item<double>());
        return false;
    }
    return true;
}

// Gradients of sum(out · dy) with respect to `inputs`.
std::vector<at::Tensor> grads_of(const at::Tensor& out, const at::Tensor& dy, const std::vector<at::Tensor>& inputs) {
    return torch::autograd::grad({out}, inputs, {dy.to(out.scalar_type())}, /*retain_graph=*/false,
                                 /*create_graph=*/false, /*allow_unused=*/true);
}

}  // namespace

class FusedKernelsTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        mem::install();
        at::manual_seed(5);
    }

    void rms_norm_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("hidden");
        QTest::newRow("one token, hidden 37") << 1 << 37;
        QTest::newRow("35 tokens, hidden 37") << 35 << 37;
        QTest::newRow("70 tokens, hidden 576") << 70 << 576;
        QTest::newRow("3 tokens, hidden 7") << 3 << 7;
    }

    void rms_norm() {
        QFETCH(int, rows);
        QFETCH(int, hidden);
        const at::Tensor x64 = at::randn({1, rows, hidden}, at::kDouble) * 3;
        const at::Tensor w64 = at::rand({hidden}, at::kDouble) + 0.5;
        const at::Tensor dy64 = at::randn({1, rows, hidden}, at::kDouble);
        for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
            // The reference sees exactly the values the fused op sees.
            const at::Tensor xv = x64.to(dt), wv = w64.to(dt), dyv = dy64.to(dt);
            at::Tensor xr = xv.to(at::kDouble).requires_grad_(true), wr = wv.to(at::kDouble).requires_grad_(true);
            const at::Tensor yr = rms_norm_reference(xr, wr);
            const auto gr = grads_of(yr, dyv.to(at::kDouble), {xr, wr});
            for (fused::Path path : {fused::Path::Auto, fused::Path::Aten}) {
                at::Tensor x = xv.clone().requires_grad_(true), w = wv.clone().requires_grad_(true);
                const at::Tensor y = fused::rms_norm(x, w, kEps, path);
                QCOMPARE(y.scalar_type(), dt);
                const auto g = grads_of(y, dyv, {x, w});
                QCOMPARE(g[0].scalar_type(), dt);
                QCOMPARE(g[1].scalar_type(), dt);
                if (dt == at::kFloat) {
                    QVERIFY2(rel_error(y, yr) < 2e-6, qPrintable(QString::number(rel_error(y, yr))));
                    QVERIFY2(rel_error(g[0], gr[0]) < 2e-6, qPrintable(QString::number(rel_error(g[0], gr[0]))));
                    QVERIFY2(rel_error(g[1], gr[1]) < 2e-6, qPrintable(QString::number(rel_error(g[1], gr[1]))));
                } else {
                    // One rounding of the fp32 result: within one bf16 unit of the exact value.
                    QVERIFY(within_bf16(y, yr));
                    // Backward sums over a row (dx) or over tokens (dw) in fp32 before rounding once;
                    // cancellation in dx makes small elements relative to the row's scale.
                    QVERIFY2(rel_error(g[0], gr[0]) < 8e-3, qPrintable(QString::number(rel_error(g[0], gr[0]))));
                    QVERIFY2(rel_error(g[1], gr[1]) < 8e-3, qPrintable(QString::number(rel_error(g[1], gr[1]))));
                }
            }
        }
    }

    // A frozen weight (LoRA) gets no gradient; the input's still flows.
    void rms_norm_frozen_weight() {
        at::Tensor x = at::randn({4, 19}).requires_grad_(true);
        const at::Tensor w = at::rand({19}) + 0.5;
        const at::Tensor y = fused::rms_norm(x, w, kEps);
        const auto g = grads_of(y, at::ones_like(y), {x});
        QVERIFY(g[0].defined());
        // Σ_j ∂y_j/∂x_k with w ≡ const has a closed form; check against autograd of the reference.
        at::Tensor xr = x.detach().to(at::kDouble).requires_grad_(true);
        const auto gr = grads_of(rms_norm_reference(xr, w.to(at::kDouble)), at::ones({4, 19}, at::kDouble), {xr});
        QVERIFY(rel_error(g[0], gr[0]) < 2e-6);
    }

    void swiglu_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("inner");
        QTest::addColumn<bool>("narrowed");
        QTest::newRow("one token, inner 37") << 1 << 37 << false;
        QTest::newRow("9 tokens, inner 1536") << 9 << 1536 << false;
        QTest::newRow("Phi-3 gate_up halves, inner 21") << 6 << 21 << true;
    }

    void swiglu() {
        QFETCH(int, rows);
        QFETCH(int, inner);
        QFETCH(bool, narrowed);
        // Gate values from deep in both tails (exp under- and overflow ranges) to the middle.
        at::Tensor g64 = at::randn({2, rows, inner}, at::kDouble) * 4;
        g64.select(2, 0).fill_(-95.0);
        g64.select(2, inner - 1).fill_(95.0);
        const at::Tensor u64 = at::randn({2, rows, inner}, at::kDouble);
        const at::Tensor dm64 = at::randn({2, rows, inner}, at::kDouble);
        for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
            const at::Tensor gv = g64.to(dt), uv = u64.to(dt), dmv = dm64.to(dt);
            at::Tensor gr = gv.to(at::kDouble).requires_grad_(true), ur = uv.to(at::kDouble).requires_grad_(true);
            const at::Tensor mr = at::silu(gr) * ur;
            const auto ref = grads_of(mr, dmv.to(at::kDouble), {gr, ur});
            for (fused::Path path : {fused::Path::Auto, fused::Path::Aten}) {
                at::Tensor g, u, leaf;
                if (narrowed) {   // both halves of one [.., 2·inner] tensor, as Phi-3's gate_up_proj
                    leaf = at::cat({gv, uv}, -1).requires_grad_(true);
                    g = leaf.narrow(-1, 0, inner);
                    u = leaf.narrow(-1, inner, inner);
                } else {
                    g = gv.clone().requires_grad_(true);
                    u = uv.clone().requires_grad_(true);
                }
                const at::Tensor m = fused::swiglu(g, u, path);
                QCOMPARE(m.scalar_type(), dt);
                at::Tensor dg, du;
                if (narrowed) {
                    const at::Tensor d = grads_of(m, dmv, {leaf})[0];
                    dg = d.narrow(-1, 0, inner);
                    du = d.narrow(-1, inner, inner);
                } else {
                    const auto d = grads_of(m, dmv, {g, u});
                    dg = d[0];
                    du = d[1];
                }
                if (dt == at::kFloat) {
                    QVERIFY2(rel_error(m, mr) < 2e-6, qPrintable(QString::number(rel_error(m, mr))));
                    QVERIFY2(rel_error(dg, ref[0]) < 2e-6, qPrintable(QString::number(rel_error(dg, ref[0]))));
                    QVERIFY2(rel_error(du, ref[1]) < 2e-6, qPrintable(QString::number(rel_error(du, ref[1]))));
                } else {
                    QVERIFY(within_bf16(m, mr));
                    QVERIFY(within_bf16(du, ref[1]));
                    QVERIFY(within_bf16(dg, ref[0]));
                }
            }
        }
    }

    void rotary_data() {
        QTest::addColumn<int>("tokens");
        QTest::addColumn<int>("head_dim");
        QTest::newRow("one token, head_dim 18") << 1 << 18;
        QTest::newRow("13 tokens, head_dim 64") << 13 << 64;
    }

    void rotary() {
        QFETCH(int, tokens);
        QFETCH(int, head_dim);
        const std::int64_t B = 2, H = 3, T = tokens, D = head_dim;
        const at::Tensor angles = at::arange(T, at::kDouble).unsqueeze(1) * at::rand({D / 2}, at::kDouble).unsqueeze(0);
        const at::Tensor full = at::cat({angles, angles}, -1);
        // The decoder's q: a linear's [B, T, H·D] output viewed as [B, H, T, D] (transposed).
        const at::Tensor x64 = at::randn({B, T, H * D}, at::kDouble);
        const at::Tensor dy64 = at::randn({B, H, T, D}, at::kDouble);
        for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
            const at::Tensor cos = full.cos().to(dt), sin = full.sin().to(dt);
            const at::Tensor xv = x64.to(dt), dyv = dy64.to(dt);
            at::Tensor xr = xv.to(at::kDouble).requires_grad_(true);
            const at::Tensor qr = xr.view({B, T, H, D}).transpose(1, 2);
            const at::Tensor yr = qr * cos.to(at::kDouble) + rotate_half(qr) * sin.to(at::kDouble);
            const at::Tensor gr = grads_of(yr, dyv.to(at::kDouble), {xr})[0];
            for (fused::Path path : {fused::Path::Auto, fused::Path::Aten}) {
                at::Tensor x = xv.clone().requires_grad_(true);
                const at::Tensor q = x.view({B, T, H, D}).transpose(1, 2);
                const at::Tensor y = fused::rotary(q, cos, sin, path);
                QCOMPARE(y.sizes(), q.sizes());
                const at::Tensor g = grads_of(y, dyv, {x})[0];
                if (dt == at::kFloat) {
                    QVERIFY2(rel_error(y, yr) < 2e-6, qPrintable(QString::number(rel_error(y, yr))));
                    QVERIFY2(rel_error(g, gr) < 2e-6, qPrintable(QString::number(rel_error(g, gr))));
                } else {
                    // Two products and a sum in fp32, rounded once.
                    QVERIFY2(rel_error(y, yr) < 8e-3, qPrintable(QString::number(rel_error(y, yr))));
                    QVERIFY2(rel_error(g, gr) < 8e-3, qPrintable(QString::number(rel_error(g, gr))));
                }
                if (path == fused::Path::Auto) {
                    // The output keeps the input's layout, as libtorch's elementwise ops do.
                    QCOMPARE(y.strides(), q.strides());
                }
            }
        }
    }

    // The key's gradient reaches the rotary as the transpose of the scores product's (last stride
    // T, not 1): the strided rows give what the contiguous rows give, in the gradient's layout.
    void rotary_strided() {
        const std::int64_t B = 2, H = 3, T = 7, D = 8;
        const at::Tensor angles = at::arange(T, at::kDouble).unsqueeze(1) * at::rand({D / 2}, at::kDouble).unsqueeze(0);
        const at::Tensor full = at::cat({angles, angles}, -1);
        for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
            const at::Tensor cos = full.cos().to(dt), sin = full.sin().to(dt);
            const at::Tensor xt = at::randn({B, H, D, T}).to(dt);
            const at::Tensor x = xt.transpose(-1, -2);   // [B, H, T, D], stride(-1) = T
            QVERIFY(x.stride(-1) != 1);
            const at::Tensor y = fused::rotary(x, cos, sin), ref = fused::rotary(x.contiguous(), cos, sin);
            QCOMPARE(y.strides(), x.strides());
            QVERIFY(at::equal(y.contiguous(), ref));
            at::Tensor xs = x.detach().requires_grad_(true), xc = x.contiguous().requires_grad_(true);
            const at::Tensor dy = at::randn({B, H, D, T}).to(dt).transpose(-1, -2);
            const at::Tensor gs = grads_of(fused::rotary(xs, cos, sin), dy, {xs})[0];
            const at::Tensor gc = grads_of(fused::rotary(xc, cos, sin), dy.contiguous(), {xc})[0];
            QVERIFY(at::equal(gs.contiguous(), gc.contiguous()));
        }
    }

    void masked_softmax_data() {
        QTest::addColumn<int>("groups");
        QTest::addColumn<int>("window");
        QTest::addColumn<int>("keys");
        QTest::newRow("causal, one query head per key head") << 1 << 0 << 0;
        QTest::newRow("causal, 3 query heads per key head") << 3 << 0 << 0;
        QTest::newRow("sliding window of 4, 2 groups") << 2 << 4 << 0;
        QTest::newRow("rows wider than the stack row (5000 keys)") << 1 << 0 << 5000;
    }

    // softmax(scores + mask) and its gradient against double, both paths; masked positions are
    // exactly 0 and so are their gradients.
    void masked_softmax() {
        QFETCH(int, groups);
        QFETCH(int, window);
        QFETCH(int, keys);
        const std::int64_t B = 2, Hkv = 2, T = keys ? 3 : 11, Tk = keys ? keys : T, past = Tk - T;
        at::Tensor mask = at::full({T, Tk}, -std::numeric_limits<float>::infinity()).triu(past + 1);
        if (window > 0) mask = mask.masked_fill(at::arange(Tk).unsqueeze(0) <= at::arange(T).unsqueeze(1) + past - window,
                                                -std::numeric_limits<float>::infinity());
        const at::Tensor s64 = at::randn({B, Hkv, groups * T, Tk}, at::kDouble).mul_(3);
        const at::Tensor dp64 = at::randn({B, Hkv, groups * T, Tk}, at::kDouble);
        for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
            const at::Tensor sv = s64.to(dt);
            at::Tensor sr = sv.to(at::kDouble).requires_grad_(true);
            const at::Tensor pr = at::softmax(sr.view({B, Hkv, groups, T, Tk}) + mask.to(at::kDouble), -1)
                                      .view({B, Hkv, groups * T, Tk});
            const at::Tensor gr = grads_of(pr, dp64.to(dt).to(at::kDouble), {sr})[0];
            for (fused::Path path : {fused::Path::Auto, fused::Path::Aten}) {
                for (const at::Tensor& m : {mask, mask.to(dt)}) {
                    at::Tensor s = sv.clone().requires_grad_(true);
                    const at::Tensor p = fused::masked_softmax(s * 1, m, path);
                    const at::Tensor g = grads_of(p, dp64.to(dt), {s})[0];
                    const at::Tensor masked = m.to(at::kFloat).isinf().expand({B, Hkv, groups, T, Tk}).reshape(p.sizes());
                    QVERIFY(p.masked_select(masked).eq(0).all().item<bool>());
                    QVERIFY(g.masked_select(masked).eq(0).all().item<bool>());
                    const double tol = dt == at::kFloat ? 2e-6 : 8e-3;
                    QVERIFY2(rel_error(p, pr) < tol, qPrintable(QString::number(rel_error(p, pr))));
                    QVERIFY2(rel_error(g, gr) < 4 * tol, qPrintable(QString::number(rel_error(g, gr))));
                }
            }
        }
    }

    // A row masked everywhere is NaN, as libtorch's softmax makes it, not a made-up distribution.
    void masked_softmax_fully_masked_row() {
        at::Tensor mask = at::zeros({2, 5});
        mask[1].fill_(-std::numeric_limits<float>::infinity());
        const at::Tensor p = fused::masked_softmax(at::randn({1, 1, 2, 5}), mask);
        QVERIFY(p[0][0][0].isfinite().all().item<bool>());
        QVERIFY(p[0][0][1].isnan().all().item<bool>());
    }

    // The loss's CPU rows (fp32 and bf16 logits, odd vocabulary) against double: probabilities,
    // log-sum-exp and the logits' gradient (p − onehot) · scale in fp32 and rounded to bf16.
    void loss_rows() {
        const std::int64_t N = 5, V = 1037;
        const at::Tensor x64 = at::randn({N, V}, at::kDouble).mul_(4);
        const at::Tensor labels = at::tensor(std::vector<std::int64_t>{0, 1036, 17, 500, 3}, at::kLong).unsqueeze(1);
        const at::Tensor scale = at::rand({N}, at::kFloat);
        for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
            const at::Tensor x = x64.to(dt), xd = x.to(at::kDouble);
            const at::Tensor pr = at::softmax(xd, -1), lser = at::logsumexp(xd, -1);
            auto [probs, lse, picked] = kernels::cross_entropy_rows(x.clone(), labels);
            QCOMPARE(probs.scalar_type(), at::kFloat);
            QVERIFY2(rel_error(probs, pr) < 2e-6, qPrintable(QString::number(rel_error(probs, pr))));
            QVERIFY2(rel_error(lse, lser) < 1e-6, qPrintable(QString::number(rel_error(lse, lser))));
            QVERIFY(at::equal(picked, x.gather(1, labels).squeeze(1).to(at::kFloat)));
            const at::Tensor onehot = at::zeros({N, V}, at::kDouble).scatter_(1, labels, 1.0);
            const at::Tensor gr = (pr - onehot) * scale.to(at::kDouble).unsqueeze(1);
            at::Tensor d = probs;
            const at::Tensor g = kernels::logits_gradient(d, labels, scale, dt);
            QCOMPARE(g.scalar_type(), dt);
            if (dt == at::kFloat)
                QVERIFY2(rel_error(g, gr) < 4e-6, qPrintable(QString::number(rel_error(g, gr))));
            else
                QVERIFY(within_bf16(g, gr.to(at::kFloat).to(at::kDouble), 1.0));
        }
    }

    // A label outside the vocabulary is refused, not written past the row.
    void loss_rows_refuse_a_label_outside_the_vocabulary() {
        at::Tensor probs = at::softmax(at::randn({2, 10}), -1);
        const at::Tensor labels = at::tensor(std::vector<std::int64_t>{3, 10}, at::kLong).unsqueeze(1);
        bool threw = false;
        try {
            kernels::logits_gradient(probs, labels, at::ones({2}), at::kBFloat16);
        } catch (const std::exception&) {
            threw = true;
        }
        QVERIFY(threw);
    }

    // What each op keeps alive for backward beyond its output, and what its backward allocates
    // (CPU kernels, bf16): the bytes core's memory model counts for the libtorch profiles.
    void saved_bytes() {
        const std::int64_t N = 24, Hd = 37, I = 53;
        {
            at::Tensor x = at::randn({1, N, Hd}).to(at::kBFloat16).requires_grad_(true);
            at::Tensor w = at::ones({Hd}, at::kBFloat16).requires_grad_(true);
            const std::int64_t before = mem::allocated();
            at::Tensor y = fused::rms_norm(x, w, kEps);
            // The output and one fp32 rstd per token: no fp32 copy of x, no x², no normalized copy.
            QCOMPARE(mem::allocated() - before, N * Hd * 2 + N * 4);
            const at::Tensor dy = at::ones_like(y);
            const std::int64_t base = mem::allocated();
            mem::reset_peak();
            auto g = grads_of(y, dy, {x, w});
            y.reset();
            // Backward makes the input's gradient (bf16) and the weight's, nothing else.
            QCOMPARE(mem::peak() - base, N * Hd * 2 + Hd * 2);
        }
        {
            at::Tensor g = at::randn({N, I}).to(at::kBFloat16).requires_grad_(true);
            at::Tensor u = at::randn({N, I}).to(at::kBFloat16).requires_grad_(true);
            const std::int64_t before = mem::allocated();
            mem::reset_peak();
            at::Tensor m = fused::swiglu(g, u);
            // Gate and up are kept (they exist already); the only new bytes are the product.
            QCOMPARE(mem::allocated() - before, N * I * 2);
            QCOMPARE(mem::peak() - before, N * I * 2);
            const at::Tensor dm = at::ones_like(m);
            const std::int64_t base = mem::allocated();
            mem::reset_peak();
            auto d = grads_of(m, dm, {g, u});
            QCOMPARE(mem::peak() - base, 2 * N * I * 2);
        }
        {
            const std::int64_t B = 1, H = 2, T = 5, D = 10;
            const at::Tensor cos = at::rand({T, D}).to(at::kBFloat16), sin = at::rand({T, D}).to(at::kBFloat16);
            at::Tensor x = at::randn({B, T, H * D}).to(at::kBFloat16).requires_grad_(true);
            const at::Tensor q = x.view({B, T, H, D}).transpose(1, 2);
            const std::int64_t before = mem::allocated();
            mem::reset_peak();
            at::Tensor y = fused::rotary(q, cos, sin);
            QCOMPARE(mem::allocated() - before, B * H * T * D * 2);
            QCOMPARE(mem::peak() - before, B * H * T * D * 2);
        }
    }
};

QTEST_GUILESS_MAIN(FusedKernelsTest)
#include "test_trainer_kernels_fused.moc"
