// What a framework's kernels keep beyond (or instead of) the reference modules: torch.compile's
// fused loss and recomputed pointwise ops, the attention kernels' workspace, bitsandbytes'
// kept 4-bit inputs, Unsloth's fused norm and SwiGLU. Checked with hand-computed bytes.
#include <QtTest>

#include <fstream>

#include "test_support.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/units.hpp"

using namespace wingspan;

namespace {

const Architecture& llama8b() { return test::library().model("llama-3.1-8b").arch; }

const MemoryTerm* term_with(const MemoryEstimate& e, Component c, const std::string& text) {
    for (const auto& t : e.terms)
        if (t.component == c && t.formula.find(text) != std::string::npos) return &t;
    return nullptr;
}

const Phase* phase_named(const MemoryEstimate& e, const std::string& name) {
    for (const auto& p : e.phases)
        if (p.name == name) return &p;
    return nullptr;
}

std::int64_t activations_at(const MemoryEstimate& e, const std::string& phase) {
    const Phase* p = phase_named(e, phase);
    if (!p) return -1;
    const auto it = p->bytes.find(Component::Activations);
    return it == p->bytes.end() ? 0 : it->second;
}

// A bundled profile with one behaviour changed, as a published case measured with an older
// library release states it.
FrameworkProfile with_behaviour(const std::string& id, const nlohmann::json& patch) {
    const FrameworkProfile& bundled = test::library().framework(id);
    std::ifstream in(bundled.file);
    nlohmann::json j = nlohmann::json::parse(in);
    j.merge_patch(patch);
    return parse_framework_profile(j, bundled.file.string());
}

TrainingSetup lora_bf16(std::int64_t seq, std::int64_t batch, Attention attention = Attention::Sdpa) {
    TrainingSetup s;
    s.method = Method::Lora;
    s.precision = Precision::Bf16;
    s.seq_len = seq;
    s.micro_batch = batch;
    s.attention = attention;
    return s;
}

// QLoRA on NF4 weights at sequence 512, batch 2, without checkpointing.
TrainingSetup qlora_nf4_512x2(Precision precision) {
    TrainingSetup s;
    s.method = Method::Qlora;
    s.quantization = Quantization::Nf4;
    s.precision = precision;
    s.seq_len = 512;
    s.micro_batch = 2;
    s.grad_checkpointing = false;
    return s;
}

}  // namespace

class TestFrameworkKernels : public QObject {
    Q_OBJECT
private slots:
    void torchtune_compiled_loss_keeps_16bit_logits() {
        const auto& tt = test::library().framework("torchtune");
        TrainingSetup s = lora_bf16(2048, 2);
        const std::int64_t tokens = 4096, V = 128256, chunk = tokens / 8;
        const auto eager = estimate_memory(llama8b(), s, tt);
        const auto compiled = estimate_memory(llama8b(), s, with_behaviour("torchtune", {{"compile", {{"enabled", true}}}}));
        // Eager: the fp32 log-softmax of every chunk kept (4 B) + 8 B of one chunk in backward.
        QCOMPARE(eager.term(Component::LogitsLoss)->bytes, tokens * V * 4 + chunk * V * 8);
        // Compiled: the 16-bit logits kept, an fp32 logsumexp per token, one chunk's 16-bit gradient.
        QCOMPARE(compiled.term(Component::LogitsLoss)->bytes, tokens * V * 2 + tokens * 4 + chunk * V * 2);
    }

