// Issue 34, the real wingspan-train binary: two runs never share an --out folder (class 4), a
// catastrophic split pattern is an error naming it (8), model files that are not files never
// block (10), hostile adapter configs are one-line errors before any allocation (18), and
// --resume names every setting or tensor shape that differs from the checkpoint (19).
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "../trainer/hostile_files.hpp"
#include "../trainer/trainer_process.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/safetensors.hpp"

using namespace wingspan;
using namespace wingspan::protocol;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using Result = testing::TrainerResult;

using testing::train;

QString q(const fs::path& p) { return QString::fromStdString(p.string()); }

QStringList quick(const QString& method = "lora") {
    return {"--method", method, "--steps", "2", "--seq", "32", "--batch", "2", "--sample-tokens", "0"};
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Rewrites tensor `name` of a safetensors file to shape [1] (F32) and re-hashes the
// checkpoint's manifest entry, so only the shape check can catch it.
void shrink_tensor(const fs::path& dir, const std::string& file, const std::string& name) {
    const fs::path path = dir / file;
    const safetensors::Header h = safetensors::read_header(path);
    const std::string bytes = slurp(path);
    std::vector<safetensors::TensorInfo> infos;
    std::string data;
    for (auto t : h.tensors) {
        std::string d = bytes.substr(h.data_offset + t.begin, t.end - t.begin);
        if (t.name == name) {
            t.shape = {1};
            t.dtype = "F32";
            d = std::string(4, '\0');
        }
        data += d;
        infos.push_back(t);
    }
    const std::string header = safetensors::build_header(infos, h.metadata);
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = char((header.size() >> (8 * i)) & 0xff);
    write_text(path, out + header + data);
    json m = json::parse(slurp(dir / "wingspan-checkpoint.json"));
    m["files"][file] = {{"bytes", fs::file_size(path)}, {"fnv1a64", file_checksum(path)}};
    write_text(dir / "wingspan-checkpoint.json", m.dump());
}

bool one_line(const std::string& s) {
    const auto end = s.find_last_not_of('\n');
    return end != std::string::npos && s.substr(0, end + 1).find('\n') == std::string::npos;
}

}  // namespace

class HostileTrainerRuns : public QObject {
    Q_OBJECT
private slots:
    // ---- 4. one run per --out folder ----
    void aSecondRunInTheSameOutIsRefused() {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        const fs::path out = root / "out";
        fs::create_directories(out);
        fs::create_directory_symlink(out, root / "link");
        std::int64_t first_pid = 0;
        bool checked = false;
        const QStringList endless = {"--method", "lora", "--steps", "100000", "--seq", "32", "--batch", "2",
                                     "--sample-tokens", "0", "--threads", "1"};
        const Result first = train(QStringList{"--out", q(out)} + endless, [&](const Event& e, QProcess& p) {
            if (e.type == EventType::Hello && e.int_field("pid", 0) > 0) first_pid = e.int_field("pid", 0);
            if (e.type != EventType::Step || checked) return;
            checked = true;
            // The first run's work in progress, which the second's start-up cleanup used to delete.
            const fs::path staging = out / ".checkpoint-7.tmp-AbC123";
            fs::create_directories(staging);
            write_text(staging / "adapter_model.safetensors", "partial");
            // The same folder by three spellings, and a full fine-tune: each refused, naming it and the pid.
            for (const QStringList& second : {QStringList{"--out", q(out)} + quick(), QStringList{"--out", q(out / ".")} + quick(),
                                              QStringList{"--out", q(root / "link")} + quick("full")}) {
                const Result r = train(second, {}, 60000);
                QCOMPARE(r.exit_code, 1);
                QCOMPARE(r.error_code(), std::string("io"));
                const std::string m = r.error_message();
                QVERIFY2(m.find("in use by another wingspan-train run") != std::string::npos, m.c_str());
                QVERIFY2(m.find("pid " + std::to_string(first_pid)) != std::string::npos, m.c_str());
                QVERIFY2(m.find(second[1].toStdString()) != std::string::npos, m.c_str());
                QVERIFY(r.steps() == 0);
            }
            QVERIFY2(fs::exists(staging / "adapter_model.safetensors"), "the second run removed the first one's files");
            p.kill();   // SIGKILL: the lock file stays behind, naming a process that is gone
        });
        QVERIFY(checked);
        QVERIFY(!first.timed_out);
        QVERIFY(fs::exists(out / ".wingspan-train.lock"));
        // A stale lock is taken over (and said so), and released at the end.
        const Result third = train(QStringList{"--out", q(out)} + quick());
        QVERIFY2(third.exit_code == 0, qPrintable(third.err));
        bool said = false;
        for (auto* e : third.all(EventType::Log))
            said |= e->string_field("message").find("from run " + std::to_string(first_pid)) != std::string::npos;
        QVERIFY(said);
        QVERIFY(!fs::exists(out / ".wingspan-train.lock"));
    }

