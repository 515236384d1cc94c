// In-process checks of the trainer's building blocks: LoRA / NF4 / loss gradients against
// finite differences, the NF4 error bound and byte layout, checkpointing, safetensors round
// trips and weight validation, and the counting allocator.
#include <QtTest>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <filesystem>
#include <fstream>

#include "memory/memory.hpp"
#include "model/model.hpp"
#include "run/precision_choice.hpp"
#include "model/weights_io.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/nf4.hpp"

using namespace wingspan;
using namespace wingspan::train;
namespace fs = std::filesystem;

namespace {

// Central finite difference of f with respect to every element of t (double precision).
at::Tensor numeric_grad(const std::function<double()>& f, at::Tensor t, double eps = 1e-6) {
    at::NoGradGuard no_grad;
    at::Tensor g = at::zeros_like(t);
    auto flat = t.view({-1});
    auto gf = g.view({-1});
    for (std::int64_t i = 0; i < flat.numel(); ++i) {
        const double old = flat[i].item<double>();
        flat[i].fill_(old + eps);
        const double up = f();
        flat[i].fill_(old - eps);
        const double down = f();
        flat[i].fill_(old);
        gf[i].fill_((up - down) / (2 * eps));
    }
    return g;
}

double max_abs(const at::Tensor& t) { return t.abs().max().item<double>(); }

// A frozen double linear [out, in] (with a bias where asked) and a rank-r adapter scaled by s.
Linear adapted_linear(std::int64_t in, std::int64_t out, std::int64_t rank, double s, bool bias) {
    Linear l;
    l.in = in;
    l.out = out;
    l.compute = at::kDouble;
    l.weight = at::randn({out, in}, at::kDouble);
    if (bias) l.bias = at::randn({out}, at::kDouble);
    l.lora_a = at::randn({rank, in}, at::kDouble).requires_grad_(true);
    l.lora_b = at::randn({out, rank}, at::kDouble).requires_grad_(true);
    l.lora_scaling = s;
    return l;
}

// The gradients of sum(l(x) · w) for x and the adapter's A and B (left in their .grad()) within
// 1e-6 of central finite differences.
bool adapter_gradients_match(const Linear& l, at::Tensor& x, const at::Tensor& w) {
    auto loss = [&] { return (l.forward(x) * w).sum(); };
    torch::autograd::backward({loss()});
    auto f = [&] { return loss().item<double>(); };
    return max_abs(x.grad() - numeric_grad(f, x.detach())) < 1e-6 &&
           max_abs(l.lora_a.grad() - numeric_grad(f, l.lora_a.detach())) < 1e-6 &&
           max_abs(l.lora_b.grad() - numeric_grad(f, l.lora_b.detach())) < 1e-6;
}

fs::path temp_dir(const char* name) {
    fs::path d = fs::temp_directory_path() / ("wingspan-trainer-test-" + std::to_string(::getpid())) / name;
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

nlohmann::json tiny_config() {
    return {{"model_type", "llama"}, {"hidden_size", 16},       {"intermediate_size", 24},
            {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
            {"vocab_size", 32},      {"max_position_embeddings", 64}, {"tie_word_embeddings", false},
            {"rms_norm_eps", 1e-6}};
}

}  // namespace

class TrainerUnitsTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // --precision auto's rule for the devices this machine cannot show (the CPU's is checked
    // through the binary in test_trainer_device): GPUs without bf16 take fp16-mixed.
    void autoPrecisionRule() {
        using namespace wingspan::train;
        QCOMPARE(auto_precision(DeviceKind::Cuda, true, "A100").precision, Precision::Bf16Mixed);
        QCOMPARE(auto_precision(DeviceKind::Cuda, false, "T4").precision, Precision::Fp16Mixed);
        QCOMPARE(auto_precision(DeviceKind::Mps, true, "M3").precision, Precision::Bf16Mixed);
        QCOMPARE(auto_precision(DeviceKind::Mps, false, "M1").precision, Precision::Fp32);
        QCOMPARE(auto_precision(DeviceKind::Cpu, false, "laptop").precision, Precision::Fp32);
        QVERIFY(auto_precision(DeviceKind::Cuda, false, "T4").automatic);
        // Fits: only an automatic fp32 moves, only to a bf16-mixed that fits.
        const PrecisionChoice fp32 = auto_precision(DeviceKind::Cpu, false, "laptop");
        QCOMPARE(fit_precision(fp32, {100, 60, 80, "process", "RAM"}).precision, Precision::Bf16Mixed);
        QCOMPARE(fit_precision(fp32, {100, 90, 80, "process", "RAM"}).precision, Precision::Fp32);
        QCOMPARE(fit_precision(fp32, {70, 60, 80, "process", "RAM"}).precision, Precision::Fp32);
        QCOMPARE(fit_precision(asked_precision(Precision::Fp32), {100, 60, 80, "process", "RAM"}).precision,
                 Precision::Fp32);
    }
    void initTestCase() {
        mem::install();
        at::manual_seed(1234);
    }

    void loraLinearMatchesFiniteDifferences() {
        Linear l = adapted_linear(5, 4, 3, 2.0, /*bias=*/true);
        at::Tensor x = at::randn({2, 3, 5}, at::kDouble).requires_grad_(true);
        at::Tensor w = at::randn({2, 3, 4}, at::kDouble);   // loss = sum(w * y)
        QVERIFY(adapter_gradients_match(l, x, w));
        // The base weight stays frozen.
        QVERIFY(!l.weight.grad().defined());
    }

    // Without a bias (and dropout) an adapted frozen linear is one node (LoraLinearFn): the same
    // gradients by finite differences, and in fp32 and bf16 the same values as the three products
    // composed (the adapter's sum taken in fp32 inside the GEMM, so bf16 within a rounding).
    void loraLinearAsOneNodeMatchesFiniteDifferencesAndTheComposition() {
        Linear l = adapted_linear(37, 29, 4, 1.5, /*bias=*/false);
        at::Tensor x = at::randn({2, 3, 37}, at::kDouble).requires_grad_(true);
        const at::Tensor w = at::randn({2, 3, 29}, at::kDouble);
        QVERIFY(adapter_gradients_match(l, x, w));
        for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
            Linear m = l;
            m.compute = dt;
            m.weight = l.weight.to(dt);
            m.lora_a = l.lora_a.detach().to(dt).requires_grad_(true);
            m.lora_b = l.lora_b.detach().to(dt).requires_grad_(true);
            at::Tensor xd = x.detach().to(dt).requires_grad_(true);
            const at::Tensor y = m.forward(xd);
            torch::autograd::backward({(y.to(at::kDouble) * w).sum()});
            // The composition in double from the same (rounded) inputs.
            at::Tensor xr = xd.detach().to(at::kDouble).requires_grad_(true);
            at::Tensor ar = m.lora_a.detach().to(at::kDouble).requires_grad_(true);
            at::Tensor br = m.lora_b.detach().to(at::kDouble).requires_grad_(true);
            const at::Tensor yr = at::matmul(xr, m.weight.to(at::kDouble).t()) +
                                  at::matmul(at::matmul(xr, ar.t()) * l.lora_scaling, br.t());
            torch::autograd::backward({(yr * w).sum()});
            const double tol = dt == at::kFloat ? 1e-5 : 3e-2;
            auto rel = [](const at::Tensor& a, const at::Tensor& b) {
                return max_abs(a.to(at::kDouble) - b) / std::max(1e-30, b.abs().max().item<double>());
            };
            QVERIFY2(rel(y, yr) < tol, qPrintable(QString::number(rel(y, yr))));
            QVERIFY2(rel(xd.grad(), xr.grad()) < tol, qPrintable(QString::number(rel(xd.grad(), xr.grad()))));
            QVERIFY2(rel(m.lora_a.grad(), ar.grad()) < tol, qPrintable(QString::number(rel(m.lora_a.grad(), ar.grad()))));
            QVERIFY2(rel(m.lora_b.grad(), br.grad()) < tol, qPrintable(QString::number(rel(m.lora_b.grad(), br.grad()))));
            QCOMPARE(m.lora_a.grad().sizes(), m.lora_a.sizes());
            QVERIFY(m.lora_b.grad().is_contiguous());
        }
    }

