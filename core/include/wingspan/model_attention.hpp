#pragma once
// The attention a plan runs with for a model, where the model decides it over what was asked.
// The memory model and the speed model read it, so the two agree; `wingspan plan` prints it
// where it differs from what was asked.
#include "wingspan/architecture.hpp"
#include "wingspan/setup.hpp"

namespace wingspan {

// Soft-capped attention scores (Gemma 2) are a tensor: SDPA's kernels cannot cap them, so the
// scores are computed explicitly (transformers 5.25 modeling_gemma2.py: _supports_sdpa = False, the
// default is eager; LitGPT 0.5.13 model.py line 582 "with softcapping we cannot use SDPA";
// wingspan-train's Model::attention takes its explicit path). Flash attention 2 caps in its kernel.
inline Attention model_attention(const Architecture& arch, Attention asked) {
    return arch.attn_logit_softcap > 0 && asked == Attention::Sdpa ? Attention::Eager : asked;
}

}  // namespace wingspan
