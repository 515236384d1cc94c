// End-to-end checks of the real wingspan-train binary: every stdout line is a valid
// protocol line; each method's loss falls on the sample data; static memory components are
// exact; an interrupted run resumes and reproduces the uninterrupted losses; outputs load
// back; every bad input ends in its error event and a non-zero exit.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "trainer_process.hpp"
#include "wingspan/protocol.hpp"
#include "wingspan/safetensors.hpp"

using namespace wingspan;
using namespace wingspan::protocol;
using nlohmann::json;

namespace {

using Result = testing::TrainerResult;

// Runs wingspan-train; `stop_when` may ask for a SIGTERM once (returns true on an event).
Result run(QStringList args, const std::function<bool(const Event&)>& stop_when = {}, int timeout_ms = 180000) {
    if (!args.contains("--threads")) args << "--threads" << "2";
    bool stopped = false;
    testing::TrainerLaunch launch;
    launch.args = args;
    launch.timeout_ms = timeout_ms;
    launch.on_event = [&](const Event& e, QProcess& p) {
        if (stop_when && !stopped && stop_when(e)) {
            p.terminate();   // SIGTERM
            stopped = true;
        }
    };
    return testing::run_trainer(launch);
}

double mean(const std::vector<double>& v, size_t from, size_t to) {
    double s = 0;
    for (size_t i = from; i < to; ++i) s += v[i];
    return s / static_cast<double>(to - from);
}

std::int64_t component(const Event& e, const char* name) {
    const auto& c = e.body.at("components");
    return c.contains(name) ? c[name].get<std::int64_t>() : 0;
}

// A tiny Llama config and, optionally, its weights as a safetensors file written with
// core's header builder (values: small deterministic floats, stored as BF16 or F32).
json tiny_config() {
    return {{"model_type", "llama"}, {"hidden_size", 32},       {"intermediate_size", 48},
            {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
            {"vocab_size", 300},     {"max_position_embeddings", 256}, {"tie_word_embeddings", true}};
}

std::vector<std::pair<std::string, std::vector<std::int64_t>>> tiny_tensors() {
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> t = {{"model.embed_tokens.weight", {300, 32}}};
    for (int i = 0; i < 2; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        t.push_back({p + "input_layernorm.weight", {32}});
        t.push_back({p + "self_attn.q_proj.weight", {32, 32}});
        t.push_back({p + "self_attn.k_proj.weight", {16, 32}});
        t.push_back({p + "self_attn.v_proj.weight", {16, 32}});
        t.push_back({p + "self_attn.o_proj.weight", {32, 32}});
        t.push_back({p + "post_attention_layernorm.weight", {32}});
        t.push_back({p + "mlp.gate_proj.weight", {48, 32}});
        t.push_back({p + "mlp.up_proj.weight", {48, 32}});
        t.push_back({p + "mlp.down_proj.weight", {32, 48}});
    }
    t.push_back({"model.norm.weight", {32}});
    return t;
}

void write_model(const QString& dir, std::vector<std::pair<std::string, std::vector<std::int64_t>>> tensors,
                 const std::string& dtype = "BF16") {
    std::ofstream(QDir(dir).filePath("config.json").toStdString()) << tiny_config().dump(2);
    std::vector<safetensors::TensorInfo> infos;
    for (const auto& [name, shape] : tensors) {
        safetensors::TensorInfo i;
        i.name = name;
        i.dtype = dtype;
        i.shape = shape;
        infos.push_back(i);
    }
    const std::string header = safetensors::build_header(infos);
    std::ofstream out(QDir(dir).filePath("model.safetensors").toStdString(), std::ios::binary);
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xFF));
    out << header;
    std::uint32_t state = 12345;
    for (const auto& info : infos) {
        const bool norm = info.name.find("norm") != std::string::npos;
        for (std::int64_t k = 0; k < info.elements(); ++k) {
            state = state * 1664525u + 1013904223u;
            const float v = norm ? 1.0f : (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 0.08f;
            std::uint32_t bits;
            std::memcpy(&bits, &v, 4);
            if (dtype == "BF16") {
                const std::uint16_t h = static_cast<std::uint16_t>(bits >> 16);
                out.write(reinterpret_cast<const char*>(&h), 2);
            } else {
                out.write(reinterpret_cast<const char*>(&bits), 4);
            }
        }
    }
}

const char* kStatic[] = {"frozen_weights", "quant_constants", "adapters", "trainable_weights", "master_weights",
                         "optimizer_state"};

}  // namespace

