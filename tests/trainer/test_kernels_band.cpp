// Attention's products over the causal band (trainer/src/kernels/kernels_band.cpp): each of the
// four banded products against the whole product evaluated in double, fp32 and bf16 on both bf16
// paths, for causal masks (grouped query heads, a block length that is not a multiple of the
// chunk, keys with a past) and a sliding window; entries off the band are never read (the
// outputs start as NaN and the inputs hold NaN off the band where the contract allows it);
// attention's forward and gradients with and without the band; and the bytes, which must not move.
#include <QtTest>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <limits>

#include "kernels/device_ops.hpp"
#include "kernels/kernels_band.hpp"
#include "kernels/kernels_gemm.hpp"
#include "kernels/kernels_softmax.hpp"
#include "memory/memory.hpp"

using namespace wingspan;
using namespace wingspan::train;
using kernels::BandedMatrix;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Causal over Tk keys (the first Tk − T of them a past), optionally a sliding window, and keys
// from `hidden` on masked for every row (padding: no row reaches them).
at::Tensor causal_mask(std::int64_t T, std::int64_t Tk, std::int64_t window, std::int64_t hidden = 0) {
    const std::int64_t past = Tk - T;
    at::Tensor mask = at::full({T, Tk}, -kInf).triu(past + 1);
    if (window > 0)
        mask = mask.masked_fill(at::arange(Tk).unsqueeze(0) <= at::arange(T).unsqueeze(1) + past - window, -kInf);
    if (hidden > 0) mask.narrow(1, hidden, Tk - hidden).fill_(-kInf);
    return mask;
}

// [R, Tk] (R = g·T): true where row r (position r mod T) may be nonzero (its finite span).
at::Tensor on_band(const at::Tensor& mask, std::int64_t groups) {
    return mask.isfinite().repeat({groups, 1});
}

// Largest |a − b| relative to the largest |b|, over `where` (all when undefined).
double rel_error(const at::Tensor& a, const at::Tensor& b, const at::Tensor& where = {}) {
    at::Tensor ad = a.to(at::kDouble), bd = b.to(at::kDouble);
    if (where.defined()) {
        ad = ad.masked_select(where);
        bd = bd.masked_select(where);
    }
    const double scale = std::max(bd.abs().max().item<double>(), 1e-30);
    return (ad - bd).abs().max().item<double>() / scale;
}

// Every element within one bf16 unit (2^-8 relative) of the double reference, with a floor of
// 1e-5 of the largest: what one rounding of an fp32 sum gives, and sums rounded to bf16 run by
// run do not.
bool rounded_once(const at::Tensor& got, const at::Tensor& ref) {
    const at::Tensor g = got.to(at::kDouble);
    const at::Tensor tol = ref.abs() * std::ldexp(1.0, -8) + 1e-5 * ref.abs().max().item<double>();
    return !((g - ref).abs() > tol).any().item<bool>();
}

std::vector<kernels::Bf16Path> bf16_paths() {
    std::vector<kernels::Bf16Path> paths{kernels::Bf16Path::Emulated};
    if (kernels::bf16_hardware_path_available()) paths.push_back(kernels::Bf16Path::Hardware);
    return paths;
}

}  // namespace

class BandTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        mem::install();
        at::manual_seed(11);
        if (!kernels::fast_gemm_available()) QSKIP("oneDNN's sgemm is not loaded in this process");
    }
    void cleanup() { kernels::set_bf16_path(kernels::bf16_hardware_path_available() ? kernels::Bf16Path::Hardware
                                                                                    : kernels::Bf16Path::Emulated); }

    // Where the band starts and what it keeps: chunks of 64 at T = 256 keep 62.5 % of the
    // square; short blocks and masks without a causal shape are not banded.
    void band_shape() {
        const auto band = kernels::band_of(kernels::finite_spans(causal_mask(256, 256, 0)), 256);
        QVERIFY(band);
        QCOMPARE(band->chunk, std::int64_t{64});
        QCOMPARE(band->limit, (std::vector<std::int64_t>{64, 128, 192, 256}));
        QVERIFY(!kernels::band_of(kernels::finite_spans(causal_mask(100, 100, 0)), 100));   // under two chunks
        QVERIFY(!kernels::band_of(kernels::finite_spans(at::zeros({256, 256})), 256));     // no mask: nothing to skip
        // 472 keys of past: every chunk reaches most of its rows' width.
        QVERIFY(!kernels::band_of(kernels::finite_spans(causal_mask(128, 600, 0)), 600));
        const auto window = kernels::band_of(kernels::finite_spans(causal_mask(512, 512, 32)), 512);
        QVERIFY(window);
        QCOMPARE(window->limit.front(), std::int64_t{64});
    }

    void products_data() {
        QTest::addColumn<int>("groups");
        QTest::addColumn<int>("T");
        QTest::addColumn<int>("keys");
        QTest::addColumn<int>("window");
        QTest::addColumn<int>("hidden");
        QTest::newRow("causal, one query head per key head, T 256") << 1 << 256 << 256 << 0 << 0;
        QTest::newRow("causal, 3 query heads per key head, T 200") << 3 << 200 << 200 << 0 << 0;
        QTest::newRow("sliding window of 40, 2 groups, T 320") << 2 << 320 << 320 << 40 << 0;
        QTest::newRow("8 keys of past, T 192") << 1 << 192 << 200 << 0 << 0;
        // The last key chunk reached by no row: its gradients are zeros, not left unwritten.
        QTest::newRow("keys from 180 on masked for every row, 2 groups, T 256") << 2 << 256 << 256 << 0 << 180;
    }

    // Each banded product equals the whole one: the made matrices on the band, the others
    // everywhere, although the band's inputs are NaN where they may be (a product that makes
    // scores never reads its own output; one that reads probabilities reads zeros off the band).
    void products() {
        QFETCH(int, groups);
        QFETCH(int, T);
        QFETCH(int, keys);
        QFETCH(int, window);
        QFETCH(int, hidden);
        const std::int64_t B = 2, H = 2, D = 32, R = groups * T, Tk = keys;
        const at::Tensor mask = causal_mask(T, Tk, window, hidden);
        const auto band = kernels::band_of(kernels::finite_spans(mask), Tk);
        QVERIFY(band);
        const at::Tensor inside = on_band(mask, groups).expand({B, H, R, Tk});
        const at::Tensor x = at::randn({B, H, R, D}, at::kDouble), y = at::randn({B, H, Tk, D}, at::kDouble);
        const at::Tensor s = at::randn({B, H, R, Tk}, at::kDouble) * inside;   // zero off the band
        for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
            for (kernels::Bf16Path path : dt == at::kFloat ? std::vector{kernels::Bf16Path::Emulated} : bf16_paths()) {
                kernels::set_bf16_path(path);
                const at::Tensor xd = x.to(dt), yd = y.to(dt), sd = s.to(dt);
                const double tol = dt == at::kFloat ? 1e-5 : 1e-2;
                const auto run = [&](const at::Tensor& a, const at::Tensor& b, BandedMatrix which) {
                    auto shape = a.sizes().vec();
                    shape.back() = b.size(-1);
                    at::Tensor out = at::full(shape, std::numeric_limits<float>::quiet_NaN(), a.options());
                    if (!kernels::handles_batched(out, a, b)) return at::Tensor();
                    kernels::banded_bmm_out(out, a, b, *band, which);
                    return out;
                };
                // Scores q kᵀ (k as the decoder passes it: a transposed view): on the band.
                const at::Tensor scores = run(xd, yd.transpose(-1, -2), BandedMatrix::Out);
                QVERIFY(scores.defined());
                const at::Tensor scores_ref = at::matmul(x.to(dt).to(at::kDouble), y.to(dt).to(at::kDouble).transpose(-1, -2));
                QVERIFY2(rel_error(scores, scores_ref, inside) < tol, qPrintable(QString::number(rel_error(scores, scores_ref, inside))));
                // P V with P zero off the band, and NaN past each chunk's limit (never read).
                at::Tensor beyond = at::zeros({R, Tk}, at::kBool);
                for (std::int64_t r = 0; r < R; ++r)
                    beyond[r].narrow(0, band->limit[(r % T) / band->chunk], Tk - band->limit[(r % T) / band->chunk]).fill_(true);
                const at::Tensor pv = run(sd.masked_fill(beyond, std::numeric_limits<float>::quiet_NaN()), yd, BandedMatrix::Left);
                QVERIFY(pv.isfinite().all().item<bool>());
                QVERIFY(rel_error(pv, at::matmul(s.to(dt).to(at::kDouble), y.to(dt).to(at::kDouble))) < tol);
                // Pᵀ dO (the values' gradient) and qᵀ dS (the keys', transposed): every output.
                const at::Tensor dv = run(sd.transpose(-1, -2), xd, BandedMatrix::LeftT);
                QVERIFY(dv.isfinite().all().item<bool>());
                const at::Tensor dv_ref = at::matmul(s.to(dt).to(at::kDouble).transpose(-1, -2), x.to(dt).to(at::kDouble));
                QVERIFY(rel_error(dv, dv_ref) < tol);
                const at::Tensor dk = run(xd.transpose(-1, -2), sd, BandedMatrix::Right);
                QVERIFY(dk.isfinite().all().item<bool>());
                const at::Tensor dk_ref = at::matmul(x.to(dt).to(at::kDouble).transpose(-1, -2), s.to(dt).to(at::kDouble));
                QVERIFY(rel_error(dk, dk_ref) < tol);
                if (dt == at::kBFloat16) {   // sums over several row runs (grouped heads) rounded once
                    QVERIFY(rounded_once(dv, dv_ref));
                    QVERIFY(rounded_once(dk, dk_ref));
                }
            }
        }
    }

    // Attention's core (scores, masked softmax, P V) with and without the band: the same output
    // and gradients for queries, keys and values, and the same bytes allocated and kept.
    void attention_with_and_without_band() {
        const std::int64_t B = 2, Hkv = 2, g = 3, T = 256, D = 64;
        const at::Tensor mask = causal_mask(T, T, 0);
        for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
            const at::Tensor q0 = at::randn({B, Hkv, g * T, D}).to(dt), k0 = at::randn({B, Hkv, T, D}).to(dt);
            const at::Tensor v0 = at::randn({B, Hkv, T, D}).to(dt), dout = at::randn({B, Hkv, g * T, D}).to(dt);
            std::vector<at::Tensor> results[2];
            std::int64_t kept[2], peak[2];
            for (int banded = 0; banded < 2; ++banded) {
                const auto cb = banded ? fused::causal_band(q0, mask) : std::nullopt;
                QCOMPARE(cb.has_value(), banded == 1);
                const kernels::Band* band = cb ? &cb->band : nullptr;
                at::Tensor q = q0.clone().requires_grad_(true), k = k0.clone().requires_grad_(true);
                at::Tensor v = v0.clone().requires_grad_(true);
                const std::int64_t before = mem::allocated();
                mem::reset_peak();
                at::Tensor s = ops::banded_matmul(q, k.transpose(-1, -2), band, BandedMatrix::Out);
                at::Tensor p = fused::masked_softmax(std::move(s), mask, fused::Path::Auto, cb ? &cb->spans : nullptr);
                at::Tensor out = ops::banded_matmul(p, v, band, BandedMatrix::Left);
                p.reset();
                kept[banded] = mem::allocated() - before;
                auto grads = torch::autograd::grad({out}, {q, k, v}, {dout});
                peak[banded] = mem::peak() - before;
                results[banded] = {out.detach(), grads[0], grads[1], grads[2]};
            }
            QCOMPARE(kept[1], kept[0]);
            QCOMPARE(peak[1], peak[0]);
            const double tol = dt == at::kFloat ? 1e-5 : 2e-2;
            for (size_t i = 0; i < 4; ++i)
                QVERIFY2(rel_error(results[1][i], results[0][i]) < tol,
                         qPrintable(QString("tensor %1: %2").arg(i).arg(rel_error(results[1][i], results[0][i]))));
        }
    }
};

QTEST_GUILESS_MAIN(BandTest)
#include "test_kernels_band.moc"
