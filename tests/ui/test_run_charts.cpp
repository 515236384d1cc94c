// The run panel's Qt Charts: a flood of memory events reaches the chart as one replace() per
// series (never one append per event) with the stacked values exact, reference lines sit at
// their bytes, markers far above the data are named instead of squashing it, the keyboard walks
// the samples, the summary is scaled to the run, and exports render the same chart.
#include <QtTest>

#include <QAreaSeries>
#include <QChart>
#include <QLineSeries>
#include <QValueAxis>

#include "wingspan/protocol.hpp"
#include "wingspan/ui/run_panel.hpp"

using namespace wingspan;
using namespace wingspan::ui;
using nlohmann::json;

namespace {

constexpr std::int64_t kFrozen = 4'000'000;

std::string memory_line(double t, std::int64_t activations) {
    return protocol::encode(protocol::EventType::Memory, t,
                            {{"step", 1},
                             {"phase", "forward"},
                             {"components", {{"frozen_weights", kFrozen}, {"activations", activations}}},
                             {"allocated_bytes", kFrozen + activations},
                             {"peak_bytes", kFrozen + 3'000'000},
                             {"rss_bytes", 70'000'000}});
}

void feed(RunRecord& r, int from, int count) {
    for (int i = from; i < from + count; ++i) r.ingest_line(memory_line(0.01 * i, 1000 * std::int64_t(i % 3000)));
}

}  // namespace

class TestRunCharts : public QObject {
    Q_OBJECT

private slots:
    void floodIsReplacedInBatches() {
        RunRecord r(RunSession::kMemorySamples);
        r.ingest_line(protocol::encode(protocol::EventType::Predicted, 0,
                                       {{"components", {{"frozen_weights", kFrozen}, {"activations", 3'000'000}}},
                                        {"peak_bytes", 7'000'000},
                                        {"total_bytes", 60'000'000}}));
        feed(r, 0, 5000);
        RunChartInputs in;
        in.record = &r;
        TimeChartWidget view;
        view.resize(800, 450);
        view.show();
        view.setData(run_memory_chart(in));
        const TimeChartBuilder& b = view.builder();
        QCOMPARE(b.rebuilds(), 1);
        QCOMPARE(b.axisY()->titleText(), QString("MB"));
        QCOMPARE(b.yScale(), 1e6);
        const TimeSeries* act = view.data().find("Activations");
        const TimeSeries* frozen = view.data().find("Frozen weights");
        QVERIFY(act && frozen);
        QVERIFY(act->points.size() >= 1000 && act->points.size() <= 1300);   // thinned, bounded
        QXYSeries* upper = b.seriesFor("Activations");
        QVERIFY(upper);
        QCOMPARE(size_t(upper->count()), act->points.size());
        // Stacked: activations sit on the frozen weights, in MB.
        for (int i : {0, upper->count() / 2, upper->count() - 1}) {
            const double want = (frozen->points[size_t(i)].y() + act->points[size_t(i)].y()) / 1e6;
            QCOMPARE(upper->at(i).y(), want);
            QCOMPARE(upper->at(i).x(), act->points[size_t(i)].x());
        }
        // Its area is a QAreaSeries in the Okabe-Ito colour of activations.
        bool found_area = false;
        for (QAbstractSeries* s : view.chart()->series())
            if (auto* a = qobject_cast<QAreaSeries*>(s); a && a->name() == "Activations") {
                found_area = true;
                QCOMPARE(a->color(), QColor("#CC79A7"));
                QCOMPARE(a->upperSeries(), upper);
                QCOMPARE(a->lowerSeries()->at(0).y(), frozen->points[0].y() / 1e6);
            }
        QVERIFY(found_area);
        // The predicted peak is a horizontal line at its bytes.
        bool predicted = false;
        for (QAbstractSeries* s : view.chart()->series())
            if (auto* l = qobject_cast<QLineSeries*>(s); l && l->name().startsWith("Predicted peak")) {
                predicted = true;
                QCOMPARE(l->count(), 2);
                QCOMPARE(l->at(0).y(), 7.0);
                QCOMPARE(l->at(1).y(), 7.0);
            }
        QVERIFY(predicted);

        // Thousands more events: one replace() per series, no appends, no rebuild.
        QSignalSpy replaced(upper, &QXYSeries::pointsReplaced);
        QSignalSpy added(upper, &QXYSeries::pointAdded);
        feed(r, 5000, 4000);
        view.setData(run_memory_chart(in));
        QCOMPARE(view.builder().rebuilds(), 1);
        QCOMPARE(replaced.count(), 1);
        QCOMPARE(added.count(), 0);
        const TimeSeries* act2 = view.data().find("Activations");
        QCOMPARE(size_t(upper->count()), act2->points.size());
        QCOMPARE(upper->at(upper->count() - 1).x(), act2->points.back().x());
        QVERIFY(act2->points.back().x() > 80.0);   // the newest samples (t = 89.99 s) are in
        // The x axis follows the run.
        QCOMPARE(view.builder().axisX()->max(), act2->points.back().x());
    }

