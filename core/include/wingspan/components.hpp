#pragma once
// The memory components shared by the planner, the trainer's measurements and the window.
// Their names are part of the run protocol (docs/protocol.md) and of `wingspan plan --json`.
#include <array>
#include <optional>
#include <string_view>

namespace wingspan {

enum class Component {
    FrozenWeights,
    QuantConstants,
    Adapters,
    TrainableWeights,
    ReferenceModel,     // DPO/KTO/GRPO's frozen reference, when it is a copy of the policy
    Gradients,
    MasterWeights,
    OptimizerState,
    Activations,
    LogitsLoss,
    KvCache,
    FrameworkOverhead,
};

// In the enum's order: the trainer indexes its counters by the enum's value.
inline constexpr std::array<Component, 12> kAllComponents = {
    Component::FrozenWeights,  Component::QuantConstants, Component::Adapters,
    Component::TrainableWeights, Component::ReferenceModel, Component::Gradients, Component::MasterWeights,
    Component::OptimizerState, Component::Activations,    Component::LogitsLoss,
    Component::KvCache,        Component::FrameworkOverhead,
};

std::string_view component_name(Component c);          // "frozen_weights"
std::string_view component_label(Component c);         // "Frozen weights"
std::string_view component_color(Component c);         // "#0072B2" (Okabe-Ito, DESIGN.md)
std::optional<Component> component_from_name(std::string_view name);

}  // namespace wingspan
