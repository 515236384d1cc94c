#include "memory.hpp"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <string>

#include "emit.hpp"
#include "wingspan/protocol.hpp"

namespace wingspan::train::mem {

namespace {

constexpr std::size_t kHeaderBytes = 64;   // keeps the 64-byte alignment of the default allocator
constexpr std::uint64_t kMagic = 0x57494e4753504e31ULL;
constexpr int kComponents = static_cast<int>(kAllComponents.size());

struct Header {
    std::uint64_t magic;
    std::int64_t bytes;
    std::atomic<int> component;
};
static_assert(sizeof(Header) <= kHeaderBytes);

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
    auto* h = reinterpret_cast<Header*>(static_cast<char*>(ptr) - kHeaderBytes);
    const int c = h->component.load(std::memory_order_relaxed);
    g_by_component[c].fetch_sub(h->bytes, std::memory_order_relaxed);
    g_live.fetch_sub(h->bytes, std::memory_order_relaxed);
    g_count.fetch_sub(1, std::memory_order_relaxed);
    h->magic = 0;
    h->~Header();
    g_inner->raw_deallocate(h);
}

class CountingAllocator final : public c10::Allocator {
public:
    c10::DataPtr allocate(size_t n) const override {
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
        void* raw = g_inner->raw_allocate(n + kHeaderBytes);
        auto* h = new (raw) Header{kMagic, bytes, {c}};
        (void)h;
        add_bytes(c, bytes);
        g_count.fetch_add(1, std::memory_order_relaxed);
        void* p = static_cast<char*>(raw) + kHeaderBytes;
        return {p, p, &count_delete, c10::Device(c10::DeviceType::CPU)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return &count_delete; }
};

Header* header_of(const void* p) {
    if (!p) return nullptr;
    auto* h = reinterpret_cast<Header*>(const_cast<char*>(static_cast<const char*>(p)) - kHeaderBytes);
    return h->magic == kMagic ? h : nullptr;
}

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
    Header* h = header_of(data);
    if (!h) return -1;
    const int to = static_cast<int>(c);
    const int from = h->component.exchange(to);
    if (from != to) {
        g_by_component[from].fetch_sub(h->bytes);
        raise_peak(g_component_peak[to], g_by_component[to].fetch_add(h->bytes) + h->bytes);
    }
    return h->bytes;
}

bool lookup(const void* data, Component& c, std::int64_t& bytes) {
    Header* h = header_of(data);
    if (!h) return false;
    c = kAllComponents[h->component.load()];
    bytes = h->bytes;
    return true;
}

Snapshot snapshot() {
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
    return s;
}

std::int64_t allocated() { return g_live.load(); }
std::int64_t peak() { return g_peak.load(); }
void reset_component_peaks() {
    for (int i = 0; i < kComponents; ++i) g_component_peak[i].store(g_by_component[i].load());
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

void Sampler::emit_now() {
    const Snapshot s = snapshot();
    const Rss r = read_rss();
    emit(protocol::EventType::Memory,
         {{"step", step()},
          {"phase", phase_name(phase())},
          {"components", protocol::components_to_json(s.components)},
          {"allocated_bytes", s.allocated},
          {"peak_bytes", s.peak},
          {"rss_bytes", r.rss},
          {"rss_peak_bytes", r.hwm}});
}

void Sampler::start(std::int64_t interval_ms) {
    if (running_.exchange(true)) return;
    thread_ = std::thread([this, interval_ms] {
        auto next = std::chrono::steady_clock::now();
        while (running_.load()) {
            emit_now();
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
