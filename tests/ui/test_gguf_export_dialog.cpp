// Issue 30: File ▸ Export GGUF… runs `wingspan-train export` through the run protocol (a fake
// trainer here, a shell script printing the protocol's lines), shows its per-tensor progress,
// its error, and for the written file what llama.cpp allocates to serve it.
#include <QtTest>

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <cstdint>
#include <fstream>
#include <string>

#include "gguf_test_file.hpp"
#include "wingspan/ui/gguf_export_dialog.hpp"

using wingspan::ui::GgufExportDialog;

namespace {

QString fake_trainer(const QTemporaryDir& dir, const QString& body) {
    const QString path = dir.filePath("fake-wingspan-train");
    QFile f(path);
    f.open(QIODevice::WriteOnly);
    f.write(("#!/bin/sh\n" + body).toUtf8());
    f.close();
    f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
    return path;
}

}  // namespace

class GgufExportDialogTest : public QObject {
    Q_OBJECT
private slots:
    void progressThenServingMemory() {
        QTemporaryDir dir;
        const QString gguf = dir.filePath("out.gguf");
        ui_test::write_gguf(gguf.toStdString());
        // Two tensors' progress, a pause to look at it, then done with the file.
        const QString trainer = fake_trainer(dir, QString(
            "echo '{\"v\":1,\"event\":\"hello\",\"t\":0,\"command\":\"export\"}'\n"
            "echo '{\"v\":1,\"event\":\"log\",\"t\":0.1,\"level\":\"info\",\"message\":\"x\",\"export\":{\"tensor\":1,"
            "\"tensors\":2,\"name\":\"token_embd.weight\",\"bytes_written\":250,\"total_bytes\":1000}}'\n"
            "sleep 1\n"
            "echo 'not a protocol line'\n"
            "echo '{\"v\":1,\"event\":\"done\",\"t\":0.2,\"reason\":\"completed\",\"out\":\"%1\",\"bytes\":1000}'\n").arg(gguf));
        GgufExportDialog d(trainer, nullptr);
        d.modelEdit()->setText(dir.path());
        d.outEdit()->setText(gguf);
        d.quantCombo()->setCurrentText("q8_0");
        QSignalSpy done(&d, &GgufExportDialog::finished);
        QVERIFY2(d.start(), qPrintable(d.error()));
        QTRY_COMPARE_WITH_TIMEOUT(d.progressBar()->value(), 250, 5000);
        QVERIFY(d.statusLabel()->text().contains("token_embd.weight"));
        QVERIFY(done.wait(10000));
        QCOMPARE(d.progressBar()->value(), 1000);
        QCOMPARE(d.writtenFile(), gguf);
        // 2 layers × 4,096 cells × 64 values × (K + V) × 2 B = 2 MiB of f16 cache.
        QVERIFY2(d.servingSummary().contains("kv_cache 2.0 MiB"), qPrintable(d.servingSummary()));
        QVERIFY(d.statusLabel()->text().startsWith("Written: "));
    }
    void errorIsShown() {
        QTemporaryDir dir;
        const QString trainer = fake_trainer(dir,
            "echo '{\"v\":1,\"event\":\"error\",\"t\":0,\"code\":\"bad_model\",\"message\":\"gemma2 cannot be exported to GGUF yet\"}'\n"
            "echo '{\"v\":1,\"event\":\"done\",\"t\":0,\"reason\":\"error\"}'\nexit 2\n");
        GgufExportDialog d(trainer, nullptr);
        d.modelEdit()->setText(dir.path());
        QSignalSpy done(&d, &GgufExportDialog::finished);
        QVERIFY(d.start());
        QVERIFY(done.wait(10000));
        QVERIFY(d.writtenFile().isEmpty());
        QCOMPARE(d.statusLabel()->text(), QString("Failed: gemma2 cannot be exported to GGUF yet"));
    }
    void refusesWhatCannotStart() {
        GgufExportDialog none(QString(), nullptr);
        QVERIFY(!none.start());
        QVERIFY(none.error().contains("not found"));
        QTemporaryDir dir;
        GgufExportDialog d(fake_trainer(dir, "exit 0\n"), nullptr);
        d.modelEdit()->setText(dir.filePath("no-such-folder"));
        QVERIFY(!d.start());
        QCOMPARE(d.error(), QString("choose the model folder"));
    }
};

QTEST_MAIN(GgufExportDialogTest)
#include "test_gguf_export_dialog.moc"
