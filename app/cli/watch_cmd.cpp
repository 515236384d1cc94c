// `wingspan watch [--plan FILE] -- COMMAND...`: runs a command (a recipe's training command, a
// script) and records it in the run history like a wingspan-train run (core's WatchedRun).
// Its stdout's protocol lines are the run; everything else it prints is echoed and logged.
// Ctrl-C (or SIGTERM) stops it: SIGINT to its process group, SIGTERM after a second request
// or 20 s, SIGKILL 10 s later.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <ostream>

#include "cli.hpp"
#include "recipe_cmd.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/recipe_watch.hpp"
#include "wingspan/units.hpp"

using nlohmann::json;

namespace wingspan::cli {

namespace {

constexpr const char* kWatchUsage = R"(usage: wingspan watch [--plan predicted.json] [--framework ID] [--label NAME] -- COMMAND [ARGS...]

Runs COMMAND and records it in the run history (`wingspan runs`, the window's Run tab) like a
wingspan-train run: the run-protocol lines it prints on stdout (a recipe's
wingspan_reporter.py prints them) are its memory, steps and end; its other output is echoed
and kept in the run's log. --plan gives the prediction (a recipe's predicted.json) for a
command that prints none. Ctrl-C stops the command cleanly (SIGINT, then SIGTERM, then SIGKILL).
The exit status is the command's.
)";

volatile std::sig_atomic_t g_stop_requests = 0;
void on_stop_signal(int) { g_stop_requests = g_stop_requests + 1; }

struct LineBuffer {
    std::string pending;
    template <typename F>
    void feed(const char* data, size_t n, F&& each) {
        pending.append(data, n);
        size_t start = 0;
        for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1)
            each(pending.substr(start, nl - start));
        pending.erase(0, start);
    }
};

}  // namespace

int run_watch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const std::string&) {
    json plan;
    std::string framework, label;
    std::vector<std::string> command;
    size_t i = 1;
    for (; i < args.size() && args[i] != "--"; ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            out << kWatchUsage;
            return kExitOk;
        }
        if (a != "--plan" && a != "--framework" && a != "--label")
            throw InputError("watch: unknown option '" + a + "' (the command goes after --)");
        if (i + 1 >= args.size()) throw InputError("option " + a + " needs a value");
        const std::string v = args[++i];
        if (a == "--framework") framework = v;
        if (a == "--label") label = v;
        if (a == "--plan") {
            plan = read_untrusted_json_file(v);   // regular file, bounded size and depth
            if (!plan.is_object()) throw InputError("'" + v + "' is not a JSON plan");
        }
    }
    command.assign(args.begin() + std::min(args.size(), i + 1), args.end());
    if (i >= args.size() || command.empty())
        throw InputError("watch needs a command after --, e.g. `wingspan watch -- python3 train.py`");

    WatchedRun run(RunStore(), plan.is_null() ? json() : plan, framework, command, label);
    err << "wingspan: watching `" << command.front() << "`, recording to " << run.folder().string() << "\n";

    int out_pipe[2], err_pipe[2];
    if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
        err << "wingspan: cannot create pipes: " << std::strerror(errno) << "\n";
        return kExitFailure;
    }
    const pid_t child = fork();
    if (child < 0) {
        err << "wingspan: cannot start the command: " << std::strerror(errno) << "\n";
        return kExitFailure;
    }
    if (child == 0) {
        setpgid(0, 0);   // its own group: Ctrl-C reaches it through us, once, as a clean stop
        signal(SIGINT, SIG_DFL);   // even when we were started with them ignored (a background job)
        signal(SIGTERM, SIG_DFL);
        dup2(out_pipe[1], STDOUT_FILENO);
        dup2(err_pipe[1], STDERR_FILENO);
        close(out_pipe[0]), close(out_pipe[1]), close(err_pipe[0]), close(err_pipe[1]);
        std::vector<char*> argv;
        for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execvp(argv[0], argv.data());
        std::fprintf(stderr, "wingspan watch: cannot run '%s': %s\n", argv[0], std::strerror(errno));
        _exit(127);
    }
    setpgid(child, child);
    close(out_pipe[1]), close(err_pipe[1]);

    struct sigaction sa {}, old_int {}, old_term {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    g_stop_requests = 0;

    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    LineBuffer out_lines, err_lines;
    int handled_requests = 0, signals_sent = 0;
    Clock::time_point last_signal;
    bool open_out = true, open_err = true;
    int status = 0;
    bool exited = false;
    char buf[65536];
    // Until the command has exited and its output is drained; stop requests are served all along,
    // also after the command closed its output.
    while (!exited || open_out || open_err) {
        if (g_stop_requests > handled_requests ||
            (signals_sent > 0 && !exited && Clock::now() - last_signal > std::chrono::seconds(signals_sent == 1 ? 20 : 10))) {
            if (signals_sent < 3 && !exited) {
                const int sig = signals_sent == 0 ? SIGINT : signals_sent == 1 ? SIGTERM : SIGKILL;
                kill(-child, sig);
                err << "wingspan: stopping the command (" << (sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGKILL")
                    << ")\n";
                ++signals_sent;
                last_signal = Clock::now();
            }
            handled_requests = g_stop_requests;
        }
        pollfd fds[2] = {{open_out ? out_pipe[0] : -1, POLLIN, 0}, {open_err ? err_pipe[0] : -1, POLLIN, 0}};
        const int ready = poll(fds, 2, 200);
        if (ready < 0 && errno != EINTR) break;
        for (int k = 0; k < 2 && ready > 0; ++k) {
            if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const ssize_t n = read(fds[k].fd, buf, sizeof buf);
            if (n <= 0) {
                (k == 0 ? open_out : open_err) = false;
                continue;
            }
            if (k == 0) {
                out_lines.feed(buf, size_t(n), [&](const std::string& line) {
                    run.stdout_line(line, seconds());
                    if (line.rfind("{\"v\":", 0) != 0) out << line << "\n" << std::flush;
                });
            } else {
                err.write(buf, n);
                err.flush();
                err_lines.feed(buf, size_t(n), [&](const std::string& line) { run.stderr_line(line, seconds()); });
            }
        }
        // A grandchild may keep the pipes open after the command itself exited: stop reading
        // then, or the run would never end.
        if (!exited && waitpid(child, &status, WNOHANG) == child) exited = true;
        if (exited && ready == 0) open_out = open_err = false;
    }
    if (!out_lines.pending.empty()) run.stdout_line(out_lines.pending, seconds());
    if (!err_lines.pending.empty()) run.stderr_line(err_lines.pending, seconds());
    close(out_pipe[0]), close(err_pipe[0]);
    while (!exited && waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    run.finish(code, sig, signals_sent > 0);

    const RunRecord& r = run.record();
    const RunSummary s = r.summary();
    err << "wingspan: " << r.status_text() << "; " << r.step_events() << " steps, " << r.memory_events()
        << " memory samples; peak " << format_bytes(double(s.measured_peak)) << " allocated (predicted "
        << format_bytes(double(s.predicted_peak)) << "), process peak " << format_bytes(double(s.measured_rss_peak))
        << " (predicted " << format_bytes(double(s.predicted_total)) << ")\n"
        << "wingspan: run recorded in " << run.folder().string() << "\n";
    return sig ? 128 + sig : code;
}

}  // namespace wingspan::cli
