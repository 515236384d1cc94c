#include "wingspan/nvml.hpp"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <mutex>

#include "wingspan/profiles.hpp"
#include "wingspan/units.hpp"

namespace wingspan::nvml {

namespace {

// NVML's C ABI, as documented in nvml.h (stable across driver versions; the _v2/_v3 names are
// the ones current drivers export).
using Device = void*;
struct Memory {
    unsigned long long total, free, used;
};
struct ProcessInfoV2 {   // nvmlProcessInfo_v2_t / nvmlProcessInfo_t of the _v2 and _v3 calls
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id, compute_instance_id;
};
struct ProcessInfoV1 {   // the original nvmlProcessInfo_t
    unsigned int pid;
    unsigned long long used_gpu_memory;
};
constexpr int kSuccess = 0;
constexpr int kInsufficientSize = 7;
constexpr unsigned int kClockSm = 1;   // NVML_CLOCK_SM

struct Api {
    std::string path;
    void* handle = nullptr;
    std::string error;
    int (*init)() = nullptr;
    int (*count)(unsigned int*) = nullptr;
    int (*by_index)(unsigned int, Device*) = nullptr;
    int (*name)(Device, char*, unsigned int) = nullptr;
    int (*memory)(Device, Memory*) = nullptr;
    int (*capability)(Device, int*, int*) = nullptr;
    int (*cores)(Device, unsigned int*) = nullptr;
    int (*max_clock)(Device, unsigned int, unsigned int*) = nullptr;
    int (*processes_v2)(Device, unsigned int*, ProcessInfoV2*) = nullptr;   // _v3 or _v2
    int (*processes_v1)(Device, unsigned int*, ProcessInfoV1*) = nullptr;
    const char* (*error_string)(int) = nullptr;
    bool ready = false;
};

std::string library_path() {
    const char* env = std::getenv("WINGSPAN_NVML_LIBRARY");
    return env && *env ? env : "libnvidia-ml.so.1";
}

template <typename F>
void bind(void* h, F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(h, name));
}

// One loaded library per path for the life of the process (the sampler asks 20 times a second).
Api& api() {
    static std::mutex mutex;
    static Api a;
    std::lock_guard<std::mutex> lock(mutex);
    const std::string path = library_path();
    if (a.path == path) return a;
    a = Api{};
    a.path = path;
    a.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!a.handle) {
        const char* e = dlerror();
        a.error = e ? e : "dlopen failed";
        return a;
    }
    void* h = a.handle;
    bind(h, a.init, "nvmlInit_v2");
    if (!a.init) bind(h, a.init, "nvmlInit");
    bind(h, a.count, "nvmlDeviceGetCount_v2");
    if (!a.count) bind(h, a.count, "nvmlDeviceGetCount");
    bind(h, a.by_index, "nvmlDeviceGetHandleByIndex_v2");
    if (!a.by_index) bind(h, a.by_index, "nvmlDeviceGetHandleByIndex");
    bind(h, a.name, "nvmlDeviceGetName");
    bind(h, a.memory, "nvmlDeviceGetMemoryInfo");
    bind(h, a.capability, "nvmlDeviceGetCudaComputeCapability");
    bind(h, a.cores, "nvmlDeviceGetNumGpuCores");
    bind(h, a.max_clock, "nvmlDeviceGetMaxClockInfo");
    bind(h, a.processes_v2, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!a.processes_v2) bind(h, a.processes_v2, "nvmlDeviceGetComputeRunningProcesses_v2");
    bind(h, a.processes_v1, "nvmlDeviceGetComputeRunningProcesses");
    bind(h, a.error_string, "nvmlErrorString");
    if (!a.init || !a.count || !a.by_index) {
        a.error = path + " lacks nvmlInit/nvmlDeviceGetCount/nvmlDeviceGetHandleByIndex";
        return a;
    }
    if (const int rc = a.init(); rc != kSuccess) {
        a.error = std::string("nvmlInit failed: ") + (a.error_string ? a.error_string(rc) : std::to_string(rc));
        return a;
    }
    a.ready = true;
    return a;
}

}  // namespace

