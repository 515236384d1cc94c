#include "kernels/device.hpp"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <torch/csrc/api/include/torch/cuda.h>
#include <torch/csrc/api/include/torch/version.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

// Only a CUDA libtorch ships c10_cuda; CMake defines WINGSPAN_TORCH_CUDA when Torch brought it.
// Device properties and the memory-fraction cap are the only calls that need its headers.
#if defined(WINGSPAN_TORCH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "kernels/kernels_gemm.hpp"
#include "wingspan/nvml.hpp"

namespace wingspan::train::dev {

namespace {

std::int64_t physical_ram() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : 0;
}

// "model name" and the bf16 instruction flags from /proc/cpuinfo (Linux; elsewhere "CPU").
DeviceInfo cpu_info() {
    DeviceInfo d{"cpu", 0, "CPU", physical_ram(), false};
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
        const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
        if (key == "model name" && d.name == "CPU") d.name = value;
        if (key == "flags")
            d.bf16 = d.bf16 || value.find("avx512_bf16") != std::string::npos ||
                     value.find("amx_bf16") != std::string::npos;
    }
    return d;
}

int cuda_count() { return static_cast<int>(torch::cuda::device_count()); }

DeviceInfo cuda_info(int index) {
    DeviceInfo d{"cuda", index, "CUDA device " + std::to_string(index), 0, false};
#if defined(WINGSPAN_TORCH_CUDA)
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(index);
    d.name = p->name;
    d.total_bytes = static_cast<std::int64_t>(p->totalGlobalMem);
    d.bf16 = p->major >= 8;   // Ampere and later: T4 (7.5) and V100 (7.0) train in fp16-mixed
#endif
    return d;
}

bool mps_bf16() {
    try {
        at::Tensor a = at::ones({2, 2}, at::TensorOptions().dtype(at::kBFloat16).device(c10::kMPS));
        (void)at::matmul(a, a).sum().item<float>();
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

DeviceInfo mps_info() { return {"mps", 0, "Apple GPU (Metal, unified memory)", physical_ram(), mps_bf16()}; }

std::string torch_version() { return TORCH_VERSION; }

std::string nvml_gpus_seen() {
    const nvml::Probe p = nvml::probe();
    if (!p.available) return "the NVIDIA driver's NVML (" + p.library + ") is not loadable: " + p.error;
    if (p.gpus.empty()) return "the NVIDIA driver sees no GPU";
    std::string s = "the NVIDIA driver sees " + std::to_string(p.gpus.size()) + " GPU(s): " + p.gpus[0].name;
    return s;
}

std::string how_to_build_for_cuda() {
    return "Build wingspan-train against a CUDA libtorch: configure with "
           "-DCMAKE_PREFIX_PATH=<libtorch> (the CUDA download from pytorch.org, or "
           "$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') for a CUDA PyTorch) "
           "and rebuild; see README, Devices";
}

[[noreturn]] void cuda_unavailable(const std::string& spec, int asked) {
    std::string m = "--device " + spec + ": ";
    if (!at::globalContext().hasCUDART()) {
        m += "this wingspan-train is built against libtorch " + torch_version() +
             " without CUDA (a CPU-only build), so it cannot use an NVIDIA GPU (" + nvml_gpus_seen() + "). " +
             how_to_build_for_cuda() + ".";
    } else if (cuda_count() == 0) {
        const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
        m += "this libtorch has CUDA but no CUDA GPU is visible (" + nvml_gpus_seen() + "). Check that the NVIDIA "
             "driver is installed and new enough for this libtorch's CUDA (nvidia-smi), and CUDA_VISIBLE_DEVICES (" +
             (visible ? "\"" + std::string(visible) + "\"" : std::string("unset")) + ").";
    } else {
        m += "there is no CUDA device " + std::to_string(asked) + ": this machine has " +
             std::to_string(cuda_count()) + " (cuda:0 to cuda:" + std::to_string(cuda_count() - 1) + ").";
    }
    throw DeviceUnavailable(m);
}

[[noreturn]] void mps_unavailable() {
#if defined(__APPLE__)
    throw DeviceUnavailable(
        "--device mps: Apple's Metal backend (MPS) is not available: it needs Apple silicon, macOS 12.3 or later and "
        "a libtorch built with MPS (libtorch " + torch_version() +
        " here). Build against the macOS arm64 PyTorch: -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; "
        "print(torch.utils.cmake_prefix_path)'); see README, Devices.");
#else
    throw DeviceUnavailable(
        "--device mps: MPS is Apple's Metal GPU backend and exists only on macOS with Apple silicon; this machine "
        "runs another system. Use --device cpu, or cuda on an NVIDIA GPU.");
#endif
}

}  // namespace

std::vector<DeviceInfo> list_devices() {
    std::vector<DeviceInfo> out{cpu_info()};
    for (int i = 0; i < cuda_count(); ++i) out.push_back(cuda_info(i));
    if (at::hasMPS()) out.push_back(mps_info());
    return out;
}

nlohmann::json cpu_bf16_json() {
    return {{"bf16_isa", kernels::cpu_bf16_isa()},
            {"bf16_path", kernels::bf16_path_error().empty() ? kernels::to_string(kernels::bf16_path()) : "refused"},
            {"fp32_gemm", kernels::fp32_gemm_error().empty() ? kernels::to_string(kernels::fp32_gemm()) : "refused"},
            {"fp32_gemm_why", kernels::fp32_gemm_error().empty() ? kernels::fp32_gemm_reason() : kernels::fp32_gemm_error()}};
}

nlohmann::json devices_json() {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& d : list_devices()) {
        nlohmann::json entry = {{"type", d.type}, {"index", d.index}, {"name", d.name}, {"total_bytes", d.total_bytes},
                                {"bf16", d.bf16}};
        if (d.type == "cpu") entry.update(cpu_bf16_json());
        list.push_back(entry);
    }
    return {{"devices", list}};
}

