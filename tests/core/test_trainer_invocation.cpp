// Issue 27 item 2: one run invocation type. wingspan-train parses its argv with
// TrainerInvocation::from_args and everything that starts a run writes one with to_args(); every
// option must survive the trip, and the window's runs must be what the trainer reads back.
#include <QtTest>

#include <functional>

#include "wingspan/errors.hpp"
#include "wingspan/trainer_invocation.hpp"

using namespace wingspan;

namespace {

TrainerInvocation round_trip(const TrainerInvocation& t) {
    bool help = true;
    TrainerInvocation back = TrainerInvocation::from_args(t.to_args(), help);
    if (help) throw std::runtime_error("to_args() produced --help");
    return back;
}

// A valid invocation as from_args() returns it: --method given.
TrainerInvocation base() {
    TrainerInvocation t;
    t.method_given = true;
    return t;
}

}  // namespace

class TrainerInvocationTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // One row per option: a value other than the default, set on a valid invocation.
    void everyOptionRoundTrips_data() {
        QTest::addColumn<int>("row");
        for (int i = 0; i < static_cast<int>(edits().size()); ++i)
            QTest::newRow(edits()[static_cast<size_t>(i)].first) << i;
    }
    void everyOptionRoundTrips() {
        QFETCH(int, row);
        TrainerInvocation t = base();
        edits()[static_cast<size_t>(row)].second(t);
        QVERIFY2(!(t == base()), "the edit changed nothing: the row would pass without testing its option");
        const TrainerInvocation back = round_trip(t);
        QVERIFY2(back == t, edits()[static_cast<size_t>(row)].first);
    }

    // All edits at once (those that can go together) still come back whole.
    void manyOptionsTogether() {
        TrainerInvocation t = base();
        for (const auto& [name, edit] : edits()) {
            const std::string n = name;
            if (n == "steps-vs-epochs" || n == "optimizer-in-backward" || n == "objective" || n == "beta" ||
                n == "method full")
                continue;
            edit(t);
        }
        QCOMPARE(round_trip(t).to_args(), t.to_args());
        QVERIFY(round_trip(t) == t);
    }

    // The defaults are one set: the planner's LoRA rank and alpha are the trainer's.
    void defaultsAreThePlanners() {
        const TrainerInvocation t;
        const TrainingSetup s;
        QCOMPARE(t.rank, s.lora_rank);
        QCOMPARE(t.alpha, s.lora_alpha);
        QCOMPARE(t.targets, s.lora_targets);
    }

    // A minimal invocation states its setup and nothing else.
    void minimalArguments() {
        TrainerInvocation t = base();
        t.steps = 10;
        const std::vector<std::string> want = {"--method", "lora", "--rank", "16", "--alpha", "32", "--precision",
                                               "auto", "--seq", "128", "--batch", "4", "--steps", "10"};
        QCOMPARE(t.to_args(), want);
    }

    // What the trainer refuses is refused on the way back too, naming the flag.
    void refusalsNameTheFlag() {
        TrainerInvocation t = base();
        t.optimizer_in_backward = true;
        t.grad_accum = 4;
        bool help = false;
        try {
            (void)TrainerInvocation::from_args(t.to_args(), help);
            QFAIL("accepted --optimizer-in-backward with --grad-accum 4");
        } catch (const ArgError& e) {
            QVERIFY2(std::string(e.what()).find("--grad-accum") != std::string::npos, e.what());
        }
        try {
            (void)TrainerInvocation::from_args({"--method", "lora", "--targets", "q,w9"}, help);
            QFAIL("accepted an unknown target");
        } catch (const ArgError& e) {
            QVERIFY2(std::string(e.what()).rfind("--targets: ", 0) == 0, e.what());
        }
        // The planner knows LoRA on the LM head; wingspan-train adapts the layers only, and says so.
        try {
            (void)TrainerInvocation::from_args({"--method", "lora", "--targets", "q,lm_head"}, help);
            QFAIL("accepted an adapter on the head");
        } catch (const ArgError& e) {
            const std::string m = e.what();
            QVERIFY2(m.rfind("--targets: ", 0) == 0 && m.find("'head'") != std::string::npos, e.what());
        }
    }

