// --optimizer-in-backward (issue 25) with the real wingspan-train: the weights and AdamW moments
// after N steps equal, bit for bit, those of the ordinary step after backward (fp32 and
// bf16-mixed, full and LoRA, with checkpointing); one gradient is alive at a time and there is no
// optimizer phase; what the technique cannot do (clip, accumulate, several ranks, fp16 loss
// scaling) is refused before anything runs, with exit code 2.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <map>
#include <iterator>
#include <string>

#include "trainer_process.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/safetensors.hpp"

using namespace wingspan;
using namespace wingspan::protocol;
using testing::TrainerResult;

namespace {

// A safetensors file's tensors, name -> bytes; `rng_state` left out (the CPU generator's state
// differs between two runs of the same command: it is seeded from the clock, and no training
// tensor is drawn from it).
std::map<std::string, std::string> tensor_data(const QString& file) {
    const auto header = safetensors::read_header(file.toStdString());
    std::ifstream in(file.toStdString(), std::ios::binary);
    const std::string all{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::map<std::string, std::string> out;
    for (const auto& t : header.tensors)
        if (t.name != "rng_state") out[t.name] = all.substr(header.data_offset + t.begin, t.end - t.begin);
    return out;
}

std::int64_t component_peak(const TrainerResult& r, const char* name) {
    const Event* done = r.last(EventType::Done);
    if (!done || !done->body.contains("component_peaks")) return -1;
    const auto& c = done->body["component_peaks"];
    return c.contains(name) ? c[name].get<std::int64_t>() : 0;
}

}  // namespace

class OptimizerInBackwardTest : public QObject {
    Q_OBJECT
private slots:
    void sameWeightsAsTheStepAfterBackward_data() {
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("precision");
        QTest::addColumn<bool>("ckpt");
        QTest::newRow("full fp32") << "full" << "fp32" << false;
        QTest::newRow("full bf16-mixed") << "full" << "bf16-mixed" << false;
        QTest::newRow("full fp32 ckpt") << "full" << "fp32" << true;
        QTest::newRow("lora fp32") << "lora" << "fp32" << false;
        QTest::newRow("lora bf16-mixed ckpt") << "lora" << "bf16-mixed" << true;
    }
    void sameWeightsAsTheStepAfterBackward() {
        QFETCH(QString, method);
        QFETCH(QString, precision);
        QFETCH(bool, ckpt);
        QTemporaryDir dir;
        // Weight decay and a warm-up make each step's learning rate and decay differ; no clipping
        // (the in-backward step cannot clip, so the ordinary one must not either).
        QStringList common = {"--method", method, "--precision", precision, "--steps", "4", "--seq", "64",
                              "--batch", "2", "--weight-decay", "0.1", "--warmup-steps", "2", "--max-grad-norm",
                              "0", "--eval-fraction", "0", "--sample-tokens", "0"};
        if (ckpt) common << "--grad-checkpointing";
        const TrainerResult after = testing::train(common + QStringList{"--out", dir.filePath("after")});
        const TrainerResult in = testing::train(common + QStringList{"--optimizer-in-backward", "--out", dir.filePath("in")});
        QVERIFY2(after.exit_code == 0, qPrintable(after.err));
        QVERIFY2(in.exit_code == 0, qPrintable(in.err));
        QVERIFY(in.first(EventType::Hello)->body["plan"].value("optimizer_in_backward", false));
        QVERIFY(!after.first(EventType::Hello)->body["plan"].value("optimizer_in_backward", true));
        // The same losses step by step (each step's forward sees the weights the last one made).
        QCOMPARE(in.losses(), after.losses());
        QCOMPARE(in.losses().size(), size_t(4));
        const QString weights = method == "full" ? "model.safetensors" : "adapter_model.safetensors";
        const auto w_after = tensor_data(dir.filePath("after/" + weights));
        QVERIFY(w_after.size() >= 14);   // LoRA: A and B of the seven linears of one layer at least
        QVERIFY2(tensor_data(dir.filePath("in/" + weights)) == w_after, "the trained weights differ");
        // Moments (and bf16-mixed's fp32 master weights) too.
        QVERIFY2(tensor_data(dir.filePath("in/optimizer.safetensors")) == tensor_data(dir.filePath("after/optimizer.safetensors")),
                 "the optimizer state differs");
        // The weights moved: the comparison is not of two untouched models.
        QTemporaryDir none;
        const TrainerResult zero = testing::train({"--method", method, "--precision", precision, "--steps", "1", "--seq",
                                                   "64", "--batch", "2", "--lr", "1e-30", "--max-grad-norm", "0",
                                                   "--eval-fraction", "0", "--sample-tokens", "0", "--out", none.path()});
        QVERIFY2(zero.exit_code == 0, qPrintable(zero.err));
        QVERIFY(tensor_data(none.filePath(weights)) != w_after);
    }

