// Devices through the real wingspan-train binary: `wingspan-train devices` lists what this build
// can train on; --device picks one (auto: CUDA, then MPS, then the CPU); a device this build or
// machine lacks ends in a device_unavailable error event, never in a crash or a quiet CPU run.
#include <QProcess>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "wingspan/protocol.hpp"

using namespace wingspan::protocol;
using nlohmann::json;

namespace {

struct Output {
    int exit_code = -1;
    QByteArray out, err;
    std::vector<Event> events;
    const Event* first(EventType t) const {
        for (const auto& e : events)
            if (e.type == t) return &e;
        return nullptr;
    }
    int count(EventType t) const {
        int n = 0;
        for (const auto& e : events) n += e.type == t;
        return n;
    }
    std::vector<const Event*> all(EventType t) const {
        std::vector<const Event*> out;
        for (const auto& e : events)
            if (e.type == t) out.push_back(&e);
        return out;
    }
};

Output run(const QStringList& args, const QMap<QString, QString>& env_extra = {}) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("OMP_WAIT_POLICY", "passive");
    for (auto it = env_extra.begin(); it != env_extra.end(); ++it) env.insert(it.key(), it.value());
    p.setProcessEnvironment(env);
    p.start(WINGSPAN_TRAIN_BIN, args);
    Output o;
    if (!p.waitForStarted() || !p.waitForFinished(180000)) return o;
    o.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    o.out = p.readAllStandardOutput();
    o.err = p.readAllStandardError();
    for (const QByteArray& line : o.out.split('\n')) {
        if (line.isEmpty()) continue;
        ParseResult r = parse_line(line.toStdString());
        if (r.event) o.events.push_back(std::move(*r.event));
    }
    return o;
}

std::int64_t mem_total_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key, unit;
    std::int64_t kb = 0;
    while (in >> key >> kb >> unit)
        if (key == "MemTotal:") return kb * 1024;
    return 0;
}

const QStringList kShortRun = {"--method", "lora", "--steps", "2", "--seq", "32", "--batch", "2",
                               "--threads", "2", "--sample-tokens", "0", "--eval-every", "0"};

}  // namespace

class DeviceTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void devicesListsTheCpu() {
        const Output o = run({"devices"});
        QCOMPARE(o.exit_code, 0);
        const json j = json::parse(o.out.toStdString());
        QVERIFY(j.is_object());
        QCOMPARE(j.size(), size_t(1));
        const json& list = j.at("devices");
        QVERIFY(list.is_array());
        QVERIFY(!list.empty());
        const json& cpu = list[0];
        QCOMPARE(cpu.at("type").get<std::string>(), std::string("cpu"));
        QCOMPARE(cpu.at("index").get<int>(), 0);
        QVERIFY(!cpu.at("name").get<std::string>().empty());
        QCOMPARE(cpu.at("total_bytes").get<std::int64_t>(), mem_total_bytes());   // the machine's RAM
        QVERIFY(cpu.at("bf16").is_boolean());
        // Debian's libtorch is CPU-only and this is not a Mac: the CPU is all there is.
        for (const auto& d : list) {
            QVERIFY(d.at("type") != "cuda");
            QVERIFY(d.at("type") != "mps");
            for (const char* key : {"type", "index", "name", "total_bytes", "bf16"}) QVERIFY(d.contains(key));
        }
    }

    void autoAndCpuTrainOnTheCpu_data() {
        QTest::addColumn<QString>("device");
        QTest::newRow("auto") << "auto";
        QTest::newRow("cpu") << "cpu";
    }
    void autoAndCpuTrainOnTheCpu() {
        QFETCH(QString, device);
        const Output o = run(QStringList{"--device", device} + kShortRun);
        QCOMPARE(o.exit_code, 0);
        const Event* hello = o.first(EventType::Hello);
        QVERIFY(hello);
        QCOMPARE(hello->string_field("device"), std::string("cpu"));
        QVERIFY(!hello->string_field("device_name").empty());
        QCOMPARE(o.count(EventType::Step), 2);
        // Memory events name the device; on the CPU the allocator holds what is allocated.
        const auto memory = o.all(EventType::Memory);
        QVERIFY(memory.size() >= 2);
        for (const Event* m : memory) {
            QCOMPARE(m->string_field("device"), std::string("cpu"));
            QCOMPARE(m->int_field("reserved_bytes", -1), m->int_field("allocated_bytes", -2));
            QCOMPARE(m->int_field("reserved_peak_bytes", -1), m->int_field("peak_bytes", -2));
            QVERIFY(!m->body.contains("device_process_bytes"));   // no GPU, no NVML figure
        }
        const Event* done = o.first(EventType::Done);
        QVERIFY(done);
        QVERIFY(done->int_field("peak_bytes") > 0);
        QCOMPARE(done->int_field("reserved_peak_bytes", -1), done->int_field("peak_bytes"));
        QVERIFY(!done->body.contains("device_process_peak_bytes"));
    }

    // The same run measured by the counting allocator and by c10's reporting hook (how GPU runs
    // are measured): every component's peak and the peak of allocated bytes agree to the byte.
    void hookMeasuresWhatTheCountingAllocatorDoes_data() {
        QTest::addColumn<QStringList>("args");
        QTest::newRow("lora bf16-mixed checkpointing")
            << QStringList{"--method", "lora", "--precision", "bf16-mixed", "--grad-checkpointing"};
        QTest::newRow("qlora fp32") << QStringList{"--method", "qlora"};
        QTest::newRow("full fp32") << QStringList{"--method", "full"};
    }
    void hookMeasuresWhatTheCountingAllocatorDoes() {
        QFETCH(QStringList, args);
        const QStringList common = {"--steps", "2", "--seq", "48", "--batch", "2", "--threads", "2",
                                    "--sample-tokens", "0", "--eval-every", "0"};
        const Output counting = run(args + common);
        const Output hook = run(args + common, {{"WINGSPAN_MEMORY_HOOK", "1"}});
        QCOMPARE(counting.exit_code, 0);
        QCOMPARE(hook.exit_code, 0);
        const Event* a = counting.first(EventType::Done);
        const Event* b = hook.first(EventType::Done);
        QVERIFY(a && b);
        QVERIFY(a->int_field("peak_bytes") > 0);
        QCOMPARE(b->int_field("peak_bytes"), a->int_field("peak_bytes"));
        QCOMPARE(b->body.at("component_peaks").dump(), a->body.at("component_peaks").dump());
        QCOMPARE(b->int_field("reserved_peak_bytes"), b->int_field("peak_bytes"));
    }

    // fp16-mixed: fp16 weights and activations, fp32 master weights, dynamic loss scaling.
    void fp16MixedTrains() {
        const Output o = run({"--method", "lora", "--precision", "fp16-mixed", "--steps", "30", "--lr", "3e-3",
                              "--seq", "64", "--batch", "4", "--threads", "2", "--sample-tokens", "0",
                              "--eval-every", "0"});
        QCOMPARE(o.exit_code, 0);
        const auto steps = o.all(EventType::Step);
        QCOMPARE(int(steps.size()), 30);
        double first = 0, last = 0;
        int applied = 0;
        for (size_t i = 0; i < steps.size(); ++i) {
            const double loss = steps[i]->number_field("loss");
            QVERIFY2(std::isfinite(loss), "fp16-mixed gave a non-finite loss");
            QVERIFY(steps[i]->body.contains("loss_scale"));
            QVERIFY(steps[i]->number_field("loss_scale") >= 1);
            QVERIFY(steps[i]->body.at("skipped").is_boolean());
            applied += steps[i]->body.at("skipped").get<bool>() ? 0 : 1;
            if (i < 5) first += loss / 5;
            if (i >= steps.size() - 5) last += loss / 5;
        }
        QVERIFY(applied >= 25);
        QVERIFY2(last < first * 0.9, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
        const Event* hello = o.first(EventType::Hello);
        QCOMPARE(hello->body.at("plan").at("precision").get<std::string>(), std::string("fp16-mixed"));
        // fp32 master weights of the adapters are part of the run, as the planner predicts.
        const Event* done = o.first(EventType::Done);
        QVERIFY(done->body.at("component_peaks").at("master_weights").get<std::int64_t>() > 0);
    }

    // A loss scale so large that the fp16 gradients overflow: the step is skipped (the weights do
    // not move), reported as skipped, and the scale halves until the gradients are finite; after
    // `--loss-scale-growth` good steps it doubles again.
    void fp16OverflowSkipsTheStep() {
        const double start = 16777216;   // 2^24
        const Output o = run({"--method", "lora", "--precision", "fp16-mixed", "--steps", "24",
                              "--initial-loss-scale", "16777216", "--loss-scale-growth", "3", "--seq", "32",
                              "--batch", "2", "--threads", "2", "--sample-tokens", "0", "--eval-every", "0"});
        QCOMPARE(o.exit_code, 0);
        const auto steps = o.all(EventType::Step);
        QCOMPARE(int(steps.size()), 24);
        QCOMPARE(steps[0]->number_field("loss_scale"), start);
        QVERIFY(steps[0]->body.at("skipped").get<bool>());
        int skipped = 0, good_run = 0;
        bool grew = false, trained = false;
        for (size_t i = 0; i < steps.size(); ++i) {
            QVERIFY(std::isfinite(steps[i]->number_field("loss")));
            const bool skip = steps[i]->body.at("skipped").get<bool>();
            const double scale = steps[i]->number_field("loss_scale");
            if (i + 1 < steps.size()) {
                const double next = steps[i + 1]->number_field("loss_scale");
                if (skip) QCOMPARE(next, scale / 2);
                else if (good_run + 1 == 3) {
                    QCOMPARE(next, scale * 2);
                    grew = true;
                } else
                    QCOMPARE(next, scale);
            }
            skipped += skip;
            trained = trained || !skip;
            good_run = skip ? 0 : (good_run + 1) % 3;
        }
        QVERIFY(skipped >= 2);
        QVERIFY(trained);
        QVERIFY(grew);
        QCOMPARE(o.first(EventType::Done)->string_field("reason"), std::string("completed"));
    }

    // What is missing and how to get it, in the error event's message.
    void missingDevicesAreErrorEvents_data() {
        QTest::addColumn<QString>("device");
        QTest::addColumn<QStringList>("message_has");
#ifdef WINGSPAN_TEST_TORCH_CUDA
        // The CUDA flavour (./dev.sh cuda) on a machine without a GPU: it names what is missing,
        // the visible GPU and the driver (NVML, here pointed at a library that does not exist).
        QTest::newRow("cuda") << "cuda" << QStringList{"has CUDA but no CUDA GPU is visible", "NVIDIA driver", "NVML",
                                                       "CUDA_VISIBLE_DEVICES"};
        QTest::newRow("cuda:1") << "cuda:1" << QStringList{"no CUDA GPU is visible", "NVML"};
#else
        QTest::newRow("cuda") << "cuda" << QStringList{"without CUDA", "CMAKE_PREFIX_PATH", "README", "NVML"};
        QTest::newRow("cuda:1") << "cuda:1" << QStringList{"without CUDA", "CMAKE_PREFIX_PATH"};
#endif
        QTest::newRow("mps") << "mps" << QStringList{"macOS", "Apple"};
    }
    void missingDevicesAreErrorEvents() {
        QFETCH(QString, device);
        QFETCH(QStringList, message_has);
        const Output o = run(QStringList{"--device", device} + kShortRun,
                             {{"WINGSPAN_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}});
        QCOMPARE(o.exit_code, 1);
        const Event* hello = o.first(EventType::Hello);
        QVERIFY(hello);
        QCOMPARE(hello->string_field("device"), device.toStdString());
        const Event* error = o.first(EventType::Error);
        QVERIFY(error);
        QCOMPARE(error->string_field("code"), std::string("device_unavailable"));
        const QString message = QString::fromStdString(error->string_field("message"));
        for (const QString& part : message_has) QVERIFY2(message.contains(part), qPrintable(message));
        // No quiet CPU run instead.
        QCOMPARE(o.count(EventType::Step), 0);
        QCOMPARE(o.count(EventType::Predicted), 0);
        const Event* done = o.first(EventType::Done);
        QVERIFY(done);
        QCOMPARE(done->string_field("reason"), std::string("error"));
    }

    // --precision auto (the default, issue 35): the fastest exact precision for the device that
    // trains. On this CPU: bf16-mixed where bf16 products run on the hardware path, fp32 where
    // they would be widened to fp32 first; `hello` and `predicted` say which and why.
    void autoPrecisionFollowsTheCpusBf16Path() {
        const Output devices = run({"devices"});
        QCOMPARE(devices.exit_code, 0);
        const json cpu = json::parse(devices.out.toStdString()).at("devices").at(0);
        const bool hardware = cpu.value("bf16_path", "") == "hardware";
        const Output o = run(kShortRun);
        QCOMPARE(o.exit_code, 0);
        const std::string expected = hardware ? "bf16-mixed" : "fp32";
        for (EventType t : {EventType::Hello, EventType::Predicted}) {
            const Event* e = o.first(t);
            QVERIFY(e);
            const json& choice = e->body.at("precision");
            QCOMPARE(choice.at("precision").get<std::string>(), expected);
            QCOMPARE(choice.at("auto").get<bool>(), true);
            QVERIFY(!choice.at("reason").get<std::string>().empty());
        }
        QCOMPARE(o.first(EventType::Hello)->body.at("plan").at("precision").get<std::string>(), expected);
        // Asked for, a precision is kept and said to be asked for.
        const Output asked = run(QStringList{"--precision", "bf16"} + kShortRun);
        QCOMPARE(asked.exit_code, 0);
        const json& choice = asked.first(EventType::Hello)->body.at("precision");
        QCOMPARE(choice.at("precision").get<std::string>(), std::string("bf16"));
        QCOMPARE(choice.at("auto").get<bool>(), false);
    }

    // Forced to the emulated bf16 path (possible on every CPU), auto takes fp32.
    void autoPrecisionAvoidsEmulatedBf16() {
        const Output o = run(kShortRun, {{"WINGSPAN_CPU_BF16", "emulated"}});
        QCOMPARE(o.exit_code, 0);
        const json& choice = o.first(EventType::Hello)->body.at("precision");
        QCOMPARE(choice.at("precision").get<std::string>(), std::string("fp32"));
        QVERIFY(QString::fromStdString(choice.at("reason").get<std::string>()).contains("fp32 is faster"));
    }

    // Where fp32 would not fit (here: --memory-limit between the two predicted peaks) but
    // bf16-mixed would, auto takes bf16-mixed, says why with both byte counts, and the run ends.
    void autoPrecisionTakesWhatFits() {
        const QMap<QString, QString> emulated = {{"WINGSPAN_CPU_BF16", "emulated"}};
        const QStringList shape = {"--method", "lora", "--steps", "1", "--seq", "256", "--batch", "4", "--threads", "2",
                                   "--sample-tokens", "0", "--eval-every", "0"};
        std::int64_t peak[2] = {0, 0};
        const char* names[2] = {"fp32", "bf16-mixed"};
        for (int i = 0; i < 2; ++i) {
            const Output o = run(QStringList{"--precision", names[i]} + shape, emulated);
            QCOMPARE(o.exit_code, 0);
            peak[i] = o.first(EventType::Predicted)->int_field("peak_bytes");
        }
        QVERIFY2(peak[1] * 5 < peak[0] * 4, "bf16-mixed must need clearly less than fp32 for this shape");
        const std::int64_t limit = (peak[0] + peak[1]) / 2;
        const Output o = run(QStringList{"--memory-limit", QString::number(limit)} + shape, emulated);
        QCOMPARE(o.exit_code, 0);
        const json& choice = o.first(EventType::Hello)->body.at("precision");
        QCOMPARE(choice.at("precision").get<std::string>(), std::string("bf16-mixed"));
        const QString reason = QString::fromStdString(choice.at("reason").get<std::string>());
        QVERIFY2(reason.contains(QString::number(peak[0])) && reason.contains(QString::number(peak[1])) &&
                     reason.contains("--memory-limit"),
                 qPrintable(reason));
        QCOMPARE(o.first(EventType::Done)->string_field("reason"), std::string("completed"));
        QVERIFY(o.first(EventType::Done)->int_field("peak_bytes") <= limit);
    }

    // A resumed run keeps the precision its checkpoint was trained in, whatever auto would pick.
    void autoPrecisionResumesInTheCheckpointsPrecision() {
        QTemporaryDir dir;
        const QString out = dir.path() + "/run";
        const QStringList args = {"--method", "lora", "--seq", "32", "--batch", "2", "--threads", "2",
                                  "--sample-tokens", "0", "--eval-every", "0"};
        const Output first = run(QStringList{"--precision", "bf16-mixed", "--steps", "2", "--out", out} + args);
        QCOMPARE(first.exit_code, 0);
        const Output resumed = run(QStringList{"--steps", "3", "--resume", out, "--out", out} + args,
                                   {{"WINGSPAN_CPU_BF16", "emulated"}});
        QCOMPARE(resumed.exit_code, 0);
        const json& choice = resumed.first(EventType::Hello)->body.at("precision");
        QCOMPARE(choice.at("precision").get<std::string>(), std::string("bf16-mixed"));
        QVERIFY(QString::fromStdString(choice.at("reason").get<std::string>()).contains("resumed"));
    }

    // fp32 products by oneDNN's sgemm (the default) or the system BLAS (WINGSPAN_CPU_FP32_GEMM):
    // both report themselves, allocate no tensors (the same predicted and measured peak to the
    // byte) and train the same model (losses equal to fp32 rounding); an unknown value is refused.
    void fp32GemmLibrariesAgree() {
        const QStringList fp32 = QStringList{"--precision", "fp32"} + kShortRun;
        std::int64_t peak[2] = {0, 0}, predicted[2] = {0, 0};
        double loss[2] = {0, 0};
        const char* names[2] = {"onednn", "blas"};
        for (int i = 0; i < 2; ++i) {
            const Output o = run(fp32, {{"WINGSPAN_CPU_FP32_GEMM", names[i]}});
            QCOMPARE(o.exit_code, 0);
            const json& cpu = o.first(EventType::Predicted)->body.at("cpu");
            const std::string why = cpu.at("fp32_gemm_why").get<std::string>();
            // libtorch 2.x links oneDNN inside itself without exporting its sgemm (the CUDA flavour):
            // there every fp32 product is the BLAS's, and there is nothing to compare.
            if (why.find("not in this libtorch") != std::string::npos) {
                QCOMPARE(cpu.at("fp32_gemm").get<std::string>(), std::string("blas"));
                QSKIP("this libtorch has no oneDNN sgemm: every fp32 product goes to the system BLAS");
            }
            QCOMPARE(cpu.at("fp32_gemm").get<std::string>(), std::string(names[i]));
            QVERIFY(!why.empty());
            predicted[i] = o.first(EventType::Predicted)->int_field("peak_bytes");
            peak[i] = o.first(EventType::Done)->int_field("peak_bytes");
            loss[i] = o.all(EventType::Step).back()->number_field("loss");
        }
        QCOMPARE(predicted[1], predicted[0]);
        QCOMPARE(peak[1], peak[0]);
        QVERIFY2(std::abs(loss[1] - loss[0]) <= 1e-4 * std::abs(loss[0]),
                 qPrintable(QString("losses %1 vs %2").arg(loss[0], 0, 'g', 10).arg(loss[1], 0, 'g', 10)));
        const Output bad = run(fp32, {{"WINGSPAN_CPU_FP32_GEMM", "mkl"}});
        QCOMPARE(bad.exit_code, 2);
        const Event* error = bad.first(EventType::Error);
        QVERIFY(error);
        QCOMPARE(error->string_field("code"), std::string("bad_argument"));
        QVERIFY(QString::fromStdString(error->string_field("message")).contains("expected onednn, blas or auto"));
    }

    void unknownDeviceNamesAreBadArguments() {
        for (const QString& name : {QString("tpu"), QString("cuda:x"), QString("cuda:")}) {
            const Output o = run(QStringList{"--device", name} + kShortRun);
            QCOMPARE(o.exit_code, 2);
            const Event* error = o.first(EventType::Error);
            QVERIFY(error);
            QCOMPARE(error->string_field("code"), std::string("bad_argument"));
            QVERIFY(QString::fromStdString(error->string_field("message")).contains("--device"));
        }
    }
};

QTEST_GUILESS_MAIN(DeviceTest)
#include "test_device.moc"
