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

#include "wingspan/ui/gguf_export_dialog.hpp"

using wingspan::ui::GgufExportDialog;

namespace {

// A minimal GGUF v3 file llama.cpp's reader would accept the header of: a 2-layer llama of width
// 64, 4 heads, a 16-token vocabulary; tensor data is not read.
void write_gguf(const std::string& path) {
    std::ofstream f(path, std::ios::binary);
    auto u32 = [&](std::uint32_t v) { f.write(reinterpret_cast<const char*>(&v), 4); };
    auto u64 = [&](std::uint64_t v) { f.write(reinterpret_cast<const char*>(&v), 8); };
    auto str = [&](const std::string& s) { u64(s.size()); f.write(s.data(), std::streamsize(s.size())); };
    f.write("GGUF", 4);
    u32(3);
    u64(3);   // tensors
    u64(6);   // key/values
    str("general.architecture"), u32(8), str("llama");
    str("llama.block_count"), u32(4), u32(2);
    str("llama.embedding_length"), u32(4), u32(64);
    str("llama.attention.head_count"), u32(4), u32(4);
    str("llama.feed_forward_length"), u32(4), u32(128);
    str("tokenizer.ggml.tokens"), u32(9), u32(8), u64(16);
    for (int i = 0; i < 16; ++i) str("t" + std::to_string(i));
    const auto tensor = [&](const std::string& name, std::uint64_t a, std::uint64_t b) {
        str(name), u32(2), u64(a), u64(b), u32(1), u64(0);   // F16
    };
    tensor("token_embd.weight", 64, 16);
    tensor("blk.0.attn_q.weight", 64, 64);
    tensor("blk.1.attn_q.weight", 64, 64);
}

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
        write_gguf(gguf.toStdString());
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
