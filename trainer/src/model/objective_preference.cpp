#include "model/objective_preference.hpp"

#include <torch/csrc/autograd/custom_function.h>

#include "kernels/device_ops.hpp"
#include "kernels/kernels_loss.hpp"
#include "model/linear.hpp"
#include "memory/memory.hpp"

namespace wingspan::train {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

// lm_head_loss (model.cpp) with a sum per row instead of one mean: the same logits, row pass
// (kernels::cross_entropy_rows) and probabilities kept for backward, so the logits_loss component is
// SFT's for the same rows.
struct SequenceLogpFn : public torch::autograd::Function<SequenceLogpFn> {
    static Variable forward(AutogradContext* ctx, const Variable& hidden, const Variable& weight, const Variable& labels,
                            std::int64_t rows, at::Tensor* tied_grad) {
        mem::Scope scope(Component::LogitsLoss);
        at::Tensor valid = labels.ne(-100);
        at::Tensor safe = labels.clamp_min(0).unsqueeze(1);
        auto [probs, lse, picked] = kernels::cross_entropy_rows(ops::matmul(hidden, weight.t()), safe);   // [N, V], [N], [N]
        at::Tensor sums = ((picked - lse) * valid).view({rows, -1}).sum(1);                              // [rows]
        ctx->save_for_backward({hidden, weight, probs, safe, valid});
        ctx->saved_data["tied_grad"] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(tied_grad));
        return sums;
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        mem::Scope scope(Component::LogitsLoss);
        auto s = ctx->get_saved_variables();
        const at::Tensor& hidden = s[0];
        const at::Tensor& weight = s[1];
        at::Tensor d = s[2];   // probabilities p, turned into d sum / d logits = g·(onehot − p) in place
        const std::int64_t rows = grads[0].size(0);
        at::Tensor per_token = grads[0].to(d.scalar_type()).neg().unsqueeze(1).expand({rows, d.size(0) / rows}).reshape({-1});
        const at::Tensor dl = kernels::logits_gradient(d, s[3], s[4].to(d.scalar_type()) * per_token, hidden.scalar_type());
        auto* tied = reinterpret_cast<at::Tensor*>(static_cast<std::intptr_t>(ctx->saved_data["tied_grad"].toInt()));
        const HeadGrads g = head_backward(dl, hidden, weight, ctx->needs_input_grad(0), ctx->needs_input_grad(1), tied);
        const at::Tensor& dh = g.hidden;
        const at::Tensor& dw = g.weight;
        return {dh, dw, Variable(), Variable(), Variable()};
    }
};

double mean_of(const at::Tensor& t) { return t.mean().item<double>(); }

PreferenceMetrics rewards_metrics(const at::Tensor& chosen_rewards, const at::Tensor& rejected_rewards) {
    PreferenceMetrics m;
    m.chosen_reward = mean_of(chosen_rewards);
    m.rejected_reward = mean_of(rejected_rewards);
    m.margin = mean_of(chosen_rewards - rejected_rewards);
    m.accuracy = mean_of((chosen_rewards > rejected_rewards).to(at::kDouble));
    return m;
}

}  // namespace

at::Tensor sequence_logps_of_hidden(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& labels,
                                    std::int64_t rows, at::Tensor* tied_grad) {
    return SequenceLogpFn::apply(hidden, weight, labels, rows, tied_grad);
}

at::Tensor sequence_logps(const Model& model, const at::Tensor& ids, const at::Tensor& labels, bool checkpointing) {
    if (model.config().final_softcap > 0)
        throw std::invalid_argument("DPO and ORPO are not implemented for a soft-capped head (Gemma 2)");
    at::Tensor h = model.hidden_states(ids, checkpointing);
    const std::int64_t H = h.size(-1);
    return SequenceLogpFn::apply(h.reshape({-1, H}), model.head(), labels.reshape({-1}), ids.size(0),
                                 model.tied_grad_slot());
}

