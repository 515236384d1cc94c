// Issue 30, the window's part: the planner's serve mode shows llama.cpp's serving components
// (frozen_weights, kv_cache, compute_buffer, each split between the GPU and host RAM, and the
// layers on the GPU) for the plan's model in a GGUF format or for a GGUF file, with llama.cpp's
// options (context, KV cache type, GPU layers, flash attention) as controls; every number the
// view shows, and each machine's verdict, most GPU layers and longest context, equal
// `wingspan plan --method serve --quant/--gguf ... --json`'s. Offscreen, real widgets, the real
// wingspan binary.
#include <QtTest>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QProcess>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include "gguf_test_file.hpp"
#include "wingspan/ui/main_window.hpp"
#include "wingspan/ui/serve_gguf_panel.hpp"

using namespace wingspan;
using namespace wingspan::ui;
using nlohmann::json;

namespace {

const QString kWingspan = QString(WINGSPAN_TEST_BIN_DIR) + "/wingspan";
const char* const kMachines[] = {"rtx-4090", "t4", "mac-studio-m3-ultra-96gb", "cpu-laptop-8gb"};

json cli_plan(const QStringList& flags) {
    QStringList args = {"plan", "--method", "serve", "--json"};
    for (const char* m : kMachines) args << "--machine" << m;
    QProcess p;
    p.start(kWingspan, args + flags);
    if (!p.waitForFinished(60000) || p.exitCode() != 0)
        qFatal("wingspan %s failed: %s", qPrintable((args + flags).join(' ')), p.readAllStandardError().constData());
    return json::parse(p.readAllStandardOutput().toStdString());
}

std::uint64_t cell_bytes(QTableWidget* t, int row, int column) {
    const QTableWidgetItem* item = t->item(row, column);
    if (!item) qFatal("no cell %d,%d", row, column);
    return item->data(Qt::UserRole).toULongLong();
}

// The view against the CLI's JSON: the components table as shown, the layers, every machine.
void compare(ServeGgufPanel* panel, const json& j, const QString& what) {
    auto* table = panel->findChild<QTableWidget*>("serveComponents");
    QVERIFY(table);
    QCOMPARE(table->rowCount(), 4);
    const char* names[] = {"frozen_weights", "kv_cache", "compute_buffer"};
    for (int r = 0; r < 3; ++r) {
        QCOMPARE(table->item(r, 0)->text(), QString(names[r]));
        const json& c = j["components"][names[r]];
        QVERIFY2(cell_bytes(table, r, 1) == c["gpu_bytes"].get<std::uint64_t>(), qPrintable(what + " " + names[r] + " GPU"));
        QVERIFY2(cell_bytes(table, r, 2) == c["host_bytes"].get<std::uint64_t>(), qPrintable(what + " " + names[r] + " host"));
        QVERIFY2(cell_bytes(table, r, 3) == c["bytes"].get<std::uint64_t>(), qPrintable(what + " " + names[r]));
    }
    QCOMPARE(cell_bytes(table, 3, 1), j["gpu_layers"]["gpu_bytes"].get<std::uint64_t>());
    QCOMPARE(cell_bytes(table, 3, 2), j["gpu_layers"]["host_bytes"].get<std::uint64_t>());
    QVERIFY(panel->servePlan());
    QCOMPARE(panel->servePlan()->gpu_layers, j["gpu_layers"]["count"].get<std::int64_t>());
    auto* summary = panel->findChild<QLabel*>("serveSummary");
    QVERIFY2(summary->text().contains(QString("%1 of %2 layers on the GPU").arg(panel->servePlan()->gpu_layers)
                                          .arg(j["gpu_layers"]["of"].get<std::int64_t>())),
             qPrintable(summary->text()));
    const auto& fits = panel->machineFits();
    QCOMPARE(int(fits.size()), int(j["machines"].size()));
    auto* machines = panel->findChild<QTableWidget*>("serveMachines");
    for (size_t i = 0; i < fits.size(); ++i) {
        const json& m = j["machines"][i];
        const llama_cpp::MachineFit& f = fits[i];
        const QString at = what + ", " + QString::fromStdString(m["id"].get<std::string>());
        QCOMPARE(QString::fromStdString(f.machine->id), QString::fromStdString(m["id"].get<std::string>()));
        QVERIFY2(f.fits == (m["verdict"] == "fits"), qPrintable(at));
        QVERIFY2(machines->item(int(i), 1)->text().contains(f.fits ? "fits" : "does not fit"), qPrintable(at));
        QCOMPARE(f.device_needed, m["device_bytes_needed"].get<std::uint64_t>());
        QCOMPARE(cell_bytes(machines, int(i), 2), f.device_needed);
        QCOMPARE(f.device_usable, m["device_bytes_usable"].get<std::uint64_t>());
        QCOMPARE(f.longest_context, m["longest_context"].get<std::int64_t>());
        QCOMPARE(f.most_gpu_layers.has_value(), m.contains("most_gpu_layers"));
        if (f.most_gpu_layers) {
            QCOMPARE(*f.most_gpu_layers, m["most_gpu_layers"].get<std::int64_t>());
            QCOMPARE(f.host_needed, m["host_bytes_needed"].get<std::uint64_t>());
        }
    }
}

template <typename T>
T* child(QWidget* w, const char* name) {
    T* c = w->findChild<T*>(name);
    if (!c) qFatal("no child %s", name);
    return c;
}

}  // namespace

