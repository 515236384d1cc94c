// Issue 30 item 3: pre-quantized checkpoints served as stored (core/include/wingspan/quant_formats.hpp):
// AWQ, GPTQ 4- and 8-bit and fp8, priced tensor by tensor, in the planner, in vLLM's serve plan
// and on the command line, and the plans that cannot load them refused.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "cli_result.hpp"
#include "test_support.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/quant_formats.hpp"
#include "wingspan/vllm_serve.hpp"

using namespace wingspan;

namespace {

// Qwen2.5-0.5B (hidden 896, 14 heads and 2 KV heads of 64, MLP 4864, 24 layers, vocab 151,936,
// tied embeddings): what stays 16-bit in every format. The embedding 151,936 × 896, per layer two
// norms (2 × 896) and the q, k, v biases (896 + 128 + 128), the final norm 896; 2 B each.
constexpr std::int64_t kQwenPlainBytes = 2 * (151'936 * 896 + 24 * (2 * 896 + 896 + 128 + 128) + 896);

// The planner's weights for one serve setup, as hf-transformers loads the checkpoint.
std::int64_t planned_weights(Quantization q, std::int64_t group = kDefaultQuantGroup) {
    TrainingSetup s;
    s.method = Method::Serve;
    s.quantization = q;
    s.quant_group_size = group;
    s.seq_len = 512;
    const Architecture a = test::library().model("qwen2.5-0.5b").arch;
    s.validate(a);
    const MemoryEstimate e = estimate_memory(a, s, test::library().framework("hf-transformers"));
    // Held from load to the end: both components at the peak are every stored weight.
    return e.components.at(Component::FrozenWeights) + e.components.at(Component::QuantConstants);
}

std::uint64_t vllm_weights(Quantization q) {
    vllm::Options o;
    o.quantization = q;
    return vllm::weight_bytes(test::library().model("qwen2.5-0.5b").arch, o);
}

}  // namespace

class QuantFormatsTest : public QObject {
    Q_OBJECT
private slots:
    // One linear's tensors, as AutoAWQ's WQLinear_GEMM and vLLM's awq.py create them. Qwen2.5-0.5B's
    // q_proj (896 → 896) stores qweight int32 [896, 112], qzeros int32 [7, 112], scales fp16
    // [7, 896]; its down_proj (4864 → 896) qweight [4864, 112], qzeros [38, 112], scales [38, 896].
    void awqLayoutByHand() {
        const QuantLayout q = checkpoint_layout(Quantization::Awq, 896, 896, 128);
        QCOMPARE(q.packed_bytes, std::int64_t(896 * 112 * 4));
        QCOMPARE(q.constant_bytes, std::int64_t(7 * 112 * 4 + 7 * 896 * 2));
        QCOMPARE(q.blocks, std::int64_t(7));
        const QuantLayout down = checkpoint_layout(Quantization::Awq, 896, 4864, 128);
        QCOMPARE(down.packed_bytes, std::int64_t(4864 * 112 * 4));
        QCOMPARE(down.constant_bytes, std::int64_t(38 * 112 * 4 + 38 * 896 * 2));
        // 0.5 B a code, plus (2 B scale + 0.5 B zero) per 128 weights: 0.51953 B a weight.
        QCOMPARE(double(down.packed_bytes + down.constant_bytes) / double(down.elements), 0.5 + 2.5 / 128);
        QVERIFY(checkpoint_format_formula(Quantization::Awq, 128).find("0.5195 B a weight") != std::string::npos);
    }
    // GPTQ packs along the input: qweight int32 [in·bits/32, out], qzeros [groups, out·bits/32],
    // scales fp16 [groups, out] and g_idx int32 [in]; group -1 is one group over the whole input.
    void gptqLayoutByHand() {
        const QuantLayout k4 = checkpoint_layout(Quantization::Gptq, 128, 896, 128);   // k_proj 896 → 128
        QCOMPARE(k4.packed_bytes, std::int64_t(112 * 128 * 4));
        QCOMPARE(k4.constant_bytes, std::int64_t(7 * 16 * 4 + 7 * 128 * 2 + 896 * 4));
        const QuantLayout k8 = checkpoint_layout(Quantization::GptqInt8, 128, 896, 128);
        QCOMPARE(k8.packed_bytes, std::int64_t(224 * 128 * 4));
        QCOMPARE(k8.constant_bytes, std::int64_t(7 * 32 * 4 + 7 * 128 * 2 + 896 * 4));
        const QuantLayout whole = checkpoint_layout(Quantization::Gptq, 128, 896, -1);
        QCOMPARE(whole.blocks, std::int64_t(1));
        QCOMPARE(whole.constant_bytes, std::int64_t(1 * 16 * 4 + 1 * 128 * 2 + 896 * 4));
        // A group that does not divide the input: the last group is partial (ceil), as GPTQ sizes it.
        QCOMPARE(checkpoint_layout(Quantization::Gptq, 64, 200, 128).blocks, std::int64_t(2));
    }
    // fp8 e4m3: one byte a weight and fp32 scales per tensor (weight and input scale), per output
    // row, or per 128 × 128 block.
    void fp8LayoutByHand() {
        QCOMPARE(checkpoint_layout(Quantization::Fp8, 4864, 896, 128).constant_bytes, std::int64_t(8));
        QCOMPARE(checkpoint_layout(Quantization::Fp8Channel, 4864, 896, 128).constant_bytes, std::int64_t(4864 * 4));
        QCOMPARE(checkpoint_layout(Quantization::Fp8Block, 4864, 896, 128).constant_bytes, std::int64_t(38 * 7 * 4));
        QCOMPARE(checkpoint_layout(Quantization::Fp8Block, 4864, 896, 128).packed_bytes, std::int64_t(4864 * 896));
        QVERIFY_THROWS_EXCEPTION(InputError, checkpoint_layout(Quantization::Nf4, 64, 64, 128));
    }
    // A whole model by hand against the planner (hf-transformers) and vLLM's loader. Per layer of
    // Qwen2.5-0.5B: q and o 896 → 896, k and v 896 → 128, gate and up 896 → 4864, down 4864 → 896.
    void wholeModelByHand() {
        // AWQ: q/o 896·112·4 + 7·112·4 + 7·896·2; k/v 896·16·4 + 7·16·4 + 7·128·2; gate/up
        // 896·608·4 + 7·608·4 + 7·4864·2; down 4864·112·4 + 38·112·4 + 38·896·2.
        const std::int64_t awq_layer = 2 * (896 * 112 * 4 + 7 * 112 * 4 + 7 * 896 * 2) +
                                       2 * (896 * 16 * 4 + 7 * 16 * 4 + 7 * 128 * 2) +
                                       2 * (896 * 608 * 4 + 7 * 608 * 4 + 7 * 4864 * 2) +
                                       (4864 * 112 * 4 + 38 * 112 * 4 + 38 * 896 * 2);
        QCOMPARE(awq_layer, std::int64_t(7'745'920));
        QCOMPARE(planned_weights(Quantization::Awq), 24 * awq_layer + kQwenPlainBytes);
        QCOMPARE(vllm_weights(Quantization::Awq), std::uint64_t(24 * awq_layer + kQwenPlainBytes));
        // GPTQ 4-bit: as AWQ's packed bytes, qweight along the input, + g_idx 4 B per input row.
        const std::int64_t gptq_layer = 2 * (112 * 896 * 4 + 7 * 112 * 4 + 7 * 896 * 2 + 896 * 4) +
                                        2 * (112 * 128 * 4 + 7 * 16 * 4 + 7 * 128 * 2 + 896 * 4) +
                                        2 * (112 * 4864 * 4 + 7 * 608 * 4 + 7 * 4864 * 2 + 896 * 4) +
                                        (608 * 896 * 4 + 38 * 112 * 4 + 38 * 896 * 2 + 4864 * 4);
        QCOMPARE(gptq_layer, std::int64_t(7'786'880));
        QCOMPARE(planned_weights(Quantization::Gptq), 24 * gptq_layer + kQwenPlainBytes);
        // GPTQ 8-bit: four codes a word.
        const std::int64_t gptq8_layer = 2 * (224 * 896 * 4 + 7 * 224 * 4 + 7 * 896 * 2 + 896 * 4) +
                                         2 * (224 * 128 * 4 + 7 * 32 * 4 + 7 * 128 * 2 + 896 * 4) +
                                         2 * (224 * 4864 * 4 + 7 * 1216 * 4 + 7 * 4864 * 2 + 896 * 4) +
                                         (1216 * 896 * 4 + 38 * 224 * 4 + 38 * 896 * 2 + 4864 * 4);
        QCOMPARE(planned_weights(Quantization::GptqInt8), 24 * gptq8_layer + kQwenPlainBytes);
        // fp8: 14,909,440 codes a layer (2 · 896·896 + 2 · 128·896 + 3 · 4864·896) and the scales.
        const std::int64_t codes = 2 * 896 * 896 + 2 * 128 * 896 + 3 * 4864 * 896;
        QCOMPARE(codes, std::int64_t(14'909'440));
        QCOMPARE(planned_weights(Quantization::Fp8), 24 * (codes + 7 * 8) + kQwenPlainBytes);
        QCOMPARE(planned_weights(Quantization::Fp8Channel),
                 24 * (codes + 4 * (2 * 896 + 2 * 128 + 2 * 4864 + 896)) + kQwenPlainBytes);
        QCOMPARE(planned_weights(Quantization::Fp8Block), 24 * (codes + 4 * (2 * 49 + 2 * 7 + 3 * 266)) + kQwenPlainBytes);
        QCOMPARE(vllm_weights(Quantization::Fp8Block), std::uint64_t(24 * (codes + 4 * (2 * 49 + 2 * 7 + 3 * 266)) + kQwenPlainBytes));
        // Smaller groups keep more scales and zeros: AWQ at group 64 doubles the constants.
        const std::int64_t awq_constants_128 = 24 * (awq_layer - (2 * 896 * 112 + 2 * 896 * 16 + 2 * 896 * 608 + 4864 * 112) * 4);
        QCOMPARE(planned_weights(Quantization::Awq, 64) - planned_weights(Quantization::Awq), awq_constants_128);
    }
    // A mixture of experts keeps its router (and Qwen-MoE's shared-expert gate) 16-bit.
    void routerStaysSixteenBit() {
        const Architecture moe = test::library().model("qwen1.5-moe-a2.7b").arch;
        std::int64_t router = 0;
        for (const auto& g : moe.tensor_groups())
            if (g.role == LinearRole::Router || g.role == LinearRole::SharedGate) {
                QVERIFY(!quantized_in_checkpoint(g));
                QCOMPARE(checkpoint_group_bytes(g, Quantization::Awq, 128, 2), 2 * g.total_elements());
                router += g.total_elements();
            }
        QVERIFY(router > 0);
    }
    // The command line: the plan names the format and shows the bytes a weight; JSON and vLLM agree.
    void commandLine() {
        const auto r = test::run_cli({"plan", "--method", "serve", "--quant", "awq", "--model", "qwen2.5-0.5b", "--machine",
                                      "rtx-3090", "--json"});
        QCOMPARE(r.code, 0);
        const auto j = nlohmann::json::parse(r.out);
        QCOMPARE(j["quantization_format"].get<std::string>(), std::string("AWQ 4-bit (GEMM, group 128)"));
        QCOMPARE(j["setup"]["quantization"].get<std::string>(), std::string("awq"));
        QCOMPARE(j["setup"]["quant_group_size"].get<std::int64_t>(), std::int64_t(128));
        const auto text = test::run_cli({"plan", "--method", "serve", "--quant", "gptq", "--group-size", "32", "--model",
                                         "qwen2.5-0.5b", "--machine", "rtx-3090"});
        QCOMPARE(text.code, 0);
        QVERIFY2(text.out.find("per 32 weights") != std::string::npos && text.out.find("g_idx") != std::string::npos,
                 text.out.c_str());
        const auto v = test::run_cli({"plan", "--method", "serve", "--framework", "vllm", "--quant", "awq", "--model",
                                      "qwen2.5-0.5b", "--ctx", "4096", "--machine", "rtx-3090", "--json"});
        QCOMPARE(v.code, 0);
        const auto vj = nlohmann::json::parse(v.out);
        QCOMPARE(vj["weight_format"]["name"].get<std::string>(), std::string("awq"));
        QCOMPARE(vj["machines"][0]["frozen_weights_bytes"].get<std::int64_t>(), planned_weights(Quantization::Awq));
        // A machine whose framework loads no AWQ (a Mac: mlx-lm) does not run it, and says why.
        const auto mac = test::run_cli({"plan", "--method", "serve", "--quant", "awq", "--model", "qwen2.5-0.5b", "--machine",
                                        "m3-max-64gb", "--json"});
        QCOMPARE(mac.code, 0);
        const auto mj = nlohmann::json::parse(mac.out)["machines"][0];
        QCOMPARE(mj["verdict"].get<std::string>(), std::string("no"));
        QVERIFY(mj.dump().find("does not load AWQ") != std::string::npos);
    }
    // Each refusal is exit 2 with a sentence that says what to do instead.
    void refusals() {
        const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
            {{"plan", "--method", "full", "--quant", "awq"}, "use --method serve"},
            {{"plan", "--method", "qlora", "--quant", "gptq"}, "QLoRA takes nf4"},
            {{"plan", "--method", "lora", "--quant", "fp8"}, "use --method serve"},
            {{"plan", "--method", "serve", "--quant", "awq", "--ctx", "4096", "--kv-type", "q8_0"}, "llama.cpp loads GGUF"},
            {{"plan", "--method", "serve", "--quant", "awq", "--framework", "mlx-lm"}, "does not load AWQ"},
            {{"plan", "--method", "serve", "--quant", "awq", "--group-size", "0"}, "--group-size"},
            {{"plan", "--method", "serve", "--quant", "awq", "--group-size", "-1"}, "--group-size"},
            {{"plan", "--method", "serve", "--quant", "nf4", "--group-size", "64"}, "AWQ's and GPTQ's"},
            {{"plan", "--method", "serve", "--framework", "vllm", "--quant", "nf4"}, "pre-quantized checkpoints"},
            {{"plan", "--method", "serve", "--framework", "vllm", "--quant", "fp8", "--group-size", "64"}, "AWQ's and GPTQ's"},
            {{"plan", "--method", "serve", "--quant", "awq4"}, "expected one of"}};
        for (const auto& [args, says] : cases) {
            const auto r = test::run_cli(args);
            QVERIFY2(r.code == 2 && r.err.find(says) != std::string::npos, qPrintable(QString::fromStdString(r.err)));
        }
    }
    // A plan file keeps the format and its group size; a group size the format cannot have is refused.
    void planFileRoundTrip() {
        TrainingSetup s;
        s.method = Method::Serve;
        s.quantization = Quantization::Gptq;
        s.quant_group_size = 64;
        const TrainingSetup back = TrainingSetup::from_json(s.to_json());
        QCOMPARE(back.quantization, Quantization::Gptq);
        QCOMPARE(back.quant_group_size, std::int64_t(64));
        // Other formats write no group size: plans written before it read back as they were.
        s.quantization = Quantization::Nf4;
        QVERIFY(!s.to_json().contains("quant_group_size"));
        nlohmann::json bad = {{"method", "serve"}, {"quantization", "awq"}, {"quant_group_size", 0}};
        const Architecture a = test::library().model("qwen2.5-0.5b").arch;
        QVERIFY_THROWS_EXCEPTION(InputError, TrainingSetup::from_json(bad).validate(a));
        bad["quant_group_size"] = -1;   // GPTQ's per-column form is not AWQ's
        QVERIFY_THROWS_EXCEPTION(InputError, TrainingSetup::from_json(bad).validate(a));
        bad["quantization"] = "gptq";
        TrainingSetup::from_json(bad).validate(a);
    }
    // A profile's quantization.checkpoints must name checkpoint formats.
    void profileListsCheckpointFormats() {
        QVERIFY(test::library().framework("hf-transformers").traits.loads_checkpoint("gptq-int8"));
        QVERIFY(!test::library().framework("mlx-lm").traits.loads_checkpoint("awq"));
        nlohmann::json bad = {{"quantization", {{"checkpoints", {"awq", "nf4"}}}}};
        QVERIFY_THROWS_EXCEPTION(ProfileError, parse_framework_behaviour_flags(bad, "bad.json"));
        bad["quantization"]["checkpoints"] = "awq";
        QVERIFY_THROWS_EXCEPTION(ProfileError, parse_framework_behaviour_flags(bad, "bad.json"));
    }
};

QTEST_GUILESS_MAIN(QuantFormatsTest)
#include "test_quant_formats.moc"
