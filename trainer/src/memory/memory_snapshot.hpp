#pragma once
// What the memory accounting reports at one moment, from either source: the CPU's counting
// allocator (memory.hpp) or a device's reporting hook (device_memory.hpp). Its own header so the
// device tracker and the accounting that consults it need not include each other.
#include <cstdint>
#include <map>

#include "wingspan/components.hpp"

namespace wingspan::train::mem {

struct Snapshot {
    std::map<Component, std::int64_t> components;   // live bytes per component
    std::map<Component, std::int64_t> component_peaks;   // each component's own peak (not simultaneous)
    std::int64_t allocated = 0;                     // live bytes now
    std::int64_t peak = 0;                          // peak of live bytes since start / reset
    std::int64_t allocations = 0;                   // live allocation count
    std::int64_t reserved = 0;                      // held by the device's allocator (= allocated on the CPU)
    std::int64_t reserved_peak = 0;
};

}  // namespace wingspan::train::mem
