#include <QtTest>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_result.hpp"
#include "test_support.hpp"
#include "wingspan/profiles.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {
using Result = wingspan::test::CliResult;
Result run(std::vector<std::string> args) {
    args.push_back("--profiles");
    args.push_back(WINGSPAN_TEST_PROFILES_DIR);
    return wingspan::test::run_cli(args);
}
// Runs `command` on a copy of the bundled profiles with one more file (relative path, content).
Result run_with_extra_profile(const std::string& file, const std::string& content, const std::string& command) {
    const fs::path dir = fs::temp_directory_path() / ("wingspan-cli-profiles-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::copy(WINGSPAN_TEST_PROFILES_DIR, dir, fs::copy_options::recursive);
    std::ofstream(dir / file) << content;
    const Result r = wingspan::test::run_cli({command, "--profiles", dir.string()});
    fs::remove_all(dir);
    return r;
}
}  // namespace

class CliTest : public QObject {
    Q_OBJECT
private slots:
    void planJsonContract() {
        const Result r = run({"plan", "--model", "llama-3.1-8b", "--method", "lora", "--seq", "1024", "--batch", "1",
                              "--machine", "rtx-4090", "--machine", "t4", "--json"});
        QCOMPARE(r.code, 0);
        const json j = json::parse(r.out);
        QCOMPARE(j["params"]["total"].get<std::int64_t>(), 8'030'261'248);
        QCOMPARE(j["params"]["trainable"].get<std::int64_t>(), 41'943'040);
        QVERIFY(j["components"]["frozen_weights"].get<std::int64_t>() == 2 * 8'030'261'248);
        const auto peak = j["peak_allocated_bytes"].get<std::int64_t>();
        const auto total = j["total_bytes"].get<std::int64_t>();
        QVERIFY(total > peak);
        std::int64_t sum = 0;
        for (auto& [k, v] : j["components"].items()) sum += v.get<std::int64_t>();
        QCOMPARE(sum, total);
        QCOMPARE(j["machines"].size(), size_t(2));
        QCOMPARE(j["machines"][0]["id"].get<std::string>(), std::string("rtx-4090"));
        QCOMPARE(j["machines"][0]["verdict"].get<std::string>(), std::string("fits"));
        QCOMPARE(j["machines"][1]["verdict"].get<std::string>(), std::string("no"));
        QVERIFY(j["machines"][1]["usable_bytes"].get<std::int64_t>() > 15'000'000'000);
    }

    // One machine, precision auto, fp32 too big but bf16-mixed not: the totals take the machine's
    // choice (bf16-mixed, with its reason), so the headline and the machine's row agree.
    void oneMachineTotalsTakeItsAutoPrecision() {
        const Result r = run({"plan", "--model", "llama-3.2-1b", "--method", "lora", "--seq", "2048", "--machine",
                              "cpu-laptop-8gb", "--json"});
        QCOMPARE(r.code, 0);
        const json j = json::parse(r.out);
        const json& row = j["machines"][0];
        QCOMPARE(row["precision"].get<std::string>(), std::string("bf16-mixed"));
        QCOMPARE(row["verdict"].get<std::string>(), std::string("fits"));
        QVERIFY2(j["precision_in_force"].get<std::string>().rfind("bf16-mixed", 0) == 0, j["precision_in_force"].dump().c_str());
        QVERIFY(j["precision_reason"].get<std::string>().find("fp32 would need") != std::string::npos);
        QCOMPARE(j["total_bytes"].get<std::int64_t>(), row["total_bytes"].get<std::int64_t>());
        QCOMPARE(j["peak_allocated_bytes"].get<std::int64_t>(), row["peak_allocated_bytes"].get<std::int64_t>());
    }

    // Gemma 2 soft-caps its attention scores, which SDPA's kernels cannot: asked for SDPA, the plan
    // says it runs eager (and is computed so), in the text and in --json; Llama is left as asked.
    void planSaysWhichAttentionRuns() {
        const Result gemma = run({"plan", "--model", "gemma-2-2b", "--method", "lora", "--attention", "sdpa"});
        QCOMPARE(gemma.code, 0);
        QVERIFY2(gemma.out.find("Attention in force: eager (sdpa was asked") != std::string::npos, gemma.out.c_str());
        const Result gemma_json = run({"plan", "--model", "gemma-2-2b", "--method", "lora", "--attention", "sdpa", "--json"});
        QCOMPARE(gemma_json.code, 0);
        QCOMPARE(json::parse(gemma_json.out)["attention_in_force"].get<std::string>(), std::string("eager"));
        const Result llama = run({"plan", "--model", "llama-3.2-1b", "--method", "lora", "--attention", "sdpa", "--json"});
        QCOMPARE(llama.code, 0);
        QCOMPARE(json::parse(llama.out)["attention_in_force"].get<std::string>(), std::string("sdpa"));
        const Result llama_text = run({"plan", "--model", "llama-3.2-1b", "--method", "lora", "--attention", "sdpa"});
        QVERIFY(llama_text.out.find("Attention in force") == std::string::npos);
    }

    void planTableIsReadable() {
        const Result r = run({"plan", "--size", "8b", "--method", "qlora", "--machine", "t4"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.find("Quantization constants") != std::string::npos);
        QVERIFY(r.out.find("Tesla T4") != std::string::npos);
        QVERIFY(r.out.find("no bf16") != std::string::npos);
        QVERIFY(r.out.find("GB = 10^9 bytes") != std::string::npos);
    }

    void allMethodsAndOptions() {
        for (const char* m : {"full", "lora", "qlora", "serve"})
            QCOMPARE(run({"plan", "--model", "smollm2-135m", "--method", m, "--json"}).code, 0);
        QCOMPARE(run({"plan", "--model", "qwen2.5-7b", "--method", "full", "--devices", "8", "--sharding", "zero3",
                      "--offload", "--optimizer", "adamw8bit", "--attention", "eager", "--grad-checkpointing", "off",
                      "--precision", "bf16", "--json"})
                     .code,
                 0);
    }

    void fitSolves() {
        const Result r = run({"fit", "--model", "llama-3.1-8b", "--method", "qlora", "--machine", "rtx-4090", "--solve",
                              "batch", "--json"});
        QCOMPARE(r.code, 0);
        const json j = json::parse(r.out);
        QVERIFY(j["results"][0]["value"].get<int>() > 1);
        const Result size = run({"fit", "--model", "qwen2.5-7b", "--method", "lora", "--machine", "rtx-4090",
                                 "--solve", "size"});
        QCOMPARE(size.code, 0);
        QVERIFY(size.out.find("qwen2.5-7b") != std::string::npos);
    }

    void tableScenario() {
        const Result md = run({"table", "--scenario", "lesson-sizes"});
        QCOMPARE(md.code, 0);
        QVERIFY(md.out.find("| 70B (Llama 3.1 70B) |") != std::string::npos);
        const Result csv = run({"table", "--scenario", "lesson-machines", "--format", "csv"});
        QCOMPARE(csv.code, 0);
        QVERIFY(csv.out.rfind("Scenario,Winner,Why\n", 0) == 0);
    }

    void listings() {
        const Result models = run({"models"});
        QCOMPARE(models.code, 0);
        QVERIFY(models.out.find("8,030,261,248") != std::string::npos);
        const Result machines = run({"machines"});
        QVERIFY(machines.out.find("mac-studio-m3-ultra-96gb") != std::string::npos);
        // Issue 32, item 9: every machine's name whole, never cut mid-word.
        const auto lib = wingspan::ProfileLibrary::load(WINGSPAN_TEST_PROFILES_DIR);
        for (const auto& m : lib.machines())
            QVERIFY2(machines.out.find(" " + m.name + " ") != std::string::npos, m.name.c_str());
    }

    void badInputExitsTwo_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown model") << QStringList{"plan", "--model", "llama-3.1-8"} << "closest: llama-3.1-8b";
        QTest::newRow("unknown machine") << QStringList{"plan", "--machine", "rtx4090"} << "closest: rtx-4090";
        QTest::newRow("sequence 0") << QStringList{"plan", "--seq", "0"} << "--seq must be at least 1";
        QTest::newRow("rank > hidden") << QStringList{"plan", "--model", "smollm2-135m", "--rank", "4096"}
                                       << "larger than the hidden size 576";
        QTest::newRow("not a number") << QStringList{"plan", "--batch", "four"} << "whole number";
        QTest::newRow("bad method") << QStringList{"plan", "--method", "dpo"} << "expected one of: full, lora, qlora, serve";
        QTest::newRow("bad target") << QStringList{"plan", "--targets", "q,x"} << "unknown LoRA target 'x'";
        QTest::newRow("unknown option") << QStringList{"plan", "--sequence", "5"} << "unknown option --sequence";
        QTest::newRow("fit without solve") << QStringList{"fit", "--machine", "t4"} << "--solve";
        QTest::newRow("unknown scenario") << QStringList{"table", "--scenario", "lesson-size"} << "closest: lesson-sizes";
        QTest::newRow("unknown command") << QStringList{"plot"} << "unknown command";
    }
    void badInputExitsTwo() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        std::vector<std::string> a;
        for (const auto& s : args) a.push_back(s.toStdString());
        const Result r = run(a);
        QCOMPARE(r.code, 2);
        QVERIFY(r.out.empty());
        QVERIFY2(r.err.find(message.toStdString()) != std::string::npos, r.err.c_str());
    }

    void modelFromFolderAndHub() {
        const fs::path dir = fs::temp_directory_path() / ("wingspan-cli-folder-" + std::to_string(::getpid()));
        fs::create_directories(dir);
        std::ofstream(dir / "config.json") << wingspan::test::library().model("smollm2-135m").arch.to_hf_config().dump();
        const Result r = run({"plan", "--model-dir", dir.string(), "--method", "lora", "--json"});
        fs::remove_all(dir);
        QCOMPARE(r.code, 0);
        QCOMPARE(json::parse(r.out)["params"]["total"].get<std::int64_t>(), 134'515'008);
        // Offline with nothing cached: a clear answer, exit 2, never a network call.
        const Result hub = run({"plan", "--hf", "nobody/not-cached-model", "--offline"});
        QCOMPARE(hub.code, 2);
        QVERIFY2(hub.err.find("nobody/not-cached-model") != std::string::npos, hub.err.c_str());
    }

    void brokenProfileNamesFileAndField() {
        const auto r = run_with_extra_profile("machines/broken.json",
                                              R"({"id": "broken", "kind": "gpu", "memory_bytes": "lots", "tflops_fp32": 1})",
                                              "machines");
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.find("broken.json") != std::string::npos, r.err.c_str());
        QVERIFY2(r.err.find("memory_bytes") != std::string::npos, r.err.c_str());
        QVERIFY2(r.err.find("byte count") != std::string::npos, r.err.c_str());
    }

    void frameworkSlackBaseIsChecked() {
        const auto r = run_with_extra_profile("frameworks/odd.json", R"({"id": "odd", "allocator_slack_of": "weights"})",
                                              "frameworks");
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.find("odd.json") != std::string::npos, r.err.c_str());
        QVERIFY2(r.err.find("allocator_slack_of") != std::string::npos, r.err.c_str());
    }

    void invalidJsonProfile() {
        const auto r = run_with_extra_profile("models/typo.json", "{\"id\": \"typo\",", "models");
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.find("typo.json") != std::string::npos);
        QVERIFY(r.err.find("not valid JSON") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(CliTest)
#include "test_cli.moc"
