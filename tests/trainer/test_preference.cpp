// DPO and ORPO in wingspan-train (issue 31): the per-sequence log-probabilities and both losses
// against finite differences and a hand-computed case, the reference with the adapters off
// against the base model, and real runs: reward accuracy rising on a separable toy set, the full
// fine-tune's reference copy, and bad preference rows refused with their line.
#include <QTemporaryDir>
#include <QtTest>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <fstream>

#include "model/model.hpp"
#include "model/objective_preference.hpp"
#include "trainer_process.hpp"

using namespace wingspan;
using namespace wingspan::train;
using wingspan::protocol::EventType;

namespace {

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

nlohmann::json tiny_config() {
    return {{"model_type", "llama"}, {"hidden_size", 16},       {"intermediate_size", 24},
            {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
            {"vocab_size", 32},      {"max_position_embeddings", 64}, {"tie_word_embeddings", false},
            {"rms_norm_eps", 1e-6}};
}

// Labels of 2 rows × 5 positions: the first two of each row are the prompt (-100).
at::Tensor toy_labels() {
    return at::tensor({-100, -100, 3, 7, 1, -100, -100, 30, 2, -100}, at::kLong);
}

}  // namespace

class PreferenceTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void sequenceLogpsMatchLogSoftmaxAndFiniteDifferences() {
        at::manual_seed(3);
        at::Tensor h = at::randn({10, 6}, at::kDouble).requires_grad_(true);
        at::Tensor W = at::randn({32, 6}, at::kDouble).requires_grad_(true);
        const at::Tensor labels = toy_labels();
        at::Tensor sums = sequence_logps_of_hidden(h, W, labels, 2);
        QCOMPARE(sums.sizes().vec(), (std::vector<std::int64_t>{2}));
        // Against the definition: Σ log_softmax(h Wᵀ)[label] over the scored positions of each row.
        {
            at::NoGradGuard ng;
            at::Tensor ls = at::log_softmax(at::matmul(h, W.t()), -1);
            double want[2] = {0, 0};
            for (int i = 0; i < 10; ++i) {
                const auto l = labels[i].item<std::int64_t>();
                if (l >= 0) want[i / 5] += ls[i][l].item<double>();
            }
            QVERIFY(std::abs(sums[0].item<double>() - want[0]) < 1e-6);
            QVERIFY(std::abs(sums[1].item<double>() - want[1]) < 1e-6);
        }
        // A weighted sum of the rows: its gradient goes through each row's own weight.
        const at::Tensor w = at::tensor({0.7, -1.3}, at::kDouble);
        torch::autograd::backward({(sums.to(at::kDouble) * w).sum()});
        auto f = [&] {
            at::NoGradGuard ng;
            return (sequence_logps_of_hidden(h, W, labels, 2).to(at::kDouble) * w).sum().item<double>();
        };
        QVERIFY(max_abs(h.grad() - numeric_grad(f, h.detach())) < 1e-6);
        QVERIFY(max_abs(W.grad() - numeric_grad(f, W.detach())) < 1e-6);
    }

    void dpoLossIsTheHandComputedCase() {
        // Two pairs, β 0.1: chosen log-ratios [0.5, 0], rejected [-0.5, 0] → logits β·[1, 0].
        at::Tensor policy = at::tensor({-1.0, -2.0, -3.0, -1.0}, at::kDouble).requires_grad_(true);
        const at::Tensor ref = at::tensor({-1.5, -2.0, -2.5, -1.0}, at::kDouble);
        PreferenceLoss pl = dpo_loss(policy, ref, 0.1);
        const double want = 0.5 * (std::log1p(std::exp(-0.1)) + std::log(2.0));
        QVERIFY(std::abs(pl.loss.item<double>() - want) < 1e-12);
        QVERIFY(std::abs(pl.metrics.margin - 0.05) < 1e-12);            // mean of β·[1, 0]
        QVERIFY(std::abs(pl.metrics.accuracy - 0.5) < 1e-12);           // only the first pair's chosen wins
        QVERIFY(std::abs(pl.metrics.chosen_reward - 0.025) < 1e-12);
        // d loss / d π_chosen,0 = -β·σ(-β·1)/2; the other rows by finite differences.
        torch::autograd::backward({pl.loss});
        const double s = 1.0 / (1.0 + std::exp(0.1));
        QVERIFY(std::abs(policy.grad()[0].item<double>() + 0.1 * s / 2) < 1e-12);
        auto f = [&] {
            at::NoGradGuard ng;
            return dpo_loss(policy, ref, 0.1).loss.item<double>();
        };
        QVERIFY(max_abs(policy.grad() - numeric_grad(f, policy.detach())) < 1e-8);
    }

