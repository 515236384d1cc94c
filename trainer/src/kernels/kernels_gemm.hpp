#pragma once
// Matrix products on the CPU through oneDNN's sgemm (the library libtorch itself loads), for
// fp32 and for bf16 operands.
//
// Why: on a CPU without bf16 hardware (no AVX512-BF16, no AMX) libtorch 1.13's bf16 matmul runs
// an emulated oneDNN kernel at a few GFLOP/s, and its fp32 matmul goes to the system BLAS,
// which Debian's OpenBLAS may run with a generic SSE kernel when it does not recognise the CPU
// model. oneDNN's sgemm picks its AVX-512/AVX2 kernel from the CPU's flags and runs 5–10× faster.
//
// bf16 operands are computed as bf16-mixed defines them (bf16 inputs, fp32 accumulation, the
// result rounded once to bf16), on one of two paths (Bf16Path):
// - emulated: tiles of the operands are widened to fp32 into a small per-thread scratch and
//   multiplied by sgemm (any x86-64 CPU);
// - hardware: oneDNN's bf16 gemm (dnnl_gemm_bf16bf16f32: AVX512-BF16 or AMX kernels) multiplies
//   the bf16 operands as stored.
// Either way the fp32 tile of the result is rounded into the output, in a per-thread scratch (at
// most kScratchFloats floats, allocated once per thread, outside the tensor allocator like any
// BLAS's packing buffers; oneDNN's gemm packs into malloc'd buffers of its own). Each pool thread
// computes its own stripe of the output in one parallel region per product. No tensor is
// allocated on either path, so the measured memory of a run is the same on every CPU: libtorch's
// own bf16 matmul (a oneDNN primitive) takes reorder and scratchpad buffers from the tensor
// allocator, which is why it is not used.
#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace wingspan::train::kernels {

// Largest tile sizes of the bf16 path (K is not cut up to kTileK) and the floats of per-thread
// scratch they need (2.75 MiB).
inline constexpr std::int64_t kTileM = 256, kTileN = 512, kTileK = 768;
inline constexpr std::size_t kScratchFloats = kTileM * kTileK + kTileK * kTileN + kTileM * kTileN;
// The hardware path's fp32 result tile (4 MiB per thread): oneDNN's bf16 gemm packs its operands
// on each call, so fewer, larger calls pay that once per tile.
inline constexpr std::int64_t kHwTileM = 1024, kHwTileN = 1024;

// A bf16 product of fewer floating-point operations runs on the calling thread alone: waking
// the pool would cost more than it saves.
inline constexpr double kParallelFlops = 2e6;

// Whether oneDNN's sgemm was found in the process (libtorch's own copy).
bool fast_gemm_available();
// Whether this CPU multiplies bf16 in hardware (AVX512-BF16 or AMX-BF16).
bool cpu_has_bf16_hardware();
// The CPU's bf16 instruction set: "amx_bf16", "avx512_bf16", or "none".
const char* cpu_bf16_isa();

// How bf16 products are computed (see the top of this file).
enum class Bf16Path { Emulated, Hardware };
const char* to_string(Bf16Path p);
// The path in use: WINGSPAN_CPU_BF16=hardware|emulated when set (and valid), else hardware where
// the CPU has it and oneDNN's bf16 gemm is loaded, else emulated.
Bf16Path bf16_path();
// Empty, or why WINGSPAN_CPU_BF16 cannot be honoured (an unknown value; "hardware" on a CPU
// without bf16 instructions or without oneDNN's bf16 gemm). The trainer refuses to start then.
std::string bf16_path_error();
// Tests and benchmarks: compute bf16 products on `p` from now on (throws std::invalid_argument
// for the hardware path where it is not available).
void set_bf16_path(Bf16Path p);
// Whether the hardware path can run here.
bool bf16_hardware_path_available();

// Which library computes fp32 products: oneDNN's sgemm (striped over the pool threads) or the
// system BLAS through libtorch's mm (Debian: OpenBLAS, its own threads).
enum class Fp32Gemm { OneDnn, SystemBlas };
const char* to_string(Fp32Gemm g);
// The library in use: WINGSPAN_CPU_FP32_GEMM=onednn (the default) | blas | auto (the one a one-off
// measurement at first use finds clearly faster: oneDNN unless the BLAS is 1.3x faster).
Fp32Gemm fp32_gemm();
// Why (the default, the variable, or auto's measured rates of both).
std::string fp32_gemm_reason();
// Empty, or why WINGSPAN_CPU_FP32_GEMM cannot be honoured (an unknown value).
std::string fp32_gemm_error();

// Whether mm_out can compute out = a @ b: 2-D CPU tensors of one dtype (fp32 or bf16), each with
// a unit stride in one dimension, out contiguous.
bool handles(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b);
// out = a @ b (a: [M, K], b: [K, N], out: [M, N]); requires handles(out, a, b). accumulate:
// out += a @ b, the sum taken in fp32 and rounded once (a bf16 out is widened as the product's C).
void mm_out(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, bool accumulate = false);

// Whether bmm_out can compute out[i] = a[i] @ b[i]: tensors of 3 or more dimensions with equal
// leading (batch) sizes whose [M, K] slices handles() takes (out contiguous). The leading
// dimensions may have any strides: [B, H, T, D] views of a projection are not copied.
bool handles_batched(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b);
// out[i] = a[i] @ b[i] (a: [..., M, K], b: [..., K, N], out: [..., M, N]); requires handles_batched.
// The products are shared among the pool threads in one parallel region, each on one thread
// (attention's per-head products are too small to split).
void bmm_out(at::Tensor& out, const at::Tensor& a, const at::Tensor& b);

// One operand of a product as a gemm takes it: where op(X)[0, 0] lies, whether the storage holds
// op(X) ('N') or its transpose ('T'), and the storage's row stride. For products over parts of
// tensors (kernels_band.cpp: attention's causal blocks).
struct GemmOperand {
    const char* data = nullptr;   // op(X)[0, 0]
    char trans = 'N';
    std::int64_t ld = 0;
    std::int64_t item = 4;   // bytes per element

    // op(X)[r, c] as an operand of the same kind.
    GemmOperand at(std::int64_t r, std::int64_t c) const {
        GemmOperand o = *this;
        o.data += (trans == 'N' ? r * ld + c : c * ld + r) * item;
        return o;
    }
};

// Slice i (row-major over the leading dimensions) of a tensor bmm_out takes (handles_batched).
GemmOperand gemm_operand(const at::Tensor& t, std::int64_t i);

// C[M, N] = op(A) op(B) (+ C when accumulate) on the calling thread: c is C[0, 0] in storage of
// row stride ldc, of the operands' dtype (fp32, or bf16 on the path in use, summed in fp32 and
// rounded once into C).
void gemm_on_this_thread(at::ScalarType dtype, const GemmOperand& a, const GemmOperand& b, char* c, std::int64_t ldc,
                         std::int64_t M, std::int64_t N, std::int64_t K, bool accumulate);

// The same for bf16 operands into an fp32 C (row stride ldc), not rounded: a caller summing
// several products rounds the sum once.
void bf16_gemm_fp32_out_on_this_thread(const GemmOperand& a, const GemmOperand& b, float* c, std::int64_t ldc,
                                       std::int64_t M, std::int64_t N, std::int64_t K, bool accumulate);

}  // namespace wingspan::train::kernels