    void nf4LinearMatchesFiniteDifferences() {
        Linear l;
        l.in = 70;    // not a multiple of the block size: a partial last block
        l.out = 3;
        l.compute = at::kDouble;
        l.qweight = Nf4Weight::quantize(at::randn({3, 70}));
        l.lora_a = at::randn({2, 70}, at::kDouble).requires_grad_(true);
        l.lora_b = at::randn({3, 2}, at::kDouble).requires_grad_(true);
        l.lora_scaling = 0.5;
        at::Tensor x = at::randn({4, 70}, at::kDouble).requires_grad_(true);
        at::Tensor w = at::randn({4, 3}, at::kDouble);
        auto loss = [&] { return (l.forward(x) * w).sum(); };
        torch::autograd::backward({loss()});
        auto f = [&] { return loss().item<double>(); };
        QVERIFY(max_abs(x.grad() - numeric_grad(f, x.detach())) < 1e-6);
        QVERIFY(max_abs(l.lora_a.grad() - numeric_grad(f, l.lora_a.detach())) < 1e-6);
        QVERIFY(max_abs(l.lora_b.grad() - numeric_grad(f, l.lora_b.detach())) < 1e-6);
        // And the forward equals a dense layer with the dequantized weight.
        at::NoGradGuard ng;
        at::Tensor dense = at::matmul(x, l.qweight.dequantize(at::kDouble).t());
        at::Tensor q = nf4_linear(x, l.qweight, at::kDouble);
        QVERIFY(max_abs(dense - q) < 1e-12);
    }

