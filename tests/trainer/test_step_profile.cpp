// WINGSPAN_PROFILE_TRACE and bench/trainer/step_profile.py (issue 35, where a step's time goes):
// the real wingspan-train writes a chrome trace of its steps after the first, with the trainer's
// named scopes; step_profile.py splits the steps' wall time into categories that add up to it,
// agree with the trainer's own step times, and put time in every scope the model runs. Its
// self-time arithmetic is checked on a trace written by hand; bad input ends in a sentence.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "trainer_process.hpp"
#include "wingspan/protocol.hpp"

using namespace wingspan;
using namespace wingspan::protocol;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;

// step_profile.py on `trace` (with --json): its exit code, stdout and stderr.
testing::ProgramResult step_profile(const std::string& trace) {
    return testing::run_program(WINGSPAN_PYTHON, {WINGSPAN_STEP_PROFILE, QString::fromStdString(trace), "--json"});
}

double category(const json& p, const char* name) { return p.at("categories").at(name).at("s_per_step").get<double>(); }

testing::TrainerResult train_traced(const QString& trace, QStringList args) {
    testing::TrainerLaunch launch;
    launch.args = args << "--threads" << "2" << "--eval-every" << "0" << "--sample-tokens" << "0";
    launch.env.insert("WINGSPAN_PROFILE_TRACE", trace);
    return testing::run_trainer(launch);
}

}  // namespace

class StepProfileTest : public QObject {
    Q_OBJECT
private slots:
    void realRunAddsUpToItsSteps_data() {
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("precision");
        QTest::newRow("full fp32") << "full" << "fp32";
        QTest::newRow("lora bf16-mixed") << "lora" << "bf16-mixed";
    }
    void realRunAddsUpToItsSteps() {
        QFETCH(QString, method);
        QFETCH(QString, precision);
        QTemporaryDir dir;
        const QString trace = dir.filePath("trace.json");
        const testing::TrainerResult r =
            train_traced(trace, {"--method", method, "--precision", precision, "--steps", "3", "--seq", "64", "--batch", "2"});
        QVERIFY2(r.exit_code == 0, r.err.toUtf8().constData());
        QCOMPARE(r.steps(), 3);
        QVERIFY(fs::file_size(trace.toStdString()) > 0);

        const testing::ProgramResult sp = step_profile(trace.toStdString());
        QVERIFY2(sp.exit_code == 0, sp.err.c_str());
        const json p = json::parse(sp.out);
        QCOMPARE(p.at("steps").get<int>(), 2);   // the first step is the warm-up, left out
        const double step_s = p.at("step_s").get<double>();

        // The profiled steps' wall time is the trainer's own step time (step_time_s of steps 2 and
        // 3), within 5 % or 2 ms: the trace times the same steps.
        const auto steps = r.all(EventType::Step);
        const double own = (steps[1]->number_field("step_time_s") + steps[2]->number_field("step_time_s")) / 2;
        QVERIFY2(std::abs(step_s - own) <= std::max(0.05 * own, 0.002),
                 qPrintable(QString("trace %1 s, step events %2 s").arg(step_s).arg(own)));

        // Every category is >= 0 and they add up to the step (named ones alone never exceed it:
        // no microsecond is counted twice).
        double named = 0, all = 0;
        for (const auto& [name, c] : p.at("categories").items()) {
            const double s = c.at("s_per_step").get<double>();
            QVERIFY2(s >= 0, name.c_str());
            all += s;
            if (name != "other") named += s;
        }
        QVERIFY2(named <= step_s * 1.03, qPrintable(QString("named %1 s of a %2 s step").arg(named).arg(step_s)));
        QVERIFY(std::abs(all - step_s) <= 0.03 * step_s);

        // Each scope the model runs got time: products, attention, the fused norms and SwiGLU /
        // rotary, the head's loss, and the optimizer (AdamW and the gradient norm, both methods).
        for (const char* c : {"gemm", "attention", "norms", "element-wise", "loss", "optimizer", "allocator"})
            QVERIFY2(category(p, c) > 0, c);
        const json& ph = p.at("phases_s_per_step");
        QVERIFY(ph.at("forward").get<double>() > 0 && ph.at("backward").get<double>() > 0 &&
                ph.at("optimizer").get<double>() > 0);
        QVERIFY(ph.at("forward").get<double>() + ph.at("backward").get<double>() + ph.at("optimizer").get<double>() <=
                step_s * 1.001);
    }

