#pragma once
// The memory model: bytes per component for one device (and host RAM), each term with the
// formula and the inputs that made it, and the peak over the phases of a training step.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "architecture.hpp"
#include "components.hpp"
#include "profiles.hpp"
#include "setup.hpp"
#include "tensor_inventory.hpp"

namespace wingspan {

// Gradient bucket size for data-parallel training: wingspan-train's DDP all-reduce buckets and
// ZeRO-2's reduce bucket are this big (a gradient larger than it goes alone), and the model
// predicts ZeRO-2's gradients from it; one definition for both.
inline constexpr std::int64_t kGradientBucketBytes = std::int64_t{4} << 20;

struct ParameterCounts {
    std::int64_t total = 0;
    std::int64_t trainable = 0;   // adapters, plus base tensors that train
    std::int64_t frozen = 0;      // base parameters that do not train
    std::int64_t quantized = 0;   // frozen parameters stored quantized
    std::int64_t adapter = 0;     // LoRA A and B
};

// One named term: where its bytes come from.
struct MemoryTerm {
    Component component;
    std::int64_t bytes = 0;
    std::string formula;                         // "2 B × 8,030,261,248 params (bf16)"
    std::map<std::string, double> inputs;        // the numbers in the formula, by name
    bool on_host = false;                        // offloaded to host RAM
};

// Live bytes per component at one moment of a step.
struct Phase {
    std::string name;                            // "forward_end", "backward", "optimizer_step"
    std::map<Component, std::int64_t> bytes;
    std::int64_t total() const;
};

struct MemoryEstimate {
    ParameterCounts params;
    std::vector<MemoryTerm> terms;               // every term, device and host
    std::vector<Phase> phases;                   // allocated tensors per phase, one device
    std::string peak_phase;
    // What max_memory_allocated would read: PyTorch's allocator only (a paged optimizer's state is
    // cudaMallocManaged by bitsandbytes: on the device, in total_bytes, not here).
    std::int64_t peak_allocated_bytes = 0;
    std::int64_t framework_overhead_bytes = 0;   // context + workspace + allocator slack
    std::int64_t total_bytes = 0;                // what the device really holds at the peak
    std::int64_t host_bytes = 0;                 // host RAM for offloaded state
    // A share of the device taken by another engine in the same process (GRPO's colocated vLLM:
    // vllm_gpu_memory_utilization of the GPU's memory), on top of total_bytes; the verdict
    // applies it to each machine's memory.
    double reserved_device_fraction = 0.0;
    // Components at the peak phase, plus framework_overhead; sums to total_bytes.
    std::map<Component, std::int64_t> components;
    // Every kind of tensor the step holds, with its lifetime: the phases above are its lifetime
    // walk, the terms its shown rows (core/src/memory/).
    TensorInventory inventory;

    // The largest bytes each component reaches in any phase (plus framework_overhead): what
    // a measurement of that component's own peak should be compared with.
    std::map<Component, std::int64_t> component_maxima() const;
    const MemoryTerm* term(Component c) const;   // first term of a component, or nullptr
    // Formula text for a component: its terms joined, for tooltips.
    std::string explain(Component c) const;
    nlohmann::json to_json() const;
};

// The bytes a framework's allocator slack is a fraction of, given the components allocated at
// the peak (and their sum): all of them, or only the transient ones (allocator_slack_of, or the
// "peak" / "transient" given).
std::int64_t slack_base_bytes(const FrameworkProfile& framework,
                              const std::map<Component, std::int64_t>& peak_components);
std::int64_t slack_base_bytes(const std::string& slack_of, const std::map<Component, std::int64_t>& peak_components);

// "the peak" or "the activations and logits": what the slack is a fraction of, in words.
std::string slack_base_name(const FrameworkProfile& framework);
std::string slack_base_name(const std::string& slack_of);

ParameterCounts count_parameters(const Architecture& arch, const TrainingSetup& setup);

// Layers that carry adapters (the last setup.lora_layers, or all), and how many tensors of a
// group are adapted under that choice.
std::int64_t adapted_layers(const Architecture& arch, const TrainingSetup& setup);
std::int64_t adapted_count(const Architecture& arch, const TrainingSetup& setup, const TensorGroup& g);
// Whether LoRA puts an adapter on group g: a targeted linear of the layers, or the LM head when
// "head" is targeted (a tied model's embedding is its head).
bool lora_adapts(const Architecture& arch, const TrainingSetup& setup, const TensorGroup& g);

// Which setup fields the user chose; the others take the framework's defaults (its precision,
// QLoRA quantization, checkpointing and adapted layers), as the framework itself would.
struct ChosenFields {
    bool precision = false;
    bool quantization = false;
    bool grad_checkpointing = false;
    bool lora_layers = false;
};
TrainingSetup apply_framework_defaults(TrainingSetup setup, const FrameworkProfile& framework,
                                       const ChosenFields& chosen);
// The quantized storage a setup gets under a framework, in words ("NF4 + double quant",
// "MLX affine 4-bit (groups of 64, scale + bias)", "none").
std::string quantization_label(const TrainingSetup& setup, const FrameworkProfile& framework);
// Where the setup serves a pre-quantized checkpoint (AWQ, GPTQ, fp8) that the framework does not
// load (its profile's quantization.checkpoints), the sentence that says so; else "".
std::string checkpoint_not_loaded(const TrainingSetup& setup, const FrameworkProfile& framework);
// What a setup's precision means under a framework, in words: "bf16 (bf16-true): weights bf16,
// adapters fp32, gradients as their parameters, AdamW moments fp32, no master copy".
std::string precision_in_force(const TrainingSetup& setup, const FrameworkProfile& framework);

// What the setup's objective means, in words: "dpo: chosen + rejected in one forward (2 rows =
// 2 × batch 1), 1,024 tokens per row, reference adapter-off (as TRL does it)"; "sft" for SFT.
std::string objective_summary(const TrainingSetup& setup);

MemoryEstimate estimate_memory(const Architecture& arch, const TrainingSetup& setup,
                               const FrameworkProfile& framework);

}  // namespace wingspan
