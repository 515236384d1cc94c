// NF4 dequantization (trainer/src/kernels/kernels_nf4.cpp): the AVX-512BW and the portable paths give
// the bits of the element-wise definition and of libtorch's own ops, for every code, partial
// blocks, odd lengths, zero/huge/NaN block scales; through Nf4Weight and nf4_linear (values,
// input gradients) and with the same bytes allocated as before.
#include <QtTest>

#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <torch/csrc/autograd/autograd.h>

#include "kernels/kernels_nf4.hpp"
#include "memory/memory.hpp"
#include "model/model.hpp"
#include "wingspan/nf4.hpp"

using namespace wingspan;
using namespace wingspan::train;

namespace {

// Random packed codes for n elements (every nibble value occurs) and one absmax per block.
struct Codes {
    at::Tensor packed;   // uint8 [(n + 1) / 2]
    at::Tensor absmax;   // fp32 [ceil(n / 64)]
    std::int64_t n = 0;
};

Codes random_codes(std::int64_t n) {
    Codes c;
    c.n = n;
    c.packed = at::randint(0, 256, {(n + 1) / 2}, at::kByte);
    c.absmax = at::rand({(n + kNf4BlockSize - 1) / kNf4BlockSize}) * 3;
    return c;
}

// The definition, one element at a time: level[code] * absmax in fp32.
float element(const Codes& c, std::int64_t i) {
    const std::uint8_t byte = c.packed.data_ptr<std::uint8_t>()[i / 2];
    const int code = i % 2 == 0 ? byte >> 4 : byte & 0xF;
    return kNf4Levels[code] * c.absmax.data_ptr<float>()[i / kNf4BlockSize];
}

// libtorch's ops on the same codes: levels indexed by the unpacked codes, times the block's absmax.
at::Tensor torch_reference(const Codes& c) {
    const at::Tensor levels = at::from_blob(const_cast<float*>(kNf4Levels.data()), {16}, at::kFloat).clone();
    const at::Tensor hi = at::bitwise_right_shift(c.packed, 4).to(at::kLong);
    const at::Tensor lo = at::bitwise_and(c.packed, 15).to(at::kLong);
    const at::Tensor codes = at::stack({hi, lo}, 1).reshape({-1}).narrow(0, 0, c.n);
    const at::Tensor block = at::arange(c.n, at::kLong).div(kNf4BlockSize, "floor");
    return levels.index_select(0, codes) * c.absmax.index_select(0, block);
}

std::uint16_t bf16_bits(float f) {
    const c10::BFloat16 b(f);
    return b.x;
}

}  // namespace

