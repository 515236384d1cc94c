#include "kernels_gemm.hpp"

#include <ATen/Parallel.h>
#include <cpuid.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace wingspan::train::kernels {

namespace {

// oneDNN's C API (dnnl.h, v1.0+): row-major C = alpha op(A) op(B) + beta C; 0 = success.
using SgemmFn = int (*)(char transa, char transb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                        const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                        std::int64_t ldc);

SgemmFn sgemm() {
    static const SgemmFn fn = [] {
        // libtorch links oneDNN (as libdnnl or inside itself); look in what is loaded first.
        void* sym = dlsym(RTLD_DEFAULT, "dnnl_sgemm");
        if (!sym) {
            if (void* lib = dlopen("libdnnl.so.2", RTLD_LAZY | RTLD_NOLOAD)) sym = dlsym(lib, "dnnl_sgemm");
        }
        return reinterpret_cast<SgemmFn>(sym);
    }();
    return fn;
}

// How a 2-D operand is handed to a row-major gemm: as stored ('N') or transposed ('T').
struct Operand {
    char trans = 'N';
    std::int64_t ld = 0;
    bool ok = false;
};

Operand describe(const at::Tensor& t) {
    const std::int64_t rows = t.size(0), cols = t.size(1);
    Operand o;
    if (t.stride(1) == 1 || cols == 1) {
        o.trans = 'N';
        o.ld = std::max<std::int64_t>({t.stride(0), cols, 1});
        o.ok = rows == 1 || t.stride(0) >= cols;
    } else if (t.stride(0) == 1 || rows == 1) {
        o.trans = 'T';
        o.ld = std::max<std::int64_t>({t.stride(1), rows, 1});
        o.ok = cols == 1 || t.stride(1) >= rows;
    }
    return o;
}

// bf16 -> fp32 is exact: the 16 bits become the high half of the float. One clone per vector
// width, chosen when the program loads (the build targets plain x86-64).
__attribute__((target_clones("avx512f", "avx2", "default"))) void widen_row(const std::uint16_t* __restrict__ src,
                                                                              std::uint32_t* __restrict__ dst, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<std::uint32_t>(src[i]) << 16;
}

// fp32 -> bf16, rounded to nearest even, NaN kept a (quiet) NaN: what c10::BFloat16(float) does.
__attribute__((target_clones("avx512f", "avx2", "default"))) void narrow_row(const std::uint32_t* __restrict__ src,
                                                                               std::uint16_t* __restrict__ dst, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
        const std::uint32_t b = src[i];
        const bool nan = (b & 0x7fffffffu) > 0x7f800000u;
        const std::uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
        dst[i] = nan ? std::uint16_t{0x7fc0} : static_cast<std::uint16_t>(rounded);
    }
}

// Widens the tile (r0 .. r0+rows, c0 .. c0+cols) of a bf16 operand into dst, reading its storage
// in order: an 'N' operand's tile as [rows, cols], a 'T' operand's as [cols, rows] (the tile is
// then handed to sgemm transposed). Returns the tile's leading dimension.
std::int64_t widen_tile(const c10::BFloat16* src, const Operand& o, std::int64_t r0, std::int64_t c0,
                        std::int64_t rows, std::int64_t cols, std::uint32_t* dst) {
    const bool n = o.trans == 'N';
    const std::int64_t lines = n ? rows : cols, len = n ? cols : rows;
    const std::int64_t first_line = n ? r0 : c0, first = n ? c0 : r0;
    const auto* base = reinterpret_cast<const std::uint16_t*>(src);
    at::parallel_for(0, lines, std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(len, 1)),
                     [&](std::int64_t a, std::int64_t b) {
                         for (std::int64_t l = a; l < b; ++l)
                             widen_row(base + (first_line + l) * o.ld + first, dst + l * len, len);
                     });
    return len;
}

