// Data-parallel wingspan-train on loopback with gloo (issue 18): two ranks train like one process
// of the same global batch, ZeRO-1 holds half the optimizer state per rank (what the planner
// predicts per device), a killed rank ends the job with an error event within the timeout, and a
// two-rank checkpoint resumes on one rank.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <fstream>
#include <functional>
#include <initializer_list>

#include <nlohmann/json.hpp>

#include "trainer_process.hpp"
#include "wingspan/protocol.hpp"

using namespace wingspan::protocol;
namespace testing = wingspan::testing;
using nlohmann::json;

namespace {

// A job's events and exit, with each rank's memory as measured and as predicted.
struct Job : testing::TrainerResult {
    std::vector<const Event*> of(EventType t, int rank) const { return all(t, rank); }
    std::int64_t peak_of(int rank, const char* component) const {
        auto done = of(EventType::Done, rank);
        if (done.empty()) return -1;
        return done.back()->body.at("component_peaks").value(component, std::int64_t{-1});
    }
    std::int64_t predicted(int rank, const char* component) const {
        auto p = of(EventType::Predicted, rank);
        if (p.empty()) return -1;
        return p.front()->body.at("component_maxima").value(component, std::int64_t{0});
    }
    // Peak of all live tensors: measured (done) and predicted (the peak phase's sum).
    std::int64_t peak(int rank) const {
        auto done = of(EventType::Done, rank);
        return done.empty() ? -1 : done.back()->int_field("peak_bytes");
    }
    std::int64_t predicted_peak(int rank) const {
        auto p = of(EventType::Predicted, rank);
        return p.empty() ? -1 : p.front()->int_field("peak_bytes");
    }
};

// Runs wingspan-train outside any torchrun job; `on_event` sees each event as it arrives (it
// may signal a rank).
Job run_job(QStringList args, const std::function<void(const Event&)>& on_event = {}, int timeout_ms = 120000) {
    testing::TrainerLaunch launch;
    launch.args = args;
    launch.timeout_ms = timeout_ms;
    launch.env.insert("OMP_WAIT_POLICY", "passive");
    for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}) launch.env.remove(v);
    if (on_event) launch.on_event = [&on_event](const Event& e, QProcess&) { on_event(e); };
    Job job;
    static_cast<testing::TrainerResult&>(job) = testing::run_trainer(launch);
    return job;
}

bool close_to(double a, double b) { return std::abs(a - b) <= 1e-5 * std::max(1.0, std::abs(b)); }

// Every rank of each job reports the losses of `ref` (one process of the same global batch).
void compare_losses(std::initializer_list<const Job*> jobs, const std::vector<double>& ref) {
    for (const Job* j : jobs)
        for (int r : {0, 1}) {
            const auto l = j->losses(r);
            QCOMPARE(l.size(), ref.size());
            for (size_t i = 0; i < l.size(); ++i)
                QVERIFY2(close_to(l[i], ref[i]), qPrintable(QString("rank %1 step %2: %3 vs one process %4")
                                                                .arg(r).arg(i + 1).arg(l[i], 0, 'g', 10)
                                                                .arg(ref[i], 0, 'g', 10)));
        }
}

}  // namespace

