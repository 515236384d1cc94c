// The speed model's parts (core/src/planner/speed_model.cpp) against figures computed by hand.
#include <QtTest>

#include <cmath>
#include <cstdio>

#include "test_support.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/memory_model.hpp"
#include "wingspan/speed_model.hpp"
#include "wingspan/verdict.hpp"

using namespace wingspan;

class SpeedModelTest : public QObject {
    Q_OBJECT

    static TrainingSetup lora(bool checkpointing) {
        TrainingSetup s;
        s.method = Method::Lora;
        s.seq_len = 1024;
        s.micro_batch = 2;
        s.grad_checkpointing = checkpointing;
        return s;
    }

private slots:
    void decodeIsWeightBytesOverBandwidth() {
        const auto& lib = test::library();
        const Architecture a = lib.model("llama-3.1-8b").arch;
        const MachineProfile& rtx = lib.machine("rtx-4090");
        TrainingSetup s;
        s.method = Method::Serve;
        s.precision = Precision::Bf16;
        s.seq_len = 1;
        const SpeedFactors k = speed_factors(rtx, lib.framework_for(rtx));
        const ServeSpeed v = serving_speed(a, s, rtx, k);
        // Llama 3.1 8B: 8,030,261,248 parameters, of which the input embedding (128,256 × 4,096)
        // is a row lookup; the rest, head included, is read once per generated token in bf16.
        const double read = (8030261248.0 - 128256.0 * 4096.0) * 2.0;
        QVERIFY2(std::fabs(v.weight_bytes - read) / read < 1e-3, qPrintable(QString::number(v.weight_bytes)));
        const double step = read / (1008e9 * k.bandwidth_efficiency) + 4.0 * 32 * k.launch_s;
        QVERIFY2(std::fabs(v.decode_tokens_per_s - 1.0 / step) < 0.01 * (1.0 / step),
                 qPrintable(QString::number(v.decode_tokens_per_s)));
        // Half the bits, about twice the tokens (the weights dominate a short context).
        const ServeSpeed q = serving_speed(a, s, rtx, k, 8.0);
        QVERIFY(q.decode_tokens_per_s > 1.9 * v.decode_tokens_per_s && q.decode_tokens_per_s < 2.0 * v.decode_tokens_per_s);
        // A long context reads its KV cache every step: 2 × 32 layers × 1,024 (8 KV heads × 128) × 2 B per token.
        s.seq_len = 65536;
        const ServeSpeed longer = serving_speed(a, s, rtx, k);
        QCOMPARE(longer.kv_bytes_per_step, 65536.0 * 2 * 32 * 1024 * 2);
        QVERIFY(longer.decode_tokens_per_s < v.decode_tokens_per_s);
    }

    void frozenWeightsSkipTheWeightGradient() {
        const auto& lib = test::library();
        const Architecture a = lib.model("llama-3.2-1b").arch;
        const MachineProfile& m = lib.machine("a100-80gb");
        const FrameworkProfile& f = lib.framework_for(m);
        const SpeedFactors k = speed_factors(m, f);
        TrainingSetup full = lora(false);
        full.method = Method::Full;
        // Without checkpointing: forward, input gradients, weight gradients (full) = 3 passes
        // against 2 for LoRA's frozen base.
        QCOMPARE(training_step(a, full, m, f, k).matmul_flops / training_step(a, lora(false), m, f, k).matmul_flops, 1.5);
        // Checkpointing recomputes the layers' forward (not the head's): + 2 × tokens × layer weights.
        const double tokens = 2048;
        const double head = 128256.0 * 2048;
        const double layer_weights = double(a.parameter_count()) - 128256.0 * 2048;   // tied: one copy
        const double extra = training_step(a, lora(true), m, f, k).matmul_flops - training_step(a, lora(false), m, f, k).matmul_flops;
        QVERIFY2(std::fabs(extra - 2.0 * tokens * layer_weights) < 1e-6 * extra, qPrintable(QString::number(extra)));
        QVERIFY(head > 0);
    }