bool detect_bf16_hardware() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool amx_bf16 = (d >> 22) & 1u;
    const unsigned max_sub = a;
    bool avx512_bf16 = false;
    if (max_sub >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) avx512_bf16 = (a >> 5) & 1u;
    return amx_bf16 || avx512_bf16;
}

void check(int status) {
    if (status != 0) throw std::runtime_error("oneDNN sgemm failed with status " + std::to_string(status));
}

}  // namespace

bool fast_gemm_available() { return sgemm() != nullptr; }

bool cpu_has_bf16_hardware() {
    static const bool has = detect_bf16_hardware();
    return has;
}

bool handles(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
    if (!fast_gemm_available()) return false;
    if (!a.is_cpu() || !b.is_cpu() || !out.is_cpu()) return false;
    if (a.dim() != 2 || b.dim() != 2 || out.dim() != 2) return false;
    const auto dt = a.scalar_type();
    if (b.scalar_type() != dt || out.scalar_type() != dt) return false;
    if (dt != at::kFloat && !(dt == at::kBFloat16 && !cpu_has_bf16_hardware())) return false;
    if (a.size(1) != b.size(0) || out.size(0) != a.size(0) || out.size(1) != b.size(1)) return false;
    if (!out.is_contiguous()) return false;
    if (a.numel() == 0 || b.numel() == 0) return true;
    return describe(a).ok && describe(b).ok;
}

void mm_out(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
    const std::int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    if (M == 0 || N == 0) return;
    if (K == 0) {
        out.zero_();
        return;
    }
    const Operand oa = describe(a), ob = describe(b);
    if (a.scalar_type() == at::kFloat) {
        check(sgemm()(oa.trans, ob.trans, M, N, K, 1.0f, a.data_ptr<float>(), oa.ld, b.data_ptr<float>(), ob.ld, 0.0f,
                      out.data_ptr<float>(), N));
        return;
    }
    // bf16: fp32 tiles of A, B and C; C's tile accumulates over K and is rounded once.
    thread_local std::vector<std::uint32_t> scratch;
    if (scratch.size() < kScratchFloats) scratch.resize(kScratchFloats);
    std::uint32_t* ta = scratch.data();
    std::uint32_t* tb = ta + kTileM * kTileK;
    std::uint32_t* tc = tb + kTileK * kTileN;
    const auto* fa = reinterpret_cast<const float*>(ta);
    const auto* fb = reinterpret_cast<const float*>(tb);
    auto* fc = reinterpret_cast<float*>(tc);
    const auto* pa = a.data_ptr<c10::BFloat16>();
    const auto* pb = b.data_ptr<c10::BFloat16>();
    auto* pc = reinterpret_cast<std::uint16_t*>(out.data_ptr<c10::BFloat16>());
    for (std::int64_t m0 = 0; m0 < M; m0 += kTileM) {
        const std::int64_t mb = std::min(kTileM, M - m0);
        for (std::int64_t n0 = 0; n0 < N; n0 += kTileN) {
            const std::int64_t nb = std::min(kTileN, N - n0);
            for (std::int64_t k0 = 0; k0 < K; k0 += kTileK) {
                const std::int64_t kb = std::min(kTileK, K - k0);
                const std::int64_t lda = widen_tile(pa, oa, m0, k0, mb, kb, ta);
                const std::int64_t ldb = widen_tile(pb, ob, k0, n0, kb, nb, tb);
                check(sgemm()(oa.trans, ob.trans, mb, nb, kb, 1.0f, fa, lda, fb, ldb, k0 == 0 ? 0.0f : 1.0f, fc, nb));
            }
            at::parallel_for(0, mb, std::max<std::int64_t>(1, 32768 / nb), [&](std::int64_t r0, std::int64_t r1) {
                for (std::int64_t r = r0; r < r1; ++r) narrow_row(tc + r * nb, pc + (m0 + r) * N + n0, nb);
            });
        }
    }
}

}  // namespace wingspan::train::kernels
