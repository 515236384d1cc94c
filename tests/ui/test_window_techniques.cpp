// Issue 25, the window's part: the memory techniques the planner has (--optimizer-in-backward,
// --activation-offload, --compile, --optimizer-offload, the paged optimizers) are controls of the
// planner window; set with those controls, the window's numbers for each machine (device bytes,
// host bytes, margin, verdict) equal `wingspan plan --json`'s to the byte; a combination the CLI
// refuses shows the CLI's own message; the host part is shown apart from the device bar and
// checked against the machine's RAM. Offscreen, real widgets, the real wingspan binary.
#include <QtTest>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QProcess>
#include <QSpinBox>
#include <QStandardPaths>

#include <nlohmann/json.hpp>

#include "wingspan/ui/main_window.hpp"

using namespace wingspan;
using namespace wingspan::ui;
using nlohmann::json;

namespace {

const QString kWingspan = QString(WINGSPAN_TEST_BIN_DIR) + "/wingspan";

struct CliAnswer {
    int exit_code = -1;
    QByteArray out, err;
};

CliAnswer run_wingspan(const QStringList& args) {
    QProcess p;
    p.start(kWingspan, args);
    CliAnswer a;
    if (!p.waitForFinished(60000)) qFatal("wingspan %s did not finish", qPrintable(args.join(' ')));
    a.exit_code = p.exitCode();
    a.out = p.readAllStandardOutput();
    a.err = p.readAllStandardError();
    return a;
}

template <typename T>
T* child(QWidget* w, const char* name) {
    T* c = w->findChild<T*>(name);
    if (!c) qFatal("no child %s", name);
    return c;
}

void choose(QComboBox* combo, const char* data) {
    const int i = combo->findData(QString(data));
    if (i < 0) qFatal("no item %s", data);
    combo->setCurrentIndex(i);
    QApplication::processEvents();
}

void set_checked(QWidget* w, const char* name, bool on) {
    auto* box = child<QCheckBox>(w, name);
    QVERIFY2(box->isEnabled(), name);
    if (box->isChecked() != on) box->click();   // as a person does: the window recomputes
    QApplication::processEvents();
}

// The torchtune case of the issue, without its techniques: set below with the window's controls.
Plan full_8b() {
    Plan p = Plan::lesson_default();
    p.model.model_id = "llama-3.1-8b";
    p.setup.method = Method::Full;
    p.setup.seq_len = 2048;
    p.setup.micro_batch = 2;
    p.setup.grad_checkpointing = true;
    p.setup.loss_chunk_tokens = 512;
    p.chosen.grad_checkpointing = true;
    p.framework = "torchtune";
    p.machines = {"rtx-4090", "a100-80gb", "t4"};
    return p;
}

// Each machine's bar against `wingspan plan --json` with the same flags.
void compare_with_cli(const MainWindow& w, const QStringList& flags, const QString& what) {
    QStringList args = {"plan", "--model", "llama-3.1-8b", "--method", "full", "--seq", "2048", "--batch", "2",
                        "--grad-checkpointing", "on", "--loss-chunk", "512", "--framework", "torchtune", "--json"};
    for (const char* m : {"rtx-4090", "a100-80gb", "t4"}) args << "--machine" << m;
    const CliAnswer a = run_wingspan(args + flags);
    QVERIFY2(a.exit_code == 0, qPrintable(what + ": " + a.err));
    const json j = json::parse(a.out.toStdString());
    const ChartData& chart = w.machineChart();
    QCOMPARE(int(chart.bars.size()), int(j["machines"].size()));
    int with_host = 0;
    for (const auto& m : j["machines"]) {
        const QString id = QString::fromStdString(m["id"].get<std::string>());
        const auto bar = std::find_if(chart.bars.begin(), chart.bars.end(), [&](const ChartBar& b) { return b.id == id; });
        QVERIFY2(bar != chart.bars.end(), qPrintable(id));
        const QString at = what + ", " + id;
        QCOMPARE(bar->total, m["needed_bytes"].get<std::int64_t>());
        QCOMPARE(bar->host_bytes, m["host_bytes"].get<std::int64_t>());
        QCOMPARE(bar->margin, m["margin_bytes"].get<std::int64_t>());
        QCOMPARE(bar->ceiling.value_or(-1), m["usable_bytes"].get<std::int64_t>());
        QVERIFY2(QString(to_string(*bar->fit)) == QString::fromStdString(m["verdict"].get<std::string>()), qPrintable(at));
        if (bar->host_bytes > 0) {
            ++with_host;
            // Apart from the device bar: not in its segments, named under it, checked against its RAM.
            std::int64_t segments = 0;
            for (const auto& s : bar->segments) segments += s.bytes;
            QCOMPARE(segments, bar->total);
            QVERIFY2(bar->note.contains("host RAM of"), qPrintable(at + ": " + bar->note));
            QVERIFY(bar->host_capacity > 0);
            QCOMPARE(bar->host_fits, bar->host_bytes <= bar->host_capacity);
        }
    }
    if (flags.contains("--activation-offload") || flags.contains("--optimizer-offload")) QVERIFY2(with_host > 0, qPrintable(what));
}

}  // namespace

class WindowTechniquesTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void techniqueControlsMatchTheCli() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY2(w.hasLibrary(), qPrintable(w.loadError()));
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.setPlan(full_8b());
        QApplication::processEvents();
        compare_with_cli(w, {}, "no technique");

        // The case: paged 8-bit AdamW, the step in backward; then activations to host RAM.
        choose(child<QComboBox>(&w, "optimizer"), "paged-adamw8bit");
        set_checked(&w, "optimizerInBackward", true);
        QVERIFY(w.plan().setup.optimizer_in_backward);
        compare_with_cli(w, {"--optimizer", "paged-adamw8bit", "--optimizer-in-backward"}, "paged 8-bit, step in backward");
        set_checked(&w, "activationOffload", true);
        compare_with_cli(w, {"--optimizer", "paged-adamw8bit", "--optimizer-in-backward", "--activation-offload"},
                         "+ activation offload");
        set_checked(&w, "compile", true);
        compare_with_cli(w, {"--optimizer", "paged-adamw8bit", "--optimizer-in-backward", "--activation-offload", "--compile"},
                         "+ compile");
        set_checked(&w, "compile", false);
        set_checked(&w, "activationOffload", false);
        set_checked(&w, "optimizerInBackward", false);

        // Paged fp32 AdamW, and the optimizer offloaded to host RAM (its host part against RAM).
        choose(child<QComboBox>(&w, "optimizer"), "paged-adamw");
        compare_with_cli(w, {"--optimizer", "paged-adamw"}, "paged AdamW");
        choose(child<QComboBox>(&w, "optimizer"), "adamw");
        set_checked(&w, "offload", true);
        compare_with_cli(w, {"--optimizer-offload"}, "optimizer offload");
        set_checked(&w, "offload", false);
    }

    // What the CLI refuses, the window refuses with the same words.
    void refusedCombinationsSayWhatTheCliSays() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(w.hasLibrary());
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.setPlan(full_8b());
        QApplication::processEvents();
        const QStringList base = {"plan", "--model", "llama-3.1-8b", "--method", "full", "--seq", "2048", "--batch", "2",
                                  "--framework", "torchtune"};
        // Each refusal: the boxes to set (undone in reverse), the accumulation, the CLI's flags.
        struct Refusal {
            const char* what;
            std::vector<std::pair<const char*, bool>> boxes;
            int accum;
            QStringList flags;
        };
        const std::vector<Refusal> refusals = {
            {"the step in backward with accumulation", {{"optimizerInBackward", true}}, 4,
             {"--optimizer-in-backward", "--grad-accum", "4", "--grad-checkpointing", "on"}},
            {"the step in backward with the optimizer offloaded", {{"optimizerInBackward", true}, {"offload", true}}, 1,
             {"--optimizer-in-backward", "--optimizer-offload", "--grad-checkpointing", "on"}},
            {"activation offload without checkpointing", {{"activationOffload", true}, {"gradCheckpointing", false}}, 1,
             {"--activation-offload", "--grad-checkpointing", "off"}},
        };
        auto* accum = child<QSpinBox>(&w, "gradAccumSpin");
        for (const Refusal& r : refusals) {
            for (const auto& [box, on] : r.boxes) set_checked(&w, box, on);
            accum->setValue(r.accum);
            QApplication::processEvents();
            const CliAnswer a = run_wingspan(base + r.flags);
            QVERIFY2(a.exit_code != 0, r.what);
            const ChartData& chart = w.machineChart();
            QVERIFY2(chart.is_error, r.what);
            QCOMPARE(QString::fromUtf8(a.err).trimmed(), "wingspan: " + chart.empty_message);
            accum->setValue(1);
            for (auto it = r.boxes.rbegin(); it != r.boxes.rend(); ++it) set_checked(&w, it->first, !it->second);
            QApplication::processEvents();
            QVERIFY2(!w.machineChart().is_error, qPrintable(QString(r.what) + " undone: " + w.machineChart().empty_message));
        }
    }
};

QTEST_MAIN(WindowTechniquesTest)
#include "test_window_techniques.moc"
