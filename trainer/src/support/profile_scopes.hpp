#pragma once
// Named ranges of a training step for libtorch's profiler (issue 35: where a step's time goes).
// WINGSPAN_PROFILE_SCOPE(name) is libtorch's RECORD_FUNCTION: with no profiler on it costs one
// thread-local check and records nothing, so the scopes stay in every build. With
// WINGSPAN_PROFILE_TRACE=<file> (step_trace.hpp) they appear in the chrome trace beside
// libtorch's own ops, and bench/trainer/step_profile.py sums the time spent in each.
//
// The names are a contract with step_profile.py's category table: rename both together.
#include <ATen/record_function.h>

namespace wingspan::train::profile {

// The whole optimizer step (every micro-batch, backward and the update) and its three phases.
inline constexpr const char* kTrainStep = "wingspan::train_step";
inline constexpr const char* kForward = "wingspan::forward";
inline constexpr const char* kBackward = "wingspan::backward";
inline constexpr const char* kOptimizer = "wingspan::optimizer";

// Our own matrix products (kernels_gemm.hpp): one product, and a batch of them.
inline constexpr const char* kGemm = "wingspan::gemm";
inline constexpr const char* kGemmBatched = "wingspan::gemm_batched";

// The fused element-wise kernels (kernels_fused.hpp), each way.
inline constexpr const char* kRmsNorm = "wingspan::rms_norm";
inline constexpr const char* kRmsNormBackward = "wingspan::rms_norm_backward";
inline constexpr const char* kSwiGlu = "wingspan::swiglu";
inline constexpr const char* kSwiGluBackward = "wingspan::swiglu_backward";
inline constexpr const char* kRotary = "wingspan::rotary";
inline constexpr const char* kRotaryBackward = "wingspan::rotary_backward";

// The model's attention (forward; its backward runs as libtorch's autograd nodes), and its masked
// softmax each way (kernels_softmax.hpp).
inline constexpr const char* kAttention = "wingspan::attention";
inline constexpr const char* kSoftmax = "wingspan::softmax";
inline constexpr const char* kSoftmaxBackward = "wingspan::softmax_backward";
// The head's product, log-softmax and loss (model.cpp's fused head), each way.
inline constexpr const char* kLoss = "wingspan::loss";
inline constexpr const char* kLossBackward = "wingspan::loss_backward";

// The optimizer's two passes: the gradient norm for clipping, and AdamW's update.
inline constexpr const char* kGradNorm = "wingspan::grad_norm";
inline constexpr const char* kAdamW = "wingspan::adamw";

}  // namespace wingspan::train::profile

// Records the rest of the enclosing block as `name` (one per block: the macro declares `guard`).
#define WINGSPAN_PROFILE_SCOPE(name) RECORD_FUNCTION(name, c10::ArrayRef<const c10::IValue>{})