    // wingspan-train's fused RMSNorm and SwiGLU (trainer/src/kernels/kernels_fused.cpp): per norm the
    // 16-bit input instead of its fp32 copy and x² (6 B less per value in bf16-mixed), per MLP
    // three b·s·i tensors instead of four; Gemma's norm and GELU gate stay unfused.
    void libtorch_fused_kernels_keep_input_rstd_gate_up() {
        TrainingSetup s = lora_bf16(512, 2, Attention::Eager);
        s.precision = Precision::Bf16Mixed;
        s.grad_checkpointing = false;
        const Architecture& a = llama8b();
        const std::int64_t bs = 1024, h = a.hidden, I = a.intermediate, L = a.layers;
        for (const char* id : {"libtorch-cpu", "libtorch-cuda", "libtorch-mps"}) {
            const FrameworkProfile& fw = test::library().framework(id);
            const auto fused = estimate_memory(a, s, fw);
            // (Without the kernels, and without model.norm_scales_in_fp32, which describes the (1 + weight)
            // norm of the architectures the kernels leave out.)
            const auto plain = estimate_memory(a, s, with_behaviour(id, {{"kernels", nullptr}, {"model", {{"norm_scales_in_fp32", false}}}}));
            // Per norm value: the fp32 input copy (4 B) instead of the 16-bit input (2 B), and x²
            // (4 B) where the unfused runtime keeps it (libtorch 1.13 on CPU).
            const std::int64_t per_value = 2 + (fw.norm_saves_square ? 4 : 0);
            // The first layer's input norm is outside the graph (frozen embedding) and the final
            // norm is outside the layers: their differences cancel (the final norm's 16-bit output is
            // kept either way: the in-place loss keeps the hidden states it multiplies, loss_in_place).
            QCOMPARE(activations_at(plain, "forward_end") - activations_at(fused, "forward_end"),
                     L * (2 * per_value * bs * h + 2 * bs * I));
            Architecture gemma = a;
            gemma.model_type = "gemma";
            QCOMPARE(activations_at(estimate_memory(gemma, s, test::library().framework(id)), "forward_end"),
                     activations_at(estimate_memory(gemma, s, with_behaviour(id, {{"kernels", nullptr}})), "forward_end"));
        }
        // Full fine-tuning: the norm weight's gradient comes from the kept input and rstd, so no
        // normalized copy either (2 B more per value and norm than the LoRA difference).
        s.method = Method::Full;
        const auto fused = estimate_memory(a, s, test::library().framework("libtorch-cpu"));
        const auto plain = estimate_memory(a, s, with_behaviour("libtorch-cpu", {{"kernels", nullptr}, {"model", {{"norm_scales_in_fp32", false}}}}));
        QCOMPARE(activations_at(plain, "forward_end") - activations_at(fused, "forward_end"),
                 L * (2 * 8 * bs * h + 2 * bs * I) + 8 * bs * h);
        QVERIFY_THROWS_EXCEPTION(ProfileError, parse_framework_profile(
            nlohmann::json{{"id", "x"}, {"kernels", {{"unfused_model_types", "gemma"}}}}, "x.json"));
    }

    void compile_recomputes_pointwise_ops() {
        const auto& tt = test::library().framework("torchtune");
        TrainingSetup s = lora_bf16(1024, 1);
        s.grad_checkpointing = false;
        s.lora_targets = {LinearRole::Q, LinearRole::V};
        const auto eager = estimate_memory(llama8b(), s, tt);
        const auto compiled = estimate_memory(llama8b(), s, with_behaviour("torchtune", {{"compile", {{"enabled", true}}}}));
        // Per layer the compiled graph drops, of each norm, the fp32 copy (4 B instead of 2) and
        // the 16-bit output per hidden value, and two of the SwiGLU's four inner tensors.
        const std::int64_t bs = 1024, h = 4096, inner = 14336, L = 32;
        const std::int64_t per_layer = 2 * (bs * h * 4) + 2 * bs * inner * 2;
        // The first layer's input norm is outside the graph (it keeps only its output: 2 B less
        // than the difference above); the final norm outside the layers drops 4 B per value too
        // (its 16-bit output is kept by neither: the LoRA head is frozen).
        QCOMPARE(activations_at(eager, "forward_end") - activations_at(compiled, "forward_end"),
                 L * per_layer - 2 * bs * h + 4 * bs * h - 2 * bs * h);
    }

    void bundled_torchtune_is_not_compiled_and_cpu_has_no_compile_section() {
        // torchtune's recipes default to compile: False: the bundled profile predicts eager.
        QVERIFY(!test::library().framework("torchtune").behaviour.at("compile").at("enabled").get<bool>());
        // libtorch-cpu (the trainer on this machine) does not compile; its fused kernels are
        // checked below; of the attention behaviours it states only that its SDPA is the math graph.
        const auto& cpu = test::library().framework("libtorch-cpu");
        QVERIFY(!cpu.behaviour.contains("compile"));
        QCOMPARE(cpu.behaviour.at("attention").dump(), std::string(R"({"sdpa_runs_math":true})"));
        QVERIFY_THROWS_EXCEPTION(ProfileError, parse_framework_profile(
            nlohmann::json{{"id", "x"}, {"compile", {{"enabled", "yes"}}}}, "x.json"));
    }

