// RunSession without a window (issue 27, item 3): one fake trainer process through the session
// alone — start and events, exit reporting, a stop during setup (SIGTERM, then SIGKILL when the
// grace runs out), a 300 MB stdout line read with bounded memory and reported as a
// `line_too_long` error — and `wingspan watch` given the same line, measured with
// /usr/bin/time -v.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <regex>
#include <sstream>

#include "wingspan/run_record.hpp"
#include "wingspan/ui/run_session.hpp"

using namespace wingspan;
using namespace wingspan::ui;
namespace fs = std::filesystem;

namespace {

bool wait_until(const std::function<bool()>& pred, int ms) {
    QElapsedTimer t;
    t.start();
    while (!pred()) {
        if (t.elapsed() > ms) return false;
        QTest::qWait(10);
    }
    return true;
}

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// A field of /proc/self/status in KiB ("VmRSS", "VmHWM").
long own_status_kib(const std::string& field) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
    return -1;
}

// The protocol lines of a run's events.jsonl with `"event":"error"`.
std::vector<std::string> error_lines(const fs::path& run) {
    std::vector<std::string> out;
    std::ifstream in(run / "events.jsonl");
    for (std::string line; std::getline(in, line);)
        if (line.find("\"event\":\"error\"") != std::string::npos) out.push_back(line);
    return out;
}

}  // namespace

