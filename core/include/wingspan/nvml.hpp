#pragma once
// What an NVIDIA GPU really holds, read the way nvidia-smi does: NVML (libnvidia-ml.so.1, part
// of the driver) loaded at run time with dlopen, so nothing needs NVML's headers or links it.
// No driver, no library: `available` is false and callers leave their GPU fields out; it is
// never an error. WINGSPAN_NVML_LIBRARY names another library file (tests use it).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wingspan {
struct MachineProfile;
}

namespace wingspan::nvml {

struct Gpu {
    int index = 0;                 // NVML's index (PCI order; CUDA's may differ)
    std::string name;              // "NVIDIA GeForce RTX 4090"
    std::int64_t total_bytes = 0;
    std::int64_t free_bytes = 0;   // free when probed
    int cc_major = 0, cc_minor = 0;   // CUDA compute capability, 0 where unknown
    bool bf16 = false;             // compute capability 8.0 or later (Ampere on)
    int cuda_cores = 0;            // 0 where the driver does not say
    int max_sm_clock_mhz = 0;
};

struct Probe {
    bool available = false;
    std::string library;           // the file dlopen was asked for
    std::string error;             // why not available
    std::vector<Gpu> gpus;
};

// Loads NVML once per library path (kept loaded) and lists the GPUs.
Probe probe();

// Bytes of GPU memory this process (pid) holds on every GPU together, as nvidia-smi's process
// table shows them: allocations, the CUDA context and the caching allocator's reserve alike.
// nullopt when NVML is not available or reports no figure for processes.
std::optional<std::int64_t> process_bytes(long pid);

// "This machine" with a GPU: the GPU's name and memory become the ceiling (the host RAM stays
// the offload target), bf16 from the compute capability, libtorch-cuda as its framework. A
// machine without NVML or GPU is left as it is.
void apply_detected_gpu(MachineProfile& m);

}  // namespace wingspan::nvml
