#pragma once
// Runs the real wingspan-train binary and reads its protocol events as they arrive: the one
// reader the trainer suites share (test_trainer_runs, test_trainer_distributed,
// test_reliability_trainer); and run_program, for a command read whole once it ends
// (test_trainer_models, test_trainer_variants_e2e). Header-only; run_trainer needs WINGSPAN_TRAIN_BIN.
#include <QElapsedTimer>
#include <QProcess>

#include <signal.h>
#include <functional>
#include <string>
#include <vector>

#include "wingspan/protocol.hpp"

namespace wingspan::testing {

struct TrainerResult {
    int exit_code = -1;   // -1: ended by a signal (or never started)
    bool timed_out = false;   // killed by run_trainer after its timeout
    std::vector<protocol::Event> events;
    std::vector<std::string> bad_lines;   // stdout lines the protocol parser rejected
    QString err;
    double seconds = 0;

    // Events of one type; `rank` >= 0 keeps one rank's (data-parallel runs).
    std::vector<const protocol::Event*> all(protocol::EventType t, int rank = -1) const {
        std::vector<const protocol::Event*> out;
        for (const auto& e : events)
            if (e.type == t && (rank < 0 || e.int_field("rank", -1) == rank)) out.push_back(&e);
        return out;
    }
    const protocol::Event* first(protocol::EventType t, int rank = -1) const {
        const auto a = all(t, rank);
        return a.empty() ? nullptr : a.front();
    }
    const protocol::Event* last(protocol::EventType t, int rank = -1) const {
        const auto a = all(t, rank);
        return a.empty() ? nullptr : a.back();
    }
    std::vector<double> losses(int rank = -1) const {
        std::vector<double> l;
        for (auto* e : all(protocol::EventType::Step, rank)) l.push_back(e->number_field("loss"));
        return l;
    }
    int steps(int rank = -1) const { return static_cast<int>(all(protocol::EventType::Step, rank).size()); }
    std::string error_code() const {
        auto* e = first(protocol::EventType::Error);
        return e ? e->string_field("code") : "";
    }
    std::string error_message() const {
        auto* e = first(protocol::EventType::Error);
        return e ? e->string_field("message") : "";
    }
};

struct TrainerLaunch {
    QStringList args;
    // Sees each event as it arrives, before it is stored; it may signal the process.
    std::function<void(const protocol::Event&, QProcess&)> on_event;
    int timeout_ms = 180000;
    QByteArray stdin_data;   // written and closed when not null
    // Start the trainer with SIGINT/SIGTERM/SIGHUP blocked (the mask is inherited), as the window
    // does, so a stop sent by `on_started` waits, pending, until the trainer's listener takes it.
    bool stops_blocked_at_start = false;
    std::function<void(QProcess&)> on_started;   // right after the trainer has started
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
};

// A finished program's exit code (-1: a signal ended it, it did not start, or it outran the
// timeout and was killed) and its whole stdout and stderr.
struct ProgramResult {
    int exit_code = -1;
    std::string out, err;
};

inline ProgramResult run_program(const QString& program, const QStringList& args,
                                 QProcessEnvironment env = QProcessEnvironment::systemEnvironment(),
                                 int timeout_ms = 300000) {
    // Passive OpenMP waiting: a trainer spinning on idle threads would slow the other suites.
    if (!env.contains("OMP_WAIT_POLICY")) env.insert("OMP_WAIT_POLICY", "passive");
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    ProgramResult r;
    if (!p.waitForStarted()) return r;
    if (!p.waitForFinished(timeout_ms)) {
        p.kill();
        p.waitForFinished();
        return r;
    }
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput().toStdString();
    r.err = p.readAllStandardError().toStdString();
    return r;
}

inline TrainerResult run_trainer(TrainerLaunch launch) {
    QProcess p;
    // Set here, the trainer does not need to re-execute itself to get it (half a second a run).
    if (!launch.env.contains("OMP_WAIT_POLICY")) launch.env.insert("OMP_WAIT_POLICY", "passive");
    p.setProcessEnvironment(launch.env);
    if (launch.stops_blocked_at_start)
        p.setChildProcessModifier([] {
            sigset_t stops;
            sigemptyset(&stops);
            sigaddset(&stops, SIGINT);
            sigaddset(&stops, SIGTERM);
            sigaddset(&stops, SIGHUP);
            sigprocmask(SIG_BLOCK, &stops, nullptr);
        });
    QElapsedTimer timer;
    timer.start();
    p.start(WINGSPAN_TRAIN_BIN, launch.args);
    TrainerResult r;
    if (!p.waitForStarted()) return r;
    if (launch.on_started) launch.on_started(p);
    if (!launch.stdin_data.isNull()) {
        p.write(launch.stdin_data);
        p.closeWriteChannel();
    }
    QByteArray buffer;
    auto drain = [&] {
        buffer += p.readAllStandardOutput();
        for (int nl; (nl = buffer.indexOf('\n')) >= 0;) {
            const std::string line = buffer.left(nl).toStdString();
            buffer.remove(0, nl + 1);
            protocol::ParseResult pr = protocol::parse_line(line);
            if (!pr.event) {
                r.bad_lines.push_back(line + "  <- " + pr.error);
                continue;
            }
            if (launch.on_event) launch.on_event(*pr.event, p);
            r.events.push_back(std::move(*pr.event));
        }
    };
    while (p.state() != QProcess::NotRunning && timer.elapsed() < launch.timeout_ms) {
        p.waitForReadyRead(50);
        drain();
    }
    if (p.state() != QProcess::NotRunning) {
        p.kill();
        r.timed_out = true;
    }
    p.waitForFinished();
    drain();
    r.seconds = double(timer.elapsed()) / 1000.0;
    r.err = QString::fromUtf8(p.readAllStandardError());
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    return r;
}

// Runs wingspan-train with `args` (two threads unless they say otherwise); `on_event` may act
// on the process (signals) as events arrive. The reliability suites' shorthand for run_trainer.
inline TrainerResult train(QStringList args, const std::function<void(const protocol::Event&, QProcess&)>& on_event = {},
                           int timeout_ms = 120000, const QByteArray& stdin_data = {}) {
    if (!args.contains("--threads") && args.value(0) != "tokenize") args << "--threads" << "2";
    TrainerLaunch launch;
    launch.args = args;
    launch.on_event = on_event;
    launch.timeout_ms = timeout_ms;
    launch.stdin_data = stdin_data;
    return run_trainer(launch);
}

}  // namespace wingspan::testing
