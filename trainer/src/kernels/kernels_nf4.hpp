#pragma once
// NF4 dequantization on the CPU: out[i] = level[code(i)] * absmax[i / 64], rounded to the output
// dtype, for the frozen weights of QLoRA (every forward and backward of each NF4 linear).
//
// Why a kernel of its own: the element-by-element loop (a float multiply and a bf16 rounding per
// element) was ~17 % of a QLoRA step. The value of an element depends only on its 4-bit code and
// its block, so each 64-element block's 16 possible outputs are computed and rounded once, and
// the codes then select from them: on AVX-512BW CPUs 32 bf16 (or 16 fp32) outputs per
// permute instruction, elsewhere a table lookup per element. Both give the bits the
// element-wise loop gives (the same fp32 product, the same round-to-nearest-even).
//
// Layout (core's nf4_layout): element i's code is the high nibble of codes[i / 2] for even i, the
// low nibble for odd i; blocks of kNf4BlockSize elements share one absmax.
#include <cstdint>

namespace wingspan::train::kernels {

// Whether the AVX-512BW path is used on this CPU.
bool nf4_simd_available();

// n elements into out (bf16 bits / fp32); absmax has ceil(n / 64) entries. Threads over blocks
// with at::parallel_for. simd = false forces the portable path (tests compare the two).
void nf4_dequantize_bf16(const std::uint8_t* codes, const float* absmax, std::int64_t n, std::uint16_t* out,
                         bool simd = true);
void nf4_dequantize_f32(const std::uint8_t* codes, const float* absmax, std::int64_t n, float* out,
                        bool simd = true);

}  // namespace wingspan::train::kernels