    void nf4StaysWithinTheBlockErrorBound() {
        // Normal weights, plus outliers and an all-zero block.
        at::Tensor w = at::randn({37, 129}) * 0.05;
        w.view({-1})[100].fill_(3.0);
        w.view({-1})[2000].fill_(-1.5);
        w.view({-1}).narrow(0, 64 * 10, 64).zero_();
        const Nf4Weight q = Nf4Weight::quantize(w);
        const at::Tensor d = q.dequantize(at::kFloat);
        QCOMPARE(d.sizes().vec(), w.sizes().vec());
        // Largest half-gap between neighbouring NF4 levels.
        double half_gap = 0;
        for (size_t i = 0; i + 1 < kNf4Levels.size(); ++i)
            half_gap = std::max(half_gap, 0.5 * (kNf4Levels[i + 1] - kNf4Levels[i]));
        const std::int64_t n = w.numel(), blocks = (n + 63) / 64;
        at::Tensor flat = w.view({-1}), dflat = d.view({-1});
        at::Tensor am = q.absmax();
        for (std::int64_t b = 0; b < blocks; ++b) {
            const std::int64_t len = std::min<std::int64_t>(64, n - b * 64);
            at::Tensor wb = flat.narrow(0, b * 64, len), db = dflat.narrow(0, b * 64, len);
            const double true_absmax = wb.abs().max().item<double>();
            const double stored = am[b].item<double>();
            // Rounding to the nearest level with the stored (double-quantized) absmax, plus
            // clipping where the stored absmax came out smaller than the true one.
            const double bound = half_gap * std::max(true_absmax, stored) + std::max(0.0, true_absmax - stored) + 1e-6;
            const double err = max_abs(wb - db);
            QVERIFY2(err <= bound, qPrintable(QString("block %1: error %2 > bound %3").arg(b).arg(err).arg(bound)));
        }
        // The zero block comes back as zeros.
        QCOMPARE(max_abs(dflat.narrow(0, 640, 64)), 0.0);
        // Exact planner layout: packed codes and double-quantized constants.
        const QuantLayout layout = nf4_layout(n, true);
        QCOMPARE(q.data_bytes(), layout.packed_bytes);
        QCOMPARE(q.constant_bytes(), layout.constant_bytes);
        // Quantizing is deterministic: same bytes twice.
        const Nf4Weight q2 = Nf4Weight::quantize(w);
        QVERIFY(at::equal(q.codes, q2.codes) && at::equal(q.block_codes, q2.block_codes));
    }

    void lmHeadLossMatchesCrossEntropyAndFiniteDifferences() {
        at::Tensor h = at::randn({6, 5}, at::kDouble).requires_grad_(true);
        at::Tensor W = at::randn({7, 5}, at::kDouble).requires_grad_(true);
        at::Tensor labels = at::tensor(std::vector<std::int64_t>{1, -100, 6, 0, -100, 3}, at::kLong);
        at::Tensor loss = lm_head_loss(h, W, labels);
        const at::Tensor ref = at::cross_entropy_loss(at::matmul(h, W.t()), labels, {}, at::Reduction::Mean, -100);
        QVERIFY(std::abs(loss.item<double>() - ref.item<double>()) < 1e-12);
        torch::autograd::backward({loss});
        auto f = [&] { return lm_head_loss(h, W, labels).item<double>(); };
        QVERIFY(max_abs(h.grad() - numeric_grad(f, h.detach())) < 1e-7);
        QVERIFY(max_abs(W.grad() - numeric_grad(f, W.detach())) < 1e-7);
    }

