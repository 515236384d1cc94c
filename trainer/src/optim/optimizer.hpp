#pragma once
// AdamW one parameter tensor at a time, and fp16-mixed's dynamic loss scaling.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace wingspan::train {

// One trainable tensor's optimizer state: m and v in fp32 (bf16 in pure bf16), an fp32 master
// copy where the parameter is 16-bit and mixed precision is on.
struct ParamState {
    std::string name;
    at::Tensor param, master, m, v;
};

// One AdamW update of s.param from grad × gscale (bias-corrected for `step`, decoupled weight
// decay). On the CPU a single pass that allocates nothing; elsewhere the same with tensor ops.
void adamw_step(ParamState& s, const at::Tensor& grad, std::int64_t step, double lr, double wd, double gscale);
// Sum of squares of a CPU gradient, in double.
double grad_sumsq(const at::Tensor& grad);

// fp16-mixed: dynamic loss scaling, as PyTorch's GradScaler does it. The loss is multiplied by
// `scale` before backward so small fp16 gradients do not flush to zero; a step whose gradients
// hold an inf or NaN is skipped and the scale halved; after `growth_interval` good steps in a row
// the scale doubles.
struct LossScaler {
    bool enabled = false;
    double scale = 1.0;
    std::int64_t growth_interval = 2000;
    std::int64_t good_steps = 0;
    // Updates the scale after a step; returns false when the step must be skipped.
    bool update(bool finite) {
        if (!enabled) return true;
        if (!finite) {
            scale = std::max(scale / 2, 1.0 / 65536);
            good_steps = 0;
            return false;
        }
        if (++good_steps >= growth_interval) {
            scale *= 2;
            good_steps = 0;
        }
        return true;
    }
};


}  // namespace wingspan::train
