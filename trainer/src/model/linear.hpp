#pragma once
// The decoder's linears: dense (frozen or trainable) or NF4-quantized weights (double-quantized,
// 64-element blocks, core's nf4_layout), optional bias, LoRA adapters.
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "wingspan/architecture.hpp"

namespace wingspan::train {

// NF4 with double quantization, laid out exactly as wingspan::nf4_layout(n, true).
struct Nf4Weight {
    at::Tensor codes;         // uint8 [(n+1)/2]: two 4-bit codes per byte, first element in the high nibble
    at::Tensor block_codes;   // uint8 [blocks]: absmax per 64-element block, 8-bit quantized
    at::Tensor group_scales;  // fp32 [ceil(blocks/256)]: scale of each group of 256 block codes
    at::Tensor mean;          // fp32 [1]: mean absmax, subtracted before the 8-bit quantization
    std::vector<std::int64_t> shape;
    std::int64_t numel = 0;

    static Nf4Weight quantize(const at::Tensor& w);   // on the CPU
    void to(const c10::Device& d);                    // moves the four tensors, components kept
    at::Tensor dequantize(at::ScalarType dtype) const;   // full tensor of `shape`
    at::Tensor absmax() const;                           // fp32 [blocks], as dequantization uses it
    bool defined() const { return codes.defined(); }
    std::int64_t data_bytes() const;                     // codes
    std::int64_t constant_bytes() const;                 // block_codes + group_scales + mean
};

// y = x W^T with W dequantized from NF4 on the fly (forward and again in backward: no
// dequantized copy outlives the op). Differentiable with respect to x only.
at::Tensor nf4_linear(const at::Tensor& x, const Nf4Weight& w, at::ScalarType compute);

struct Linear {
    std::string name;                  // HF prefix, e.g. "model.layers.0.self_attn.q_proj"
    LinearRole role = LinearRole::None;
    std::int64_t in = 0, out = 0;
    at::Tensor weight, bias;           // weight undefined when quantized
    Nf4Weight qweight;
    at::Tensor lora_a, lora_b;         // [r, in], [out, r]
    double lora_scaling = 0, lora_dropout = 0;
    at::ScalarType compute = at::kFloat;
    bool adapter_on = true;            // false: the adapter is skipped (the base linear alone)

    at::Tensor forward(const at::Tensor& x) const;
    bool has_lora() const { return lora_a.defined(); }
};

// a @ b into a new tensor of the gradients component (a weight's gradient); a 16-bit matmul's
// own packing buffers stay working memory.
at::Tensor weight_grad_mm(const at::Tensor& a, const at::Tensor& b);

// The LM head's backward from the gradient of its logits `dl` (rows × vocab): the hidden states'
// gradient (an activation) where wanted, and the head weight's, which for a tied head (`tied` set)
// is left in *tied for the embedding to add its rows into in place (one vocab × hidden gradient, not
// two summed ones) and returned undefined. Shared by the SFT loss and the preference log-probs.
struct HeadGrads {
    at::Tensor hidden, weight;
};
HeadGrads head_backward(const at::Tensor& dl, const at::Tensor& hidden, const at::Tensor& weight, bool want_hidden,
                        bool want_weight, at::Tensor* tied);

}  // namespace wingspan::train
