// The memory techniques of issue 25 (optimizer in backward, paged optimizers, activation offload,
// compile) as changes of where a tensor lives and when it dies, with the bytes they move.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "wingspan/errors.hpp"

using namespace wingspan;

namespace {
std::int64_t in_phase(const MemoryEstimate& e, const std::string& name, Component c) {
    for (const auto& p : e.phases)
        if (p.name == name) {
            auto it = p.bytes.find(c);
            return it == p.bytes.end() ? 0 : it->second;
        }
    throw std::runtime_error("no phase " + name);
}
bool has_phase(const MemoryEstimate& e, const std::string& name) {
    for (const auto& p : e.phases)
        if (p.name == name) return true;
    return false;
}
std::int64_t max_over_phases(const MemoryEstimate& e, Component c) {
    std::int64_t m = 0;
    for (const auto& p : e.phases)
        if (auto it = p.bytes.find(c); it != p.bytes.end()) m = std::max(m, it->second);
    return m;
}

// The acceptance setup: Llama 3.1 8B, every parameter trained, on torchtune.
TrainingSetup eight_b_full() {
    TrainingSetup s{.method = Method::Full, .precision = Precision::Bf16, .optimizer = Optimizer::PagedAdamW8bit,
                    .seq_len = 2048, .micro_batch = 2, .grad_checkpointing = true, .loss_chunk_tokens = 512};
    s.optimizer_in_backward = true;
    return s;
}
constexpr std::int64_t kLlama8bParams = 8'030'261'248;
constexpr std::int64_t kLlama8bEmbedding = 128'256LL * 4'096;   // the largest tensor (embedding, head)
constexpr std::int64_t kLlama8bNormElements = 65LL * 4'096;      // 2 per layer + the final norm
}  // namespace

