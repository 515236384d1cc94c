#pragma once
// fp32 values to the bytes of a GGUF tensor: f32, f16 and bf16 (round to nearest even, as
// ggml's GGML_FP32_TO_FP16 and numpy do), and ggml's reference quantizers for q8_0 and q4_0
// (ggml/src/ggml-quants.c: quantize_row_q8_0_ref, quantize_row_q4_0_ref). No torch.
#include <cstdint>
#include <string>

#include "gguf/gguf_writer.hpp"

namespace wingspan::train::gguf {

std::uint16_t fp16_bits(float x);
std::uint16_t bf16_bits(float x);
float fp16_value(std::uint16_t bits);

// `n` values (a whole number of the type's blocks) as the type's bytes, appended to `out`.
void encode(GgmlType type, const float* x, std::int64_t n, std::string& out);

// Decodes bytes of a q8_0/q4_0/f16/bf16/f32 tensor back to floats (for tests and tolerances).
void decode(GgmlType type, const std::uint8_t* data, std::int64_t n, float* out);

}  // namespace wingspan::train::gguf