class TestRunSession : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    QString data_;

    RunOptions options() const {
        RunOptions o;
        o.model_source = RunOptions::ModelSource::BuiltIn;
        o.data_file = data_;
        o.steps = 5;
        o.device = "cpu";
        return o;
    }

    // Starts the fake trainer in `mode` in a session of its own; the run store is the temporary folder.
    bool start(RunSession& s, const char* mode) {
        qputenv("FAKE_TRAINER_MODE", mode);
        QString error;
        const bool ok = s.start(FAKE_TRAINER, options(), nlohmann::json::object(), (tmp_.path() + "/runs").toStdString(),
                                QString(), &error);
        if (!ok) qWarning() << "start failed:" << error;
        return ok;
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        data_ = tmp_.filePath("chat.jsonl");
        std::ofstream(data_.toStdString()) << "{\"text\":\"hello\"}\n";
    }

    void startEventsAndExit() {
        RunSession s;
        QSignalSpy started(&s, &RunSession::started), finished(&s, &RunSession::finished);
        QVERIFY(start(s, "ok"));
        QCOMPARE(s.state(), RunSession::State::Running);
        QVERIFY(s.arguments().contains("--steps") && s.arguments().contains("5"));
        QVERIFY(wait_until([&] { return finished.count() == 1; }, 30000));
        QCOMPARE(started.count(), 1);
        QVERIFY(s.pid() > 0);
        QCOMPARE(s.state(), RunSession::State::Finished);
        const RunRecord& r = s.record();
        QCOMPARE(r.status(), RunStatus::Completed);
        QCOMPARE(r.exit_code(), 0);
        QCOMPARE(r.steps().size(), size_t(5));
        QCOMPARE(r.memory_events(), std::int64_t(10));
        QCOMPARE(r.predicted_peak(), std::int64_t(9600000));
        QCOMPARE(s.stopOutcome(), RunSession::StopOutcome::None);
        QCOMPARE(s.lostWrites(), std::int64_t(0));
        // The run folder holds what the session read, and the same record loads back from it.
        const RunRecord loaded = RunStore::load(s.folder());
        QCOMPARE(loaded.steps().size(), size_t(5));
        QCOMPARE(loaded.status(), RunStatus::Completed);
        QVERIFY(read(s.folder() / "stderr.log").rfind("fake: mode ok\n", 0) == 0);
        QVERIFY(fs::exists(s.folder() / "launcher.json"));
    }

    void crashIsReportedWithItsSignal() {
        RunSession s;
        QSignalSpy finished(&s, &RunSession::finished);
        QVERIFY(start(s, "crash"));
        QVERIFY(wait_until([&] { return finished.count() == 1; }, 30000));
        const RunRecord& r = s.record();
        QCOMPARE(r.status(), RunStatus::Failed);
        QCOMPARE(r.exit_signal(), SIGSEGV);
        QCOMPARE(r.steps().size(), size_t(3));
        QVERIFY(r.last_error() && r.last_error()->string_field("code") == "internal");
        QVERIFY(s.stderrTail().back().contains("fake: about to crash"));
    }

    // Stop during setup: a setup that hears SIGTERM ends inside the grace; one that never checks
    // is killed when the grace runs out, not before and not much after.
    void stopDuringSetup_data() {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<bool>("hearsSigterm");
        QTest::newRow("setup that checks for a stop") << "slow-setup" << true;
        QTest::newRow("setup that never checks") << "stuck-setup" << false;
    }

    void stopDuringSetup() {
        QFETCH(QString, mode);
        QFETCH(bool, hearsSigterm);
        const int grace_ms = 1500;
        RunSession s;
        QSignalSpy finished(&s, &RunSession::finished);
        QVERIFY(start(s, mode.toUtf8().constData()));
        QVERIFY(wait_until([&] { return s.record().memory_events() >= 1; }, 20000));
        QElapsedTimer t;
        t.start();
        s.stop(grace_ms);
        QCOMPARE(s.state(), RunSession::State::Stopping);
        QVERIFY(s.stopDeadlineSeconds() > 1.0 && s.stopDeadlineSeconds() <= 1.5);
        QVERIFY(wait_until([&] { return finished.count() == 1; }, grace_ms + 10000));
        const qint64 waited = t.elapsed();
        const RunRecord& r = s.record();
        if (hearsSigterm) {
            QVERIFY2(waited < grace_ms, qPrintable(QString::number(waited)));
            QCOMPARE(s.stopOutcome(), RunSession::StopOutcome::ExitedAfterTerm);
            QCOMPARE(r.status(), RunStatus::Interrupted);
            QVERIFY2(s.stopMessage().contains("exit code 0"), qPrintable(s.stopMessage()));
        } else {
            QVERIFY2(waited >= grace_ms && waited < grace_ms + 2500, qPrintable(QString::number(waited)));
            QCOMPARE(s.stopOutcome(), RunSession::StopOutcome::Killed);
            QCOMPARE(r.exit_signal(), SIGKILL);
            QVERIFY2(s.stopMessage().contains("had not exited 1.5 s after SIGTERM"), qPrintable(s.stopMessage()));
            QVERIFY(s.stopMessage().contains("(SIGKILL)"));
        }
        QVERIFY(!r.reached_peak());
        QCOMPARE(s.stopDeadlineSeconds(), 0.0);
    }

    // A 300 MB stdout line: the session holds at most 4 MiB of it, records one line_too_long
    // error and reads on (the step and done after it arrive).
    void overLongLineIsAnErrorWithBoundedMemory() {
        const long rss_before = own_status_kib("VmRSS");
        RunSession s;
        QSignalSpy finished(&s, &RunSession::finished);
        QVERIFY(start(s, "long-line"));
        long hwm = 0;   // the peak is sampled: /proc/self/status's VmHWM counts what came before too
        QVERIFY(wait_until(
            [&] {
                hwm = std::max(hwm, own_status_kib("VmRSS"));
                return finished.count() == 1;
            },
            120000));
        qInfo("session: resident %ld KiB before, %ld KiB at most while reading the 300 MB line", rss_before, hwm);
        QVERIFY2(hwm - rss_before < 100 * 1024, qPrintable(QString::number(hwm - rss_before)));
        const RunRecord& r = s.record();
        QCOMPARE(s.overLongLines(), std::int64_t(1));
        QVERIFY(r.last_error());
        QCOMPARE(r.last_error()->string_field("code"), std::string("line_too_long"));
        QCOMPARE(r.last_error()->int_field("bytes"), std::int64_t(RunSession::kMaxLineBytes));
        QCOMPARE(r.malformed_lines(), std::int64_t(0));
        QCOMPARE(r.status(), RunStatus::Completed);
        QCOMPARE(r.steps().size(), size_t(1));
        const auto errors = error_lines(s.folder());
        QCOMPARE(errors.size(), size_t(1));
        QVERIFY(errors[0].find("line_too_long") != std::string::npos);
        QVERIFY(fs::file_size(s.folder() / "events.jsonl") < 64 * 1024);
    }

    // The same line through `wingspan watch`: watch's peak resident set (GNU time's "Maximum
    // resident set size") stays under 100 MiB and the run records the line_too_long error.
    void watchReadsTheSameLineWithBoundedMemory() {
        const QString data = tmp_.filePath("watch-data");
        const QString timing = tmp_.filePath("watch-time.txt");
        const pid_t pid = fork();
        if (pid == 0) {
            setenv("XDG_DATA_HOME", data.toUtf8().constData(), 1);
            if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
            const std::string out = timing.toStdString(), exe = std::string(WINGSPAN_TEST_BIN_DIR) + "/wingspan";
            execl("/usr/bin/time", "time", "-v", "-o", out.c_str(), exe.c_str(), "watch", "--", "sh", "-c",
                  "head -c 300000000 /dev/zero | tr '\\0' a", static_cast<char*>(nullptr));
            _exit(127);
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, qPrintable(QString::number(status)));
        const std::string report = read(timing.toStdString());
        std::smatch m;
        QVERIFY2(std::regex_search(report, m, std::regex(R"(Maximum resident set size \(kbytes\): (\d+))")), report.c_str());
        const long max_rss_kib = std::stol(m[1]);
        qInfo("wingspan watch: maximum resident set size %ld KiB with a 300 MB line (/usr/bin/time -v)", max_rss_kib);
        QVERIFY2(max_rss_kib < 100 * 1024, report.c_str());
        std::vector<fs::path> runs;
        for (const auto& e : fs::directory_iterator(fs::path(data.toStdString()) / "wingspan" / "runs")) runs.push_back(e.path());
        QCOMPARE(runs.size(), size_t(1));
        const auto errors = error_lines(runs[0]);
        QCOMPARE(errors.size(), size_t(1));
        QVERIFY2(errors[0].find("\"code\":\"line_too_long\"") != std::string::npos, errors[0].c_str());
        const RunRecord r = RunStore::load(runs[0]);
        QVERIFY(r.last_error() && r.last_error()->string_field("code") == "line_too_long");
        QVERIFY(fs::file_size(runs[0] / "events.jsonl") < 4u << 20);
    }
};

QTEST_GUILESS_MAIN(TestRunSession)
#include "test_run_session.moc"