    void qloraPaysForDequantization() {
        const auto& lib = test::library();
        const Architecture a = lib.model("llama-3.1-8b").arch;
        const MachineProfile& m = lib.machine("rtx-4090");
        const FrameworkProfile& f = lib.framework_for(m);
        const SpeedFactors k = speed_factors(m, f);
        TrainingSetup q = lora(true);
        q.method = Method::Qlora;
        const StepTime qs = training_step(a, q, m, f, k), ls = training_step(a, lora(true), m, f, k);
        QCOMPARE(ls.dequant_s, 0.0);
        // 4.5 B per quantized weight and pass; passes: forward, recompute, input gradients.
        const double quantized = double(count_parameters(a, q).quantized);
        const double expected = quantized * 4.5 * 3 / (1008e9 * k.bandwidth_efficiency);
        QVERIFY2(std::fabs(qs.dequant_s - expected) < 1e-9 * expected + 1e-12, qPrintable(QString::number(qs.dequant_s)));
        // Dequantization is per pass, not per token: more tokens per step amortise it.
        const double ratio2 = qs.tokens_per_s() / ls.tokens_per_s();
        TrainingSetup q1 = q, l1 = lora(true);
        q1.micro_batch = l1.micro_batch = 1;
        const double ratio1 = training_step(a, q1, m, f, k).tokens_per_s() / training_step(a, l1, m, f, k).tokens_per_s();
        QVERIFY2(ratio1 > 0.6 && ratio1 < 0.8, qPrintable(QString::number(ratio1)));   // lesson: 20-40 % slower
        QVERIFY2(ratio2 > ratio1 && ratio2 < 1.0, qPrintable(QString::number(ratio2)));
    }

    void eagerAttentionGrowsWithTheSquareOfTheSequence() {
        const auto& lib = test::library();
        const Architecture a = lib.model("qwen2.5-0.5b").arch;
        const MachineProfile& m = lib.machine("l4");
        const FrameworkProfile& f = lib.framework_for(m);
        const SpeedFactors k = speed_factors(m, f);
        auto extra = [&](std::int64_t seq) {
            TrainingSetup e = lora(false), fl = lora(false);
            e.seq_len = fl.seq_len = seq;
            e.micro_batch = fl.micro_batch = 1;
            e.attention = Attention::Eager;
            fl.attention = Attention::Flash;
            return training_step(a, e, m, f, k).attention_s - training_step(a, fl, m, f, k).attention_s;
        };
        QVERIFY(extra(1024) > 0);
        // Both parts of the difference (the s² scores eager attention writes, and the score recompute
        // fused kernels do in backward) grow with s² at one sequence per batch; the GEMM fill of
        // 1024 vs 2048 rows moves the ratio by a fraction of a percent.
        QVERIFY2(std::fabs(extra(2048) / extra(1024) - 4.0) < 0.02, qPrintable(QString::number(extra(2048) / extra(1024))));
    }

    // Gemma 2's soft-capped scores cannot go through SDPA: asked for it, the step is timed eager, as
    // the memory model plans it; a model without soft caps keeps SDPA's time.
    void softCappedAttentionIsTimedEager() {
        const auto& lib = test::library();
        const MachineProfile& m = lib.machine("l4");
        const FrameworkProfile& f = lib.framework("hf-transformers");
        const SpeedFactors k = speed_factors(m, f);
        TrainingSetup sdpa = lora(false), eager = lora(false);
        sdpa.attention = Attention::Sdpa;
        eager.attention = Attention::Eager;
        const Architecture gemma = lib.model("gemma-2-2b").arch;
        QCOMPARE(training_step(gemma, sdpa, m, f, k).attention_s, training_step(gemma, eager, m, f, k).attention_s);
        const Architecture uncapped = lib.model("qwen2.5-0.5b").arch;
        QVERIFY(training_step(uncapped, sdpa, m, f, k).attention_s < training_step(uncapped, eager, m, f, k).attention_s);
    }

    void aGpuHidesItsDispatchBehindLargeSteps() {
        const auto& lib = test::library();
        const MachineProfile& m = lib.machine("h100");
        const FrameworkProfile& f = lib.framework_for(m);
        const SpeedFactors k = speed_factors(m, f);
        // 8B at 2 × 1024 tokens: the device's work outlasts ~10^4 dispatches of 2 µs.
        QCOMPARE(training_step(lib.model("llama-3.1-8b").arch, lora(true), m, f, k).overhead_s, 0.0);
        // A CPU dispatches and computes in turn: its dispatch always adds.
        const MachineProfile& cpu = lib.machine("cpu-laptop-8gb");
        QVERIFY(training_step(lib.model("smollm2-135m").arch, lora(false), cpu, lib.framework_for(cpu),
                              speed_factors(cpu, lib.framework_for(cpu))).overhead_s > 0);
    }

