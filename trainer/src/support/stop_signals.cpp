#include "support/stop_signals.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

namespace wingspan::train::stops {

namespace {

std::atomic<int> g_requested{0};
std::atomic<bool> g_started{false};

sigset_t stop_set() {
    sigset_t s;
    sigemptyset(&s);
    for (const int sig : kStopSignals) sigaddset(&s, sig);
    return s;
}

// Ends the process as `sig`'s default action would (the exit status a launcher or shell reads).
[[noreturn]] void die_by(int sig) {
    std::signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    ::kill(::getpid(), sig);
    // Another thread may still block it; the unblocked one here takes it. Should it not:
    ::_exit(128 + sig);
}

void listen(bool graceful) {
    const sigset_t set = stop_set();
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        int none = 0;
        const bool first = g_requested.compare_exchange_strong(none, sig);
        if (!graceful || !first) die_by(sig);
    }
}

}  // namespace

void block_stop_signals() {
    const sigset_t set = stop_set();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
}

void start_listener(bool graceful) {
    if (g_started.exchange(true)) return;
    // The mask is the calling thread's: block here too, for a caller that did not block first.
    block_stop_signals();
    std::thread(listen, graceful).detach();
}

int requested() { return g_requested.load(); }

void fault_point(const char* point) {
    struct Target {
        std::string point;
        long count = 0;
    };
    static const Target target = [] {
        Target t;
        const char* v = std::getenv("WINGSPAN_FAULT_STOP_AT");
        if (!v) return t;
        const std::string s = v;
        const auto colon = s.find(':');
        t.point = s.substr(0, colon);
        t.count = colon == std::string::npos ? 1 : std::strtol(s.c_str() + colon + 1, nullptr, 10);
        return t;
    }();
    static std::atomic<long> passes{0};
    if (target.point.empty() || target.point != point) return;
    if (passes.fetch_add(1) + 1 == target.count) ::kill(::getpid(), SIGTERM);
}

}  // namespace wingspan::train::stops