    // Gemma 2's soft-capped head through the in-place loss: the loss and both gradients against
    // plain autograd of cap · tanh(h Wᵀ / cap) and cross-entropy, and against finite differences.
    void lmHeadLossWithSoftCapMatchesAutograd() {
        at::Tensor h = at::randn({6, 5}, at::kDouble).mul_(3).requires_grad_(true);
        at::Tensor W = at::randn({7, 5}, at::kDouble).requires_grad_(true);
        at::Tensor labels = at::tensor(std::vector<std::int64_t>{1, -100, 6, 0, -100, 3}, at::kLong);
        const double cap = 4.0;   // small, so the cap bends most logits
        at::Tensor loss = lm_head_loss(h, W, labels, nullptr, cap);
        at::Tensor hr = h.detach().clone().requires_grad_(true), Wr = W.detach().clone().requires_grad_(true);
        const at::Tensor ref = at::cross_entropy_loss(at::tanh(at::matmul(hr, Wr.t()) / cap) * cap, labels, {},
                                                      at::Reduction::Mean, -100);
        QVERIFY(std::abs(loss.item<double>() - ref.item<double>()) < 1e-12);
        torch::autograd::backward({loss});
        torch::autograd::backward({ref});
        QVERIFY(max_abs(h.grad() - hr.grad()) < 1e-12);
        QVERIFY(max_abs(W.grad() - Wr.grad()) < 1e-12);
        auto f = [&] { return lm_head_loss(h, W, labels, nullptr, cap).item<double>(); };
        QVERIFY(max_abs(h.grad() - numeric_grad(f, h.detach())) < 1e-7);
    }

    // fp32 with a cap so wide that most probabilities underflow to 0: the gradient stays finite and
    // matches fp64 autograd (an underflowed p has no log; its entry is 0 off the label).
    void softCappedGradientSurvivesUnderflow() {
        at::Tensor h64 = at::randn({4, 8}, at::kDouble).mul_(40);
        at::Tensor W64 = at::randn({50, 8}, at::kDouble);
        at::Tensor labels = at::tensor(std::vector<std::int64_t>{3, 49, 0, 17}, at::kLong);
        const double cap = 200.0;
        at::Tensor h = h64.to(at::kFloat).requires_grad_(true);
        at::Tensor W = W64.to(at::kFloat).requires_grad_(true);
        at::Tensor loss = lm_head_loss(h, W, labels, nullptr, cap);
        torch::autograd::backward({loss});
        at::Tensor hr = h64.clone().requires_grad_(true);
        const at::Tensor ref = at::cross_entropy_loss(at::tanh(at::matmul(hr, W64.t()) / cap) * cap, labels, {},
                                                      at::Reduction::Mean, -100);
        torch::autograd::backward({ref});
        const at::Tensor p = at::softmax(at::tanh(at::matmul(h64, W64.t()) / cap) * cap, -1).to(at::kFloat);
        QVERIFY2(p.eq(0).sum().item<std::int64_t>() > 0, "the case must underflow some fp32 probabilities");
        QVERIFY(h.grad().isfinite().all().item<bool>());
        const double scale = max_abs(hr.grad());
        QVERIFY2(max_abs(h.grad().to(at::kDouble) - hr.grad()) < 1e-3 * scale,
                 qPrintable(QString::number(max_abs(h.grad().to(at::kDouble) - hr.grad()) / scale)));
    }

    void checkpointingGivesTheSameLossAndGradients() {
        for (Method method : {Method::Full, Method::Lora}) {
            ModelOptions o;
            o.method = method;
            o.rank = 4;
            o.alpha = 8;
            o.targets = {LinearRole::Q, LinearRole::V, LinearRole::Down};
            Model m(ModelConfig::from_hf(tiny_config()), o);
            m.build({}, 7);
            if (method == Method::Lora) {   // B starts at zero; move it so every path matters
                at::NoGradGuard ng;
                for (auto& t : m.trainable()) t.tensor.normal_(0, 0.1);
            }
            at::Tensor ids = at::randint(0, 32, {2, 9}, at::kLong);
            at::Tensor labels = at::randint(0, 32, {2, 9}, at::kLong);
            std::vector<at::Tensor> grads[2];
            double losses[2];
            for (int ckpt = 0; ckpt < 2; ++ckpt) {
                at::Tensor loss = m.loss(ids, labels, ckpt == 1);
                losses[ckpt] = loss.item<double>();
                torch::autograd::backward({loss});
                for (auto& t : m.trainable()) {
                    grads[ckpt].push_back(t.tensor.grad().clone());
                    t.tensor.mutable_grad() = at::Tensor();
                }
            }
            QVERIFY(std::abs(losses[0] - losses[1]) < 1e-6);
            QCOMPARE(grads[0].size(), grads[1].size());
            for (size_t i = 0; i < grads[0].size(); ++i) QVERIFY(max_abs(grads[0][i] - grads[1][i]) < 1e-5);
        }
    }