    void cpu_sdpa_is_the_eager_graph_with_repeated_kv() {
        // libtorch 1.13 on CPU runs SDPA as matmul, softmax, matmul: it keeps the b·heads·s²
        // softmax like eager attention (no logsumexp, no flash workspace), but K and V repeated
        // to every query head where the trainer's eager path shares them per group.
        const auto& cpu = test::library().framework("libtorch-cpu");
        TrainingSetup s = lora_bf16(1024, 1, Attention::Eager);
        s.grad_checkpointing = false;   // every layer keeps what its attention saves
        const auto eager = estimate_memory(llama8b(), s, cpu);
        s.attention = Attention::Sdpa;
        const auto sdpa = estimate_memory(llama8b(), s, cpu);
        const std::int64_t bs = 1024, qd = 4096, kvd = 1024, L = 32;
        QCOMPARE(activations_at(sdpa, "forward_end") - activations_at(eager, "forward_end"), L * 2 * bs * (qd - kvd) * 2);
        QVERIFY(!term_with(sdpa, Component::Activations, "attention workspace"));
        // A runtime with a fused kernel keeps only the per-row logsumexp instead of the softmax.
        FrameworkProfile fused = cpu;
        fused.traits.attention = {};
        const auto kernel = estimate_memory(llama8b(), s, fused);
        QCOMPARE(activations_at(sdpa, "forward_end") - activations_at(kernel, "forward_end"),
                 L * (32LL * 1024 * 1024 * 2 - 32LL * 1024 * 4));
    }

    void eager_attention_workspace() {
        const TrainingSetup s = lora_bf16(1024, 2, Attention::Eager);
        const auto est = estimate_memory(llama8b(), s, test::library().framework("hf-transformers"));
        const MemoryTerm* ws = term_with(est, Component::Activations, "attention workspace (eager");
        QVERIFY(ws);
        QCOMPARE(ws->bytes, std::int64_t(2) * 32 * 1024 * 1024 * 2);   // b·heads·s²·2 B
        QVERIFY(phase_named(est, "forward_attention"));
        // The bare reference has no such workspace.
        const auto bare = estimate_memory(llama8b(), s, test::bare_framework());
        QVERIFY(!term_with(bare, Component::Activations, "attention workspace"));
        QVERIFY(!phase_named(bare, "forward_attention"));
    }

    // Gemma 2 (gemma-2-2b: 26 layers, hidden 2304, 8 heads of 256, vocabulary 256,000), LoRA bf16 at
    // 512 × 2 under transformers: each sublayer's output is normed before the residual add (that norm
    // keeps its fp32 input and rstd), and the soft caps' tanh keeps its output for the scores and for
    // the logits; SDPA cannot cap the scores, so asked for it the attention runs eager.
    // (tests/frameworks/profile_terms.py measures the same terms on transformers' Gemma 2.)
    void gemma2_soft_caps_and_output_norms() {
        const Architecture& gemma = test::library().model("gemma-2-2b").arch;
        const auto& hf = test::library().framework("hf-transformers");
        const auto row = test::row_bytes;
        TrainingSetup s = lora_bf16(512, 2);
        s.grad_checkpointing = false;
        const auto est = estimate_memory(gemma, s, hf);
        const std::int64_t tokens = 1024, scores = 2LL * 8 * 512 * 512;
        QCOMPARE(row(est, "sublayer output norms' saved tensors"), 26 * 2 * (tokens * 2304 * 4 + tokens * 4));
        // q, k and v repeated to every head, the output (b·s·2048·2 B each); the fp32 softmax and its
        // bf16 copy; the tanh output (bf16).
        QCOMPARE(row(est, "attention's saved tensors"), 26 * (4 * tokens * 2048 * 2 + scores * (4 + 2) + scores * 2));
        TrainingSetup eager = s;
        eager.attention = Attention::Eager;
        QCOMPARE(row(est, "attention's saved tensors"), row(estimate_memory(gemma, eager, hf), "attention's saved tensors"));
        QVERIFY(est.explain(Component::Activations).find("SDPA cannot cap the scores") != std::string::npos);
        QCOMPARE(row(est, "the soft cap's tanh output"), tokens * 256000 * 2);
        // A release whose training path skipped the final cap (LitGPT 0.4's chunked head): no tanh
        // output, and the peak (the loss's backward) is that much lower.
        const auto uncapped = estimate_memory(gemma, s, with_behaviour("hf-transformers", {{"loss", {{"skips_final_softcap", true}}}}));
        QCOMPARE(row(uncapped, "the soft cap's tanh output"), std::int64_t(-1));
        QCOMPARE(est.peak_phase, std::string("loss_backward"));
        QCOMPARE(est.peak_allocated_bytes - uncapped.peak_allocated_bytes, tokens * 256000 * 2);
        // Llama has neither (a row of no bytes is not written).
        const auto llama = estimate_memory(llama8b(), s, hf);
        QCOMPARE(row(llama, "sublayer output norms' saved tensors"), std::int64_t(-1));
        QCOMPARE(row(llama, "the soft cap's tanh output"), std::int64_t(-1));
    }

