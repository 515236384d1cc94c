#pragma once
// A callback run once a parameter's gradient has been accumulated into its .grad: a post hook on
// the parameter's AccumulateGrad node, the way torch's own DDP reducer hooks in, and one that both
// libtorch 1.13 and 2.x have (1.13 has no Tensor::register_post_accumulate_grad_hook). It runs
// after every backward node that makes a part of the gradient, whatever order the engine runs the
// nodes in. Used by the data-parallel sync and by --optimizer-in-backward.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace wingspan::train {

// A parameter's AccumulateGrad node, as torch hands it out: a std::shared_ptr in 1.13, a
// c10::intrusive_ptr in 2.x (torch/csrc/autograd/variable.h, impl::grad_accumulator). The caller
// keeps it: the tensor holds its node weakly and makes a new one, without the hook, once the
// graph that held it is freed.
using AccumulatorRef = decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));

// Adds `on_accumulated` to `param`'s AccumulateGrad node; `user` names the feature in the error
// for a parameter that is not a leaf requiring grad.
inline AccumulatorRef hook_gradient_accumulated(const at::Tensor& param, std::function<void()> on_accumulated,
                                                const std::string& user) {
    AccumulatorRef acc = torch::autograd::impl::grad_accumulator(param);
    if (!acc) throw std::invalid_argument(user + " needs leaf parameters that require grad");
    acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [fn = std::move(on_accumulated)](const torch::autograd::variable_list& outputs,
                                         const torch::autograd::variable_list&) {
            fn();
            return outputs;
        }));
    return acc;
}

}  // namespace wingspan::train
