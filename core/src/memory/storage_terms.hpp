#pragma once
// How each kind of tensor is stored under a precision scheme and a framework's dtypes, and what
// an optimizer keeps per trainable tensor. Internal to core's memory model.
#include <cstdint>

#include "wingspan/memory_model.hpp"

namespace wingspan {

// How a trainable tensor is stored under a precision scheme (bytes per element).
struct TrainableStorage {
    int weight, grad, master, moment;
};
TrainableStorage storage_for(Precision p);

// Bytes per element of each kind of tensor under this framework, method and precision: the
// precision's textbook scheme unless the profile's dtypes say otherwise.
struct Storage {
    int frozen, weight, adapter, gradient /*0: as the parameter*/, master /*for 16-bit trainables*/, moment;
    int grad_of(int param_bytes) const { return gradient > 0 ? gradient : param_bytes; }
    int master_of(int param_bytes) const { return param_bytes < 4 ? master : 0; }
};
Storage resolve_storage(const FrameworkProfile& fw, const TrainingSetup& setup);

// Optimizer state of one rows × cols trainable tensor, and its formula's text.
std::int64_t optimizer_bytes(Optimizer opt, int moment_bytes, std::int64_t rows, std::int64_t cols);
const char* optimizer_formula(Optimizer opt, int moment_bytes);
// Paged optimizers: the bytes of one tensor's state that live in paged (unified) memory, which
// the driver moves to host RAM when the device is full; 0 for other optimizers and small tensors.
bool paged_optimizer(Optimizer opt);
std::int64_t paged_state_bytes(Optimizer opt, std::int64_t rows, std::int64_t cols);

}  // namespace wingspan
