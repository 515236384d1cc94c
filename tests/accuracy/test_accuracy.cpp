// A small subset of the accuracy grid (bench/accuracy) against the real wingspan-train: the
// static components must match to the byte, activations, logits and the peak of allocated bytes
// within 10 % (the committed full-grid report shows the medians).
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "accuracy_grid.hpp"

using namespace wingspan;
using namespace wingspan::accuracy;
namespace fs = std::filesystem;

// What the trainer's `devices` reports of this CPU's bf16 instructions.
bool cpu_has_bf16_instructions() {
    const std::string isa = cpu_bf16_isa(fs::path(WINGSPAN_TEST_BIN_DIR) / "wingspan-train");
    return !isa.empty() && isa != "none";
}

// Preference pairs for the DPO/ORPO points: 24 short pairs (every row is padded to --seq, so
// their lengths do not change the bytes).
fs::path write_preference_pairs(const fs::path& file) {
    std::ofstream out(file);
    for (int i = 0; i < 24; ++i)
        out << "{\"prompt\": \"What is " << i << " plus " << i << "? \", \"chosen\": \"It is " << 2 * i
            << ".\", \"rejected\": \"Perhaps " << 3 * i + 1 << ", who knows.\"}\n";
    return file;
}

std::int64_t bytes_of(const std::map<Component, std::int64_t>& m, Component c) {
    auto it = m.find(c);
    return it == m.end() ? std::int64_t{0} : it->second;
}

// The first static component whose predicted bytes differ from the measured ones, as a message;
// empty when all match to the byte.
QString static_mismatch(const PointResult& r) {
    for (Component c : kAllComponents) {
        if (!is_static(c) || bytes_of(r.predicted, c) == bytes_of(r.measured, c)) continue;
        return QString("rank %1 %2: predicted %3, measured %4")
            .arg(r.rank)
            .arg(QString::fromStdString(std::string(component_name(c))))
            .arg(bytes_of(r.predicted, c))
            .arg(bytes_of(r.measured, c));
    }
    return {};
}

class AccuracyTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        trainer_ = fs::path(WINGSPAN_TEST_BIN_DIR) / "wingspan-train";
        if (!fs::exists(trainer_)) QSKIP("wingspan-train is not built");
        QVERIFY(dir_.isValid());
    }

    void points_data() {
        QTest::addColumn<QString>("objective");   // --objective: "" (SFT), dpo or orpo (issue 31)
        QTest::addColumn<QString>("arch");
        QTest::addColumn<QString>("method");
        QTest::addColumn<int>("seq");
        QTest::addColumn<int>("batch");
        QTest::addColumn<bool>("ckpt");
        QTest::addColumn<QString>("attention");
        QTest::addColumn<QString>("targets");
        QTest::addColumn<QString>("precision");
        QTest::addColumn<QString>("cpu_bf16");   // WINGSPAN_CPU_BF16 for the bf16-mixed points
        // Each method once with and once without checkpointing; both attention- and
        // MLP-dominated backward peaks; the 135M-class shape (30 layers, 49k vocabulary) once.
        QTest::newRow("default full 128x4") << "" << "default" << "full" << 128 << 4 << false << "eager" << "" << "fp32" << "";
        QTest::newRow("default full 512x1 ckpt") << "" << "default" << "full" << 512 << 1 << true << "eager" << "" << "fp32" << "";
        QTest::newRow("default lora 512x1") << "" << "default" << "lora" << 512 << 1 << false << "eager" << "" << "fp32" << "";
        QTest::newRow("default qlora 128x4 ckpt") << "" << "default" << "qlora" << 128 << 4 << true << "eager" << "" << "fp32" << "";
        // SDPA on libtorch 1.13's CPU is the math graph (profile attention.sdpa_runs_math): the
        // softmax is kept, K and V repeated; with checkpointing the mask is a saved argument.
        QTest::newRow("default lora 128x1 sdpa") << "" << "default" << "lora" << 128 << 1 << false << "sdpa" << "" << "fp32" << "";
        QTest::newRow("default full 128x2 ckpt sdpa") << "" << "default" << "full" << 128 << 2 << true << "sdpa" << "" << "fp32" << "";
        // Adapters on some linears only: the first adapted layer keeps only what lies after its
        // first adapter (core/src/memory/first_layer.cpp).
        QTest::newRow("default lora 128x1 targets down") << "" << "default" << "lora" << 128 << 1 << false << "eager" << "down" << "fp32" << "";
        QTest::newRow("default lora 128x2 targets gate,v") << "" << "default" << "lora" << 128 << 2 << false << "sdpa" << "gate,v" << "fp32" << "";
        // QLoRA on some linears: the 4-bit linear keeps no input (profile qlora.
        // quantized_linear_keeps_no_input), so a norm output, the attention output or the MLP
        // product stays only for an adapter on its consumer (over-predicted by 15-27 % before).
        QTest::newRow("default qlora 128x1 targets q,v") << "" << "default" << "qlora" << 128 << 1 << false << "eager" << "q,v" << "fp32" << "";
        QTest::newRow("default qlora 128x4 targets down bf16-mixed emulated") << "" << "default" << "qlora" << 128 << 4 << false << "eager" << "down" << "bf16-mixed" << "emulated";
        QTest::newRow("default qlora 128x4 targets down bf16-mixed hardware") << "" << "default" << "qlora" << 128 << 4 << false << "eager" << "down" << "bf16-mixed" << "hardware";
        QTest::newRow("135m qlora 128x1") << "" << "135m" << "qlora" << 128 << 1 << false << "eager" << "" << "fp32" << "";
        // A full fine-tune this small peaks at the first layer's q projection backward (the phase
        // backward_end_qkv): every weight gradient but two made, little of the activations left. The
        // softmax's backward before it had been the last moment planned, 770 kB (836 kB checkpointed) under.
        QTest::newRow("135m full 128x1") << "" << "135m" << "full" << 128 << 1 << false << "eager" << "" << "fp32" << "";
        QTest::newRow("135m full 128x1 ckpt") << "" << "135m" << "full" << 128 << 1 << true << "eager" << "" << "fp32" << "";
        // bf16-mixed: the fused norm keeps its 16-bit input and its backward makes one bf16 dx
        // (the unfused norm's fp32 temporaries were the +2.5..5.3 % miss without checkpointing).
        QTest::newRow("default lora 128x4 bf16-mixed emulated") << "" << "default" << "lora" << 128 << 4 << false << "eager" << "" << "bf16-mixed" << "emulated";
        QTest::newRow("default lora 128x4 bf16-mixed hardware") << "" << "default" << "lora" << 128 << 4 << false << "eager" << "" << "bf16-mixed" << "hardware";
        QTest::newRow("default full 512x1 bf16-mixed emulated") << "" << "default" << "full" << 512 << 1 << false << "eager" << "" << "bf16-mixed" << "emulated";
        QTest::newRow("default full 512x1 bf16-mixed hardware") << "" << "default" << "full" << 512 << 1 << false << "eager" << "" << "bf16-mixed" << "hardware";
        // DPO and ORPO (issue 31): B pairs are one forward of 2·B rows; DPO's reference (the base with
        // the adapters off for LoRA, a frozen copy for full) scores them before the policy's forward.
        // Their peaks are held to 0.5 % below (SFT's points of the same rows share the same terms).
        QTest::newRow("default lora 128x2 dpo") << "dpo" << "default" << "lora" << 128 << 2 << false << "eager" << "" << "fp32" << "";
        QTest::newRow("default full 128x2 dpo") << "dpo" << "default" << "full" << 128 << 2 << false << "eager" << "" << "fp32" << "";
        QTest::newRow("default qlora 128x2 ckpt dpo") << "dpo" << "default" << "qlora" << 128 << 2 << true << "eager" << "" << "fp32" << "";
        QTest::newRow("default lora 128x2 bf16-mixed emulated dpo") << "dpo" << "default" << "lora" << 128 << 2 << false << "eager" << "" << "bf16-mixed" << "emulated";
        // Gemma 2 (soft-capped scores and logits, sublayer output norms, a 64-token sliding window
        // on the even layers, so seq 128 runs both masks): the capped head goes through the
        // in-place loss (8 B per token more), the capped scores keep their tanh output.
        QTest::newRow("gemma2 full 128x2") << "" << "gemma2" << "full" << 128 << 2 << false << "eager" << "" << "fp32" << "";
        QTest::newRow("gemma2 lora 128x2 sdpa") << "" << "gemma2" << "lora" << 128 << 2 << false << "sdpa" << "" << "fp32" << "";
        QTest::newRow("gemma2 qlora 128x2 ckpt") << "" << "gemma2" << "qlora" << 128 << 2 << true << "eager" << "" << "fp32" << "";
        // Checkpointed in fp32 the peak is the second layer's MLP backward (its kept input and the other
        // attention kind's mask still held), and QLoRA's output-norm chain runs before the down
        // projection's gradients exist: both held to 64 B below (they were -41 kB and -23 kB).
        QTest::newRow("gemma2 lora 128x2 ckpt") << "" << "gemma2" << "lora" << 128 << 2 << true << "eager" << "" << "fp32" << "";
        // Gemma's (1 + weight) norm scales in fp32 (profile model.norm_scales_in_fp32): a full fine-tune
        // in bf16-mixed keeps the fp32 normalized input (its activations were under-predicted by 10 %).
        QTest::newRow("gemma2 full 128x2 bf16-mixed emulated") << "" << "gemma2" << "full" << 128 << 2 << false << "eager" << "" << "bf16-mixed" << "emulated";
        QTest::newRow("gemma2 full 128x2 bf16-mixed hardware") << "" << "gemma2" << "full" << 128 << 2 << false << "eager" << "" << "bf16-mixed" << "hardware";
        // Its unfused norm's backward is a chain of fp32 ops: the final norm's is the activations' largest
        // moment at this size (rows_layer_saved.cpp final_norm_backward; LoRA was 4 % under without it).
        QTest::newRow("gemma2 lora 128x2 bf16-mixed emulated") << "" << "gemma2" << "lora" << 128 << 2 << false << "sdpa" << "" << "bf16-mixed" << "emulated";
        QTest::newRow("gemma2 lora 128x2 bf16-mixed hardware") << "" << "gemma2" << "lora" << 128 << 2 << false << "sdpa" << "" << "bf16-mixed" << "hardware";
        // Checkpointed: both masks (sliding and global) are checkpoint arguments, and the MLP output's own
        // norm runs the same fp32 chain at the top of the recomputed layer's backward (−10 % before).
        QTest::newRow("gemma2 lora 128x2 ckpt bf16-mixed emulated") << "" << "gemma2" << "lora" << 128 << 2 << true << "eager" << "" << "bf16-mixed" << "emulated";
        QTest::newRow("gemma2 lora 128x2 ckpt bf16-mixed hardware") << "" << "gemma2" << "lora" << 128 << 2 << true << "eager" << "" << "bf16-mixed" << "hardware";
        QTest::newRow("default lora 128x2 orpo") << "orpo" << "default" << "lora" << 128 << 2 << false << "eager" << "" << "fp32" << "";
        QTest::newRow("default full 128x1 ckpt orpo") << "orpo" << "default" << "full" << 128 << 1 << true << "eager" << "" << "fp32" << "";
    }

    void points() {
        QFETCH(QString, objective);
        QFETCH(QString, arch);
        QFETCH(QString, method);
        QFETCH(int, seq);
        QFETCH(int, batch);
        QFETCH(bool, ckpt);
        QFETCH(QString, attention);
        QFETCH(QString, targets);
        QFETCH(QString, precision);
        QFETCH(QString, cpu_bf16);
        // Both CPU bf16 paths allocate the same tensors (trainer/src/kernels/kernels_gemm.hpp); the
        // hardware one needs AVX512-BF16 or AMX-BF16.
        if (cpu_bf16 == "hardware" && !cpu_has_bf16_instructions())
            QSKIP("hardware bf16 path NOT TESTED: this CPU has no AVX512-BF16/AMX-BF16 (grep avx512_bf16 /proc/cpuinfo)");
        GridPoint p;
        p.cpu_bf16 = cpu_bf16.toStdString();
        p.attention = attention.toStdString();
        p.targets = targets.toStdString();
        p.precision = precision.toStdString();
        p.arch = arch.toStdString();
        if (arch == "135m") p.model_dir = write_135m_config(fs::path(dir_.path().toStdString()) / "m135");
        if (arch == "gemma2") p.model_dir = write_gemma2_config(fs::path(dir_.path().toStdString()) / "gemma2");
        p.method = method.toStdString();
        p.seq = seq;
        p.batch = batch;
        p.grad_checkpointing = ckpt;
        if (!objective.isEmpty()) {
            p.objective = objective.toStdString();
            p.data = write_preference_pairs(fs::path(dir_.path().toStdString()) / "pairs.jsonl");
        }
        const PointResult r = run_point(trainer_, p, 2, fs::path(dir_.path().toStdString()) / QTest::currentDataTag());
        QVERIFY2(r.failure.empty(), r.failure.c_str());
        QVERIFY(!r.predicted.empty());
        const auto get = bytes_of;
        QVERIFY2(static_mismatch(r).isEmpty(), qPrintable(static_mismatch(r)));
        for (Component c : {Component::Activations, Component::LogitsLoss}) {
            const double err = error_percent(get(r.predicted, c), get(r.measured, c));
            QVERIFY2(get(r.measured, c) > 0 && std::fabs(err) <= 10.0,
                     qPrintable(QString("%1: predicted %2, measured %3 (%4 %)")
                                    .arg(QString::fromStdString(std::string(component_name(c))))
                                    .arg(get(r.predicted, c))
                                    .arg(get(r.measured, c))
                                    .arg(err, 0, 'f', 1)));
        }
        if (method == "qlora" && !targets.isEmpty()) {
            // Which linear inputs a QLoRA layer keeps is exact in the model (over-predicted by 15-27 %
            // before); held to 0.01 %: q,v at 128x1 peaks in forward, at the last layer's 4-bit down
            // projection (the phase forward_down), which was -1.2 % (99,456 B: the trainer's double
            // rotary angles, now freed at once, and the additive mask) until it was a moment.
            const double err = error_percent(get(r.predicted, Component::Activations), get(r.measured, Component::Activations));
            QVERIFY2(std::fabs(err) <= 0.01, qPrintable(QString("QLoRA targets %1 activations: %2 %").arg(targets).arg(err, 0, 'f', 3)));
        }
        if (objective.isEmpty()) {
            // The in-place loss's per-token buffers are rows of their own (loss_memory.cpp): every SFT
            // point's logits and loss to 0.1 % (the label buffers were -12 B per token in fp32 forward,
            // -1.1 % on the built-in model's 260-token vocabulary).
            const double err = error_percent(get(r.predicted, Component::LogitsLoss), get(r.measured, Component::LogitsLoss));
            QVERIFY2(std::fabs(err) <= 0.1, qPrintable(QString("logits and loss: %1 %").arg(err, 0, 'f', 3)));
        }
        if (precision != "fp32" || arch == "gemma2") {
            // The bf16-mixed points hold the activations to 1 % (they missed by 2.5..5.3 % while
            // the norm ran unfused); Gemma 2's, in every precision, to 0.05 %: its full fine-tune was
            // −1.8 %, LoRA −4 % and checkpointed LoRA −10 % until its norms' fp32 backward chains were
            // moments of their own (now within 1,532 B).
            const double bound = arch == "gemma2" ? 0.05 : 1.0;
            const double err = error_percent(get(r.predicted, Component::Activations), get(r.measured, Component::Activations));
            QVERIFY2(std::fabs(err) <= bound, qPrintable(QString("%1 activations: %2 %").arg(precision).arg(err, 0, 'f', 3)));
        }
        if (arch == "gemma2") {
            // The soft-capped head runs in the in-place loss: logits and loss to 0.1 %, the peak to
            // 0.25 % (through plain autograd they were 4× the prediction and the peak 20 % over it;
            // LoRA's was −0.44 % while the loss's kept hidden states were counted freed).
            const double logits = error_percent(get(r.predicted, Component::LogitsLoss), get(r.measured, Component::LogitsLoss));
            const double peak = r.record.summary().peak_error_percent();
            QVERIFY2(std::fabs(logits) <= 0.1 && std::fabs(peak) <= 0.25,
                     qPrintable(QString("Gemma 2 logits %1 %, peak %2 %").arg(logits, 0, 'f', 3).arg(peak, 0, 'f', 3)));
        }
        const RunSummary sum = r.record.summary();
        if (arch == "gemma2" && ckpt && precision == "fp32")
            QVERIFY2(std::llabs(sum.predicted_peak - sum.measured_peak) <= 64,
                     qPrintable(QString("Gemma 2 checkpointed peak: predicted %1, measured %2").arg(sum.predicted_peak).arg(sum.measured_peak)));
        if (arch == "135m" && method == "full")
            QVERIFY2(std::llabs(sum.predicted_peak - sum.measured_peak) <= 64,
                     qPrintable(QString("135M full peak: predicted %1, measured %2").arg(sum.predicted_peak).arg(sum.measured_peak)));
        // (QLoRA with checkpointing was +0.511 %, 98,296 B of activations over, as SFT's point of the
        // same 4 rows: one rotary table per batch row counted where the trainer builds one for the
        // batch, profile key model.rotary_table_once; now within 8 B.)
        const double objective_bound = 0.5;
        if (!objective.isEmpty())
            QVERIFY2(std::fabs(sum.peak_error_percent()) <= objective_bound,
                     qPrintable(QString("%1 peak: predicted %2, measured %3 (%4 %)")
                                    .arg(objective)
                                    .arg(sum.predicted_peak)
                                    .arg(sum.measured_peak)
                                    .arg(sum.peak_error_percent(), 0, 'f', 3)));
        QVERIFY2(std::fabs(sum.peak_error_percent()) <= 10.0,
                 qPrintable(QString("peak: predicted %1, measured %2 (%3 %)")
                                .arg(sum.predicted_peak)
                                .arg(sum.measured_peak)
                                .arg(sum.peak_error_percent(), 0, 'f', 1)));
    }

    // Two ranks (issue 24): each rank's static parts to the byte and its peak of allocated
    // tensors within 0.25 % (bf16 gradients go through fp32 buffers on gloo: profile
    // bf16_collectives_in_fp32; the staged copies were uncounted and DDP/ZeRO-1 missed by
    // 9.9 % / 15.5 % before). ZeRO-2's down-projection gradient lives before the MLP's inner
    // gradients, not beside them (issue 25: full FT was +0.8 % bf16-mixed, +1.3 % fp32; now
    // +0.04 %, the 16 KiB every point shares).
    void ranks_data() {
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("precision");
        QTest::addColumn<QString>("sharding");
        QTest::newRow("full bf16-mixed ddp") << "full" << "bf16-mixed" << "ddp";
        QTest::newRow("full bf16-mixed zero1") << "full" << "bf16-mixed" << "zero1";
        QTest::newRow("full bf16-mixed zero2") << "full" << "bf16-mixed" << "zero2";
        QTest::newRow("full fp32 zero2") << "full" << "fp32" << "zero2";
        QTest::newRow("lora fp32 zero1") << "lora" << "fp32" << "zero1";
        QTest::newRow("lora bf16-mixed zero2") << "lora" << "bf16-mixed" << "zero2";
    }
    void ranks() {
        QFETCH(QString, method);
        QFETCH(QString, precision);
        QFETCH(QString, sharding);
        GridPoint p;
        p.arch = "default";
        p.method = method.toStdString();
        p.precision = precision.toStdString();
        p.seq = 128;
        p.batch = 2;
        p.processes = 2;
        p.sharding = sharding.toStdString();
        const auto results = run_point_ranks(trainer_, p, 2, fs::path(dir_.path().toStdString()) / QTest::currentDataTag());
        QCOMPARE(results.size(), size_t(2));
        for (const PointResult& r : results) {
            QVERIFY2(r.failure.empty(), r.failure.c_str());
            QVERIFY2(static_mismatch(r).isEmpty(), qPrintable(static_mismatch(r)));
            const RunSummary sum = r.record.summary();
            QVERIFY2(std::fabs(sum.peak_error_percent()) <= 0.25,
                     qPrintable(QString("rank %1 peak: predicted %2, measured %3 (%4 %)")
                                    .arg(r.rank)
                                    .arg(sum.predicted_peak)
                                    .arg(sum.measured_peak)
                                    .arg(sum.peak_error_percent(), 0, 'f', 2)));
        }
    }

    // --optimizer-in-backward (issue 25): each parameter is stepped in backward as soon as its
    // gradient is complete and the gradient freed, so one gradient is alive at a time (here the
    // tied embedding's, held from the head's backward until the embedding adds its rows) and
    // there is no optimizer phase. Full fp32 and bf16-mixed, LoRA, with and without
    // checkpointing: the static parts (gradients included) to the byte, the peak within 0.25 %
    // (measured +0.03 .. +0.14 %: 16-33 KB of activations, which the same runs without the flag miss too).
    void optimizer_in_backward_data() {
        QTest::addColumn<QString>("arch");
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("precision");
        QTest::addColumn<bool>("ckpt");
        QTest::newRow("full fp32 128x2") << "default" << "full" << "fp32" << false;
        QTest::newRow("full fp32 128x2 ckpt") << "default" << "full" << "fp32" << true;
        QTest::newRow("full bf16-mixed 128x2") << "default" << "full" << "bf16-mixed" << false;
        QTest::newRow("lora fp32 128x2") << "default" << "lora" << "fp32" << false;
        QTest::newRow("lora bf16-mixed 128x2 ckpt") << "default" << "lora" << "bf16-mixed" << true;
        // 135M-class: the tied 49k × 576 embedding's gradient beside an MLP projection's (about 30 s).
        QTest::newRow("135m full bf16-mixed 128x1") << "135m" << "full" << "bf16-mixed" << false;
    }
    void optimizer_in_backward() {
        QFETCH(QString, arch);
        QFETCH(QString, method);
        QFETCH(QString, precision);
        QFETCH(bool, ckpt);
        GridPoint p;
        p.arch = arch.toStdString();
        if (arch == "135m") p.model_dir = write_135m_config(fs::path(dir_.path().toStdString()) / "m135");
        p.method = method.toStdString();
        p.precision = precision.toStdString();
        if (precision != "fp32") p.cpu_bf16 = "emulated";   // the same tensors as the hardware path
        p.seq = 128;
        p.batch = arch == "135m" ? 1 : 2;
        p.grad_checkpointing = ckpt;
        p.optimizer_in_backward = true;
        const PointResult r = run_point(trainer_, p, 2, fs::path(dir_.path().toStdString()) / QTest::currentDataTag());
        QVERIFY2(r.failure.empty(), r.failure.c_str());
        QVERIFY2(static_mismatch(r).isEmpty(), qPrintable(static_mismatch(r)));
        QVERIFY(r.record.plan().value("optimizer_in_backward", false));
        for (Component c : {Component::Activations, Component::LogitsLoss}) {
            const double err = error_percent(bytes_of(r.predicted, c), bytes_of(r.measured, c));
            QVERIFY2(bytes_of(r.measured, c) > 0 && std::fabs(err) <= 10.0,
                     qPrintable(QString("%1: %2 %").arg(QString::fromStdString(std::string(component_name(c)))).arg(err, 0, 'f', 2)));
        }
        const RunSummary sum = r.record.summary();
        QVERIFY2(std::fabs(sum.peak_error_percent()) <= 0.25,
                 qPrintable(QString("peak: predicted %1, measured %2 (%3 %)")
                                .arg(sum.predicted_peak)
                                .arg(sum.measured_peak)
                                .arg(sum.peak_error_percent(), 0, 'f', 3)));
    }

private:
    fs::path trainer_;
    QTemporaryDir dir_;
};

QTEST_GUILESS_MAIN(AccuracyTest)
#include "test_accuracy.moc"
