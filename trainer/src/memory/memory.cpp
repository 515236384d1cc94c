#include "memory/memory.hpp"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <string>

#include <unistd.h>

#include <unordered_map>

#include "memory/device_memory.hpp"
#include "support/emit.hpp"
#include "support/stop_signals.hpp"
#include "support/torch_version.hpp"
#include "wingspan/nvml.hpp"
#include "wingspan/protocol.hpp"

namespace wingspan::train::mem {

namespace {

constexpr int kComponents = static_cast<int>(kAllComponents.size());

std::atomic<std::int64_t> g_by_component[kComponents];
std::atomic<std::int64_t> g_component_peak[kComponents];
std::atomic<std::int64_t> g_live{0};
std::atomic<std::int64_t> g_peak{0};
std::atomic<std::int64_t> g_count{0};
std::atomic<std::int64_t> g_limit{0};
std::atomic<int> g_current{static_cast<int>(Component::Activations)};
std::atomic<int> g_phase{static_cast<int>(Phase::Setup)};
std::atomic<std::int64_t> g_step{0};
std::mutex g_oom_mutex;
OomRecord g_oom;
c10::Allocator* g_inner = nullptr;
std::atomic<DeviceTracker*> g_tracker{nullptr};
std::mutex g_device_name_mutex;
std::string g_device_name = "cpu";
std::atomic<std::int64_t> g_device_process_peak{-1};

// Every live allocation of the counting allocator: its size, component and the inner
// allocator's own deleter. A table beside the blocks (not a header in front of them) hands the
// inner allocator exactly the bytes asked for, so c10's reporting hook sees the same sizes.
struct Block {
    std::int64_t bytes;
    int component;
    c10::DeleterFnPtr inner_deleter;
    void* inner_context;
};
std::mutex g_blocks_mutex;
std::unordered_map<const void*, Block>& blocks() {
    static auto* table = new std::unordered_map<const void*, Block>();   // outlives static tensors
    return *table;
}

void raise_peak(std::atomic<std::int64_t>& peak, std::int64_t now) {
    std::int64_t p = peak.load(std::memory_order_relaxed);
    while (now > p && !peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
    }
}

void add_bytes(int c, std::int64_t n) {
    raise_peak(g_component_peak[c], g_by_component[c].fetch_add(n, std::memory_order_relaxed) + n);
    raise_peak(g_peak, g_live.fetch_add(n, std::memory_order_relaxed) + n);
}

void count_delete(void* ptr) {
    Block b{};
    {
        std::lock_guard<std::mutex> lock(g_blocks_mutex);
        const auto it = blocks().find(ptr);
        if (it == blocks().end()) return;   // cannot happen: only our DataPtrs carry this deleter
        b = it->second;
        blocks().erase(it);
    }
    g_by_component[b.component].fetch_sub(b.bytes, std::memory_order_relaxed);
    g_live.fetch_sub(b.bytes, std::memory_order_relaxed);
    g_count.fetch_sub(1, std::memory_order_relaxed);
    if (b.inner_deleter) b.inner_deleter(b.inner_context);
}

class CountingAllocator final : public c10::Allocator {
public:
#if WINGSPAN_TORCH_AT_LEAST(2, 3)   // allocate() lost its const; copy_data() became pure virtual
    c10::DataPtr allocate(size_t n) override {
#else
    c10::DataPtr allocate(size_t n) const override {
#endif
        const int c = g_current.load(std::memory_order_relaxed);
        const auto bytes = static_cast<std::int64_t>(n);
        const std::int64_t limit = g_limit.load(std::memory_order_relaxed);
        if (limit > 0) {
            const std::int64_t live = g_live.load(std::memory_order_relaxed);
            if (live + bytes > limit) {
                {
                    std::lock_guard<std::mutex> lock(g_oom_mutex);
                    if (!g_oom.hit) {
                        g_oom = {true, kAllComponents[c], bytes, std::max<std::int64_t>(0, limit - live), limit};
                    }
                }
                TORCH_CHECK(false, "wingspan-train: memory limit of ", limit, " bytes reached: ",
                            component_name(kAllComponents[c]), " asked for ", bytes, " bytes, ",
                            std::max<std::int64_t>(0, limit - live), " available");
            }
        }
        c10::DataPtr inner = g_inner->allocate(n);
        void* p = inner.get();
        if (!p) return inner;   // zero bytes: nothing to count
        const c10::DeleterFnPtr inner_deleter = inner.get_deleter();
        void* inner_context = inner.release_context();
        {
            std::lock_guard<std::mutex> lock(g_blocks_mutex);
            blocks()[p] = {bytes, c, inner_deleter, inner_context};
        }
        add_bytes(c, bytes);
        g_count.fetch_add(1, std::memory_order_relaxed);
        return {p, p, &count_delete, c10::Device(c10::DeviceType::CPU)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return &count_delete; }
#if WINGSPAN_TORCH_AT_LEAST(2, 3)
    void copy_data(void* dest, const void* src, std::size_t count) const override {
        default_copy_data(dest, src, count);
    }
#endif
};

}  // namespace

void install(std::int64_t limit_bytes) {
    static std::once_flag once;
    std::call_once(once, [] {
        g_inner = c10::GetDefaultCPUAllocator();
        static CountingAllocator allocator;
        c10::SetCPUAllocator(&allocator, /*priority=*/100);
    });
    set_limit(limit_bytes);
}

void set_limit(std::int64_t b) { g_limit.store(b); }
std::int64_t limit() { return g_limit.load(); }
Component current() { return kAllComponents[g_current.load(std::memory_order_relaxed)]; }
void set_current(Component c) { g_current.store(static_cast<int>(c), std::memory_order_relaxed); }
DeleterFn counting_deleter() { return &count_delete; }

std::int64_t retag(const void* data, Component c) {
    // A tracked device block (on the CPU too when a test tracks both ways).
    std::int64_t tracked = -1;
    if (DeviceTracker* t = g_tracker.load()) tracked = t->retag(data, c);
    std::int64_t bytes = 0;
    int from = 0;
    const int to = static_cast<int>(c);
    {
        std::lock_guard<std::mutex> lock(g_blocks_mutex);
        const auto it = blocks().find(data);
        if (it == blocks().end()) return tracked;
        bytes = it->second.bytes;
        from = it->second.component;
        it->second.component = to;
    }
    if (from != to) {
        g_by_component[from].fetch_sub(bytes);
        raise_peak(g_component_peak[to], g_by_component[to].fetch_add(bytes) + bytes);
    }
    return bytes;
}

bool lookup(const void* data, Component& c, std::int64_t& bytes) {
    std::lock_guard<std::mutex> lock(g_blocks_mutex);
    const auto it = blocks().find(data);
    if (it == blocks().end()) return false;
    c = kAllComponents[it->second.component];
    bytes = it->second.bytes;
    return true;
}

void set_tracker(DeviceTracker* tracker) { g_tracker.store(tracker); }

void set_device_name(const std::string& name) {
    std::lock_guard<std::mutex> lock(g_device_name_mutex);
    g_device_name = name;
}

Snapshot snapshot() {
    if (DeviceTracker* t = g_tracker.load()) return t->snapshot();
    return counting_snapshot();
}

Snapshot counting_snapshot() {
    Snapshot s;
    for (int i = 0; i < kComponents; ++i) {
        const Component c = kAllComponents[i];
        if (c == Component::FrameworkOverhead || c == Component::KvCache) continue;
        s.components[c] = g_by_component[i].load(std::memory_order_relaxed);
        s.component_peaks[c] = g_component_peak[i].load(std::memory_order_relaxed);
    }
    s.allocated = g_live.load();
    s.peak = g_peak.load();
    s.allocations = g_count.load();
    s.reserved = s.allocated;        // the CPU holds what is allocated (the heap's slack is RSS)
    s.reserved_peak = s.peak;
    return s;
}

std::int64_t allocated() { return snapshot().allocated; }
std::int64_t peak() { return snapshot().peak; }
void reset_peak() { g_peak.store(g_live.load()); }
void reset_component_peaks() {
    for (int i = 0; i < kComponents; ++i) g_component_peak[i].store(g_by_component[i].load());
    if (DeviceTracker* t = g_tracker.load()) t->reset_component_peaks();
}

OomRecord last_oom() {
    std::lock_guard<std::mutex> lock(g_oom_mutex);
    return g_oom;
}
void clear_oom() {
    std::lock_guard<std::mutex> lock(g_oom_mutex);
    g_oom = {};
}

Rss read_rss() {
    Rss r;
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        long long kb = 0;
        if (std::sscanf(line.c_str(), "VmRSS: %lld kB", &kb) == 1) r.rss = kb * 1024;
        else if (std::sscanf(line.c_str(), "VmHWM: %lld kB", &kb) == 1) r.hwm = kb * 1024;
    }
    return r;
}

const char* phase_name(Phase p) {
    switch (p) {
        case Phase::Setup: return "setup";
        case Phase::Forward: return "forward";
        case Phase::Backward: return "backward";
        case Phase::Optimizer: return "optimizer";
        case Phase::Eval: return "eval";
        default: return "idle";
    }
}
void set_phase(Phase p) { g_phase.store(static_cast<int>(p)); }
Phase phase() { return static_cast<Phase>(g_phase.load()); }
void set_step(std::int64_t s) { g_step.store(s); }
std::int64_t step() { return g_step.load(); }

std::optional<std::int64_t> device_process_bytes() {
    DeviceTracker* t = g_tracker.load();
    if (!t || !t->device().is_cuda()) return std::nullopt;
    const auto bytes = nvml::process_bytes(static_cast<long>(getpid()));
    if (bytes) raise_peak(g_device_process_peak, *bytes);
    return bytes;
}

std::optional<std::int64_t> device_process_peak_bytes() {
    const std::int64_t p = g_device_process_peak.load();
    return p >= 0 ? std::optional<std::int64_t>(p) : std::nullopt;
}

void Sampler::emit_now() {
    const Snapshot s = snapshot();
    const Rss r = read_rss();
    std::string device;
    {
        std::lock_guard<std::mutex> lock(g_device_name_mutex);
        device = g_device_name;
    }
    nlohmann::json fields = {{"step", step()},
                             {"phase", phase_name(phase())},
                             {"device", device},
                             {"components", protocol::components_to_json(s.components)},
                             {"allocated_bytes", s.allocated},
                             {"peak_bytes", s.peak},
                             {"reserved_bytes", s.reserved},
                             {"reserved_peak_bytes", s.reserved_peak},
                             {"rss_bytes", r.rss},
                             {"rss_peak_bytes", r.hwm}};
    // What the GPU holds for this process, as nvidia-smi shows it (absent without NVML).
    if (const auto gpu = device_process_bytes()) fields["device_process_bytes"] = *gpu;
    emit(protocol::EventType::Memory, fields);
}

void Sampler::start(std::int64_t interval_ms) {
    if (running_.exchange(true)) return;
    thread_ = std::thread([this, interval_ms] {
        auto next = std::chrono::steady_clock::now();
        while (running_.load()) {
            emit_now();
            stops::fault_point("sampler");
            next += std::chrono::milliseconds(interval_ms);
            const auto now = std::chrono::steady_clock::now();
            if (next < now) next = now;
            std::this_thread::sleep_until(next);
        }
    });
}

void Sampler::stop() {
    if (!running_.exchange(false)) return;
    if (thread_.joinable()) thread_.join();
}

}  // namespace wingspan::train::mem
