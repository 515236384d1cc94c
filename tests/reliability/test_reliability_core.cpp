// Issue 11, core and command line: hostile files answer with clear errors (never a crash,
// a hang, a wrong "fits" or a lost file). Each test names the class of the issue it covers.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "wingspan/architecture.hpp"
#include "wingspan/errors.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/profiles.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/run_record.hpp"
#include "wingspan/hub.hpp"
#include "wingspan/safe_file.hpp"
#include "wingspan/safetensors.hpp"
#include "fault_support.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <csignal>

using nlohmann::json;
namespace fs = std::filesystem;
using namespace wingspan;
using wingspan::test::ScopedEnv;
using wingspan::test::with_file_size_limit;

namespace {

struct Result {
    int code;
    std::string out, err;
};

Result run_cli(std::vector<std::string> args) {
    std::ostringstream out, err;
    args.push_back("--profiles");
    args.push_back(WINGSPAN_TEST_PROFILES_DIR);
    const int code = wingspan::cli::run(args, out, err);
    return {code, out.str(), err.str()};
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// A finished run folder that calibrate accepts (predicted and measured bytes).
fs::path make_run(const fs::path& root, const std::string& name, std::int64_t rss) {
    const fs::path run = root / name;
    fs::create_directories(run);
    write_text(run / "plan.json", "{}\n");
    std::string ev;
    ev += R"({"v":1,"event":"hello","t":0})" "\n";
    ev += R"({"v":1,"event":"predicted","t":0.1,"components":{"frozen_weights":1000000,"activations":500000},"peak_bytes":1500000,"total_bytes":2000000})" "\n";
    ev += R"({"v":1,"event":"memory","t":0.2,"components":{"frozen_weights":1000000,"activations":400000},"allocated_bytes":1400000,"peak_bytes":1450000,"rss_bytes":)" +
          std::to_string(rss) + "}\n";
    ev += R"({"v":1,"event":"done","t":0.3,"reason":"completed","peak_bytes":1450000,"rss_peak_bytes":)" + std::to_string(rss) + "}\n";
    write_text(run / "events.jsonl", ev);
    write_text(run / "result.json", R"({"status":"completed","exit_code":0,"signal":0})");
    return run;
}

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }


json small_config() {
    return {{"model_type", "llama"}, {"hidden_size", 64},        {"intermediate_size", 128},
            {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
            {"vocab_size", 100},      {"tie_word_embeddings", false}};
}

}  // namespace

class ReliabilityCore : public QObject {
    Q_OBJECT
private slots:
    // ---- 1. unbounded recursion on JSON ----
    void deepJsonIsRefusedEverywhere() {
        const std::string deep = "{\"a\":" + nested(1'000'000) + "}";
        QVERIFY(!json_depth_within(deep));
        QVERIFY(json_depth_within("{\"s\":\"[[[[[[[[[[[[[[[[\\\"\",\"b\":[[1]]}", 3));   // brackets in strings don't count
        std::string why;
        QVERIFY(!try_parse_untrusted_json(deep, &why));
        QVERIFY2(why.find("nested deeper than 128") != std::string::npos, why.c_str());
        QVERIFY(try_parse_untrusted_json(nested(kMaxJsonDepth)).has_value());

        // A run event: not fatal, counted as malformed.
        const auto pr = protocol::parse_line("{\"v\":1,\"event\":\"hello\",\"t\":0,\"plan\":" + nested(500'000) + "}");
        QVERIFY(!pr.event);
        QVERIFY2(pr.error.find("nested deeper") != std::string::npos, pr.error.c_str());
        // A safetensors header.
        try {
            safetensors::parse_header("{\"__metadata__\":" + nested(200'000) + "}", 10);
            QFAIL("a deep header was accepted");
        } catch (const InputError& e) {
            QVERIFY2(std::string(e.what()).find("nested deeper") != std::string::npos, e.what());
        }

        // `wingspan plan --config` on a 2 MB config nested 10^6 deep: exit 2, not a stack overflow.
        QTemporaryDir tmp;
        const fs::path cfg = fs::path(tmp.path().toStdString()) / "config.json";
        write_text(cfg, "{\"hidden_size\":" + nested(1'000'000) + "}");
        const Result r = run_cli({"plan", "--config", cfg.string()});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.find("nested deeper") != std::string::npos, r.err.c_str());
        // --model-dir reads the same way.
        const fs::path dir = fs::path(tmp.path().toStdString()) / "model";
        fs::create_directories(dir);
        write_text(dir / "config.json", "{\"x\":" + nested(1'000'000) + "}");
        const Result m = run_cli({"plan", "--model-dir", dir.string()});
        QCOMPARE(m.code, 2);
        QVERIFY2(m.err.find("nested deeper") != std::string::npos, m.err.c_str());
    }


    // ---- 2. integer overflow turning impossible plans into "fits" ----
    void impossibleSizesAreRefused() {
        // 2^62 as the micro-batch used to wrap to ~18 GB and "fits".
        Result r = run_cli({"plan", "--model", "llama-3.1-8b", "--method", "lora", "--batch", "4611686018427387904",
                        "--machine", "rtx-4090"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.find("more than any machine can hold") != std::string::npos, r.err.c_str());
        // A huge but representable plan still gets an honest "no" with its size.
        r = run_cli({"plan", "--model", "llama-3.1-8b", "--method", "lora", "--batch", "4096", "--machine", "rtx-4090",
                 "--json"});
        QCOMPARE(r.code, 0);
        const json j = json::parse(r.out);
        QCOMPARE(j["machines"][0]["verdict"].get<std::string>(), std::string("no"));
        QVERIFY(j["total_bytes"].get<std::int64_t>() > 1'000'000'000'000);

        // vocab_size 2^62 in a config.
        QTemporaryDir tmp;
        const fs::path cfg = fs::path(tmp.path().toStdString()) / "config.json";
        json c = small_config();
        c["vocab_size"] = std::int64_t(1) << 62;
        write_text(cfg, c.dump());
        r = run_cli({"plan", "--config", cfg.string(), "--machine", "rtx-4090"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.find("vocab_size") != std::string::npos, r.err.c_str());
        // Every size at most 2^31 - 1, yet 2^31 × 2^31 weights: refused by the parameter bound.
        c = small_config();
        c["vocab_size"] = 2'000'000'000;
        c["hidden_size"] = 2'000'000'000;
        c["num_attention_heads"] = 1;
        c["num_key_value_heads"] = 1;
        write_text(cfg, c.dump());
        r = run_cli({"plan", "--config", cfg.string(), "--machine", "rtx-4090"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.find("10^15 parameters") != std::string::npos, r.err.c_str());

        // The solver reads "beyond any machine" as "does not fit", not as an error.
        r = run_cli({"fit", "--model", "llama-3.1-8b", "--method", "lora", "--seq", "1048576", "--attention", "eager",
                 "--solve", "batch", "--machine", "h100", "--json"});
        QCOMPARE(r.code, 0);
        QCOMPARE(json::parse(r.out)["results"][0]["value"].get<std::int64_t>(), std::int64_t(0));
    }

    void safetensorsShapeOverflowIsRefused() {
        const std::string header =
            R"({"w":{"dtype":"F32","shape":[4611686018427387904,2],"data_offsets":[0,0]}})";
        try {
            safetensors::parse_header(header, header.size());
            QFAIL("a [2^62, 2] tensor with empty offsets was accepted");
        } catch (const InputError& e) {
            QVERIFY2(std::string(e.what()).find("larger than any machine can hold") != std::string::npos, e.what());
        }
        // [2^31, 2^31, 4] wraps 64 bits only in the byte count (× 4 bytes).
        const std::string bytes_overflow =
            R"({"w":{"dtype":"F32","shape":[2147483648,2147483648,2],"data_offsets":[0,0]}})";
        QVERIFY_THROWS_EXCEPTION(InputError, safetensors::parse_header(bytes_overflow, bytes_overflow.size()));
    }

    // ---- 5. temporary files follow symlinks ----
    void writersNeverFollowPlantedSymlinks() {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        const fs::path victim = root / "victim.txt";
        write_text(victim, "precious\n");

        // The run store's result.json used a fixed "result.json.tmp".
        const fs::path run = make_run(root / "runs", "r1", 3'000'000);
        fs::remove(run / "result.json");
        fs::create_symlink(victim, run / "result.json.tmp");
        RunRecord rec;
        rec.finish(0);
        RunStore::write_result(run, rec);
        QCOMPARE(read_text(victim), std::string("precious\n"));
        QVERIFY(json::parse(read_text(run / "result.json")).is_object());

        // AtomicFile: a symlink at the target is replaced, never written through; the
        // temporary's name is not predictable, so a planted ".name.tmp-<pid>" is ignored.
        const fs::path target = root / "out.json";
        fs::create_symlink(victim, target);
        fs::create_symlink(victim, root / (".out.json.tmp-" + std::to_string(::getpid())));
        write_file_atomically(target, "new\n");
        QCOMPARE(read_text(victim), std::string("precious\n"));
        QVERIFY(!fs::is_symlink(target));
        QCOMPARE(read_text(target), std::string("new\n"));

        // Calibration save through `wingspan calibrate`: its target planted as a symlink.
        const ScopedEnv config("XDG_CONFIG_HOME", (root / "config").string());
        const fs::path saved = root / "config" / "wingspan" / "frameworks" / "libtorch-cpu-calibrated.json";
        fs::create_directories(saved.parent_path());
        fs::create_symlink(victim, saved);
        const Result r = run_cli({"calibrate", run.string(), make_run(root / "runs", "r2", 3'500'000).string()});
        QVERIFY2(r.code == 0, r.err.c_str());
        QCOMPARE(read_text(victim), std::string("precious\n"));
        QVERIFY(!fs::is_symlink(saved));
    }

    // ---- 6. write errors ignored ----
    void fullDiskIsAnErrorAndABadProfileIsSkipped() {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        const ScopedEnv config("XDG_CONFIG_HOME", (root / "config").string());
        const fs::path a = make_run(root / "runs", "a", 3'000'000), b = make_run(root / "runs", "b", 3'400'000);
        // `wingspan calibrate` on a "full disk" (file writes limited to 0 bytes).
        Result r;
        with_file_size_limit(0, [&] { r = run_cli({"calibrate", a.string(), b.string()}); });
        QCOMPARE(r.code, 1);
        QVERIFY2(r.out.find("saved") == std::string::npos, r.out.c_str());
        QVERIFY2(r.err.find("cannot write") != std::string::npos || r.err.find("cannot replace") != std::string::npos,
                 r.err.c_str());
        const fs::path frameworks = root / "config" / "wingspan" / "frameworks";
        for (const auto& e : fs::directory_iterator(frameworks))   // nothing half-written is left
            QVERIFY2(fs::file_size(e.path()) > 0, e.path().c_str());

        // An empty (or otherwise broken) user profile is skipped with a warning naming it.
        write_text(frameworks / "libtorch-cpu-calibrated.json", "");
        r = run_cli({"machines"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.err.find("libtorch-cpu-calibrated.json") != std::string::npos, r.err.c_str());
        QVERIFY2(r.err.find("skipped") != std::string::npos, r.err.c_str());
        r = run_cli({"plan", "--model", "llama-3.1-8b", "--method", "lora", "--machine", "rtx-4090"});
        QCOMPARE(r.code, 0);

        // AtomicFile: a failed write leaves the old file whole and no temporary behind.
        const fs::path f = root / "keep.txt";
        write_text(f, "old contents\n");
        with_file_size_limit(4, [&] {
            QVERIFY_THROWS_EXCEPTION(IoError, write_file_atomically(f, "much longer new contents\n"));
        });
        QCOMPARE(read_text(f), std::string("old contents\n"));
        QCOMPARE(remove_stale_temporaries(root), 0);
    }

    // ---- 7. run store ----
    void badRunIsSkippedAndNamed() {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        const ScopedEnv data("XDG_DATA_HOME", (root / "data").string());
        const fs::path runs = root / "data" / "wingspan" / "runs";
        const fs::path good = make_run(runs, "20261203-080000-good", 3'000'000);
        const fs::path good2 = make_run(runs, "20261203-080001-good2", 3'300'000);
        const fs::path bad = make_run(runs, "20261203-080002-bad", 3'000'000);
        write_text(bad / "result.json", R"({"status":"completed","exit_code":"zero"})");
        // A hello event nested 10^6 deep is a malformed line, not a crash.
        const fs::path deep = make_run(runs, "20261203-080003-deep", 3'100'000);
        append_line(deep / "events.jsonl", R"({"v":1,"event":"hello","t":0,"plan":)" + nested(1'000'000) + "}");
        QCOMPARE(RunStore::load(deep).malformed_lines(), std::int64_t(1));

        Result r = run_cli({"runs"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.find("20261203-080000-good") != std::string::npos, r.out.c_str());
        QVERIFY2(r.out.find("20261203-080003-deep") != std::string::npos, r.out.c_str());
        QVERIFY2(r.out.find("unreadable: run " + bad.string() + ": result.json: \"exit_code\" must be an integer") !=
                     std::string::npos,
                 r.out.c_str());
        const ScopedEnv config("XDG_CONFIG_HOME", (root / "config").string());
        r = run_cli({"calibrate", good.string(), bad.string(), good2.string(), deep.string()});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.err.find(bad.string()) != std::string::npos, r.err.c_str());
        QVERIFY2(r.out.find("from 3 runs") != std::string::npos, r.out.c_str());
    }

    void concurrentRunsGetTheirOwnFoldersAndWholeLines() {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        const fs::path shared = root / "shared-events.jsonl";
        constexpr int kProcs = 4, kRuns = 25, kLines = 50;
        const std::string payload(100'000, 'x');   // lines far larger than a stream buffer
        std::vector<pid_t> kids;
        for (int p = 0; p < kProcs; ++p) {
            const pid_t pid = fork();
            if (pid == 0) {
                try {
                    RunStore store(root / "runs");
                    for (int i = 0; i < kRuns; ++i) store.create(json::object(), "same-label");
                    for (int i = 0; i < kLines; ++i)
                        RunStore::append_line(root, json{{"p", p}, {"i", i}, {"x", payload}}.dump());
                } catch (...) {
                    _exit(1);
                }
                _exit(0);
            }
            kids.push_back(pid);
        }
        for (pid_t k : kids) {
            int status = 0;
            waitpid(k, &status, 0);
            QVERIFY(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        QCOMPARE(RunStore(root / "runs").list().size(), size_t(kProcs * kRuns));
        std::ifstream in(root / "events.jsonl");
        std::string line;
        int lines = 0;
        while (std::getline(in, line)) {
            ++lines;
            QVERIFY2(json::accept(line), ("line " + std::to_string(lines) + " is interleaved").c_str());
        }
        QCOMPARE(lines, kProcs * kLines);
        (void)shared;
    }

    // ---- 9. smaller ----
    void typeErrorsAndFoldersAreBadInput() {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        json c = small_config();
        c["model_type"] = 5;
        write_text(root / "config.json", c.dump());
        Result r = run_cli({"plan", "--config", (root / "config.json").string()});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.find("internal") == std::string::npos, r.err.c_str());
        QVERIFY2(r.err.find("wrong type") != std::string::npos, r.err.c_str());
        c = small_config();
        c["hidden_size"] = "64";
        write_text(root / "config.json", c.dump());
        r = run_cli({"plan", "--config", (root / "config.json").string()});
        QCOMPARE(r.code, 2);
        // A folder given as --config.
        r = run_cli({"plan", "--config", root.string()});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.find("is a folder") != std::string::npos, r.err.c_str());
        // A named pipe given as --config answers at once instead of waiting for a writer.
        const fs::path fifo = root / "pipe.json";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        r = run_cli({"plan", "--config", fifo.string()});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.find("named pipe") != std::string::npos, r.err.c_str());
    }

    void endpointCredentialsAreNeverStored() {
        QCOMPARE(hub::strip_userinfo("https://user:secret@hub.example.com/prefix"),
                 std::string("https://hub.example.com/prefix"));
        QCOMPARE(hub::strip_userinfo("http://127.0.0.1:8080"), std::string("http://127.0.0.1:8080"));
        QCOMPARE(hub::strip_userinfo("https://hub.example.com/a@b"), std::string("https://hub.example.com/a@b"));
        const ScopedEnv endpoint("HF_ENDPOINT", "https://me:hunter2@mirror.example.com/");
        QCOMPARE(hub::default_endpoint(), std::string("https://mirror.example.com"));

        // An import passed an endpoint with credentials keeps them out of everything it stores;
        // and the overall deadline ends it before any request once it has passed.
        QTemporaryDir tmp;
        hub::HubOptions o;
        o.endpoint = "http://me:hunter2@127.0.0.1:9";
        o.cache_dir = tmp.path().toStdString();
        o.import_deadline = std::chrono::milliseconds(-1);
        try {
            hub::import_from_hub("owner/model", o);
            QFAIL("an import past its deadline went on");
        } catch (const hub::HubError& e) {
            QCOMPARE(int(e.kind()), int(hub::HubErrorKind::Timeout));
            QVERIFY2(std::string(e.what()).find("overall deadline") != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).find("hunter2") == std::string::npos, e.what());
        }
    }

    void unknownCommandIsBadInput() {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove("DISPLAY");
        env.remove("WAYLAND_DISPLAY");
        env.remove("QT_QPA_PLATFORM");
        p.setProcessEnvironment(env);
        p.start(WINGSPAN_CLI_BIN, {"frobnicate"});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 2);
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err.contains("unknown command 'frobnicate'"), qPrintable(err));
    }
};

QTEST_GUILESS_MAIN(ReliabilityCore)
#include "test_reliability_core.moc"
