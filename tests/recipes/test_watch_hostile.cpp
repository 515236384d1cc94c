// `wingspan watch` under hostile conditions (issue 34, classes 5, 12, 20), on the real binary:
// the run store's disk filling up never stops the command; a 300 MB line without a newline
// costs bounded memory; what the command leaves writing is stopped with the command's grace
// and escalation, also on a stop request after the command exited; a bad --plan leaves no run.
#include <QtTest>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct Watched {
    int code = -1;            // exit status, or 128 + signal
    long max_rss_kb = 0;      // of the watch process (and its own children)
    double seconds = 0;
    std::string out, err;     // its stdout and stderr (files)
};

// Runs `sh -c SCRIPT` with $W the wingspan binary, the run store under `data`, stdout and
// stderr into files; `during(pid)` runs while it does (to send it signals).
Watched run_sh(const fs::path& tmp, const fs::path& data, const std::string& script,
               const std::function<void(pid_t)>& during = {}) {
    const fs::path out = tmp / "out.txt", err = tmp / "err.txt";
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        setenv("W", WINGSPAN_CLI_BIN, 1);
        setenv("XDG_DATA_HOME", data.c_str(), 1);
        const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1), dup2(e, 2);
        execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    if (during) during(pid);
    int status = 0;
    rusage ru{};
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
    }
    Watched w;
    w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    w.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    w.max_rss_kb = ru.ru_maxrss;
    w.out = read(out);
    w.err = read(err);
    return w;
}

std::vector<fs::path> runs_in(const fs::path& data) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(data / "wingspan" / "runs", ec)) out.push_back(e.path());
    return out;
}

bool process_gone(pid_t pid) {
    if (kill(pid, 0) != 0) return true;
    const std::string stat = read("/proc/" + std::to_string(pid) + "/stat");   // a zombie is gone too
    const auto paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

}  // namespace

class WatchHostileTest : public QObject {
    Q_OBJECT
    fs::path tmp_;
    int n_ = 0;

    fs::path fresh() {
        const fs::path d = tmp_ / std::to_string(++n_);
        fs::create_directories(d);
        return d;
    }

private slots:
    void initTestCase() {
        tmp_ = fs::temp_directory_path() / ("wingspan-watch-hostile-" + std::to_string(::getpid()));
        fs::remove_all(tmp_);
        fs::create_directories(tmp_);
    }
    void cleanupTestCase() { fs::remove_all(tmp_); }

    // Class 5: the run store runs out of room mid-run (a 4 KiB file size limit stands in for a
    // full disk: every write past it fails, as on a full one). The command runs to its end, all
    // its output is echoed, its exit status is watch's, the lost events are counted, and the
    // small result is still written.
    void fullRunStoreNeverStopsTheCommand() {
        const fs::path dir = fresh();
        // The limit holds inside the parentheses only: watch's own output goes through a pipe to
        // cat, outside them, so only the run store meets it.
        const Watched w = run_sh(dir, dir / "data",
                                 "( trap '' XFSZ; ulimit -f 8; \"$W\" watch -- sh -c "
                                 "'i=0; while [ $i -lt 3000 ]; do echo line $i; echo err $i >&2; i=$((i+1)); done; exit 3'; "
                                 "echo $? > '" + (dir / "code").string() + "' ) 2>&1 | cat");
        QVERIFY2(read(dir / "code") == "3\n", w.out.substr(0, 2000).c_str());
        QVERIFY(w.out.find("line 2999\n") != std::string::npos);
        size_t lines = 0;
        for (size_t at = 0; (at = w.out.find("line ", at)) != std::string::npos; ++at) ++lines;
        QCOMPARE(lines, size_t(3000));
        QVERIFY2(w.out.find("wingspan: warning: cannot record the run") != std::string::npos, w.out.c_str());
        QVERIFY2(w.out.find("event(s) could not be stored") != std::string::npos, w.out.c_str());
        const auto runs = runs_in(dir / "data");
        QCOMPARE(runs.size(), size_t(1));
        const std::string events = read(runs[0] / "events.jsonl");
        QVERIFY(events.size() <= 4096);
        QVERIFY(!events.empty() && events.back() == '\n');   // whole lines only, no torn last one
        QVERIFY2(read(runs[0] / "result.json").find("\"exit_code\": 3") != std::string::npos, read(runs[0] / "result.json").c_str());
    }