class TechniquesTest : public QObject {
    Q_OBJECT
private slots:
    void optimizerInBackwardKeepsOneGradient() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        const FrameworkProfile& tt = test::library().framework("torchtune");
        TrainingSetup s = eight_b_full();
        s.optimizer = Optimizer::AdamW;
        const MemoryEstimate in_bwd = estimate_memory(a, s, tt);
        s.optimizer_in_backward = false;
        const MemoryEstimate after = estimate_memory(a, s, tt);
        // Without it every bf16 gradient is alive at the step; with it, one at a time: the
        // largest (the untied embedding's or head's, 128,256 × 4,096 × 2 B).
        QCOMPARE(max_over_phases(after, Component::Gradients), 2 * kLlama8bParams);
        QCOMPARE(max_over_phases(in_bwd, Component::Gradients), 2 * kLlama8bEmbedding);
        QVERIFY(!has_phase(in_bwd, "optimizer_step"));
        QVERIFY(has_phase(after, "optimizer_step"));
        QCOMPARE(in_phase(in_bwd, "forward_end", Component::Gradients), 0);
        // The moments stay on the device either way (torch AdamW, bf16 moments: 4 B per param).
        QCOMPARE(in_phase(in_bwd, "forward_end", Component::OptimizerState), 4 * kLlama8bParams);
    }

    void optimizerInBackwardRefusesAccumulation() {
        const Architecture a = test::tiny_arch();
        TrainingSetup s;
        s.method = Method::Full;
        s.optimizer_in_backward = true;
        s.grad_accum = 4;
        QVERIFY_THROWS_EXCEPTION(InputError, s.validate(a));
        s.grad_accum = 1;
        s.validate(a);
        s.devices = 2;
        s.sharding = Sharding::Zero2;
        QVERIFY_THROWS_EXCEPTION(InputError, s.validate(a));
    }

    void pagedStateLivesOnTheHost() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        const FrameworkProfile& tt = test::library().framework("torchtune");
        const MemoryEstimate e = estimate_memory(a, eight_b_full(), tt);
        // Every tensor of 1e5 elements or more pages its two uint8 states; the norms (4,096
        // elements: 8-bit, but under 1e5) keep their 2 B per element on the device, and every
        // tensor keeps its fp32 absmax there (two per 2,048 values).
        QCOMPARE(e.host_bytes, 2 * (kLlama8bParams - kLlama8bNormElements));
        std::int64_t absmax = 0;
        for (const auto& g : a.tensor_groups())
            if (g.elements() >= 4096) absmax += g.count * 2 * 4 * ((g.elements() + 2047) / 2048);
        QCOMPARE(in_phase(e, "forward_end", Component::OptimizerState), absmax + 2 * kLlama8bNormElements);
        // In backward the tensor being stepped has its state paged back: the largest, 2 B per element.
        QCOMPARE(in_phase(e, "backward", Component::OptimizerState) - in_phase(e, "forward_end", Component::OptimizerState),
                 2 * kLlama8bEmbedding);
        // Unpaged 8-bit AdamW keeps all of it on the device.
        TrainingSetup plain = eight_b_full();
        plain.optimizer = Optimizer::AdamW8bit;
        const MemoryEstimate p = estimate_memory(a, plain, tt);
        QCOMPARE(p.host_bytes, 0);
        QCOMPARE(in_phase(p, "forward_end", Component::OptimizerState),
                 in_phase(e, "forward_end", Component::OptimizerState) + e.host_bytes);
    }

    void pagedThirtyTwoBitKeepsFp32Moments() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        TrainingSetup s = eight_b_full();
        s.optimizer = Optimizer::PagedAdamW;
        const MemoryEstimate e = estimate_memory(a, s, test::library().framework("torchtune"));
        QCOMPARE(e.host_bytes, 8 * (kLlama8bParams - kLlama8bNormElements));
        QCOMPARE(parse_optimizer("paged-adamw"), Optimizer::PagedAdamW);
    }

    void acceptancePlanFitsA4090() {
        const ProfileLibrary& lib = test::library();
        const MachineVerdict v = evaluate(lib.model("llama-3.1-8b").arch, eight_b_full(), lib.machine("rtx-4090"),
                                          lib.framework("torchtune"));
        QVERIFY2(v.fit != Fit::No, ("needs " + std::to_string(v.needed_bytes)).c_str());
        QVERIFY(v.host_fits);
        // The plain full fine-tune (no technique) does not.
        TrainingSetup plain = eight_b_full();
        plain.optimizer = Optimizer::AdamW;
        plain.optimizer_in_backward = false;
        QCOMPARE(evaluate(lib.model("llama-3.1-8b").arch, plain, lib.machine("rtx-4090"), lib.framework("torchtune")).fit,
                 Fit::No);
    }

    void activationOffloadMovesCheckpointsToTheHost() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        const FrameworkProfile& tt = test::library().framework("torchtune");
        TrainingSetup s = eight_b_full();
        const MemoryEstimate kept = estimate_memory(a, s, tt);
        s.activation_offload = true;
        const MemoryEstimate offloaded = estimate_memory(a, s, tt);
        const std::int64_t layer_input = 2LL * 2048 * 4096 * 2;   // b·s·h·2 B
        QCOMPARE(offloaded.host_bytes - kept.host_bytes, 32 * layer_input);
        // One layer input stays on the device, the other 31 leave it.
        QCOMPARE(in_phase(kept, "forward_end", Component::Activations) -
                     in_phase(offloaded, "forward_end", Component::Activations),
                 31 * layer_input);
        s.grad_checkpointing = false;
        QVERIFY_THROWS_EXCEPTION(InputError, s.validate(a));
    }

    // Unsloth's offloaded checkpoints keep the first layer's input on the device too: the embeddings'
    // output is a leaf that requires grad, and autograd holds it for the step (a recorded Unsloth-shaped
    // step showed it: bench/allocator/record_trace.py --mode unsloth). Key off: one input on the device.
    void offloadKeepsTheFirstInputWhereAutogradHoldsIt() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        const FrameworkProfile& unsloth = test::library().framework("unsloth");
        QVERIFY(unsloth.checkpoint_offload);
        QVERIFY(unsloth.traits.checkpointing.offload_keeps_first_input);
        TrainingSetup s;
        s.method = Method::Qlora;
        s.quantization = Quantization::Nf4DoubleQuant;
        s.seq_len = 16384;
        s.attention = Attention::Flash;
        s.grad_checkpointing = true;
        FrameworkProfile one_input = unsloth;
        one_input.traits.checkpointing.offload_keeps_first_input = false;
        const MemoryEstimate held = estimate_memory(a, s, unsloth);
        const MemoryEstimate plain = estimate_memory(a, s, one_input);
        const std::int64_t layer_input = 16384LL * 4096 * 2;   // b·s·h, the bf16 residual stream
        QCOMPARE(held.peak_allocated_bytes - plain.peak_allocated_bytes, layer_input);
        QCOMPARE(in_phase(held, "forward_end", Component::Activations) -
                     in_phase(plain, "forward_end", Component::Activations),
                 layer_input);
        QCOMPARE(held.host_bytes, plain.host_bytes);   // the host copies are the same 32
        QCOMPARE(held.host_bytes, 32 * layer_input);
        // The first layer's backward holds it as well as the top layer's.
        QCOMPARE(in_phase(held, "backward_end", Component::Activations) -
                     in_phase(plain, "backward_end", Component::Activations),
                 layer_input);
        // A trained embedding's output is not a leaf: nothing more is held.
        TrainingSetup embeddings = s;
        embeddings.train_embeddings = true;
        QCOMPARE(estimate_memory(a, embeddings, unsloth).peak_allocated_bytes,
                 estimate_memory(a, embeddings, one_input).peak_allocated_bytes);
        // Without offload the key changes nothing: every input is kept anyway.
        FrameworkProfile kept_all = unsloth, kept_all_plain = one_input;
        kept_all.checkpoint_offload = kept_all_plain.checkpoint_offload = false;
        QCOMPARE(estimate_memory(a, s, kept_all).peak_allocated_bytes, estimate_memory(a, s, kept_all_plain).peak_allocated_bytes);
    }

    void compileTurnsOnTheProfilesCompileBehaviour() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        const FrameworkProfile& tt = test::library().framework("torchtune");
        TrainingSetup s = eight_b_full();
        s.compile = true;
        FrameworkProfile compiled = tt;
        compiled.traits.compile.enabled = true;
        TrainingSetup plain = s;
        plain.compile = false;
        const MemoryEstimate by_flag = estimate_memory(a, s, tt);
        QCOMPARE(by_flag.peak_allocated_bytes, estimate_memory(a, plain, compiled).peak_allocated_bytes);
        QVERIFY(by_flag.peak_allocated_bytes < estimate_memory(a, plain, tt).peak_allocated_bytes);
        // A framework without compile data keeps its prediction.
        const FrameworkProfile& hf = test::library().framework("hf-transformers");
        QCOMPARE(estimate_memory(a, s, hf).peak_allocated_bytes, estimate_memory(a, plain, hf).peak_allocated_bytes);
    }

    // A QLoRA plan reserves the profile's qlora.allocator_slack of its activations and logits at the
    // peak (hf-transformers: 0.28, replayed from a recorded QLoRA step); other methods keep the
    // profile's allocator_slack of the whole peak (0.08).
    void qloraPlansUseTheirOwnAllocatorReserve() {
        const Architecture a = test::library().model("llama-3.1-8b").arch;
        const FrameworkProfile& hf = test::library().framework("hf-transformers");
        QCOMPARE(hf.traits.qlora.allocator_slack, 0.28);
        QCOMPARE(hf.allocator_slack, 0.08);
        TrainingSetup s;
        s.method = Method::Qlora;
        s.quantization = Quantization::Nf4DoubleQuant;
        s.seq_len = 8192;
        s.attention = Attention::Flash;
        auto overhead_of = [&](const MemoryEstimate& e, double slack, bool transient) {
            std::int64_t base = 0;
            for (const auto& [c, b] : e.components)
                if (c != Component::FrameworkOverhead &&
                    (!transient || c == Component::Activations || c == Component::LogitsLoss))
                    base += b;
            return hf.context_bytes + hf.workspace_bytes + std::llround(slack * double(base));
        };
        const MemoryEstimate q = estimate_memory(a, s, hf);
        QCOMPARE(q.framework_overhead_bytes, overhead_of(q, 0.28, true));
        FrameworkProfile without = hf;
        without.traits.qlora.allocator_slack = -1;
        const MemoryEstimate plain = estimate_memory(a, s, without);
        QCOMPARE(plain.peak_allocated_bytes, q.peak_allocated_bytes);   // the tensors do not move
        QCOMPARE(plain.framework_overhead_bytes, overhead_of(plain, 0.08, false));
        QVERIFY(q.framework_overhead_bytes > plain.framework_overhead_bytes);
        s.method = Method::Lora;
        s.quantization = Quantization::None;
        const MemoryEstimate lora = estimate_memory(a, s, hf);
        QCOMPARE(lora.framework_overhead_bytes, overhead_of(lora, 0.08, false));
        for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
                 {"allocator_slack", 1.5}, {"allocator_slack", "0.2"}, {"allocator_slack_of", "weights"}}) {
            try {
                parse_framework_profile(nlohmann::json{{"id", "x"}, {"qlora", {{key, value}}}}, "q.json");
                QFAIL(("accepted qlora." + key + " = " + value.dump()).c_str());
            } catch (const ProfileError& e) {
                QCOMPARE(e.field(), "qlora." + key);
            }
        }
    }

    void techniquesRoundTripThroughJson() {
        TrainingSetup s = eight_b_full();
        s.activation_offload = true;
        s.compile = true;
        const TrainingSetup back = TrainingSetup::from_json(s.to_json());
        QVERIFY(back.optimizer_in_backward && back.activation_offload && back.compile);
        QCOMPARE(back.optimizer, Optimizer::PagedAdamW8bit);
    }
};

QTEST_APPLESS_MAIN(TechniquesTest)
#include "test_techniques.moc"
