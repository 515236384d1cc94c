// The run panel's status model (ui/include/wingspan/ui/run_status.hpp): the status line, the
// progress bar and the ETA from real run records fed protocol lines, no widgets.
#include <QtTest>

#include "wingspan/protocol.hpp"
#include "wingspan/ui/run_status.hpp"

using namespace wingspan;
using namespace wingspan::ui;
using protocol::EventType;

namespace {

// A step event at time t (seconds since the start) of a run of `total` steps.
void step(RunRecord& r, double t, std::int64_t n, std::int64_t total, double loss = 2.5, double tps = 900) {
    r.ingest_line(protocol::encode(EventType::Step, t,
                                   {{"step", n}, {"total_steps", total}, {"loss", loss}, {"tokens_per_s", tps}}));
}

const RunStatusColors kColors{QColor("#0000ff"), QColor("#ff8800"), QColor("#00aa00"), QColor("#ff8800"), QColor("#cc0000")};

}  // namespace

class TestRunStatus : public QObject {
    Q_OBJECT
private slots:
    void durations() {
        QCOMPARE(duration_text(0), QString("0:00"));
        QCOMPARE(duration_text(65), QString("1:05"));
        QCOMPARE(duration_text(59.6), QString("1:00"));
        QCOMPARE(duration_text(3723), QString("1:02:03"));
        QCOMPARE(duration_text(-5), QString("0:00"));
        QCOMPARE(duration_text(std::nan("")), QString("0:00"));
    }

    void etaFromTheLastSteps() {
        std::vector<StepSample> steps;
        QVERIFY(!eta_seconds(steps, 60));
        // One step: its time since the start per step. 10 s for step 5 of 60: 2 s × 55 left.
        StepSample s;
        s.step = 5;
        s.t = 10;
        steps.push_back(s);
        QCOMPARE(*eta_seconds(steps, 60), 110.0);
        // Steps 1..20 at 3 s each after a slow first step (20 s): the pace is the last 12's,
        // 3 s a step, not the average with the warm-up (4.0 s).
        steps.clear();
        for (int i = 1; i <= 20; ++i) {
            StepSample x;
            x.step = i;
            x.t = 20 + 3.0 * (i - 1);
            steps.push_back(x);
        }
        QCOMPARE(*eta_seconds(steps, 60), 3.0 * 40);
        QCOMPARE(*eta_seconds(steps, 20), 0.0);
        QCOMPARE(*eta_seconds(steps, 10), 0.0);   // past its total: nothing left, never negative
    }

    void idle() {
        RunStatusFacts f;
        QVERIFY(run_status_html(f, kColors).startsWith("Ready. <b>Start ▶</b>"));
        f.trainer_ok = false;
        QVERIFY(run_status_html(f, kColors).contains("Training needs wingspan-train"));
        const RunProgress p = run_progress(f);
        QCOMPARE(p.maximum, 1);
        QCOMPARE(p.value, 0);
        QCOMPARE(p.format, QString("no run"));
    }

    void settingUpIsBusy() {
        RunRecord r;
        RunStatusFacts f;
        f.record = &r;
        f.live = true;
        f.planned_steps = 60;
        f.elapsed_s = 7;
        const QString html = run_status_html(f, kColors);
        QCOMPARE(html, QString("<b style='color:#0000ff'>● Running</b> · setting up (loading the model and data) · 0:07 elapsed"));
        const RunProgress p = run_progress(f);
        QCOMPARE(p.minimum, 0);
        QCOMPARE(p.maximum, 0);   // Qt's busy bar
    }