    void orpoLossMatchesFiniteDifferences() {
        at::Tensor policy = at::tensor({-3.0, -8.0, -9.0, -4.0}, at::kDouble).requires_grad_(true);
        const at::Tensor tokens = at::tensor({3.0, 4.0, 2.0, 5.0}, at::kDouble);
        PreferenceLoss pl = orpo_loss(policy, tokens, 0.1);
        // Hand value: NLL of the chosen tokens (11 / 7) − β·mean(logsigmoid(log odds)).
        auto log_odds = [](double c, double r) { return (c - r) - (std::log1p(-std::exp(c)) - std::log1p(-std::exp(r))); };
        auto logsig = [](double x) { return -std::log1p(std::exp(-x)); };
        const double want = 11.0 / 7.0 - 0.1 * 0.5 * (logsig(log_odds(-1.0, -4.5)) + logsig(log_odds(-2.0, -0.8)));
        QVERIFY(std::abs(pl.loss.item<double>() - want) < 1e-12);
        QVERIFY(std::abs(pl.metrics.accuracy - 0.5) < 1e-12);
        torch::autograd::backward({pl.loss});
        auto f = [&] {
            at::NoGradGuard ng;
            return orpo_loss(policy, tokens, 0.1).loss.item<double>();
        };
        QVERIFY(max_abs(policy.grad() - numeric_grad(f, policy.detach())) < 1e-8);
    }

    void referenceWithAdaptersOffIsTheBaseModel() {
        ModelOptions lora;
        lora.method = Method::Lora;
        lora.rank = 4;
        lora.alpha = 8;
        lora.targets = {LinearRole::Q, LinearRole::V, LinearRole::Down};
        Model policy(ModelConfig::from_hf(tiny_config()), lora);
        policy.build({}, 11);
        {   // B starts at zero: move every adapter so the policy differs from its base
            at::NoGradGuard ng;
            for (auto& t : policy.trainable()) t.tensor.normal_(0, 0.2);
        }
        ModelOptions full;
        full.method = Method::Full;
        Model base(ModelConfig::from_hf(tiny_config()), full);
        base.build({}, 11);   // the same seed: the same base weights
        at::manual_seed(5);
        const at::Tensor ids = at::randint(0, 32, {2, 5}, at::kLong);
        const at::Tensor labels = toy_labels().view({2, 5});
        const at::Tensor base_logps = reference_logps(base, ids, labels);
        const at::Tensor with_adapters = reference_logps(policy, ids, labels);
        policy.set_adapters_enabled(false);
        const at::Tensor adapters_off = reference_logps(policy, ids, labels);
        policy.set_adapters_enabled(true);
        QVERIFY2(max_abs(adapters_off - base_logps) == 0.0, "adapters off must be exactly the base model");
        QVERIFY(max_abs(with_adapters - base_logps) > 1e-3);   // the adapters do change the policy
        // The graph's log-probs (the policy's path) equal the reference path's for the same model.
        const at::Tensor graph = sequence_logps(policy, ids, labels, false);
        QVERIFY2(max_abs(graph.detach() - with_adapters) < 1e-4,
                 qPrintable(QString("graph %1 vs no-graph %2").arg(graph[0].item<double>()).arg(with_adapters[0].item<double>())));
    }

