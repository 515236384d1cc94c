#pragma once
// How wingspan-train hears "stop": SIGINT, SIGTERM and SIGHUP are blocked in every thread from
// before the first library constructor runs (block_stop_signals, from main.cpp's .preinit_array)
// and received by one listener thread with sigwait(). No signal handler ever runs on a compute
// thread.
//
// Why: a handler interrupts whatever the thread was doing, and on some machines (a VM's AVX-512
// state restored after a signal frame; JIT kernels that keep data below the stack pointer)
// oneDNN's sgemm came back from an interrupted kernel with a corrupted heap ("corrupted size vs.
// prev_size", about 1 stop in 4 on a 2-core AMD EPYC). Received by sigwait, a signal interrupts
// nothing: the compute threads never see it.
//
// A graceful listener (training, the rank launcher) records the first signal and lets the run
// stop at its next check; the second ends the process by that signal's default action. Any other
// listener (merge, generate, tokenize, devices) ends the process at the first signal, as before.
// SIGPIPE is ignored: a closed stdout is a failed write, never a death.
#include <csignal>

namespace wingspan::train::stops {

// The signals that ask for a stop.
inline constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

// Blocks the stop signals in the calling thread (and so in every thread it starts later) and
// ignores SIGPIPE. Async-signal-safe; called before any other code of the process runs.
void block_stop_signals();

// Starts the listener thread (once; later calls change nothing).
void start_listener(bool graceful);

// The first stop signal received (0: none yet).
int requested();

// Thrown by long setup work (reading and tokenizing the data set) when a stop came: the run
// ends at once as a run stopped during setup.
struct StopRequested {};

// Throws StopRequested once a stop signal came.
inline void throw_if_requested() {
    if (requested() != 0) throw StopRequested{};
}

// Fault injection for the stop tests: with WINGSPAN_FAULT_STOP_AT=POINT:N (e.g. "backward:3"),
// the N-th time the run passes the named point it sends itself SIGTERM, received like any other
// (the listener, an instant later). Points: data, forward, backward, optimizer, eval, checkpoint,
// sample, sampler. Unset, a call is one relaxed load.
void fault_point(const char* point);

}  // namespace wingspan::train::stops