    void devicesAndReservedBytes() {
        QString err;
        const auto d = parse_devices(
            R"({"devices":[{"type":"cuda","index":1,"name":"A100","total_bytes":80000000000,"bf16":true},{"type":"tpu"}]})", &err);
        QCOMPARE(d.size(), size_t(1));   // an unknown type is skipped
        QCOMPARE(d[0].id(), QString("cuda:1"));
        QCOMPARE(d[0].total_bytes, std::int64_t(80'000'000'000));
        QVERIFY(d[0].bf16 && d[0].isGpu());
        QCOMPARE(d[0].label(), QString("cuda:1 · A100 · 80.0 GB"));
        QVERIFY(parse_devices("wingspan-train: unknown argument 'devices'", &err).empty());
        QVERIFY(err.contains("devices"));
        QVERIFY(parse_devices(R"({"devices":[]})", &err).empty());
        // Reserved bytes stay bounded and keep their peak through any amount of thinning.
        DeviceMemoryTrack t;
        for (int i = 0; i < 9000; ++i) {
            const std::int64_t reserved = i == 4321 ? 999'000'000 : 100'000'000 + i;
            t.ingest(*protocol::parse_line(protocol::encode(protocol::EventType::Memory, 0.01 * i,
                                                            {{"device", "cuda:0"}, {"allocated_bytes", 50'000'000},
                                                             {"reserved_bytes", reserved}}))
                          .event);
        }
        QCOMPARE(t.device, QString("cuda:0"));
        QCOMPARE(t.reserved_peak, std::int64_t(999'000'000));
        QVERIFY(t.reserved.size() <= DeviceMemoryTrack::kMaxSamples);
        double top = 0;
        for (const auto& p : t.reserved) top = std::max(top, p.y());
        QCOMPARE(top, 999'000'000.0);
        t.ingest(*protocol::parse_line(protocol::encode(protocol::EventType::Done, 99, {{"reserved_peak_bytes", 1'200'000'000}})).event);
        QCOMPARE(t.reserved_peak, std::int64_t(1'200'000'000));   // done's exact peak wins over the samples
    }

    void offScaleMarkersAreNamedNotDrawn() {
        RunRecord r;
        feed(r, 0, 50);
        RunOptions o;
        o.machine_name = "Big box";
        o.machine_ceiling = 64'000'000'000;   // 64 GB against a few MB of tensors
        RunChartInputs in;
        in.record = &r;
        in.options = &o;
        TimeChartWidget view;
        view.setData(run_memory_chart(in));
        QCOMPARE(view.builder().rebuilds(), 0);   // hidden: nothing drawn yet
        view.show();
        QCOMPARE(view.builder().rebuilds(), 1);   // caught up when shown
        QVERIFY2(view.chart()->title().contains("above this scale"), qPrintable(view.chart()->title()));
        QVERIFY(view.chart()->title().contains("Big box ceiling"));
        for (QAbstractSeries* s : view.chart()->series()) QVERIFY(!s->name().contains("ceiling"));
        QVERIFY(view.builder().axisY()->max() < 20);   // MB: the areas fill the chart
    }

    void keyboardWalksTheSamples() {
        RunRecord r;
        feed(r, 0, 20);
        RunChartInputs in;
        in.record = &r;
        TimeChartWidget view;
        view.setAccessibleName("Memory");
        view.resize(600, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setFocus();
        QCOMPARE(view.focusPolicy(), Qt::StrongFocus);
        QSignalSpy said(&view, &TimeChartWidget::cursorTextChanged);
        view.setData(run_memory_chart(in));
        QTest::keyClick(&view, Qt::Key_Home);
        QCOMPARE(view.cursorIndex(), 0);
        QTest::keyClick(&view, Qt::Key_Right);
        QCOMPARE(view.cursorIndex(), 1);
        QVERIFY2(view.cursorText().contains("t = 0.0 s") || view.cursorText().contains("t = 0.01"), qPrintable(view.cursorText()));
        QVERIFY(view.cursorText().contains("Activations: 1.00 kB"));   // sample 1: 1,000 bytes
        QTest::keyClick(&view, Qt::Key_End);
        QCOMPARE(view.cursorIndex(), 19);
        QCOMPARE(said.count(), 3);
        QVERIFY(view.accessibleDescription().contains("Activations"));
    }

    void summaryIsScaledToTheRun() {
        RunRecord r;
        r.ingest_line(protocol::encode(protocol::EventType::Predicted, 0,
                                       {{"components", {{"frozen_weights", kFrozen}, {"activations", 3'000'000}}},
                                        {"peak_bytes", 7'000'000},
                                        {"total_bytes", 60'000'000}}));
        feed(r, 0, 10);
        RunOptions o;
        o.memory_limit = 64'000'000'000;
        const ChartData d = run_summary_chart(r, &o, {}, ByteUnit::GB, false);
        QCOMPARE(d.bars.size(), size_t(2));
        RunSummaryChartView view;
        view.show();
        view.setData(d);
        const double biggest = double(std::max(d.bars[0].total, d.bars[1].total));
        QVERIFY2(view.axisMaxBytes() >= biggest && view.axisMaxBytes() < 2 * biggest,
                 qPrintable(QString::number(view.axisMaxBytes())));
        QVERIFY(view.chart()->title().contains("far above this scale"));
    }

    // Issue 32, item 7: a run stopped at step 18 of 60 says so in its chart's title.
    void titleSaysTheStepsRun() {
        RunRecord r;
        feed(r, 0, 10);
        for (int s = 1; s <= 18; ++s)
            r.ingest_line(protocol::encode(protocol::EventType::Step, 0.1 * s,
                                           {{"step", s}, {"total_steps", 60}, {"loss", 2.0}, {"tokens_per_s", 100.0}}));
        RunOptions o;
        o.steps = 60;
        RunChartInputs in;
        in.record = &r;
        in.options = &o;
        in.title = "Memory · built-in · LoRA r16 · seq 128 × 4 · 60 steps";
        QCOMPARE(run_memory_chart(in).title, QString("Memory · built-in · LoRA r16 · seq 128 × 4 · 18 of 60 steps"));
        for (int s = 19; s <= 60; ++s)
            r.ingest_line(protocol::encode(protocol::EventType::Step, 0.1 * s,
                                           {{"step", s}, {"total_steps", 60}, {"loss", 2.0}, {"tokens_per_s", 100.0}}));
        QCOMPARE(run_memory_chart(in).title, in.title);   // all 60 run: as asked
    }

    void exportRendersTheSameChart() {
        RunRecord r;
        feed(r, 0, 300);
        RunChartInputs in;
        in.record = &r;
        const TimeChartData d = run_memory_chart(in);
        QTemporaryDir dir;
        ImageOptions o;
        o.width = 800;
        o.height = 450;
        o.dpi = 96;
        const QString png = dir.filePath("memory.png");
        QString error;
        QVERIFY2(export_time_chart(d, png, o, &error), qPrintable(error));
        const QImage img(png);
        QCOMPARE(img.size(), QSize(800, 450));
        // To look at it: RUN_CHARTS_KEEP=/some/dir keeps a copy.
        if (const QString keep = qEnvironmentVariable("RUN_CHARTS_KEEP"); !keep.isEmpty())
            QFile::copy(png, QDir(keep).filePath("run-memory-chart.png"));
        // The frozen weights' area (Okabe-Ito blue) covers a good part of the plot.
        int blue = 0;
        for (int y = 0; y < img.height(); y += 2)
            for (int x = 0; x < img.width(); x += 2)
                if (img.pixelColor(x, y) == QColor("#0072B2")) ++blue;
        QVERIFY2(blue > 2000, qPrintable(QString::number(blue)));
        for (const char* suffix : {"svg", "pdf"}) {
            const QString path = dir.filePath(QString("memory.") + suffix);
            QVERIFY2(export_time_chart(d, path, o, &error), qPrintable(error));
            QVERIFY(QFileInfo(path).size() > 1000);
        }
        QFile svg(dir.filePath("memory.svg"));
        QVERIFY(svg.open(QIODevice::ReadOnly));
        QVERIFY(svg.readAll().contains("#0072b2"));
        QVERIFY(!export_time_chart(d, dir.filePath("memory.bmp"), o, &error));
        QVERIFY(error.contains("unknown chart format"));
    }
};

QTEST_MAIN(TestRunCharts)
#include "test_run_charts.moc"
