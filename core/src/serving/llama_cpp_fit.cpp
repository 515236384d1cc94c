#include "wingspan/llama_cpp_fit.hpp"

#include <climits>

namespace wingspan::llama_cpp {

namespace {
// Host RAM bandwidth for layers left on the CPU of a GPU machine (profiles do not carry it):
// dual-channel DDR5-6400 peaks at 102 GB/s; llama.cpp's CPU decode reaches about half.
constexpr double kHostBandwidthGbS = 50.0;
}  // namespace

MachineFit machine_fit(const MachineProfile& m, const ServeModel& model, ServeOptions o) {
    MachineFit f;
    f.machine = &m;
    f.gpu = m.kind == MachineKind::Gpu;
    if (m.kind == MachineKind::Cpu) o.n_gpu_layers = 0;
    f.device_usable = static_cast<std::uint64_t>(m.usable_bytes > 0 ? m.usable_bytes : m.memory_bytes);
    f.host_available = static_cast<std::uint64_t>(f.gpu ? m.host_memory_bytes : 0);
    const ServePlan p = plan(model, o);
    f.device_needed = f.gpu ? p.gpu_total() : p.gpu_total() + p.host_total();
    f.host_needed = f.gpu ? p.host_total() : 0;
    f.fits = f.device_needed <= f.device_usable && (!f.gpu || f.host_available == 0 || f.host_needed <= f.host_available);
    if (f.gpu) f.most_gpu_layers = most_gpu_layers(model, o, f.device_usable);
    f.longest_context = longest_context(model, o, f.device_usable, f.host_available > 0 ? f.host_available : UINT64_MAX, !f.gpu);
    // Decode reads every weight and the KV cache once per token (bandwidth-bound): GPU bytes at the
    // GPU's bandwidth, host bytes at host RAM's.
    const double on_gpu = double(p.weights_gpu + p.kv_gpu), on_host = double(p.weights_host + p.kv_host);
    const double seconds = f.gpu ? on_gpu / (m.bandwidth_gb_s * 1e9) + on_host / (kHostBandwidthGbS * 1e9)
                                 : (on_gpu + on_host) / (m.bandwidth_gb_s * 1e9);
    if (m.bandwidth_gb_s > 0 && seconds > 0) f.decode_tokens_per_s_ceiling = 1.0 / seconds;
    return f;
}

}  // namespace wingspan::llama_cpp