c10::Device resolve(const std::string& spec) {
    if (spec == "auto") {
        if (cuda_count() > 0) return {c10::kCUDA, 0};
        if (at::hasMPS()) return {c10::kMPS};
        return {c10::kCPU};
    }
    if (spec == "cpu") return {c10::kCPU};
    if (spec == "mps") {
        if (!at::hasMPS()) mps_unavailable();
        return {c10::kMPS};
    }
    if (spec == "cuda" || spec.rfind("cuda:", 0) == 0) {
        int index = 0;
        if (spec != "cuda") {
            const std::string n = spec.substr(5);
            if (n.empty() || n.size() > 3 || n.find_first_not_of("0123456789") != std::string::npos)
                throw BadDeviceName("--device: \"" + spec + "\" is not a CUDA device (cuda or cuda:N)");
            index = std::stoi(n);
        }
        if (index >= cuda_count()) cuda_unavailable(spec, index);
        return {c10::kCUDA, static_cast<c10::DeviceIndex>(index)};
    }
    throw BadDeviceName("--device: unknown device \"" + spec + "\" (use auto, cpu, cuda, cuda:N or mps)");
}

DeviceInfo info(const c10::Device& d) {
    if (d.is_cuda()) return cuda_info(d.index() < 0 ? 0 : d.index());
    if (d.is_mps()) return mps_info();
    return cpu_info();
}

std::string describe(const c10::Device& d) { return d.str() + " (" + info(d).name + ")"; }

std::string apply_memory_limit(const c10::Device& d, std::int64_t limit_bytes) {
    if (limit_bytes <= 0 || d.is_cpu()) return "";   // the CPU cap lives in the counting allocator
    if (d.is_cuda()) {
#if defined(WINGSPAN_TORCH_CUDA)
        const DeviceInfo i = cuda_info(d.index() < 0 ? 0 : d.index());
        if (i.total_bytes <= 0) return "the GPU's total memory is unknown";
        const double fraction = std::min(1.0, static_cast<double>(limit_bytes) / static_cast<double>(i.total_bytes));
        c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, d.index() < 0 ? 0 : d.index());
        return "";
#else
        return "this libtorch build has no CUDA caching allocator to cap";
#endif
    }
    return "--memory-limit is available on the CPU and on CUDA only (the MPS allocator has no per-process cap here)";
}

at::Generator default_generator(const c10::Device& d) {
    if (d.is_cpu()) return at::detail::getDefaultCPUGenerator();
    try {
        return at::globalContext().defaultGenerator(d);
    } catch (const std::exception&) {
        return at::detail::getDefaultCPUGenerator();
    }
}

void synchronize(const c10::Device& d) {
    if (d.is_cpu()) return;
    // Copying one value back waits for the work queued before it, on any device.
    (void)at::zeros({1}, at::TensorOptions().device(d)).to(c10::kCPU);
}

}  // namespace wingspan::train::dev