class WindowServeGgufTest : public QObject {
    Q_OBJECT

    Plan servePlan() {
        Plan p = Plan::lesson_default();
        p.model.model_id = "llama-3.1-8b";
        p.setup.method = Method::Serve;
        p.machines.clear();
        for (const char* m : kMachines) p.machines.push_back(m);
        return p;
    }

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void servingComponentsEqualTheCli() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY2(w.hasLibrary(), qPrintable(w.loadError()));
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        ServeGgufPanel* panel = w.serveGgufPanel();
        QVERIFY(panel);
        QVERIFY(!panel->isVisible());   // training: not shown
        w.setPlan(servePlan());
        QApplication::processEvents();
        QVERIFY(panel->isVisible());
        // The context is the plan's sequence length.
        QCOMPARE(child<QSpinBox>(panel, "serveCtx")->value(), int(servePlan().setup.seq_len));
        compare(panel, cli_plan({"--model", "llama-3.1-8b", "--quant", "q4_k_m", "--ctx", QString::number(servePlan().setup.seq_len)}),
                "defaults");
        Plan longer = servePlan();
        longer.setup.seq_len = 8192;
        w.setPlan(longer);
        QApplication::processEvents();
        QCOMPARE(child<QSpinBox>(panel, "serveCtx")->value(), 8192);
        compare(panel, cli_plan({"--model", "llama-3.1-8b", "--quant", "q4_k_m", "--ctx", "8192"}), "seq 8,192");

        auto* quant = child<QComboBox>(panel, "serveQuant");
        auto* ctx = child<QSpinBox>(panel, "serveCtx");
        auto* kv = child<QComboBox>(panel, "serveKvType");
        auto* layers = child<QSpinBox>(panel, "serveGpuLayers");
        auto* flash = child<QCheckBox>(panel, "serveFlashAttn");
        struct Case {
            const char* quant;
            int ctx;
            const char* kv;
            int layers;   // -1: all
            bool flash;
        };
        for (const Case& c : {Case{"q8_0", 32768, "f16", -1, false}, Case{"q4_k_m", 131072, "q8_0", 20, true},
                              Case{"f16", 8192, "q4_0", 0, true}, Case{"q6_k", 16384, "f16", 33, true}}) {
            quant->setCurrentIndex(quant->findData(QString(c.quant)));
            ctx->setValue(c.ctx);
            kv->setCurrentIndex(kv->findData(QString(c.kv)));
            layers->setValue(c.layers);
            if (flash->isEnabled()) flash->setChecked(c.flash);
            QApplication::processEvents();
            QStringList flags = {"--model", "llama-3.1-8b", "--quant", c.quant, "--ctx", QString::number(c.ctx), "--kv-type",
                                 c.kv, "--n-gpu-layers", c.layers < 0 ? QString("all") : QString::number(c.layers)};
            if (c.flash) flags << "--flash-attn" << "on";
            compare(panel, cli_plan(flags), QString("%1 ctx %2 kv %3 ngl %4").arg(c.quant).arg(c.ctx).arg(c.kv).arg(c.layers));
        }

