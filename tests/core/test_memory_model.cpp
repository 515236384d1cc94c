#include <algorithm>
#include <QtTest>

#include "test_support.hpp"
#include "wingspan/nf4.hpp"

using namespace wingspan;

namespace {
std::int64_t term_bytes(const MemoryEstimate& e, Component c, bool include_temporaries = false) {
    std::int64_t b = 0;
    for (const auto& t : e.terms)
        if (t.component == c && (include_temporaries || t.formula.find("temporaries") == std::string::npos) && !t.on_host)
            b += t.bytes;
    return b;
}
const Phase& phase(const MemoryEstimate& e, const std::string& name) {
    for (const auto& p : e.phases)
        if (p.name == name) return p;
    throw std::runtime_error("no phase " + name);
}
bool has_phase(const MemoryEstimate& e, const std::string& name) {
    return std::any_of(e.phases.begin(), e.phases.end(), [&](const Phase& p) { return p.name == name; });
}
std::int64_t in_phase(const MemoryEstimate& e, const std::string& name, Component c) {
    const auto& p = phase(e, name);
    auto it = p.bytes.find(c);
    return it == p.bytes.end() ? 0 : it->second;
}

// One 128-token sequence in fp32 with eager attention and no checkpointing: wingspan-train's smallest runs.
TrainingSetup fp32_eager_128x1(Method method) {
    TrainingSetup s;
    s.method = method;
    s.precision = Precision::Fp32;
    s.attention = Attention::Eager;
    s.seq_len = 128;
    s.micro_batch = 1;
    s.grad_checkpointing = false;
    return s;
}

}  // namespace

class MemoryModelTest : public QObject {
    Q_OBJECT
private slots:
    void fullFineTuneIsSixteenBytesPerParameter() {
        const Architecture a = test::library().model("llama-2-7b").arch;
        TrainingSetup s;
        s.method = Method::Full;
        s.precision = Precision::Bf16Mixed;
        const MemoryEstimate e = estimate_memory(a, s, test::bare_framework("fused"));
        const std::int64_t P = 6'738'415'616;
        QCOMPARE(e.params.trainable, P);
        QCOMPARE(term_bytes(e, Component::TrainableWeights), 2 * P);
        QCOMPARE(term_bytes(e, Component::Gradients), 2 * P);
        QCOMPARE(term_bytes(e, Component::MasterWeights), 4 * P);
        QCOMPARE(term_bytes(e, Component::OptimizerState), 8 * P);
        QCOMPARE(term_bytes(e, Component::FrozenWeights), 0);
    }

    void precisionSchemes() {
        const Architecture a = test::tiny_arch();
        const std::int64_t P = a.parameter_count();
        TrainingSetup s;
        s.method = Method::Full;
        s.precision = Precision::Fp32;
        auto e = estimate_memory(a, s, test::bare_framework());
        QCOMPARE(term_bytes(e, Component::TrainableWeights) + term_bytes(e, Component::Gradients) +
                     term_bytes(e, Component::MasterWeights) + term_bytes(e, Component::OptimizerState),
                 16 * P);
        s.precision = Precision::Bf16;   // pure bf16: moments in bf16, no master copy
        e = estimate_memory(a, s, test::bare_framework());
        QCOMPARE(term_bytes(e, Component::MasterWeights), 0);
        QCOMPARE(term_bytes(e, Component::TrainableWeights) + term_bytes(e, Component::Gradients) +
                     term_bytes(e, Component::OptimizerState),
                 8 * P);
    }