    void flash_backward_workspace() {
        const auto& hf = test::library().framework("hf-transformers");
        TrainingSetup s = lora_bf16(2048, 1, Attention::Flash);
        const MemoryTerm* ws = nullptr;
        const auto est = estimate_memory(llama8b(), s, hf);
        QVERIFY((ws = term_with(est, Component::Activations, "attention workspace (flash backward)")));
        // fp32 dq accumulator (2048 × 4096 × 4) + softmax_d (32 heads × 2048 × 4) + dk, dv expanded
        // from 8 KV heads to 32 (2 × 2048 × 4096 × 2).
        QCOMPARE(ws->bytes, std::int64_t(2048) * 4096 * 4 + 32LL * 2048 * 4 + 2LL * 2048 * 4096 * 2);
        QVERIFY(phase_named(est, "backward_attention"));
        // transformers 5 hands SDPA the grouped KV heads (enable_gqa, profile attention.sdpa_grouped_kv):
        // the same expansion as flash, and k, v saved at kv_dim.
        s.attention = Attention::Sdpa;
        const auto sdpa = estimate_memory(llama8b(), s, hf);
        QCOMPARE(term_with(sdpa, Component::Activations, "attention workspace")->bytes, ws->bytes);
        QVERIFY(sdpa.explain(Component::Activations).find("SDPA with grouped KV heads") != std::string::npos);
        // A framework that repeats K and V before SDPA (torchtune's MultiHeadAttention): no expansion.
        const auto repeated = estimate_memory(llama8b(), s, test::library().framework("torchtune"));
        QCOMPARE(term_with(repeated, Component::Activations, "attention workspace")->bytes,
                 std::int64_t(2048) * 4096 * 4 + 32LL * 2048 * 4);
    }

