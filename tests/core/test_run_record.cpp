#include <QtTest>

#include <cmath>
#include <filesystem>

#include "test_support.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/run_record.hpp"
#include "wingspan/user_dirs.hpp"

using namespace wingspan;
using namespace wingspan::protocol;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
std::string memory_line(double t, std::int64_t activations, std::int64_t weights, std::int64_t rss) {
    return encode(EventType::Memory, t,
                  {{"step", 1},
                   {"phase", "forward"},
                   {"components", components_to_json({{Component::Activations, activations}, {Component::FrozenWeights, weights}})},
                   {"allocated_bytes", activations + weights},
                   {"peak_bytes", activations + weights},
                   {"rss_bytes", rss}});
}

RunRecord synthetic_run(std::int64_t predicted_peak, std::int64_t measured_peak, std::int64_t rss, std::int64_t predicted_total) {
    RunRecord r;
    r.ingest_line(encode(EventType::Predicted, 0,
                         {{"components", components_to_json({{Component::FrozenWeights, predicted_peak}})},
                          {"peak_bytes", predicted_peak},
                          {"total_bytes", predicted_total}}));
    r.ingest_line(memory_line(0.1, 0, measured_peak, rss));
    r.ingest_line(encode(EventType::Done, 1, {{"reason", "completed"}, {"steps", 1}}));
    r.finish(0);
    return r;
}
}  // namespace

class RunRecordTest : public QObject {
    Q_OBJECT
private slots:
    // Issue 34 class 20: with HOME unset the run store is the account's home from the password
    // database, never a folder other users share; with no root at all, creating a run is an error.
    void storeWithoutHomeIsNeverShared() {
        const QByteArray home = qgetenv("HOME"), xdg = qgetenv("XDG_DATA_HOME");
        qunsetenv("HOME");
        qunsetenv("XDG_DATA_HOME");
        const std::filesystem::path root = RunStore::default_root();
        const std::filesystem::path account = wingspan::home_directory();
        if (!home.isNull()) qputenv("HOME", home);
        if (!xdg.isNull()) qputenv("XDG_DATA_HOME", xdg);
        QVERIFY2(root.string().rfind(std::filesystem::temp_directory_path().string(), 0) != 0, root.c_str());
        QCOMPARE(root, account.empty() ? std::filesystem::path() : account / ".local/share/wingspan/runs");
        RunStore nowhere{std::filesystem::path()};
        QVERIFY(nowhere.list().empty());
        QVERIFY_THROWS_EXCEPTION(wingspan::IoError, nowhere.create(nlohmann::json::object(), "x"));
    }
    void summaryComparesPredictedAndMeasured() {
        RunRecord r;
        r.ingest_line(encode(EventType::Hello, 0, {{"plan", {{"method", "lora"}}}}));
        r.ingest_line(encode(EventType::Predicted, 0.01,
                             {{"components", components_to_json({{Component::Activations, 1100}, {Component::FrozenWeights, 4000}})},
                              {"peak_bytes", 5100},
                              {"total_bytes", 9000}}));
        r.ingest_line(memory_line(0.1, 200, 4000, 8000));
        r.ingest_line(memory_line(0.2, 1000, 4000, 8500));
        r.ingest_line(memory_line(0.3, 100, 4000, 8200));
        r.ingest_line(encode(EventType::Step, 0.4, {{"step", 1}, {"loss", 2.5}, {"lr", 1e-4}, {"tokens_per_s", 900}}));
        r.ingest_line(encode(EventType::Done, 0.5, {{"reason", "completed"}, {"checkpoint", "/tmp/ckpt"}}));
        r.finish(0);
        QCOMPARE(r.status(), RunStatus::Completed);
        QCOMPARE(r.plan()["method"].get<std::string>(), std::string("lora"));
        const RunSummary s = r.summary();
        QCOMPARE(s.measured_peak, 5000);
        QCOMPARE(s.measured_rss_peak, 8500);
        QCOMPARE(s.peak_error_percent(), 2.0);
        QCOMPARE(s.components.size(), size_t(2));
        for (const auto& c : s.components) {
            if (c.component == Component::Activations) {
                QCOMPARE(c.measured, 1000);
                QCOMPARE(c.error_percent(), 10.0);
            } else {
                QCOMPARE(c.error_percent(), 0.0);
            }
        }
        QCOMPARE(r.steps().size(), size_t(1));
        QCOMPARE(r.checkpoints().front(), std::string("/tmp/ckpt"));
    }