    void oneGradientAliveAndNoOptimizerPhase() {
        // Full fp32 on the built-in model (tied embedding, vocabulary V × hidden 256, MLP 688 wide):
        // the ordinary run holds every gradient (4 B × all parameters) at once; in backward the
        // tied embedding's, from the head's backward until the embedding adds its rows
        // (4 B × V × 256), and beside it one layer gradient at a time, the largest an MLP
        // projection's (4 B × 688 × 256).
        const QStringList common = {"--method", "full", "--precision", "fp32", "--steps", "2", "--seq", "64",
                                    "--batch", "2", "--max-grad-norm", "0", "--eval-fraction", "0", "--sample-tokens", "0"};
        const TrainerResult after = testing::train(common);
        const TrainerResult in = testing::train(common + QStringList{"--optimizer-in-backward"});
        QVERIFY2(after.exit_code == 0 && in.exit_code == 0, qPrintable(after.err + in.err));
        const Event* hello = in.first(EventType::Hello);
        const std::int64_t params = hello->body["params"]["trainable"];
        const std::int64_t vocab = hello->body["architecture"]["vocab_size"];
        QCOMPARE(component_peak(after, "gradients"), 4 * params);
        QCOMPARE(component_peak(in, "gradients"), 4 * vocab * 256 + 4 * 688 * 256);
        bool optimizer_phase = false;
        for (const Event* e : in.all(EventType::Memory)) optimizer_phase |= e->string_field("phase") == "optimizer";
        QVERIFY(!optimizer_phase);
        QVERIFY(in.last(EventType::Done)->int_field("peak_bytes") < after.last(EventType::Done)->int_field("peak_bytes"));
    }

    void whatItCannotDoIsRefused_data() {
        QTest::addColumn<QStringList>("extra");
        QTest::addColumn<QString>("names");   // the flag the message must name
        QTest::newRow("clipping") << QStringList{"--max-grad-norm", "1"} << "--max-grad-norm";
        QTest::newRow("accumulation") << QStringList{"--grad-accum", "2"} << "--grad-accum";
        QTest::newRow("ranks") << QStringList{"--nproc", "2"} << "--nproc";
        QTest::newRow("fp16 loss scaling") << QStringList{"--precision", "fp16-mixed"} << "fp16-mixed";
    }
    void whatItCannotDoIsRefused() {
        QFETCH(QStringList, extra);
        QFETCH(QString, names);
        const TrainerResult r = testing::train(QStringList{"--method", "full", "--optimizer-in-backward", "--steps", "1"} + extra);
        QCOMPARE(r.exit_code, 2);
        QCOMPARE(r.error_code(), std::string("bad_argument"));
        QVERIFY2(QString::fromStdString(r.error_message()).contains(names), r.error_message().c_str());
        QVERIFY(QString::fromStdString(r.error_message()).contains("--optimizer-in-backward"));
        QCOMPARE(r.steps(), 0);
    }
};

QTEST_GUILESS_MAIN(OptimizerInBackwardTest)
#include "test_optimizer_in_backward.moc"
