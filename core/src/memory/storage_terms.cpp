#include "memory/storage_terms.hpp"

#include <string>

#include "wingspan/units.hpp"

namespace wingspan {

TrainableStorage storage_for(Precision p) {
    switch (p) {
        case Precision::Fp32: return {4, 4, 0, 4};
        case Precision::Bf16Mixed:
        case Precision::Fp16Mixed: return {2, 2, 4, 4};
        case Precision::Bf16: return {2, 2, 0, 2};
    }
    return {4, 4, 0, 4};
}

Storage resolve_storage(const FrameworkProfile& fw, const TrainingSetup& setup) {
    const TrainableStorage st = storage_for(setup.precision);
    Storage s{dtype_bytes(setup.precision), st.weight, st.weight, st.grad, st.master, st.moment};
    auto apply = [&](const std::string& key) {
        auto it = fw.dtypes.find(key);
        if (it == fw.dtypes.end()) return;
        for (const auto& [k, v] : it->second) {
            if (k == "frozen") s.frozen = v;
            else if (k == "trainable") s.weight = v;
            else if (k == "adapter") s.adapter = v;
            else if (k == "gradient") s.gradient = v;
            else if (k == "master") s.master = v;
            else if (k == "moments") s.moment = v;
        }
        if (!it->second.count("gradient")) s.gradient = 0;
    };
    const std::string precision = to_string(setup.precision);
    apply(precision);
    apply(std::string(to_string(setup.method)) + "/" + precision);
    return s;
}


// bitsandbytes' 8-bit optimizers keep tensors under 4096 elements in 32-bit and quantize the
// rest blockwise with an fp32 absmax per 2048 values of each of the two states.
constexpr std::int64_t k8bitMinElements = 4096;
constexpr std::int64_t k8bitBlock = 2048;
// Paged optimizers allocate a tensor's state buffers in unified memory only from 1e5 elements
// on (bitsandbytes/optim/optimizer.py get_state_buffer: `if not self.is_paged or p.numel() < 1e5`).
constexpr std::int64_t kPagedMinElements = 100000;

std::int64_t optimizer_bytes(Optimizer opt, int moment_bytes, std::int64_t rows, std::int64_t cols) {
    const std::int64_t elements = rows * cols;
    switch (opt) {
        case Optimizer::AdamW: return 2 * moment_bytes * elements;
        case Optimizer::AdamW8bit:
        case Optimizer::PagedAdamW8bit:
            if (elements < k8bitMinElements) return 8 * elements;
            return 2 * elements + 2 * 4 * ((elements + k8bitBlock - 1) / k8bitBlock);
        case Optimizer::PagedAdamW: return 8 * elements;   // bitsandbytes PagedAdamW: optim_bits 32, fp32 states
        case Optimizer::Sgd: return moment_bytes * elements;
        case Optimizer::Adafactor:
            if (rows > 1 && cols > 1) return 4 * (rows + cols);
            return 4 * elements;
    }
    return 0;
}

bool paged_optimizer(Optimizer opt) { return opt == Optimizer::PagedAdamW || opt == Optimizer::PagedAdamW8bit; }

std::int64_t paged_state_bytes(Optimizer opt, std::int64_t rows, std::int64_t cols) {
    const std::int64_t elements = rows * cols;
    if (!paged_optimizer(opt) || elements < kPagedMinElements) return 0;
    if (opt == Optimizer::PagedAdamW || elements < k8bitMinElements) return 8 * elements;
    return 2 * elements;   // state1 and state2 in uint8; their fp32 absmax stays in device memory
}

const char* optimizer_formula(Optimizer opt, int moment_bytes) {
    switch (opt) {
        case Optimizer::AdamW:
            return moment_bytes == 4 ? "AdamW: 2 fp32 moments = 8 B × trainable params"
                                     : "AdamW: 2 bf16 moments = 4 B × trainable params";
        case Optimizer::AdamW8bit:
        case Optimizer::PagedAdamW8bit:
            return "8-bit AdamW: 2 × 1 B per param + fp32 absmax per 2048 values (tensors < 4096 "
                   "elements stay 8 B)";
        case Optimizer::PagedAdamW: return "paged AdamW: 2 fp32 moments = 8 B × trainable params";
        case Optimizer::Sgd: return "SGD momentum: 1 moment per trainable param";
        case Optimizer::Adafactor: return "Adafactor: fp32 row + column factors per matrix, full for vectors";
    }
    return "";
}

}  // namespace wingspan
