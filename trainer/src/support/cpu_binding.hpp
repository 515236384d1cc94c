// Which CPUs run the trainer's compute threads. Once its short spin is over (main.cpp) a
// sleeping OpenMP worker is woken by the main thread at every parallel region, and the kernel
// often places it on the main thread's own CPU: both then share one core while the other idles
// (oneDNN's fp32 products ran at 105 or 210 GFLOP/s per process on two cores, the same shape,
// quiet machine: bench_gemm_shapes). Binding thread i of the pool to CPU i of the process's
// share removes that choice.
#pragma once

#include <string>
#include <vector>

namespace wingspan::train::cpu {

// The CPUs this process may run on (sched_getaffinity, read on first use: call it before binding),
// ascending; never empty.
std::vector<int> allowed_cpus();

// The CPUs a rank's threads take: the allowed set cut into `local_world_size` equal contiguous
// slices, slice `local_rank`; empty when there are fewer CPUs than ranks (nothing to bind to).
std::vector<int> rank_slice(const std::vector<int>& allowed, int local_rank, int local_world_size);

struct Binding {
    bool bound = false;       // every compute thread sits on its own CPU
    std::vector<int> cpus;    // thread i -> cpus[i] when bound
    std::string why;          // one sentence: what was done, or why nothing was
};

// Binds the `threads` threads of ATen's pool (the main thread is thread 0) one per CPU of this
// rank's slice (the job's local rank among `local_world_size` ranks on this machine), unless
// WINGSPAN_CPU_BIND=off, an OpenMP placement variable of the user's (OMP_PROC_BIND, OMP_PLACES,
// GOMP_CPU_AFFINITY, KMP_AFFINITY) decides instead, or the slice has fewer CPUs than threads.
// Checks afterwards that every pool thread kept its CPU; where one did not, all are unbound.
Binding bind_compute_threads(int threads, int local_rank = 0, int local_world_size = 1);

// What the last bind_compute_threads() did (its `why`), for `hello`; empty before the first call.
const std::string& binding_summary();

// The CPUs each of ATen's first `threads` pool threads may run on (thread i at [i]), each read by
// the thread itself: what a binding really did.
std::vector<std::vector<int>> pool_thread_cpus(int threads);

}  // namespace wingspan::train::cpu