class TestDistributed : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString model_, wide_, big_;
    QStringList common(int steps, const QString& method = "lora") const {
        return {"--model", model_, "--method", method, "--seq", "64", "--steps", QString::number(steps),
                "--eval-every", "0", "--sample-tokens", "0", "--threads", "1", "--dist-timeout", "20",
                "--precision", "fp32"};   // the expectations below are fp32's (a later --precision wins)
    }
    Job single_, ddp_, zero1_, zero2_, full_zero1_, wide_ddp_;
    Job big_single_, big_ddp_, big_zero2_;   // full fine-tunes whose gradients are several buckets

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        // A small Llama config without weights: random initial weights from --seed, the same
        // on every rank.
        const json cfg = {{"model_type", "llama"},        {"hidden_size", 64},       {"intermediate_size", 128},
                          {"num_hidden_layers", 2},       {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                          {"vocab_size", 320},            {"max_position_embeddings", 256},
                          {"tie_word_embeddings", true}};
        model_ = dir_.filePath("model");
        QVERIFY(QDir().mkpath(model_));
        std::ofstream(model_.toStdString() + "/config.json") << cfg.dump(2);
        // Wide enough that a full fine-tune's fp32 gradients fill two all-reduce buckets.
        json wide = cfg;
        wide["hidden_size"] = 256;
        wide["intermediate_size"] = 512;
        wide_ = dir_.filePath("wide");
        QVERIFY(QDir().mkpath(wide_));
        std::ofstream(wide_.toStdString() + "/config.json") << wide.dump(2);

        single_ = run_job(common(4) << "--batch" << "4");
        ddp_ = run_job(common(4) << "--batch" << "2" << "--nproc" << "2");
        zero1_ = run_job(common(4) << "--batch" << "2" << "--nproc" << "2" << "--sharding" << "zero1" << "--save-every"
                                   << "2" << "--out" << dir_.filePath("zero1"));
        zero2_ = run_job(common(4) << "--batch" << "2" << "--nproc" << "2" << "--sharding" << "zero2");
        full_zero1_ = run_job(common(2, "full") << "--precision" << "bf16-mixed" << "--batch" << "2" << "--nproc" << "2"
                                                << "--sharding" << "zero1");
        // A full fine-tune with about 18 MB of fp32 gradients: four ZeRO-2 buckets of 4 MiB.
        json big = cfg;
        big["hidden_size"] = 256;
        big["intermediate_size"] = 1024;
        big["num_hidden_layers"] = 4;
        big["vocab_size"] = 2048;
        big_ = dir_.filePath("big");
        QVERIFY(QDir().mkpath(big_));
        std::ofstream(big_.toStdString() + "/config.json") << big.dump(2);
        QStringList big_args = common(3, "full");
        big_args[1] = big_;
        big_args << "--seq" << "32";
        big_single_ = run_job(QStringList(big_args) << "--batch" << "2");
        big_ddp_ = run_job(QStringList(big_args) << "--batch" << "1" << "--nproc" << "2");
        big_zero2_ = run_job(QStringList(big_args) << "--batch" << "1" << "--nproc" << "2" << "--sharding" << "zero2");
        // Plain text rows: every token trains, so each rank's gradients are not all zero.
        const QString text = dir_.filePath("text.jsonl");
        {
            std::ofstream out(text.toStdString());
            for (int i = 0; i < 16; ++i)
                out << json{{"text", "Row " + std::to_string(i) + " of the bucket overlap check: every token trains."}}.dump()
                    << "\n";
        }
        QStringList wide_args = common(2, "full");
        wide_args[1] = wide_;
        wide_ddp_ = run_job(wide_args << "--data" << text << "--seq" << "32" << "--batch" << "1" << "--nproc" << "2");
    }

    void everyLineIsProtocolAndNamesItsRank() {
        for (const Job* j : {&single_, &ddp_, &zero1_, &zero2_, &full_zero1_, &wide_ddp_, &big_single_, &big_ddp_, &big_zero2_}) {
            QCOMPARE(j->exit_code, 0);
            QVERIFY2(j->bad_lines.empty(), j->bad_lines.empty() ? "" : j->bad_lines.front().c_str());
            for (const auto& e : j->events) QVERIFY2(e.body.contains("rank"), e.body.dump().c_str());
        }
        QCOMPARE(single_.of(EventType::Hello, 0).front()->int_field("world_size"), 1);
        for (int r : {0, 1}) {
            QCOMPARE(ddp_.of(EventType::Hello, r).size(), size_t(1));
            QCOMPARE(ddp_.of(EventType::Hello, r).front()->int_field("world_size"), 2);
            QCOMPARE(ddp_.of(EventType::Done, r).front()->string_field("reason"), std::string("completed"));
        }
        // Per-device plan: two devices, each with its own micro-batch.
        const json plan = ddp_.of(EventType::Hello, 1).front()->body.at("plan");
        QCOMPARE(plan.at("devices").get<int>(), 2);
        QCOMPARE(plan.at("sharding").get<std::string>(), std::string("ddp"));
        QCOMPARE(plan.at("micro_batch").get<int>(), 2);
    }

    // 2 ranks × micro-batch 2 train like 1 process × micro-batch 4: the reported loss is the
    // global batch's mean, and the summed gradients make the same update.
    void twoRanksTrainLikeOneProcess() {
        const auto ref = single_.losses(0);
        QCOMPARE(ref.size(), size_t(4));
        compare_losses({&ddp_, &zero1_, &zero2_}, ref);
        if (QTest::currentTestFailed()) return;
        // The steps trained (the equality above is not of constants).
        QVERIFY(ref[3] != ref[0]);
    }

    // Optimizer state per rank: ZeRO-1 holds half of DDP's, and each rank's measured peak of
    // every static component is the planner's per-device prediction, to the byte.
    void zero1HalvesOptimizerStatePerRank() {
        const std::int64_t full = ddp_.peak_of(0, "optimizer_state");
        QVERIFY(full > 0);
        QCOMPARE(full, single_.peak_of(0, "optimizer_state"));
        for (int r : {0, 1}) {
            const std::int64_t half = zero1_.peak_of(r, "optimizer_state");
            QVERIFY2(std::abs(2 * half - full) <= 8, qPrintable(QString("rank %1: %2 of %3").arg(r).arg(half).arg(full)));
            for (const char* c : {"optimizer_state", "gradients", "adapters", "frozen_weights"}) {
                QCOMPARE(zero1_.peak_of(r, c), zero1_.predicted(r, c));
                QCOMPARE(ddp_.peak_of(r, c), ddp_.predicted(r, c));
            }
        }
        // DDP keeps a second copy of the gradients (its all-reduce buckets); ZeRO-1 only a wire
        // buffer the size of the largest gradient (LoRA's default rank 16 × the MLP's 128, fp32).
        const std::int64_t wire = 16 * 128 * 4;
        QCOMPARE(ddp_.peak_of(0, "gradients"), 2 * (zero1_.peak_of(0, "gradients") - wire));
        // ZeRO-2 holds half the optimizer state too.
        QCOMPARE(zero2_.peak_of(1, "optimizer_state"), zero1_.peak_of(1, "optimizer_state"));
    }

    // ZeRO-2: each gradient is copied into the reduce bucket as soon as backward has made it and
    // freed, a full bucket is reduced to the ranks owning its ranges, each keeping its range. Per
    // rank: its shard, the bucket and the one whole gradient in flight — the planner's per-device
    // prediction to the byte, and the peak of all tensors within 1 %. With gradients of several
    // buckets that is about half of DDP's per rank (DDP: the gradients and their buckets).
    void zero2GradientsAreThePlannersPerRank() {
        for (int r : {0, 1}) {
            for (const char* c : {"gradients", "optimizer_state", "adapters", "frozen_weights"})
                QCOMPARE(zero2_.peak_of(r, c), zero2_.predicted(r, c));
            for (const char* c : {"gradients", "optimizer_state", "trainable_weights"}) {
                QVERIFY(big_zero2_.predicted(r, c) > 0);
                QCOMPARE(big_zero2_.peak_of(r, c), big_zero2_.predicted(r, c));
                QCOMPARE(big_ddp_.peak_of(r, c), big_ddp_.predicted(r, c));
            }
            for (const Job* j : {&zero2_, &big_zero2_}) {
                const double measured = double(j->peak(r)), predicted = double(j->predicted_peak(r));
                QVERIFY2(measured > 0 && std::abs(predicted - measured) <= 0.01 * measured,
                         qPrintable(QString("rank %1: peak %2 B predicted, %3 B measured").arg(r).arg(predicted, 0, 'f', 0)
                                        .arg(measured, 0, 'f', 0)));
            }
            const std::int64_t ddp = big_ddp_.peak_of(r, "gradients"), zero2 = big_zero2_.peak_of(r, "gradients");
            QVERIFY2(2 * zero2 <= ddp && 5 * zero2 >= 2 * ddp,
                     qPrintable(QString("rank %1: zero2 %2 B of gradients, ddp %3 B").arg(r).arg(zero2).arg(ddp)));
        }
        // What the shard is: each rank's half of one process's gradients.
        const std::int64_t whole = big_single_.peak_of(0, "trainable_weights");   // fp32: gradients are as big
        QCOMPARE(big_ddp_.peak_of(0, "gradients"), 2 * whole);
        QCOMPARE(big_zero2_.peak_of(0, "optimizer_state"), whole);   // two fp32 moments of half the parameters
        // Reduced while backward was still making gradients, bucket by bucket, not all at its end
        // (of the five reductions of 18 MB, the last two come with and after the embedding's
        // gradient, the last one backward makes).
        for (int r : {0, 1}) {
            std::string line;
            for (const auto* e : big_zero2_.of(EventType::Log, r))
                if (e->string_field("message").rfind("gradient sync", 0) == 0) line = e->string_field("message");
            QCOMPARE(line, std::string("gradient sync (zero2): a reduce bucket of 4194304 B, 3 reduced while backward was "
                                       "still running"));
        }
    }

    // The ZeRO-2 and DDP full fine-tunes of several buckets train like one process of the same
    // global batch.
    void severalBucketsTrainLikeOneProcess() {
        const auto ref = big_single_.losses(0);
        QCOMPARE(ref.size(), size_t(3));
        QVERIFY(ref[2] != ref[0]);
        compare_losses({&big_ddp_, &big_zero2_}, ref);
    }

    // A rank whose rows are all prompt (nothing to train on) still runs backward, with a zero
    // loss and zero gradients, so its ZeRO-2 reductions pair with the other rank's: the job trains
    // like one process of the same global batch. One short row among long-prompt ones: in every
    // epoch the step holding it has one rank without trained tokens.
    void rankWithoutTrainedTokens() {
        const QString chat = dir_.filePath("prompt_only.jsonl");
        {
            std::ofstream out(chat.toStdString());
            auto row = [&](const std::string& user, const std::string& answer) {
                out << json{{"messages", {{{"role", "user"}, {"content", user}}, {{"role", "assistant"}, {"content", answer}}}}}
                           .dump()
                    << "\n";
            };
            row("Hi?", "Yes, hello.");
            for (int i = 0; i < 7; ++i)
                row("Question " + std::to_string(i) + ": " + std::string(120, 'a' + i) + "?", "An answer past the cut.");
        }
        QStringList args = common(8) << "--data" << chat << "--no-packing" << "--eval-fraction" << "0";
        args[args.indexOf("--seq") + 1] = "32";
        const Job one = run_job(QStringList(args) << "--batch" << "2");
        const Job two = run_job(QStringList(args) << "--batch" << "1" << "--nproc" << "2" << "--sharding" << "zero2");
        QCOMPARE(one.exit_code, 0);
        QCOMPARE(two.exit_code, 0);
        const auto ref = one.losses(0);
        QCOMPARE(ref.size(), size_t(8));
        QCOMPARE(std::count_if(ref.begin(), ref.end(), [](double l) { return l > 0; }), std::ptrdiff_t(2));   // one per epoch
        compare_losses({&two}, ref);
    }

    // A full fine-tune in bf16-mixed: ZeRO-1 shards the fp32 master copy as well. After the step the
    // updated bf16 parameters go to the other rank through one fp32 buffer the size of the largest
    // tensor (gloo takes no bf16): the tied embedding, 320 × 64, × 4 B beside the two fp32 moments.
    void zero1ShardsTheMasterWeights() {
        for (int r : {0, 1}) {
            const std::int64_t master = full_zero1_.peak_of(r, "master_weights");
            QVERIFY(master > 0);
            QCOMPARE(master, full_zero1_.predicted(r, "master_weights"));
            QCOMPARE(full_zero1_.peak_of(r, "optimizer_state"), 2 * master + 320 * 64 * 4);
            QCOMPARE(full_zero1_.peak_of(r, "optimizer_state"), full_zero1_.predicted(r, "optimizer_state"));
        }
        // Exact on torch 2.x too since the embedding's backward keeps index_add_'s fp32 row buffers
        // out of the gradients (issue 28's +256 B: trainer/src/model/model.cpp EmbeddingFn).
        for (int r : {0, 1})
            QCOMPARE(full_zero1_.peak_of(r, "gradients"), full_zero1_.predicted(r, "gradients"));
    }

    // Buckets go out while backward is still making the earlier layers' gradients, on every
    // rank: of the wide model's two buckets, the one holding the last layers launches as soon as
    // its last gradient is accumulated (the other holds the embedding, whose gradient is the
    // last one backward makes).
    void allReduceOverlapsBackward() {
        for (int r : {0, 1}) {
            const Event* sync = nullptr;
            for (const auto* e : wide_ddp_.of(EventType::Log, r))
                if (e->string_field("message").rfind("gradient sync", 0) == 0) sync = e;
            QVERIFY2(sync, qPrintable(QString("rank %1 logged no gradient sync line").arg(r)));
            const std::string m = sync->string_field("message");
            QVERIFY2(m.find("2 bucket(s)") != std::string::npos, m.c_str());
            QVERIFY2(m.find(", 1 launched while backward") != std::string::npos, m.c_str());
            QCOMPARE(wide_ddp_.peak_of(r, "gradients"), wide_ddp_.predicted(r, "gradients"));
        }
    }

    // Only rank 0 writes, and a 2-rank ZeRO-1 checkpoint resumes on one process of the same
    // global batch with the same losses.
    void twoRankCheckpointResumesOnOneRank() {
        QCOMPARE(zero1_.of(EventType::Checkpoint, 1).size(), size_t(0));
        QCOMPARE(zero1_.of(EventType::Checkpoint, 0).size(), size_t(2));
        const QString ckpt = dir_.filePath("zero1/checkpoint-2");
        QVERIFY(QFile::exists(ckpt + "/optimizer.safetensors"));
        const Job resumed = run_job(common(4) << "--batch" << "4" << "--resume" << ckpt);
        QCOMPARE(resumed.exit_code, 0);
        const auto l = resumed.losses(0), ref = zero1_.losses(0);
        QCOMPARE(l.size(), size_t(2));
        QVERIFY(close_to(l[0], ref[2]));
        QVERIFY(close_to(l[1], ref[3]));
        // Another global batch is another data order: refused, naming the flag.
        const Job other = run_job(common(4) << "--batch" << "2" << "--resume" << ckpt);
        QCOMPARE(other.exit_code, 2);
    }

    // SIGTERM to the launcher (what the window's Stop sends): it passes the stop to every rank,
    // the ranks agree on the step to stop after, and each ends with one `done` "interrupted",
    // no error, and the same steps.
    void stopEndsEveryRankCleanly() {
        testing::TrainerLaunch launch;
        launch.args = common(400) << "--batch" << "2" << "--nproc" << "2";
        for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}) launch.env.remove(v);
        bool sent = false;
        launch.on_event = [&](const Event& e, QProcess& launcher) {
            if (!sent && e.type == EventType::Step && e.int_field("rank", -1) == 1) {
                launcher.terminate();
                sent = true;
            }
        };
        Job j;
        static_cast<testing::TrainerResult&>(j) = testing::run_trainer(launch);
        QVERIFY(sent);
        QVERIFY(!j.timed_out);
        QCOMPARE(j.exit_code, 0);
        QVERIFY2(j.all(EventType::Error).empty(), j.error_message().c_str());
        for (int r : {0, 1}) {
            const auto done = j.of(EventType::Done, r);
            QCOMPARE(done.size(), size_t(1));
            QCOMPARE(done.front()->string_field("reason"), std::string("interrupted"));
            QVERIFY(j.steps(r) >= 1);
            QVERIFY(j.steps(r) < 400);
        }
        QCOMPARE(j.steps(0), j.steps(1));
    }

    // SIGKILL one rank mid-run: the job ends with error events (rank 0's lost collective, the
    // launcher's report of the killed rank) well within the collective timeout, not a hang.
    void killedRankEndsTheJob() {
        qint64 killed_pid = 0;
        QElapsedTimer since_kill;
        const Job j = run_job(common(400) << "--batch" << "2" << "--nproc" << "2",
                              [&](const Event& e) {
                                  static qint64 pid1 = 0;
                                  if (e.type == EventType::Hello && e.int_field("rank") == 1) pid1 = e.int_field("pid");
                                  if (e.type == EventType::Step && e.int_field("rank") == 1 && pid1 && !killed_pid) {
                                      killed_pid = pid1;
                                      ::kill(static_cast<pid_t>(pid1), SIGKILL);
                                      since_kill.start();
                                  }
                              },
                              60000);
        QVERIFY(killed_pid > 0);
        const qint64 ended_after = since_kill.elapsed();
        QVERIFY2(ended_after < 20000, qPrintable(QString("ended %1 ms after the kill").arg(ended_after)));
        QVERIFY(j.exit_code != 0);
        const auto launcher = j.of(EventType::Error, 1);
        QCOMPARE(launcher.size(), size_t(1));
        QCOMPARE(launcher.front()->string_field("code"), std::string("rank_failed"));
        QVERIFY(launcher.front()->string_field("message").find("signal 9") != std::string::npos);
        const auto survivor = j.of(EventType::Error, 0);
        QCOMPARE(survivor.size(), size_t(1));
        QCOMPARE(survivor.front()->string_field("code"), std::string("distributed"));
        QCOMPARE(j.of(EventType::Done, 0).back()->string_field("reason"), std::string("error"));
    }

    void badInputExitsTwo() {
        QCOMPARE(run_job(common(2) << "--nproc" << "2" << "--sharding" << "zero3").exit_code, 2);
        QCOMPARE(run_job(common(2) << "--nproc" << "0").exit_code, 2);
    }
};

QTEST_GUILESS_MAIN(TestDistributed)
#include "test_distributed.moc"
