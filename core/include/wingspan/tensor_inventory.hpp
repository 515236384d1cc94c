#pragma once
// The memory model as data: one row per kind of tensor a step holds (llm.c's activation table,
// grown to weights, gradients, optimizer state, logits and workspaces), each with its shape,
// bytes, where it lives and the phases it lives through. A generic lifetime walk sums the rows
// alive in each phase; the peak is the largest phase.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "components.hpp"

namespace wingspan {

struct TensorRow {
    std::string name;                       // "LoRA r-wide intermediates"
    Component component = Component::Activations;
    std::string scope;                      // "global", "all layers", "layer i", "one layer", "one tensor"
    std::string shape;                      // formula of b, s, h, q, kv, i, v, r, L ("b·s·r per adapted linear")
    std::int64_t elements = 0;              // elements the shape counts (0: a sum of several shapes)
    double dtype_bytes = 0;                 // bytes per element (0: mixed or packed)
    std::int64_t bytes = 0;                 // bytes held on one device (after sharding), or in host RAM
    bool on_host = false;
    // On the device but allocated outside PyTorch's caching allocator (bitsandbytes' paged state:
    // cudaMallocManaged), so torch.cuda.max_memory_allocated never counts it; nvidia-smi does.
    bool outside_allocator = false;
    // Lifetime: alive from the phase `created` through the phase `freed` (both included, in the
    // step's phase order); "" = loaded before the step / held to its end.
    std::string created;
    std::string freed;
    std::string why;                        // one line; framework behaviour names its source
    std::vector<std::string> tags;          // "lora", "qlora", "checkpointing", "objective", "technique", ...
    // Rows of one scale group (> 0) are scaled together by the framework's activation_factor,
    // rounded once per group and phase (0: bytes as they are).
    int scale_group = 0;
    // An explanation row (a term's figure, e.g. a component's largest moment) counted in no phase.
    bool counted = true;
    // Written as a MemoryTerm: the formula text the CLI and tooltips show, with its inputs.
    bool shown = false;
    std::string formula;
    std::map<std::string, double> inputs;

    bool has_tag(const std::string& tag) const;
};

struct TensorInventory {
    std::vector<TensorRow> rows;
    std::vector<std::string> phases;        // the step's phases in order
    double activation_factor = 1.0;

    // Whether the step has a phase of this name.
    bool has_phase(const std::string& name) const;
    // Whether a row is alive in phase `p` (an index into phases).
    bool alive(const TensorRow& r, std::size_t p) const;
    // Bytes per component of the device rows alive in phase `p` (zero components left out).
    std::map<Component, std::int64_t> phase_bytes(std::size_t p) const;
    // Of those, the bytes allocated outside PyTorch's caching allocator (rows outside_allocator).
    std::int64_t outside_allocator_bytes(std::size_t p) const;
    // The rows carrying `tag`.
    std::vector<const TensorRow*> tagged(const std::string& tag) const;
    nlohmann::json to_json() const;
    // The inventory as a text table: name, component, scope, shape, bytes, place, lifetime, tags.
    std::string table() const;
};

}  // namespace wingspan
