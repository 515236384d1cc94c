#include "kernels/kernels_nf4.hpp"

#include <ATen/Parallel.h>
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "wingspan/nf4.hpp"

// GCC 12's AVX-512 headers start some intrinsics from a deliberately undefined register
// (`__m512 __Y = __Y;`), which -Wmaybe-uninitialized reports in every caller: a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace wingspan::train::kernels {

namespace {

static_assert(kNf4BlockSize == 64, "the vector path handles 64-element blocks (32 code bytes)");

// Blocks per parallel chunk: 8,192 elements, enough work to amortise a thread hand-off.
constexpr std::int64_t kGrainBlocks = 128;

// fp32 -> bf16 bits, rounded to nearest even, NaN kept a (quiet) NaN: what c10::BFloat16(float) does.
inline std::uint16_t to_bf16_bits(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    if ((b & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    return static_cast<std::uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

inline std::uint16_t to_out(float f, std::uint16_t*) { return to_bf16_bits(f); }
inline float to_out(float f, float*) { return f; }

// Elements [first, end) of one block, by table lookup (any CPU; also every partial block).
template <typename T>
void block_portable(const std::uint8_t* codes, float absmax, std::int64_t first, std::int64_t end, T* out) {
    T lut[16];
    for (int k = 0; k < 16; ++k) lut[k] = to_out(kNf4Levels[k] * absmax, out);
    for (std::int64_t i = first; i < end; i += 2) {
        const std::uint8_t byte = codes[i / 2];
        out[i] = lut[byte >> 4];
        if (i + 1 < end) out[i + 1] = lut[byte & 0xF];
    }
}

// The block's 16 outputs, level[k] * absmax in fp32 (the element-wise loop's product).
__attribute__((target("avx512f,avx512bw"))) inline __m512 scaled_levels(float absmax) {
    return _mm512_mul_ps(_mm512_loadu_ps(kNf4Levels.data()), _mm512_set1_ps(absmax));
}

// 16 code bytes -> 32 word indices in element order: dword j = high nibble | low nibble << 16.
__attribute__((target("avx512f,avx512bw"))) inline __m512i word_indices(const std::uint8_t* bytes16) {
    const __m512i d = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes16)));
    return _mm512_or_si512(_mm512_srli_epi32(d, 4), _mm512_slli_epi32(_mm512_and_si512(d, _mm512_set1_epi32(0xF)), 16));
}

__attribute__((target("avx512f,avx512bw"))) void blocks_bf16_avx512(const std::uint8_t* codes, const float* absmax,
                                                                     std::int64_t b0, std::int64_t b1,
                                                                     std::uint16_t* out) {
    const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i qnan = _mm512_set1_epi32(0x7fc0);
    for (std::int64_t b = b0; b < b1; ++b) {
        const __m512i bits = _mm512_castps_si512(scaled_levels(absmax[b]));
        // Round to nearest even: add 0x7fff plus the lowest kept bit, keep the high half.
        const __m512i rounding = _mm512_add_epi32(_mm512_and_si512(_mm512_srli_epi32(bits, 16), one), bias);
        __m512i r = _mm512_srli_epi32(_mm512_add_epi32(bits, rounding), 16);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, abs_mask), inf);
        r = _mm512_mask_mov_epi32(r, nan, qnan);
        // The 16 bf16 values as words 0..15 of a register (indices never exceed 15).
        const __m512i lut = _mm512_castsi256_si512(_mm512_cvtepi32_epi16(r));
        const std::uint8_t* c = codes + b * (kNf4BlockSize / 2);
        std::uint16_t* o = out + b * kNf4BlockSize;
        _mm512_storeu_si512(o, _mm512_permutexvar_epi16(word_indices(c), lut));
        _mm512_storeu_si512(o + 32, _mm512_permutexvar_epi16(word_indices(c + 16), lut));
    }
}

__attribute__((target("avx512f,avx512bw"))) void blocks_f32_avx512(const std::uint8_t* codes, const float* absmax,
                                                                    std::int64_t b0, std::int64_t b1, float* out) {
    // Element 2j is byte j's high nibble, 2j+1 its low one: interleave the two index vectors.
    const __m512i interleave = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i low4 = _mm512_set1_epi32(0xF);
    for (std::int64_t b = b0; b < b1; ++b) {
        const __m512 lut = scaled_levels(absmax[b]);
        const std::uint8_t* c = codes + b * (kNf4BlockSize / 2);
        float* o = out + b * kNf4BlockSize;
        for (int q = 0; q < 4; ++q) {   // 8 code bytes -> 16 outputs
            const __m512i d = _mm512_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c + 8 * q)));
            const __m512i idx = _mm512_permutex2var_epi32(_mm512_srli_epi32(d, 4), interleave, _mm512_and_si512(d, low4));
            _mm512_storeu_ps(o + 16 * q, _mm512_permutexvar_ps(idx, lut));
        }
    }
}

bool detect_simd() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"); }

template <typename T, typename VectorBlocks>
void dequantize(const std::uint8_t* codes, const float* absmax, std::int64_t n, T* out, bool simd,
                VectorBlocks vector_blocks) {
    const std::int64_t blocks = (n + kNf4BlockSize - 1) / kNf4BlockSize;
    const std::int64_t full = n / kNf4BlockSize;   // blocks with all 64 elements
    const bool vector = simd && nf4_simd_available();
    at::parallel_for(0, blocks, kGrainBlocks, [&](std::int64_t b0, std::int64_t b1) {
        std::int64_t b = b0;
        if (vector) {
            const std::int64_t e = std::min(b1, full);
            if (e > b) vector_blocks(codes, absmax, b, e, out);
            b = std::max(b, e);
        }
        for (; b < b1; ++b)
            block_portable(codes, absmax[b], b * kNf4BlockSize, std::min(n, (b + 1) * kNf4BlockSize), out);
    });
}

}  // namespace

bool nf4_simd_available() {
    static const bool has = detect_simd();
    return has;
}

void nf4_dequantize_bf16(const std::uint8_t* codes, const float* absmax, std::int64_t n, std::uint16_t* out,
                         bool simd) {
    dequantize(codes, absmax, n, out, simd, blocks_bf16_avx512);
}

void nf4_dequantize_f32(const std::uint8_t* codes, const float* absmax, std::int64_t n, float* out, bool simd) {
    dequantize(codes, absmax, n, out, simd, blocks_f32_avx512);
}

}  // namespace wingspan::train::kernels
