// What a framework makes of a setup before any byte is counted: its defaults for what the user
// left open, and the precision and quantized storage in force, in words.
#include "wingspan/memory_model.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "memory/storage_terms.hpp"
#include "wingspan/quant_formats.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/units.hpp"

namespace wingspan {

using nlohmann::json;

TrainingSetup apply_framework_defaults(TrainingSetup s, const FrameworkProfile& fw, const ChosenFields& chosen) {
    if (!chosen.precision && !fw.default_precision.empty()) set_precision(s, fw.default_precision);
    if (!chosen.quantization && !fw.default_quantization.empty() && s.method == Method::Qlora)
        s.quantization = parse_quantization(fw.default_quantization);
    if (!chosen.grad_checkpointing && fw.default_grad_checkpointing >= 0) s.grad_checkpointing = fw.default_grad_checkpointing == 1;
    if (!chosen.lora_layers && (s.method == Method::Lora || s.method == Method::Qlora)) s.lora_layers = fw.default_lora_layers;
    return s;
}

std::string precision_in_force(const TrainingSetup& setup, const FrameworkProfile& fw) {
    const Storage st = resolve_storage(fw, setup);
    auto dt = [](int b) { return std::string(b == 4 ? "fp32" : b == 2 ? "16-bit" : "8-bit"); };
    std::string out = to_string(setup.precision);
    switch (setup.precision) {
        case Precision::Bf16: out += " (bf16-true: no autocast)"; break;
        case Precision::Bf16Mixed: out += " (bf16 autocast)"; break;
        case Precision::Fp16Mixed: out += " (fp16 autocast)"; break;
        case Precision::Fp32: break;
    }
    const bool lora = setup.method == Method::Lora || setup.method == Method::Qlora;
    out += ": ";
    if (setup.method == Method::Serve) return out + "weights " + dt(st.frozen);
    if (lora) out += "frozen weights " + dt(st.frozen) + ", adapters " + dt(st.adapter);
    else out += "weights " + dt(st.weight);
    const int trained = lora ? st.adapter : st.weight;
    out += ", gradients " + dt(st.grad_of(trained)) + ", optimizer moments " + dt(st.moment) + ", " +
           (st.master_of(trained) > 0 ? "fp32 master copy" : "no master copy");
    return out;
}

std::string quantization_label(const TrainingSetup& s, const FrameworkProfile& fw) {
    const Quantization q = s.effective_quantization();
    if (q == Quantization::None) return "none";
    if (is_checkpoint_format(q)) return checkpoint_format_label(q, s.quant_group_size);
    if (fw.quant_format == "affine")
        return "MLX affine " + std::to_string(q == Quantization::Int8 ? 8 : 4) + "-bit (groups of " +
               std::to_string(fw.quant_group) + ", scale + bias)";
    return q == Quantization::Int8 ? "int8" : q == Quantization::Nf4 ? "NF4" : "NF4 + double quant";
}

std::string checkpoint_not_loaded(const TrainingSetup& s, const FrameworkProfile& fw) {
    const Quantization q = s.effective_quantization();
    if (!is_checkpoint_format(q) || fw.traits.loads_checkpoint(to_string(q))) return "";
    return fw.name + " does not load " + checkpoint_format_label(q, s.quant_group_size) +
           " checkpoints (its profile's quantization.checkpoints): serve them with hf-transformers or --framework vllm";
}

std::int64_t slack_base_bytes(const std::string& slack_of, const std::map<Component, std::int64_t>& peak_components) {
    std::int64_t base = 0;
    for (const auto& [c, b] : peak_components) {
        if (c == Component::FrameworkOverhead) continue;
        if (slack_of == "transient" && c != Component::Activations && c != Component::LogitsLoss) continue;
        base += b;
    }
    return base;
}
std::int64_t slack_base_bytes(const FrameworkProfile& framework,
                              const std::map<Component, std::int64_t>& peak_components) {
    return slack_base_bytes(framework.allocator_slack_of, peak_components);
}

}  // namespace wingspan
