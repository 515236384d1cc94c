#pragma once
// Per-component bytes on any device through c10's allocator memory-reporting hook (the one
// PyTorch's profiler uses): every allocator that reports — the CPU's default allocator, CUDA's
// caching allocator — calls reportMemoryUsage(ptr, ±bytes, total allocated, total reserved,
// device) on the allocating or freeing thread for each block. The tracker keeps a table of live
// blocks with the component that was current when each was made, exactly as the counting
// allocator does for the CPU (tests/trainer/test_memory_hook.cpp proves the two agree to the byte).
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include "memory/memory_snapshot.hpp"

namespace wingspan::train::mem {

namespace detail {
// reportMemoryUsage's total parameters are int64_t in libtorch 1.13 and size_t in 2.x: take
// whatever the installed c10 declares.
template <typename>
struct ReportArgs;
template <typename R, typename C, typename... A>
struct ReportArgs<R (C::*)(A...)> {
    using Total = std::tuple_element_t<2, std::tuple<A...>>;
};
using ReportedTotal = ReportArgs<decltype(&c10::MemoryReportingInfoBase::reportMemoryUsage)>::Total;
}  // namespace detail

class DeviceTracker final : public c10::MemoryReportingInfoBase {
public:
    explicit DeviceTracker(c10::Device device) : device_(device) {}

    void reportMemoryUsage(void* ptr, std::int64_t alloc_size, detail::ReportedTotal total_allocated,
                           detail::ReportedTotal total_reserved, c10::Device device) override;
    bool memoryProfilingEnabled() const override { return true; }

    // Live and peak bytes per component, allocated and reserved, since tracking began.
    Snapshot snapshot() const;
    // Moves a live block to another component; its bytes, or -1 if the block is not tracked.
    std::int64_t retag(const void* ptr, Component c);
    void reset_component_peaks();   // component peaks start again from the live bytes
    const c10::Device& device() const { return device_; }

private:
    struct Block {
        std::int64_t bytes;
        Component component;
    };
    void raise(std::int64_t& peak, std::int64_t now) { peak = std::max(peak, now); }

    c10::Device device_;
    mutable std::mutex mutex_;
    std::unordered_map<const void*, Block> blocks_;
    std::map<Component, std::int64_t> live_, peaks_;
    std::int64_t allocated_ = 0, peak_ = 0;
    std::int64_t reserved_ = 0, reserved_peak_ = 0;
    bool allocator_reports_reserved_ = false;
};

// Registers a tracker for `device` on the constructing thread for its lifetime (threads that
// inherit its thread-local state, as autograd's device threads do, report to it too) and makes
// it the source of mem::snapshot() and the target of mem::retag().
class DeviceTracking {
public:
    explicit DeviceTracking(c10::Device device);
    ~DeviceTracking();
    DeviceTracking(const DeviceTracking&) = delete;
    DeviceTracking& operator=(const DeviceTracking&) = delete;
    DeviceTracker& tracker() { return *tracker_; }

private:
    std::shared_ptr<DeviceTracker> tracker_;
    c10::DebugInfoGuard guard_;
};

}  // namespace wingspan::train::mem
