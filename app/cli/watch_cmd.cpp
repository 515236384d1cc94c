// `wingspan watch [--plan FILE] -- COMMAND...`: runs a command (a recipe's training command, a
// script) and records it in the run history like a wingspan-train run (core's WatchedRun).
// Its stdout's protocol lines are the run; everything else it prints is echoed and logged.
// Ctrl-C (or SIGTERM) stops it: SIGINT to its process group, SIGTERM after a second request
// or 20 s, SIGKILL 10 s later; the same for what it leaves writing to its output after it
// exited, and for stop requests after it exited, until every writer is gone. The recorder's
// disk filling up never stops the command (core's WatchedRun counts what it could not store).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <ostream>

#include "cli.hpp"
#include "recipe_cmd.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/process_stop.hpp"
#include "wingspan/recipe_watch.hpp"
#include "wingspan/units.hpp"

using nlohmann::json;

namespace wingspan::cli {

namespace {

constexpr const char* kWatchUsage = R"(usage: wingspan watch [--plan predicted.json] [--framework ID] [--label NAME] [--stop-grace S] -- COMMAND [ARGS...]

Runs COMMAND and records it in the run history (`wingspan runs`, the window's Run tab) like a
wingspan-train run: the run-protocol lines it prints on stdout (a recipe's
wingspan_reporter.py prints them) are its memory, steps and end; its other output is echoed
and kept in the run's log. --plan gives the prediction (a recipe's predicted.json) for a
command that prints none. Ctrl-C stops the command cleanly (SIGINT, then SIGTERM after
--stop-grace seconds, default 20, then SIGKILL half that later), and so are processes it leaves
writing to its output after it exited. A full disk under the run history never stops the
command: the events that could not be recorded are counted and reported at the end.
The exit status is the command's.
)";

// Longer output lines are echoed whole, recorded cut with a `line_too_long` error event.
constexpr std::size_t kMaxLine = 1 << 20;

// Stop signals for the command's process group on core's ladder (process_stop.hpp): SIGINT,
// SIGTERM after `grace`, SIGKILL half of it later; a further stop request climbs at once.
class Stopper {
public:
    Stopper(pid_t group, std::chrono::milliseconds grace)
        : group_(group), ladder_(process::StopLadder::interrupt_term_kill(grace)) {}

    bool started() const { return ladder_.started(); }
    bool exhausted() const { return ladder_.exhausted(); }
    process::Clock::time_point last() const { return ladder_.last_step_at(); }
    // A stop request: the next signal now.
    void request(std::ostream& err, const char* what) { send(ladder_.request(process::Clock::now()), err, what); }
    // The next signal when the grace of the last one ran out.
    void poll(std::ostream& err, const char* what) { send(ladder_.due(process::Clock::now()), err, what); }

private:
    void send(int sig, std::ostream& err, const char* what) {
        // An empty group (only a writer in a session of its own is left) is not reported.
        if (sig != 0 && kill(-group_, sig) == 0)
            err << "wingspan: stopping " << what << " (" << process::signal_name(sig) << ")\n";
    }

