// Architectures beyond Llama: a forward pass on a tiny config against golden logits computed
// by an independent float64 reference (fixtures/architectures/make_golden_logits.py, plain
// torch ops), with weights that are a formula of each tensor's name on both sides.
#include <QtTest>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model.hpp"

using namespace wingspan;
using namespace wingspan::train;
using nlohmann::json;

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

}  // namespace

class ArchitecturesTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void goldenLogits_data() {
        QTest::addColumn<QString>("arch");
        QTest::newRow("qwen3") << "qwen3";   // q/k RMSNorm per head before RoPE; head_dim 16 != 32/4
    }

    void goldenLogits() {
        QFETCH(QString, arch);
        std::ifstream in(std::string(WINGSPAN_ARCH_FIXTURES) + "/golden_logits.json");
        const json ref = json::parse(in).at(arch.toStdString());
        const ModelConfig cfg = ModelConfig::from_hf(ref.at("config"));
        ModelOptions mo;
        mo.method = Method::Full;
        Model model(cfg, mo);
        std::set<std::string> asked;
        model.build([&](const std::string& name, const std::vector<std::int64_t>& shape) {
            asked.insert(name);
            return weight_value(name, shape);
        }, 1);
        // Every tensor the architecture has was asked for, q_norm/k_norm included.
        QCOMPARE(asked.size(), expected_tensors(cfg).size());
        QVERIFY(asked.count("model.layers.1.self_attn.k_norm.weight"));

        at::NoGradGuard no_grad;
        const auto ids = ref.at("ids").get<std::vector<std::int64_t>>();
        const at::Tensor h = model.hidden_states(at::tensor(ids, at::kLong).unsqueeze(0), false);
        at::Tensor head;
        for (const auto& nt : model.tensors())
            if (nt.name == (cfg.tied ? "model.embed_tokens.weight" : "lm_head.weight")) head = nt.tensor;
        const at::Tensor logits = at::matmul(h.squeeze(0), head.t());
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
        QVERIFY(worst < 1e-4);   // float32 against float64
    }
};

QTEST_GUILESS_MAIN(ArchitecturesTest)
#include "test_architectures.moc"
