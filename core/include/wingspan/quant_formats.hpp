#pragma once
// Pre-quantized checkpoint formats that a serving engine loads as stored (issue 30 item 3): the
// bytes of one quantized linear of `out` × `in` weights, tensor by tensor, as the checkpoint holds
// them and as vLLM's loaders create them before the safetensors are copied in:
//   AWQ 4-bit, GEMM layout (AutoAWQ awq/modules/linear/gemm.py WQLinear_GEMM; vLLM
//   vllm/model_executor/layers/quantization/awq.py AWQLinearMethod.create_weights):
//     qweight int32 [in, out/8] (8 codes a word along the output), qzeros int32 [in/g, out/8],
//     scales fp16 [in/g, out].
//   GPTQ, 4 or 8 bits (AutoGPTQ / GPTQModel QuantLinear; vLLM quantization/gptq.py
//   GPTQLinearMethod.create_weights): qweight int32 [in·bits/32, out] (packed along the input),
//     qzeros int32 [ceil(in/g), out·bits/32], scales fp16 [ceil(in/g), out], g_idx int32 [in]
//     (each input row's group; act-order only permutes it).
//   fp8 e4m3 (vLLM quantization/utils/fp8_utils.py create_fp8_weight_parameter /
//   create_fp8_scale_parameter, used by fp8.py and compressed_tensors_w8a8_fp8.py): weight
//     float8_e4m3fn [out, in], one byte a weight; weight_scale fp32 per tensor (with an fp32
//     input_scale in static checkpoints), per output channel [out, 1], or per 128 × 128 block
//     [ceil(out/128), ceil(in/128)] (DeepSeek-V3 / Qwen3-FP8's weight_scale_inv).
// Embeddings, the LM head, norms and biases stay 16-bit in all of them, and so do a mixture of
// experts' router and shared-expert gate (AutoAWQ's modules_to_not_convert, GPTQModel's per-model
// module lists quantize the experts and projections only).
#include <cstdint>
#include <string>

#include "nf4.hpp"
#include "setup.hpp"

namespace wingspan {

// AWQ and GPTQ's group_size when a checkpoint does not say otherwise (AutoAWQ q_group_size 128,
// GPTQModel QuantizeConfig group_size 128).
inline constexpr std::int64_t kDefaultQuantGroup = 128;
inline constexpr std::int64_t kFp8ScaleBlock = 128;   // block fp8: a scale per 128 × 128 weights

// True for the formats a checkpoint is stored in (AWQ, GPTQ, fp8), false for none and the formats
// a framework quantizes to at load (NF4, int8).
bool is_checkpoint_format(Quantization q);

// True when `name` is one of those formats as --quant spells it ("awq", "fp8-block"); never throws.
bool names_checkpoint_format(const std::string& name);

// One linear's tensors in checkpoint format `q`: packed_bytes the codes, constant_bytes the
// scales, zero points and g_idx; blocks the groups (or scales) along the input. `group` is the
// AWQ/GPTQ group size (-1: one group over the whole input); the fp8 kinds ignore it.
QuantLayout checkpoint_layout(Quantization q, std::int64_t out, std::int64_t in, std::int64_t group);

// Bytes of one code: 0.5 for the 4-bit formats, 1 for GPTQ 8-bit and fp8.
double checkpoint_code_bytes(Quantization q);

// "AWQ 4-bit (GEMM, group 128)" / "fp8 e4m3, per-channel fp32 scales".
std::string checkpoint_format_label(Quantization q, std::int64_t group);

// What one weight costs with its constants, in words: "0.5 B code + (2 B fp16 scale + 0.5 B packed
// zero) per 128 weights of a column = 0.5195 B a weight".
std::string checkpoint_format_formula(Quantization q, std::int64_t group);

// Whether a checkpoint format stores tensor group g quantized: the projections and experts, not
// the embeddings, head, norms, biases, router or shared-expert gate.
bool quantized_in_checkpoint(const TensorGroup& g);
// Bytes of all of group g's tensors (every copy of it) in checkpoint format q: its layout where
// the format quantizes it, else `plain_bytes` a value.
std::int64_t checkpoint_group_bytes(const TensorGroup& g, Quantization q, std::int64_t group, int plain_bytes);

// Throws InputError unless `group` is -1 (GPTQ only) or 1 .. 2^20.
void require_valid_quant_group(Quantization q, std::int64_t group);

}  // namespace wingspan