    void gqaAttentionMatchesRepeatedKeys() {
        // The grouped (no-copy) eager path equals attention with repeated K/V heads.
        ModelOptions o;
        o.method = Method::Full;
        Model eager(ModelConfig::from_hf(tiny_config()), o);
        eager.build({}, 3);
        o.sdpa = true;   // repeats K/V and calls at::_scaled_dot_product_attention
        Model sdpa(ModelConfig::from_hf(tiny_config()), o);
        sdpa.build({}, 3);
        at::Tensor ids = at::randint(0, 32, {2, 11}, at::kLong);
        at::Tensor labels = at::randint(0, 32, {2, 11}, at::kLong);
        at::NoGradGuard ng;
        QVERIFY(std::abs(eager.loss(ids, labels, false).item<double>() - sdpa.loss(ids, labels, false).item<double>()) < 1e-5);
    }

    void kvCacheMatchesFullForward() {
        ModelOptions o;
        o.method = Method::Lora;
        o.rank = 2;
        o.targets = {LinearRole::Q, LinearRole::K, LinearRole::V};
        Model m(ModelConfig::from_hf(tiny_config()), o);
        m.build({}, 5);
        at::NoGradGuard ng;
        for (auto& t : m.trainable()) t.tensor.normal_(0, 0.1);
        at::Tensor ids = at::randint(0, 32, {1, 7}, at::kLong);
        at::Tensor full = m.hidden_states(ids, false);
        Model::KvCache cache;
        at::Tensor first = m.hidden_states(ids.narrow(1, 0, 4), false, &cache);
        QVERIFY(max_abs(first - full.narrow(1, 0, 4)) < 1e-5);
        for (int t = 4; t < 7; ++t) {
            at::Tensor step = m.hidden_states(ids.narrow(1, t, 1), false, &cache);
            QVERIFY(max_abs(step.select(1, 0) - full.select(1, t)) < 1e-5);
        }
        QCOMPARE(cache.length, std::int64_t(7));
    }