    void runningShowsStepLossSpeedAndEta() {
        RunRecord r;
        step(r, 2.0, 1, 40, 3.25, 800);
        step(r, 4.0, 2, 40, 3.0, 1000);
        step(r, 6.0, 3, 40, 2.75, 1200);
        RunStatusFacts f;
        f.record = &r;
        f.live = true;
        f.planned_steps = 60;   // the step events' total wins
        f.elapsed_s = 6.4;
        const QString html = run_status_html(f, kColors);
        QVERIFY2(html.contains("step 3 of 40") && html.contains("loss 2.750") && html.contains("0:06 elapsed"), qPrintable(html));
        QVERIFY2(html.contains(QLocale().toString(1200.0, 'f', 0) + " tokens/s"), qPrintable(html));
        const RunProgress p = run_progress(f);
        QCOMPARE(p.maximum, 40);
        QCOMPARE(p.value, 3);
        // 2 s a step, 37 steps left: 74 s.
        QCOMPARE(p.format, QString("%p% · ETA 1:14"));

        f.stopping = true;
        f.stop_deadline_s = 1.2;
        const QString stopping = run_status_html(f, kColors);
        QVERIFY2(stopping.startsWith("<b style='color:#ff8800'>■ Stopping</b>: SIGTERM sent") && stopping.contains("(SIGKILL in 2 s)"),
                 qPrintable(stopping));
        f.stderr_dropped = 3;
        QVERIFY(run_status_html(f, kColors).endsWith(" · 3 stderr lines skipped"));
    }

    void completed() {
        RunRecord r;
        step(r, 1.0, 1, 2, 2.5);
        step(r, 2.0, 2, 2, 1.98);
        r.ingest_line(protocol::encode(EventType::Done, 41.2, {{"reason", "completed"}, {"steps", 2}}));
        r.finish(0);
        RunStatusFacts f;
        f.record = &r;
        f.planned_steps = 2;
        const QString html = run_status_html(f, kColors);
        QCOMPARE(html, QString("<b style='color:#00aa00'>✓ Completed</b> · 2 of 2 steps · in 0:41 · final loss 1.980"));
        const RunProgress p = run_progress(f);
        QCOMPARE(p.maximum, 2);
        QCOMPARE(p.value, 2);
        QCOMPARE(p.format, QString("done"));
    }

    void failedWithoutStepsNamesItsCause() {
        RunRecord r;
        r.ingest_line("not json");
        r.finish(0, 9);
        RunStatusFacts f;
        f.record = &r;
        f.planned_steps = 60;
        f.launch_error = "wingspan-train crashed";
        f.stop_message = "Stopped <by> SIGKILL";
        const QString html = run_status_html(f, kColors);
        QVERIFY2(html.startsWith("<b style='color:#cc0000'>✗ Failed: killed by signal 9"), qPrintable(html));
        QVERIFY2(html.contains(" · wingspan-train crashed · <span style='color:#ff8800'>1 unreadable line ignored (see Log)</span>"),
                 qPrintable(html));
        QVERIFY2(html.endsWith("<br>Stopped &lt;by&gt; SIGKILL"), qPrintable(html));   // escaped
        QVERIFY(!html.contains(" of 60 steps"));
        const RunProgress p = run_progress(f);
        QCOMPARE(p.maximum, 60);
        QCOMPARE(p.value, 0);
        QCOMPARE(p.format, QString("%p% · failed"));
    }

    void interruptedAtStepTwelveOfAHugeRun() {
        RunRecord r;
        const std::int64_t huge = std::int64_t(1) << 40;   // past the progress bar's int
        step(r, 3.0, 12, huge);
        r.ingest_line(protocol::encode(EventType::Done, 3.5, {{"reason", "interrupted"}, {"steps", 12}}));
        r.finish(0);
        RunStatusFacts f;
        f.record = &r;
        f.ranks_summary = "2 ranks: <peak>";
        const QString html = run_status_html(f, kColors);
        QVERIFY2(html.startsWith("<b style='color:#ff8800'>■ Interrupted</b> · 12 of 1099511627776 steps · in 0:04"), qPrintable(html));
        QVERIFY(html.contains("2 ranks: &lt;peak&gt;"));
        const RunProgress p = run_progress(f);
        QCOMPARE(p.maximum, 1 << 30);
        QCOMPARE(p.value, 12);
        QCOMPARE(p.format, QString("%p% · interrupted"));
    }
};

QTEST_GUILESS_MAIN(TestRunStatus)
#include "test_run_status.moc"
