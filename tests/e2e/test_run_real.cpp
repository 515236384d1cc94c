// The run panel with the real wingspan-train on its built-in model (a few steps at a small
// sequence and batch, so each run takes seconds): memory and loss arrive, the summary compares
// predicted and measured, Stop leaves a checkpoint, a memory cap ends in a clean
// out-of-memory, and a missing trainer explains how to build it.
#include "e2e_support.hpp"

#include <QLabel>
#include <QPushButton>

#include <cmath>
#include <fstream>

using namespace wingspan;
using namespace wingspan::ui;
namespace fs = std::filesystem;

class TestRunReal : public QObject {
    Q_OBJECT

    QTemporaryDir store_;

    std::unique_ptr<RunPanel> make_panel() {
        auto panel = std::make_unique<RunPanel>(e2e::wingspan_exe(), &e2e::library());
        panel->setTrainerPath(REAL_TRAINER);
        panel->setStoreRoot(store_.path().toStdString());
        panel->setPlan(Plan::lesson_default());
        return panel;
    }

    static RunOptions small(RunOptions o, int steps) { return e2e::small_builtin_run(std::move(o), steps); }

private slots:
    void initTestCase() { QVERIFY(store_.isValid()); }

    void realRunCompletes() {
        auto panel = make_panel();
        panel->resize(1200, 800);
        panel->show();
        panel->setOptions(small(panel->options(), 6));
        QSignalSpy finished(panel.get(), &RunPanel::runFinished);
        QString error;
        QVERIFY2(panel->start(&error), qPrintable(error));
        QVERIFY(panel->isRunning());
        QVERIFY(e2e::wait_until([&] { return finished.count() == 1; }, 90000));

        const RunRecord& r = *panel->shownRecord();
        QCOMPARE(r.status(), RunStatus::Completed);
        QCOMPARE(r.malformed_lines(), 0);
        // Memory points arrived, per component, and the GUI sampled RSS itself.
        QVERIFY(r.memory_events() >= 5);
        const TimeChartData& mem = panel->memoryChart();
        for (const char* c : {"Frozen weights", "LoRA adapters", "Activations", "Optimizer state"}) {
            const TimeSeries* s = mem.find(c);
            QVERIFY2(s && !s->points.empty(), c);
            QVERIFY(s->kind == TimeSeries::Kind::Area);
        }
        const TimeSeries* rss = mem.find("Process RSS (read by Wingspan from /proc)");
        QVERIFY(rss && !rss->points.empty());
        QVERIFY(!panel->session()->rssSamples().empty());
        // The independent reading agrees with what the trainer says about itself.
        const double gui = double(panel->session()->rssPeak()), own = double(r.measured_rss_peak());
        QVERIFY2(gui > 0.5 * own && gui < 2.0 * own, qPrintable(QString("GUI %1 vs trainer %2").arg(gui).arg(own)));
        bool predicted_line = false;
        for (const auto& m : mem.markers) predicted_line |= m.label.startsWith("Predicted peak");
        QVERIFY(predicted_line);
        // Loss points: one per step.
        const TimeSeries* loss = panel->lossChart().find("Training loss");
        QVERIFY(loss);
        QCOMPARE(loss->points.size(), size_t(6));
        for (const auto& p : loss->points) QVERIFY(std::isfinite(p.y()) && p.y() > 0);
        QVERIFY(panel->throughputChart().find("Tokens/s"));

        // The summary compares predicted and measured per component, with an error in %.
        const Table t = panel->summaryTable();
        QCOMPARE(t.headers.size(), size_t(4));
        int compared = 0;
        bool peak_row = false, rss_row = false;
        for (const auto& row : t.rows) {
            if (row[1].value && row[2].value && *row[1].value > 0 && *row[2].value > 0) {
                ++compared;
                QVERIFY(row[3].value.has_value());
                QVERIFY(QString::fromStdString(row[3].text).endsWith("%"));
            }
            peak_row |= row[0].text == "All tensors at the peak";
            rss_row |= row[0].text == "Process total (RSS)";
        }
        QVERIFY2(compared >= 4, qPrintable(QString("%1 rows compared").arg(compared)));
        QVERIFY(peak_row && rss_row);
        const ChartData bars = panel->summaryChart();
        QCOMPARE(bars.bars.size(), size_t(2));
        QVERIFY(bars.bars[0].total > 0 && bars.bars[1].total > 0);

        // The checkpoint (the final weights in the output folder) and the sample.
        QVERIFY(!r.checkpoints().empty());
        QVERIFY(fs::exists(fs::path(r.checkpoints().back()) / "adapter_model.safetensors"));
        QVERIFY(r.done() && r.done()->body.contains("sample"));
        QVERIFY(panel->checkpointText().endsWith("output"));

        // The history keeps it, replayable.
        const fs::path folder = panel->session()->folder();
        for (const char* f : {"plan.json", "events.jsonl", "result.json", "rss.csv"}) QVERIFY2(fs::exists(folder / f), f);
        const RunRecord again = RunStore::load(folder);
        QCOMPARE(again.steps().size(), r.steps().size());
        QCOMPARE(again.status(), RunStatus::Completed);
        const auto runs = panel->historyRuns();
        QVERIFY(std::find(runs.begin(), runs.end(), folder) != runs.end());

        // Its charts export like any other.
        QTemporaryDir out;
        const ExportResult ex = panel->exportCharts(out.path(), {"png", "csv"}, ImageOptions{});
        QVERIFY2(ex.ok(), qPrintable(ex.errors.join("; ")));
        QCOMPARE(ex.files.size(), 5);
        QVERIFY(e2e::png_is(ex.files[0], 1600, 900));
    }

