#pragma once
// Exact memory accounting: a counting CPU allocator (wrapping libtorch's default one) that
// knows live and peak bytes and which component every live allocation belongs to. On a GPU the
// same figures come from c10's reporting hook (device_memory.hpp), registered with set_tracker().
// No torch in this header; tensor helpers live in model.hpp.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "memory/memory_snapshot.hpp"
#include "wingspan/components.hpp"

namespace wingspan::train::mem {

class DeviceTracker;

// Installs the counting allocator as libtorch's CPU allocator (once; later calls only
// change the limit). limit_bytes 0: no limit.
void install(std::int64_t limit_bytes = 0);
void set_limit(std::int64_t limit_bytes);
std::int64_t limit();

// New allocations are attributed to the current component (process-wide: the trainer runs
// its tensor work on one thread; pool threads inherit the attribution).
Component current();
void set_current(Component c);
class Scope {
public:
    explicit Scope(Component c) : prev_(current()) { set_current(c); }
    ~Scope() { set_current(prev_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

private:
    Component prev_;
};

// The deleter of every allocation made by the counting allocator: a storage whose DataPtr
// has another deleter (from_blob, allocated before install()) is not counted.
using DeleterFn = void (*)(void*);
DeleterFn counting_deleter();

// Moves a live allocation (by the data pointer of its storage) to another component.
// Returns its size in bytes, or -1 if the pointer is not one of ours.
std::int64_t retag(const void* storage_data, Component c);
// Component and size of a live allocation, false if unknown.
bool lookup(const void* storage_data, Component& c, std::int64_t& bytes);

// The training device's figures: the tracker's when one is set, else the counting allocator's.
Snapshot snapshot();
Snapshot counting_snapshot();   // the CPU counting allocator's, always
std::int64_t allocated();
std::int64_t peak();
// Peak of allocated bytes starts again from the live bytes (tests).
void reset_peak();
// The tracker of the training device (nullptr: the CPU's counting allocator is the source).
void set_tracker(DeviceTracker* tracker);
// The device named in `memory` events ("cpu", "cuda:0", "mps").
void set_device_name(const std::string& name);
// Component peaks start again from the live bytes (after setup: load temporaries are not part
// of a training step).
void reset_component_peaks();

// The allocation that hit the limit (the allocator throws c10::Error after recording it).
struct OomRecord {
    bool hit = false;
    Component component = Component::Activations;
    std::int64_t bytes = 0;        // asked
    std::int64_t available = 0;    // limit - live at that moment
    std::int64_t limit = 0;
};
OomRecord last_oom();
void clear_oom();

// Process resident set and its high-water mark from /proc/self/status (0 where unknown).
struct Rss {
    std::int64_t rss = 0, hwm = 0;
};
Rss read_rss();

// GPU bytes of this process as NVML reports them (nvidia-smi's figure), for a CUDA run where
// NVML is present; nullopt otherwise. Each read raises the peak that done reports.
std::optional<std::int64_t> device_process_bytes();
std::optional<std::int64_t> device_process_peak_bytes();

// Phase and step shown in `memory` events.
enum class Phase { Setup, Forward, Backward, Optimizer, Eval, Idle };
const char* phase_name(Phase p);
void set_phase(Phase p);
Phase phase();
void set_step(std::int64_t s);
std::int64_t step();

// Emits a `memory` event every interval_ms from its own thread until stopped.
class Sampler {
public:
    Sampler() = default;
    ~Sampler() { stop(); }
    void start(std::int64_t interval_ms);
    void stop();
    static void emit_now();   // one event from the calling thread

private:
    std::thread thread_;
    std::atomic<bool> running_{false};
};

}  // namespace wingspan::train::mem