    void old_bitsandbytes_keeps_4bit_inputs() {
        TrainingSetup s = qlora_nf4_512x2(Precision::Bf16);
        const FrameworkProfile current = test::library().framework("litgpt");
        const FrameworkProfile old = with_behaviour("litgpt", {{"qlora", {{"keeps_linear_inputs", true}}}});
        QVERIFY(!current.behaviour.at("qlora").value("keeps_linear_inputs", false));
        QVERIFY(old.behaviour.at("qlora").at("keeps_linear_inputs").get<bool>());
        const auto now = estimate_memory(llama8b(), s, current);
        const auto then = estimate_memory(llama8b(), s, old);
        // Adapters on every linear without dropout keep each linear's input already, and a frozen
        // linear keeps none (profile model.frozen_linear_keeps_no_input): bitsandbytes' copies are the
        // same tensors, counted once. What old bitsandbytes adds is the 4-bit head's input (the final
        // norm output, b·s·h) and, at the end of forward, the previous micro-batch's inputs its ctx
        // still holds (LitGPT's loop holds that step's logits, profile loss.previous_logits_held):
        // per layer the two norm outputs (2·h), the attention output (q_dim) and the MLP's product.
        const std::int64_t bs = 1024, h = 4096, qd = 4096, inner = 14336, L = 32;
        const std::int64_t previous = L * bs * (2 * h + qd + inner) * 2 + bs * h * 2;
        const TensorRow* held = nullptr;
        for (const auto& r : then.inventory.rows)
            if (r.name == "the previous micro-batch's 4-bit linear inputs") held = &r;
        QVERIFY(held);
        QCOMPARE(held->bytes, previous);
        // Alive until the forward returns: the model's return is a moment of its own (Fabric's fp32
        // conversion beside the previous logits).
        QCOMPARE(held->created, std::string("forward_end"));
        QCOMPARE(held->freed, std::string("forward_output"));
        QCOMPARE(activations_at(then, "forward_end") - activations_at(now, "forward_end"), previous + bs * h * 2);
        // Once the forward has returned they are gone: a later moment holds at most the head's input
        // more (the top layer's backward does; the first layer's moments count none of the head's).
        for (const auto& p : then.phases) {
            if (p.name.rfind("forward_", 0) == 0 || activations_at(now, p.name) < 0) continue;
            const std::int64_t more = activations_at(then, p.name) - activations_at(now, p.name);
            QVERIFY2(more >= 0 && more <= bs * h * 2, p.name.c_str());
        }
        QCOMPARE(activations_at(then, "backward") - activations_at(now, "backward"), bs * h * 2);
        // With dropout the adapters keep their dropped copies instead: the current bitsandbytes keeps
        // no input, so the norm outputs and the MLP product go (SDPA keeps the attention output).
        s.lora_dropout = 0.05;
        QCOMPARE(activations_at(estimate_memory(llama8b(), s, old), "forward_end") -
                     activations_at(estimate_memory(llama8b(), s, current), "forward_end"),
                 previous + bs * h * 2 + L * bs * (2 * h + inner) * 2);
        s.lora_dropout = 0;
        // Not for a LoRA plan: nothing is quantized.
        s.method = Method::Lora;
        s.quantization = Quantization::None;
        QCOMPARE(estimate_memory(llama8b(), s, old).total_bytes, estimate_memory(llama8b(), s, current).total_bytes);
    }

    // LitGPT's 4-bit head (profile quantization.head) is dequantized for each chunk's matmul: in
    // forward before the model returns, beside the previous micro-batch's fp32 logits (the loop still
    // holds them) and the 16-bit chunks made so far; in backward after the loss's, beside the fp32
    // logits the loop holds and their 16-bit gradient (autograd runs Fabric's conversion and the loss
    // first). Neither moment holds the log-softmax.
    void litgpt_dequantized_head_moments() {
        const TrainingSetup s = qlora_nf4_512x2(Precision::Bf16);
        const auto plan = estimate_memory(llama8b(), s, test::library().framework("litgpt"));
        const std::int64_t T = 1024, V = 128256, h = 4096;
        const std::int64_t dequantized = V * h * 2;   // one bf16 copy (bitsandbytes >= 0.45)
        QCOMPARE(test::component_at(plan, "forward_head", Component::LogitsLoss), 6 * T * V + dequantized);
        QCOMPARE(test::component_at(plan, "forward_output", Component::LogitsLoss), 10 * T * V);
        QCOMPARE(test::component_at(plan, "loss_backward", Component::LogitsLoss), 8 * T * V + 8 * 256 * V);
        QCOMPARE(test::component_at(plan, "head_backward", Component::LogitsLoss), 6 * T * V + dequantized);
        QCOMPARE(test::component_at(plan, "forward_end", Component::LogitsLoss), 8 * T * V + 2 * 127 * V * 4);
        // The previous logits are alive through the last layer's forward moments as well.
        QCOMPARE(test::component_at(plan, "forward_down", Component::LogitsLoss), 4 * T * V);
        // The head moments are the loss's most. The head's backward, not the loss's, makes the hidden
        // states' gradient (b·s·h in bf16, beside every saved activation).
        QCOMPARE(plan.components.at(Component::LogitsLoss), 6 * T * V + dequantized);
        QCOMPARE(activations_at(plan, "head_backward") - activations_at(plan, "loss_backward"), T * h * 2);
        // A LoRA plan has no dequantized head: no head moments.
        TrainingSetup lora = s;
        lora.method = Method::Lora;
        lora.quantization = Quantization::None;
        const auto unquantized = estimate_memory(llama8b(), lora, test::library().framework("litgpt"));
        QCOMPARE(test::component_at(unquantized, "forward_head", Component::LogitsLoss), -1);
        QCOMPARE(test::component_at(unquantized, "head_backward", Component::LogitsLoss), -1);
    }