class TrainerKernelsNf4Test : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        mem::install();
        at::manual_seed(11);
        qInfo("AVX-512BW path %s on this CPU", kernels::nf4_simd_available() ? "used" : "not available");
    }

    void dequantizeGivesTheDefinitionsBits_data() {
        QTest::addColumn<int>("n");
        QTest::addColumn<bool>("simd");
        for (const bool simd : {true, false}) {
            const char* p = simd ? "vector" : "portable";
            QTest::newRow(qPrintable(QString("%1 one element").arg(p))) << 1 << simd;
            QTest::newRow(qPrintable(QString("%1 one short block").arg(p))) << 63 << simd;
            QTest::newRow(qPrintable(QString("%1 one block").arg(p))) << 64 << simd;
            QTest::newRow(qPrintable(QString("%1 odd partial tail").arg(p))) << 3 * 64 + 17 << simd;
            QTest::newRow(qPrintable(QString("%1 a 135M-class gate_proj").arg(p))) << 1536 * 576 << simd;
        }
    }
    void dequantizeGivesTheDefinitionsBits() {
        QFETCH(int, n);
        QFETCH(bool, simd);
        Codes c = random_codes(n);
        // Block scales the rounding must handle: zero; one whose products round up to bf16's
        // infinity; infinity (0 x inf is NaN); NaN.
        auto* am = c.absmax.data_ptr<float>();
        const std::int64_t blocks = c.absmax.numel();
        am[0] = blocks > 1 ? 0.0f : am[0];
        if (blocks > 3) am[2] = 3.4e38f;
        if (blocks > 4) am[3] = std::numeric_limits<float>::infinity();
        if (blocks > 5) am[4] = std::numeric_limits<float>::quiet_NaN();
        std::vector<std::uint16_t> bf(n + 1, 0xABCD);   // one guard element past the end
        std::vector<float> f32(n + 1, -7.0f);
        kernels::nf4_dequantize_bf16(c.packed.data_ptr<std::uint8_t>(), am, n, bf.data(), simd);
        kernels::nf4_dequantize_f32(c.packed.data_ptr<std::uint8_t>(), am, n, f32.data(), simd);
        for (std::int64_t i = 0; i < n; ++i) {
            const float want = element(c, i);
            std::uint32_t got_bits, want_bits;
            std::memcpy(&got_bits, &f32[i], 4);
            std::memcpy(&want_bits, &want, 4);
            // A NaN's sign and payload are the CPU's choice: any NaN is the NaN (bf16 quiets it to 0x7fc0).
            const bool same_f32 = std::isnan(want) ? std::isnan(f32[i]) : got_bits == want_bits;
            if (!same_f32 || bf[i] != bf16_bits(want))
                QFAIL(qPrintable(QString("element %1: fp32 %2 (want %3), bf16 0x%4 (want 0x%5)")
                                     .arg(i).arg(f32[i]).arg(want).arg(bf[i], 0, 16).arg(bf16_bits(want), 0, 16)));
        }
        QCOMPARE(bf[n], std::uint16_t{0xABCD});   // nothing written past n
        QCOMPARE(f32[n], -7.0f);
        if (blocks > 5) {   // the special blocks really produced infinities and NaNs
            int bf_inf = 0, f32_nan = 0, bf_nan = 0;
            for (std::int64_t i = 2 * 64; i < 5 * 64; ++i) {
                bf_inf += (bf[i] & 0x7fff) == 0x7f80;
                f32_nan += std::isnan(f32[i]);
                bf_nan += bf[i] == 0x7fc0;
            }
            QVERIFY(bf_inf > 0);
            QVERIFY(f32_nan >= 64);   // the NaN block, and 0 x inf in the infinite one
            QCOMPARE(bf_nan, f32_nan);
        }
        // libtorch's gather-and-multiply, and its own rounding to bf16, give the same bits.
        if (blocks <= 4) {
            const at::Tensor ref = torch_reference(c);
            const at::Tensor ours = at::from_blob(f32.data(), {n}, at::kFloat);
            QVERIFY(at::equal(ours, ref));
            const at::Tensor ref_bf = ref.to(at::kBFloat16);
            QCOMPARE(std::memcmp(ref_bf.data_ptr(), bf.data(), 2 * n), 0);
        }
    }

    void weightDequantizeMatchesLibtorchAndAllocatesOneTensor() {
        const at::Tensor w = at::randn({192, 577}) * 0.05;   // an odd element count: a partial block
        const Nf4Weight q = Nf4Weight::quantize(w);
        const at::Tensor d64 = q.dequantize(at::kDouble);   // the unchanged element-wise template
        const std::int64_t before = mem::allocated();
        mem::reset_peak();
        at::Tensor bf = q.dequantize(at::kBFloat16);
        // The output tensor, plus the absmax vector freed before returning: as before the kernel.
        QCOMPARE(mem::allocated() - before, w.numel() * 2);
        const std::int64_t absmax_bytes = q.block_codes.numel() * 4;
        QCOMPARE(mem::peak() - before, w.numel() * 2 + absmax_bytes);
        const at::Tensor f32 = q.dequantize(at::kFloat);
        QVERIFY(at::equal(f32, d64.to(at::kFloat)));
        QVERIFY(at::equal(bf, d64.to(at::kFloat).to(at::kBFloat16)));
        QCOMPARE(bf.sizes().vec(), w.sizes().vec());
    }

    void nf4LinearInBf16MatchesTheDenseProductAndItsGradient() {
        const std::int64_t in = 320, out = 96;
        const Nf4Weight q = Nf4Weight::quantize(at::randn({out, in}) * 0.05);
        const at::Tensor dense = q.dequantize(at::kDouble);
        const at::Tensor x0 = at::randn({2, 33, in});
        const at::Tensor gy = at::randn({2, 33, out});
        // Ours: bf16 input and weight, the product through the trainer's kernels.
        at::Tensor x = x0.to(at::kBFloat16).requires_grad_(true);
        at::Tensor y = nf4_linear(x, q, at::kBFloat16);
        torch::autograd::backward({y}, {gy.to(at::kBFloat16)});
        // Reference: the same bf16 values in double.
        at::Tensor xr = x0.to(at::kBFloat16).to(at::kDouble).requires_grad_(true);
        at::Tensor yr = at::matmul(xr, dense.t());
        torch::autograd::backward({yr}, {gy.to(at::kBFloat16).to(at::kDouble)});
        auto rel = [](const at::Tensor& a, const at::Tensor& r) {
            return (a.to(at::kDouble) - r).abs().max().item<double>() / r.abs().max().item<double>();
        };
        // One bf16 rounding of each result (2^-8 relative) bounds both.
        QVERIFY2(rel(y, yr) < 8e-3, qPrintable(QString::number(rel(y, yr))));
        QVERIFY2(rel(x.grad(), xr.grad()) < 8e-3, qPrintable(QString::number(rel(x.grad(), xr.grad()))));
        QVERIFY(rel(y, yr) > 0);   // really computed in bf16, not a double pass-through
    }
};

QTEST_GUILESS_MAIN(TrainerKernelsNf4Test)
#include "test_kernels_nf4.moc"
