#pragma once
// One machine serving a model with llama.cpp: the GPU's memory and host RAM are two budgets on a
// GPU box, one pool on unified memory and a CPU. `wingspan plan --method serve` and the planner
// window's serve view both judge a machine with this, so they agree to the byte.
#include <cstdint>
#include <optional>

#include "llama_cpp_terms.hpp"
#include "profiles.hpp"

namespace wingspan::llama_cpp {

struct MachineFit {
    const MachineProfile* machine = nullptr;
    bool gpu = false;                                   // a GPU with its own memory beside host RAM
    bool fits = false;
    std::uint64_t device_needed = 0, device_usable = 0;
    std::uint64_t host_needed = 0, host_available = 0;  // a GPU box's RAM (0: not known)
    std::optional<std::int64_t> most_gpu_layers;         // GPUs only
    std::int64_t longest_context = -1;                   // -1: not even 256 cells fit
    std::optional<double> decode_tokens_per_s_ceiling;   // bandwidth-bound decode; none without a bandwidth
};

// A CPU runs every layer on the host (n_gpu_layers 0).
MachineFit machine_fit(const MachineProfile& m, const ServeModel& model, ServeOptions o);

}  // namespace wingspan::llama_cpp
