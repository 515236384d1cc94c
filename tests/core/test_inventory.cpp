// The planner as a tensor inventory (issue 25): the rows, their lifetime walk, and the question
// "where is LoRA's memory?" answered by the rows tagged lora.
#include <QtTest>

#include <numeric>

#include "cli_result.hpp"
#include "test_support.hpp"

using namespace wingspan;

namespace {
std::int64_t tagged_bytes(const MemoryEstimate& e, const std::string& tag, Component c) {
    std::int64_t sum = 0;
    for (const auto* r : e.inventory.tagged(tag))
        if (r->component == c && r->counted && !r->on_host) sum += r->bytes;
    return sum;
}
const TensorRow* row_named(const MemoryEstimate& e, const std::string& name) {
    for (const auto& r : e.inventory.rows)
        if (r.name == name) return &r;
    return nullptr;
}
// Llama 3.2 1B (16 layers, hidden 2048, kv_dim 512), LoRA rank 16 on q and v, bf16, no checkpointing.
TrainingSetup lora_qv() {
    TrainingSetup s{.method = Method::Lora, .precision = Precision::Bf16, .seq_len = 1024, .micro_batch = 2,
                    .grad_checkpointing = false};
    s.lora_rank = 16;
    s.lora_targets = {LinearRole::Q, LinearRole::V};
    return s;
}
// One 128-token sequence in fp32, eager attention, no checkpointing: wingspan-train's smallest runs.
TrainingSetup fp32_eager_128(Method method) {
    return TrainingSetup{.method = method, .precision = Precision::Fp32, .attention = Attention::Eager, .seq_len = 128,
                         .micro_batch = 1, .grad_checkpointing = false};
}
}  // namespace

class TestInventory : public QObject {
    Q_OBJECT
private slots:
    // The walk: a row is alive from its created phase through its freed phase; rows of one scale
    // group are summed and then scaled once (rounded once), host rows count on no device.
    void lifetimeWalkCountsAliveRowsAndScalesGroupsOnce() {
        TensorInventory inv;
        inv.phases = {"forward_end", "loss_backward", "backward", "optimizer_step"};
        inv.activation_factor = 1.5;
        auto add = [&](Component c, std::int64_t bytes, std::string from, std::string to, int group = 0, bool host = false) {
            TensorRow r;
            r.component = c;
            r.bytes = bytes;
            r.created = std::move(from);
            r.freed = std::move(to);
            r.scale_group = group;
            r.on_host = host;
            inv.rows.push_back(r);
        };
        add(Component::FrozenWeights, 1000, "", "");
        add(Component::Activations, 3, "forward_end", "loss_backward", 1);
        add(Component::Activations, 4, "forward_end", "loss_backward", 1);   // 1.5 × 7 = 10.5 → 11, not 5 + 6
        add(Component::Activations, 5, "loss_backward", "loss_backward", 2);  // 7.5 → 8
        add(Component::Gradients, 200, "backward", "");
        add(Component::OptimizerState, 999, "", "", 0, true);
        QCOMPARE(inv.phase_bytes(0), (std::map<Component, std::int64_t>{{Component::FrozenWeights, 1000}, {Component::Activations, 11}}));
        QCOMPARE(inv.phase_bytes(1), (std::map<Component, std::int64_t>{{Component::FrozenWeights, 1000}, {Component::Activations, 19}}));
        QCOMPARE(inv.phase_bytes(2), (std::map<Component, std::int64_t>{{Component::FrozenWeights, 1000}, {Component::Gradients, 200}}));
        QCOMPARE(inv.phase_bytes(3), inv.phase_bytes(2));
    }

    // Every phase of an estimate is its inventory's walk, and every term a shown row.
    void estimatePhasesAreTheWalkOfItsRows() {
        const auto& lib = test::library();
        const auto e = estimate_memory(lib.model("llama-3.2-1b").arch, lora_qv(), lib.framework("hf-transformers"));
        QCOMPARE(e.phases.size(), e.inventory.phases.size());
        for (std::size_t p = 0; p < e.phases.size(); ++p) QCOMPARE(e.phases[p].bytes, e.inventory.phase_bytes(p));
        const auto shown = std::count_if(e.inventory.rows.begin(), e.inventory.rows.end(), [](const TensorRow& r) { return r.shown && r.bytes > 0; });
        QCOMPARE(std::size_t(shown) + 1, e.terms.size());   // + the framework's overhead
    }

