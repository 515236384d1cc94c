#include "optim/optimizer_in_backward.hpp"

#include <stdexcept>
#include <utility>

namespace wingspan::train {

StepInBackward::StepInBackward(std::vector<at::Tensor> params, std::function<void(std::size_t)> step)
    : params_(std::move(params)), step_(std::move(step)), done_(params_.size(), 0) {
    for (std::size_t i = 0; i < params_.size(); ++i)
        accumulators_.push_back(hook_gradient_accumulated(params_[i], [this, i] { on_accumulated(i); },
                                                          "--optimizer-in-backward"));
}

void StepInBackward::begin_backward() {
    std::fill(done_.begin(), done_.end(), 0);
    stepped_ = 0;
    twice_.clear();
    armed_ = true;
}

void StepInBackward::end_backward() {
    armed_ = false;
    if (!twice_.empty())
        throw std::logic_error("--optimizer-in-backward: parameter " + twice_ +
                               " received its gradient in two parts; its step would have used the first alone");
}

void StepInBackward::on_accumulated(std::size_t i) {
    if (!armed_) return;
    if (done_[i]) {
        // Each parameter is used once per forward (the tied head's part is handed to the
        // embedding, model.cpp EmbeddingFn), so a second accumulation is a bug to report.
        if (twice_.empty()) twice_ = std::to_string(i);
        return;
    }
    done_[i] = 1;
    ++stepped_;
    step_(i);
}

}  // namespace wingspan::train