    void anOffloadedOptimizerCrossesTheLink() {
        const auto& lib = test::library();
        const MachineProfile& m = lib.machine("rtx-4090");
        const FrameworkProfile& f = lib.framework_for(m);
        const Architecture a = lib.model("llama-3.2-1b").arch;
        TrainingSetup s = lora(true);
        s.method = Method::Full;
        QCOMPARE(training_step(a, s, m, f, speed_factors(m, f)).offload_s, 0.0);
        s.offload = true;
        s.grad_accum = 4;
        // fp32 gradients down, 16-bit weights up, per optimizer step: 6 B per trainable over 32 GB/s, a quarter per micro-step.
        const double expected = double(count_parameters(a, s).trainable) * 6.0 / 32e9 / 4.0;
        QCOMPARE(training_step(a, s, m, f, speed_factors(m, f)).offload_s, expected);
    }

    void unslothsPublishedSpeedup() {
        const auto& lib = test::library();
        const MachineProfile& m = lib.machine("rtx-4090");
        const Architecture a = lib.model("llama-3.1-8b").arch;
        const double hf = estimate_speed(a, lora(true), m, lib.framework("hf-transformers")).tokens_per_s;
        const double un = estimate_speed(a, lora(true), m, lib.framework("unsloth")).tokens_per_s;
        QVERIFY2(std::fabs(un / hf - 2.0) < 0.15, qPrintable(QString::number(un / hf)));   // the factor, less loss differences
    }

    // 16-bit products on a GPU count against the measured matmul rate where the profile has one,
    // else against 0.80 of the datasheet peak (the median measured/datasheet of the bundled GPUs).
    void matmulsRunAtTheMeasuredRate() {
        const auto& lib = test::library();
        const Architecture a = lib.model("llama-3.1-8b").arch;
        MachineProfile m = lib.machine("a100-80gb");
        QCOMPARE(m.tflops_matmul_measured, 264.5);
        const FrameworkProfile& f = lib.framework_for(m);
        const StepTime measured = training_step(a, lora(true), m, f, speed_factors(m, f));
        QCOMPARE(measured.peak_tflops, 264.5);
        m.tflops_matmul_measured = 0;
        const StepTime datasheet = training_step(a, lora(true), m, f, speed_factors(m, f));
        QVERIFY(std::fabs(datasheet.peak_tflops - 0.80 * 312) < 1e-9);
        // The matmul part is compute-bound here: its time follows the rate.
        QVERIFY(std::fabs(datasheet.matmul_s / measured.matmul_s - 264.5 / (0.80 * 312)) < 1e-9);
        // fp32 keeps the datasheet's fp32 rate (no measured figure for it).
        TrainingSetup fp32 = lora(true);
        fp32.precision = Precision::Fp32;
        QCOMPARE(training_step(a, fp32, m, f, speed_factors(m, f)).peak_tflops, 19.5);
    }

    // `wingspan calibrate` saves this machine's measured / predicted tokens/s as speed_scale; the
    // planner's steps on that profile are that much faster.
    void aCalibratedSpeedScaleScalesTheStep() {
        const auto& lib = test::library();
        const Architecture a = lib.model("smollm2-135m").arch;
        const MachineProfile m = lib.machine("cpu-laptop-8gb");
        FrameworkProfile f = lib.framework("libtorch-cpu");
        const double before = estimate_speed(a, lora(false), m, f).tokens_per_s;
        f.speed_scale = 1.6;
        QVERIFY(std::fabs(estimate_speed(a, lora(false), m, f).tokens_per_s / before - 1.6) < 1e-9);
    }

    void aMachineWithoutBandwidthStaysFinite() {
        const auto& lib = test::library();
        MachineProfile m = lib.machine("rtx-4090");
        m.bandwidth_gb_s = 0;   // a user profile may leave it out
        const StepTime t = training_step(lib.model("llama-3.2-1b").arch, lora(true), m, lib.framework_for(m),
                                         speed_factors(m, lib.framework_for(m)));
        QVERIFY(std::isfinite(t.total_s()) && t.tokens_per_s() > 0);
    }

