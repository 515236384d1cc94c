#include "memory/tensor_bytes.hpp"

#include "memory/memory.hpp"

namespace wingspan::train {

std::int64_t storage_bytes(const at::Tensor& t) {
    if (!t.defined()) return 0;
    return static_cast<std::int64_t>(t.storage().nbytes());
}

void retag(const at::Tensor& t, Component c) {
    if (!t.defined() || !t.has_storage()) return;
    const auto& dp = t.storage().data_ptr();
    // A CPU storage not from the counting allocator is not ours; a GPU block is the tracker's.
    if (t.is_cpu() && dp.get_deleter() != mem::counting_deleter()) return;
    mem::retag(dp.get(), c);
}

}  // namespace wingspan::train