    void safetensorsRoundTrip() {
        const fs::path dir = temp_dir("st");
        std::vector<std::pair<std::string, at::Tensor>> t = {
            {"a.f32", at::randn({3, 4})},
            {"b.bf16", at::randn({5}).to(at::kBFloat16)},
            {"c.f16", at::randn({2, 2, 2}).to(at::kHalf)},
            {"d.u8", at::randint(0, 255, {7}, at::kByte)},
        };
        save_safetensors(dir / "x.safetensors", t, {{"format", "pt"}});
        // Header readable by core's parser, in the order written, 8-byte aligned.
        const auto h = safetensors::read_header(dir / "x.safetensors");
        QCOMPARE(h.tensors.size(), size_t(4));
        QCOMPARE(h.tensors[1].name, std::string("b.bf16"));
        QCOMPARE(h.tensors[1].dtype, std::string("BF16"));
        QCOMPARE(h.header_bytes % 8, std::uint64_t(0));
        QCOMPARE(h.metadata.at("format"), std::string("pt"));
        auto back = load_safetensors(dir / "x.safetensors");
        for (const auto& [name, tensor] : t) {
            QVERIFY(back.count(name));
            QCOMPARE(back[name].scalar_type(), tensor.scalar_type());
            QVERIFY(at::equal(back[name], tensor));
        }
        // No temporary file is left behind.
        int files = 0;
        for (auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
        QCOMPARE(files, 1);
    }

    void shardedModelFolderLoadsAndValidates() {
        const fs::path dir = temp_dir("sharded");
        const ModelConfig cfg = ModelConfig::from_hf(tiny_config());
        const auto expected = expected_tensors(cfg);
        std::vector<std::pair<std::string, at::Tensor>> s1, s2;
        nlohmann::json map;
        for (size_t i = 0; i < expected.size(); ++i) {
            at::Tensor t = at::randn(expected[i].second).to(at::kBFloat16);
            (i % 2 ? s1 : s2).push_back({expected[i].first, t});
            map[expected[i].first] = i % 2 ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
        }
        save_safetensors(dir / "model-00001-of-00002.safetensors", s1);
        save_safetensors(dir / "model-00002-of-00002.safetensors", s2);
        std::ofstream(dir / "model.safetensors.index.json") << nlohmann::json{{"weight_map", map}}.dump();
        auto r = WeightReader::open_dir(dir);
        QVERIFY(r.has_value());
        std::vector<std::string> ignored;
        check_weights(*r, expected, ignored);   // complete: no throw
        QVERIFY(at::equal(r->read(s1[0].first), s1[0].second));

        // The model built from them holds exactly those weights (bf16 -> fp32 storage).
        ModelOptions o;
        o.method = Method::Full;
        Model m(cfg, o);
        m.build([&](const std::string& n, const std::vector<std::int64_t>&) { return r->read(n); }, 1);
        for (auto& nt : m.tensors())
            QVERIFY2(at::equal(nt.tensor, r->read(nt.name).to(at::kFloat)), nt.name.c_str());

        // Missing, misshapen and extra tensors are errors naming the tensor.
        auto expect_error = [&](std::vector<std::pair<std::string, std::vector<std::int64_t>>> exp,
                                const std::string& needle) {
            try {
                std::vector<std::string> ign;
                check_weights(*r, exp, ign);
                QFAIL("no error");
            } catch (const InputError& e) {
                QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
            }
        };
        auto more = expected;
        more.push_back({"model.layers.9.mlp.up_proj.weight", {4, 4}});
        expect_error(more, "model.layers.9.mlp.up_proj.weight");
        auto fewer = expected;
        const std::string dropped = fewer[2].first;
        fewer.erase(fewer.begin() + 2);
        expect_error(fewer, dropped);
        auto wrong = expected;
        wrong[1].second = {99};
        expect_error(wrong, wrong[1].first);
    }

    void countingAllocatorIsExactAndAttributes() {
        const std::int64_t before = mem::allocated();
        at::Tensor a;
        {
            mem::Scope s(Component::OptimizerState);
            a = at::empty({1000}, at::kFloat);
        }
        QCOMPARE(mem::allocated() - before, std::int64_t(4000));
        Component c;
        std::int64_t bytes = 0;
        QVERIFY(mem::lookup(a.data_ptr(), c, bytes));
        QCOMPARE(c, Component::OptimizerState);
        QCOMPARE(bytes, std::int64_t(4000));
        const auto snap = mem::snapshot();
        retag(a, Component::MasterWeights);
        const auto snap2 = mem::snapshot();
        QCOMPARE(snap2.components.at(Component::MasterWeights) - snap.components.at(Component::MasterWeights),
                 std::int64_t(4000));
        QCOMPARE(snap.components.at(Component::OptimizerState) - snap2.components.at(Component::OptimizerState),
                 std::int64_t(4000));
        QVERIFY(mem::peak() >= mem::allocated());
        a.reset();
        QCOMPARE(mem::allocated(), before);
    }

    void memoryLimitStopsTheAllocation() {
        mem::clear_oom();
        mem::set_limit(mem::allocated() + 1'000'000);
        bool threw = false;
        try {
            mem::Scope s(Component::LogitsLoss);
            at::Tensor big = at::empty({1'000'000}, at::kFloat);
        } catch (const c10::Error&) {
            threw = true;
        }
        mem::set_limit(0);
        QVERIFY(threw);
        const auto oom = mem::last_oom();
        QVERIFY(oom.hit);
        QCOMPARE(oom.component, Component::LogitsLoss);
        QCOMPARE(oom.bytes, std::int64_t(4'000'000));
        QVERIFY(oom.available <= 1'000'000);
        mem::clear_oom();
    }

    void cleanupTestCase() {
        std::error_code ec;
        fs::remove_all(fs::temp_directory_path() / ("wingspan-trainer-test-" + std::to_string(::getpid())), ec);
    }
};

QTEST_GUILESS_MAIN(TrainerUnitsTest)
#include "test_units.moc"