    // DPO/ORPO steps carry `preference` (issue 31): the record keeps the margin and accuracy the
    // live view plots; SFT steps and malformed objects leave them NaN.
    void preferenceStepsKeepMarginAndAccuracy() {
        RunRecord r;
        r.ingest_line(encode(EventType::Step, 0.1, {{"step", 1}, {"loss", 0.69},
                                                    {"preference", {{"v", 1}, {"reward_margin", 0.25}, {"reward_accuracy", 0.75}}}}));
        r.ingest_line(encode(EventType::Step, 0.2, {{"step", 2}, {"loss", 0.6}, {"preference", "not an object"}}));
        r.ingest_line(encode(EventType::Step, 0.3, {{"step", 3}, {"loss", 0.5}}));
        QCOMPARE(r.steps().size(), size_t(3));
        QCOMPARE(r.steps()[0].reward_margin, 0.25);
        QCOMPARE(r.steps()[0].reward_accuracy, 0.75);
        QVERIFY(std::isnan(r.steps()[1].reward_margin) && std::isnan(r.steps()[2].reward_accuracy));
    }

    void malformedLinesAreCountedNotFatal() {
        RunRecord r;
        QVERIFY(!r.ingest_line("Traceback (most recent call last):"));
        QVERIFY(!r.ingest_line("{\"v\":1,\"event\":\"party\",\"t\":0}"));
        QVERIFY(!r.ingest_line(""));
        QVERIFY(r.ingest_line(memory_line(0, 1, 1, 1)));
        QCOMPARE(r.malformed_lines(), 2);
        QCOMPARE(r.memory_events(), 1);
    }

