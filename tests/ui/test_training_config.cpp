// Issue 26 in the window: a framework's training config opened (and dropped) as the plan, and an
// out-of-memory message explained against it, each the same numbers core computes. Offscreen.
#include <QtTest>

#include <QMimeData>
#include <QTextBrowser>
#include <fstream>
#include <sstream>

#include "wingspan/config_import.hpp"
#include "wingspan/oom_advice.hpp"
#include "wingspan/ui/main_window.hpp"
#include "wingspan/ui/oom_dialog.hpp"

using namespace wingspan;
using namespace wingspan::ui;

namespace {

QString fixture(const QString& name) { return QString(WINGSPAN_TEST_FIXTURES_DIR) + "/" + name; }

std::string read(const QString& path) {
    std::ifstream in(path.toStdString());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

class TrainingConfigWindowTest : public QObject {
    Q_OBJECT
private slots:
    void openAxolotlConfigAsThePlan() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(w.hasLibrary());
        QString report;
        QVERIFY2(w.openTrainingConfig(fixture("configs/axolotl/qlora-1b.yml"), &report), qPrintable(report));
        QCOMPARE(w.plan().model.model_id, std::string("llama-3.2-1b"));
        QCOMPARE(w.plan().setup.method, Method::Qlora);
        QCOMPARE(w.plan().setup.lora_rank, std::int64_t(32));
        QCOMPARE(w.plan().setup.seq_len, std::int64_t(2048));
        QCOMPARE(w.plan().setup.micro_batch, std::int64_t(2));
        QCOMPARE(w.plan().setup.grad_accum, std::int64_t(4));
        QCOMPARE(w.plan().framework, std::string("hf-transformers"));
        QVERIFY(report.contains("axolotl"));
        QVERIFY(report.contains("Ignored:"));
        // The window computes the same plan the command line does from the same file.
        QVERIFY(w.evaluation().ok());
    }

    void unreadableConfigKeepsThePlan() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        const Plan before = w.plan();
        QString report;
        QVERIFY(!w.openTrainingConfig(fixture("oom/cuda-2.2-full.txt"), &report));
        QVERIFY(!report.isEmpty());
        QCOMPARE(w.plan().setup.seq_len, before.setup.seq_len);
    }

    void dropOpensTheConfig() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QMimeData data;
        data.setUrls({QUrl::fromLocalFile(fixture("configs/torchtune/8B_lora_single_device.yaml"))});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&w, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&w, &drop);
        QCOMPARE(w.plan().model.model_id, std::string("llama-3.1-8b"));
        QCOMPARE(w.plan().framework, std::string("torchtune"));
        QCOMPARE(w.plan().setup.lora_rank, std::int64_t(8));
    }

    void oomDialogShowsCoresAdvice() {
        MainWindow w(QString(), MainWindow::Options{false, false});
        QVERIFY(w.openTrainingConfig(fixture("configs/axolotl/fft-8b.yaml")));   // a full 8B at 8,192 tokens
        OomDialog dialog(&w.evaluation());
        const std::string message = read(fixture("oom/cuda-2.2-full.txt"));
        QVERIFY(dialog.explain(QString::fromStdString(message)));
        const auto report = parse_oom_message(message).value();
        const auto& e = w.evaluation();
        const OomDiagnosis d = diagnose_oom(report, e.model.arch, e.setup, *e.reference_framework);
        QVERIFY(!d.advice.empty());
        for (const auto& a : d.advice) QVERIFY2(dialog.answerText().contains(QString::fromStdString(a.flag + " " + a.value)), a.flag.c_str());
        QVERIFY(dialog.answerText().contains("23.65 GiB"));
        QVERIFY(!dialog.explain("RuntimeError: CUDA error: out of memory"));
        QVERIFY(dialog.answerText().contains("Not an OOM message I know"));
    }
};

QTEST_MAIN(TrainingConfigWindowTest)
#include "test_training_config.moc"
