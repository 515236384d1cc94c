#pragma once
// What every CPU row kernel shares (kernels_fused.cpp, kernels_softmax.cpp, kernels_loss.cpp):
// element access with fp32 math and one rounding to the storage dtype, an exp the compiler can
// vectorise, the fp32 staging buffers bf16 rows go through, and the CPU-width clones.
//
// The including files are compiled with -fno-math-errno and -ffp-contract=off (trainer/
// CMakeLists.txt), so every clone rounds exactly like the scalar code.
#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

// One copy of a loop per CPU width, picked at load time from the CPU's flags.
#define WINGSPAN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

namespace wingspan::train::row_math {

inline float ld(const float* p) { return *p; }
// bf16 as bit operations (the compiler vectorises them; c10's conversions go through isnan):
// widening is exact, narrowing rounds to nearest even and keeps a NaN a quiet NaN, as
// c10::BFloat16(float) does.
inline float ld(const std::uint16_t* p) {
    const std::uint32_t b = static_cast<std::uint32_t>(*p) << 16;
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}
inline void st(float* p, float v) { *p = v; }
inline void st(std::uint16_t* p, float v) {
    std::uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    const bool nan = (b & 0x7fffffffu) > 0x7f800000u;
    const std::uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
    const std::uint32_t out = nan ? 0x7fc0u : rounded;   // select in 32 bits, then narrow: vectorises
    *p = static_cast<std::uint16_t>(out);
}

// bf16 storage as its bits (the kernels' element type).
template <typename Tensor>
std::uint16_t* bits(const Tensor& t) {
    return reinterpret_cast<std::uint16_t*>(t.template data_ptr<c10::BFloat16>());
}

// Rows per parallel chunk: about 16 K elements of work, enough to amortise a hand-off.
inline std::int64_t grain_rows(std::int64_t width) {
    return std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, width));
}

inline bool cpu_kernel_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kBFloat16; }

// exp(x) in fp32 with plain arithmetic (Cephes' expf: 2^n · (1 + r + r²·P(r)), |r| ≤ ln2/2), so
// the loops that use it vectorise; within 2 ulp of std::exp over the clamped range. Below −87.3
// it returns exp(−87.3), not 0: callers that need an exact 0 (a masked −inf) select it.
inline float exp_approx(float x) {
    x = std::min(std::max(x, -87.3f), 88.7f);
    // Nearest integer by the 1.5·2^23 trick (no floor call: the loops stay branch-free).
    const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float e = p * r * r + r + 1.0f;
    const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return e * scale;
}

inline float sigmoid(float g) { return 1.0f / (1.0f + exp_approx(-g)); }

// Sixteen fp32 lanes as one GCC vector: the running maxima below stay in vector registers in
// every clone, where the same loop over an array of sixteen floats GCC leaves scalar (vmaxss).
typedef float Lanes16 __attribute__((vector_size(64)));

// The largest of n fp32 values, at least `start` (NaNs skipped).
__attribute__((always_inline)) inline float row_max(const float* x, std::int64_t n, float start) {
    Lanes16 hi;
    for (int l = 0; l < 16; ++l) hi[l] = start;
    std::int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        Lanes16 v;
        std::memcpy(&v, x + j, sizeof v);
        hi = v > hi ? v : hi;
    }
    float m = start;
    for (; j < n; ++j) m = x[j] > m ? x[j] : m;
    for (int l = 0; l < 16; ++l) m = hi[l] > m ? hi[l] : m;
    return m;
}

// The same over bf16 values, widened through an fp32 buffer (exact).
__attribute__((always_inline)) inline float row_max(const std::uint16_t* x, std::int64_t n, float start) {
    float buf[256];
    float m = start;
    for (std::int64_t j0 = 0; j0 < n; j0 += 256) {
        const std::int64_t c = std::min<std::int64_t>(256, n - j0);
        for (std::int64_t k = 0; k < c; ++k) buf[k] = ld(x + j0 + k);
        m = row_max(buf, c, m);
    }
    return m;
}

// Σ of n fp32 values in sixteen running sums (vectorised; the order is fixed, so the bits do not
// depend on the CPU width).
__attribute__((always_inline)) inline float row_sum(const float* e, std::int64_t n) {
    float acc[16] = {};
    std::int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int l = 0; l < 16; ++l) acc[l] += e[j + l];
    float s = 0;
    for (; j < n; ++j) s += e[j];
    for (float a : acc) s += a;
    return s;
}

// Rows go through fp32 buffers of kChunk values, one simple loop each (widen, compute, narrow):
// GCC vectorises each, where one loop doing all three for bf16 it leaves scalar.
constexpr std::int64_t kChunk = 256;

template <typename T>
__attribute__((always_inline)) inline void widen(const T* src, float* dst, std::int64_t n) {
    for (std::int64_t k = 0; k < n; ++k) dst[k] = ld(src + k);
}
template <typename T>
__attribute__((always_inline)) inline void narrow(const float* src, T* dst, std::int64_t n) {
    for (std::int64_t k = 0; k < n; ++k) st(dst + k, src[k]);
}

}  // namespace wingspan::train::row_math
