#pragma once
// The one place that knows about devices: which ones this build and this machine can train on,
// what `--device` names, and the few device-specific calls (memory cap, generators). Everything
// else is device-generic tensor code that receives a c10::Device.
#include <c10/core/Device.h>

#include <ATen/core/Generator.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wingspan::train::dev {

struct DeviceInfo {
    std::string type;          // "cpu", "cuda", "mps"
    int index = 0;
    std::string name;
    std::int64_t total_bytes = 0;   // device memory (RAM for the CPU and for Apple's unified memory)
    bool bf16 = false;              // native bf16 arithmetic (bf16 still runs emulated on a CPU without it)
};

// Every device this build can train on here, the CPU first.
std::vector<DeviceInfo> list_devices();
// `wingspan-train devices`: {"devices":[{type,index,name,total_bytes,bf16},...]}; the CPU's entry
// adds bf16_isa ("amx_bf16", "avx512_bf16", "none") and bf16_path ("hardware", "emulated", or
// "refused" when WINGSPAN_CPU_BF16 asks for what this CPU cannot do).
nlohmann::json devices_json();
// The CPU's bf16 instruction set and the path its bf16 products take (kernels_gemm.hpp).
nlohmann::json cpu_bf16_json();

// A device that `--device` named but this build or machine lacks; the message says what is
// missing and how to get it (protocol error code `device_unavailable`).
struct DeviceUnavailable : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// A `--device` value that names no device at all (protocol error code `bad_argument`).
struct BadDeviceName : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// auto (CUDA, then MPS, then the CPU) | cpu | cuda | cuda:N | mps. Throws the two errors above.
c10::Device resolve(const std::string& spec);
std::string describe(const c10::Device& d);   // "cuda:0 (NVIDIA GeForce RTX 4090)"
DeviceInfo info(const c10::Device& d);

// Caps what the device's allocator may hand out. The CPU cap is the counting allocator's
// (memory.hpp); CUDA uses the caching allocator's memory fraction where this libtorch build
// offers it. Returns an empty string when the cap is in place, else why it cannot be.
std::string apply_memory_limit(const c10::Device& d, std::int64_t limit_bytes);

// The generator whose state makes dropout masks repeatable on this device (the CPU's where the
// device has no default generator).
at::Generator default_generator(const c10::Device& d);

// Waits for the device's queued work (timings of asynchronous devices).
void synchronize(const c10::Device& d);

}  // namespace wingspan::train::dev
