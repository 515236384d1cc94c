#include "kernels/kernels_gemm.hpp"

#include <ATen/Parallel.h>
#include <cpuid.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/profile_scopes.hpp"

namespace wingspan::train::kernels {

namespace {

// oneDNN's C API (dnnl.h, v1.0+): row-major C = alpha op(A) op(B) + beta C; 0 = success.
using SgemmFn = int (*)(char transa, char transb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                        const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                        std::int64_t ldc);

// libtorch links oneDNN (as libdnnl or inside itself); look in what is loaded first.
void* dnnl_symbol(const char* name) {
    void* sym = dlsym(RTLD_DEFAULT, name);
    if (!sym) {
        if (void* lib = dlopen("libdnnl.so.2", RTLD_LAZY | RTLD_NOLOAD)) sym = dlsym(lib, name);
    }
    return sym;
}

SgemmFn sgemm() {
    static const SgemmFn fn = reinterpret_cast<SgemmFn>(dnnl_symbol("dnnl_sgemm"));
    return fn;
}

// oneDNN's bf16 gemm (exported beside dnnl_sgemm since v1.2): bf16 A and B, fp32 C, same
// conventions as dnnl_sgemm.
using Bf16GemmFn = int (*)(char transa, char transb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                           const std::uint16_t* A, std::int64_t lda, const std::uint16_t* B, std::int64_t ldb,
                           float beta, float* C, std::int64_t ldc);

Bf16GemmFn bf16_gemm() {
    static const Bf16GemmFn fn = reinterpret_cast<Bf16GemmFn>(dnnl_symbol("dnnl_gemm_bf16bf16f32"));
    return fn;
}

// How a 2-D operand is handed to a row-major gemm: as stored ('N') or transposed ('T').
struct Operand {
    char trans = 'N';
    std::int64_t ld = 0;
    bool ok = false;
};

Operand describe(std::int64_t rows, std::int64_t cols, std::int64_t row_stride, std::int64_t col_stride) {
    Operand o;
    if (col_stride == 1 || cols == 1) {
        o.trans = 'N';
        o.ld = std::max<std::int64_t>({row_stride, cols, 1});
        o.ok = rows == 1 || row_stride >= cols;
    } else if (row_stride == 1 || rows == 1) {
        o.trans = 'T';
        o.ld = std::max<std::int64_t>({col_stride, rows, 1});
        o.ok = cols == 1 || col_stride >= rows;
    }
    return o;
}

// The last two dimensions of t as a gemm operand.
Operand describe(const at::Tensor& t) {
    const std::int64_t d = t.dim();
    return describe(t.size(d - 2), t.size(d - 1), t.stride(d - 2), t.stride(d - 1));
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

void check(int status);

// Widens the tile (r0 .. r0+rows, c0 .. c0+cols) of a bf16 operand into dst, reading its storage
// in order: an 'N' operand's tile as [rows, cols], a 'T' operand's as [cols, rows] (the tile is
// then handed to sgemm transposed). Runs on the calling thread. Returns the tile's leading
// dimension.
std::int64_t widen_tile(const c10::BFloat16* src, const Operand& o, std::int64_t r0, std::int64_t c0,
                        std::int64_t rows, std::int64_t cols, std::uint32_t* dst) {
    const bool n = o.trans == 'N';
    const std::int64_t lines = n ? rows : cols, len = n ? cols : rows;
    const std::int64_t first_line = n ? r0 : c0, first = n ? c0 : r0;
    const auto* base = reinterpret_cast<const std::uint16_t*>(src);
    for (std::int64_t l = 0; l < lines; ++l) widen_row(base + (first_line + l) * o.ld + first, dst + l * len, len);
    return len;
}

// n split into the fewest pieces of at most `most`, of (nearly) equal size, a multiple of `align`
// where that still covers n.
std::int64_t even_piece(std::int64_t n, std::int64_t most, std::int64_t align) {
    const std::int64_t pieces = (n + most - 1) / most;
    const std::int64_t piece = (n + pieces - 1) / pieces;
    const std::int64_t aligned = (piece + align - 1) / align * align;
    return aligned <= most ? aligned : piece;
}

// One thread's share of a bf16 product: out[m0 .. m1, n0 .. n1] = a @ b, in tiles of at most
// kTileM x kTileN, K whole where it fits in kTileK (else in even pieces), widened into this
// thread's scratch; sgemm runs on this thread (oneDNN computes single-threaded inside a
// parallel region). A widened B tile is kept while the M tiles under it run (K in one piece).
// With out32 the product goes to that fp32 C (row stride ldc) instead, unrounded (pc unused).
void bf16_block(const c10::BFloat16* pa, const Operand& oa, const c10::BFloat16* pb, const Operand& ob,
                std::uint16_t* pc, std::int64_t ldc, std::int64_t K, std::int64_t m0, std::int64_t m1, std::int64_t n0,
                std::int64_t n1, bool accumulate, float* out32 = nullptr) {
    if (m1 <= m0 || n1 <= n0) return;
    thread_local std::vector<std::uint32_t> scratch;
    if (scratch.size() < kScratchFloats) scratch.resize(kScratchFloats);
    std::uint32_t* ta = scratch.data();
    std::uint32_t* tb = ta + kTileM * kTileK;
    std::uint32_t* tc = tb + kTileK * kTileN;
    const auto* fa = reinterpret_cast<const float*>(ta);
    const auto* fb = reinterpret_cast<const float*>(tb);
    auto* fc = reinterpret_cast<float*>(tc);
    const std::int64_t mt = even_piece(m1 - m0, kTileM, 16), nt = even_piece(n1 - n0, kTileN, 16);
    const std::int64_t kt = even_piece(K, kTileK, 16);
    for (std::int64_t n = n0; n < n1; n += nt) {
        const std::int64_t nb = std::min(nt, n1 - n);
        std::int64_t ldb = 0;
        for (std::int64_t m = m0; m < m1; m += mt) {
            const std::int64_t mb = std::min(mt, m1 - m);
            float* dst = out32 ? out32 + m * ldc + n : fc;
            const std::int64_t ldd = out32 ? ldc : nb;
            if (accumulate && !out32)   // the output's tile as C, added to in fp32 and rounded once
                for (std::int64_t r = 0; r < mb; ++r) widen_row(pc + (m + r) * ldc + n, tc + r * nb, nb);
            for (std::int64_t k = 0; k < K; k += kt) {
                const std::int64_t kb = std::min(kt, K - k);
                const std::int64_t lda = widen_tile(pa, oa, m, k, mb, kb, ta);
                if (kb < K || m == m0) ldb = widen_tile(pb, ob, k, n, kb, nb, tb);
                const float beta = k == 0 && !accumulate ? 0.0f : 1.0f;
                check(sgemm()(oa.trans, ob.trans, mb, nb, kb, 1.0f, fa, lda, fb, ldb, beta, dst, ldd));
            }
            if (!out32)
                for (std::int64_t r = 0; r < mb; ++r) narrow_row(tc + r * nb, pc + (m + r) * ldc + n, nb);
        }
    }
}

// The hardware path's share of a bf16 product: oneDNN's bf16 gemm multiplies the operands as
// stored, K whole, into this thread's fp32 tile, which is rounded into the output (or into out32,
// as bf16_block).
void bf16_block_hardware(const c10::BFloat16* pa, const Operand& oa, const c10::BFloat16* pb, const Operand& ob,
                         std::uint16_t* pc, std::int64_t ldc, std::int64_t K, std::int64_t m0, std::int64_t m1,
                         std::int64_t n0, std::int64_t n1, bool accumulate, float* out32 = nullptr) {
    if (m1 <= m0 || n1 <= n0) return;
    thread_local std::vector<float> tile;
    if (tile.size() < static_cast<std::size_t>(kHwTileM * kHwTileN)) tile.resize(kHwTileM * kHwTileN);
    const auto* a = reinterpret_cast<const std::uint16_t*>(pa);
    const auto* b = reinterpret_cast<const std::uint16_t*>(pb);
    const std::int64_t mt = even_piece(m1 - m0, kHwTileM, 16), nt = even_piece(n1 - n0, kHwTileN, 16);
    for (std::int64_t n = n0; n < n1; n += nt) {
        const std::int64_t nb = std::min(nt, n1 - n);
        // Column n of op(B): B[0, n] as stored ('N'), or row n of the stored transpose ('T').
        const std::uint16_t* bn = ob.trans == 'N' ? b + n : b + n * ob.ld;
        for (std::int64_t m = m0; m < m1; m += mt) {
            const std::int64_t mb = std::min(mt, m1 - m);
            const std::uint16_t* am = oa.trans == 'N' ? a + m * oa.ld : a + m;
            auto* tile_bits = reinterpret_cast<std::uint32_t*>(tile.data());
            float* dst = out32 ? out32 + m * ldc + n : tile.data();
            const std::int64_t ldd = out32 ? ldc : nb;
            if (accumulate && !out32)   // the output's tile as C, added to in fp32 and rounded once
                for (std::int64_t r = 0; r < mb; ++r) widen_row(pc + (m + r) * ldc + n, tile_bits + r * nb, nb);
            check(bf16_gemm()(oa.trans, ob.trans, mb, nb, K, 1.0f, am, oa.ld, bn, ob.ld, accumulate ? 1.0f : 0.0f, dst,
                              ldd));
            if (!out32)
                for (std::int64_t r = 0; r < mb; ++r)
                    narrow_row(reinterpret_cast<const std::uint32_t*>(tile.data()) + r * nb, pc + (m + r) * ldc + n, nb);
        }
    }
}

// One thread's share of a bf16 product on the path in use.
void bf16_share(const c10::BFloat16* pa, const Operand& oa, const c10::BFloat16* pb, const Operand& ob,
                std::uint16_t* pc, std::int64_t ldc, std::int64_t K, std::int64_t m0, std::int64_t m1, std::int64_t n0,
                std::int64_t n1, bool accumulate, float* out32 = nullptr) {
    if (bf16_path() == Bf16Path::Hardware)
        bf16_block_hardware(pa, oa, pb, ob, pc, ldc, K, m0, m1, n0, n1, accumulate, out32);
    else bf16_block(pa, oa, pb, ob, pc, ldc, K, m0, m1, n0, n1, accumulate, out32);
}

// How many pool threads share a product: one inside a parallel region (a product of a batch, or
// a caller's stripe) and for a product too small to pay for waking the pool, else all of them.
std::int64_t product_threads(std::int64_t M, std::int64_t K, std::int64_t N) {
    const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
    return at::in_parallel_region() || flops < kParallelFlops ? 1 : at::get_num_threads();
}

// Calls block(m0, m1, n0, n1) for the output [M, N] cut into one stripe per thread along its
// longer side (16-aligned), in one parallel region (each wake-up of a pool thread that has gone to
// sleep costs tens of microseconds). The cut depends only on the sizes and the
// thread count, so a run's numbers do not depend on timing.
template <typename Block>
void for_each_stripe(std::int64_t M, std::int64_t N, std::int64_t threads, const Block& block) {
    const bool by_rows = M >= N;
    const std::int64_t extent = by_rows ? M : N;
    const std::int64_t stripe = (extent + threads - 1) / threads;
    const std::int64_t aligned = std::max<std::int64_t>(16, (stripe + 15) / 16 * 16);
    const std::int64_t parts = (extent + aligned - 1) / aligned;
    at::parallel_for(0, parts, 1, [&](std::int64_t p0, std::int64_t p1) {
        for (std::int64_t p = p0; p < p1; ++p) {
            const std::int64_t lo = p * aligned, hi = std::min(extent, lo + aligned);
            if (by_rows) block(lo, hi, std::int64_t{0}, N);
            else block(std::int64_t{0}, M, lo, hi);
        }
    });
}

// out = a @ b for bf16 operands on the calling thread and, outside a parallel region, on the pool
// (one stripe per thread); a product too small to pay for that runs on this thread alone.
void bf16_product(const c10::BFloat16* pa, const Operand& oa, const c10::BFloat16* pb, const Operand& ob,
                  std::uint16_t* pc, std::int64_t M, std::int64_t K, std::int64_t N, bool accumulate = false) {
    const std::int64_t threads = product_threads(M, K, N);
    if (threads <= 1) {
        bf16_share(pa, oa, pb, ob, pc, N, K, 0, M, 0, N, accumulate);
        return;
    }
    for_each_stripe(M, N, threads, [&](std::int64_t m0, std::int64_t m1, std::int64_t n0, std::int64_t n1) {
        bf16_share(pa, oa, pb, ob, pc, N, K, m0, m1, n0, n1, accumulate);
    });
}

// out = a @ b for fp32 operands through oneDNN's sgemm, one call (it threads itself).
void onednn_fp32(const float* pa, const Operand& oa, const float* pb, const Operand& ob, float* pc, std::int64_t M,
                 std::int64_t K, std::int64_t N, bool accumulate = false) {
    check(sgemm()(oa.trans, ob.trans, M, N, K, 1.0f, pa, oa.ld, pb, ob.ld, accumulate ? 1.0f : 0.0f, pc, N));
}

// cpuid leaf 7: AMX-BF16 is EDX bit 22 of sub-leaf 0, AVX512-BF16 EAX bit 5 of sub-leaf 1.
const char* detect_bf16_isa() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return "none";
    const bool amx_bf16 = (d >> 22) & 1u;
    const unsigned max_sub = a;
    bool avx512_bf16 = false;
    if (max_sub >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) avx512_bf16 = (a >> 5) & 1u;
    return amx_bf16 ? "amx_bf16" : avx512_bf16 ? "avx512_bf16" : "none";
}

// The path asked for by WINGSPAN_CPU_BF16, or why it cannot be taken.
struct PathSetting {
    Bf16Path path = Bf16Path::Emulated;
    std::string error;
};

PathSetting read_path_setting() {
    PathSetting s;
    const bool hardware_ok = bf16_hardware_path_available();
    s.path = hardware_ok ? Bf16Path::Hardware : Bf16Path::Emulated;
    const char* v = std::getenv("WINGSPAN_CPU_BF16");
    if (!v || !*v) return s;
    const std::string want = v;
    if (want == "emulated") {
        s.path = Bf16Path::Emulated;
    } else if (want == "hardware") {
        if (!hardware_ok)
            s.error = !cpu_has_bf16_hardware()
                          ? "WINGSPAN_CPU_BF16=hardware: this CPU has no bf16 instructions (neither AVX512-BF16 nor "
                            "AMX-BF16); use emulated or unset it"
                          : "WINGSPAN_CPU_BF16=hardware: this libtorch's oneDNN has no bf16 gemm "
                            "(dnnl_gemm_bf16bf16f32); use emulated or unset it";
    } else {
        s.error = "WINGSPAN_CPU_BF16=" + want + ": expected hardware or emulated";
    }
    return s;
}

PathSetting& path_setting() {
    static PathSetting s = read_path_setting();
    return s;
}

// Seconds of the best of three runs of f.
template <typename F>
double best_seconds(const F& f) {
    double best = 1e30;
    for (int i = 0; i < 3; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

struct Fp32Setting {
    Fp32Gemm gemm = Fp32Gemm::OneDnn;
    std::string error, why;
};

// WINGSPAN_CPU_FP32_GEMM=onednn (the default) | blas | auto. auto measures a 512x576x576 product
// (a 135M-class q projection's half) by each and takes the system BLAS only when it is clearly
// faster (1.3x). Not the default: on a 2-core VM oneDNN's rate through the OpenMP pool switched
// between one and two cores' worth from process to process (bench_gemm_shapes, OMP_WAIT_POLICY=
// passive: 105 or 210 GFLOP/s), so the choice, and the last bits of every fp32 product, would
// change between runs of the same command. Which one wins depends on the CPU and on whether
// Debian's OpenBLAS knows it (an unknown model gets its generic SSE kernel, 5-30x slower).
Fp32Setting read_fp32_setting() {
    Fp32Setting s;
    const char* v = std::getenv("WINGSPAN_CPU_FP32_GEMM");
    const std::string want = v ? v : "";
    if (want.empty() || want == "onednn" || want == "blas" || (want == "auto" && !sgemm())) {
        s.gemm = want == "blas" || !sgemm() ? Fp32Gemm::SystemBlas : Fp32Gemm::OneDnn;
        s.why = !sgemm() ? "oneDNN's sgemm is not in this libtorch"
                : want.empty() ? "the default (WINGSPAN_CPU_FP32_GEMM=blas|auto picks another)"
                               : "WINGSPAN_CPU_FP32_GEMM=" + want;
        return s;
    }
    if (want != "auto") {
        s.error = "WINGSPAN_CPU_FP32_GEMM=" + want + ": expected onednn, blas or auto";
        return s;
    }
    // Buffers outside the tensor allocator (from_blob allocates no storage) and no random draws:
    // the probe may run in the middle of a step, whose measured memory and random stream it must
    // not change.
    at::AutoDispatchBelowADInplaceOrView no_autograd;
    std::vector<float> va(512 * 576, 0.5f), vb(576 * 576, 0.25f), vc(512 * 576);
    const at::Tensor a = at::from_blob(va.data(), {512, 576}), b = at::from_blob(vb.data(), {576, 576}).t();
    at::Tensor out = at::from_blob(vc.data(), {512, 576});
    const Operand oa = describe(a), ob = describe(b);
    auto onednn = [&] {
        onednn_fp32(a.data_ptr<float>(), oa, b.data_ptr<float>(), ob, out.data_ptr<float>(), 512, 576, 576);
    };
    auto blas = [&] { at::mm_out(out, a, b); };
    onednn(), blas();   // first calls: JIT kernels and thread pools
    const double t_onednn = best_seconds(onednn), t_blas = best_seconds(blas);
    s.gemm = t_blas * 1.3 < t_onednn ? Fp32Gemm::SystemBlas : Fp32Gemm::OneDnn;
    char buf[160];
    std::snprintf(buf, sizeof buf, "measured 512x576x576: oneDNN sgemm %.1f GFLOP/s, system BLAS %.1f GFLOP/s",
                  2.0 * 512 * 576 * 576 / t_onednn / 1e9, 2.0 * 512 * 576 * 576 / t_blas / 1e9);
    s.why = buf;
    return s;
}

Fp32Setting& fp32_setting() {
    static Fp32Setting s = read_fp32_setting();
    return s;
}

// WINGSPAN_GEMM_LOG=1: one stderr line per product ("gemm bf16 M K N NT"), to list the shapes a
// step makes (bench/trainer/bench_gemm_shapes.cpp times them).
void log_product(const char* dtype, std::int64_t M, std::int64_t K, std::int64_t N, char ta, char tb) {
    static const bool on = [] {
        const char* v = std::getenv("WINGSPAN_GEMM_LOG");
        return v && *v && std::string(v) != "0";
    }();
    if (on)
        std::fprintf(stderr, "gemm %s %lld %lld %lld %c%c\n", dtype, static_cast<long long>(M), static_cast<long long>(K),
                     static_cast<long long>(N), ta, tb);
}

void check(int status) {
    if (status != 0) throw std::runtime_error("oneDNN sgemm failed with status " + std::to_string(status));
}

}  // namespace

bool fast_gemm_available() { return sgemm() != nullptr; }

Fp32Gemm fp32_gemm() { return fp32_setting().gemm; }

const char* to_string(Fp32Gemm g) { return g == Fp32Gemm::SystemBlas ? "blas" : "onednn"; }

std::string fp32_gemm_reason() { return fp32_setting().why; }

std::string fp32_gemm_error() { return fp32_setting().error; }

const char* cpu_bf16_isa() {
    static const char* isa = detect_bf16_isa();
    return isa;
}

bool cpu_has_bf16_hardware() { return std::strcmp(cpu_bf16_isa(), "none") != 0; }

bool bf16_hardware_path_available() { return cpu_has_bf16_hardware() && bf16_gemm() != nullptr; }

const char* to_string(Bf16Path p) { return p == Bf16Path::Hardware ? "hardware" : "emulated"; }

Bf16Path bf16_path() { return path_setting().path; }

std::string bf16_path_error() { return path_setting().error; }

void set_bf16_path(Bf16Path p) {
    if (p == Bf16Path::Hardware && !bf16_hardware_path_available())
        throw std::invalid_argument("the hardware bf16 path is not available on this CPU");
    path_setting() = {p, ""};
}

bool handles(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
    if (!fast_gemm_available()) return false;
    if (!a.is_cpu() || !b.is_cpu() || !out.is_cpu()) return false;
    if (a.dim() != 2 || b.dim() != 2 || out.dim() != 2) return false;
    const auto dt = a.scalar_type();
    if (b.scalar_type() != dt || out.scalar_type() != dt) return false;
    if (dt != at::kFloat && dt != at::kBFloat16) return false;
    if (a.size(1) != b.size(0) || out.size(0) != a.size(0) || out.size(1) != b.size(1)) return false;
    if (!out.is_contiguous()) return false;
    if (a.numel() == 0 || b.numel() == 0) return true;
    return describe(a).ok && describe(b).ok;
}

void mm_out(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, bool accumulate) {
    WINGSPAN_PROFILE_SCOPE(profile::kGemm);
    const std::int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    if (M == 0 || N == 0) return;
    if (K == 0) {
        if (!accumulate) out.zero_();
        return;
    }
    const Operand oa = describe(a), ob = describe(b);
    log_product(a.scalar_type() == at::kFloat ? "fp32" : "bf16", M, K, N, oa.trans, ob.trans);
    if (a.scalar_type() == at::kFloat) {
        if (fp32_gemm() == Fp32Gemm::SystemBlas) {
            // libtorch's mm into the given output: its BLAS call takes these strides as they are
            // (one unit stride each, handles()), so it allocates nothing.
            at::AutoDispatchBelowADInplaceOrView no_autograd;
            if (accumulate) out.addmm_(a, b);
            else at::mm_out(out, a, b);
        } else {
            onednn_fp32(a.data_ptr<float>(), oa, b.data_ptr<float>(), ob, out.data_ptr<float>(), M, K, N, accumulate);
        }
        return;
    }
    bf16_product(a.data_ptr<c10::BFloat16>(), oa, b.data_ptr<c10::BFloat16>(), ob,
                 reinterpret_cast<std::uint16_t*>(out.data_ptr<c10::BFloat16>()), M, K, N, accumulate);
}

namespace {

// The first [M, K] slice of a batched operand (every leading index 0): a view, never a copy.
at::Tensor first_slice(at::Tensor t) {
    while (t.dim() > 2) t = t.select(0, 0);
    return t;
}

// Element offset of product i (row-major over the leading dimensions) in t's storage: the leading
// dimensions keep their own strides, so [B, H, T, D] views of a [B, T, H·D] projection (attention's
// K and V) are multiplied where they lie instead of being copied into a [B·H, T, D] block.
std::int64_t batch_offset(const at::Tensor& t, std::int64_t i) {
    std::int64_t offset = 0;
    for (std::int64_t d = t.dim() - 3; d >= 0; --d) {
        offset += (i % t.size(d)) * t.stride(d);
        i /= t.size(d);
    }
    return offset;
}

// How many products a batched operand holds: the product of its leading dimensions.
std::int64_t batch_count(const at::Tensor& t) {
    std::int64_t n = 1;
    for (std::int64_t d = 0; d + 2 < t.dim(); ++d) n *= t.size(d);
    return n;
}

}  // namespace

bool handles_batched(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
    if (a.dim() < 3 || b.dim() != a.dim() || out.dim() != a.dim()) return false;
    for (std::int64_t d = 0; d + 2 < a.dim(); ++d)
        if (a.size(d) != b.size(d) || out.size(d) != a.size(d)) return false;
    if (!out.is_contiguous()) return false;
    if (batch_count(a) == 0) return true;
    return handles(first_slice(out), first_slice(a), first_slice(b));   // every slice has the same sizes and strides
}

void bmm_out(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
    WINGSPAN_PROFILE_SCOPE(profile::kGemmBatched);
    const std::int64_t d = a.dim(), M = a.size(d - 2), K = a.size(d - 1), N = b.size(d - 1);
    const std::int64_t batch = batch_count(a);
    if (batch == 0 || M == 0 || N == 0) return;
    if (K == 0) {
        out.zero_();
        return;
    }
    const Operand oa = describe(a), ob = describe(b);
    const std::int64_t sc = M * N;
    const bool fp32 = a.scalar_type() == at::kFloat;
    for (std::int64_t i = 0; i < batch; ++i) log_product(fp32 ? "fp32" : "bf16", M, K, N, oa.trans, ob.trans);
    // One product per task: a parallel region for the batch, each product on one thread.
    at::parallel_for(0, batch, 1, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) {
            const std::int64_t ia = batch_offset(a, i), ib = batch_offset(b, i);
            if (fp32) {
                check(sgemm()(oa.trans, ob.trans, M, N, K, 1.0f, a.data_ptr<float>() + ia, oa.ld,
                              b.data_ptr<float>() + ib, ob.ld, 0.0f, out.data_ptr<float>() + i * sc, N));
            } else {
                bf16_product(a.data_ptr<c10::BFloat16>() + ia, oa, b.data_ptr<c10::BFloat16>() + ib, ob,
                             reinterpret_cast<std::uint16_t*>(out.data_ptr<c10::BFloat16>()) + i * sc, M, K, N);
            }
        }
    });
}

GemmOperand gemm_operand(const at::Tensor& t, std::int64_t i) {
    const Operand o = describe(t);
    GemmOperand g;
    g.item = static_cast<std::int64_t>(t.element_size());
    g.data = static_cast<const char*>(t.data_ptr()) + batch_offset(t, i) * g.item;
    g.trans = o.trans;
    g.ld = o.ld;
    return g;
}

void gemm_on_this_thread(at::ScalarType dtype, const GemmOperand& a, const GemmOperand& b, char* c, std::int64_t ldc,
                         std::int64_t M, std::int64_t N, std::int64_t K, bool accumulate) {
    if (M == 0 || N == 0) return;
    log_product(dtype == at::kFloat ? "fp32" : "bf16", M, K, N, a.trans, b.trans);
    if (dtype == at::kFloat) {
        if (K == 0) {
            if (!accumulate)
                for (std::int64_t r = 0; r < M; ++r) std::memset(c + r * ldc * 4, 0, static_cast<std::size_t>(N) * 4);
            return;
        }
        check(sgemm()(a.trans, b.trans, M, N, K, 1.0f, reinterpret_cast<const float*>(a.data), a.ld,
                      reinterpret_cast<const float*>(b.data), b.ld, accumulate ? 1.0f : 0.0f, reinterpret_cast<float*>(c),
                      ldc));
        return;
    }
    if (K == 0) {
        if (!accumulate)
            for (std::int64_t r = 0; r < M; ++r) std::memset(c + r * ldc * 2, 0, static_cast<std::size_t>(N) * 2);
        return;
    }
    const Operand oa{a.trans, a.ld, true}, ob{b.trans, b.ld, true};
    bf16_share(reinterpret_cast<const c10::BFloat16*>(a.data), oa, reinterpret_cast<const c10::BFloat16*>(b.data), ob,
               reinterpret_cast<std::uint16_t*>(c), ldc, K, 0, M, 0, N, accumulate);
}

void bf16_gemm_fp32_out_on_this_thread(const GemmOperand& a, const GemmOperand& b, float* c, std::int64_t ldc,
                                       std::int64_t M, std::int64_t N, std::int64_t K, bool accumulate) {
    if (M == 0 || N == 0) return;
    log_product("bf16", M, K, N, a.trans, b.trans);
    if (K == 0) {
        if (!accumulate)
            for (std::int64_t r = 0; r < M; ++r) std::fill(c + r * ldc, c + r * ldc + N, 0.0f);
        return;
    }
    const Operand oa{a.trans, a.ld, true}, ob{b.trans, b.ld, true};
    bf16_share(reinterpret_cast<const c10::BFloat16*>(a.data), oa, reinterpret_cast<const c10::BFloat16*>(b.data), ob,
               nullptr, ldc, K, 0, M, 0, N, accumulate, c);
}

}  // namespace wingspan::train::kernels