    // "Where is LoRA's memory?": the rows tagged lora. Rank 16 on q (2048 → 2048) and v (2048 → 512)
    // in 16 layers: adapters 16 × 16 × (2048 + 2048 + 2048 + 512) params in fp32 (PEFT keeps the
    // adapters fp32 under bf16: the hf-transformers profile's dtypes); at the end of forward each
    // adapter keeps its r-wide intermediate, b·s·r·2 B (2 × 1024 × 16 × 2 = 65,536 B), 2 per layer.
    void loraRowsHoldTheAdaptersAndTheirIntermediates() {
        const auto& lib = test::library();
        const auto& arch = lib.model("llama-3.2-1b").arch;
        const auto& fw = lib.framework("hf-transformers");
        const auto e = estimate_memory(arch, lora_qv(), fw);
        const std::int64_t adapter_params = 16LL * 16 * (2048 + 2048 + 2048 + 512);
        QCOMPARE(tagged_bytes(e, "lora", Component::Adapters), adapter_params * 4);
        const TensorRow* inter = row_named(e, "LoRA intermediates");
        QVERIFY(inter && inter->has_tag("lora"));
        QCOMPARE(inter->bytes, 16LL * 2 * (2 * 1024 * 16 * 2));
        QCOMPARE(inter->created, std::string("forward_end"));
        // With dropout 0.05 each adapter also keeps its dropped input (b·s·d_in·2 B) and the mask
        // (1 B each): only the LoRA row grows, by 16 layers × 2 adapters × 2048 × 2048 × 3 B.
        TrainingSetup drop = lora_qv();
        drop.lora_dropout = 0.05;
        const auto d = estimate_memory(arch, drop, fw);
        QCOMPARE(row_named(d, "LoRA intermediates")->bytes - inter->bytes, 16LL * 2 * 2048 * 2048 * 3);
        QCOMPARE(row_named(d, "MLP's saved tensors")->bytes, row_named(e, "MLP's saved tensors")->bytes);
        // A full fine-tune has no lora rows at all.
        TrainingSetup full = lora_qv();
        full.method = Method::Full;
        QVERIFY(estimate_memory(arch, full, fw).inventory.tagged("lora").empty());
    }

    // Activation offload moves the checkpointed inputs to a host row: the device keeps one.
    // QLoRA's down projection dequantized for its backward (bitsandbytes MatMul4Bit.backward: one
    // compute-dtype copy, 2048 × 8192 × 2 B for Llama 3.2 1B in bf16; torchao's NF4Tensor uncompiled:
    // 14.03125 B per weight) is a row of the MLP backward moment where it outweighs the inner
    // gradient it sits beside (b·s·8192·2 B): at 128 tokens, not at 8,192. The phases stay the walk.
    void qloraDequantizedDownProjectionIsARow() {
        const auto& lib = test::library();
        const auto& arch = lib.model("llama-3.2-1b").arch;
        TrainingSetup s = lora_qv();
        s.method = Method::Qlora;
        s.quantization = Quantization::Nf4;
        s.seq_len = 128;
        s.micro_batch = 1;
        const auto name = std::string("4-bit down projection dequantized for its backward");
        const auto bnb = estimate_memory(arch, s, lib.framework("hf-transformers"));
        const TensorRow* r = row_named(bnb, name);
        QVERIFY(r);
        QCOMPARE(r->bytes, std::int64_t(2048) * 8192 * 2);
        QCOMPARE(r->created, std::string("backward"));
        QVERIFY(std::find(r->tags.begin(), r->tags.end(), "qlora") != r->tags.end());
        for (std::size_t p = 0; p < bnb.phases.size(); ++p) QCOMPARE(bnb.phases[p].bytes, bnb.inventory.phase_bytes(p));
        const auto tt = estimate_memory(arch, s, lib.framework("torchtune"));
        QVERIFY(row_named(tt, name));
        QCOMPARE(row_named(tt, name)->bytes, std::llround(2048.0 * 8192 * 14.03125));
        TrainingSetup longer = s;
        longer.seq_len = 4096;
        longer.micro_batch = 2;
        QVERIFY(!row_named(estimate_memory(arch, longer, lib.framework("hf-transformers")), name));
    }