    // ---- 8. a tokenizer's split pattern that backtracks catastrophically ----
    void aCatastrophicSplitPatternIsAnError() {
        QTemporaryDir tmp;
        const fs::path dir = tmp.path().toStdString();
        write_text(dir / "config.json", testing::tiny_llama_config().dump());
        const std::string pattern = R"((?:a|a){1,22}c|a|[^a])";
        write_text(dir / "tokenizer.json", testing::split_tokenizer(pattern));
        write_text(dir / "data.jsonl", json{{"text", "hello there"}}.dump() + "\n" +
                                           json{{"text", std::string(20000, 'a')}}.dump() + "\n");
        const Result r = train(QStringList{"--model", q(dir), "--data", q(dir / "data.jsonl")} + quick(), {}, 60000);
        QVERIFY2(!r.timed_out && r.seconds < 20, "the split pattern ran unbounded");
        QCOMPARE(r.exit_code, 1);
        QCOMPARE(r.error_code(), std::string("bad_data"));
        const std::string m = r.error_message();
        QVERIFY2(m.find(pattern) != std::string::npos && m.find("line 2") != std::string::npos, m.c_str());
        QVERIFY(m.find('\n') == std::string::npos);
        // `tokenize` likewise (it used to end in std::terminate), for this and other patterns.
        for (const std::string p : {pattern, std::string(R"((?:a+)+b|.)"), std::string(R"((\w|\w)*!|.)")}) {
            write_text(dir / "tokenizer.json", testing::split_tokenizer(p));
            testing::TrainerLaunch launch;
            launch.args = {"tokenize", "--tokenizer", q(dir / "tokenizer.json")};
            launch.stdin_data = QByteArray(20000, 'a');
            launch.timeout_ms = 30000;
            const Result t = testing::run_trainer(launch);
            QCOMPARE(t.exit_code, 1);
            QCOMPARE(t.error_code(), std::string("bad_model"));
            QVERIFY2(t.error_message().find(json(p).dump()) != std::string::npos, t.error_message().c_str());
        }
    }