    // Phi-3's checkpoint fuses q/k/v and gate/up; PEFT adapts each fused matrix as one linear, LitGPT
    // loads them into its own layout (profile model.splits_fused_projections): q, k and v adapted each
    // in its q/k/v linear, gate and up separate linears. On every linear at rank r that is 3·r·h more
    // adapter parameters a layer (q/k/v: r·(h + q) + 2·r·(h + kv) against r·(h + q + 2·kv); gate, up:
    // 2·r·(h + i) against r·(h + 2·i)), and nothing of zero_pad, which only a partly adapted q/k/v keeps.
    void litgpt_splits_phi3_projections() {
        const Architecture& phi3 = test::library().model("phi-3-mini-4k").arch;
        TrainingSetup s = lora_bf16(512, 2);
        s.grad_checkpointing = false;
        s.lora_rank = 8;
        s.lora_targets = {LinearRole::Q, LinearRole::K, LinearRole::V, LinearRole::O,
                          LinearRole::Gate, LinearRole::Up, LinearRole::Down};
        const FrameworkProfile split = test::library().framework("litgpt");
        const FrameworkProfile fused = with_behaviour("litgpt", {{"model", {{"splits_fused_projections", false}}}});
        const auto a = estimate_memory(phi3, s, split);
        const auto b = estimate_memory(phi3, s, fused);
        const std::int64_t h = 3072, L = 32, r = 8, bs = 1024;
        QCOMPARE(a.params.adapter - b.params.adapter, L * 3 * r * h);
        QCOMPARE(a.params.total, b.params.total);
        // Without dropout each adapter keeps only its A output (r wide, bf16): seven a layer split, four
        // fused, where the fused q/k/v also kept zero_pad's source (b·s·(q + 2·kv) bf16 + an int64 index).
        QCOMPARE(test::row_bytes(a, "LoRA intermediates"), L * 7 * bs * r * 2);
        QCOMPARE(test::row_bytes(b, "LoRA intermediates"), L * (4 * bs * r * 2 + bs * 3 * h * 2 + 3 * h * 8));
    }

    // LitGPT's fused q/k/v (profile model.v_views_fused_qkv): v is a view of the fused output unless
    // grouped heads are repeated into a copy, so a multi-head model (Llama 2 7B) keeps q and k's part
    // too, b·s·(q_dim + kv_dim) per layer; a grouped-query one (Llama 3.1 8B) nothing more.
    // LoRA on q and v only (profile model.pads_partial_qkv_lora): zero_pad's index_copy_ keeps its
    // source, b·s·(q_dim + kv_dim) in bf16 and the int64 column index.
    void litgpt_fused_qkv_terms() {
        TrainingSetup s = lora_bf16(512, 2);
        s.grad_checkpointing = false;
        s.lora_targets = {LinearRole::Q, LinearRole::V};
        const std::int64_t bs = 1024;
        auto layer_terms = [&](const Architecture& arch, const nlohmann::json& patch) {
            return activations_at(estimate_memory(arch, s, test::library().framework("litgpt")), "forward_end") -
                   activations_at(estimate_memory(arch, s, with_behaviour("litgpt", patch)), "forward_end");
        };
        const Architecture& mha = test::library().model("llama-2-7b").arch;
        QCOMPARE(mha.kv_dim(), mha.q_dim());
        const std::int64_t view = bs * 2 * 4096 * 2;
        const std::int64_t pad_mha = bs * (4096 + 4096) * 2 + (4096 + 4096) * 8;
        QCOMPARE(layer_terms(mha, {{"model", {{"v_views_fused_qkv", false}}}}), 32 * view);
        QCOMPARE(layer_terms(mha, {{"model", {{"pads_partial_qkv_lora", false}}}}), 32 * pad_mha);
        QCOMPARE(layer_terms(llama8b(), {{"model", {{"v_views_fused_qkv", false}}}}), std::int64_t(0));
        QCOMPARE(layer_terms(llama8b(), {{"model", {{"pads_partial_qkv_lora", false}}}}),
                 32 * (bs * (4096 + 1024) * 2 + (4096 + 1024) * 8));
        // All of q, k and v adapted: nothing is padded.
        s.lora_targets = {LinearRole::Q, LinearRole::K, LinearRole::V};
        QCOMPARE(layer_terms(mha, {{"model", {{"pads_partial_qkv_lora", false}}}}), std::int64_t(0));
    }

