#include "wingspan/components.hpp"

namespace wingspan {

namespace {
struct ComponentInfo {
    Component component;
    std::string_view name;
    std::string_view label;
    std::string_view color;
};
// Colours: the Okabe-Ito set fixed in DESIGN.md; kv_cache reuses the activations hue's
// neighbour so serving charts stay readable.
constexpr ComponentInfo kInfo[] = {
    {Component::FrozenWeights, "frozen_weights", "Frozen weights", "#0072B2"},
    {Component::QuantConstants, "quant_constants", "Quantization constants", "#56B4E9"},
    {Component::Adapters, "adapters", "LoRA adapters", "#009E73"},
    // Paul Tol's green, not the adapters' Okabe-Ito green: a size chart shows both side by side
    // (a full fine-tune's weights next to LoRA's adapters), and one colour read as one thing.
    {Component::TrainableWeights, "trainable_weights", "Trainable weights", "#117733"},
    // (outside Okabe-Ito's eight: Paul Tol's teal, apart from the blues of the policy's weights)
    {Component::ReferenceModel, "reference_model", "Reference model", "#44AA99"},
    {Component::Gradients, "gradients", "Gradients", "#E69F00"},
    {Component::MasterWeights, "master_weights", "fp32 master weights", "#F0E442"},
    {Component::OptimizerState, "optimizer_state", "Optimizer state", "#D55E00"},
    {Component::Activations, "activations", "Activations", "#CC79A7"},
    {Component::LogitsLoss, "logits_loss", "Logits and loss", "#999999"},
    {Component::KvCache, "kv_cache", "KV cache", "#882255"},
    {Component::FrameworkOverhead, "framework_overhead", "Framework overhead", "#000000"},
};
const ComponentInfo& info(Component c) { return kInfo[static_cast<int>(c)]; }
}  // namespace

std::string_view component_name(Component c) { return info(c).name; }
std::string_view component_label(Component c) { return info(c).label; }
std::string_view component_color(Component c) { return info(c).color; }

std::optional<Component> component_from_name(std::string_view name) {
    for (const auto& i : kInfo)
        if (i.name == name) return i.component;
    return std::nullopt;
}

}  // namespace wingspan
