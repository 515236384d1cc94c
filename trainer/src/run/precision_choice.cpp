#include "run/precision_choice.hpp"

#include "wingspan/trainer_invocation.hpp"

namespace wingspan::train {

nlohmann::json PrecisionChoice::to_json() const {
    return {{"precision", std::string(to_string(precision))}, {"auto", automatic}, {"reason", reason}};
}

PrecisionChoice asked_precision(Precision p) {
    return {p, false, "--precision " + std::string(to_string(p)) + " was asked for"};
}

PrecisionChoice auto_precision(DeviceKind kind, bool bf16_fast, const std::string& device_name) {
    PrecisionChoice c;
    c.automatic = true;
    switch (kind) {
        case DeviceKind::Cpu:
            // Without bf16 instructions a bf16 product is widened to fp32 first: bf16-mixed does
            // the fp32 work plus the conversions, so fp32 is the faster exact choice there.
            c.precision = bf16_fast ? Precision::Bf16Mixed : Precision::Fp32;
            c.reason = bf16_fast ? device_name + " multiplies bf16 in hardware (AVX512-BF16/AMX): bf16-mixed is the fastest exact precision"
                                 : device_name + " has no bf16 hardware path (no AVX512-BF16/AMX, or WINGSPAN_CPU_BF16=emulated): "
                                                 "fp32 is faster than bf16-mixed's widened products";
            break;
        case DeviceKind::Cuda:
            // Before Ampere there is no bf16 arithmetic: fp16 with loss scaling is the fast path.
            c.precision = bf16_fast ? Precision::Bf16Mixed : Precision::Fp16Mixed;
            c.reason = bf16_fast ? device_name + " computes in bf16: bf16-mixed"
                                 : device_name + " has no bf16 (compute capability below 8.0): fp16-mixed with loss scaling";
            break;
        case DeviceKind::Mps:
            c.precision = bf16_fast ? Precision::Bf16Mixed : Precision::Fp32;
            c.reason = bf16_fast ? device_name + " computes in bf16: bf16-mixed"
                                 : device_name + " has no bf16 in this macOS/PyTorch: fp32";
            break;
    }
    return c;
}

PrecisionChoice resumed_precision(Precision saved, const std::string& checkpoint) {
    return {saved, true, "resumed from " + checkpoint + ", which was trained in " + std::string(to_string(saved))};
}

PrecisionChoice fit_precision(const PrecisionChoice& chosen, const MemoryNeed& n) {
    if (!chosen.automatic || chosen.precision != Precision::Fp32 || n.capacity_bytes <= 0) return chosen;
    if (n.fp32_bytes <= n.capacity_bytes || n.bf16_mixed_bytes <= 0 || n.bf16_mixed_bytes > n.capacity_bytes) return chosen;
    PrecisionChoice c = chosen;
    c.precision = Precision::Bf16Mixed;
    c.reason = "fp32 would need " + std::to_string(n.fp32_bytes) + " B (" + n.statistic + "), more than the " +
               std::to_string(n.capacity_bytes) + " B of " + n.capacity + "; bf16-mixed needs " +
               std::to_string(n.bf16_mixed_bytes) + " B and fits (slower than fp32 where bf16 products are emulated)";
    return c;
}

}  // namespace wingspan::train