class RunsTest : public QObject {
    Q_OBJECT
private slots:
    void lossFallsAndMemoryIsExact_data() {
        QTest::addColumn<QString>("method");
        QTest::newRow("full") << "full";
        QTest::newRow("lora") << "lora";
        QTest::newRow("qlora") << "qlora";
    }
    void lossFallsAndMemoryIsExact() {
        QFETCH(QString, method);
        // fp32, asked for: the byte counts below are 4 per weight (auto would take bf16-mixed on a
        // CPU with bf16 hardware).
        const Result r = run({"--method", method, "--precision", "fp32", "--steps", "30", "--eval-every", "0",
                              "--sample-tokens", "8"});
        QVERIFY2(r.bad_lines.empty(), r.bad_lines.empty() ? "" : r.bad_lines.front().c_str());
        QVERIFY2(r.exit_code == 0, qPrintable(r.err));
        QCOMPARE(r.events.front().type, EventType::Hello);
        QCOMPARE(r.events.back().type, EventType::Done);
        QCOMPARE(r.events.back().string_field("reason"), std::string("completed"));
        const Event* hello = r.first(EventType::Hello);
        QVERIFY(hello->body.contains("plan") && hello->body["params"]["total"].get<std::int64_t>() > 0);

        // The loss falls within a few dozen steps of the built-in model.
        const auto l = r.losses();
        QCOMPARE(l.size(), size_t(30));
        const double first = mean(l, 0, 3), last = mean(l, 25, 30);
        QVERIFY2(last < first - 0.5, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
        for (auto* s : r.all(EventType::Step)) {
            QVERIFY(s->number_field("tokens_per_s") > 0);
            QVERIFY(s->number_field("lr") > 0);
            QCOMPARE(s->int_field("total_steps"), 30);
        }

        // Memory events at least 10 per second over the run.
        const auto mem = r.all(EventType::Memory);
        const double span = r.events.back().t - r.events.front().t;
        QVERIFY2(mem.size() >= 10 * span * 0.9, qPrintable(QString("%1 events in %2 s").arg(mem.size()).arg(span)));

        // Static components: measured == bytes of the trainer's tensors == the planner's prediction.
        const Event* predicted = r.first(EventType::Predicted);
        QVERIFY(predicted);
        const Event* tensors = nullptr;
        for (auto* e : r.all(EventType::Log))
            if (e->body.contains("tensor_bytes")) tensors = e;
        QVERIFY(tensors);
        const Event* idle = nullptr;
        for (auto* m : mem)
            if (m->string_field("phase") == "idle" && m->int_field("step") == 0) idle = m;
        QVERIFY(idle);
        const json& tb = tensors->body["tensor_bytes"];
        for (const char* c : kStatic) {
            const std::int64_t own = tb.contains(c) ? tb[c].get<std::int64_t>() : 0;
            QVERIFY2(component(*idle, c) == own, c);
            QVERIFY2(component(*predicted, c) == own,
                     qPrintable(QString("%1: predicted %2, tensors %3").arg(c).arg(component(*predicted, c)).arg(own)));
        }
        const std::int64_t total = hello->body["params"]["total"], trainable = hello->body["params"]["trainable"];
        if (method == "full") {
            QCOMPARE(component(*idle, "trainable_weights"), 4 * total);
            QCOMPARE(component(*idle, "optimizer_state"), 8 * total);
        } else {
            QCOMPARE(component(*idle, "adapters"), 4 * trainable);
            QCOMPARE(component(*idle, "optimizer_state"), 8 * trainable);
            if (method == "lora") QCOMPARE(component(*idle, "frozen_weights"), 4 * (total - trainable));
            else QVERIFY(component(*idle, "quant_constants") > 0);
        }
        // Activations and gradients show up inside steps and are gone between them.
        std::int64_t act = 0, grad = 0;
        for (auto* m : mem) {
            act = std::max(act, component(*m, "activations") + component(*m, "logits_loss"));
            grad = std::max(grad, component(*m, "gradients"));
            QVERIFY(m->int_field("allocated_bytes") <= m->int_field("peak_bytes"));
            QVERIFY(m->int_field("rss_bytes") > 0);
        }
        QVERIFY(act > 0);
        // A LoRA step's adapter gradients live for well under the sampler's 100 ms once steps are
        // fast, so whether a sample lands on them is timing; the done event's exact per-component
        // peak is not.
        const auto& peaks = r.last(EventType::Done)->body.at("component_peaks");
        grad = std::max(grad, peaks.contains("gradients") ? peaks["gradients"].get<std::int64_t>() : 0);
        QVERIFY(grad > 0);
        QCOMPARE(component(*r.last(EventType::Memory), "gradients"), 0);
        QVERIFY(r.last(EventType::Done)->int_field("peak_bytes") > 0);
    }

    void interruptedRunResumes_data() {
        QTest::addColumn<QString>("method");
        QTest::newRow("lora") << "lora";
        QTest::newRow("full") << "full";
    }
    void interruptedRunResumes() {
        QFETCH(QString, method);
        QTemporaryDir dir;
        const QStringList common = {"--method", method, "--steps", "16", "--seq", "64", "--batch", "2",
                                    "--eval-every", "0", "--sample-tokens", "0"};
        const Result a = run(common + QStringList{"--out", dir.filePath("a")});
        QCOMPARE(a.exit_code, 0);
        const auto la = a.losses();
        QCOMPARE(la.size(), size_t(16));

        const Result b = run(common + QStringList{"--out", dir.filePath("b")},
                             [](const Event& e) { return e.type == EventType::Step && e.int_field("step") >= 3; });
        QCOMPARE(b.exit_code, 0);
        const Event* done = b.last(EventType::Done);
        QVERIFY(done);
        if (done->string_field("reason") != "interrupted") QSKIP("the run finished before the signal arrived");
        const std::int64_t k = done->int_field("steps");
        QVERIFY(k >= 3 && k < 16);
        const std::string ckpt = done->string_field("checkpoint");
        QVERIFY(QFileInfo::exists(QString::fromStdString(ckpt) + "/trainer_state.json"));
        QCOMPARE(b.last(EventType::Checkpoint)->string_field("path"), ckpt);
        // Losses up to the interruption are the same as the uninterrupted run's.
        const auto lb = b.losses();
        for (std::int64_t i = 0; i < k; ++i) QCOMPARE(lb[i], la[i]);

        const Result c = run(common + QStringList{"--resume", QString::fromStdString(ckpt), "--out", dir.filePath("c")});
        QVERIFY2(c.exit_code == 0, qPrintable(c.err));
        const auto steps = c.all(EventType::Step);
        QCOMPARE(static_cast<std::int64_t>(steps.size()), 16 - k);
        QCOMPARE(steps.front()->int_field("step"), k + 1);
        for (size_t i = 0; i < steps.size(); ++i) {
            const double want = la[k + i], got = steps[i]->number_field("loss");
            QVERIFY2(std::abs(want - got) <= 1e-6 * std::max(1.0, std::abs(want)),
                     qPrintable(QString("step %1: %2 vs %3").arg(k + 1 + i).arg(got, 0, 'g', 12).arg(want, 0, 'g', 12)));
        }
    }

    void outputsLoadBack() {
        QTemporaryDir dir;
        // Full fine-tune -> a model folder (config.json + model.safetensors) that trains again.
        const Result a = run({"--method", "full", "--steps", "2", "--seq", "32", "--batch", "2", "--out",
                              dir.filePath("full"), "--sample-tokens", "4"});
        QVERIFY2(a.exit_code == 0, qPrintable(a.err));
        QVERIFY(QFileInfo::exists(dir.filePath("full/model.safetensors")));
        QVERIFY(a.last(EventType::Done)->body.contains("sample"));
        const auto h = safetensors::read_header(dir.filePath("full/model.safetensors").toStdString());
        QVERIFY(h.tensors.size() > 10);
        const Result b = run({"--model", dir.filePath("full"), "--method", "qlora", "--steps", "2", "--seq", "32",
                              "--batch", "2", "--out", dir.filePath("adapter"), "--sample-tokens", "0"});
        QVERIFY2(b.exit_code == 0, qPrintable(b.err));
        // LoRA output: PEFT names and an adapter_config.json.
        const auto ah = safetensors::read_header(dir.filePath("adapter/adapter_model.safetensors").toStdString());
        QVERIFY(!ah.tensors.empty());
        QVERIFY(QString::fromStdString(ah.tensors.front().name).startsWith("base_model.model.model.layers."));
        QVERIFY(QFileInfo::exists(dir.filePath("adapter/adapter_config.json")));
    }

    void predictionUsesYourCalibration() {
        // A calibrated profile saved by the user (wingspan calibrate / the window) is what the
        // trainer predicts the process total with; without one, the bundled libtorch-cpu.
        QTemporaryDir config;
        QVERIFY(QDir().mkpath(config.filePath("wingspan/frameworks")));
        const std::int64_t context = 123'456'789;
        std::ofstream(config.filePath("wingspan/frameworks/libtorch-cpu-calibrated.json").toStdString())
            << R"({"id": "libtorch-cpu-calibrated", "context_bytes": )" << context
            << R"(, "allocator_slack": 0, "optimizer_step": "fused", "grouped_eager_attention": true,
                  "softmax_fp32": false, "norm_saves_square": true, "loss_in_place": true, "tied_grad_in_place": true,
                  "kernels": {"norm_saves_input_only": true, "norm_recomputes_normalized": true,
                              "gated_activation_saves_gate_up": true, "unfused_model_types": ["gemma", "gemma2"]}})";
        const QByteArray saved = qgetenv("XDG_CONFIG_HOME");
        qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
        const Result calibrated = run({"--method", "lora", "--steps", "1", "--seq", "32", "--batch", "1", "--sample-tokens", "0"});
        qputenv("XDG_CONFIG_HOME", saved);
        QVERIFY2(calibrated.exit_code == 0, qPrintable(calibrated.err));
        const Event* p = calibrated.first(EventType::Predicted);
        QVERIFY(p);
        QCOMPARE(p->string_field("framework"), std::string("libtorch-cpu-calibrated"));
        QCOMPARE(p->int_field("total_bytes") - p->int_field("peak_bytes"), context);

