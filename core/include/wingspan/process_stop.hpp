#pragma once
// How Wingspan stops a child process and says how it ended: the one supervisor policy of the
// process layer, used by `wingspan watch` (app/cli/watch_cmd.cpp), the window's run session
// (ui/src/run/run_session.cpp), the Run-a-recipe dialog and wingspan-train's --nproc launcher
// (trainer/src/distributed/launcher.cpp). Each caller sends the signals itself (kill(2), QProcess); this
// says which signal is due when, so every place escalates, times and reports alike:
//   the window's Stop     SIGTERM, SIGKILL after the grace the status line states (default 60 s)
//   `wingspan watch`      SIGINT, SIGTERM after --stop-grace (20 s), SIGKILL half that later
//   the --nproc launcher  SIGTERM to every rank on a stop; after a rank failed, SIGKILL to the
//                         rest once the collective timeout (+10 s) has passed
// A further stop request moves to the next signal at once.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace wingspan::process {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// "SIGTERM", "SIGKILL", ... ; "signal 42" for one without a name here.
std::string signal_name(int signal);

// How a child ended: its exit code, or the signal that killed it.
struct ExitStatus {
    int code = 0;
    int signal = 0;

    static ExitStatus from_wait_status(int status);   // waitpid(2)'s status word
    bool ok() const { return signal == 0 && code == 0; }
    // A shell's $? for it: the code, or 128 + the signal.
    int shell_code() const { return signal ? 128 + signal : code; }
    // "exited with code 3", "was killed by signal 9 (SIGKILL)".
    std::string describe() const;
};

// One rung: the signal sent (0: none, only a wait) and how long the child gets before the next.
struct StopStep {
    int signal = 0;
    milliseconds grace{0};
};

class StopLadder {
public:
    explicit StopLadder(std::vector<StopStep> steps = {});
    // SIGTERM, then SIGKILL after `grace`.
    static StopLadder term_then_kill(milliseconds grace);
    // SIGINT, SIGTERM after `grace`, SIGKILL after grace / 2 more.
    static StopLadder interrupt_term_kill(milliseconds grace);
    // Nothing at first, SIGKILL once `wait` has passed.
    static StopLadder kill_after(milliseconds wait);

    // A stop request at `now`: climbs one rung and returns its signal to send now (0 when the
    // rung only waits, or when the ladder is exhausted).
    int request(Clock::time_point now);
    // The signal due at `now` because the current rung's grace ran out (it climbs), else 0.
    // A timer that fires a little early gets 0: ask again at remaining().
    int due(Clock::time_point now);
    // Time until due() will return the next signal; nothing before the first request and on
    // the last rung.
    std::optional<milliseconds> remaining(Clock::time_point now) const;

    bool started() const { return next_ > 0; }
    bool exhausted() const { return next_ >= steps_.size(); }
    // The signal of the rung reached last (0 before the first request).
    int last_signal() const { return started() ? steps_[next_ - 1].signal : 0; }
    Clock::time_point last_step_at() const { return last_at_; }
    // The grace of the rung reached last (how long the child was given after its signal).
    milliseconds current_grace() const { return started() ? steps_[next_ - 1].grace : milliseconds(0); }

private:
    std::vector<StopStep> steps_;
    std::size_t next_ = 0;
    Clock::time_point last_at_{};
};

}  // namespace wingspan::process
