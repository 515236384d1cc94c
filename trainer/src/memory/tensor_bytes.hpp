#pragma once
// A tensor's bytes as the memory accounting sees them: the size of its storage (what the counting
// allocator and the device tracker hold), and moving that storage to another component.
#include <ATen/ATen.h>

#include <cstdint>

#include "wingspan/components.hpp"

namespace wingspan::train {

// Storage bytes of a tensor (its storage, which the counting allocator tracks; 0 if undefined).
std::int64_t storage_bytes(const at::Tensor& t);
// Attributes a tensor's storage to a component (no-op for storages not from our allocator).
void retag(const at::Tensor& t, Component c);

}  // namespace wingspan::train
