#include "memory/device_memory.hpp"

#include "memory/memory.hpp"

namespace wingspan::train::mem {

void DeviceTracker::reportMemoryUsage(void* ptr, std::int64_t alloc_size, detail::ReportedTotal /*total_allocated*/,
                                      detail::ReportedTotal total_reserved, c10::Device device) {
    if (device.type() != device_.type()) return;
    if (device_.has_index() && device.has_index() && device.index() != device_.index()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (alloc_size > 0) {
        const Component c = current();
        blocks_[ptr] = {alloc_size, c};
        raise(peaks_[c], live_[c] += alloc_size);
        raise(peak_, allocated_ += alloc_size);
    } else if (alloc_size < 0) {
        const auto it = blocks_.find(ptr);
        if (it == blocks_.end()) return;   // made before tracking began
        live_[it->second.component] -= it->second.bytes;
        allocated_ -= it->second.bytes;
        blocks_.erase(it);
    }
    // A caching allocator reports what it holds from the device; the CPU's allocator reports
    // 0 there: what it holds is what is allocated.
    const auto reserved = static_cast<std::int64_t>(total_reserved);
    if (reserved > 0) allocator_reports_reserved_ = true;
    reserved_ = allocator_reports_reserved_ ? reserved : allocated_;
    raise(reserved_peak_, reserved_);
}

Snapshot DeviceTracker::snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    Snapshot s;
    for (const Component c : kAllComponents) {
        if (c == Component::FrameworkOverhead || c == Component::KvCache) continue;
        const auto l = live_.find(c), p = peaks_.find(c);
        s.components[c] = l == live_.end() ? 0 : l->second;
        s.component_peaks[c] = p == peaks_.end() ? 0 : p->second;
    }
    s.allocated = allocated_;
    s.peak = peak_;
    s.allocations = static_cast<std::int64_t>(blocks_.size());
    s.reserved = reserved_;
    s.reserved_peak = reserved_peak_;
    return s;
}

std::int64_t DeviceTracker::retag(const void* ptr, Component c) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = blocks_.find(ptr);
    if (it == blocks_.end()) return -1;
    Block& b = it->second;
    if (b.component != c) {
        live_[b.component] -= b.bytes;
        raise(peaks_[c], live_[c] += b.bytes);
        b.component = c;
    }
    return b.bytes;
}

void DeviceTracker::reset_component_peaks() {
    std::lock_guard<std::mutex> lock(mutex_);
    peaks_ = live_;
}

DeviceTracking::DeviceTracking(c10::Device device)
    : tracker_(std::make_shared<DeviceTracker>(device)), guard_(c10::DebugInfoKind::PROFILER_STATE, tracker_) {
    set_tracker(tracker_.get());
}

DeviceTracking::~DeviceTracking() { set_tracker(nullptr); }

}  // namespace wingspan::train::mem