    void runTimesCarryTheirLikelyRange() {
        char expected[96];
        std::snprintf(expected, sizeof expected, "2.4 h, likely %.1f–%.1f h", 2.4 * kTimeLow, 2.4 * kTimeHigh);
        QCOMPARE(likely_range(2.4 * 3600), std::string(expected));
        std::snprintf(expected, sizeof expected, "%.0f–%.0f min", 30 * kTimeLow, 30 * kTimeHigh);
        QCOMPARE(likely_span(1800), std::string(expected));
        QCOMPARE(likely_range(INFINITY), std::string("—"));
        QVERIFY(kTimeLow < 1.0 && kTimeHigh > 1.0);
    }

    // llama.cpp's quantized prompt products on a CUDA GPU with int8 tensor cores run in its MMQ
    // kernels at mmq_efficiency × the datasheet's dense int8 rate, in physical batches of 512
    // tokens; attention stays on the 16-bit path. Other engines, unquantized weights and GPUs
    // without an int8 figure keep the 16-bit GEMM rate.
    void llamaCppPromptsRunOnTheInt8TensorCores() {
        const auto& lib = test::library();
        const Architecture a = lib.model("llama-3.1-8b").arch;
        const MachineProfile& m = lib.machine("rtx-3080");
        QCOMPARE(m.tops_int8, 238.0);
        QVERIFY(m.sources.count("tops_int8"));
        const FrameworkProfile& f = lib.framework_for(m);
        TrainingSetup s;
        s.method = Method::Serve;
        s.precision = Precision::Fp16Mixed;
        s.seq_len = 512;
        const SpeedFactors k = serve_factors(m, f, ServeEngine::LlamaCpp);
        QCOMPARE(int(k.engine), int(ServeEngine::LlamaCpp));
        const double bits = 4.9;
        const ServeSpeed v = serving_speed(a, s, m, k, bits);
        // By hand: linear maps + head (8,030,261,248 − the 128,256 × 4,096 input embedding) at
        // 2 FLOPs per weight and token; causal attention 2 × 32 layers × 512 × 4,096 per token.
        const double weights = 8030261248.0 - 128256.0 * 4096.0;
        const double fills = 512.0 / (512.0 + k.rows_half) * 4096.0 / (4096.0 + k.width_half);
        const double linear_s = 2.0 * 512 * weights / (238e12 * k.mmq_efficiency * fills);
        const double attention_s = 2.0 * 32 * 512 * 4096.0 * 512 / (59.5e12 * 0.80 * k.matmul_efficiency * fills);
        const double expected = 512.0 / (linear_s + attention_s + 4.0 * 32 * k.launch_s);
        QVERIFY2(std::fabs(v.prefill_tokens_per_s / expected - 1) < 1e-6, qPrintable(QString::number(v.prefill_tokens_per_s)));
        // The 16-bit path (a generic engine) is slower here: 0.8 × 59.5 TFLOPS × efficiency
        // against 238 TOPS × the MMQ share.
        const ServeSpeed generic = serving_speed(a, s, m, serve_factors(m, f, ServeEngine::Generic), bits);
        QVERIFY(generic.prefill_tokens_per_s < v.prefill_tokens_per_s);
        MachineProfile no_int8 = m;
        no_int8.tops_int8 = 0;
        QVERIFY(serving_speed(a, s, no_int8, k, bits).prefill_tokens_per_s < v.prefill_tokens_per_s);
        // A 4,096-token prompt still multiplies in 512-row batches: the GEMM fill stays that of 512
        // rows, so tokens/s only falls by the longer attention.
        s.seq_len = 4096;
        const ServeSpeed longer = serving_speed(a, s, m, k, bits);
        QVERIFY(longer.prefill_tokens_per_s < v.prefill_tokens_per_s);
        QVERIFY(longer.prefill_tokens_per_s > 0.5 * v.prefill_tokens_per_s);
    }