    // A separable toy set: the chosen answer is always "yes", the rejected one always "no".
    void dpoRunRaisesRewardAccuracy() {
        QTemporaryDir dir;
        const QString data = dir.filePath("pairs.jsonl");
        {
            std::ofstream out(data.toStdString());
            for (int i = 0; i < 40; ++i)
                out << "{\"prompt\": \"Question " << i << ": is it? \", \"chosen\": \"yes yes\", \"rejected\": \"no no no\"}\n";
        }
        testing::TrainerLaunch launch;
        launch.args = {"--objective", "dpo", "--method", "lora", "--data", data, "--seq", "32", "--batch", "4",
                       "--steps", "12", "--lr", "0.01", "--precision", "fp32", "--eval-fraction", "0.1",
                       "--sample-tokens", "0", "--threads", "2"};
        const testing::TrainerResult r = testing::run_trainer(launch);
        QVERIFY2(r.exit_code == 0, r.err.toUtf8().constData());
        const auto steps = r.all(EventType::Step);
        QCOMPARE(steps.size(), size_t(12));
        auto pref = [](const protocol::Event* e) { return e->body.at("preference"); };
        // Step 1: the adapters start at zero, so the policy is its reference: loss log 2, margin 0.
        QVERIFY(std::abs(steps.front()->number_field("loss") - std::log(2.0)) < 1e-4);
        QVERIFY(std::abs(pref(steps.front()).at("reward_margin").get<double>()) < 1e-4);
        QCOMPARE(pref(steps.front()).at("v").get<int>(), 1);
        const auto& last = pref(steps.back());
        QCOMPARE(last.at("reward_accuracy").get<double>(), 1.0);
        QVERIFY(last.at("reward_margin").get<double>() > 0.5);
        QVERIFY(last.at("chosen_reward").get<double>() > last.at("rejected_reward").get<double>());
        QVERIFY(steps.back()->number_field("loss") < 0.3);
        const auto* eval = r.last(EventType::Eval);
        QVERIFY(eval && eval->body.contains("preference"));
        QCOMPARE(eval->body.at("preference").at("reward_accuracy").get<double>(), 1.0);
        // The hello says what trains, and 2·B rows per micro-batch are planned.
        const auto* hello = r.last(EventType::Hello);
        QCOMPARE(hello->body.at("objective").at("kind").get<std::string>(), std::string("dpo"));
        QCOMPARE(hello->body.at("objective").at("reference").get<std::string>(), std::string("adapter-off"));
        QCOMPARE(hello->body.at("objective").at("beta").get<double>(), 0.1);
    }

    void fullDpoHoldsAReferenceCopyAndOrpoTrains() {
        QTemporaryDir dir;
        const QString data = dir.filePath("pairs.jsonl");
        {
            std::ofstream out(data.toStdString());
            for (int i = 0; i < 16; ++i)
                out << "{\"prompt\": [{\"role\": \"user\", \"content\": \"Q" << i << "\"}], \"chosen\": [{\"role\": "
                       "\"assistant\", \"content\": \"good\"}], \"rejected\": [{\"role\": \"assistant\", \"content\": \"bad answer\"}]}\n";
        }
        testing::TrainerLaunch launch;
        launch.args = {"--objective", "dpo", "--method", "full", "--data", data, "--seq", "32", "--batch", "2",
                       "--steps", "3", "--precision", "fp32", "--eval-fraction", "0", "--sample-tokens", "0", "--threads", "2"};
        testing::TrainerResult r = testing::run_trainer(launch);
        QVERIFY2(r.exit_code == 0, r.err.toUtf8().constData());
        const auto* predicted = r.first(EventType::Predicted);
        const std::int64_t planned = predicted->body.at("components").value("reference_model", std::int64_t{0});
        QVERIFY(planned > 0);
        // The frozen copy is exactly the policy's weights, as planned, and held through the steps.
        const auto* done = r.last(EventType::Done);
        QCOMPARE(done->body.at("component_peaks").value("reference_model", std::int64_t{0}), planned);
        QCOMPARE(done->body.at("component_peaks").value("trainable_weights", std::int64_t{0}), planned);
        bool said = false;   // the run says what the copy costs
        for (const auto* e : r.all(EventType::Log))
            said |= e->string_field("message").find("a frozen copy of the policy, " + std::to_string(planned) + " bytes") !=
                    std::string::npos;
        QVERIFY(said);
        launch.args[1] = "orpo";
        r = testing::run_trainer(launch);
        QVERIFY2(r.exit_code == 0, r.err.toUtf8().constData());
        QCOMPARE(r.last(EventType::Hello)->body.at("objective").at("reference").get<std::string>(), std::string("none"));
        const auto& pref = r.last(EventType::Step)->body.at("preference");
        QVERIFY(pref.contains("nll_loss") && pref.contains("log_odds_ratio"));
        QCOMPARE(r.last(EventType::Done)->body.at("component_peaks").value("reference_model", std::int64_t{0}), std::int64_t{0});
    }

