// Architectures beyond Llama: a forward pass on a tiny config against golden logits computed
// by an independent float64 reference (fixtures/architectures/make_golden_logits.py, plain
// torch ops after the Hugging Face modelling code), with weights that are a formula of each
// tensor's name on both sides. For Gemma, Gemma 2 and Phi-3 the reference also lists the
// tensors by their Hugging Face names: the test writes them to a model.safetensors folder and
// loads it the way a run does (WeightReader, check_weights), so a wrong name or shape fails too.
#include <QtTest>

#include <ATen/core/grad_mode.h>   // at::NoGradGuard (torch 2.x no longer brings it in through the others)

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/model.hpp"
#include "model/weights_io.hpp"
#include "wingspan/architecture.hpp"
#include "wingspan/errors.hpp"

using namespace wingspan;
using namespace wingspan::train;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// make_golden_logits.py's weight_value, in float32.
at::Tensor weight_value(const std::string& name, const std::vector<std::int64_t>& shape) {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    int seed = 0;
    for (unsigned char c : name) seed += c;
    seed %= 1000;
    const bool norm = name.find("norm") != std::string::npos;
    std::vector<float> v(static_cast<size_t>(n));
    for (std::int64_t j = 0; j < n; ++j)
        v[static_cast<size_t>(j)] = static_cast<float>(norm ? 1.0 + 0.1 * std::sin(0.5 * j + 0.01 * seed)
                                                            : 0.08 * std::sin(0.613 * j + 0.117 * seed));
    return at::tensor(v, at::kFloat).reshape(shape);
}

json golden(const std::string& arch) {
    std::ifstream in(std::string(WINGSPAN_ARCH_FIXTURES) + "/golden_logits.json");
    return json::parse(in).at(arch);
}

using TensorList = std::vector<std::pair<std::string, std::vector<std::int64_t>>>;

// The reference's tensors written as a Hugging Face folder (config.json, model.safetensors).
void write_folder(const fs::path& dir, const json& ref) {
    fs::create_directories(dir);
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (const auto& t : ref.at("tensors")) {
        const auto name = t.at(0).get<std::string>();
        tensors.push_back({name, weight_value(name, t.at(1).get<std::vector<std::int64_t>>())});
    }
    save_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
    std::ofstream(dir / "config.json") << ref.at("config").dump(2);
}

std::int64_t elements(const TensorList& list) {
    std::int64_t n = 0;
    for (const auto& [name, shape] : list) {
        std::int64_t e = 1;
        for (auto d : shape) e *= d;
        n += e;
    }
    return n;
}

// Largest |a - b| over two equally shaped tensors.
double worst_difference(const at::Tensor& a, const at::Tensor& b) {
    return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

}  // namespace

class ArchitecturesTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void goldenLogits_data() {
        QTest::addColumn<QString>("arch");
        QTest::newRow("qwen3") << "qwen3";     // q/k RMSNorm per head before RoPE; head_dim 16 != 32/4
        QTest::newRow("gemma") << "gemma";     // (1 + w) norms, scaled embeddings, GeGLU, one KV head
        QTest::newRow("gemma2") << "gemma2";   // + sandwich norms, soft-caps, sliding window, query_pre_attn_scalar
        QTest::newRow("phi3") << "phi3";       // fused qkv_proj / gate_up_proj, untied head, sliding window
    }

    void goldenLogits() {
        QFETCH(QString, arch);
        const json ref = golden(arch.toStdString());
        const ModelConfig cfg = ModelConfig::from_hf(ref.at("config"));
        ModelOptions mo;
        mo.method = Method::Full;
        Model model(cfg, mo);
        std::set<std::string> asked;
        QTemporaryDir tmp;
        if (ref.contains("tensors")) {
            // The trainer expects exactly the reference's Hugging Face names and shapes...
            TensorList want;
            for (const auto& t : ref.at("tensors")) want.push_back({t.at(0), t.at(1).get<std::vector<std::int64_t>>()});
            TensorList have = expected_tensors(cfg);
            std::sort(want.begin(), want.end());
            std::sort(have.begin(), have.end());
            QCOMPARE(have, want);
            // ... and the planner (core) counts the same parameters.
            QCOMPARE(Architecture::from_hf_config(ref.at("config")).parameter_count(), elements(want));
            QCOMPARE(model.base_parameter_count(), elements(want));
            // Loaded from a folder as a run loads it.
            const fs::path dir = fs::path(tmp.path().toStdString()) / "model";
            write_folder(dir, ref);
            auto reader = WeightReader::open_dir(dir);
            QVERIFY(reader.has_value());
            std::vector<std::string> ignored;
            check_weights(*reader, expected_tensors(cfg), ignored);
            QVERIFY(ignored.empty());
            model.build([&](const std::string& name, const std::vector<std::int64_t>&) {
                asked.insert(name);
                return reader->read(name);
            }, 1);
        } else {
            model.build([&](const std::string& name, const std::vector<std::int64_t>& shape) {
                asked.insert(name);
                return weight_value(name, shape);
            }, 1);
            QVERIFY(asked.count("model.layers.1.self_attn.k_norm.weight"));
        }
        // Every tensor the architecture has was asked for.
        QCOMPARE(asked.size(), expected_tensors(cfg).size());

        at::NoGradGuard no_grad;
        const auto ids = ref.at("ids").get<std::vector<std::int64_t>>();
        const at::Tensor h = model.hidden_states(at::tensor(ids, at::kLong).unsqueeze(0), false);
        const at::Tensor logits = model.logits(h.squeeze(0));
        const auto want = ref.at("logits").get<std::vector<std::vector<double>>>();
        QCOMPARE(logits.size(0), static_cast<std::int64_t>(want.size()));
        double worst = 0, scale = 0;
        for (size_t t = 0; t < want.size(); ++t)
            for (size_t v = 0; v < want[t].size(); ++v) {
                worst = std::max(worst, std::abs(logits[static_cast<long>(t)][static_cast<long>(v)].item<double>() - want[t][v]));
                scale = std::max(scale, std::abs(want[t][v]));
            }
        qInfo("%s: largest |logit - golden| %.3g (logits up to %.3g)", arch.toUtf8().constData(), worst, scale);
        QVERIFY(scale > 0.1);
        // float32 against float64: a few ulps of float32 (1.2e-7 relative) accumulated over
        // the layers stays far below 1e-5, while leaving out any one feature of these configs
        // moves the logits by 1.4e-2 or more (the script prints each ablation's effect).
        QVERIFY(worst < 1e-5);

        // With the KV cache (generation), one token at a time: the same logits, so sliding
        // windows and soft-caps hold for positions after the cache too.
        Model::KvCache cache;
        std::vector<at::Tensor> rows;
        const std::int64_t first = 4;
        const std::vector<std::int64_t> head(ids.begin(), ids.begin() + first);
        at::Tensor hc = model.hidden_states(at::tensor(head, at::kLong).unsqueeze(0), false, &cache);
        rows.push_back(model.logits(hc.squeeze(0)));
        for (size_t t = first; t < ids.size(); ++t) {
            hc = model.hidden_states(at::full({1, 1}, ids[t], at::kLong), false, &cache);
            rows.push_back(model.logits(hc.squeeze(0)));
        }
        QVERIFY(worst_difference(at::cat(rows, 0), logits) < 1e-5);
    }

    // 16-bit weights run the same graph (fp16 on this CPU through fp32 emulation of gelu and
    // tanh, which libtorch 1.13 lacks for half): close to the golden logits at 16-bit precision.
    void sixteenBitForward_data() {
        QTest::addColumn<QString>("arch");
        QTest::addColumn<int>("precision");
        for (const char* a : {"gemma", "gemma2", "phi3"}) {
            QTest::newRow((std::string(a) + " bf16").c_str()) << a << int(Precision::Bf16);
            QTest::newRow((std::string(a) + " fp16").c_str()) << a << int(Precision::Fp16Mixed);
        }
    }
    void sixteenBitForward() {
        QFETCH(QString, arch);
        QFETCH(int, precision);
        const json ref = golden(arch.toStdString());
        const ModelConfig cfg = ModelConfig::from_hf(ref.at("config"));
        ModelOptions mo;
        mo.method = Method::Full;
        mo.precision = static_cast<Precision>(precision);
        Model model(cfg, mo);
        model.build([&](const std::string& name, const std::vector<std::int64_t>& shape) { return weight_value(name, shape); }, 1);
        at::NoGradGuard no_grad;
        const auto ids = ref.at("ids").get<std::vector<std::int64_t>>();
        const at::Tensor logits = model.logits(model.hidden_states(at::tensor(ids, at::kLong).unsqueeze(0), false).squeeze(0));
        double worst = 0;
        const auto rows = ref.at("logits").get<std::vector<std::vector<double>>>();
        for (size_t t = 0; t < rows.size(); ++t)
            worst = std::max(worst, worst_difference(logits[static_cast<long>(t)], at::tensor(rows[t], at::kDouble)));
        qInfo("%s: largest |logit - golden| %.3g", QTest::currentDataTag(), worst);
        // bf16 keeps 8 significant bits (relative 2^-8 = 3.9e-3 per rounding), fp16 11 bits;
        // rounding every activation over 2-3 layers of logits up to 0.95 stays under 0.05.
        QVERIFY(std::isfinite(worst));
        QVERIFY(worst < 0.05);
    }

    // Phi-3's LoRA adapts the fused projections, named as PEFT names them.
    void phi3LoraTargetsFusedProjections() {
        const ModelConfig cfg = ModelConfig::from_hf(golden("phi3").at("config"));
        ModelOptions mo;
        mo.method = Method::Lora;
        mo.rank = 4;
        mo.targets = {LinearRole::K, LinearRole::V, LinearRole::Up, LinearRole::Down};
        Model model(cfg, mo);
        model.build({}, 3);
        QCOMPARE(model.target_modules(), (std::vector<std::string>{"qkv_proj", "gate_up_proj", "down_proj"}));
        std::map<std::string, std::vector<std::int64_t>> adapters;
        for (const auto& nt : model.tensors())
            if (nt.component == Component::Adapters) adapters[nt.name] = nt.tensor.sizes().vec();
        QCOMPARE(adapters.size(), size_t(2 * 3 * 2));
        const std::string p = "base_model.model.model.layers.1.";
        QCOMPARE(adapters[p + "self_attn.qkv_proj.lora_A.weight"], (std::vector<std::int64_t>{4, 32}));
        QCOMPARE(adapters[p + "self_attn.qkv_proj.lora_B.weight"], (std::vector<std::int64_t>{64, 4}));   // (4 + 2·2)·8
        QCOMPARE(adapters[p + "mlp.gate_up_proj.lora_B.weight"], (std::vector<std::int64_t>{96, 4}));
        QCOMPARE(model.adapter_parameter_count(), 2 * 4 * ((32 + 64) + (32 + 96) + (48 + 32)));
    }

    // What wingspan-train cannot run faithfully is refused, naming the field.
    void unsupportedVariantsAreRefused_data() {
        QTest::addColumn<QString>("arch");
        QTest::addColumn<QString>("patch");
        QTest::addColumn<QString>("needle");
        QTest::newRow("phi3 longrope") << "phi3" << R"({"rope_scaling": {"type": "longrope", "short_factor": [1], "long_factor": [1]}})" << "longrope";
        QTest::newRow("phi3 su") << "phi3" << R"({"rope_scaling": {"type": "su"}})" << "\"su\"";
        QTest::newRow("phi3 partial rotary") << "phi3" << R"({"partial_rotary_factor": 0.75})" << "partial_rotary_factor";
        QTest::newRow("gemma unknown activation") << "gemma" << R"({"hidden_activation": "relu2"})" << "relu2";
        QTest::newRow("gemma2 layer_types") << "gemma2" << R"({"layer_types": ["full_attention"]})" << "layer_types";
        // The shape is read by core's parser, the planner's: its refusals name the field, and a
        // config the planner reads as a mixture of experts is not trained as a dense model.
        QTest::newRow("experts") << "qwen3" << R"({"num_experts": 4, "num_experts_per_tok": 2})" << "with experts";
        QTest::newRow("kv heads") << "qwen3" << R"({"num_key_value_heads": 3})" << "num_key_value_heads";
        QTest::newRow("fractional size") << "gemma" << R"({"hidden_size": 64.5})" << "hidden_size";
        QTest::newRow("unknown family") << "qwen3" << R"({"model_type": "mamba"})" << "mamba";
    }
    void unsupportedVariantsAreRefused() {
        QFETCH(QString, arch);
        QFETCH(QString, patch);
        QFETCH(QString, needle);
        json config = golden(arch.toStdString()).at("config");
        config.merge_patch(json::parse(patch.toStdString()));
        try {
            (void)ModelConfig::from_hf(config);
            QFAIL("accepted");
        } catch (const InputError& e) {
            QVERIFY2(std::string(e.what()).find(needle.toStdString()) != std::string::npos, e.what());
        }
    }

    // Gemma 2's defaults when the config leaves the fields out (as transformers' Gemma2Config).
    void gemma2Defaults() {
        json config = golden("gemma2").at("config");
        for (const char* k : {"query_pre_attn_scalar", "sliding_window", "attn_logit_softcapping", "final_logit_softcapping",
                              "tie_word_embeddings", "hidden_activation"})
            config.erase(k);
        const ModelConfig c = ModelConfig::from_hf(config);
        QCOMPARE(c.attn_scale, 1.0 / 16.0);
        QCOMPARE(c.sliding_window, std::int64_t(4096));
        QCOMPARE(c.attn_softcap, 50.0);
        QCOMPARE(c.final_softcap, 30.0);
        QVERIFY(c.tied);
        QCOMPARE(c.activation, std::string("gelu_tanh"));
        QCOMPARE(c.sliding_layers, (std::vector<bool>{true, false, true}));
        config["final_logit_softcapping"] = nullptr;   // explicit null: no cap
        QCOMPARE(ModelConfig::from_hf(config).final_softcap, 0.0);
    }
};

QTEST_GUILESS_MAIN(ArchitecturesTest)
#include "test_architectures.moc"
