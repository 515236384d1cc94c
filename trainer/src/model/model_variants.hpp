#pragma once
// Gemma 1, Gemma 2 and Phi-3 on the Llama-family decoder of model.hpp: what their config.json
// says, how their tensors are named, and the few pieces of their forward pass that differ
// (GeGLU, soft-capping, sliding-window masks, fused projections). model.cpp calls these from
// small hooks so that the shared compute path stays one.
#include <ATen/ATen.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "wingspan/architecture.hpp"

namespace wingspan::train {

// model.hpp's; not included, since model.cpp includes this file for its hooks.
struct ModelConfig;
struct Layer;

// Fills the architecture-specific fields of `c` from config.json (after the common ones);
// throws InputError for what wingspan-train cannot run faithfully (e.g. Phi-3's longrope).
void read_variant_config(const nlohmann::json& j, ModelConfig& c);

// Rewrites the Llama-style tensor list for fused projections (Phi-3) and Gemma 2's extra norms.
void adjust_expected_tensors(const ModelConfig& c,
                             std::vector<std::pair<std::string, std::vector<std::int64_t>>>& tensors);

// Phi-3: turns q into qkv_proj and gate into gate_up_proj (k, v, up unused); a LoRA target on
// any of q/k/v (gate/up) adapts the fused projection, as PEFT's target_modules would.
void configure_fused_layer(const ModelConfig& c, Layer& L, std::set<LinearRole>& targets);

// The MLP's gate activation (SiLU, GELU tanh approximation, or exact GELU).
at::Tensor gate_activation(const ModelConfig& c, const at::Tensor& gate);

// cap · tanh(x / cap).
at::Tensor soft_cap(const at::Tensor& x, double cap);

// `causal` ([T, past + T], additive) with keys further than `window` positions behind their
// query masked too: query past + t sees keys j with past + t - j < window.
at::Tensor sliding_window_mask(const at::Tensor& causal, std::int64_t past, std::int64_t window);

}  // namespace wingspan::train