    // PEFT's QLoRA preparation (hf-transformers: qlora.upcast_non_quantized) under bf16 autocast: the
    // residual stream is fp32 (bench/published/measure_hf_qlora_terms.py). Llama 3.2 1B (16 layers,
    // hidden 2048, MLP 8192, vocab 128,256), 1 × 1024 tokens: each checkpointed input 1024 × 2048 × 4 B,
    // a layer's MLP keeps gate, up and act(gate) in fp32 (3 × 1024 × 8192 × 2 B more), and the fp32
    // head's bf16 copy (128,256 × 2048 × 2 B) lives to the loss's backward. Without autocast (bf16) or
    // without the preparation nothing changes.
    void peftPreparedQloraUnderAutocastHasAnFp32Stream() {
        const auto& lib = test::library();
        const auto& arch = lib.model("llama-3.2-1b").arch;
        const FrameworkProfile& hf = lib.framework("hf-transformers");
        FrameworkProfile unprepared = hf;
        unprepared.qlora_upcast_non_quantized = false;
        TrainingSetup s = lora_qv();
        s.method = Method::Qlora;
        s.quantization = Quantization::Nf4;
        s.precision = Precision::Bf16Mixed;
        s.micro_batch = 1;
        s.grad_checkpointing = true;
        const auto prepared = estimate_memory(arch, s, hf);
        QCOMPARE(row_named(prepared, "checkpointed layer inputs")->bytes, std::int64_t(16) * 1024 * 2048 * 4);
        QCOMPARE(row_named(estimate_memory(arch, s, unprepared), "checkpointed layer inputs")->bytes,
                 std::int64_t(16) * 1024 * 2048 * 2);
        const TensorRow* head = row_named(prepared, "fp32 head's 16-bit copy");
        QVERIFY(head);
        QCOMPARE(head->bytes, std::int64_t(128256) * 2048 * 2);
        QCOMPARE(head->freed, std::string("loss_backward"));
        s.grad_checkpointing = false;
        const auto mlp = [&](const FrameworkProfile& fw) {
            const TensorRow* r = row_named(estimate_memory(arch, s, fw), "MLP's saved tensors");
            return r ? r->bytes : std::int64_t(-1);
        };
        QCOMPARE(mlp(hf) - mlp(unprepared), std::int64_t(16) * 3 * 1024 * 8192 * 2);
        s.precision = Precision::Bf16;
        QCOMPARE(mlp(hf), mlp(unprepared));
        QVERIFY(!row_named(estimate_memory(arch, s, hf), "fp32 head's 16-bit copy"));
    }

    // A paged optimizer's state paged back for its step is cudaMallocManaged by bitsandbytes
    // (functional.py get_paged): on the device (total_bytes), not in max_memory_allocated
    // (peak_allocated_bytes). Full Llama 3.2 1B, paged AdamW (fp32 moments), step in backward: the
    // largest tensor, the 128,256 × 2,048 embedding, pages 8 B per weight back at each backward moment.
    void pagedStateIsOnTheDeviceOutsideTheAllocator() {
        const auto& lib = test::library();
        TrainingSetup s = lora_qv();
        s.method = Method::Full;
        s.optimizer = Optimizer::PagedAdamW;
        s.optimizer_in_backward = true;
        const auto e = estimate_memory(lib.model("llama-3.2-1b").arch, s, lib.framework("torchtune"));
        const std::int64_t paged = std::int64_t(128256) * 2048 * 8;
        std::int64_t allocated = 0;
        const Phase* peak = nullptr;
        for (std::size_t p = 0; p < e.phases.size(); ++p) {
            const std::int64_t outside = e.inventory.outside_allocator_bytes(p);
            QVERIFY(outside == 0 || outside == paged);
            allocated = std::max(allocated, e.phases[p].total() - outside);
            if (e.phases[p].name == e.peak_phase) peak = &e.phases[p];
        }
        QVERIFY(peak);
        QCOMPARE(e.inventory.outside_allocator_bytes(std::size_t(peak - e.phases.data())), paged);
        QCOMPARE(e.peak_allocated_bytes, allocated);
        QCOMPARE(e.total_bytes, peak->total() + e.framework_overhead_bytes);
        QVERIFY(e.peak_allocated_bytes >= peak->total() - paged && e.peak_allocated_bytes < peak->total());
    }

    void activationOffloadIsAHostRow() {
        const auto& lib = test::library();
        TrainingSetup s = lora_qv();
        s.grad_checkpointing = true;
        s.activation_offload = true;
        const auto e = estimate_memory(lib.model("llama-3.2-1b").arch, s, lib.framework("torchtune"));
        const std::int64_t layer_input = 2 * 1024 * 2048 * 2;
        QCOMPARE(row_named(e, "checkpointed layer inputs")->bytes, layer_input);
        const TensorRow* host = row_named(e, "checkpointed layer inputs in host RAM");
        QVERIFY(host && host->on_host);
        QCOMPARE(host->bytes, 16 * layer_input);
    }

