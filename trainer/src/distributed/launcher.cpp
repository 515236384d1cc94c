#include "distributed/launcher.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "wingspan/trainer_invocation.hpp"
#include "support/cpu_binding.hpp"
#include "support/emit.hpp"
#include "wingspan/line_framer.hpp"
#include "wingspan/process_stop.hpp"
#include "support/stop_signals.hpp"
#include "run/train.hpp"

namespace wingspan::train {

namespace {


// A port the kernel says is free now (the rank-0 store binds it a moment later).
int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    ::close(fd);
    return port;
}

struct Rank {
    int index = 0;
    pid_t pid = -1;
    int out_fd = -1;
    LineFramer lines{kMaxProtocolLineBytes};   // a partial line, bounded as the window reads it
    bool exited = false;
    int status = 0;
};

void write_line(std::string_view line) {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
}

// Relays the rank's complete lines (and, at its end, a partial last one) to our stdout. A line
// over the bound is not relayed: a `line_too_long` error with the rank stands for it.
void relay(Rank& r, bool flush_partial) {
    const auto pass = [&r](const FramedLine& line) {
        if (line.over_long) write_line(line_too_long_event(elapsed_s(), "stdout", r.lines.max_line(), line.text, r.index));
        else write_line(line.text);
    };
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(r.out_fd, buf, sizeof buf);
        if (n > 0) {
            r.lines.feed(buf, static_cast<size_t>(n), pass);
            continue;
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            ::close(r.out_fd);
            r.out_fd = -1;
            flush_partial = true;
        }
        break;
    }
    if (flush_partial) r.lines.finish(pass);
    std::fflush(stdout);
}

}  // namespace

bool wants_launcher(const std::vector<std::string>& args) {
    if (std::getenv("WORLD_SIZE")) return false;   // a rank: run_train reports a stray --nproc
    return std::find(args.begin(), args.end(), "--nproc") != args.end();
}

int run_launcher(const std::vector<std::string>& args, const std::string& argv0) {
    TrainerInvocation opt;
    bool help = false;
    try {
        opt = TrainerInvocation::from_args(args, help);
    } catch (const ArgError&) {
        return run_train(args, argv0);   // the one place that reports bad arguments
    }
    if (help || opt.nproc <= 1) return run_train(args, argv0);

    // The ranks' command line: ours without --nproc, with a fair share of the cores each.
    std::vector<std::string> rank_args;
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--nproc") {
            ++i;
            continue;
        }
        rank_args.push_back(args[i]);
    }
    if (opt.threads == 0) {
        const int cores = static_cast<int>(cpu::allowed_cpus().size());
        rank_args.push_back("--threads");
        rank_args.push_back(std::to_string(std::max(1, cores / opt.nproc)));
    }
    const char* port_env = std::getenv("MASTER_PORT");
    const int port = port_env && *port_env ? std::atoi(port_env) : free_port();
    if (port <= 0 || port > 65535) {
        emit(protocol::EventType::Error, {{"code", "io"}, {"message", "no free TCP port for the ranks' rendezvous"}});
        return 1;
    }

    // The first stop signal is forwarded to every rank; a second ends the launcher (and, by
    // PR_SET_PDEATHSIG, the ranks). The ranks inherit the blocked mask and listen themselves.
    stops::start_listener(true);
    std::vector<Rank> ranks(static_cast<size_t>(opt.nproc));
    for (int r = 0; r < opt.nproc; ++r) {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) {
            std::perror("wingspan-train: pipe");
            return 1;
        }
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::dup2(fds[1], STDOUT_FILENO);
            // A launcher killed outright takes its ranks with it.
            ::prctl(PR_SET_PDEATHSIG, SIGTERM);
            ::setenv("RANK", std::to_string(r).c_str(), 1);
            ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
            ::setenv("WORLD_SIZE", std::to_string(opt.nproc).c_str(), 1);
            ::setenv("LOCAL_WORLD_SIZE", std::to_string(opt.nproc).c_str(), 1);
            ::setenv("MASTER_ADDR", "127.0.0.1", 1);
            ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
            ::setenv("WINGSPAN_CLOCK_ORIGIN_NS", std::to_string(clock_origin_ns()).c_str(), 1);
            std::vector<char*> argv;
            std::string self = argv0;
            argv.push_back(self.data());
            for (auto& a : rank_args) argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv("/proc/self/exe", argv.data());
            std::perror("wingspan-train: exec");
            ::_exit(127);
        }
        ::close(fds[1]);
        if (pid < 0) {
            std::perror("wingspan-train: fork");
            return 1;
        }
        ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
        Rank& rank = ranks[static_cast<size_t>(r)];
        rank.index = r;
        rank.pid = pid;
        rank.out_fd = fds[0];
    }

    bool forwarded = false;
    int first_failure = 0;
    // After a rank failed, the others fail their next collective at once (closed connection) or
    // within the collective timeout; past that (and 10 s), they are ended (core's stop policy).
    process::StopLadder after_failure = process::StopLadder::kill_after(std::chrono::seconds(opt.dist_timeout_s + 10));
    for (;;) {
        if (const int sig = stops::requested(); sig && !forwarded) {
            forwarded = true;
            for (auto& r : ranks)
                if (!r.exited) ::kill(r.pid, SIGTERM);
        }
        std::vector<pollfd> pfds;
        for (auto& r : ranks)
            if (r.out_fd >= 0) pfds.push_back({r.out_fd, POLLIN, 0});
        if (!pfds.empty()) ::poll(pfds.data(), pfds.size(), 100);
        else ::usleep(50 * 1000);
        for (auto& r : ranks)
            if (r.out_fd >= 0) relay(r, false);
        for (auto& r : ranks) {
            if (r.exited) continue;
            int st = 0;
            if (::waitpid(r.pid, &st, WNOHANG) != r.pid) continue;
            r.exited = true;
            r.status = st;
            if (r.out_fd >= 0) relay(r, true);
            const process::ExitStatus ended = process::ExitStatus::from_wait_status(st);
            if (ended.ok()) continue;
            if (!first_failure) first_failure = ended.code == 2 ? 2 : 1;
            // A rank that exits with an error code has said why; one killed by a signal has not.
            if (ended.signal && !forwarded)
                emit(protocol::EventType::Error,
                     {{"code", "rank_failed"},
                      {"rank", r.index},
                      {"message", "rank " + std::to_string(r.index) + " (pid " + std::to_string(r.pid) + ") " +
                                      ended.describe() + "; the other ranks stop at their next collective"}});
            if (!after_failure.started()) after_failure.request(process::Clock::now());
        }
        const bool all_exited = std::all_of(ranks.begin(), ranks.end(), [](const Rank& r) { return r.exited; });
        if (all_exited) break;
        if (const int sig = after_failure.due(process::Clock::now()))
            for (auto& r : ranks)
                if (!r.exited) ::kill(r.pid, sig);
    }
    for (auto& r : ranks)
        if (r.out_fd >= 0) relay(r, true);
    return first_failure;
}

}  // namespace wingspan::train
