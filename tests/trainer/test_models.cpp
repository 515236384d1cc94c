// Real model folders end to end: `wingspan download` of a tiny Llama (random weights, the
// small SentencePiece tokenizer fixture, the Llama 2 chat template) from a loopback Hub into
// the Hugging Face cache, then wingspan-train fine-tunes it by OWNER/NAME on chat data.
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../hub/test_http_server.hpp"
#include "wingspan/hub_download.hpp"
#include "wingspan/safetensors.hpp"
#include "wingspan/sha256.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kSp = WINGSPAN_TOKENIZER_FIXTURES;
const std::string kChat = WINGSPAN_CHAT_FIXTURES;
const std::string kCommit = "feedfacefeedfacefeedfacefeedfacefeedface";

std::string slurp(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A tiny Llama whose vocabulary is the fixture tokenizer's, with small random BF16 weights.
std::map<std::string, std::string> tiny_repo_files() {
    const std::int64_t vocab = 1482, hidden = 32, inter = 48;
    json config = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", hidden},
                   {"intermediate_size", inter}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                   {"num_key_value_heads", 2}, {"vocab_size", vocab}, {"max_position_embeddings", 256},
                   {"tie_word_embeddings", true}, {"bos_token_id", 1}, {"eos_token_id", 2}};
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> shapes = {{"model.embed_tokens.weight", {vocab, hidden}}};
    for (int i = 0; i < 2; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        for (auto [n, s] : std::vector<std::pair<std::string, std::vector<std::int64_t>>>{
                 {"input_layernorm.weight", {hidden}}, {"self_attn.q_proj.weight", {hidden, hidden}},
                 {"self_attn.k_proj.weight", {16, hidden}}, {"self_attn.v_proj.weight", {16, hidden}},
                 {"self_attn.o_proj.weight", {hidden, hidden}}, {"post_attention_layernorm.weight", {hidden}},
                 {"mlp.gate_proj.weight", {inter, hidden}}, {"mlp.up_proj.weight", {inter, hidden}},
                 {"mlp.down_proj.weight", {hidden, inter}}})
            shapes.push_back({p + n, s});
    }
    shapes.push_back({"model.norm.weight", {hidden}});
    std::vector<wingspan::safetensors::TensorInfo> infos;
    for (const auto& [name, shape] : shapes) infos.push_back({name, "BF16", shape});
    const std::string header = wingspan::safetensors::build_header(infos);
    std::string st(8, '\0');
    for (int i = 0; i < 8; ++i) st[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    st += header;
    std::uint32_t state = 7;
    for (const auto& info : infos) {
        const bool norm = info.name.find("norm") != std::string::npos;
        for (std::int64_t k = 0; k < info.elements(); ++k) {
            state = state * 1664525u + 1013904223u;
            const float v = norm ? 1.0f : (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 0.1f;
            std::uint32_t bits;
            std::memcpy(&bits, &v, 4);
            st.push_back(static_cast<char>((bits >> 16) & 0xFF));
            st.push_back(static_cast<char>(bits >> 24));
        }
    }
    json tok_config = json::parse(slurp(kSp + "/small-llama/tokenizer_config.json"));
    tok_config["chat_template"] = slurp(kChat + "/llama2.jinja");
    return {{"config.json", config.dump(2)},
            {"model.safetensors", st},
            {"tokenizer.json", slurp(kSp + "/small-llama/tokenizer.json")},
            {"tokenizer_config.json", tok_config.dump(2)},
            {"README.md", "tiny\n"}};
}

void publish(hubtest::TestHttpServer& s, const std::string& repo, const std::map<std::string, std::string>& files) {
    json listing = {{"id", repo}, {"sha", kCommit}, {"siblings", json::array()}};
    for (const auto& [name, bytes] : files) {
        json e = {{"rfilename", name}, {"size", bytes.size()}, {"blobId", wingspan::sha256_hex(bytes).substr(0, 40)}};
        if (name.ends_with(".safetensors")) e["lfs"] = {{"sha256", wingspan::sha256_hex(bytes)}, {"size", bytes.size()}};
        listing["siblings"].push_back(e);
        s.file("/" + repo + "/resolve/" + kCommit + "/" + name, bytes);
    }
    s.file("/api/models/" + repo + "/revision/main", listing.dump());
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

Run train(const QStringList& args, const QString& hub_cache) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("HF_HUB_CACHE", hub_cache);
    env.insert("OMP_WAIT_POLICY", "passive");
    p.setProcessEnvironment(env);
    p.start(WINGSPAN_TRAIN_BIN, args + QStringList{"--threads", "2"});
    Run r;
    if (!p.waitForStarted() || !p.waitForFinished(240000)) return r;
    for (const auto& line : p.readAllStandardOutput().split('\n'))
        if (!line.trimmed().isEmpty()) r.events.push_back(json::parse(line.toStdString(), nullptr, false));
    r.exit_code = p.exitCode();
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