    // LitGPT's RMSNorm scales by weight.float() (model.norm_scales_in_fp32): a full fine-tune in bf16
    // keeps the normalized input in fp32 (4 B, not 2, a token × hidden), and every 16-bit norm weight
    // leaves an fp32 copy of itself (4·h B a norm) saved; LoRA (frozen weights) only the copies.
    // Two norms a layer, 32 layers, plus the final norm.
    void litgpt_norm_scales_in_fp32() {
        const std::int64_t bs = 1024, h = 4096, norms = 32 * 2 + 1;
        const nlohmann::json off = {{"model", {{"norm_scales_in_fp32", false}}}};
        auto gained = [&](const TrainingSetup& s) {
            return activations_at(estimate_memory(llama8b(), s, test::library().framework("litgpt")), "forward_end") -
                   activations_at(estimate_memory(llama8b(), s, with_behaviour("litgpt", off)), "forward_end");
        };
        TrainingSetup full = lora_bf16(512, 2);
        full.method = Method::Full;
        full.grad_checkpointing = false;
        QCOMPARE(gained(full), norms * (bs * h * 2 + h * 4));
        TrainingSetup lora = lora_bf16(512, 2);
        lora.grad_checkpointing = false;
        // Layer 0's input norm saves nothing under LoRA (a frozen embedding's output needs no gradient).
        QCOMPARE(gained(lora), (norms - 1) * h * 4);
        // fp32 weights (an fp32 run) need no copy, and their normalized input is fp32 already.
        full.precision = Precision::Fp32;
        QCOMPARE(gained(full), std::int64_t(0));
    }

    // wingspan-train's 4-bit linear (trainer/src/model/linear.cpp Nf4LinearFn) keeps no input, where
    // libtorch 1.13's frozen mm keeps its own: in QLoRA a linear's input stays only for an adapter
    // on it (its A product keeps it; with dropout, the dropped copy instead).
    // LitGPT's quantized head is dequantized for each chunk's matmul: one bf16 copy (V·h·2 B), or
    // what quantization.dequantize_bytes_per_weight says is alive at once (4 B: Lightning's plugin
    // quantized from fp16, so bitsandbytes 0.41/0.42 made an fp16 copy and then its bf16 cast).
    void dequantized_head_follows_the_profile() {
        const TrainingSetup s = qlora_nf4_512x2(Precision::Bf16);
        auto head_row = [](const MemoryEstimate& e) -> std::int64_t {
            for (const auto& r : e.inventory.rows)
                if (r.name == "quantized head dequantized for its matmul") return r.bytes;
            return -1;
        };
        const std::int64_t head = 128256LL * 4096;
        QCOMPARE(head_row(estimate_memory(llama8b(), s, test::library().framework("litgpt"))), head * 2);
        const auto fp16_state = with_behaviour("litgpt", {{"quantization", {{"dequantize_bytes_per_weight", 4}}}});
        QCOMPARE(head_row(estimate_memory(llama8b(), s, fp16_state)), head * 4);
    }