    // A trace written by hand: a 100 us step holding the forward (60 us: attention 30 us with a
    // 10 us batched product and a 5 us allocation in it, a 12 us RMSNorm), a 10 us residual add
    // outside every scope, a softmax backward node (8 us, 6 of them the op), and 4 us of AdamW.
    // The self times: gemm 10, allocator 5, attention 15 + 6, norms 12, element-wise 10,
    // optimizer 4, other 100 - 62 = 38. Events of another thread and outside the step do not count.
    void selfTimesOfAHandWrittenTrace() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("hand.json").toStdString();
        auto ev = [](const char* name, double ts, double dur, int tid = 1) {
            return json{{"name", name}, {"ph", "X"}, {"ts", ts}, {"dur", dur}, {"tid", tid}, {"pid", "CPU Functions"}};
        };
        const json trace = json::array({
            ev("aten::mm", 0, 50),   // before the step
            ev("wingspan::train_step", 100, 100),
            ev("wingspan::forward", 100, 60),
            ev("wingspan::attention", 105, 30),
            ev("aten::bmm", 106, 10),
            ev("aten::empty", 120, 5),
            ev("wingspan::rms_norm", 140, 12),
            ev("aten::add", 160, 10),
            ev("SoftmaxBackward0", 171, 8),
            ev("aten::_softmax_backward_data", 172, 6),
            ev("wingspan::optimizer", 190, 8),
            ev("wingspan::adamw", 191, 4),
            ev("aten::mm", 110, 40, 2),   // another thread
        });
        std::ofstream(path) << trace.dump();
        const testing::ProgramResult sp = step_profile(path);
        QVERIFY2(sp.exit_code == 0, sp.err.c_str());
        const json p = json::parse(sp.out);
        QCOMPARE(p.at("steps").get<int>(), 1);
        const double us = 1e-6;
        QCOMPARE(p.at("step_s").get<double>(), 100 * us);
        QCOMPARE(p.at("step_times_s").size(), size_t(1));
        const std::pair<const char*, double> want[] = {{"gemm", 10},       {"attention", 21}, {"norms", 12},
                                                      {"element-wise", 10}, {"loss", 0},       {"optimizer", 4},
                                                      {"copies", 0},       {"allocator", 5},  {"other", 38}};
        for (const auto& [name, v] : want)
            QVERIFY2(std::abs(category(p, name) - v * us) < 1e-9, qPrintable(QString("%1: %2").arg(name).arg(category(p, name))));
        QVERIFY(std::abs(p.at("phases_s_per_step").at("forward").get<double>() - 60 * us) < 1e-9);
    }

    void badInputEndsInASentence() {
        QTemporaryDir dir;
        // A trace path the trainer cannot write: refused before any step.
        const testing::TrainerResult r =
            train_traced(dir.filePath("no-such-folder/trace.json"), {"--method", "lora", "--steps", "2", "--seq", "32", "--batch", "1"});
        QCOMPARE(r.exit_code, 2);
        QCOMPARE(r.error_code(), std::string("bad_argument"));
        QVERIFY2(QString::fromStdString(r.error_message()).contains("WINGSPAN_PROFILE_TRACE"), r.error_message().c_str());
        QCOMPARE(r.steps(), 0);

        // step_profile.py: a missing file, a file that is not JSON, a trace without the trainer's steps.
        const std::string not_json = dir.filePath("not.json").toStdString();
        std::ofstream(not_json) << "[{\"name\": ";
        const std::string no_steps = dir.filePath("no-steps.json").toStdString();
        std::ofstream(no_steps) << R"([{"name":"aten::mm","ph":"X","ts":0,"dur":5,"tid":1}])";
        for (const std::string& f : {dir.filePath("missing.json").toStdString(), not_json, no_steps}) {
            const testing::ProgramResult sp = step_profile(f);
            QCOMPARE(sp.exit_code, 2);
            QVERIFY2(sp.err.starts_with("step_profile.py: ") && sp.err.find("Traceback") == std::string::npos, sp.err.c_str());
        }
    }
};

QTEST_GUILESS_MAIN(StepProfileTest)
#include "test_step_profile.moc"
