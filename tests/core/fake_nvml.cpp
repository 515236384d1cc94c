// A stand-in for the NVIDIA driver's libnvidia-ml.so.1 with one GPU, for testing the NVML probe
// (core/src/profiles/nvml.cpp) on machines without one. Same C ABI as nvml.h, fixed answers:
// "Wingspan Test GPU", 24 GiB (20 GiB free), compute capability 8.9, 16384 cores at 2520 MHz,
// and the calling process holding 123456789 bytes.
#include <unistd.h>

#include <cstring>

namespace {
struct Memory {
    unsigned long long total, free, used;
};
struct ProcessInfo {
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id, compute_instance_id;
};
int g_device_tag = 0;
}  // namespace

extern "C" {
int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
int nvmlDeviceGetCount_v2(unsigned int* n) {
    *n = 1;
    return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
    if (index != 0) return 2;   // NVML_ERROR_INVALID_ARGUMENT
    *device = &g_device_tag;
    return 0;
}
int nvmlDeviceGetName(void*, char* name, unsigned int length) {
    std::strncpy(name, "Wingspan Test GPU", length);
    return 0;
}
int nvmlDeviceGetMemoryInfo(void*, Memory* m) {
    m->total = 24ULL << 30;
    m->free = 20ULL << 30;
    m->used = m->total - m->free;
    return 0;
}
int nvmlDeviceGetCudaComputeCapability(void*, int* major, int* minor) {
    *major = 8;
    *minor = 9;
    return 0;
}
int nvmlDeviceGetNumGpuCores(void*, unsigned int* cores) {
    *cores = 16384;
    return 0;
}
int nvmlDeviceGetMaxClockInfo(void*, unsigned int, unsigned int* mhz) {
    *mhz = 2520;
    return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void*, unsigned int* count, ProcessInfo* infos) {
    if (*count < 2) {
        *count = 2;
        return 7;   // NVML_ERROR_INSUFFICIENT_SIZE
    }
    *count = 2;
    infos[0] = {static_cast<unsigned int>(getpid()) + 1, 999, 0, 0};   // another process
    infos[1] = {static_cast<unsigned int>(getpid()), 123456789ULL, 0, 0};
    return 0;
}
const char* nvmlErrorString(int) { return "fake NVML error"; }
}