    pid_t group_;
    process::StopLadder ladder_;
};

volatile std::sig_atomic_t g_stop_requests = 0;
void on_stop_signal(int) { g_stop_requests = g_stop_requests + 1; }

// Watch's signals while it runs a command, restored after: SIGINT, SIGTERM and SIGHUP (the
// terminal closed) are stop requests; SIGPIPE is ignored, so a closed stdout (`| head`) only
// ends the echo, never the command or its record.
class StopSignals {
public:
    StopSignals() {
        struct sigaction stop {}, ignore {};
        stop.sa_handler = on_stop_signal;
        sigemptyset(&stop.sa_mask);
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        for (size_t k = 0; k < 4; ++k) sigaction(kSignals[k], k < 3 ? &stop : &ignore, &old_[k]);
        g_stop_requests = 0;
    }
    ~StopSignals() {
        for (size_t k = 0; k < 4; ++k) sigaction(kSignals[k], &old_[k], nullptr);
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

private:
    static constexpr int kSignals[4] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    struct sigaction old_[4] {};
};

// Forks and runs the command in a process group of its own (Ctrl-C reaches it through us, once,
// as a clean stop) with its stdout and stderr on the pipes. -1 if it cannot fork.
pid_t start_command(const std::vector<std::string>& command, int out_pipe[2], int err_pipe[2]) {
    const pid_t child = fork();
    if (child == 0) {
        setpgid(0, 0);
        // Default dispositions, even when watch was started with them ignored (a background job).
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) signal(sig, SIG_DFL);
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
    if (child < 0) return child;
    setpgid(child, child);
    close(out_pipe[1]), close(err_pipe[1]);
    return child;
}

}  // namespace

int run_watch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const std::string&) {
    json plan;
    std::string framework, label;
    std::chrono::milliseconds grace(20000);
    std::vector<std::string> command;
    size_t i = 1;
    for (; i < args.size() && args[i] != "--"; ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            out << kWatchUsage;
            return kExitOk;
        }
        if (a != "--plan" && a != "--framework" && a != "--label" && a != "--stop-grace")
            throw InputError("watch: unknown option '" + a + "' (the command goes after --)");
        if (i + 1 >= args.size()) throw InputError("option " + a + " needs a value");
        const std::string v = args[++i];
        if (a == "--framework") framework = v;
        if (a == "--label") label = v;
        if (a == "--stop-grace") {
            double seconds = -1;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
            if (ec != std::errc() || end != v.data() + v.size() || !(seconds >= 0.1 && seconds <= 3600))
                throw InputError("--stop-grace expects seconds from 0.1 to 3600, got '" + v + "'");
            grace = std::chrono::milliseconds(std::llround(seconds * 1000));
        }
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
    const StopSignals signals;   // before the fork: a Ctrl-C from here on is a stop request
    const pid_t child = start_command(command, out_pipe, err_pipe);
    if (child < 0) {
        err << "wingspan: cannot start the command: " << std::strerror(errno) << "\n";
        return kExitFailure;
    }

    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    LineFramer out_lines(kMaxLine), err_lines(kMaxLine);
    Stopper stopper(child, grace);
    int handled_requests = 0;
    bool user_stop = false;
    bool open_out = true, open_err = true;
    int status = 0;
    bool exited = false;
    Clock::time_point exited_at;
    char buf[65536];
    auto on_out_line = [&](const FramedLine& line) {
        const std::string text(line.text);
        // Events are recorded, not echoed; every other line (one that only looks like an event
        // included) reaches the terminal as the command wrote it. An over-long line is echoed
        // whole (its start here, the rest as it arrives) and recorded cut, with an error event.
        if (line.over_long) run.over_long_line("stdout", line.text, kMaxLine, seconds());
        const bool event = !line.over_long && run.stdout_line(text, seconds());
        if (!event) out << text << (line.over_long ? "" : "\n") << std::flush;
    };
    auto on_out_overflow = [&](std::string_view rest, bool ends) {
        out.write(rest.data(), std::streamsize(rest.size()));
        if (ends) out << "\n";
        out.flush();
    };
    auto on_err_line = [&](const FramedLine& line) {
        if (line.over_long) run.over_long_line("stderr", line.text, kMaxLine, seconds());
        else run.stderr_line(std::string(line.text), seconds());
    };
    // Until the command has exited and nothing writes to its output any more. Stop requests are
    // served all along, also after the command exited: they go to its process group, where
    // whatever it left running is.
    while (open_out || open_err || (!exited && !stopper.exhausted())) {
        const char* what = exited ? "what the command left running" : "the command";
        if (g_stop_requests > handled_requests) {
            user_stop = true;
            handled_requests = g_stop_requests;
            stopper.request(err, what);
        } else {
            stopper.poll(err, what);
        }
        // The command exited but its output stays open and busy: something it started keeps
        // writing. Stopped like the command, after a moment to drain.
        if (exited && !stopper.started() && Clock::now() - exited_at > std::chrono::seconds(2)) stopper.request(err, what);
        // Past SIGKILL, a writer outside the group (its own session) may still hold the pipes: stop reading.
        if (stopper.exhausted() && Clock::now() - stopper.last() > std::chrono::seconds(2)) open_out = open_err = false;
        pollfd fds[2] = {{open_out ? out_pipe[0] : -1, POLLIN, 0}, {open_err ? err_pipe[0] : -1, POLLIN, 0}};
        const int ready = (open_out || open_err) ? poll(fds, 2, 200) : (usleep(50000), 0);
        if (ready < 0 && errno != EINTR) break;
        for (int k = 0; k < 2 && ready > 0; ++k) {
            if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const ssize_t n = read(fds[k].fd, buf, sizeof buf);
            if (n <= 0) {
                (k == 0 ? open_out : open_err) = false;
                continue;
            }
            if (k == 0) {
                out_lines.feed(buf, size_t(n), on_out_line, on_out_overflow);
            } else {
                err.write(buf, n);
                err.flush();
                err_lines.feed(buf, size_t(n), on_err_line);
            }
        }
        if (const std::string w = run.take_warning(); !w.empty()) err << "wingspan: warning: " << w << "\n";
        if (!exited && waitpid(child, &status, WNOHANG) == child) {
            exited = true;
            exited_at = Clock::now();
        }
        // After the command exited, a quiet output means nothing is writing: done.
        if (exited && ready == 0) open_out = open_err = false;
    }
    out_lines.finish(on_out_line);
    err_lines.finish(on_err_line);
    close(out_pipe[0]), close(err_pipe[0]);
    while (!exited && waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    const process::ExitStatus ended = process::ExitStatus::from_wait_status(status);
    const bool recorded = run.finish(ended.code, ended.signal, user_stop);

    const RunRecord& r = run.record();
    const RunSummary s = r.summary();
    err << "wingspan: " << r.status_text() << "; " << r.step_events() << " steps, " << r.memory_events()
        << " memory samples; peak " << format_bytes(double(s.measured_peak)) << " allocated (predicted "
        << format_bytes(double(s.predicted_peak)) << "), process peak " << format_bytes(double(s.measured_rss_peak))
        << " (predicted " << format_bytes(double(s.predicted_total)) << ")\n"
        << "wingspan: run recorded in " << run.folder().string() << "\n";
    if (run.malformed_events() > 0)
        err << "wingspan: warning: " << run.malformed_events() << " stdout line(s) started like protocol events ({\"v\":) "
            << "but were not (first: " << run.first_malformed_error() << "); recorded as log lines\n";
    if (run.lost_events() > 0 || !recorded)
        err << "wingspan: warning: the record is incomplete: " << run.lost_events() << " event(s) could not be stored"
            << (recorded ? "" : " and the result was not written") << " (" << run.recording_error() << ")\n";
    return ended.shell_code();
}

}  // namespace wingspan::cli