    void libtorch_4bit_linear_keeps_no_input() {
        TrainingSetup s = qlora_nf4_512x2(Precision::Bf16Mixed);
        s.lora_rank = 16;
        s.lora_dropout = 0;
        const std::int64_t bs = 1024, h = 4096, qd = 4096, I = 14336, L = 32, r = 16, e = 2;
        const FrameworkProfile& cpu = test::library().framework("libtorch-cpu");
        const FrameworkProfile keeping = with_behaviour("libtorch-cpu", {{"qlora", nullptr}});
        QVERIFY(cpu.behaviour.at("qlora").at("quantized_linear_keeps_no_input").get<bool>());
        auto forward_end = [&](const std::set<LinearRole>& targets, const FrameworkProfile& fw) {
            s.lora_targets = targets;
            return activations_at(estimate_memory(llama8b(), s, fw), "forward_end");
        };
        const std::set<LinearRole> all = {LinearRole::Q,    LinearRole::K,  LinearRole::V,   LinearRole::O,
                                          LinearRole::Gate, LinearRole::Up, LinearRole::Down};
        const std::set<LinearRole> qv = {LinearRole::Q, LinearRole::V};
        // All targets: every linear input is kept by an adapter, as a frozen linear would keep it.
        QCOMPARE(forward_end(all, cpu), forward_end(all, keeping));
        // q,v: per layer five adapters' r-wide products fewer, and no adapter keeps the attention
        // output (o's input), the post-attention norm's output (gate and up's) or the MLP product
        // (down's); the first adapted layer keeps no scaled q either (k needs no gradient).
        const std::int64_t lora_fewer = 5 * bs * r * e, unkept = bs * (qd + h + I) * e, scaled_q = bs * qd * e;
        QCOMPARE(forward_end(all, cpu) - forward_end(qv, cpu), L * (lora_fewer + unkept) + scaled_q);
        QCOMPARE(forward_end(all, keeping) - forward_end(qv, keeping), L * lora_fewer + scaled_q);
        s.lora_targets = qv;
        const std::string formula = estimate_memory(llama8b(), s, cpu).explain(Component::Activations);
        QVERIFY(formula.find("minus inputs of 4-bit linears no adapter keeps") != std::string::npos);
        QVERIFY(formula.find("MLP product b·s·i " + format_count(bs * I * e)) != std::string::npos);
        QVERIFY(formula.find("input norm's output") == std::string::npos);   // q and v keep it
        // With dropout an adapter keeps its dropped copy: no layer keeps any of the four inputs.
        s.lora_dropout = 0.05;
        QCOMPARE(forward_end(all, keeping) - forward_end(all, cpu), L * bs * (2 * h + qd + I) * e);
        // A LoRA plan quantizes nothing: the flag changes nothing.
        s.method = Method::Lora;
        s.quantization = Quantization::None;
        QCOMPARE(forward_end(qv, cpu), forward_end(qv, keeping));
        QVERIFY_THROWS_EXCEPTION(ProfileError, parse_framework_profile(
            nlohmann::json{{"id", "x"}, {"qlora", {{"quantized_linear_keeps_no_input", "yes"}}}}, "x.json"));
    }

    void unsloth_kernels_keep_less() {
        const auto& un = test::library().framework("unsloth");
        TrainingSetup s = lora_bf16(1024, 1);
        s.grad_checkpointing = false;
        const auto est = estimate_memory(llama8b(), s, un);
        QVERIFY(est.explain(Component::Activations).find("16-bit input, rstd (fused kernel), output") != std::string::npos);
        // Against the same profile without its kernels section: per layer each norm keeps a 16-bit
        // input instead of fp32 (2 B less per hidden value) and the MLP two inner tensors fewer.
        const FrameworkProfile reference = with_behaviour("unsloth", {{"kernels", nullptr}});
        const auto ref = estimate_memory(llama8b(), s, reference);
        const std::int64_t bs = 1024, h = 4096, inner = 14336, L = 32;
        const std::int64_t per_layer = 2 * bs * h * 2 + 2 * bs * inner * 2;
        // (the first layer's input norm is outside the graph; the final norm keeps 2 B less too, and
        // without the kernels its 16-bit output is not kept for the frozen head)
        QCOMPARE(activations_at(ref, "forward_end") - activations_at(est, "forward_end"),
                 L * per_layer - bs * h * 2 + bs * h * 2 - bs * h * 2);
        QVERIFY_THROWS_EXCEPTION(ProfileError, parse_framework_profile(
            nlohmann::json{{"id", "x"}, {"kernels", {{"norm_saves_input_only", "yes"}}}}, "x.json"));
    }
};

QTEST_APPLESS_MAIN(TestFrameworkKernels)
#include "test_framework_kernels.moc"
