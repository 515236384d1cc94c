// Gemma, Gemma 2 and Phi-3 end to end with the real binary: a tiny folder of each (random
// weights, the SentencePiece fixture tokenizer) trains with LoRA until the loss falls, merges
// into sharded safetensors, passes scripts/check_merged_folder.py (what transformers'
// from_pretrained needs: config, index, headers per the safetensors specification, the base's
// names, shapes and dtypes), and the merged folder, reloaded, gives the logits of base + adapter.
#include <QProcess>
#include <QtTest>

#include <ATen/core/grad_mode.h>   // at::NoGradGuard (torch 2.x no longer brings it in through the others)

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "wingspan/trainer_invocation.hpp"
#include "model/model.hpp"
#include "model/model_source.hpp"
#include "trainer_process.hpp"
#include "model/weights_io.hpp"

using namespace wingspan;
using namespace wingspan::train;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kSp = WINGSPAN_TOKENIZER_FIXTURES;

std::string slurp(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

using Proc = wingspan::testing::ProgramResult;

Proc run(const QString& program, const QStringList& args) { return wingspan::testing::run_program(program, args); }

QString q(const fs::path& p) { return QString::fromStdString(p.string()); }

// A tiny model of `arch` whose vocabulary is the fixture tokenizer's (1482 tokens), 
// weights drawn with a fixed seed, float32 (norms at their neutral value: 1, or 0 for Gemma's 1 + w).
json tiny_config(const std::string& arch) {
    json c = {{"model_type", arch}, {"hidden_size", 32}, {"intermediate_size", 64}, {"num_hidden_layers", 2},
              {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"vocab_size", 1482},
              {"max_position_embeddings", 256}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0},
              {"bos_token_id", 1}, {"eos_token_id", 2}, {"torch_dtype", "float32"}};
    if (arch == "gemma") {
        c["architectures"] = {"GemmaForCausalLM"};
        c["head_dim"] = 16;
        c["hidden_activation"] = "gelu_pytorch_tanh";
    } else if (arch == "gemma2") {
        c["architectures"] = {"Gemma2ForCausalLM"};
        c["head_dim"] = 16;
        c["hidden_activation"] = "gelu_pytorch_tanh";
        c["query_pre_attn_scalar"] = 16;
        c["sliding_window"] = 8;                     // shorter than --seq: the window is in play
        c["attn_logit_softcapping"] = 50.0;
        c["final_logit_softcapping"] = 30.0;
    } else {
        c["architectures"] = {"Phi3ForCausalLM"};
        c["hidden_act"] = "silu";
        c["tie_word_embeddings"] = false;
        c["rope_scaling"] = nullptr;
        c["sliding_window"] = 2047;
    }
    return c;
}

fs::path write_model(const fs::path& dir, const std::string& arch) {
    fs::create_directories(dir);
    const json config = tiny_config(arch);
    const ModelConfig cfg = ModelConfig::from_hf(config);
    at::Generator gen = at::detail::createCPUGenerator(11);
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (const auto& [name, shape] : expected_tensors(cfg)) {
        at::Tensor t = name.find("norm") != std::string::npos
                           ? (cfg.norm_plus_one ? at::zeros(shape) : at::ones(shape))
                           : at::normal(0.0, 0.05, shape, gen);
        tensors.push_back({name, t});
    }
    save_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
    std::ofstream(dir / "config.json") << config.dump(2);
    fs::copy_file(kSp + "/small-llama/tokenizer.json", dir / "tokenizer.json");
    fs::copy_file(kSp + "/small-llama/tokenizer_config.json", dir / "tokenizer_config.json");
    return dir;
}

std::vector<double> losses(const std::string& out) {
    std::vector<double> l;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        const json e = json::parse(line, nullptr, false);
        if (e.is_object() && e.value("event", "") == "step" && e.contains("loss")) l.push_back(e["loss"].get<double>());
    }
    return l;
}

double mean(const std::vector<double>& v, size_t a, size_t b) {
    double s = 0;
    for (size_t i = a; i < b; ++i) s += v[i];
    return s / static_cast<double>(b - a);
}