        const Result bundled = run({"--method", "lora", "--steps", "1", "--seq", "32", "--batch", "1", "--sample-tokens", "0"});
        QVERIFY2(bundled.exit_code == 0, qPrintable(bundled.err));
        const Event* b = bundled.first(EventType::Predicted);
        QVERIFY(b);
        QCOMPARE(b->string_field("framework"), std::string("libtorch-cpu"));
        QCOMPARE(b->int_field("peak_bytes"), p->int_field("peak_bytes"));
        QVERIFY(b->int_field("total_bytes") - b->int_field("peak_bytes") != context);
    }

    void modelFoldersFromSafetensors() {
        QTemporaryDir dir;
        // BF16 weights, all present: trains (a pretrained-style run).
        write_model(dir.filePath(""), tiny_tensors());
        const Result ok = run({"--model", dir.path(), "--method", "lora", "--steps", "2", "--seq", "32", "--batch", "2",
                               "--sample-tokens", "0"});
        QVERIFY2(ok.exit_code == 0, qPrintable(ok.err));
        // config.json only: random weights with a warning.
        QTemporaryDir cfg_only;
        std::ofstream(cfg_only.filePath("config.json").toStdString()) << tiny_config().dump();
        const Result rnd = run({"--model", cfg_only.path(), "--method", "full", "--steps", "1", "--seq", "32", "--batch",
                                "2", "--sample-tokens", "0"});
        QVERIFY2(rnd.exit_code == 0, qPrintable(rnd.err));
        bool warned = false;
        for (auto* l : rnd.all(EventType::Log)) warned |= l->string_field("level") == "warning";
        QVERIFY(warned);
    }

    void precisionsAndCheckpointing() {
        // bf16-mixed: bf16 weights, fp32 master copy.
        const Result m = run({"--method", "full", "--precision", "bf16-mixed", "--steps", "2", "--seq", "32", "--batch",
                              "2", "--sample-tokens", "0"});
        QVERIFY2(m.exit_code == 0, qPrintable(m.err));
        const std::int64_t total = m.first(EventType::Hello)->body["params"]["total"];
        const Event* idle = nullptr;
        for (auto* e : m.all(EventType::Memory))
            if (e->int_field("step") == 0 && e->string_field("phase") == "idle") idle = e;
        QVERIFY(idle);
        QCOMPARE(component(*idle, "trainable_weights"), 2 * total);
        QCOMPARE(component(*idle, "master_weights"), 4 * total);
        QCOMPARE(component(*idle, "optimizer_state"), 8 * total);
        for (double l : m.losses()) QVERIFY(std::isfinite(l));

        // Gradient checkpointing: the same losses, a lower peak.
        const QStringList args = {"--method", "lora", "--steps", "2", "--seq", "256", "--batch", "4", "--sample-tokens", "0"};
        const Result plain = run(args);
        const Result ckpt = run(args + QStringList{"--grad-checkpointing"});
        QCOMPARE(plain.exit_code, 0);
        QCOMPARE(ckpt.exit_code, 0);
        const auto lp = plain.losses(), lc = ckpt.losses();
        QCOMPARE(lp.size(), lc.size());
        for (size_t i = 0; i < lp.size(); ++i) QVERIFY(std::abs(lp[i] - lc[i]) < 1e-4);
        QVERIFY(ckpt.last(EventType::Done)->int_field("peak_bytes") < plain.last(EventType::Done)->int_field("peak_bytes"));
    }

    void badInputsAreErrorEvents_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("code");
        for (const char* k : {"unknown_method", "bad_number", "missing_method", "unknown_flag"})
            QTest::newRow(k) << k << "bad_argument";
        QTest::newRow("missing_data") << "missing_data" << "io";
        QTest::newRow("missing_model") << "missing_model" << "io";
        QTest::newRow("bad_json_line") << "bad_json_line" << "bad_data";
        QTest::newRow("missing_field") << "missing_field" << "bad_data";
        QTest::newRow("bad_config") << "bad_config" << "bad_model";
        QTest::newRow("missing_tensor") << "missing_tensor" << "bad_model";
        QTest::newRow("misshapen_tensor") << "misshapen_tensor" << "bad_model";
        QTest::newRow("extra_tensor") << "extra_tensor" << "bad_model";
        QTest::newRow("nan_loss") << "nan_loss" << "nan_loss";
        QTest::newRow("memory_limit") << "memory_limit" << "out_of_memory";
    }
    void badInputsAreErrorEvents() {
        QFETCH(QString, kind);
        QFETCH(QString, code);
        QTemporaryDir dir;
        const QString data = dir.filePath("data.jsonl");
        QStringList args = {"--method", "lora", "--steps", "3", "--seq", "32", "--batch", "2", "--sample-tokens", "0"};
        std::string needle;
        auto tensors = tiny_tensors();
        if (kind == "unknown_method") {
            args = {"--method", "sgd"};
            needle = "sgd";
        } else if (kind == "bad_number") {
            args << "--seq" << "many";
            needle = "--seq";
        } else if (kind == "missing_method") {
            args = {"--steps", "3"};
            needle = "--method";
        } else if (kind == "unknown_flag") {
            args << "--frobnicate";
            needle = "--frobnicate";
        } else if (kind == "missing_data") {
            args << "--data" << dir.filePath("nope.jsonl");
            needle = "nope.jsonl";
        } else if (kind == "missing_model") {
            args << "--model" << dir.filePath("no-model");
            needle = "no-model";
        } else if (kind == "bad_json_line") {
            std::ofstream(data.toStdString()) << "{\"text\": \"fine\"}\n{\"text\": \"fine\"}\n{\"text\": broken\n";
            args << "--data" << data;
            needle = "line 3";
        } else if (kind == "missing_field") {
            std::ofstream(data.toStdString()) << "{\"text\": \"fine\"}\n{\"question\": \"where is the text?\"}\n";
            args << "--data" << data;
            needle = "line 2";
        } else if (kind == "bad_config") {
            std::ofstream(dir.filePath("config.json").toStdString()) << "{\"hidden_size\": 32, ";
            args << "--model" << dir.path();
            needle = "config.json";
        } else if (kind == "missing_tensor") {
            needle = tensors[3].first;
            tensors.erase(tensors.begin() + 3);
            write_model(dir.path(), tensors);
            args << "--model" << dir.path();
        } else if (kind == "misshapen_tensor") {
            tensors[4].second = {7, 7};
            needle = tensors[4].first;
            write_model(dir.path(), tensors, "F32");
            args << "--model" << dir.path();
        } else if (kind == "extra_tensor") {
            tensors.push_back({"model.layers.5.mlp.up_proj.weight", {2, 2}});
            needle = "model.layers.5.mlp.up_proj.weight";
            write_model(dir.path(), tensors);
            args << "--model" << dir.path();
        } else if (kind == "nan_loss") {
            args = {"--method", "full", "--lr", "1e30", "--warmup-steps", "0", "--max-grad-norm", "0", "--steps", "5",
                    "--seq", "32", "--batch", "2", "--sample-tokens", "0"};
            needle = "loss";
        } else if (kind == "memory_limit") {
            // The static tensors fit; the first forward pass does not.
            args = {"--method", "lora", "--steps", "3", "--memory-limit", "20000000", "--sample-tokens", "0"};
            needle = "memory limit";
        }
        const Result r = run(args, {}, 60000);
        QVERIFY2(r.bad_lines.empty(), r.bad_lines.empty() ? "" : r.bad_lines.front().c_str());
        QVERIFY2(r.exit_code > 0, qPrintable(QString("exit %1").arg(r.exit_code)));
        QVERIFY(!r.events.empty());
        QCOMPARE(r.events.front().type, EventType::Hello);   // first line of every run
        const Event* e = r.first(EventType::Error);
        QVERIFY2(e, qPrintable(r.err));
        QCOMPARE(QString::fromStdString(e->string_field("code")), code);
        const std::string msg = e->string_field("message");
        QVERIFY2(msg.find(needle) != std::string::npos, msg.c_str());
        QCOMPARE(r.events.back().type, EventType::Done);
        QCOMPARE(r.events.back().string_field("reason"), std::string("error"));
        if (kind == "bad_json_line") QCOMPARE(e->int_field("line"), 3);
        if (code == "bad_argument") QCOMPARE(r.exit_code, 2);
        if (code == "out_of_memory") {
            const std::string comp = e->string_field("component");
            QVERIFY2(comp == "activations" || comp == "logits_loss", comp.c_str());
            QVERIFY(e->int_field("bytes") > e->int_field("available_bytes"));
            QVERIFY(e->int_field("available_bytes") >= 0);
            // The static tensors were allocated before the limit was hit.
            QVERIFY(r.first(EventType::Memory) != nullptr);
        }
    }
};

QTEST_GUILESS_MAIN(RunsTest)
#include "test_runs.moc"
