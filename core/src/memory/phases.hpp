#pragma once
// The phases of a step and the rows alive only in one of them: gradients as backward makes
// them, activations at each moment, logits, step temporaries, the objective's own phases.
#include <vector>

#include "memory/loss_memory.hpp"
#include "activations.hpp"

namespace wingspan {

struct PhaseInputs {
    const PlanContext& c;
    const StateTotals& t;
    const StateOnDevice& d;
    const LayerActivations& a;
    const ActivationMoments& m;
    std::int64_t logits_forward = 0, logits_backward = 0, kv_cache = 0;
    const ObjectiveInputs& objective;
    // The loss's tensors (loss_memory.cpp), one row each in training; logits_forward and
    // logits_backward are their sums.
    std::vector<LossTensor> loss_tensors = {};
};

void write_serving_phase(const PhaseInputs& in, RowWriter& w);
void write_training_phases(const PhaseInputs& in, RowWriter& w);

}  // namespace wingspan
