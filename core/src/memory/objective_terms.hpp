#pragma once
// What a training objective beyond SFT adds to the memory of a step: the rows and the sequence
// one forward of the policy runs (DPO's chosen and rejected side by side, GRPO's B·G
// completions), the reference model, and the phases the policy's training step does not have
// (the reference's forward, GRPO's generation). Internal to core's memory model; every term
// carries its formula and cites the framework code it follows.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "wingspan/architecture.hpp"
#include "wingspan/components.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/setup.hpp"

namespace wingspan {

// TRL 1.16 GRPOConfig: max_completion_length 512 (trl/trainer/grpo_config.py line 494). TRL 1.16 has no
// max_prompt_length (prompts are not cut): the prompt length the planner assumes when none is given.
inline constexpr std::int64_t kTrlGrpoPromptLength = 512;
inline constexpr std::int64_t kTrlGrpoCompletionLength = 512;

struct ObjectiveShape {
    std::int64_t rows = 1;              // sequences one forward of the policy runs
    std::int64_t seq = 1;               // tokens per sequence
    std::int64_t prompt = 0;            // GRPO: prompt and completion lengths
    std::int64_t completion = 0;
    std::int64_t logit_positions = 1;   // positions per sequence whose logits are computed
};
ObjectiveShape objective_shape(const TrainingSetup& setup);

// Whether the sequence is prompt + completion rather than seq_len (GRPO always; the others when
// both lengths are given): then the length that can grow is the completion's.
bool sequence_from_lengths(const TrainingSetup& setup);

// The setup as one forward of the policy sees it: micro_batch = rows, seq_len = seq.
TrainingSetup forward_setup(const TrainingSetup& setup);

// Reference::Auto resolved as TRL does it (DPOTrainer/KTOTrainer.__init__: a PEFT policy is its
// own reference with the adapter disabled, else create_reference_model copies it; GRPOTrainer
// loads one only when beta > 0); SFT, ORPO and SimPO take none.
Reference resolved_reference(const TrainingSetup& setup);

// What the memory model hands over: the original setup, its shape, and the bytes it computed.
struct ObjectiveInputs {
    const Architecture& arch;
    const TrainingSetup& setup;            // as the user gave it (micro_batch = prompts or pairs)
    ObjectiveShape shape;
    std::int64_t policy_weights = 0;       // the policy's weights without adapters, one device
    std::int64_t value_bytes = 2;          // compute dtype
    std::int64_t inner = 0;                // MLP inner width (MoE: the active experts')
    // The reference scores a micro-batch before the policy's forward (framework profile
    // objective.reference_before_policy: wingspan-train), not beside its graph as TRL does.
    bool reference_before_policy = false;
    // The reference's log-probs through the framework's own head under no_grad (loss_memory's
    // LossMemory::no_grad: TRL 1.16's fused head, one tile and per-token statistics); -1: the full
    // logits of every scored position (the default until memory_model.cpp passes loss.no_grad).
    std::int64_t reference_logprobs = -1;
};

// The reference model's bytes, held throughout (0 unless it is a copy); its term goes to terms.
std::int64_t reference_weights(const ObjectiveInputs& in, std::vector<MemoryTerm>& terms);

// What the policy's step holds when the objective's own phases run.
struct PolicyHeld {
    std::int64_t gradients = 0;            // gradients held across steps (accumulation, buckets)
    std::int64_t activations = 0;          // the policy's saved activations at the end of forward
    std::int64_t logits = 0;               // the policy's logits at the end of forward
};
using ExtraPhase = std::pair<std::string, std::map<Component, std::int64_t>>;
// The objective's phases, as extras on top of the static state; their terms go to terms.
std::vector<ExtraPhase> objective_phases(const ObjectiveInputs& in, const PolicyHeld& held,
                                         std::vector<MemoryTerm>& terms);

}  // namespace wingspan