private:
    using Edit = std::pair<const char*, std::function<void(TrainerInvocation&)>>;
    static const std::vector<Edit>& edits() {
        static const std::vector<Edit> e = {
            {"model", [](auto& t) { t.model_dir = "/models/smollm2 with space"; }},
            {"data", [](auto& t) { t.data_file = "data/train.jsonl"; }},
            {"tokenizer", [](auto& t) { t.tokenizer_file = "tok.json"; }},
            {"chat-format", [](auto& t) { t.chat_format = "chatml"; }},
            {"method full", [](auto& t) { t.method = Method::Full; }},
            {"method qlora", [](auto& t) { t.method = Method::Qlora; }},
            {"rank", [](auto& t) { t.rank = 64; }},
            {"alpha", [](auto& t) { t.alpha = 0.1 + 0.2; }},   // not a short decimal: exact text needed
            {"dropout", [](auto& t) { t.dropout = 0.05; }},
            {"targets", [](auto& t) { t.targets = {LinearRole::Q, LinearRole::V, LinearRole::Down}; }},
            {"precision", [](auto& t) {
                 t.precision_auto = false;
                 t.precision = Precision::Bf16Mixed;
             }},
            {"precision fp32", [](auto& t) { t.precision_auto = false; }},
            {"seq", [](auto& t) { t.seq = 4096; }},
            {"batch", [](auto& t) { t.batch = 1; }},
            {"grad-accum", [](auto& t) { t.grad_accum = 8; }},
            {"steps-vs-epochs", [](auto& t) { t.epochs = 3; }},
            {"steps", [](auto& t) { t.steps = 250; }},
            {"lr", [](auto& t) { t.lr = 2e-4; }},
            {"weight-decay", [](auto& t) { t.weight_decay = 0.01; }},
            {"max-grad-norm", [](auto& t) {
                 t.max_grad_norm = 0.3;
                 t.max_grad_norm_given = true;
             }},
            {"warmup-steps", [](auto& t) { t.warmup_steps = 0; }},
            {"grad-checkpointing", [](auto& t) { t.grad_checkpointing = true; }},
            {"optimizer-in-backward", [](auto& t) {
                 t.optimizer_in_backward = true;
                 t.max_grad_norm = 0;   // what from_args() sets with the flag
             }},
            {"padding", [](auto& t) { t.padding = Padding::Dynamic; }},
            {"out", [](auto& t) { t.out_dir = "runs/a"; }},
            {"resume", [](auto& t) { t.resume_dir = "runs/a/checkpoint"; }},
            {"memory-limit", [](auto& t) { t.memory_limit = 3'000'000'000; }},
            {"threads", [](auto& t) { t.threads = 3; }},
            {"seed", [](auto& t) { t.seed = 7; }},
            {"eval-every", [](auto& t) { t.eval_every = 0; }},
            {"eval-fraction", [](auto& t) { t.eval_fraction = 0.1; }},
            {"eval-batches", [](auto& t) { t.eval_batches = 2; }},
            {"save-every", [](auto& t) { t.save_every = 20; }},
            {"sample-tokens", [](auto& t) { t.sample_tokens = 0; }},
            {"sample-every-ms", [](auto& t) { t.sample_every_ms = 500; }},
            {"attention", [](auto& t) { t.attention = "sdpa"; }},
            {"initial-loss-scale", [](auto& t) { t.initial_loss_scale = 1024; }},
            {"loss-scale-growth", [](auto& t) { t.loss_scale_growth = 100; }},
            {"device", [](auto& t) { t.device = "cuda:1"; }},
            {"nproc", [](auto& t) {
                 t.nproc = 2;
                 t.sharding = Sharding::Zero2;
             }},
            {"sharding alone", [](auto& t) { t.sharding = Sharding::Zero1; }},
            {"dist-timeout", [](auto& t) { t.dist_timeout_s = 30; }},
            {"objective", [](auto& t) { t.objective = Objective::Orpo; }},
            {"beta", [](auto& t) {
                 t.objective = Objective::Dpo;
                 t.beta = 0.25;
             }},
        };
        return e;
    }
};

QTEST_GUILESS_MAIN(TrainerInvocationTest)
#include "test_trainer_invocation.moc"
