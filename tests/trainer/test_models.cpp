// Real model folders end to end: `wingspan download` of a tiny Llama (random weights, the
// small SentencePiece tokenizer fixture, the Llama 2 chat template) from a loopback Hub into
// the Hugging Face cache, then wingspan-train fine-tunes it by OWNER/NAME on chat data.
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../hub/test_http_server.hpp"
#include "../hub/tiny_llama_repo.hpp"
#include "trainer_process.hpp"
#include "wingspan/hub_download.hpp"
#include "wingspan/safetensors.hpp"
#include "wingspan/sha256.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kSp = WINGSPAN_TOKENIZER_FIXTURES;
const std::string kChat = WINGSPAN_CHAT_FIXTURES;
const std::string kCommit = "feedfacefeedfacefeedfacefeedfacefeedface";

std::string slurp(const std::string& file) { return hubtest::read_fixture(file); }

// The tiny Llama repository (the fixture tokenizer's vocabulary, small BF16 weights) shared
// with the run panel's end-to-end tests.
std::map<std::string, std::string> tiny_repo_files() { return hubtest::tiny_llama_files(kSp, kChat); }

void publish(hubtest::TestHttpServer& s, const std::string& repo, const std::map<std::string, std::string>& files) {
    hubtest::publish_repo(s, repo, files, kCommit);
}

// A tensor of a safetensors file as doubles (BF16 or F32), read with core's header parser.
std::vector<double> read_tensor(const fs::path& file, const std::string& name, std::vector<std::int64_t>* shape = nullptr) {
    const auto h = wingspan::safetensors::read_header(file);
    for (const auto& t : h.tensors) {
        if (t.name != name) continue;
        if (shape) *shape = t.shape;
        std::ifstream in(file, std::ios::binary);
        in.seekg(static_cast<std::streamoff>(h.data_offset + t.begin));
        std::string bytes(t.end - t.begin, '\0');
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        std::vector<double> out;
        const size_t width = t.dtype == "BF16" ? 2 : 4;
        for (size_t i = 0; i + width <= bytes.size(); i += width) {
            std::uint32_t bits = 0;
            if (width == 2) bits = (std::uint32_t(std::uint8_t(bytes[i + 1])) << 24) | (std::uint32_t(std::uint8_t(bytes[i])) << 16);
            else std::memcpy(&bits, bytes.data() + i, 4);
            float f;
            std::memcpy(&f, &bits, 4);
            out.push_back(f);
        }
        return out;
    }
    return {};
}

using Proc = wingspan::testing::ProgramResult;

Proc trainer(const QStringList& args, const QString& hub_cache) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("HF_HUB_CACHE", hub_cache);
    return wingspan::testing::run_program(WINGSPAN_TRAIN_BIN, args, env, 240000);
}

struct Run {
    int exit_code = -1;
    std::vector<json> events;
    bool has_log(const std::string& needle) const {
        for (const auto& e : events)
            if (e.value("event", "") == "log" && e.value("message", "").find(needle) != std::string::npos) return true;
        return false;
    }
    const json* first(const std::string& type) const {
        for (const auto& e : events)
            if (e.value("event", "") == type) return &e;
        return nullptr;
    }
};

// A training run: its protocol events (stdout JSON lines).
Run train(const QStringList& args, const QString& hub_cache) {
    const Proc p = trainer(args + QStringList{"--threads", "2"}, hub_cache);
    Run r;
    r.exit_code = p.exit_code;
    std::istringstream lines(p.out);
    for (std::string line; std::getline(lines, line);)
        if (!line.empty()) r.events.push_back(json::parse(line, nullptr, false));
    return r;
}

}  // namespace

