#include "support/cpu_binding.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include <ATen/Parallel.h>

namespace wingspan::train::cpu {
namespace {

std::string g_summary;

std::string env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

std::string join(const std::vector<int>& cpus) {
    std::string s;
    for (size_t i = 0; i < cpus.size(); ++i) s += (i ? "," : "") + std::to_string(cpus[i]);
    return s;
}

std::string count(int n, const char* noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

bool set_this_thread(const std::vector<int>& cpus) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) CPU_SET(c, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

std::vector<int> cpus_in(const cpu_set_t& set) {
    std::vector<int> out;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) out.push_back(c);
    return out;
}

// The CPUs the calling thread may run on; empty if they cannot be read.
std::vector<int> this_thread_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    return pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0 ? cpus_in(set) : std::vector<int>{};
}

// Runs fn(thread id) once on every thread of ATen's pool: one index per thread, so each
// thread's chunk is its own id (at::parallel_for splits [0, n) into n chunks of one). The ids
// are checked, not assumed: a thread that ran another's index makes the result false.
template <typename Fn>
bool on_every_pool_thread(int threads, Fn fn) {
    std::atomic<int> ran{0};
    std::atomic<bool> ok{true};
    at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            if (at::get_thread_num() != i) ok = false;
            if (!fn(static_cast<int>(i))) ok = false;
            ++ran;
        }
    });
    return ok && ran == threads;
}

// Why the placement is left to someone else, or empty.
std::string reason_not_to_bind() {
    const std::string mode = env_or_empty("WINGSPAN_CPU_BIND");
    if (mode == "off") return "not bound (WINGSPAN_CPU_BIND=off)";
    for (const char* var : {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "KMP_AFFINITY"})
        if (!env_or_empty(var).empty()) return std::string("not bound: the environment's ") + var + " places the threads";
    return {};
}

}  // namespace

std::vector<int> allowed_cpus() {
    // Read once: binding narrows the calling thread's own mask, and sched_getaffinity(0) reads
    // the calling thread's, so a later read would see one CPU where the process has several.
    static const std::vector<int> cpus = [] {
        cpu_set_t set;
        CPU_ZERO(&set);
        std::vector<int> out = sched_getaffinity(0, sizeof set, &set) == 0 ? cpus_in(set) : std::vector<int>{};
        if (out.empty()) out.push_back(std::max(0, sched_getcpu()));
        return out;
    }();
    return cpus;
}

std::vector<int> rank_slice(const std::vector<int>& allowed, int local_rank, int local_world_size) {
    if (local_world_size <= 1) return allowed;
    const size_t per_rank = allowed.size() / static_cast<size_t>(local_world_size);
    if (per_rank == 0 || local_rank < 0 || local_rank >= local_world_size) return {};
    const auto first = allowed.begin() + static_cast<std::ptrdiff_t>(per_rank * static_cast<size_t>(local_rank));
    return {first, first + static_cast<std::ptrdiff_t>(per_rank)};
}

Binding bind_compute_threads(int threads, int local_rank, int ranks) {
    Binding b;
    b.why = reason_not_to_bind();
    const std::vector<int> allowed = allowed_cpus();
    const std::vector<int> slice = rank_slice(allowed, local_rank, ranks);
    if (b.why.empty() && threads <= 1 && ranks <= 1)
        b.why = "not bound: one thread, free to run on any of CPUs " + join(allowed);
    if (b.why.empty() && static_cast<int>(slice.size()) < threads)
        b.why = "not bound: " + count(threads, "thread") + ", " + count(static_cast<int>(slice.size()), "CPU") +
                " for this process (" + std::to_string(allowed.size()) + " allowed, " + count(ranks, "rank") + ")";
    if (!b.why.empty()) {
        g_summary = b.why;
        return b;
    }
    const std::vector<int> cpus(slice.begin(), slice.begin() + threads);
    const bool set = on_every_pool_thread(threads, [&](int i) { return set_this_thread({cpus[size_t(i)]}); });
    // A second region must find every thread where the first put it: libgomp reuses its pool
    // threads in team order, which is what makes a per-thread binding last.
    const bool kept = set && on_every_pool_thread(threads, [&](int i) { return this_thread_cpus() == std::vector<int>{cpus[size_t(i)]}; });
    if (!kept) {
        on_every_pool_thread(threads, [&](int) { return set_this_thread(allowed); });
        b.why = "not bound: the thread pool did not keep one thread per CPU; threads run on any of CPUs " + join(allowed);
    } else {
        b.bound = true;
        b.cpus = cpus;
        b.why = "compute threads bound one per CPU: " + join(cpus) + (ranks > 1 ? " (this rank's share)" : "");
    }
    g_summary = b.why;
    return b;
}

const std::string& binding_summary() { return g_summary; }

std::vector<std::vector<int>> pool_thread_cpus(int threads) {
    std::vector<std::vector<int>> out(static_cast<size_t>(std::max(threads, 1)));
    on_every_pool_thread(threads, [&](int i) {
        out[size_t(i)] = this_thread_cpus();
        return !out[size_t(i)].empty();
    });
    return out;
}

}  // namespace wingspan::train::cpu
