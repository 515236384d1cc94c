// Issue 26: the data set beside the other ways in. `wingspan fit --data` solves at the peak batch
// each candidate forms, `wingspan explain-oom --data` diagnoses the plan at the data's peak batch,
// and `plan --from CONFIG --data` forms the batches as the config's packing key says.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_result.hpp"
#include "data_fixtures.hpp"

using nlohmann::json;
using wingspan::testing::text_row;
using wingspan::testing::write;
namespace fs = std::filesystem;

namespace {

// Llama 3.1 8B's shape (meta-llama/Llama-3.1-8B config.json) beside the byte tokenizer: the
// planner reads the widths from config.json and the lengths with tokenizer.json.
void write_8b_config(const fs::path& dir) {
    write(dir / "config.json", json{{"model_type", "llama"},
                                    {"architectures", {"LlamaForCausalLM"}},
                                    {"hidden_size", 4096},
                                    {"intermediate_size", 14336},
                                    {"num_hidden_layers", 32},
                                    {"num_attention_heads", 32},
                                    {"num_key_value_heads", 8},
                                    {"vocab_size", 128256},
                                    {"max_position_embeddings", 131072},
                                    {"tie_word_embeddings", false}}
                                   .dump());
}

wingspan::test::CliResult cli(std::vector<std::string> args) {
    args.insert(args.end(), {"--profiles", WINGSPAN_TEST_PROFILES_DIR});
    return wingspan::test::run_cli(args);
}

// `wingspan explain-oom args` with `message` on standard input.
wingspan::test::CliResult explain(const std::string& message, std::vector<std::string> args) {
    std::istringstream in(message);
    auto* old = std::cin.rdbuf(in.rdbuf());
    args.insert(args.begin(), "explain-oom");
    const auto r = cli(args);
    std::cin.rdbuf(old);
    return r;
}

std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

class ConfigImportDataTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        root_ = dir_.path().toStdString();
        model_ = wingspan::testing::write_tiny_model(root_ / "model");
        write_8b_config(model_);
        // 57 rows of 30 tokens and a tail of 400, 380 and 350 (text rows: bytes + 1 tokens).
        std::string rows;
        for (int i = 0; i < 60; ++i) rows += text_row(i == 7 ? 399 : i == 31 ? 379 : i == 52 ? 349 : 29);
        data_ = root_ / "tail.jsonl";
        write(data_, rows);
    }

    // fit --data --solve batch: the largest batch whose own peak batch fits, checked against the
    // plan at that batch and one more; far above the batch that fits at the cap.
    void fitSolvesAtThePeakBatch() {
        const std::vector<std::string> base = {"--model-dir", model_.string(), "--method", "qlora", "--seq", "4096",
                                               "--grad-checkpointing", "off", "--precision", "bf16-mixed",
                                               "--machine", "rtx-3090", "--framework", "hf-transformers"};
        auto fit = [&](std::vector<std::string> extra) {
            std::vector<std::string> args = {"fit", "--solve", "batch", "--json"};
            args.insert(args.end(), base.begin(), base.end());
            args.insert(args.end(), extra.begin(), extra.end());
            const auto r = cli(args);
            if (r.code != 0) qWarning("%s", r.err.c_str());
            return r.code == 0 ? json::parse(r.out)["results"][0] : json();
        };
        const json with = fit({"--data", data_.string()});
        const json at_cap = fit({});
        QVERIFY(with.is_object() && at_cap.is_object());
        const std::int64_t batch = with["value"].get<std::int64_t>();
        QVERIFY2(batch > 1 && !with["unbounded"].get<bool>(), with.dump().c_str());
        QVERIFY2(batch > at_cap["value"].get<std::int64_t>(), (with.dump() + at_cap.dump()).c_str());
        qInfo("fit --data: batch %lld (needs %lld B); at the cap --seq 4096 without data: batch %lld", (long long)batch,
              (long long)with["needed_bytes"].get<std::int64_t>(), (long long)at_cap["value"].get<std::int64_t>());
        // The order is random for TRL: the longest examples together, padded to 400.
        QCOMPARE(with["data"]["padding"].get<std::string>(), std::string("dynamic"));
        QCOMPARE(with["data"]["peak_batch_tokens"].get<std::int64_t>(), batch * 400);
        auto plan_fits = [&](std::int64_t b) {
            std::vector<std::string> args = {"plan", "--json", "--data", data_.string(), "--batch", std::to_string(b)};
            args.insert(args.end(), base.begin(), base.end());
            const auto r = cli(args);
            if (r.code != 0) qWarning("%s", r.err.c_str());
            return json::parse(r.out)["machines"][0]["verdict"].get<std::string>() != "no";
        };
        QVERIFY(plan_fits(batch));
        QVERIFY(!plan_fits(batch + 1));
        // The text says where it was solved.
        std::vector<std::string> text = {"fit", "--solve", "batch", "--data", data_.string()};
        text.insert(text.end(), base.begin(), base.end());
        const auto r = cli(text);
        QVERIFY2(r.code == 0, r.err.c_str());
        QVERIFY2(r.out.find("at the data's peak batch " + std::to_string(batch) + " × 400 tokens (padding dynamic)") !=
                     std::string::npos,
                 r.out.c_str());
    }

    // explain-oom --data diagnoses the plan at the data's peak batch: the same diagnosis as the
    // plan at --seq 400 (the peak's padded length), not the one at the cap.
    void explainOomPlansAtThePeakBatch() {
        const std::string message = read(fs::path(WINGSPAN_TEST_FIXTURES_DIR) / "oom" / "cuda-2.2-full.txt");
        const std::vector<std::string> base = {"--model-dir", model_.string(), "--method", "lora", "--batch", "4",
                                               "--grad-checkpointing", "off", "--json"};
        auto run = [&](std::vector<std::string> extra) {
            auto args = base;
            args.insert(args.end(), extra.begin(), extra.end());
            const auto r = explain(message, args);
            if (r.code != 0) qWarning("%s", r.err.c_str());
            return r.code == 0 ? json::parse(r.out) : json();
        };
        const json with = run({"--seq", "4096", "--data", data_.string()});
        const json at_peak = run({"--seq", "400"});
        const json at_cap = run({"--seq", "4096"});
        QVERIFY(with.is_object() && at_peak.is_object());
        QCOMPARE(with.dump(), at_peak.dump());
        QVERIFY(with.dump() != at_cap.dump());
        QVERIFY2(with.contains("advice") && !with["advice"].empty(), with.dump().c_str());
    }

    // plan --from CONFIG --data: the config's packing key forms the batches (and a --padding given
    // after it wins); without --data the padding is not asked for.
    void fromConfigPaddingFormsTheBatches() {
        const fs::path trl = root_ / "sft.yaml";
        write(trl, "model_name_or_path: meta-llama/Llama-3.1-8B\nuse_peft: true\nmax_length: 512\n"
                   "per_device_train_batch_size: 4\npacking: true\n");
        const fs::path axolotl = root_ / "axolotl.yaml";
        write(axolotl, "base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nsequence_len: 512\nmicro_batch_size: 4\n"
                       "pad_to_sequence_len: true\n");
        auto padding = [&](const fs::path& config, std::vector<std::string> extra) {
            std::vector<std::string> args = {"plan", "--from", config.string(), "--model-dir", model_.string(), "--json"};
            args.insert(args.end(), extra.begin(), extra.end());
            const auto r = cli(args);
            if (r.code != 0) qWarning("%s", r.err.c_str());
            const json j = r.code == 0 ? json::parse(r.out) : json();
            return j.contains("data") ? j["data"]["padding"].get<std::string>() : std::string(r.code == 0 ? "none" : "error");
        };
        QCOMPARE(padding(trl, {"--data", data_.string()}), std::string("packed"));
        QCOMPARE(padding(axolotl, {"--data", data_.string()}), std::string("max"));
        QCOMPARE(padding(axolotl, {"--data", data_.string(), "--padding", "dynamic"}), std::string("dynamic"));
        QCOMPARE(padding(trl, {}), std::string("none"));
    }

    // --data stays refused where it means nothing.
    void otherCommandsRefuseData() {
        const auto r = cli({"table", "--scenario", "x", "--data", data_.string()});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.find("read by `wingspan plan`, `fit` and `explain-oom`") != std::string::npos, r.err.c_str());
    }

private:
    QTemporaryDir dir_;
    fs::path root_, model_, data_;
};

QTEST_GUILESS_MAIN(ConfigImportDataTest)
#include "test_config_import_data.moc"