    // Serving engines decode at their own bandwidth share and dispatch cost (fitted per engine by
    // bench_throughput); a framework id names the engine; a generic engine keeps the class's.
    void servingEnginesCarryTheirOwnDecodeFactors() {
        QCOMPARE(int(serve_engine("llama.cpp")), int(ServeEngine::LlamaCpp));
        QCOMPARE(int(serve_engine("mlx-lm")), int(ServeEngine::Mlx));
        QCOMPARE(int(serve_engine("mlc-llm")), int(ServeEngine::MlcLlm));
        QCOMPARE(int(serve_engine("exllama")), int(ServeEngine::Exllama));
        QCOMPARE(int(serve_engine("hf-transformers")), int(ServeEngine::Generic));
        const auto& lib = test::library();
        const MachineProfile& mac = lib.machine("m4-pro-48gb");
        const FrameworkProfile& f = lib.framework_for(mac);
        const SpeedFactors cls = speed_factors(mac, f), generic = serve_factors(mac, f, ServeEngine::Generic),
                           mlx = serve_factors(mac, f, ServeEngine::Mlx);
        QCOMPARE(generic.bandwidth_efficiency, cls.bandwidth_efficiency);
        QCOMPARE(generic.launch_s, cls.launch_s);
        QVERIFY(mlx.launch_s < cls.launch_s);   // MLX: 18 µs per kernel against llama.cpp Metal's 36
        // Qwen3-0.6B at 8.5 bits: MLX's cheaper dispatch decodes faster than the class's.
        const Architecture q = lib.model("qwen3-0.6b").arch;
        TrainingSetup s;
        s.method = Method::Serve;
        s.seq_len = 128;
        QVERIFY(serving_speed(q, s, mac, mlx, 8.5).decode_tokens_per_s >
                serving_speed(q, s, mac, generic, 8.5).decode_tokens_per_s);
    }

    // FlashAttention-2 reaches a smaller share of Hopper's peak than of an A100's (35 % against
    // up to 73 %: the FA3 and FA2 papers): the H100's attention runs at 0.48 of the class's share.
    void flashAttentionRunsBelowItsShareOnHopper() {
        const auto& lib = test::library();
        const Architecture a = lib.model("llama-3.2-1b").arch;
        MachineProfile h100 = lib.machine("h100");
        QCOMPARE(h100.flash_attention_relative, 0.48);
        QVERIFY(h100.sources.count("flash_attention_relative"));
        QCOMPARE(lib.machine("a100-80gb").flash_attention_relative, 1.0);
        const FrameworkProfile& f = lib.framework_for(h100);
        TrainingSetup s = lora(false);
        s.attention = Attention::Flash;
        const StepTime hopper = training_step(a, s, h100, f, speed_factors(h100, f));
        h100.flash_attention_relative = 1.0;
        const StepTime as_ampere = training_step(a, s, h100, f, speed_factors(h100, f));
        QVERIFY(std::fabs(hopper.attention_s / as_ampere.attention_s - 1.0 / 0.48) < 1e-9);
        QCOMPARE(hopper.matmul_s, as_ampere.matmul_s);
        // A profile's value outside (0, 1.5] is refused.
        nlohmann::json j = machine_profile_to_json(lib.machine("h100"));
        j["flash_attention_relative"] = 0;
        QVERIFY_THROWS_EXCEPTION(ProfileError, parse_machine_profile(j, "bad.json"));
        j["flash_attention_relative"] = 0.48;
        j["tops_int8"] = -1;
        QVERIFY_THROWS_EXCEPTION(ProfileError, parse_machine_profile(j, "bad.json"));
        j["tops_int8"] = 1979;
        QCOMPARE(parse_machine_profile(j, "ok.json").tops_int8, 1979.0);
    }

    void bundledMachinesCarrySourcedSpeedFields() {
        const auto& lib = test::library();
        for (const char* id : {"l40s", "l40", "a40", "rtx-a6000", "rtx-6000-ada", "h100-pcie", "a100-pcie-80gb", "m1-pro-32gb",
                               "m1-max-64gb", "m1-ultra-128gb", "m2-max-96gb", "m2-ultra-192gb", "m3-pro-36gb", "m3-max-64gb",
                               "m4-pro-48gb"}) {
            const MachineProfile& m = lib.machine(id);
            QVERIFY2(m.bandwidth_gb_s > 0 && m.link_gb_s > 0 && m.tflops_bf16 > 0, id);
            for (const char* field : {"bandwidth_gb_s", "link_gb_s", "tflops_bf16", "memory_bytes"})
                QVERIFY2(m.sources.count(field), (std::string(id) + " " + field).c_str());
        }
        // The L40S and the RTX 6000 Ada have twice the L40's tensor rate on the same 864/960 GB/s.
        QVERIFY(lib.machine("l40s").tflops_bf16 > 1.9 * lib.machine("l40").tflops_bf16);
    }
};

QTEST_APPLESS_MAIN(SpeedModelTest)
#include "test_speed_model.moc"
