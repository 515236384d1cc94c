// Issue 26 item 2: plans from the data. Core's batch rules on token lengths (data_lengths.hpp),
// and `wingspan plan --data` on JSONL files read with a model folder's own tokenizer.
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "cli_result.hpp"
#include "data_fixtures.hpp"
#include "wingspan/data_lengths.hpp"
#include "wingspan/errors.hpp"

using namespace wingspan;
using wingspan::test::run_cli;
using nlohmann::json;
using wingspan::testing::text_row;
using wingspan::testing::write;
namespace fs = std::filesystem;

namespace {

// 60 short examples (30 tokens) and a tail of three long ones (400, 380, 350 tokens).
std::vector<std::int64_t> long_tail() {
    std::vector<std::int64_t> v(60, 30);
    v[7] = 400;
    v[31] = 380;
    v[52] = 350;
    return v;
}

Batching batching(Padding p, std::int64_t cap = 512, std::int64_t micro = 4) {
    Batching b;
    b.cap = cap;
    b.micro_batch = micro;
    b.padding = p;
    return b;
}


}  // namespace

class DataLengthsTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        root_ = dir_.path().toStdString();
        model_ = wingspan::testing::write_tiny_model(root_ / "tiny");
        // The long tail as text rows: lengths - 1 bytes each (the EOS makes the rest).
        std::string rows;
        for (std::int64_t n : long_tail()) rows += text_row(static_cast<size_t>(n - 1));
        data_ = root_ / "tail.jsonl";
        write(data_, rows);
    }

    // Dynamic padding with a random order: the peak batch is the longest examples together, four
    // rows of the longest (400 tokens), not the mean (about 48).
    void dynamicWorstCaseIsTheLongestNotTheMean() {
        const auto v = long_tail();
        const double mean = double(std::accumulate(v.begin(), v.end(), std::int64_t{0})) / double(v.size());
        QVERIFY(mean < 50);
        const PeakBatch p = peak_batch(v, batching(Padding::Dynamic));
        QVERIFY(p.worst_case);
        QCOMPARE(p.rows, std::int64_t(4));
        QCOMPARE(p.cols, std::int64_t(400));
        QCOMPARE(p.tokens(), std::int64_t(1600));
        // wingspan-train's rows hold length - 1 inputs; mlx-lm rounds up to a multiple of 32.
        Batching native = batching(Padding::Dynamic);
        native.last_token_only_label = true;
        QCOMPARE(peak_batch(v, native).cols, std::int64_t(399));
        Batching mlx = batching(Padding::Dynamic);
        mlx.multiple = 32;
        QCOMPARE(peak_batch(v, mlx).cols, std::int64_t(416));
        // The cap cuts: 256 tokens at most, and three examples are truncated.
        const DataSummary capped = summarize_lengths(v, batching(Padding::Dynamic, 256));
        QCOMPARE(capped.peak.cols, std::int64_t(256));
        QCOMPARE(capped.truncated_examples, std::int64_t(3));
    }

    void packedAndMaxAreTheCap() {
        const auto v = long_tail();
        for (Padding p : {Padding::Packed, Padding::Max}) {
            const DataSummary s = summarize_lengths(v, batching(p));
            QCOMPARE(s.peak.tokens(), std::int64_t(4 * 512));
            QVERIFY(!s.peak.worst_case);
        }
        const std::int64_t total = 57 * 30 + 400 + 380 + 350;
        QCOMPARE(summarize_lengths(v, batching(Padding::Packed)).tokens_total, total);
        QCOMPARE(summarize_lengths(v, batching(Padding::Packed)).tokens_per_epoch, total);   // no padding
        QCOMPARE(summarize_lengths(v, batching(Padding::Max)).tokens_per_epoch, std::int64_t(60 * 512));
        QCOMPARE(summarize_lengths(v, batching(Padding::Packed, 256)).truncated_examples, std::int64_t(0));   // text runs on
        QCOMPARE(summarize_lengths(v, batching(Padding::Max, 256)).truncated_examples, std::int64_t(3));
    }

    // The order known (wingspan-train's seed): only the batches the run takes count. One micro-batch
    // of 4 peaks at the longest of the first 4 examples in epoch 0's order; the whole epoch at 400.
    void replayedOrderTakesOnlyTheRunsBatches() {
        const auto v = long_tail();
        const auto order = epoch_order(v.size(), 42, 0, true);
        std::int64_t first = 0;
        for (int r = 0; r < 4; ++r) first = std::max(first, v[order[static_cast<size_t>(r)]]);
        Batching b = batching(Padding::Dynamic);
        b.order = Batching::Order{42, 1};
        const PeakBatch one = peak_batch(v, b);
        QCOMPARE(one.cols, first);
        QCOMPARE(one.index, std::int64_t(0));
        QVERIFY(!one.worst_case);
        b.order = Batching::Order{42, 0};   // one epoch: 15 batches of 4
        const PeakBatch epoch = peak_batch(v, b);
        QCOMPARE(epoch.cols, std::int64_t(400));
        // The batch that holds example 7 (the 400-token one) in that order.
        const auto at = std::find(order.begin(), order.end(), 7u) - order.begin();
        QCOMPARE(epoch.index, std::int64_t(at / 4));
        // One epoch's padded tokens: each batch of 4 at its longest.
        std::int64_t padded = 0;
        for (size_t k = 0; k < order.size(); k += 4) {
            std::int64_t longest = 0;
            for (size_t r = k; r < k + 4; ++r) longest = std::max(longest, v[order[r]]);
            padded += 4 * longest;
        }
        QCOMPARE(summarize_lengths(v, b).tokens_per_epoch, padded);
        // Two devices form global batches of 8 rows padded together; each device's rows are 4.
        b.devices = 2;
        QCOMPARE(peak_batch(v, b).rows, std::int64_t(4));
        QCOMPARE(peak_batch(v, b).cols, std::int64_t(400));
        // Too few examples for one batch is a clear error, not a zero peak.
        b.micro_batch = 40;
        QVERIFY_THROWS_EXCEPTION(InputError, peak_batch(v, b));
        QVERIFY_THROWS_EXCEPTION(InputError, peak_batch({}, batching(Padding::Dynamic)));
    }

    void histogramHasRoundBins() {
        const auto h = length_histogram({1, 5, 12, 99});
        QCOMPARE(h.size(), size_t(10));   // (99 + 1) / 16 = 6.25: bins of 10
        QCOMPARE(h[0].from, std::int64_t(0));
        QCOMPARE(h[0].to, std::int64_t(10));
        QCOMPARE(h[0].count, std::int64_t(2));
        QCOMPARE(h[1].count, std::int64_t(1));
        QCOMPARE(h[9].count, std::int64_t(1));
        const auto tail = length_histogram(long_tail());   // 401 / 16 = 25.06: bins of 50
        QCOMPARE(tail.front().to, std::int64_t(50));
        QCOMPARE(tail.front().count, std::int64_t(57));
        QCOMPARE(tail.back().from, std::int64_t(400));
    }

    void paddingNamesAndDefaults() {
        QCOMPARE(parse_padding("dynamic"), Padding::Dynamic);
        QCOMPARE(parse_padding("packed"), Padding::Packed);
        QCOMPARE(parse_padding("max"), Padding::Max);
        QVERIFY_THROWS_EXCEPTION(InputError, parse_padding("longest"));
        QCOMPARE(default_padding("hf-transformers"), Padding::Dynamic);
        QCOMPARE(default_padding("torchtune"), Padding::Dynamic);
        QCOMPARE(default_padding("libtorch-cpu"), Padding::Packed);
        QCOMPARE(padding_multiple("mlx-lm"), std::int64_t(32));
    }

    // plan --data: the memory is the plan at the peak batch's length (4 × 400 here), far below
    // the plan at the cap and above the plan at the mean; the data object carries the contract's
    // fields.
    void planDataPlansAtThePeakBatch() {
        const std::vector<std::string> base = {"plan", "--model-dir", model_.string(), "--framework", "hf-transformers",
                                               "--method", "lora", "--batch", "4", "--seq", "512", "--precision",
                                               "bf16-mixed", "--grad-checkpointing", "off", "--json"};
        auto with = [&](std::vector<std::string> extra) {
            auto args = base;
            args.insert(args.end(), extra.begin(), extra.end());
            const auto r = run_cli(args);
            if (r.code != 0) qWarning("%s", r.err.c_str());
            return r.code == 0 ? json::parse(r.out) : json();
        };
        const json planned = with({"--data", data_.string(), "--padding", "dynamic"});
        QVERIFY(planned.contains("data"));
        const json& d = planned["data"];
        QCOMPARE(d["examples"].get<std::int64_t>(), std::int64_t(60));
        QCOMPARE(d["tokens_total"].get<std::int64_t>(), std::int64_t(57 * 30 + 400 + 380 + 350));
        QCOMPARE(d["truncated_examples"].get<std::int64_t>(), std::int64_t(0));
        QCOMPARE(d["peak_batch_tokens"].get<std::int64_t>(), std::int64_t(4 * 400));
        QVERIFY(d["length_histogram"].is_array() && !d["length_histogram"].empty());
        QCOMPARE(d["formats"].get<std::string>(), std::string("text: 60"));
        // The same plan at --seq 400 without data: the same bytes.
        auto at_seq = [&](const char* seq) {
            auto args = base;
            args[args.size() - 6] = seq;   // the value after --seq
            const auto r = run_cli(args);
            return r.code == 0 ? json::parse(r.out)["peak_allocated_bytes"].get<std::int64_t>() : -1;
        };
        const std::int64_t peak = planned["peak_allocated_bytes"].get<std::int64_t>();
        QCOMPARE(peak, at_seq("400"));
        QVERIFY(peak < at_seq("512"));
        QVERIFY(peak > at_seq("48"));
        // Padding to the cap plans at 512; the framework's default for TRL is dynamic.
        QCOMPARE(with({"--data", data_.string(), "--padding", "max"})["peak_allocated_bytes"].get<std::int64_t>(),
                 at_seq("512"));
        const json defaulted = with({"--data", data_.string()});
        QCOMPARE(defaulted["data"]["padding"].get<std::string>(), std::string("dynamic"));
        QCOMPARE(defaulted["data"]["peak_batch_tokens"].get<std::int64_t>(), std::int64_t(1600));
        // The cap cuts the tail: three examples over 256 tokens.
        const json capped = with({"--data", data_.string(), "--seq", "256"});
        QCOMPARE(capped["data"]["truncated_examples"].get<std::int64_t>(), std::int64_t(3));
        QCOMPARE(capped["data"]["peak_batch_tokens"].get<std::int64_t>(), std::int64_t(4 * 256));
    }

    // A folder of JSONL files (alpaca and chat rows), and the text report's histogram.
    void folderAndFormats() {
        const fs::path folder = root_ / "folder";
        fs::create_directories(folder);
        write(folder / "a.jsonl", json{{"instruction", "Add"}, {"input", "2 2"}, {"output", "4"}}.dump() + "\n\n");
        write(folder / "b.jsonl", json{{"messages", {{{"role", "user"}, {"content", "hi"}},
                                                    {{"role", "assistant"}, {"content", "hello"}}}}}
                                          .dump() +
                                      "\n" + text_row(9));
        write(folder / "notes.txt", "not data");
        const auto r = run_cli({"plan", "--model-dir", model_.string(), "--framework", "hf-transformers", "--data",
                                folder.string(), "--batch", "2", "--seq", "64"});
        QVERIFY2(r.code == 0, r.err.c_str());
        QVERIFY(r.out.find("Data: 3 examples (alpaca: 1, messages: 1, text: 1") != std::string::npos);
        QVERIFY(r.out.find("← cap --seq 64") != std::string::npos);
        QVERIFY(r.out.find("the peak batch is 2 × ") != std::string::npos);
    }

    // Hostile input: every refusal names the file and line, exits 2, never crashes or hangs.
    void hostileDataIsRefusedClearly() {
        auto refused = [&](const fs::path& data, const std::string& expect, std::vector<std::string> model = {}) {
            std::vector<std::string> args = {"plan", "--data", data.string()};
            if (model.empty()) model = {"--model-dir", model_.string()};
            args.insert(args.end(), model.begin(), model.end());
            const auto r = run_cli(args);
            QVERIFY2(r.code == 2, (r.out + r.err).c_str());
            QVERIFY2(r.err.find(expect) != std::string::npos, r.err.c_str());
        };
        const fs::path bad = root_ / "bad.jsonl";
        write(bad, text_row(3) + text_row(3) + "{\"text\": \"unterminated\n");
        refused(bad, "bad.jsonl:3:");
        write(bad, text_row(3) + "{\"text\": \"\xff\xfe\"}\n");
        refused(bad, "bad.jsonl:2:");
        write(bad, "[1, 2]\n");
        refused(bad, "bad.jsonl:1: line 1: not a JSON object");
        write(bad, "{\"label\": 3}\n");
        refused(bad, "needs \"text\"");
        write(bad, "");
        refused(bad, "holds no examples");
        write(bad, "{\"text\": \"" + std::string((16u << 20) + 10, 'x') + "\"}\n");
        refused(bad, "longer than 16777216 bytes");
        refused(root_ / "missing.jsonl", "cannot read");
        const fs::path empty_dir = root_ / "empty";
        fs::create_directories(empty_dir);
        refused(empty_dir, "holds no .jsonl");
        const fs::path fifo = root_ / "pipe.jsonl";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        refused(fifo, "not a regular file");
        // No tokenizer here: a bundled profile, or a folder without tokenizer.json.
        refused(data_, "a bundled --model profile has no tokenizer", {"--model", "llama-3.1-8b"});
        const fs::path bare = root_ / "bare";
        fs::create_directories(bare);
        fs::copy_file(model_ / "config.json", bare / "config.json");
        refused(data_, "has no tokenizer.json", {"--model-dir", bare.string()});
        const auto r = run_cli({"plan", "--padding", "dynamic"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.find("--padding shapes the batches of --data") != std::string::npos);
        // fit and explain-oom take --data too (test_core_config_import_data); the others refuse it.
        const auto table = run_cli({"table", "--data", data_.string(), "--model-dir", model_.string()});
        QCOMPARE(table.code, 2);
        QVERIFY(table.err.find("read by `wingspan plan`, `fit` and `explain-oom`") != std::string::npos);
    }

private:
    QTemporaryDir dir_;
    fs::path root_, model_, data_;
};

QTEST_GUILESS_MAIN(DataLengthsTest)
#include "test_data_lengths.moc"