// Logits of `ids` from a folder, optionally with a LoRA run's adapter on top (fp32).
at::Tensor logits_of(const fs::path& dir, const std::vector<std::int64_t>& ids, const fs::path& adapter_run = {}) {
    const ModelConfig cfg = ModelConfig::from_hf(read_json_object(dir / "config.json"));
    auto reader = WeightReader::open_dir(dir);
    ModelOptions mo;
    mo.method = adapter_run.empty() ? Method::Full : Method::Lora;
    std::map<std::string, at::Tensor> adapter;
    if (!adapter_run.empty()) {
        const fs::path adir = adapter_dir_of(adapter_run);
        const json ac = read_json_object(adir / "adapter_config.json");
        mo.rank = ac.at("r");
        mo.alpha = ac.at("lora_alpha");
        std::string targets;
        for (const auto& t : ac.at("target_modules")) targets += (targets.empty() ? "" : ",") + t.get<std::string>();
        mo.targets = parse_targets(targets);
        adapter = load_safetensors(adir / "adapter_model.safetensors");
    }
    at::NoGradGuard no_grad;
    Model model(cfg, mo);
    model.build([&](const std::string& name, const std::vector<std::int64_t>&) { return reader->read(name); }, 1);
    std::size_t loaded = 0;
    for (auto& nt : model.tensors())
        if (auto it = adapter.find(nt.name); it != adapter.end()) {
            nt.tensor.copy_(it->second);
            ++loaded;
        }
    if (loaded != adapter.size()) throw std::runtime_error("adapter tensors left over");
    return model.logits(model.hidden_states(at::tensor(ids, at::kLong).unsqueeze(0), false).squeeze(0));
}

}  // namespace

class VariantsEndToEndTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void trainMergeCheckReload_data() {
        QTest::addColumn<QString>("arch");
        QTest::newRow("gemma") << "gemma";
        QTest::newRow("gemma2") << "gemma2";
        QTest::newRow("phi3") << "phi3";
    }

    void trainMergeCheckReload() {
        QFETCH(QString, arch);
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        const fs::path base = write_model(root / "base", arch.toStdString());
        {
            std::ofstream data(root / "data.jsonl");
            for (int i = 0; i < 32; ++i)
                data << json{{"text", "The heron stands in the river and waits for a fish. The heron stands still."}}.dump() << "\n";
        }
        const fs::path out = root / "run";
        const Proc t = run(WINGSPAN_TRAIN_BIN, {"--model", q(base), "--data", q(root / "data.jsonl"), "--method", "lora",
                                                "--rank", "8", "--targets", "all", "--steps", "16", "--seq", "32", "--batch", "4",
                                                "--lr", "0.01", "--eval-every", "0", "--threads", "2", "--out", q(out)});
        QVERIFY2(t.exit_code == 0, t.err.c_str());
        // The loss falls.
        const auto l = losses(t.out);
        QCOMPARE(l.size(), size_t(16));
        const double first = mean(l, 0, 3), last = mean(l, 13, 16);
        qInfo("%s: loss %.3f -> %.3f", arch.toUtf8().constData(), first, last);
        QVERIFY2(last < first - 0.3, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
        // The planner (core) predicted this run's adapters and frozen weights to the byte
        // (Phi-3: LoRA on the fused matrices in both).
        json predicted, tensor_bytes;
        {
            std::istringstream lines(t.out);
            for (std::string line; std::getline(lines, line);) {
                const json e = json::parse(line, nullptr, false);
                if (!e.is_object()) continue;
                if (e.value("event", "") == "predicted") predicted = e.at("components");
                if (e.contains("tensor_bytes")) tensor_bytes = e.at("tensor_bytes");
            }
        }
        QVERIFY(predicted.is_object() && tensor_bytes.is_object());
        for (const char* c : {"adapters", "frozen_weights"})
            QVERIFY2(predicted.value(c, std::int64_t{-1}) == tensor_bytes.value(c, std::int64_t{-2}),
                     qPrintable(QString("%1: predicted %2, tensors %3").arg(c).arg(predicted.value(c, std::int64_t{-1})).arg(tensor_bytes.value(c, std::int64_t{-2}))));
        // PEFT's names for the adapted modules (Phi-3: the fused ones).
        const json ac = read_json_object(adapter_dir_of(out) / "adapter_config.json");
        const auto modules = ac.at("target_modules").get<std::vector<std::string>>();
        if (arch == "phi3")
            QCOMPARE(modules, (std::vector<std::string>{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}));
        else
            QCOMPARE(modules.size(), size_t(7));

        // Merge into shards of at most 64 KiB: an index and several files.
        const fs::path merged = root / "merged";
        const Proc m = run(WINGSPAN_TRAIN_BIN, {"merge", "--model", q(base), "--adapter", q(out), "--out", q(merged),
                                                "--max-shard-size", "65536"});
        QVERIFY2(m.exit_code == 0, m.err.c_str());
        QVERIFY(fs::exists(merged / "model.safetensors.index.json"));

        // Loadable as transformers loads it.
        const Proc c = run(WINGSPAN_PYTHON, {WINGSPAN_MERGE_CHECK, q(merged), q(base)});
        QVERIFY2(c.exit_code == 0, (c.out + c.err).c_str());
        QVERIFY(c.out.starts_with("ok: " + arch.toStdString()));

        // The check can fail: a shard the index does not list, and an index naming a tensor twice over files.
        {
            const fs::path broken = root / "broken";
            fs::copy(merged, broken);
            json index = json::parse(slurp(broken / "model.safetensors.index.json"));
            auto& map = index["weight_map"];
            map[map.begin().key()] = "model-00009-of-00009.safetensors";
            std::ofstream(broken / "model.safetensors.index.json") << index.dump();
            const Proc b = run(WINGSPAN_PYTHON, {WINGSPAN_MERGE_CHECK, q(broken), q(base)});
            QCOMPARE(b.exit_code, 1);
            QVERIFY2(b.out.find("not in the folder") != std::string::npos, b.out.c_str());
        }
        {   // a byte after the last tensor: the buffer is not entirely indexed (the specification forbids it)
            const fs::path broken = root / "broken-buffer";
            fs::copy(merged, broken);
            const std::string shard = json::parse(slurp(broken / "model.safetensors.index.json"))["weight_map"].begin()->get<std::string>();
            std::ofstream(broken / shard, std::ios::binary | std::ios::app) << '\0';
            const Proc b = run(WINGSPAN_PYTHON, {WINGSPAN_MERGE_CHECK, q(broken), q(base)});
            QCOMPARE(b.exit_code, 1);
            QVERIFY2(b.out.find("of the buffer's") != std::string::npos, b.out.c_str());
        }

        // Reloaded, the merged folder gives base + adapter's logits: float32 weights, so the two
        // differ only by float32 rounding (x(W + sBA) against xW + s(xA)B: ~1e-7 relative), far
        // below 1e-4, while the adapter itself moves the logits by more than 0.05.
        const std::vector<std::int64_t> ids = {1, 450, 902, 17, 1200, 33, 64, 5, 870, 12, 301, 1100};
        const at::Tensor with_adapter = logits_of(base, ids, out);
        const at::Tensor from_merge = logits_of(merged, ids);
        const at::Tensor plain = logits_of(base, ids);
        const double merge_gap = (from_merge - with_adapter).abs().max().item<double>();
        const double adapter_effect = (plain - with_adapter).abs().max().item<double>();
        qInfo("%s: |merged - (base + adapter)| <= %.3g; the adapter moves logits by %.3g", arch.toUtf8().constData(),
              merge_gap, adapter_effect);
        QVERIFY(adapter_effect > 0.05);
        QVERIFY(merge_gap < 1e-4);
    }
};

QTEST_GUILESS_MAIN(VariantsEndToEndTest)
#include "test_variants_e2e.moc"