    // Class 12: 300 MB on one line without a newline: echoed in full, logged cut, and watch's
    // memory stays bounded (the framer keeps at most 1 MiB of a line).
    void hugeLineCostsBoundedMemory() {
        const fs::path dir = fresh();
        const Watched w = run_sh(dir, dir / "data",
                                 "exec \"$W\" watch -- sh -c 'head -c 300000000 /dev/zero | tr \"\\\\0\" a; echo; echo done'");
        QVERIFY2(w.code == 0, w.err.c_str());
        QCOMPARE(w.out.size(), size_t(300000000 + 1 + 5));
        qInfo("watch's peak RSS with a 300 MB line: %ld KiB", w.max_rss_kb);
        QVERIFY2(w.max_rss_kb < 120 * 1024, std::to_string(w.max_rss_kb).c_str());
        const auto runs = runs_in(dir / "data");
        QCOMPARE(runs.size(), size_t(1));
        const std::string events = read(runs[0] / "events.jsonl");
        QVERIFY(events.find("[cut: a line over 1 MiB]") != std::string::npos);
        QVERIFY(events.find("\"message\":\"done\"") != std::string::npos);
        QVERIFY(events.size() < 4u << 20);
    }

    // Class 12: the command exits and leaves a process writing to its output, ignoring SIGINT
    // and SIGTERM: stopped with the same escalation (here a 1 s grace), and watch ends.
    void leftoverWritersAreStopped() {
        const fs::path dir = fresh();
        const fs::path pidfile = dir / "writer.pid";
        const Watched w = run_sh(dir, dir / "data",
                                 "exec \"$W\" watch --stop-grace 1 -- sh -c '"
                                 "sh -c \"echo \\$\\$ > " + pidfile.string() + "; trap \\\"\\\" INT TERM; "
                                 "while :; do echo tick; sleep 0.05; done\" & sleep 0.3; exit 0'");
        QVERIFY2(w.code == 0, w.err.c_str());
        qInfo("watch ended %.1f s after it started", w.seconds);
        QVERIFY2(w.seconds < 10, w.err.c_str());
        QVERIFY2(w.err.find("stopping what the command left running (SIGKILL)") != std::string::npos, w.err.c_str());
        const pid_t writer = std::stoi(read(pidfile));
        for (int i = 0; i < 50 && !process_gone(writer); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        QVERIFY(process_gone(writer));
    }

    // Class 12: a stop request after the command exited is honoured: it reaches the process
    // group at once (SIGTERM goes to watch; the writer ignores SIGINT only).
    void stopAfterTheCommandExitedIsHonoured() {
        const fs::path dir = fresh();
        const Watched w = run_sh(
            dir, dir / "data",
            "exec \"$W\" watch --stop-grace 60 -- sh -c '"
            "sh -c \"trap \\\"\\\" INT; while :; do echo tick; sleep 0.05; done\" & sleep 0.3; exit 0'",
            [](pid_t pid) {
                std::this_thread::sleep_for(std::chrono::milliseconds(3000));   // past the 2 s drain: SIGINT sent, ignored
                kill(pid, SIGTERM);
                std::this_thread::sleep_for(std::chrono::milliseconds(300));
                kill(pid, SIGTERM);   // a second request: the next signal at once
            });
        qInfo("watch ended %.1f s after it started", w.seconds);
        QVERIFY2(w.seconds < 10, w.err.c_str());
        QVERIFY2(w.err.find("stopping what the command left running (SIGTERM)") != std::string::npos, w.err.c_str());
    }

    // A closed terminal (SIGHUP) stops the command like Ctrl-C; a closed stdout (`| head -1`)
    // ends only the echo: the command runs to its end and its status and record are whole.
    void hangupStopsAndAClosedStdoutDoesNot() {
        const fs::path dir = fresh();
        const Watched hup = run_sh(dir, dir / "data", "exec \"$W\" watch -- sh -c 'while :; do sleep 0.05; done'", [](pid_t pid) {
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            kill(pid, SIGHUP);
        });
        QVERIFY2(hup.seconds < 5, hup.err.c_str());
        QVERIFY2(hup.err.find("stopping the command (SIGINT)") != std::string::npos, hup.err.c_str());
        QVERIFY2(hup.err.find("interrupted") != std::string::npos, hup.err.c_str());
        const fs::path piped = fresh();
        const Watched w = run_sh(piped, piped / "data",
                                 "( \"$W\" watch -- sh -c 'i=0; while [ $i -lt 20000 ]; do echo line $i; i=$((i+1)); done; "
                                 "echo finished >&2; exit 4'; echo $? > '" + (piped / "code").string() + "' ) | head -1");
        QCOMPARE(w.out, std::string("line 0\n"));
        QCOMPARE(read(piped / "code"), std::string("4\n"));
        const auto runs = runs_in(piped / "data");
        QCOMPARE(runs.size(), size_t(1));
        QVERIFY(read(runs[0] / "result.json").find("\"exit_code\": 4") != std::string::npos);
        QVERIFY(read(runs[0] / "events.jsonl").find("line 19999") != std::string::npos);
    }

    // Class 20: a --plan that cannot be used is refused before a run folder exists.
    void badPlanLeavesNoRun() {
        const fs::path dir = fresh();
        int k = 0;
        for (const std::string plan : {R"({"recipe": 5})", R"({"model": {"id": 7}, "setup": {"method": "lora"}})",
                                       R"({"framework": ["x"]})", R"({"components": {"activations": 1}, "total_bytes": "big"})",
                                       "[1, 2]", "{"}) {
            const fs::path file = dir / ("plan-" + std::to_string(k++) + ".json");
            std::ofstream(file) << plan;
            const Watched w = run_sh(dir, dir / "data", "exec \"$W\" watch --plan '" + file.string() + "' -- true");
            QVERIFY2(w.code == 2, (plan + ": " + w.err).c_str());
            QVERIFY2(runs_in(dir / "data").empty(), (plan + " left a run").c_str());
        }
        // A command whose arguments are not UTF-8 (a file name) is watched and recorded.
        const Watched w = run_sh(dir, dir / "data", "exec \"$W\" watch -- echo 'caf\xe9 \xff'");
        QVERIFY2(w.code == 0, w.err.c_str());
        QCOMPARE(w.out, std::string("caf\xe9 \xff\n"));
        QCOMPARE(runs_in(dir / "data").size(), size_t(1));
    }

    // A line that starts like an event ({"v":) but is not one reaches the terminal and is
    // counted; a real event is recorded and not echoed.
    void lookalikeEventsAreShownAndCounted() {
        const fs::path dir = fresh();
        const Watched w = run_sh(dir, dir / "data",
                                 "exec \"$W\" watch -- sh -c 'echo \"{\\\"v\\\":1,\\\"event\\\":\"; echo \"{\\\"v\\\":2}\"; "
                                 "echo \"{\\\"v\\\":1,\\\"event\\\":\\\"log\\\",\\\"t\\\":0,\\\"level\\\":\\\"info\\\",\\\"message\\\":\\\"hi\\\"}\"'");
        QVERIFY2(w.code == 0, w.err.c_str());
        QCOMPARE(w.out, std::string("{\"v\":1,\"event\":\n{\"v\":2}\n"));
        QVERIFY2(w.err.find("2 stdout line(s) started like protocol events") != std::string::npos, w.err.c_str());
    }
};

QTEST_GUILESS_MAIN(WatchHostileTest)
#include "test_watch_hostile.moc"