    void cliPrintsTheRowsWithTheirPhases() {
        const auto r = test::run_cli({"plan", "--model", "llama-3.2-1b", "--method", "lora", "--targets", "q,v", "--rank", "16",
                                      "--seq", "1024", "--batch", "2", "--framework", "hf-transformers", "--precision", "bf16",
                                      "--grad-checkpointing", "off", "--rows"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.find("LoRA intermediates | activations | 16 layers") != std::string::npos);
        QVERIFY(r.out.find("<- peak") != std::string::npos);
        const auto j = test::run_cli({"plan", "--model", "llama-3.2-1b", "--method", "lora", "--rows", "--json"});
        QCOMPARE(j.code, 0);
        const auto parsed = nlohmann::json::parse(j.out);
        QVERIFY(parsed.at("rows").size() > 5);
        QVERIFY(parsed.at("rows").at(0).contains("freed"));
    }

    void finalNormGradientFollowsTheHeads() {
        // The loss's backward makes the head's gradient (here the tied embedding's, V·h·4 B); the final
        // norm's (h·4 B) comes with its own backward, after it (wingspan-train, 135M-class full
        // fine-tune at 512 tokens: +2,296 B at the loss's backward while it was counted there).
        const auto& lib = test::library();
        const Architecture a = lib.model("smollm2-135m").arch;   // h 576, vocab 49,152, tied
        TrainingSetup s = fp32_eager_128(Method::Full);
        s.seq_len = 512;
        const MemoryEstimate est = estimate_memory(a, s, lib.framework("libtorch-cpu"));
        QCOMPARE(test::component_at(est, "loss_backward", Component::Gradients), std::int64_t(49152) * 576 * 4);
        // The top layer's MLP backward: the head's, the final norm's and its down projection's (i·h·4 B).
        QCOMPARE(test::component_at(est, "backward", Component::Gradients), 49152LL * 576 * 4 + 576 * 4 + 1536LL * 576 * 4);
    }

    void alternatingWindowsPeakAtTheSecondLayer() {
        // Gemma 2 shaped as the accuracy grid's (h 128, i 384, 4 layers, a 64-token window on the even
        // layers), LoRA r 16 on every linear, checkpointed, fp32, 2 × 128: the second layer's MLP
        // backward holds one more kept input and the global mask than the first layer's, and one
        // layer's adapter gradients less (measured in wingspan-train: the step's peak to 8 B).
        const Architecture a = Architecture::from_hf_config(nlohmann::json{
            {"model_type", "gemma2"}, {"hidden_size", 128}, {"intermediate_size", 384}, {"num_hidden_layers", 4},
            {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 32}, {"vocab_size", 4096},
            {"query_pre_attn_scalar", 32}, {"sliding_window", 64}, {"attn_logit_softcapping", 50.0},
            {"final_logit_softcapping", 30.0}, {"hidden_activation", "gelu_pytorch_tanh"}, {"tie_word_embeddings", true}});
        TrainingSetup s = fp32_eager_128(Method::Lora);
        s.micro_batch = 2;
        s.grad_checkpointing = true;
        const FrameworkProfile& fw = test::library().framework("libtorch-cpu");
        const MemoryEstimate est = estimate_memory(a, s, fw);
        QCOMPARE(est.peak_phase, std::string("backward_second_layer"));
        const std::int64_t layer_input = 2 * 128 * 128 * 4, mask = 128 * 128 * 4;
        QCOMPARE(test::component_at(est, "backward_second_layer", Component::Activations) -
                     test::component_at(est, "backward_end", Component::Activations),
                 layer_input + mask);
        const std::int64_t layer_adapters = 16 * (2 * (128 + 128) + 2 * (128 + 64) + 3 * (128 + 384)) * 4;
        QCOMPARE(test::component_at(est, "backward_end", Component::Gradients) -
                     test::component_at(est, "backward_second_layer", Component::Gradients),
                 layer_adapters);
        // QLoRA: the MLP output norm's fp32 chain holds more than the inner gradients, before the down
        // projection's adapter gradients (r·(i + h) · 4 B) exist: a moment of its own.
        s.method = Method::Qlora;
        s.quantization = Quantization::Nf4;
        const MemoryEstimate q = estimate_memory(a, s, fw);
        QVERIFY(test::component_at(q, "backward_second_layer_output_norm", Component::Activations) >
                test::component_at(q, "backward_second_layer", Component::Activations));
        QCOMPARE(test::component_at(q, "backward_second_layer", Component::Gradients) -
                     test::component_at(q, "backward_second_layer_output_norm", Component::Gradients),
                 16 * (384 + 128) * 4);
        QCOMPARE(q.peak_phase, std::string("backward_second_layer"));
        // Not where the layers share one mask.
        QCOMPARE(test::component_at(estimate_memory(test::library().model("smollm2-135m").arch, s, fw), "backward_second_layer",
                                    Component::Activations),
                 -1);
    }
};

QTEST_APPLESS_MAIN(TestInventory)
#include "test_inventory.moc"
