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
    // The logits and loss (loss_memory.cpp): its tensors, one row each in training, and their sums
    // at each of the loss's moments.
    const LossMemory& loss;
    std::int64_t kv_cache = 0;
    const ObjectiveInputs& objective;
};

void write_serving_phase(const PhaseInputs& in, RowWriter& w);
void write_training_phases(const PhaseInputs& in, RowWriter& w);

}  // namespace wingspan