    // ---- 10. model files that are not files ----
    void modelFilesThatAreNotFilesNeverBlock_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("kind");
        for (const char* f : {"chat_template.jinja", "tokenizer_config.json", "tokenizer.json", "config.json"})
            for (const char* k : {"fifo", "zero"}) QTest::newRow((std::string(f) + " " + k).c_str()) << f << k;
    }
    void modelFilesThatAreNotFilesNeverBlock() {
        QFETCH(QString, file);
        QFETCH(QString, kind);
        QTemporaryDir tmp;
        const fs::path dir = tmp.path().toStdString();
        write_text(dir / "config.json", testing::tiny_llama_config().dump());
        const fs::path p = dir / file.toStdString();
        fs::remove(p);
        if (kind == "fifo") QCOMPARE(::mkfifo(p.c_str(), 0600), 0);
        else fs::create_symlink("/dev/zero", p);
        const Result r = train(QStringList{"--model", q(dir)} + quick(), {}, 30000);
        QVERIFY2(!r.timed_out && r.seconds < 20, "the trainer waited on a model file");
        QVERIFY(r.exit_code != 0);
        QVERIFY(!r.events.empty() && r.events.front().type == EventType::Hello);
        const std::string m = r.error_message();
        QVERIFY2(m.find(file.toStdString()) != std::string::npos && m.find("not a regular file") != std::string::npos,
                 m.c_str());
    }

    // ---- 18. hostile adapter configs: one line, before allocating ----
    void hostileAdapterConfigsFailBeforeAllocating() {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        const fs::path base = root / "base", run = root / "run";
        Result r = train(QStringList{"--out", q(base)} + quick("full"));
        QVERIFY2(r.exit_code == 0, qPrintable(r.err));
        write_text(base / "tokenizer.json", testing::split_tokenizer(R"(\s+|\S+)"));
        r = train(QStringList{"--out", q(run), "--model", q(base)} + quick());
        QVERIFY2(r.exit_code == 0, qPrintable(r.err));
        const json good = json::parse(slurp(run / "adapter_config.json"));
        const std::vector<std::pair<json, std::string>> members = {
            {20'000'000, "\"r\" must be an integer"}, {12, "but r 12"}, {-1, "\"r\""}, {"8", "\"r\""}};
        for (const auto& [rank, expect] : members) {
            json c = good;
            c["r"] = rank;
            write_text(run / "adapter_config.json", c.dump());
            const std::vector<QStringList> commands = {
                {"generate", "--model", q(base), "--adapter", q(run), "--prompt", "hi", "--max-tokens", "2"},
                {"merge", "--model", q(base), "--adapter", q(run), "--out", q(root / "merged")}};
            for (const auto& args : commands) {
                QElapsedTimer t;
                t.start();
                const auto p = testing::run_program(WINGSPAN_TRAIN_BIN, args, QProcessEnvironment::systemEnvironment(), 60000);
                QCOMPARE(p.exit_code, 2);
                QVERIFY2(p.err.find(expect) != std::string::npos && one_line(p.err), p.err.c_str());
                QVERIFY2(t.elapsed() < 20000, p.err.c_str());
                QVERIFY(!fs::exists(root / "merged"));
            }
        }
        // The files merge copies from the base come through the bounded reader too.
        write_text(run / "adapter_config.json", good.dump());
        for (const char* kind : {"fifo", "zero"}) {
            const fs::path g = base / "generation_config.json";
            fs::remove(g);
            if (std::string(kind) == "fifo") QCOMPARE(::mkfifo(g.c_str(), 0600), 0);
            else fs::create_symlink("/dev/zero", g);
            const auto p = testing::run_program(WINGSPAN_TRAIN_BIN, {"merge", "--model", q(base), "--adapter", q(run),
                                                                     "--out", q(root / "merged")}, QProcessEnvironment::systemEnvironment(), 60000);
            QCOMPARE(p.exit_code, 2);
            QVERIFY2(p.err.find("generation_config.json") != std::string::npos && p.err.find("not a regular file") != std::string::npos,
                     p.err.c_str());
            QVERIFY(!fs::exists(root / "merged"));
        }
        fs::remove(base / "generation_config.json");
        json c = good;
        c["target_modules"] = {"q_proj", 7};
        write_text(run / "adapter_config.json", c.dump());
        const auto p = testing::run_program(WINGSPAN_TRAIN_BIN, {"generate", "--model", q(base), "--adapter", q(run),
                                                                 "--prompt", "hi"});
        QCOMPARE(p.exit_code, 2);
        QVERIFY2(p.err.find("target_modules") != std::string::npos && one_line(p.err), p.err.c_str());
    }

    // ---- 19. --resume compares every setting and every tensor's shape ----
    void resumeNamesEveryMismatch() {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        const fs::path ckpt = root / "ckpt";
        std::string other;
        for (int i = 0; i < 40; ++i)
            other += json{{"text", "line " + std::to_string(i) + " of a different data set, long enough for a batch"}}.dump() + "\n";
        write_text(root / "other.jsonl", other);
        Result r = train(QStringList{"--out", q(ckpt)} + quick());
        QVERIFY2(r.exit_code == 0, qPrintable(r.err));
        // The same settings resume.
        QStringList three = quick();
        three[3] = "3";   // --steps
        r = train(QStringList{"--resume", q(ckpt), "--out", q(root / "again")} + three);
        QVERIFY2(r.exit_code == 0, qPrintable(r.err));
        const std::vector<std::pair<QStringList, std::string>> members = {
            {{"--targets", "q,v"}, "--targets"},       {{"--alpha", "999"}, "--alpha 32"},
            {{"--rank", "4"}, "--rank 16"},             {{"--dropout", "0.1"}, "--dropout"},
            {{"--lr", "0.5"}, "--lr"},                 {{"--seed", "7"}, "--seed 42"},
            {{"--weight-decay", "0.1"}, "--weight-decay"}, {{"--grad-accum", "2"}, "--grad-accum"},
            {{"--data", q(root / "other.jsonl")}, "data"}, {{"--no-packing"}, "packing"}};
        for (const auto& [extra, expect] : members) {
            r = train(QStringList{"--resume", q(ckpt)} + quick() + extra, {}, 60000);
            QVERIFY2(r.exit_code == 2, (extra.join(" ").toStdString() + ": " + r.error_message()).c_str());
            QCOMPARE(r.error_code(), std::string("bad_argument"));
            QVERIFY2(r.error_message().find(expect) != std::string::npos, r.error_message().c_str());
            QVERIFY(r.steps() == 0);
        }
        // Another method says which one the checkpoint needs (it used to say model.safetensors is missing).
        for (const QString method : {"full", "qlora"}) {
            r = train(QStringList{"--resume", q(ckpt)} + quick(method), {}, 60000);
            QCOMPARE(r.error_code(), std::string("bad_argument"));
            QVERIFY2(r.error_message().find("--method lora, this run has " + method.toStdString()) != std::string::npos,
                     r.error_message().c_str());
        }
        // A tensor of another shape with a re-hashed manifest: named, never broadcast.
        const std::string a = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight";
        for (const auto& [file, name] : std::vector<std::pair<std::string, std::string>>{
                 {"optimizer.safetensors", a + ".exp_avg"}, {"adapter_model.safetensors", a},
                 {"optimizer.safetensors", "rng_state"}}) {
            const fs::path copy = root / ("shrunk-" + std::to_string(std::hash<std::string>()(file + name)));
            fs::copy(ckpt, copy, fs::copy_options::recursive);
            shrink_tensor(copy, file, name);
            r = train(QStringList{"--resume", q(copy)} + quick(), {}, 60000);
            QCOMPARE(r.exit_code, 1);
            QCOMPARE(r.error_code(), std::string("bad_model"));
            const std::string m = r.error_message();
            QVERIFY2(m.find(name) != std::string::npos && m.find("has shape [1]") != std::string::npos, m.c_str());
        }
        // A full fine-tune's weights likewise.
        const fs::path full = root / "full";
        r = train(QStringList{"--out", q(full)} + quick("full"));
        QVERIFY2(r.exit_code == 0, qPrintable(r.err));
        for (const std::string file : {"model.safetensors", "optimizer.safetensors"}) {
            const fs::path copy = root / ("full-" + file);
            fs::copy(full, copy, fs::copy_options::recursive);
            const std::string name = "model.layers.1.mlp.down_proj.weight";
            shrink_tensor(copy, file, file == "model.safetensors" ? name : name + ".exp_avg_sq");
            r = train(QStringList{"--resume", q(copy)} + quick("full"), {}, 60000);
            QCOMPARE(r.error_code(), std::string("bad_model"));
            QVERIFY2(r.error_message().find(name) != std::string::npos &&
                         r.error_message().find("has shape [1]") != std::string::npos,
                     r.error_message().c_str());
        }
    }
};

QTEST_GUILESS_MAIN(HostileTrainerRuns)
#include "test_hostile_trainer_runs.moc"
