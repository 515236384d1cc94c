#pragma once
// --precision auto (the default): the fastest precision that is exact on the device that trains.
// Pure decisions over what the device reports, so the rule is tested without a device; the
// planner applies the same rule per machine (core's adapt_setup).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "wingspan/setup.hpp"

namespace wingspan::train {

enum class DeviceKind { Cpu, Cuda, Mps };

struct PrecisionChoice {
    Precision precision = Precision::Fp32;
    bool automatic = false;   // chosen by --precision auto rather than asked for
    std::string reason;       // one sentence a user reads in `hello` and the log
    // {"precision": "bf16-mixed", "auto": true, "reason": "..."}
    nlohmann::json to_json() const;
};

PrecisionChoice asked_precision(Precision p);

// The rule. `bf16_fast`: on a CPU, bf16 products run on the hardware path (AVX512-BF16/AMX, not
// forced to emulation); on a GPU, the device computes in bf16 (CUDA compute capability 8.0+,
// MPS on macOS 14+). `device_name` only words the reason.
PrecisionChoice auto_precision(DeviceKind kind, bool bf16_fast, const std::string& device_name);

// A resumed run keeps the checkpoint's precision: its optimizer state and master weights are
// stored in it.
PrecisionChoice resumed_precision(Precision saved, const std::string& checkpoint);

// Where the auto choice needs more memory than there is and bf16-mixed would fit, auto takes
// bf16-mixed and says so; otherwise the choice is returned unchanged (the run is then refused or
// runs as chosen). Byte counts are the planner's, of one statistic; capacity 0: unknown.
struct MemoryNeed {
    std::int64_t fp32_bytes = 0;
    std::int64_t bf16_mixed_bytes = 0;
    std::int64_t capacity_bytes = 0;
    std::string statistic;   // "process", "allocated tensors"
    std::string capacity;    // "RAM", "--memory-limit", "device memory"
};
PrecisionChoice fit_precision(const PrecisionChoice& chosen, const MemoryNeed& need);

}  // namespace wingspan::train
