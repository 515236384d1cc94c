#include "wingspan/process_stop.hpp"

#include <sys/wait.h>

#include <csignal>

namespace wingspan::process {

std::string signal_name(int signal) {
    // The POSIX names, spelled as kill -l does (sigabbrev_np is glibc only).
    switch (signal) {
        case SIGHUP: return "SIGHUP";
        case SIGINT: return "SIGINT";
        case SIGQUIT: return "SIGQUIT";
        case SIGILL: return "SIGILL";
        case SIGTRAP: return "SIGTRAP";
        case SIGABRT: return "SIGABRT";
        case SIGBUS: return "SIGBUS";
        case SIGFPE: return "SIGFPE";
        case SIGKILL: return "SIGKILL";
        case SIGUSR1: return "SIGUSR1";
        case SIGSEGV: return "SIGSEGV";
        case SIGUSR2: return "SIGUSR2";
        case SIGPIPE: return "SIGPIPE";
        case SIGALRM: return "SIGALRM";
        case SIGTERM: return "SIGTERM";
        case SIGCHLD: return "SIGCHLD";
        case SIGCONT: return "SIGCONT";
        case SIGSTOP: return "SIGSTOP";
        case SIGTSTP: return "SIGTSTP";
        case SIGXCPU: return "SIGXCPU";
        case SIGXFSZ: return "SIGXFSZ";
        default: return "signal " + std::to_string(signal);
    }
}

ExitStatus ExitStatus::from_wait_status(int status) {
    ExitStatus e;
    if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
    else if (WIFEXITED(status)) e.code = WEXITSTATUS(status);
    return e;
}

std::string ExitStatus::describe() const {
    if (signal) return "was killed by signal " + std::to_string(signal) + " (" + signal_name(signal) + ")";
    return "exited with code " + std::to_string(code);
}

StopLadder::StopLadder(std::vector<StopStep> steps) : steps_(std::move(steps)) {}

StopLadder StopLadder::term_then_kill(milliseconds grace) { return StopLadder({{SIGTERM, grace}, {SIGKILL, {}}}); }

StopLadder StopLadder::interrupt_term_kill(milliseconds grace) {
    return StopLadder({{SIGINT, grace}, {SIGTERM, grace / 2}, {SIGKILL, {}}});
}

StopLadder StopLadder::kill_after(milliseconds wait) { return StopLadder({{0, wait}, {SIGKILL, {}}}); }

int StopLadder::request(Clock::time_point now) {
    if (exhausted()) return 0;
    last_at_ = now;
    return steps_[next_++].signal;
}

int StopLadder::due(Clock::time_point now) {
    const auto left = remaining(now);
    if (!left || left->count() > 0) return 0;
    return request(now);
}

std::optional<milliseconds> StopLadder::remaining(Clock::time_point now) const {
    if (!started() || exhausted()) return std::nullopt;
    const auto at = last_at_ + steps_[next_ - 1].grace;
    return std::max(milliseconds(0), std::chrono::ceil<milliseconds>(at - now));
}

}  // namespace wingspan::process
