// Issue 11, the trainer: wingspan-train fed hostile files, full disks and signals answers
// with its protocol error event and exit code (never a crash, a hang or a lost run).
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

#include "../trainer/trainer_process.hpp"
#include "wingspan/protocol.hpp"

using namespace wingspan;
using namespace wingspan::protocol;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using Result = testing::TrainerResult;

using testing::train;

// Waits until signal `sig` sent to `pid` is no longer pending (the kernel has handed it to one of
// the process's threads), reading /proc; false if that did not happen within 10 s.
bool wait_until_delivered(pid_t pid, int sig) {
    const unsigned long long bit = 1ull << (sig - 1);
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 10000) {
        std::ifstream status("/proc/" + std::to_string(pid) + "/status");
        if (!status) return false;
        bool pending = false;
        for (std::string line; std::getline(status, line);)
            if (line.rfind("ShdPnd:", 0) == 0 || line.rfind("SigPnd:", 0) == 0)
                pending = pending || (std::stoull(line.substr(7), nullptr, 16) & bit);
        if (!pending) return true;
        std::this_thread::yield();
    }
    return false;
}

QStringList quick(const QString& method = "lora") {
    return {"--method", method, "--steps", "2", "--seq", "32", "--batch", "2", "--sample-tokens", "0"};
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

json tiny_config() {
    return {{"model_type", "llama"},  {"hidden_size", 32},       {"intermediate_size", 48},
            {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
            {"vocab_size", 300},      {"tie_word_embeddings", true}, {"max_position_embeddings", 128}};
}

}  // namespace

class ReliabilityTrainer : public QObject {
    Q_OBJECT
private slots:
    // ---- 1. unbounded recursion on JSON ----
    void deepConfigAndTokenizer() {
        QTemporaryDir tmp;
        const fs::path dir = tmp.path().toStdString();
        write_text(dir / "config.json", "{\"hidden_size\":" + nested(1'000'000) + "}");
        Result r = train(QStringList{"--model", QString::fromStdString(dir.string())} + quick());
        QCOMPARE(r.exit_code, 1);
        QCOMPARE(r.error_code(), std::string("bad_model"));
        QVERIFY2(r.error_message().find("nested deeper") != std::string::npos, r.error_message().c_str());

        const fs::path tok = dir / "tokenizer.json";
        write_text(tok, "{\"model\":" + nested(1'000'000) + "}");
        r = train(QStringList{"--tokenizer", QString::fromStdString(tok.string())} + quick());
        QCOMPARE(r.error_code(), std::string("bad_model"));
        QVERIFY2(r.error_message().find("nested deeper") != std::string::npos, r.error_message().c_str());
    }

    // ---- 3. indexes from files trusted blindly ----
    void resumeValidatesTrainerState() {
        QTemporaryDir tmp;
        const fs::path out = fs::path(tmp.path().toStdString()) / "out";
        Result r = train(QStringList{"--out", QString::fromStdString(out.string())} + quick());
        QCOMPARE(r.exit_code, 0);
        QVERIFY(fs::exists(out / "wingspan-checkpoint.json"));
        // A resumable checkpoint resumes.
        r = train(QStringList{"--resume", QString::fromStdString(out.string()), "--steps", "3"} +
                  QStringList{"--method", "lora", "--seq", "32", "--batch", "2", "--sample-tokens", "0"});
        QVERIFY2(r.exit_code == 0, qPrintable(r.err));
        // micro_batches -1 used to crash --resume (a negative index into the batches).
        json st = json::parse(std::ifstream(out / "trainer_state.json"));
        st["micro_batches"] = -1;
        write_text(out / "trainer_state.json", st.dump());
        r = train(QStringList{"--resume", QString::fromStdString(out.string())} + quick());
        QCOMPARE(r.exit_code, 2);
        QCOMPARE(r.error_code(), std::string("bad_argument"));
        QVERIFY2(r.error_message().find("--resume") != std::string::npos, r.error_message().c_str());
    }

    void shardIndexPathsStayInTheFolder() {
        QTemporaryDir tmp;
        const fs::path dir = tmp.path().toStdString();
        write_text(dir / "config.json", tiny_config().dump());
        for (const std::string shard : {"/etc/passwd", "../outside.safetensors", "sub/../../x.safetensors"}) {
            write_text(dir / "model.safetensors.index.json",
                  json{{"weight_map", {{"model.embed_tokens.weight", shard}}}}.dump());
            const Result r = train(QStringList{"--model", QString::fromStdString(dir.string())} + quick());
            QCOMPARE(r.error_code(), std::string("bad_model"));
            QVERIFY2(r.error_message().find("not a file inside the model folder") != std::string::npos,
                     r.error_message().c_str());
        }
    }

    // ---- 4. work lost at the end ----
    void unwritableOutFailsBeforeTheFirstStep() {
        QTemporaryDir tmp;
        const fs::path file = fs::path(tmp.path().toStdString()) / "a-file";
        write_text(file, "x");
        // A folder that cannot be made (under a file): as a read-only file system would answer.
        const Result r = train(QStringList{"--out", QString::fromStdString((file / "out").string())} + quick());
        QCOMPARE(r.exit_code, 1);
        QCOMPARE(r.error_code(), std::string("io"));
        QCOMPARE(r.steps(), 0);
        QVERIFY2(r.error_message().find("--out") != std::string::npos, r.error_message().c_str());
    }

    void interruptedSaveIsNeverResumedAndTemporariesGo() {
        QTemporaryDir tmp;
        const fs::path out = fs::path(tmp.path().toStdString()) / "out";
        QCOMPARE(train(QStringList{"--out", QString::fromStdString(out.string())} + quick()).exit_code, 0);
        // What a kill -9 in the middle of the next final save leaves: the manifest gone (it is
        // removed first), a new model beside the old optimizer, and a temporary.
        fs::remove(out / "wingspan-checkpoint.json");
        write_text(out / ".optimizer.safetensors.tmp-Ab12Cd", "half");
        Result r = train(QStringList{"--resume", QString::fromStdString(out.string())} + quick());
        QCOMPARE(r.exit_code, 2);
        QVERIFY2(r.error_message().find("not a complete checkpoint") != std::string::npos, r.error_message().c_str());
        // A file changed after the manifest was written is refused too.
        QCOMPARE(train(QStringList{"--out", QString::fromStdString(out.string())} + quick()).exit_code, 0);
        QVERIFY(!fs::exists(out / ".optimizer.safetensors.tmp-Ab12Cd"));   // the next run cleaned it up
        {
            std::fstream f(out / "optimizer.safetensors", std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(-1, std::ios::end);
            f.put('\x7f');
        }
        r = train(QStringList{"--resume", QString::fromStdString(out.string())} + quick());
        QCOMPARE(r.exit_code, 2);
        QVERIFY2(r.error_message().find("differs from the manifest") != std::string::npos, r.error_message().c_str());
    }

    // ---- 8. memory and hangs ----
    void hugeLinesAndStdinAreBounded() {
        QTemporaryDir tmp;
        const fs::path data = fs::path(tmp.path().toStdString()) / "data.jsonl";
        {
            std::ofstream f(data, std::ios::binary);
            f << json{{"text", "a short line"}}.dump() << "\n" << json{{"text", std::string(20u << 20, 'a')}}.dump() << "\n";
        }
        Result r = train(QStringList{"--data", QString::fromStdString(data.string())} + quick());
        QCOMPARE(r.error_code(), std::string("bad_data"));
        QVERIFY2(r.error_message().find("line 2 is longer than") != std::string::npos, r.error_message().c_str());

        r = train({"tokenize"}, {}, 60000, QByteArray(17 << 20, 'a'));
        QCOMPARE(r.exit_code, 2);
        QCOMPARE(r.error_code(), std::string("bad_data"));
    }

    void namedPipesAreRefusedNotWaitedOn() {
        QTemporaryDir tmp;
        const fs::path dir = tmp.path().toStdString();
        QCOMPARE(::mkfifo((dir / "data.jsonl").c_str(), 0600), 0);
        Result r = train(QStringList{"--data", QString::fromStdString((dir / "data.jsonl").string())} + quick(), {},
                         30000);
        QVERIFY2(!r.timed_out, "the trainer waited on a named pipe");
        QVERIFY2(r.error_message().find("named pipe") != std::string::npos, r.error_message().c_str());

        const fs::path model = dir / "model";
        fs::create_directories(model);
        write_text(model / "config.json", tiny_config().dump());
        QCOMPARE(::mkfifo((model / "model.safetensors").c_str(), 0600), 0);
        r = train(QStringList{"--model", QString::fromStdString(model.string())} + quick(), {}, 30000);
        QVERIFY2(!r.timed_out, "the trainer waited on a named pipe");
        QCOMPARE(r.error_code(), std::string("bad_model"));
        QVERIFY2(r.error_message().find("named pipe") != std::string::npos, r.error_message().c_str());
    }

    void aModelBeyondTheMachineStopsBeforeAllocating() {
        QTemporaryDir tmp;
        const fs::path dir = tmp.path().toStdString();
        json c = tiny_config();
        c["num_hidden_layers"] = 20'000;   // ~2·10^13 parameters, ~300 TB predicted
        c["hidden_size"] = 8192;
        c["intermediate_size"] = 28672;
        c["num_attention_heads"] = 64;
        c["num_key_value_heads"] = 8;
        write_text(dir / "config.json", c.dump());
        const Result r = train(QStringList{"--model", QString::fromStdString(dir.string())} + quick("full"), {}, 60000);
        QCOMPARE(r.error_code(), std::string("out_of_memory"));
        QVERIFY2(r.error_message().find("nothing was allocated") != std::string::npos, r.error_message().c_str());
        QVERIFY(r.first(EventType::Error)->int_field("bytes") > r.first(EventType::Error)->int_field("available_bytes"));
    }

    void threadsAreCappedAtTheCores() {
        const Result r = train(QStringList{"--threads", "100000"} + quick(), {}, 60000);
        QCOMPARE(r.exit_code, 0);
        const Event* hello = r.first(EventType::Hello);
        QVERIFY(hello);
        QVERIFY(hello->int_field("threads") <= std::int64_t(std::thread::hardware_concurrency()));
    }

    // ---- 9. smaller ----
    void tinyMemoryLimitIsRefused() {
        const Result r = train(QStringList{"--memory-limit", "1e-9"} + quick());
        QCOMPARE(r.exit_code, 2);
        QCOMPARE(r.error_code(), std::string("bad_argument"));
        QVERIFY2(r.error_message().find("too small") != std::string::npos, r.error_message().c_str());
    }

    void secondSigtermStopsAtOnce() {
        // Steps long enough that a clean stop would take a while.
        QTemporaryDir tmp;
        int terms = 0;
        bool first_delivered = false;
        const Result r = train(QStringList{"--method", "full", "--steps", "1000", "--seq", "128", "--batch", "8",
                                           "--sample-tokens", "0", "--out", tmp.filePath("out")},
                               [&](const Event& e, QProcess& p) {
                                   if (e.type != EventType::Step || terms) return;
                                   const auto pid = pid_t(p.processId());
                                   ::kill(pid, SIGTERM);
                                   // Two pending SIGTERMs merge into one: the second goes once the
                                   // kernel has handed the first to the trainer.
                                   first_delivered = wait_until_delivered(pid, SIGTERM);
                                   ::kill(pid, SIGTERM);
                                   terms = 2;
                               });
        QCOMPARE(terms, 2);
        QVERIFY(first_delivered);
        QVERIFY2(r.exit_code == -1, "the second SIGTERM did not end the process by the signal");
        QVERIFY2(!r.last(EventType::Done), "the trainer went on to a clean stop");
        QVERIFY(r.seconds < 60);
    }

    void sigtermDuringSetupEndsPromptly() {
        // The SIGTERM is sent as the trainer starts, with the stop signals blocked: it waits,
        // pending, until the trainer installs its handler and unblocks them at the start of
        // setup, whatever the machine's load. The run must end in setup, not after a step.
        testing::TrainerLaunch launch;
        launch.args = QStringList{"--method", "full", "--steps", "1000", "--sample-tokens", "0", "--threads", "2"};
        launch.stops_blocked_at_start = true;
        launch.on_started = [](QProcess& p) { p.terminate(); };
        launch.timeout_ms = 120000;
        const Result r = testing::run_trainer(launch);
        QVERIFY(!r.timed_out);
        QCOMPARE(r.exit_code, 0);
        QVERIFY(r.first(EventType::Hello));
        QCOMPARE(r.steps(), 0);
        const Event* done = r.last(EventType::Done);
        QVERIFY(done);
        QCOMPARE(done->string_field("reason"), std::string("interrupted"));
    }

    void sigtermDuringTheSampleEndsItPromptly() {
        // 3,000 tokens of sample take over a minute on a loaded 2-core machine. Stopped as it
        // begins (the trainer says so in a log line), the sample ends at the token at hand and
        // the run ends as a stopped one.
        bool sent = false;
        QElapsedTimer since;
        const Result r = train(QStringList{"--method", "lora", "--steps", "1", "--seq", "32", "--batch", "2",
                                           "--eval-every", "0", "--sample-tokens", "3000"},
                               [&](const Event& e, QProcess& p) {
                                   if (sent || e.type != EventType::Log ||
                                       e.string_field("message").rfind("generating a sample", 0) != 0)
                                       return;
                                   p.terminate();
                                   sent = true;
                                   since.start();
                               });
        QVERIFY(sent);
        QCOMPARE(r.exit_code, 0);
        QCOMPARE(r.steps(), 1);
        const Event* done = r.last(EventType::Done);
        QVERIFY(done);
        QCOMPARE(done->string_field("reason"), std::string("interrupted"));
        const std::string sample = done->string_field("sample");
        QVERIFY2(sample.size() < 3000, qPrintable(QString("the sample ran to %1 bytes").arg(sample.size())));
        QVERIFY2(since.elapsed() < 30000, qPrintable(QString("done came %1 ms after the SIGTERM").arg(since.elapsed())));
    }
};

QTEST_GUILESS_MAIN(ReliabilityTrainer)
#include "test_reliability_trainer.moc"