    void badRowsAreRefusedWithTheirLine() {
        QTemporaryDir dir;
        const std::string good = R"({"prompt": "p", "chosen": "a", "rejected": "b"})";
        struct Case {
            std::string row;
            std::string says;
        };
        const std::vector<Case> cases = {
            {R"({"prompt": "p", "chosen": "a"})", "\"rejected\" is missing"},
            {R"({"prompt": "p", "chosen": "a", "rejected": [{"role": "assistant", "content": "b"}]})", "both be strings"},
            {R"({"prompt": [{"role": "user", "content": "q"}], "chosen": [{"role": "robot", "content": "a"}], "rejected": [{"role": "assistant", "content": "b"}]})", "unknown role"},
            {R"({"prompt": "p", "chosen": [{"role": "user", "content": "a"}], "rejected": [{"role": "assistant", "content": "b"}]})", "no assistant message"},
            {R"({"prompt": "p", "chosen": 3, "rejected": "b"})", "both be strings"},
            {R"([1, 2])", "not a JSON object"},
            {R"({"prompt": "p", "chosen": "a", "rejected": )", "line 3"},
        };
        for (size_t i = 0; i < cases.size(); ++i) {
            const QString data = dir.filePath(QString("bad%1.jsonl").arg(i));
            {
                std::ofstream out(data.toStdString());
                out << good << "\n" << good << "\n" << cases[i].row << "\n" << good << "\n";
            }
            testing::TrainerLaunch launch;
            launch.args = {"--objective", "orpo", "--method", "lora", "--data", data, "--steps", "1", "--threads", "1"};
            const testing::TrainerResult r = testing::run_trainer(launch);
            QCOMPARE(r.exit_code, 1);
            QCOMPARE(r.error_code(), std::string("bad_data"));
            const std::string msg = r.error_message();
            QVERIFY2(msg.find("line 3") != std::string::npos && msg.find(cases[i].says) != std::string::npos, msg.c_str());
            QCOMPARE(r.first(EventType::Error)->body.value("line", 0), 3);
        }
        // Flags that do not fit together are refused before anything loads.
        testing::TrainerLaunch launch;
        launch.args = {"--objective", "sft", "--beta", "0.2", "--method", "lora"};
        QCOMPARE(testing::run_trainer(launch).exit_code, 2);
        launch.args = {"--objective", "kto", "--method", "lora"};
        const testing::TrainerResult kto = testing::run_trainer(launch);
        QCOMPARE(kto.exit_code, 2);
        QVERIFY(kto.error_message().find("sft, dpo or orpo") != std::string::npos);
        launch.args = {"--objective", "dpo", "--beta", "0", "--method", "lora"};
        QCOMPARE(testing::run_trainer(launch).exit_code, 2);
    }
};

QTEST_GUILESS_MAIN(PreferenceTest)
#include "test_preference.moc"
