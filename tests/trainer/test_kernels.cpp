// The trainer's own CPU kernels against libtorch's reference ops: matrix products through
// oneDNN's sgemm (fp32) and both bf16 paths (emulated: widened to fp32; hardware: oneDNN's bf16
// gemm) for every operand layout the model uses, their gradients, and the bytes they allocate.
// The whole suite runs once per bf16 path; on a CPU without bf16 instructions every test of the
// hardware pass is skipped, saying so.
#include <QtTest>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>
#include <torch/csrc/autograd/autograd.h>

#include "kernels/device_ops.hpp"
#include "kernels/kernels_gemm.hpp"
#include "memory/memory.hpp"
#include "optim/optimizer.hpp"

using namespace wingspan;
using namespace wingspan::train;

namespace {

// Largest |x - ref| relative to the largest |ref|.
double rel_error(const at::Tensor& x, const at::Tensor& ref) {
    const at::Tensor r = ref.to(at::kDouble);
    return (x.to(at::kDouble) - r).abs().max().item<double>() / std::max(1e-30, r.abs().max().item<double>());
}

// A 2-D operand of logical shape [rows, cols], stored as given or as the transpose of a
// contiguous [cols, rows] tensor (how weights reach a linear's product).
at::Tensor operand(std::int64_t rows, std::int64_t cols, bool transposed, at::ScalarType dt) {
    return transposed ? at::randn({cols, rows}).to(dt).t() : at::randn({rows, cols}).to(dt);
}

// A product's shape as test data: [m, k] @ [k, n], each operand stored as given or transposed.
struct ProductShape {
    int m, k, n;
    bool ta, tb;
};
void add_shape_columns() {
    QTest::addColumn<int>("m");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("n");
    QTest::addColumn<bool>("ta");
    QTest::addColumn<bool>("tb");
}
ProductShape fetch_shape() {
    QFETCH(int, m);
    QFETCH(int, k);
    QFETCH(int, n);
    QFETCH(bool, ta);
    QFETCH(bool, tb);
    return {m, k, n, ta, tb};
}

}  // namespace

class TrainerKernelsTest : public QObject {
    Q_OBJECT
public:
    explicit TrainerKernelsTest(kernels::Bf16Path path) : path_(path) {}

private Q_SLOTS:
    void initTestCase() {
        mem::install();
        at::manual_seed(7);
        if (!kernels::fast_gemm_available()) QSKIP("oneDNN's sgemm is not in this libtorch");
        qInfo("bf16 path: %s (this CPU's bf16 instructions: %s)", kernels::to_string(path_), kernels::cpu_bf16_isa());
    }
    void init() {
        if (path_ == kernels::Bf16Path::Hardware && !kernels::bf16_hardware_path_available())
            QSKIP("hardware bf16 path NOT TESTED: this CPU has no AVX512-BF16/AMX-BF16 (or oneDNN no bf16 gemm)");
        kernels::set_bf16_path(path_);
    }

    void fp32ProductsEqualDoublePrecision_data() {
        add_shape_columns();
        QTest::newRow("NN odd") << 37 << 70 << 129 << false << false;
        QTest::newRow("NT linear") << 64 << 96 << 80 << false << true;
        QTest::newRow("TN weight grad") << 96 << 64 << 80 << true << false;
        QTest::newRow("TT") << 5 << 300 << 7 << true << true;
        QTest::newRow("one row") << 1 << 33 << 17 << false << true;
    }
    void fp32ProductsEqualDoublePrecision() {
        const auto [m, k, n, ta, tb] = fetch_shape();
        const at::Tensor a = operand(m, k, ta, at::kFloat), b = operand(k, n, tb, at::kFloat);
        at::Tensor out = at::empty({m, n});
        QVERIFY(kernels::handles(out, a, b));
        kernels::mm_out(out, a, b);
        const double err = rel_error(out, at::mm(a.to(at::kDouble), b.to(at::kDouble)));
        QVERIFY2(err < 1e-5, qPrintable(QString("relative error %1").arg(err)));
    }

    void bf16ProductsAreFp32ProductsRoundedOnce_data() { fp32ProductsEqualDoublePrecision_data(); }
    void bf16ProductsAreFp32ProductsRoundedOnce() {
        const auto [m, k, n, ta, tb] = fetch_shape();
        const at::Tensor a = operand(m, k, ta, at::kBFloat16), b = operand(k, n, tb, at::kBFloat16);
        at::Tensor out = at::empty({m, n}, at::kBFloat16);
        QVERIFY(kernels::handles(out, a, b));
        kernels::mm_out(out, a, b);
        // Exact fp32 inputs, fp32 accumulation, one rounding: within one bf16 step (2^-8) of the
        // double-precision product, element by element.
        const at::Tensor ref = at::mm(a.to(at::kDouble), b.to(at::kDouble));
        const double worst = ((out.to(at::kDouble) - ref).abs() / (ref.abs() + 1e-2)).max().item<double>();
        QVERIFY2(worst <= 1.0 / 256, qPrintable(QString("worst element relative error %1").arg(worst)));
    }