    void floodsStayBoundedAndKeepThePeak() {
        RunRecord r(256);
        for (int i = 0; i < 100'000; ++i) r.ingest(*parse_line(memory_line(i * 1e-3, i == 73'421 ? 1'000'000 : i % 100, 10, 10)).event);
        QVERIFY(r.memory().size() <= 256);
        QCOMPARE(r.memory_events(), 100'000);
        std::int64_t highest = 0;
        for (const auto& s : r.memory()) highest = std::max(highest, s.allocated_bytes);
        QCOMPARE(highest, 1'000'010);
        for (size_t i = 1; i < r.memory().size(); ++i) QVERIFY(r.memory()[i].t > r.memory()[i - 1].t);
    }

    void floodsOfStepsAndLogsStayBounded() {
        RunRecord r(256);
        for (int i = 1; i <= 50'000; ++i)
            r.ingest(*parse_line(encode(EventType::Step, i * 1e-3,
                                        {{"step", i}, {"total_steps", 50'000}, {"loss", 1.0 / i}, {"lr", 1e-4}, {"tokens_per_s", 100}}))
                          .event);
        for (int i = 0; i < 10'000; ++i) r.ingest_line("not json " + std::to_string(i));
        r.ingest_line(encode(EventType::Error, 60, {{"code", "internal"}, {"message", "the last word"}}));
        QVERIFY(r.steps().size() <= 256);
        QCOMPARE(r.step_events(), 50'000);
        QCOMPARE(r.steps().back().step, 50'000);
        for (size_t i = 1; i < r.steps().size(); ++i) QVERIFY(r.steps()[i].step > r.steps()[i - 1].step);
        QCOMPARE(r.malformed_lines(), 10'000);
        QCOMPARE(r.logs().size(), RunRecord::kMaxLogLines + 1);
        QCOMPARE(r.dropped_log_lines(), std::int64_t(10'000 - RunRecord::kMaxLogLines));
        QCOMPARE(r.logs().front(), std::string("ignored: ") + parse_line("not json 0").error);
        QCOMPARE(r.logs().back(), std::string("error: internal: the last word"));
    }

    void statuses() {
        RunRecord crashed;
        crashed.ingest_line(encode(EventType::Error, 1, {{"code", "out_of_memory"}, {"message", "activations: 64 MB asked, 3 MB left"}}));
        crashed.finish(3);
        QCOMPARE(crashed.status(), RunStatus::Failed);
        QVERIFY(crashed.status_text().find("exit code 3") != std::string::npos);
        QVERIFY(crashed.status_text().find("out_of_memory") != std::string::npos);
        RunRecord killed;
        killed.finish(-1, 9);
        QVERIFY(killed.status_text().find("signal 9") != std::string::npos);
        RunRecord stopped;
        stopped.ingest_line(encode(EventType::Done, 1, {{"reason", "interrupted"}}));
        stopped.finish(0);
        QCOMPARE(stopped.status(), RunStatus::Interrupted);
    }

    void storeRoundTrip() {
        const fs::path root = fs::temp_directory_path() / ("wingspan-runs-" + std::to_string(::getpid()));
        fs::remove_all(root);
        RunStore store(root);
        const fs::path run = store.create({{"method", "qlora"}}, "default model/qlora");
        QVERIFY(run.filename().string().find("default-model-qlora") != std::string::npos);
        RunRecord live;
        for (const std::string& line : {encode(EventType::Predicted, 0, {{"peak_bytes", 10}, {"total_bytes", 20}}),
                                        memory_line(0.1, 5, 3, 100), std::string("garbage")}) {
            RunStore::append_line(run, line);
            live.ingest_line(line);
        }
        // A crash before result.json: the replay says failed, with everything kept.
        RunRecord crashed = RunStore::load(run);
        QCOMPARE(crashed.status(), RunStatus::Failed);
        QCOMPARE(crashed.memory().size(), size_t(1));
        QCOMPARE(crashed.malformed_lines(), 1);
        live.finish(0);
        RunStore::write_result(run, live);
        QCOMPARE(store.list().size(), size_t(1));
        const RunRecord again = RunStore::load(run);
        QCOMPARE(again.measured_peak(), 8);
        QCOMPARE(again.predicted_peak(), 10);
        QCOMPARE(RunStore::label_of(run), std::string("default-model-qlora"));
        QCOMPARE(RunStore::label_of("/x/my-own-folder"), std::string("my-own-folder"));
        fs::remove_all(root);
    }

    void calibrationFitsContextAndSlack() {
        // Runs whose RSS is exactly 150 MB + 1.1 × allocated; the base profile assumes 100 MB, 5 %.
        FrameworkProfile base = test::bare_framework();
        base.id = "libtorch-cpu";
        base.context_bytes = 100'000'000;
        base.allocator_slack = 0.05;
        std::vector<RunRecord> runs;
        for (std::int64_t peak : {50'000'000LL, 200'000'000LL, 800'000'000LL}) {
            const auto rss = 150'000'000 + peak + peak / 10;
            runs.push_back(synthetic_run(peak, peak, rss, base.context_bytes + peak + peak / 20));
        }
        const Calibration cal = calibrate(base, runs);
        QCOMPARE(cal.runs, size_t(3));
        QVERIFY(std::llabs(cal.profile.context_bytes - 150'000'000) < 1000);
        QVERIFY(std::abs(cal.profile.allocator_slack - 0.10) < 1e-6);
        QVERIFY(cal.error_before_percent > 5);
        QVERIFY(cal.error_after_percent < 0.01);
        QCOMPARE(QString::fromStdString(cal.profile.id), QString("libtorch-cpu-calibrated"));
        QVERIFY_THROWS_EXCEPTION(InputError, calibrate(base, {}));
    }

    void calibrationOfTransientSlack() {
        // A heap that keeps what it freed: RSS = 200 MB + every allocated byte + 60 % more of
        // the activations and logits. A slack on the whole peak cannot fit runs that differ in
        // their static share; one on the transient bytes recovers both numbers.
        FrameworkProfile base = test::bare_framework();
        base.id = "libtorch-cpu";
        base.allocator_slack_of = "transient";
        std::vector<RunRecord> runs;
        const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
            {500'000'000, 50'000'000}, {40'000'000, 300'000'000}, {2'000'000'000, 1'200'000'000}, {10'000'000, 900'000'000}};
        for (auto [weights, activations] : shapes) {
            const std::int64_t peak = weights + activations;
            const std::int64_t rss = 200'000'000 + peak + activations * 6 / 10;
            RunRecord r;
            r.ingest_line(encode(EventType::Predicted, 0,
                                 {{"components", components_to_json({{Component::FrozenWeights, weights},
                                                                     {Component::Activations, activations}})},
                                  {"peak_bytes", peak},
                                  {"total_bytes", peak}}));
            r.ingest_line(memory_line(0.1, activations, weights, rss));
            r.ingest_line(encode(EventType::Done, 1, {{"reason", "completed"}, {"steps", 1}}));
            r.finish(0);
            runs.push_back(std::move(r));
        }
        const Calibration cal = calibrate(base, runs);
        QVERIFY(std::llabs(cal.profile.context_bytes - 200'000'000) < 1000);
        QVERIFY(std::abs(cal.profile.allocator_slack - 0.60) < 1e-6);
        QVERIFY(cal.error_after_percent < 0.01);
        QCOMPARE(QString::fromStdString(cal.profile.allocator_slack_of), QString("transient"));

        // The same runs fitted with a slack on the whole peak leave an error.
        base.allocator_slack_of = "peak";
        QVERIFY(calibrate(base, runs).error_after_percent > 3);
    }

    // Issue 29: the trainer's `predicted` event carries the planner's tokens/s; calibrate fits this
    // machine's speed scale as the median of measured / predicted, each prediction taken back to
    // scale 1 (a run predicted with an earlier calibration says its scale).
    void calibrationFitsThisMachinesSpeed() {
        FrameworkProfile base = test::bare_framework();
        base.id = "libtorch-cpu";
        struct Shape {
            double predicted, scale_used;
            std::vector<double> steps;   // tokens/s per step; the first is a warm-up
        };
        const std::vector<Shape> shapes = {
            {1000, 1.0, {90, 1480, 1500, 1530}},     // 1.5× the prediction
            {400, 1.0, {30, 610, 600, 590}},         // 1.5×
            {3000, 2.0, {100, 2100, 2100}},          // predicted with scale 2: 1500 unscaled → 1.4×
            {200, 1.0, {10, 400, 400}},              // 2.0×: a quiet stretch; the median ignores it
        };
        std::vector<RunRecord> runs;
        for (const Shape& s : shapes) {
            RunRecord r = synthetic_run(1000, 1000, 2000, 1500);
            r.ingest_line(encode(EventType::Predicted, 0,
                                 {{"components", components_to_json({{Component::FrozenWeights, 1000}})},
                                  {"peak_bytes", 1000},
                                  {"total_bytes", 1500},
                                  {"tokens_per_s", s.predicted},
                                  {"step_time_s", 512 / s.predicted},
                                  {"speed_scale", s.scale_used}}));
            for (size_t i = 0; i < s.steps.size(); ++i)
                r.ingest_line(encode(EventType::Step, 0.5 + double(i),
                                     {{"step", i + 1}, {"loss", 2.0}, {"tokens_per_s", s.steps[i]},
                                      {"step_time_s", 512 / s.steps[i]}}));
            runs.push_back(std::move(r));
        }
        QCOMPARE(runs[0].measured_tokens_per_s(), 1500.0);          // median of 1480, 1500, 1530
        QCOMPARE(runs[2].predicted_speed_scale(), 2.0);
        QVERIFY(std::fabs(runs[0].measured_step_time_s() - 512 / 1500.0) < 1e-12);
        const Calibration cal = calibrate(base, runs);
        QCOMPARE(cal.speed_runs, size_t(4));
        // Ratios 1.4, 1.5, 1.5, 2.0: the median of an even count is the geometric mean of the middle two.
        QVERIFY2(std::fabs(cal.profile.speed_scale - 1.5) < 1e-12, qPrintable(QString::number(cal.profile.speed_scale)));
        // Before: |1 - 1.5|/1.5, twice; |1 - 1.4|/1.4; |1 - 2|/2 → mean 35.5 %; after: 0, 0, 0.1/1.4, 0.5/2 → 8.0 %.
        QVERIFY(std::fabs(cal.speed_error_before_percent - 100 * (1.0 / 3 + 1.0 / 3 + 0.4 / 1.4 + 0.5) / 4) < 1e-9);
        QVERIFY(std::fabs(cal.speed_error_after_percent - 100 * (0.1 / 1.4 + 0.5 / 2) / 4) < 1e-9);
        // The scale travels with the saved profile and is read back.
        const FrameworkProfile back =
            parse_framework_profile(framework_profile_to_json(cal.profile), "libtorch-cpu-calibrated.json");
        QCOMPARE(back.speed_scale, cal.profile.speed_scale);

        // Runs without a predicted speed (a GPU run) leave the scale alone.
        const Calibration none = calibrate(base, {synthetic_run(1000, 1000, 2000, 1500)});
        QCOMPARE(none.speed_runs, size_t(0));
        QCOMPARE(none.profile.speed_scale, 1.0);
    }
};

QTEST_APPLESS_MAIN(RunRecordTest)
#include "test_run_record.moc"