class ModelsTest : public QObject {
    Q_OBJECT
private slots:
    void downloadedModelTrainsWithItsTokenizerAndChatTemplate() {
        QTemporaryDir dir;
        const fs::path root = dir.path().toStdString();
        hubtest::TestHttpServer server;
        publish(server, "TestOrg/tiny-sp-llama", tiny_repo_files());

        wingspan::hub::DownloadOptions o;
        o.hub.endpoint = server.url();
        o.hub.token.clear();
        o.hub.offline = false;
        o.hub.cache_dir.clear();
        o.hub_cache = root / "hub";
        const auto got = wingspan::hub::download_snapshot("TestOrg/tiny-sp-llama", o);
        QCOMPARE(got.files.size(), size_t(4));   // not the README

        std::ofstream data(root / "chat.jsonl");
        for (int i = 0; i < 24; ++i)
            data << json{{"messages", {{{"role", "system"}, {"content", "You answer briefly."}},
                                       {{"role", "user"}, {"content", "What is " + std::to_string(i) + " plus one?"}},
                                       {{"role", "assistant"}, {"content", "It is " + std::to_string(i + 1) + "."}}}}}.dump()
                 << "\n";
        data.close();

        const QString cache = QString::fromStdString((root / "hub").string());
        const Run r = train({"--model", "TestOrg/tiny-sp-llama", "--data", QString::fromStdString((root / "chat.jsonl").string()),
                             "--method", "lora", "--rank", "4", "--steps", "3", "--seq", "64", "--batch", "2",
                             "--out", QString::fromStdString((root / "out").string())},
                            cache);
        for (const auto& e : r.events)
            if (e.value("event", "") == "log" || e.value("event", "") == "error") qInfo("%s", e.dump().c_str());
        QCOMPARE(r.exit_code, 0);
        QVERIFY(r.has_log("chat format llama2"));
        const json* hello = nullptr;
        for (const auto& e : r.events)
            if (e.value("event", "") == "hello" && e.contains("model")) hello = &e;
        QVERIFY(hello);
        QCOMPARE(hello->value("model", ""), got.snapshot.string());
        QVERIFY(hello->value("tokenizer", "").find("tokenizer.json") != std::string::npos);
        QVERIFY(r.first("step"));

        // Merge: the base's names, shapes and dtypes; adapted weights are W + (alpha/r)·B·A.
        const fs::path run_out = root / "out";
        const fs::path merged = root / "merged";
        const Proc m = trainer({"merge", "--model", "TestOrg/tiny-sp-llama", "--adapter", QString::fromStdString(run_out.string()),
                                "--out", QString::fromStdString(merged.string())}, cache);
        qInfo("%s", m.err.c_str());
        QCOMPARE(m.exit_code, 0);
        QCOMPARE(m.out, merged.string() + "\n");
        for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"})
            QVERIFY2(fs::exists(merged / f), f);
        QVERIFY(!fs::exists(merged / "README.md"));
        const auto base_h = wingspan::safetensors::read_header(got.snapshot / "model.safetensors");
        const auto merged_h = wingspan::safetensors::read_header(merged / "model.safetensors");
        QCOMPARE(merged_h.tensors.size(), base_h.tensors.size());
        for (const auto& t : base_h.tensors) {
            auto it = std::find_if(merged_h.tensors.begin(), merged_h.tensors.end(), [&](const auto& x) { return x.name == t.name; });
            QVERIFY(it != merged_h.tensors.end());
            QCOMPARE(it->shape, t.shape);
            QCOMPARE(it->dtype, t.dtype);
        }
        const json ac = json::parse(slurp((run_out / "adapter_config.json").string()));
        const double scaling = ac["lora_alpha"].get<double>() / ac["r"].get<double>();
        const std::string q = "model.layers.1.self_attn.q_proj";
        std::vector<std::int64_t> a_shape, b_shape;
        const auto W = read_tensor(got.snapshot / "model.safetensors", q + ".weight");
        const auto A = read_tensor(run_out / "adapter_model.safetensors", "base_model.model." + q + ".lora_A.weight", &a_shape);
        const auto B = read_tensor(run_out / "adapter_model.safetensors", "base_model.model." + q + ".lora_B.weight", &b_shape);
        const auto M = read_tensor(merged / "model.safetensors", q + ".weight");
        QCOMPARE(a_shape, (std::vector<std::int64_t>{4, 32}));
        QCOMPARE(M.size(), W.size());
        double max_delta = 0, max_err = 0;
        for (std::int64_t o = 0; o < 32; ++o)
            for (std::int64_t i = 0; i < 32; ++i) {
                double ba = 0;
                for (std::int64_t k = 0; k < 4; ++k) ba += B[static_cast<size_t>(o * 4 + k)] * A[static_cast<size_t>(k * 32 + i)];
                const double want = W[static_cast<size_t>(o * 32 + i)] + scaling * ba;
                max_delta = std::max(max_delta, std::abs(scaling * ba));
                // BF16 keeps 8 significant bits: half an ulp of the value.
                max_err = std::max(max_err, std::abs(M[static_cast<size_t>(o * 32 + i)] - want) / std::max(std::abs(want), 1e-3));
            }
        qInfo("largest B·A change %.3g, largest relative error %.3g", max_delta, max_err);
        QVERIFY(max_delta > 1e-4);   // the run moved the adapters
        QVERIFY(max_err <= 1.0 / 256);
        // An embedding (not adapted) is the base's, bit for bit.
        QCOMPARE(read_tensor(merged / "model.safetensors", "model.embed_tokens.weight"),
                 read_tensor(got.snapshot / "model.safetensors", "model.embed_tokens.weight"));

        // Sharded: every tensor in the index, total_size the sum.
        const fs::path sharded = root / "sharded";
        const Proc ms = trainer({"merge", "--model", QString::fromStdString(got.snapshot.string()), "--adapter",
                                 QString::fromStdString(run_out.string()), "--out", QString::fromStdString(sharded.string()),
                                 "--max-shard-size", "20000"}, cache);   // the embedding alone is 94,848 bytes
        QCOMPARE(ms.exit_code, 0);
        const json index = json::parse(slurp((sharded / "model.safetensors.index.json").string()));
        QCOMPARE(index["weight_map"].size(), base_h.tensors.size());
        std::uint64_t total = 0;
        std::set<std::string> shard_files;
        for (const auto& t : base_h.tensors) total += t.end - t.begin;
        for (const auto& [name, file] : index["weight_map"].items()) shard_files.insert(file.get<std::string>());
        QCOMPARE(index["metadata"]["total_size"].get<std::uint64_t>(), total);
        QVERIFY(shard_files.size() > 2);
        QVERIFY(shard_files.count("model-00001-of-0000" + std::to_string(shard_files.size()) + ".safetensors"));
        // A second merge into a folder that is not empty is refused; a run dir without an adapter is bad input.
        QCOMPARE(trainer({"merge", "--model", QString::fromStdString(got.snapshot.string()), "--adapter",
                          QString::fromStdString(run_out.string()), "--out", QString::fromStdString(sharded.string())}, cache).exit_code, 2);
        QCOMPARE(trainer({"merge", "--model", QString::fromStdString(got.snapshot.string()), "--adapter",
                          QString::fromStdString(root.string()), "--out", QString::fromStdString((root / "x").string())}, cache).exit_code, 2);

        // Generate: greedy is deterministic; a seeded sample repeats; the chat template applies.
        auto gen = [&](QStringList extra) {
            return trainer(QStringList{"generate", "--model", QString::fromStdString(merged.string()), "--prompt", "Where is",
                                       "--max-tokens", "6"} + extra, cache);
        };
        const Proc g1 = gen({"--temperature", "0"}), g2 = gen({"--temperature", "0"});
        qInfo("greedy: %s (%s)", g1.out.c_str(), g1.err.c_str());
        QCOMPARE(g1.exit_code, 0);
        QVERIFY(g1.out.size() > 1);
        QCOMPARE(g1.out, g2.out);
        const Proc s1 = gen({"--seed", "5", "--temperature", "1.5", "--top-p", "0.95"}), s2 = gen({"--seed", "5", "--temperature", "1.5", "--top-p", "0.95"});
        QCOMPARE(s1.exit_code, 0);
        QCOMPARE(s1.out, s2.out);
        const Proc with_adapter = trainer({"generate", "--model", "TestOrg/tiny-sp-llama", "--adapter", QString::fromStdString(run_out.string()),
                                           "--prompt", "Hi", "--chat", "--max-tokens", "4"}, cache);
        qInfo("%s", with_adapter.err.c_str());
        QCOMPARE(with_adapter.exit_code, 0);
        QCOMPARE(gen({"--top-p", "0"}).exit_code, 2);
        QCOMPARE(gen({"--bogus"}).exit_code, 2);

        // A model the cache does not hold: an io error that says how to download it.
        const Run missing = train({"--model", "TestOrg/not-downloaded", "--method", "lora", "--steps", "1"}, cache);
        QVERIFY(missing.exit_code != 0);
        const json* err = missing.first("error");
        QVERIFY(err);
        qInfo("%s", err->dump().c_str());
        QCOMPARE(err->value("code", ""), std::string("io"));
        QVERIFY(err->value("message", "").find("wingspan download TestOrg/not-downloaded") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(ModelsTest)
#include "test_models.moc"