    // out += a @ b: the output as the product's C, summed in fp32 and rounded once; shapes with
    // several stripes, tiles and (emulated) K pieces.
    void accumulatingProducts_data() {
        add_shape_columns();
        QTest::newRow("NT linear, K in pieces") << 300 << 800 << 600 << false << true;
        QTest::newRow("NN rank 16") << 1024 << 16 << 576 << false << false;
        QTest::newRow("one row") << 1 << 33 << 17 << false << true;
    }
    void accumulatingProducts() {
        const auto [m, k, n, ta, tb] = fetch_shape();
        for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
            const at::Tensor a = operand(m, k, ta, dt), b = operand(k, n, tb, dt);
            at::Tensor out = at::randn({m, n}).to(dt);
            const at::Tensor ref = out.to(at::kDouble) + at::mm(a.to(at::kDouble), b.to(at::kDouble));
            QVERIFY(kernels::handles(out, a, b));
            kernels::mm_out(out, a, b, /*accumulate=*/true);
            if (dt == at::kFloat) {
                const double err = rel_error(out, ref);
                QVERIFY2(err < 1e-5, qPrintable(QString("relative error %1").arg(err)));
            } else {   // within one bf16 step of the double sum, element by element
                const double worst = ((out.to(at::kDouble) - ref).abs() / (ref.abs() + 1e-2)).max().item<double>();
                QVERIFY2(worst <= 1.0 / 256, qPrintable(QString("worst element relative error %1").arg(worst)));
            }
        }
    }

    void bf16TilesCoverEveryEdge() {
        // Past one tile in M, N and K with ragged ends.
        const std::int64_t m = kernels::kTileM + 3, k = kernels::kTileK + 5, n = kernels::kTileN + 7;
        const at::Tensor a = operand(m, k, false, at::kBFloat16), b = operand(k, n, true, at::kBFloat16);
        at::Tensor out = at::empty({m, n}, at::kBFloat16);
        kernels::mm_out(out, a, b);
        const double err = rel_error(out, at::mm(a.to(at::kDouble), b.to(at::kDouble)));
        QVERIFY2(err < 1.0 / 128, qPrintable(QString("relative error %1").arg(err)));
        QVERIFY(out.to(at::kFloat).isfinite().all().item<bool>());
        // Past one tile of the hardware path too (its fp32 result tiles are larger).
        const std::int64_t hm = kernels::kHwTileM + 3, hn = kernels::kHwTileN + 7, hk = 40;
        const at::Tensor ha = operand(hm, hk, true, at::kBFloat16), hb = operand(hk, hn, false, at::kBFloat16);
        at::Tensor hout = at::empty({hm, hn}, at::kBFloat16);
        kernels::mm_out(hout, ha, hb);
        const double herr = rel_error(hout, at::mm(ha.to(at::kDouble), hb.to(at::kDouble)));
        QVERIFY2(herr < 1.0 / 128, qPrintable(QString("hardware-sized tiles: relative error %1").arg(herr)));
    }

    // Products the threads split into stripes (by rows when M >= N, else by columns), K cut into
    // even pieces past kTileK and accumulated, ragged edges everywhere, LoRA's skinny shapes.
    void bf16StripesAndKPiecesEqualDoublePrecision_data() {
        add_shape_columns();
        const int k3 = static_cast<int>(2 * kernels::kTileK + 37);   // three K pieces
        QTest::newRow("rows, K in pieces, NN") << 301 << k3 << 45 << false << false;
        QTest::newRow("columns, NT") << 21 << 100 << 1100 << false << true;
        QTest::newRow("TN weight grad, K in pieces") << 530 << k3 << 33 << true << false;
        QTest::newRow("TT both ragged") << 77 << static_cast<int>(kernels::kTileK + 1) << 611 << true << true;
        QTest::newRow("LoRA x@A^T rank 8") << 1030 << 200 << 8 << false << true;
        QTest::newRow("LoRA dA rank 8") << 8 << 1030 << 200 << true << false;
        QTest::newRow("K of one") << 64 << 1 << 48 << false << false;
        // Skinny products (a side of LoRA's rank), every storage of their operands.
        QTest::newRow("LoRA h@B^T: small K, B transposed") << 1030 << 8 << 200 << false << true;
        QTest::newRow("small K, wider than a chunk") << 40 << 16 << 1100 << false << false;
        QTest::newRow("LoRA g@B: small N, B as stored") << 1030 << 200 << 8 << false << false;
        QTest::newRow("LoRA dB: small N, A transposed") << 200 << 1030 << 8 << true << false;
        QTest::newRow("small M, B transposed") << 8 << 300 << 200 << false << true;
        QTest::newRow("small M, columns in chunks") << 16 << 500 << 1100 << true << false;
        QTest::newRow("17 rows") << 17 << 300 << 1030 << false << false;
    }
    void bf16StripesAndKPiecesEqualDoublePrecision() {
        const auto [m, k, n, ta, tb] = fetch_shape();
        const at::Tensor a = operand(m, k, ta, at::kBFloat16), b = operand(k, n, tb, at::kBFloat16);
        at::Tensor out = at::full({m, n}, 1e30, at::kBFloat16);   // every element must be written
        QVERIFY(kernels::handles(out, a, b));
        kernels::mm_out(out, a, b);
        const at::Tensor ref = at::mm(a.to(at::kDouble), b.to(at::kDouble));
        // One rounding to bf16 (2^-8 relative) plus fp32 accumulation over K.
        const double scale = ref.abs().max().item<double>();
        const at::Tensor excess = (out.to(at::kDouble) - ref).abs() - ref.abs() / 256 - 1e-4 * scale;
        QVERIFY2(excess.max().item<double>() <= 0,
                 qPrintable(QString("worst excess over the bound %1").arg(excess.max().item<double>())));
    }

    void bf16ProductInsideAParallelRegion() {
        // Called from pool threads (as the batched product does), a product runs on its thread
        // alone; its result is the same product.
        const at::Tensor a = operand(300, 700, false, at::kBFloat16), b = operand(700, 260, true, at::kBFloat16);
        at::Tensor outside = at::empty({300, 260}, at::kBFloat16);
        kernels::mm_out(outside, a, b);
        std::vector<at::Tensor> inside(4);
        for (auto& t : inside) t = at::empty({300, 260}, at::kBFloat16);
        at::parallel_for(0, 4, 1, [&](std::int64_t i0, std::int64_t i1) {
            for (std::int64_t i = i0; i < i1; ++i) kernels::mm_out(inside[i], a, b);
        });
        for (const auto& t : inside) {
            const double err = rel_error(t, outside);
            QVERIFY2(err <= 1.0 / 128, qPrintable(QString("relative error %1").arg(err)));
        }
    }

    void batchedProductsEqualEachSlice_data() {
        QTest::addColumn<bool>("bf16");
        QTest::newRow("fp32") << false;
        QTest::newRow("bf16") << true;
    }
    void batchedProductsEqualEachSlice() {
        QFETCH(bool, bf16);
        const auto dt = bf16 ? at::kBFloat16 : at::kFloat;
        // Attention's shapes: scores q [B*H, T, D] @ k^T (a transposed view), and probs @ v; more
        // products than threads, odd sizes.
        const at::Tensor q = at::randn({7, 45, 24}).to(dt), k = at::randn({7, 45, 24}).to(dt);
        const at::Tensor kt = k.transpose(1, 2);
        at::Tensor scores = at::empty({7, 45, 45}, dt);
        QVERIFY(kernels::handles_batched(scores, q, kt));
        kernels::bmm_out(scores, q, kt);
        const double tol = bf16 ? 1.0 / 128 : 1e-5;
        double err = rel_error(scores, at::bmm(q.to(at::kDouble), kt.to(at::kDouble)));
        QVERIFY2(err < tol, qPrintable(QString("scores: relative error %1").arg(err)));
        const at::Tensor v = at::randn({7, 45, 24}).to(dt);
        at::Tensor out = at::empty({7, 45, 24}, dt);
        QVERIFY(kernels::handles_batched(out, scores, v));
        kernels::bmm_out(out, scores, v);
        err = rel_error(out, at::bmm(scores.to(at::kDouble), v.to(at::kDouble)));
        QVERIFY2(err < tol, qPrintable(QString("probs @ v: relative error %1").arg(err)));
        // Batch sizes that differ are refused.
        at::Tensor wrong = at::empty({6, 45, 24}, dt);
        QVERIFY(!kernels::handles_batched(wrong, scores.narrow(0, 0, 6), v));
        // Two batch dimensions whose strides cannot be flattened: [B, H, T, D] views of a
        // [B, T, H·D] projection, as the trainer's K and V are; multiplied where they lie.
        const at::Tensor proj = at::randn({2, 45, 3 * 24}).to(dt);
        const at::Tensor v4 = proj.view({2, 45, 3, 24}).transpose(1, 2);   // [2, 3, 45, 24], not viewable as [6, 45, 24]
        QVERIFY(!v4.is_contiguous());
        const at::Tensor p4 = at::randn({2, 3, 45, 45}).to(dt);
        at::Tensor o4 = at::empty({2, 3, 45, 24}, dt);
        QVERIFY(kernels::handles_batched(o4, p4, v4));
        kernels::bmm_out(o4, p4, v4);
        err = rel_error(o4, at::matmul(p4.to(at::kDouble), v4.to(at::kDouble)));
        QVERIFY2(err < tol, qPrintable(QString("[B, H] batch of strided views: relative error %1").arg(err)));
        at::Tensor s4 = at::empty({2, 3, 45, 45}, dt);   // and the transposed view, as k^T
        QVERIFY(kernels::handles_batched(s4, o4, v4.transpose(-1, -2)));
        kernels::bmm_out(s4, o4, v4.transpose(-1, -2));
        err = rel_error(s4, at::matmul(o4.to(at::kDouble), v4.transpose(-1, -2).to(at::kDouble)));
        QVERIFY2(err < tol, qPrintable(QString("[B, H] batch, transposed view: relative error %1").arg(err)));
        // An empty batch is taken and computes nothing.
        at::Tensor none = at::empty({0, 3, 45, 24}, dt);
        QVERIFY(kernels::handles_batched(none, p4.narrow(0, 0, 0), v4.narrow(0, 0, 0)));
        kernels::bmm_out(none, p4.narrow(0, 0, 0), v4.narrow(0, 0, 0));
    }

    void matmulGradientsEqualLibtorch_data() {
        QTest::addColumn<bool>("bf16");
        QTest::newRow("fp32") << false;
        QTest::newRow("bf16") << true;
    }
    void matmulGradientsEqualLibtorch() {
        QFETCH(bool, bf16);
        const auto dt = bf16 ? at::kBFloat16 : at::kFloat;
        // A linear (x [B, T, K] @ W^T) and an attention product ([B, H, T, D] @ [B, H, D, T]).
        const at::Tensor x0 = at::randn({2, 24, 40}), w0 = at::randn({56, 40}) * 0.1;
        const at::Tensor q0 = at::randn({2, 3, 24, 16}), k0 = at::randn({2, 3, 24, 16});
        auto grads = [&](bool fast) {
            at::Tensor x = x0.to(dt).requires_grad_(true), w = w0.to(dt).requires_grad_(true);
            at::Tensor q = q0.to(dt).requires_grad_(true), k = k0.to(dt).requires_grad_(true);
            at::Tensor y = fast ? ops::matmul(x, w.t()) : at::matmul(x.to(at::kFloat), w.to(at::kFloat).t());
            at::Tensor s = fast ? ops::matmul(q, k.transpose(-1, -2))
                                : at::matmul(q.to(at::kFloat), k.to(at::kFloat).transpose(-1, -2));
            at::Tensor loss = (y.to(at::kFloat) * y.to(at::kFloat).detach()).sum() +
                              (s.to(at::kFloat) * s.to(at::kFloat).detach()).sum();
            loss.backward();
            return std::vector<at::Tensor>{y, s, x.grad(), w.grad(), q.grad(), k.grad()};
        };
        const auto fast = grads(true), ref = grads(false);
        const double tol = bf16 ? 2.0 / 256 : 1e-5;
        for (std::size_t i = 0; i < fast.size(); ++i) {
            QCOMPARE(fast[i].sizes(), ref[i].sizes());
            if (i >= 2) QCOMPARE(fast[i].scalar_type(), dt);
            const double err = rel_error(fast[i], ref[i]);
            QVERIFY2(err < tol, qPrintable(QString("tensor %1: relative error %2").arg(i).arg(err)));
        }
    }

    void bf16MixedAdamwEqualsTensorOps() {
        // The vectorised bf16-mixed pass (bf16 parameter and gradient, fp32 master and moments)
        // against the same update written with tensor ops (device_ops' GPU path, run on the CPU).
        const std::int64_t n = 100003;   // not a multiple of any vector width or grain
        at::Tensor master0 = at::randn({n}), g = (at::randn({n}) * 0.01).to(at::kBFloat16);
        g[5] = std::numeric_limits<float>::quiet_NaN();   // a NaN gradient must stay NaN
        ParamState fast{"w", master0.to(at::kBFloat16), master0.clone(), at::zeros({n}), at::zeros({n})};
        at::Tensor p = master0.to(at::kBFloat16), master = master0.clone(), m = at::zeros({n}), v = at::zeros({n});
        for (std::int64_t step = 1; step <= 3; ++step) {
            adamw_step(fast, g, step, 1e-3, 0.01, 0.5);
            const float b1 = 0.9f, b2 = 0.999f;
            const float bc1 = 1.0f - std::pow(b1, static_cast<float>(step));
            const float bc2s = std::sqrt(1.0f - std::pow(b2, static_cast<float>(step)));
            ops::adamw(p, master, g, m, v, 1e-3f, b1, b2, 1e-8f, 0.01f, bc1, bc2s, 0.5f);
        }
        QVERIFY(std::isnan(fast.master[5].item<float>()) && std::isnan(fast.param[5].item<float>()));
        const at::Tensor ok = at::arange(n) != 5;
        auto close = [&](const at::Tensor& a, const at::Tensor& b, double tol) {
            return rel_error(a.index({ok}), b.index({ok})) < tol;
        };
        QVERIFY(close(fast.m, m, 1e-6));
        QVERIFY(close(fast.v, v, 1e-6));
        QVERIFY(close(fast.master, master, 1e-6));
        // The stored bf16 parameter is the master rounded: equal up to a rounding-boundary flip.
        QVERIFY(close(fast.param, master.to(at::kBFloat16), 1.0 / 128));
        QCOMPARE(fast.param.scalar_type(), at::kBFloat16);
    }

    void fp32AdamwEqualsItsScalarDefinition() {
        // The vectorised fp32 pass (no master copy) bit for bit against AdamW written out per
        // element here, in float, in the kernel's order: decay, then the step (no FMA either side).
        const std::int64_t n = 100003;   // not a multiple of any vector width or grain
        at::manual_seed(11);
        ParamState fast{"w", at::randn({n}), at::Tensor(), at::randn({n}) * 0.01, at::rand({n}) * 0.01};
        std::vector<float> p(fast.param.data_ptr<float>(), fast.param.data_ptr<float>() + n);
        std::vector<float> m(fast.m.data_ptr<float>(), fast.m.data_ptr<float>() + n);
        std::vector<float> v(fast.v.data_ptr<float>(), fast.v.data_ptr<float>() + n);
        const at::Tensor start = fast.param.clone();
        for (std::int64_t step = 1; step <= 3; ++step) {
            const at::Tensor g = at::randn({n}) * 0.1;
            adamw_step(fast, g, step, 1e-3, 0.01, 0.5);
            const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, lr = 1e-3f, wd = 0.01f, gscale = 0.5f;
            const float bc1 = 1.0f - std::pow(b1, static_cast<float>(step));
            const float bc2s = std::sqrt(1.0f - std::pow(b2, static_cast<float>(step)));
            const float* gp = g.data_ptr<float>();
            for (std::int64_t i = 0; i < n; ++i) {
                const float gi = gp[i] * gscale;
                m[i] = b1 * m[i] + (1 - b1) * gi;
                v[i] = b2 * v[i] + (1 - b2) * gi * gi;
                float w = p[i];
                w *= 1 - lr * wd;
                w -= (lr / bc1) * m[i] / (std::sqrt(v[i]) / bc2s + eps);
                p[i] = w;
            }
        }
        auto same = [&](const at::Tensor& t, const std::vector<float>& ref) {
            return std::memcmp(t.data_ptr<float>(), ref.data(), ref.size() * sizeof(float)) == 0;
        };
        QVERIFY(same(fast.m, m));
        QVERIFY(same(fast.v, v));
        QVERIFY(same(fast.param, p));
        QVERIFY(!at::equal(fast.param, start));   // it moved
    }

    void fastMatmulAllocatesOnlyItsOutput() {
        for (const auto dt : {at::kFloat, at::kBFloat16}) {
            const at::Tensor x = at::randn({4, 64, 96}).to(dt), w = at::randn({160, 96}).to(dt);
            const std::int64_t before = mem::allocated();
            mem::reset_peak();
            at::Tensor y = ops::matmul(x, w.t());
            const std::int64_t out_bytes = y.numel() * static_cast<std::int64_t>(y.element_size());
            QCOMPARE(mem::allocated() - before, out_bytes);
            QCOMPARE(mem::peak() - before, out_bytes);
        }
    }

private:
    kernels::Bf16Path path_;
};

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    int failed = 0;
    for (const auto path : {kernels::Bf16Path::Emulated, kernels::Bf16Path::Hardware}) {
        TrainerKernelsTest t(path);
        failed += QTest::qExec(&t, argc, argv);
    }
    return failed;
}
#include "test_kernels.moc"
