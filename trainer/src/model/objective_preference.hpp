#pragma once
// DPO and ORPO (issue 31): per-sequence log-probabilities of the completion tokens, the
// reference's log-probabilities, and the two losses with the metrics TRL logs. The math follows
// huggingface/trl f2cd577: trl/trainer/dpo_trainer.py (loss_type "sigmoid", line 1435; rewards,
// accuracies and margins, lines 1297-1322) and trl/experimental/orpo/orpo_trainer.py
// (odds_ratio_loss, line 673; loss = nll - mean(beta · logsigmoid(log_odds)), line 851).
#include <ATen/ATen.h>

#include <cstdint>

#include <nlohmann/json.hpp>

#include "model/model.hpp"
#include "wingspan/setup.hpp"

namespace wingspan::train {

// Sum over each row of log p(label) for labels != -100, in fp32, differentiable: [rows]. The
// logits, their fp32 upcast and their gradient are made exactly as SFT's loss makes them
// (lm_head_loss), so a row of DPO costs what a row of SFT does. ids, labels: int64 [rows, T].
at::Tensor sequence_logps(const Model& model, const at::Tensor& ids, const at::Tensor& labels, bool checkpointing);

// The same from final hidden states [N, H] and the head's weight [V, H] (N = rows · T; labels
// int64 [N]); tied_grad as lm_head_loss takes it. Differentiable in hidden and weight.
at::Tensor sequence_logps_of_hidden(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& labels,
                                    std::int64_t rows, at::Tensor* tied_grad = nullptr);

// The same sums without a graph, as TRL scores the reference: the logits of all rows in the
// compute dtype, then one row's log-softmax at a time (trl/trainer/utils.py selective_log_softmax).
// For a LoRA policy the caller switches its adapters off first.
at::Tensor reference_logps(const Model& model, const at::Tensor& ids, const at::Tensor& labels);

// Labels != -100 per row: [rows], fp32.
at::Tensor scored_tokens(const at::Tensor& labels);

// One micro-batch's preference metrics (means over its pairs).
struct PreferenceMetrics {
    double loss = 0;
    double chosen_reward = 0, rejected_reward = 0;   // DPO: β·(π − ref); ORPO: β·mean log p
    double margin = 0;                               // chosen − rejected reward
    double accuracy = 0;                             // share of pairs with chosen reward > rejected
    double chosen_logps = 0, rejected_logps = 0;     // the policy's (DPO: sums; ORPO: per-token means)
    double nll = 0, log_odds_ratio = 0, log_odds_chosen = 0;   // ORPO only (TRL's metric names)
    void add(const PreferenceMetrics& o, double weight);
    nlohmann::json to_json(Objective objective) const;
};

struct PreferenceLoss {
    at::Tensor loss;   // scalar, differentiable
    PreferenceMetrics metrics;
};

// policy, reference: [2B] (chosen rows first). -logsigmoid(β·((πc − rc) − (πr − rr))), mean.
PreferenceLoss dpo_loss(const at::Tensor& policy, const at::Tensor& reference, double beta);
// policy sums and scored token counts: [2B]. NLL of the chosen tokens − mean(β·logsigmoid(log odds ratio)).
PreferenceLoss orpo_loss(const at::Tensor& policy, const at::Tensor& tokens, double beta);

}  // namespace wingspan::train