Probe probe() {
    Api& a = api();
    Probe p;
    p.library = a.path;
    if (!a.ready) {
        p.error = a.error;
        return p;
    }
    p.available = true;
    unsigned int n = 0;
    if (a.count(&n) != kSuccess) return p;
    for (unsigned int i = 0; i < n; ++i) {
        Device d = nullptr;
        if (a.by_index(i, &d) != kSuccess) continue;
        Gpu g;
        g.index = static_cast<int>(i);
        char name[96] = {0};
        if (a.name && a.name(d, name, sizeof name) == kSuccess) g.name = name;
        if (g.name.empty()) g.name = "NVIDIA GPU " + std::to_string(i);
        Memory m{};
        if (a.memory && a.memory(d, &m) == kSuccess) {
            g.total_bytes = static_cast<std::int64_t>(m.total);
            g.free_bytes = static_cast<std::int64_t>(m.free);
        }
        if (a.capability) a.capability(d, &g.cc_major, &g.cc_minor);
        g.bf16 = g.cc_major >= 8;
        unsigned int v = 0;
        if (a.cores && a.cores(d, &v) == kSuccess) g.cuda_cores = static_cast<int>(v);
        if (a.max_clock && a.max_clock(d, kClockSm, &v) == kSuccess) g.max_sm_clock_mhz = static_cast<int>(v);
        p.gpus.push_back(g);
    }
    return p;
}

std::optional<std::int64_t> process_bytes(long pid) {
    Api& a = api();
    if (!a.ready || (!a.processes_v2 && !a.processes_v1)) return std::nullopt;
    unsigned int n = 0;
    if (a.count(&n) != kSuccess) return std::nullopt;
    std::int64_t total = 0;
    bool known = false;
    for (unsigned int i = 0; i < n; ++i) {
        Device d = nullptr;
        if (a.by_index(i, &d) != kSuccess) continue;
        // Ask with room for 64 processes, more if the driver says there are more.
        auto collect = [&](auto fn, auto sample) {
            using Info = decltype(sample);
            std::vector<Info> infos(64);
            unsigned int count = static_cast<unsigned int>(infos.size());
            int rc = fn(d, &count, infos.data());
            if (rc == kInsufficientSize) {
                infos.resize(count + 16);
                count = static_cast<unsigned int>(infos.size());
                rc = fn(d, &count, infos.data());
            }
            if (rc != kSuccess) return;
            known = true;
            for (unsigned int k = 0; k < count; ++k)
                if (static_cast<long>(infos[k].pid) == pid && infos[k].used_gpu_memory != ULLONG_MAX)
                    total += static_cast<std::int64_t>(infos[k].used_gpu_memory);
        };
        if (a.processes_v2) collect(a.processes_v2, ProcessInfoV2{});
        else collect(a.processes_v1, ProcessInfoV1{});
    }
    if (!known) return std::nullopt;
    return total;
}

void apply_detected_gpu(MachineProfile& m) {
    const Probe p = probe();
    if (!p.available || p.gpus.empty()) return;
    const Gpu& g = p.gpus.front();   // the GPU a single-device run trains on (auto: cuda:0)
    m.kind = MachineKind::Gpu;
    m.name = "This machine (" + g.name + ", " + format_bytes(double(g.total_bytes), ByteUnit::GiB) + ")";
    m.memory_bytes = g.total_bytes;
    m.usable_bytes = g.free_bytes > 0 ? std::min(g.free_bytes, g.total_bytes) : g.total_bytes;
    m.bf16 = g.bf16;
    m.default_framework = "libtorch-cuda";
    m.sources["memory_bytes"] = "NVML nvmlDeviceGetMemoryInfo total of " + g.name;
    m.sources["usable_bytes"] = "NVML free memory of " + g.name + " at start-up";
    m.sources["bf16"] = "NVML compute capability " + std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor) +
                        " (bf16 from 8.0)";
    if (g.cuda_cores > 0 && g.max_sm_clock_mhz > 0) {
        // FMA = 2 FLOPs per core per clock; tensor cores with fp32 accumulate give GeForce cards
        // about twice that (data-centre parts more): a conservative estimate until calibrated.
        m.tflops_fp32 = 2.0 * g.cuda_cores * g.max_sm_clock_mhz * 1e6 / 1e12;
        m.tflops_fp16 = g.cc_major >= 7 ? 2 * m.tflops_fp32 : m.tflops_fp32;
        m.tflops_bf16 = g.bf16 ? m.tflops_fp16 : 0;
        m.sources["tflops_fp32"] = "estimate: NVML CUDA cores × max SM clock × 2 (FMA)";
        m.sources["tflops_fp16"] = "estimate: 2 × fp32 with tensor cores (conservative for data-centre GPUs)";
    }
    if (p.gpus.size() > 1)
        m.sources["memory_bytes"] += " (the first of " + std::to_string(p.gpus.size()) + " GPUs)";
}

}  // namespace wingspan::nvml