        // A GGUF file: sizes from its own tensors, as --gguf reads them.
        QTemporaryDir dir;
        const QString file = dir.filePath("tiny.gguf");
        ui_test::write_gguf(file.toStdString());
        QString error;
        QVERIFY2(panel->setGgufFile(file, &error), qPrintable(error));
        QVERIFY(!quant->isEnabled());
        compare(panel, cli_plan({"--gguf", file, "--ctx", QString::number(ctx->value()), "--kv-type", kv->currentText(),
                                 "--n-gpu-layers", layers->value() < 0 ? QString("all") : QString::number(layers->value()),
                                 "--flash-attn", flash->isChecked() ? "on" : "off"}),
                "tiny.gguf");
        // A file that is not GGUF: a clear error, the view keeps what it showed.
        const QString bad = dir.filePath("bad.gguf");
        {
            QFile f(bad);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("not a gguf file");
        }
        QVERIFY(!panel->setGgufFile(bad, &error));
        QVERIFY(!error.isEmpty());

        // Back to training: the view goes.
        Plan lora = servePlan();
        lora.setup.method = Method::Lora;
        w.setPlan(lora);
        QApplication::processEvents();
        QVERIFY(!panel->isVisible());
    }

    // Issue 32: the chart serves the 16-bit model with each machine's framework, the table
    // serves a GGUF with llama.cpp; at seq 8,192 the T4 is short in the chart and fits in the
    // table. The panel says which engine each answers, and for every machine its sentence gives
    // the chart's verdict (the chart bar's) and the table's verdict (the table's cell), so the
    // two never read as one claim contradicting itself.
    void chartAndTableSayWhichEngineEachAnswers() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY2(w.hasLibrary(), qPrintable(w.loadError()));
        w.resize(1280, 720);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        Plan p = servePlan();
        p.setup.seq_len = 8192;
        w.setPlan(p);
        QApplication::processEvents();
        ServeGgufPanel* panel = w.serveGgufPanel();
        auto* engines = child<QLabel>(panel, "serveEngines");
        const QString text = engines->text();
        QVERIFY2(engines->isVisible() && text.contains("llama.cpp") && text.contains("q4_k_m") &&
                     text.contains("16-bit") && text.contains("Hugging Face transformers"),
                 qPrintable(text));
        auto* table = child<QTableWidget>(panel, "serveMachines");
        QCOMPARE(table->horizontalHeaderItem(1)->text(), QString("llama.cpp"));
        const ChartData& chart = w.machineChart();
        int differ = 0;
        for (int r = 0; r < table->rowCount(); ++r) {
            const llama_cpp::MachineFit& f = panel->machineFits()[size_t(r)];
            const ChartBar* bar = chart.bar(QString::fromStdString(f.machine->id));
            QVERIFY2(bar && bar->fit, qPrintable(QString::fromStdString(f.machine->id)));
            const bool chart_fits = *bar->fit != Fit::No;
            const bool table_fits = table->item(r, 1)->text().startsWith("✓");
            QCOMPARE(table_fits, f.fits);
            const QString name = QString::fromStdString(short_machine_name(*f.machine));
            const QString said = name + " (chart " + (chart_fits ? "✓" : "✗") + ", llama.cpp " + (table_fits ? "✓" : "✗") + ")";
            // A machine where they differ is named with both verdicts; one where they agree is not.
            QVERIFY2(text.contains(said) == (chart_fits != table_fits), qPrintable(said + " in: " + text));
            differ += chart_fits != table_fits;
        }
        QVERIFY2(differ >= 1, "the T4 is short in the chart and fits with llama.cpp's q4_k_m at 8,192 tokens");
        QVERIFY(text.contains(QString("Their verdicts differ on ")));
    }

    // Issue 30, item 3: llama.cpp's settings are the plan's: the context is its sequence, and
    // the format, KV type, GPU layers, flash attention, parallel sequences and ubatch are saved
    // by File ▸ Save and come back when the plan is opened, with the CLI's numbers for them.
    void servingSettingsAreSavedWithThePlan() {
        QTemporaryDir dir;
        const QString path = dir.filePath("serve.wingspan.json");
        QStringList flags = {"--model", "llama-3.1-8b", "--quant", "q8_0", "--ctx", "16384", "--kv-type", "q8_0",
                             "--n-gpu-layers", "20", "--parallel", "4", "--ubatch", "1024", "--flash-attn", "on"};
        const json want = cli_plan(flags);
        {
            MainWindow w(QString(), MainWindow::Options{false, false});
            QVERIFY2(w.hasLibrary(), qPrintable(w.loadError()));
            w.resize(1600, 1000);
            w.show();
            QVERIFY(QTest::qWaitForWindowExposed(&w));
            w.setPlan(servePlan());
            QApplication::processEvents();
            ServeGgufPanel* panel = w.serveGgufPanel();
            QVERIFY(panel->isVisible());
            child<QComboBox>(panel, "serveQuant")->setCurrentIndex(child<QComboBox>(panel, "serveQuant")->findData("q8_0"));
            child<QSpinBox>(panel, "serveCtx")->setValue(16384);
            child<QComboBox>(panel, "serveKvType")->setCurrentIndex(child<QComboBox>(panel, "serveKvType")->findData("q8_0"));
            child<QSpinBox>(panel, "serveGpuLayers")->setValue(20);
            child<QSpinBox>(panel, "serveParallel")->setValue(4);
            child<QSpinBox>(panel, "serveUbatch")->setValue(1024);
            QApplication::processEvents();
            compare(panel, want, "edited in the panel");
            QCOMPARE(want["settings"]["n_parallel"].get<int>(), 4);
            // Written back into the plan: its sequence is the context, the rest its llama_cpp.
            QCOMPARE(w.plan().setup.seq_len, std::int64_t(16384));
            const LlamaCppChoice& c = w.plan().llama_cpp;
            QCOMPARE(QString::fromStdString(c.quant), QString("q8_0"));
            QCOMPARE(QString::fromStdString(c.kv_type), QString("q8_0"));
            QCOMPARE(c.n_gpu_layers, std::int64_t(20));
            QCOMPARE(c.n_parallel, std::int64_t(4));
            QCOMPARE(c.n_ubatch, std::int64_t(1024));
            QVERIFY(c.flash_attn);   // a quantized V cache needs it, as the CLI turns it on
            QString error;
            QVERIFY2(w.savePlan(path, &error), qPrintable(error));
        }
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const json saved = json::parse(f.readAll().toStdString());
        QCOMPARE(saved["llama_cpp"]["n_parallel"].get<int>(), 4);
        QCOMPARE(saved["setup"]["seq_len"].get<int>(), 16384);
        // Reopened in a new window: the same controls, the same numbers.
        MainWindow w(QString(), MainWindow::Options{false, false});
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QString error;
        QVERIFY2(w.openPlan(path, &error), qPrintable(error));
        QApplication::processEvents();
        ServeGgufPanel* panel = w.serveGgufPanel();
        QVERIFY(panel->isVisible());
        QCOMPARE(child<QSpinBox>(panel, "serveParallel")->value(), 4);
        QCOMPARE(child<QSpinBox>(panel, "serveUbatch")->value(), 1024);
        QCOMPARE(child<QSpinBox>(panel, "serveGpuLayers")->value(), 20);
        QCOMPARE(child<QSpinBox>(panel, "serveCtx")->value(), 16384);
        QCOMPARE(child<QComboBox>(panel, "serveKvType")->currentData().toString(), QString("q8_0"));
        compare(panel, want, "reopened");
        // A hostile llama_cpp section: a clear error naming the field, the plan left as it was.
        json bad = saved;
        bad["llama_cpp"]["n_parallel"] = 0;
        const QString bad_path = dir.filePath("bad.wingspan.json");
        QFile b(bad_path);
        QVERIFY(b.open(QIODevice::WriteOnly));
        b.write(QByteArray::fromStdString(bad.dump()));
        b.close();
        QVERIFY(!w.openPlan(bad_path, &error));
        QVERIFY2(error.contains("n_parallel"), qPrintable(error));
        QCOMPARE(w.plan().llama_cpp.n_parallel, std::int64_t(4));
    }
};

QTEST_MAIN(WindowServeGgufTest)
#include "test_window_serve_gguf.moc"