    void stopLeavesCheckpoint() {
        auto panel = make_panel();
        panel->setOptions(small(panel->options(), 2000));
        QSignalSpy finished(panel.get(), &RunPanel::runFinished);
        QVERIFY(panel->start());
        QVERIFY(e2e::wait_until([&] { return panel->shownRecord()->steps().size() >= 2; }, 60000));
        panel->stop();
        QVERIFY(panel->statusText().contains("Stopping"));
        QVERIFY(e2e::wait_until([&] { return finished.count() == 1; }, 60000));

        const RunRecord& r = *panel->shownRecord();
        QCOMPARE(r.status(), RunStatus::Interrupted);
        QCOMPARE(panel->session()->stopOutcome(), RunSession::StopOutcome::Saved);
        QVERIFY(panel->stopMessage().contains("saved"));
        QVERIFY(panel->statusText().contains("saved"));
        QVERIFY(!r.checkpoints().empty());
        const fs::path ckpt = r.checkpoints().back();
        QVERIFY2(ckpt.filename().string().rfind("checkpoint-", 0) == 0, ckpt.c_str());
        QVERIFY(fs::exists(ckpt / "adapter_model.safetensors"));
        QVERIFY(r.steps().size() < 2000);
        // Charts drawn so far are still there.
        QVERIFY(!panel->memoryChart().series.empty());
    }

    void memoryCapEndsInCleanOutOfMemory() {
        auto panel = make_panel();
        RunOptions o = small(panel->options(), 5);
        o.memory_limit = 8'000'000;   // below the built-in model's weights and activations
        panel->setOptions(o);
        QCOMPARE(panel->options().memory_limit, std::int64_t(8'000'000));
        QSignalSpy finished(panel.get(), &RunPanel::runFinished);
        QVERIFY(panel->start());
        QVERIFY(panel->session()->arguments().contains("--memory-limit"));
        QVERIFY(e2e::wait_until([&] { return finished.count() == 1; }, 60000));
        const RunRecord& r = *panel->shownRecord();
        QCOMPARE(r.status(), RunStatus::Failed);
        QVERIFY(r.last_error());
        QCOMPARE(QString::fromStdString(r.last_error()->string_field("code")), QString("out_of_memory"));
        QVERIFY(panel->statusText().contains("out_of_memory"));
        bool cap_line = false;
        for (const auto& m : panel->memoryChart().markers) cap_line |= m.label.startsWith("Memory cap");
        QVERIFY(cap_line);
        const auto result = nlohmann::json::parse(std::ifstream(panel->session()->folder() / "result.json"));
        QCOMPARE(result["status"].get<std::string>(), std::string("failed"));
    }

    void planArchitectureTrainsRandomWeights() {
        // The planner's own model, built with random weights from its architecture: its exact
        // memory without a download (SmolLM2-135M: small enough for a CPU test).
        auto panel = make_panel();
        Plan plan = Plan::lesson_default();
        plan.model.model_id = "smollm2-135m";
        panel->setPlan(plan);
        RunOptions o = small(panel->options(), 1);
        o.model_source = RunOptions::ModelSource::PlanArchitecture;
        o.seq = 32;
        o.batch = 1;
        panel->setOptions(o);
        const RunOptions chosen = panel->options();
        QCOMPARE(chosen.model_source, RunOptions::ModelSource::PlanArchitecture);
        QCOMPARE(chosen.model_config.value("hidden_size", 0), 576);
        QVERIFY(chosen.memory_limit > 0);   // capped at this machine's usable memory
        QSignalSpy finished(panel.get(), &RunPanel::runFinished);
        QVERIFY(panel->start());
        const fs::path config = panel->session()->folder() / "model" / "config.json";
        QVERIFY(fs::exists(config));
        QVERIFY(panel->session()->arguments().contains(QString::fromStdString(config.parent_path().string())));
        // 135 M parameters on a shared CPU: give it time.
        QVERIFY(e2e::wait_until([&] { return finished.count() == 1; }, 240000));
        const RunRecord& r = *panel->shownRecord();
        QVERIFY2(r.status() == RunStatus::Completed, r.status_text().c_str());
        QCOMPARE(r.hello().value("architecture", nlohmann::json::object()).value("hidden_size", 0), 576);
        QVERIFY(r.predicted().at(Component::FrozenWeights) > 500'000'000);   // 135 M fp32 parameters
        QVERIFY(r.measured_maxima().at(Component::FrozenWeights) > 500'000'000);
    }

    void missingTrainerExplains() {
        auto panel = make_panel();
        panel->setTrainerPath("/nonexistent/bin/wingspan-train");
        panel->show();
        const size_t before = panel->historyRuns().size();
        QString error;
        QVERIFY(!panel->start(&error));
        QVERIFY2(error.contains("./dev.sh run"), qPrintable(error));
        auto* banner = panel->findChild<QLabel*>("trainerBanner");
        QVERIFY(banner && banner->isVisible() && banner->text().contains("dev.sh run"));
        auto* start = panel->findChild<QPushButton*>("runStart");
        QVERIFY(start->toolTip().contains("dev.sh run"));
        QTest::mouseClick(start, Qt::LeftButton);
        QVERIFY(panel->statusText().contains("dev.sh run"));
        QCOMPARE(panel->historyRuns().size(), before);   // nothing half-created

        // A file that is not executable says so.
        QTemporaryDir dir;
        const QString fake = dir.filePath("wingspan-train");
        std::ofstream(fake.toStdString()) << "not a program";
        panel->setTrainerPath(fake);
        QVERIFY(!panel->start(&error));
        QVERIFY2(error.contains("not an executable"), qPrintable(error));
    }
};

QTEST_MAIN(TestRunReal)
#include "test_run_real.moc"