at::Tensor reference_logps(const Model& model, const at::Tensor& ids, const at::Tensor& labels) {
    at::NoGradGuard no_grad;
    const std::int64_t rows = ids.size(0), T = ids.size(1);
    at::Tensor h = model.hidden_states(ids, false);
    mem::Scope scope(Component::LogitsLoss);
    at::Tensor logits = ops::matmul(h.reshape({-1, h.size(-1)}), model.head().t());   // [rows·T, V]
    h.reset();
    at::Tensor out = at::empty({rows}, at::TensorOptions().dtype(at::kFloat).device(ids.device()));
    for (std::int64_t r = 0; r < rows; ++r) {
        at::Tensor lab = labels.select(0, r);
        at::Tensor ls = at::log_softmax(logits.narrow(0, r * T, T), -1);   // one row's, in the logits' dtype
        at::Tensor picked = ls.gather(1, lab.clamp_min(0).unsqueeze(1)).squeeze(1).to(at::kFloat);
        ls.reset();
        out.select(0, r).copy_((picked * lab.ne(-100)).sum());
    }
    return out;
}

at::Tensor scored_tokens(const at::Tensor& labels) { return labels.ne(-100).sum(1).to(at::kFloat); }

void PreferenceMetrics::add(const PreferenceMetrics& o, double w) {
    loss += w * o.loss;
    chosen_reward += w * o.chosen_reward;
    rejected_reward += w * o.rejected_reward;
    margin += w * o.margin;
    accuracy += w * o.accuracy;
    chosen_logps += w * o.chosen_logps;
    rejected_logps += w * o.rejected_logps;
    nll += w * o.nll;
    log_odds_ratio += w * o.log_odds_ratio;
    log_odds_chosen += w * o.log_odds_chosen;
}

nlohmann::json PreferenceMetrics::to_json(Objective objective) const {
    nlohmann::json j = {{"v", 1},
                        {"objective", to_string(objective)},
                        {"reward_margin", margin},
                        {"reward_accuracy", accuracy},
                        {"chosen_reward", chosen_reward},
                        {"rejected_reward", rejected_reward},
                        {"chosen_logps", chosen_logps},
                        {"rejected_logps", rejected_logps}};
    if (objective == Objective::Orpo) {
        j["nll_loss"] = nll;
        j["log_odds_ratio"] = log_odds_ratio;
        j["log_odds_chosen"] = log_odds_chosen;
    }
    return j;
}

PreferenceLoss dpo_loss(const at::Tensor& policy, const at::Tensor& reference, double beta) {
    const std::int64_t B = policy.size(0) / 2;
    const at::Tensor ref = reference.detach().to(policy.device());
    const at::Tensor chosen_ratio = policy.narrow(0, 0, B) - ref.narrow(0, 0, B);
    const at::Tensor rejected_ratio = policy.narrow(0, B, B) - ref.narrow(0, B, B);
    PreferenceLoss out;
    out.loss = -at::log_sigmoid(beta * (chosen_ratio - rejected_ratio)).mean();
    out.metrics = rewards_metrics(beta * chosen_ratio.detach(), beta * rejected_ratio.detach());
    out.metrics.loss = out.loss.item<double>();
    out.metrics.chosen_logps = mean_of(policy.detach().narrow(0, 0, B));
    out.metrics.rejected_logps = mean_of(policy.detach().narrow(0, B, B));
    return out;
}

PreferenceLoss orpo_loss(const at::Tensor& policy, const at::Tensor& tokens, double beta) {
    const std::int64_t B = policy.size(0) / 2;
    const at::Tensor n = tokens.to(policy.device());
    const at::Tensor chosen = policy.narrow(0, 0, B) / n.narrow(0, 0, B);     // average_log_prob=True
    const at::Tensor rejected = policy.narrow(0, B, B) / n.narrow(0, B, B);
    const at::Tensor log_odds =
        (chosen - rejected) - (at::log1p(-at::exp(chosen)) - at::log1p(-at::exp(rejected)));
    const at::Tensor nll = -policy.narrow(0, 0, B).sum() / n.narrow(0, 0, B).sum();   // chosen tokens' mean NLL
    PreferenceLoss out;
    const at::Tensor ratio = at::log_sigmoid(log_odds);
    out.loss = nll - (beta * ratio).mean();
    out.metrics = rewards_metrics(beta * chosen.detach(), beta * rejected.detach());
    out.metrics.loss = out.loss.item<double>();
    out.metrics.chosen_logps = mean_of(chosen.detach());
    out.metrics.rejected_logps = mean_of(rejected.detach());
    out.metrics.nll = nll.item<double>();
    out.metrics.log_odds_ratio = mean_of(ratio.detach());
    out.metrics.log_odds_chosen = mean_of(log_odds.detach());
    return out;
}

}  // namespace wingspan::train