    void loraAdapterCountMatchesTheLesson() {
        const Architecture a = test::library().model("llama-2-7b").arch;
        TrainingSetup s;
        s.method = Method::Lora;
        s.lora_rank = 16;
        s.lora_targets = parse_targets("all");
        const ParameterCounts p = count_parameters(a, s);
        // Per layer: 4 × 16·(4096+4096) + 2 × 16·(4096+11008) + 16·(11008+4096).
        QCOMPARE(p.adapter, qint64(32 * (4 * 131'072 + 2 * 241'664 + 241'664)));
        QCOMPARE(p.adapter, qint64(39'976'960));   // "roughly 20-40M" in the lesson
        s.lora_targets = parse_targets("q,v");
        QCOMPARE(count_parameters(a, s).adapter, qint64(32 * 2 * 131'072));
        // Frozen base at 2 bytes, adapters at 16 bytes each (2 + 2 + 4 master + 8 moments).
        s.lora_targets = parse_targets("all");
        const MemoryEstimate e = estimate_memory(a, s, test::bare_framework("fused"));
        QCOMPARE(term_bytes(e, Component::FrozenWeights), 2 * qint64(6'738'415'616));
        QCOMPARE(term_bytes(e, Component::Adapters) + term_bytes(e, Component::Gradients) +
                     term_bytes(e, Component::MasterWeights) + term_bytes(e, Component::OptimizerState),
                 16 * qint64(39'976'960));
    }

    // LoRA on the LM head (target "head", not in "all"): r·(hidden + vocab) adapter parameters, on
    // the embedding where the head is tied; the branch keeps x·Aᵀ and, with dropout, the dropped
    // input (b·s·h·e) and its mask (b·s·h·1); without dropout the final norm's output instead.
    // Gemma's (1 + w) norms run as plain fp32 ops on wingspan-train (profile model.norm_scales_in_fp32):
    // the final norm's backward is a phase of its own, four fp32 b·s·h tensors beside the end of forward
    // less what the head's and the weight's backward freed; checkpointed Gemma 2 keeps both masks.
    void unfusedNormMomentsAndMasks() {
        const auto& lib = test::library();
        const FrameworkProfile& trainer = lib.framework("libtorch-cpu");
        TrainingSetup s;
        s.method = Method::Lora;
        s.lora_rank = 16;
        s.lora_targets = parse_targets("all");
        s.precision = Precision::Bf16;
        s.attention = Attention::Eager;
        s.seq_len = 256;
        s.micro_batch = 2;
        s.grad_checkpointing = false;
        const auto row = test::row_bytes;
        const Architecture gemma2 = lib.model("gemma-2-2b").arch;
        const std::int64_t bs = 512, h = gemma2.hidden, e = 2;
        MemoryEstimate est = estimate_memory(gemma2, s, trainer);
        // LoRA: the in-place loss keeps the final norm's output (b·s·h·e), which the head's backward frees.
        QCOMPARE(row(est, "held at final_norm_backward beyond the saved tensors"), 4 * bs * h * 4 - bs * h * e);
        QVERIFY(phase(est, "final_norm_backward").total() > 0);
        // A full fine-tune also frees the fp32 normalized input the weight kept, leaving its fp32 gradient.
        s.method = Method::Full;
        est = estimate_memory(gemma2, s, trainer);
        QCOMPARE(row(est, "held at final_norm_backward beyond the saved tensors"), 4 * bs * h * 4 - bs * h * e - bs * h * 4 + h * 4);
        // A fused norm (Llama on the same trainer) has no such moment.
        QVERIFY(!has_phase(estimate_memory(lib.model("llama-3.2-1b").arch, s, trainer), "final_norm_backward"));
        // Checkpointed, eager: the sliding and the global mask, s² each in the compute dtype.
        s.grad_checkpointing = true;
        est = estimate_memory(gemma2, s, trainer);
        QCOMPARE(row(est, "causal mask kept by checkpointed attention"), std::int64_t(256) * 256 * e);
        QCOMPARE(row(est, "the other layer kind's mask (sliding or global)"), std::int64_t(256) * 256 * e);
        QCOMPARE(row(estimate_memory(lib.model("llama-3.2-1b").arch, s, trainer), "the other layer kind's mask (sliding or global)"),
                 std::int64_t(-1));   // (no row)
        // Adapters on the MLP only: the first layer keeps neither the attention output's norm (Gemma 2's
        // own) nor anything before it; one output norm less than a layer's full set.
        s.grad_checkpointing = false;
        s.method = Method::Lora;
        s.lora_targets = parse_targets("gate,up");
        est = estimate_memory(gemma2, s, trainer);
        Architecture two_norms = gemma2;
        two_norms.norms_per_layer = 2;
        const std::int64_t per_output_norm =
            row(est, "sublayer output norms' saved tensors") / (std::int64_t(gemma2.layers) * (gemma2.norms_per_layer - 2));
        QVERIFY(per_output_norm > bs * h * 4);   // its fp32 input at least
        QCOMPARE(row(est, "first adapted layer before its first adapter") -
                     row(estimate_memory(two_norms, s, trainer), "first adapted layer before its first adapter"),
                 -per_output_norm);
    }

    // QLoRA with adapters on q and v only keeps little: at a short sequence the activation peak is the
    // last layer's 4-bit down projection in forward (wingspan-train, measured to the byte by the
    // accuracy point "default qlora 128x1 targets q,v").
    void qloraPeaksAtTheLastDownProjectionInForward() {
        const auto& lib = test::library();
        const Architecture a = test::tiny_arch();   // h 64, intermediate 128
        TrainingSetup s = fp32_eager_128x1(Method::Qlora);
        s.quantization = Quantization::Nf4;
        s.lora_rank = 8;
        s.lora_targets = parse_targets("q,v");
        const MemoryEstimate est = estimate_memory(a, s, lib.framework("libtorch-cpu"));
        const std::int64_t down = test::row_bytes(est, "the last layer's down projection in forward");
        const std::int64_t final_norm = test::row_bytes(est, "final norm's saved tensors");
        const std::int64_t bs = 128, h = 64, i = 128, e = 4;
        // The product it multiplies (no 4-bit linear keeps it), the dequantized weight, its output and
        // the additive mask; the final norm's saved tensors not yet made.
        QCOMPARE(down, bs * i * e + h * i * e + bs * h * e + 128 * 128 * e - final_norm);
    }

    // A small full fine-tune peaks at the first layer's q projection backward (profile
    // model.qkv_backward_moment; wingspan-train, measured to 4 B by the accuracy points "135m full
    // 128x1" and "135m full 128x1 ckpt"): every weight gradient but the embedding's and the first input
    // norm's, beside the input norm's saved input, rstd and output, the residual gradient, q's input
    // gradient and two gradients of the norm output, with the token ids and labels.
    void fullFineTunePeaksAtTheFirstQkvBackward() {
        const auto& lib = test::library();
        const Architecture a = lib.model("smollm2-135m").arch;   // h 576, q_dim 576, 30 layers
        TrainingSetup s = fp32_eager_128x1(Method::Full);
        const MemoryEstimate est = estimate_memory(a, s, lib.framework("libtorch-cpu"));
        const std::int64_t bs = 128, h = 576, e = 4;
        QCOMPARE(est.peak_phase, std::string("backward_end_qkv"));
        const std::int64_t norm_saved = 2 * bs * h * e + bs * 4;
        QCOMPARE(test::component_at(est, "backward_end_qkv", Component::Activations), norm_saved + bs * 16 + 4 * bs * h * e);
        // The gradients: all but the first input norm's weight (h) and the tied embedding's (counted with the head).
        QCOMPARE(test::component_at(est, "backward_end_qkv", Component::Gradients),
                 test::component_at(est, "optimizer_step", Component::Gradients) - h * e);
        // Checkpointed: the layer's kept input, its output's gradient, each layer's checkpoint state,
        // the rotary tables and the mask too (the recomputed layer's own input beside the kept one).
        s.grad_checkpointing = true;
        const MemoryEstimate ckpt = estimate_memory(a, s, lib.framework("libtorch-cpu"));
        QCOMPARE(ckpt.peak_phase, std::string("backward_end_qkv"));
        const std::int64_t state = lib.framework("libtorch-cpu").checkpoint_state_bytes;
        QCOMPARE(test::component_at(ckpt, "backward_end_qkv", Component::Activations),
                 norm_saved + bs * 16 + 2 * 128 * 64 * e + 128 * 128 * e + 31 * state + 6 * bs * h * e);
        // Not for LoRA: the frozen q, k and v make no weight gradient.
        s.method = Method::Lora;
        QCOMPARE(test::component_at(estimate_memory(a, s, lib.framework("libtorch-cpu")), "backward_end_qkv", Component::Activations), -1);
    }

    void loraOnTheHead() {
        QVERIFY(!parse_targets("all").count(LinearRole::Head));
        QCOMPARE(parse_targets("all,lm_head").size(), std::size_t(8));
        QVERIFY(parse_targets("output").count(LinearRole::Head));
        const Architecture untied = test::library().model("llama-2-7b").arch;
        const Architecture tied = test::library().model("llama-3.2-1b").arch;
        QVERIFY(tied.tied_embeddings && !untied.tied_embeddings);
        TrainingSetup s;
        s.method = Method::Lora;
        s.lora_rank = 16;
        for (const Architecture* a : {&untied, &tied}) {
            s.lora_targets = parse_targets("q,v");
            const std::int64_t layers_only = count_parameters(*a, s).adapter;
            s.lora_targets = parse_targets("q,v,head");
            QCOMPARE(count_parameters(*a, s).adapter - layers_only, 16 * (a->hidden + a->vocab));
        }
        // llama-2-7b: h 4096, vocab 32,000; bf16, batch 2 × 512 tokens, rank 16.
        s.precision = Precision::Bf16;
        s.seq_len = 512;
        s.micro_batch = 2;
        s.grad_checkpointing = false;
        const std::int64_t bs = 1024, h = 4096, r = 16, e = 2;
        const auto row = test::row_bytes;
        s.lora_dropout = 0.1;
        const MemoryEstimate dropped = estimate_memory(untied, s, test::bare_framework());
        QCOMPARE(row(dropped, "the head adapter's saved tensors"), bs * (h * (e + 1) + r * e));
        s.lora_dropout = 0;
        const MemoryEstimate plain = estimate_memory(untied, s, test::bare_framework());
        QCOMPARE(row(plain, "the head adapter's saved tensors"), bs * r * e);
        QCOMPARE(row(plain, "final norm's saved tensors") - row(dropped, "final norm's saved tensors"), bs * h * e);
        s.lora_targets = parse_targets("q,v");
        QVERIFY(row(estimate_memory(untied, s, test::bare_framework()), "the head adapter's saved tensors") <= 0);   // no row
        // DoRA composes W + s·B·A of the largest adapted linear in a layer's backward: a layer's, not
        // the head's (vocab × hidden), whose compose that moment never holds.
        s.dora = true;
        auto layer_backward = [&](const std::string& targets) {
            s.lora_targets = parse_targets(targets);
            for (const auto& p : estimate_memory(untied, s, test::bare_framework()).phases)
                if (p.name == "backward") return p.bytes.at(Component::Activations);
            return std::int64_t(-1);
        };
        const std::int64_t without = layer_backward("q,v"), with_head = layer_backward("q,v,head");
        QVERIFY(without > 0);
        // (The head's adapter adds a few MB: its saved tensors. Composing the head there would add
        // 4·(32,000 − 11,008)·4,096 B = 344 MB.)
        QVERIFY2(with_head - without < 16 * 1024 * 1024, qPrintable(QString::number(with_head - without)));
    }

    void qloraNf4BytesAreExact() {
        const Architecture a = test::library().model("llama-2-7b").arch;
        TrainingSetup s;
        s.method = Method::Qlora;
        s.quantization = Quantization::Nf4DoubleQuant;
        const MemoryEstimate e = estimate_memory(a, s, test::bare_framework());
        const std::int64_t linear = 6'476'005'376;   // every q,k,v,o,gate,up,down weight
        QCOMPARE(e.params.quantized, linear);
        // Packed codes plus the 16-bit embeddings, head and norms.
        QCOMPARE(term_bytes(e, Component::FrozenWeights), linear / 2 + 2 * (6'738'415'616 - linear));
        // q: 262,144 blocks → 262,144 + 4·1,024 + 4; gate: 704,512 blocks → 704,512 + 4·2,752 + 4.
        QCOMPARE(term_bytes(e, Component::QuantConstants), qint64(32 * (4 * 266'244 + 3 * 715'524)));
        s.quantization = Quantization::Nf4;
        const MemoryEstimate plain = estimate_memory(a, s, test::bare_framework());
        QCOMPARE(term_bytes(plain, Component::QuantConstants), linear / 64 * 4);
        s.quantization = Quantization::Int8;
        const MemoryEstimate int8 = estimate_memory(a, s, test::bare_framework());
        QCOMPARE(term_bytes(int8, Component::QuantConstants), qint64(32 * 4 * (4 * 4096 + 2 * 11008 + 4096)));
    }

    void nf4LayoutEdgeCases() {
        static_assert(nf4_layout(1, false).packed_bytes == 1);
        static_assert(nf4_layout(65, false).blocks == 2);
        static_assert(nf4_layout(65, false).constant_bytes == 8);
        static_assert(nf4_layout(64 * 257, true).constant_bytes == 257 + 2 * 4 + 4);
        QCOMPARE(kNf4Levels.front(), -1.0f);
        QCOMPARE(kNf4Levels.back(), 1.0f);
        QCOMPARE(kNf4Levels[7], 0.0f);
    }

    void activationsByHand() {
        // hidden 64, 2 layers, 4 heads (head_dim 16), 2 kv heads, intermediate 128, vocab 100;
        // batch 2 × seq 8 in fp32, eager attention, no checkpointing.
        TrainingSetup s;
        s.method = Method::Full;
        s.precision = Precision::Fp32;
        s.attention = Attention::Eager;
        s.grad_checkpointing = false;
        s.micro_batch = 2;
        s.seq_len = 8;
        const MemoryEstimate e = estimate_memory(test::tiny_arch(), s, test::bare_framework());
        // input, output, rstd, and (the norm weight trains) the normalized input it multiplies
        const std::int64_t norm = 3 * 16 * 64 * 4 + 16 * 4;
        const std::int64_t attention = 4 * 16 * 64 * 4 + 2 * 4 * 8 * 8 * 4;   // q,k,v,out + softmax
        const std::int64_t mlp = 4 * 16 * 128 * 4;                     // gate, up, silu, product
        const std::int64_t layer = 2 * norm + attention + mlp;
        QCOMPARE(layer, qint64(75'904));
        // Beside the layers: the final norm, int64 ids and labels, rotary cos and sin.
        const std::int64_t inputs = 16 * 16 + 2 * 16 * 16 * 4;
        QCOMPARE(in_phase(e, "forward_end", Component::Activations), 2 * layer + norm + inputs);
        // Logits: fp32 logits + log-softmax after forward, two fp32 gradients more in backward.
        QCOMPARE(in_phase(e, "forward_end", Component::LogitsLoss), qint64(16 * 100 * 8));
        QCOMPARE(in_phase(e, "loss_backward", Component::LogitsLoss), qint64(16 * 100 * 16));
    }

    void checkpointingKeepsOnlyLayerInputs() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        TrainingSetup s;
        s.seq_len = 2048;
        s.grad_checkpointing = false;
        const auto off = estimate_memory(a, s, test::bare_framework());
        s.grad_checkpointing = true;
        const auto on = estimate_memory(a, s, test::bare_framework());
        const std::int64_t kept = 32LL * 2048 * 4096 * 2;
        QVERIFY(in_phase(on, "forward_end", Component::Activations) >= kept);
        QVERIFY(in_phase(on, "forward_end", Component::Activations) < kept + 2048LL * 4096 * 8);
        QVERIFY(in_phase(off, "forward_end", Component::Activations) > 10 * kept);
    }

    void batchTouchesOnlyActivationsAndLogits() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        TrainingSetup s;
        const auto one = estimate_memory(a, s, test::bare_framework());
        s.micro_batch = 4;
        const auto four = estimate_memory(a, s, test::bare_framework());
        for (Component c : {Component::FrozenWeights, Component::Adapters, Component::MasterWeights,
                            Component::OptimizerState, Component::Gradients})
            QCOMPARE(term_bytes(four, c), term_bytes(one, c));
        QCOMPARE(in_phase(four, "forward_end", Component::LogitsLoss), 4 * in_phase(one, "forward_end", Component::LogitsLoss));
        QCOMPARE(in_phase(four, "forward_end", Component::Activations), 4 * in_phase(one, "forward_end", Component::Activations));
    }

    void peakIsTheLargestPhaseNotASum() {
        const Architecture a = test::library().model("llama-2-7b").arch;
        TrainingSetup s;
        s.method = Method::Full;
        const MemoryEstimate e = estimate_memory(a, s, test::bare_framework());
        std::int64_t largest = 0, sum_of_maxima = 0;
        for (const auto& p : e.phases) largest = std::max(largest, p.total());
        for (const auto& t : e.terms) sum_of_maxima += t.bytes;
        QCOMPARE(e.peak_allocated_bytes, largest);
        QVERIFY(e.peak_allocated_bytes < sum_of_maxima);
        std::int64_t components = 0;
        for (const auto& [c, b] : e.components) components += b;
        QCOMPARE(components, e.total_bytes);
        // Full fine-tune: the optimizer step (all gradients + states) is the peak.
        QCOMPARE(QString::fromStdString(e.peak_phase), QString("optimizer_step"));
    }

    void gradientAccumulationCarriesGradients() {
        const Architecture a = test::tiny_arch();
        TrainingSetup s;
        s.method = Method::Full;
        const auto once = estimate_memory(a, s, test::bare_framework());
        QCOMPARE(in_phase(once, "forward_end", Component::Gradients), 0);
        s.grad_accum = 8;
        const auto accum = estimate_memory(a, s, test::bare_framework());
        QCOMPARE(in_phase(accum, "forward_end", Component::Gradients), term_bytes(accum, Component::Gradients));
    }

    void frameworkOverheadMakesTotal() {
        FrameworkProfile f = test::bare_framework();
        f.context_bytes = 500'000'000;
        f.workspace_bytes = 64'000'000;
        f.allocator_slack = 0.10;
        TrainingSetup s;
        const auto e = estimate_memory(test::library().model("llama-3.1-8b").arch, s, f);
        QCOMPARE(e.framework_overhead_bytes, 564'000'000 + std::llround(0.10 * double(e.peak_allocated_bytes)));
        QCOMPARE(e.total_bytes, e.peak_allocated_bytes + e.framework_overhead_bytes);

        // A slack on the transient bytes: only the activations and logits at the peak phase.
        f.allocator_slack_of = "transient";
        const auto t = estimate_memory(test::library().model("llama-3.1-8b").arch, s, f);
        const std::int64_t transient = t.components.at(Component::Activations) + t.components.at(Component::LogitsLoss);
        QVERIFY(transient > 0 && transient < t.peak_allocated_bytes / 2);
        QCOMPARE(t.peak_allocated_bytes, e.peak_allocated_bytes);
        QCOMPARE(t.framework_overhead_bytes, 564'000'000 + std::llround(0.10 * double(transient)));
        QVERIFY(t.term(Component::FrameworkOverhead)->formula.find("activations and logits") != std::string::npos);
    }

    void optimizers() {
        const Architecture a = test::tiny_arch();
        TrainingSetup s;
        s.method = Method::Full;
        s.precision = Precision::Fp32;
        std::int64_t expected8 = 0, expectedFactored = 0;
        for (const auto& g : a.tensor_groups()) {
            const std::int64_t n = g.elements();
            expected8 += g.count * (n < 4096 ? 8 * n : 2 * n + 8 * ((n + 2047) / 2048));
            expectedFactored += g.count * (g.cols > 1 ? 4 * (g.rows + g.cols) : 4 * n);
        }
        s.optimizer = Optimizer::AdamW8bit;
        QCOMPARE(term_bytes(estimate_memory(a, s, test::bare_framework()), Component::OptimizerState), expected8);
        s.optimizer = Optimizer::Sgd;
        QCOMPARE(term_bytes(estimate_memory(a, s, test::bare_framework()), Component::OptimizerState), 4 * a.parameter_count());
        s.optimizer = Optimizer::Adafactor;
        QCOMPARE(term_bytes(estimate_memory(a, s, test::bare_framework()), Component::OptimizerState), expectedFactored);
    }

    void shardingDividesState() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        const std::int64_t P = a.parameter_count();
        TrainingSetup s;
        s.method = Method::Full;
        s.devices = 4;
        s.sharding = Sharding::Ddp;
        auto ddp = estimate_memory(a, s, test::bare_framework());
        QCOMPARE(term_bytes(ddp, Component::Gradients), 2 * 2 * P);   // grads + all-reduce buckets
        // The buckets are allocated once and held: in forward already, before any gradient.
        QCOMPARE(in_phase(ddp, "forward_end", Component::Gradients), 2 * P);
        QCOMPARE(in_phase(ddp, "optimizer_step", Component::Gradients), 2 * 2 * P);
        QCOMPARE(term_bytes(ddp, Component::OptimizerState), 8 * P);
        s.sharding = Sharding::Zero1;
        auto z1 = estimate_memory(a, s, test::bare_framework());
        QCOMPARE(term_bytes(z1, Component::OptimizerState), 8 * P / 4);
        QCOMPARE(term_bytes(z1, Component::MasterWeights), 4 * P / 4);
        QCOMPARE(term_bytes(z1, Component::Gradients), 2 * P);
        s.sharding = Sharding::Zero2;
        // The shard, the reduce bucket and one whole gradient in flight (the untied head's).
        QCOMPARE(term_bytes(estimate_memory(a, s, test::bare_framework()), Component::Gradients),
                 2 * P / 4 + kGradientBucketBytes + 2 * a.vocab * a.hidden);
        s.sharding = Sharding::Fsdp;
        auto fsdp = estimate_memory(a, s, test::bare_framework());
        QCOMPARE(term_bytes(fsdp, Component::TrainableWeights), 2 * P / 4);
        s.offload = true;
        auto off = estimate_memory(a, s, test::bare_framework());
        QCOMPARE(off.host_bytes, 4 * P + 8 * P + 4 * P);
        QCOMPARE(in_phase(off, "optimizer_step", Component::OptimizerState), 0);
    }

    // FSDP2 with a tied embedding (one root group: embedding = head, final norm): from the head's
    // backward to the root's post-backward the group is unsharded in the compute dtype and the head's
    // gradient waits for the embedding's, on one GPU as on many; not before the loss's backward (a loss
    // outside the model runs first), not for an untied model, whose head and embedding are groups of
    // their own.
    void fsdpRootGroupIsUnshardedThroughBackward() {
        Architecture tied = test::tiny_arch();   // vocab 100 × hidden 64
        tied.tied_embeddings = true;
        TrainingSetup s;
        s.method = Method::Full;
        s.precision = Precision::Bf16Mixed;
        s.seq_len = 64;
        const auto plain = estimate_memory(tied, s, test::bare_framework());
        s.sharding = Sharding::Fsdp;
        const auto fsdp = estimate_memory(tied, s, test::bare_framework());
        const std::int64_t V = tied.vocab, h = tied.hidden;
        for (const char* phase : {"backward", "backward_end"}) {
            QCOMPARE(in_phase(fsdp, phase, Component::TrainableWeights) - in_phase(plain, phase, Component::TrainableWeights),
                     (V * h + h) * 2);
            QCOMPARE(in_phase(fsdp, phase, Component::Gradients) - in_phase(plain, phase, Component::Gradients), V * h * 2);
        }
        for (const char* phase : {"forward_end", "loss_backward", "optimizer_step"})
            QCOMPARE(in_phase(fsdp, phase, Component::TrainableWeights), in_phase(plain, phase, Component::TrainableWeights));
        const Architecture untied = test::tiny_arch();
        s.sharding = Sharding::None;
        const auto untied_plain = estimate_memory(untied, s, test::bare_framework());
        s.sharding = Sharding::Fsdp;
        QCOMPARE(estimate_memory(untied, s, test::bare_framework()).peak_allocated_bytes, untied_plain.peak_allocated_bytes);
    }

    // After the step ZeRO-1/-2 broadcast each device's updated range of the parameters; where the
    // collectives take no bf16 (profile bf16_collectives_in_fp32) the bf16 pieces travel through one
    // fp32 buffer the size of the largest tensor (the tiny model's MLP matrices, 128 × 64): a phase
    // after the step holds it beside the state, with ZeRO-1's gradients already let go. fp32
    // parameters travel as they are.
    void zeroBroadcastsBf16ParametersThroughAnFp32Piece() {
        const Architecture tiny = test::tiny_arch();
        TrainingSetup s;
        s.method = Method::Full;
        s.precision = Precision::Bf16Mixed;
        s.devices = 2;
        FrameworkProfile gloo = test::bare_framework();
        gloo.bf16_collectives_in_fp32 = true;
        for (Sharding sharding : {Sharding::Zero1, Sharding::Zero2}) {
            s.sharding = sharding;
            s.precision = Precision::Bf16Mixed;
            const auto est = estimate_memory(tiny, s, gloo);
            QCOMPARE(in_phase(est, "parameter_broadcast", Component::OptimizerState) -
                         in_phase(est, "forward_end", Component::OptimizerState),
                     std::int64_t(128 * 64 * 4));
            QCOMPARE(in_phase(est, "parameter_broadcast", Component::Gradients),
                     sharding == Sharding::Zero1 ? in_phase(est, "forward_end", Component::Gradients)
                                                 : in_phase(est, "optimizer_step", Component::Gradients));
            QVERIFY(!has_phase(estimate_memory(tiny, s, test::bare_framework()), "parameter_broadcast"));
            s.precision = Precision::Fp32;
            QVERIFY(!has_phase(estimate_memory(tiny, s, gloo), "parameter_broadcast"));
        }
        s.sharding = Sharding::Ddp;
        s.precision = Precision::Bf16Mixed;
        QVERIFY(!has_phase(estimate_memory(tiny, s, gloo), "parameter_broadcast"));
    }

    // ZeRO-2 per device: its shard of the gradients, the reduce bucket (held throughout) and,
    // in backward, the whole gradient being copied into the bucket: the largest one, or with a
    // tied embedding that trains, its gradient (held from the head to the embedding) plus the
    // largest other.
    void zero2GradientsAreShardBucketAndWholeGradientInFlight() {
        const Architecture tiny = test::tiny_arch();   // untied, vocab 100 × hidden 64
        TrainingSetup s;
        s.method = Method::Full;
        s.precision = Precision::Fp32;
        s.devices = 2;
        s.sharding = Sharding::Zero2;
        const auto fw = test::bare_framework();
        const std::int64_t P = tiny.parameter_count(), G = 4 * P;
        QVERIFY(G < kGradientBucketBytes);   // every gradient fits in one bucket: the bucket is all of them
        const std::int64_t largest = 4 * std::max(tiny.vocab * tiny.hidden, tiny.intermediate * tiny.hidden);
        auto e = estimate_memory(tiny, s, fw);
        QCOMPARE(e.component_maxima().at(Component::Gradients), G / 2 + G + largest);
        QCOMPARE(in_phase(e, "forward_end", Component::Gradients), G / 2 + G);      // shard + bucket
        QCOMPARE(in_phase(e, "optimizer_step", Component::Gradients), G / 2 + G);
        // Four devices: the shard halves again, the bucket and the gradient in flight do not.
        s.devices = 4;
        QCOMPARE(estimate_memory(tiny, s, fw).component_maxima().at(Component::Gradients), G / 4 + G + largest);

        // A model whose gradients exceed the bucket: the bucket is kGradientBucketBytes.
        const Architecture big = test::library().model("qwen2.5-0.5b").arch;   // tied embeddings
        QVERIFY(big.tied_embeddings);
        s.devices = 2;
        FrameworkProfile in_place = fw;
        in_place.tied_grad_in_place = true;
        const std::int64_t Pb = big.parameter_count(), Gb = 4 * Pb;
        const std::int64_t embed = 4 * big.vocab * big.hidden, mlp = 4 * big.intermediate * big.hidden;
        QVERIFY(embed > mlp);
        QCOMPARE(estimate_memory(big, s, in_place).component_maxima().at(Component::Gradients),
                 Gb / 2 + kGradientBucketBytes + embed + mlp);
        // Without the in-place tied gradient the embedding's is just the largest one.
        QCOMPARE(estimate_memory(big, s, fw).component_maxima().at(Component::Gradients),
                 Gb / 2 + kGradientBucketBytes + embed);

        // ZeRO-1 has no reduce bucket (it all-reduces in place), nor has one device.
        auto zero2_terms = [](const MemoryEstimate& e) {
            int n = 0;
            for (const auto& t : e.terms) n += t.formula.rfind("ZeRO-2", 0) == 0;
            return n;
        };
        s.sharding = Sharding::Zero1;
        QCOMPARE(zero2_terms(estimate_memory(big, s, in_place)), 0);
        QCOMPARE(estimate_memory(big, s, in_place).component_maxima().at(Component::Gradients), Gb);
        s.sharding = Sharding::Zero2;
        QCOMPARE(zero2_terms(estimate_memory(big, s, in_place)), 2);
        s.devices = 1;
        QCOMPARE(zero2_terms(estimate_memory(big, s, in_place)), 0);
    }

    void servingKvCache() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        TrainingSetup s;
        s.method = Method::Serve;
        s.seq_len = 8192;
        s.serve_batch = 1;
        const auto e = estimate_memory(a, s, test::bare_framework());
        QCOMPARE(term_bytes(e, Component::KvCache), qint64(1) << 30);   // 2·32·1024·8192·2 B
        QCOMPARE(term_bytes(e, Component::FrozenWeights), 2 * a.parameter_count());
        QCOMPARE(term_bytes(e, Component::Gradients), 0);
        s.serve_batch = 4;
        QCOMPARE(term_bytes(estimate_memory(a, s, test::bare_framework()), Component::KvCache), qint64(4) << 30);
    }

    void everyTermExplainsItself() {
        TrainingSetup s;
        s.method = Method::Qlora;
        const auto e = estimate_memory(test::library().model("llama-3.1-8b").arch, s, test::library().framework("pytorch-cuda"));
        for (const auto& t : e.terms) {
            QVERIFY(!t.formula.empty());
            QVERIFY(!t.inputs.empty());
        }
        QVERIFY(e.explain(Component::QuantConstants).find("double quant") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(MemoryModelTest)
#include "test_memory_model.moc"
