#pragma once
// --optimizer-in-backward (issue 25): each trainable tensor's optimizer step runs as soon as its
// gradient is complete, inside backward, and the gradient is freed at once, so one gradient is
// alive at a time (a tied embedding's from the head's backward until the embedding completes it).
// This is torchtune's technique (torchtune training/memory.py register_optim_in_bwd_hooks: a
// post-accumulate-grad hook calls the parameter's optimizer step and zero_grad).
//
// The step runs in a post hook on each parameter's AccumulateGrad node (grad_hooks.hpp): once the
// gradient is in .grad, after every backward node that makes a part of it, so no node still to
// run reads the weight the step changes. The trainer's hand-written gradients (the fused kernels, the LM head's
// head_backward, the tied embedding's in-place handoff) are returned through their autograd
// nodes, so they reach AccumulateGrad like any other.
#include <ATen/ATen.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "optim/grad_hooks.hpp"

namespace wingspan::train {

class StepInBackward {
public:
    // `step(i)` updates params[i] from its .grad (the caller frees the gradient afterwards).
    StepInBackward(std::vector<at::Tensor> params, std::function<void(std::size_t)> step);
    // Arms the hooks for one backward (outside it a gradient is never stepped).
    void begin_backward();
    // Ends it; throws std::logic_error if a parameter's gradient was accumulated twice (its step
    // would have run on a partial gradient).
    void end_backward();
    std::size_t stepped() const { return stepped_; }

private:
    void on_accumulated(std::size_t i);

    std::vector<at::Tensor> params_;
    std::function<void(std::size_t)> step_;
    std::vector<AccumulatorRef> accumulators_;   // kept alive with their hooks
    std::vector<char> done_;   // stepped in this backward
    std::size_t stepped_ = 0;
    std::string twice_;        // a parameter accumulated twice in this backward
    bool armed_ = false;
};

}  // namespace wingspan::train
