#pragma once
// WINGSPAN_PROFILE_TRACE=<file>: a chrome trace (JSON) of a run's training steps, from
// libtorch's profiler (torch::autograd::profiler::RecordProfile, profiler_legacy.h, the same API
// in libtorch 1.13 and 2.x). It records every ATen op, every autograd node and the scopes of
// profile_scopes.hpp with its start and duration; bench/trainer/step_profile.py turns it into
// seconds per step for GEMM, attention, norms, element-wise ops, loss, optimizer, copies and the
// allocator. The first step of the process is left out: it pays first-touch page faults and
// oneDNN's kernel generation once, which later steps do not.
#include <torch/csrc/autograd/profiler_legacy.h>

#include <cstdint>
#include <memory>
#include <string>

namespace wingspan::train {

class StepTrace {
public:
    // Reads WINGSPAN_PROFILE_TRACE (unset or empty: no trace). `wanted` false ignores it (the
    // ranks after the first of a data-parallel run, which would write the same file). The file
    // is created here, so a path that cannot be written is known before any step (error()).
    explicit StepTrace(bool wanted);
    ~StepTrace();   // finish()
    StepTrace(const StepTrace&) = delete;
    StepTrace& operator=(const StepTrace&) = delete;

    // Empty, or why the trace cannot be written (the run refuses to start then).
    const std::string& error() const { return error_; }
    // Before each training step: the profiler starts before the process's second step.
    void before_step();
    // Stops the profiler and writes the file (a no-op without a trace or once done).
    void finish();

private:
    std::string path_;
    std::string error_;
    std::int64_t steps_seen_ = 0;
    std::int64_t steps_traced_ = 0;
    std::unique_ptr<torch::autograd::profiler::RecordProfile> profile_;
};

}  // namespace wingspan::train
