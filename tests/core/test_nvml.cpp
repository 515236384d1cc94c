// The NVML probe (core/include/wingspan/nvml.hpp): without the driver's library every GPU field
// is simply absent and "this machine" stays a CPU machine; with a library that answers (a fake
// one built beside this test), the GPU's name, memory and bf16 become this machine's ceiling and
// the process's GPU bytes are read from the process table.
#include <QtTest>

#include <unistd.h>

#include <cstdlib>

#include "wingspan/nvml.hpp"
#include "wingspan/profiles.hpp"

using namespace wingspan;

class NvmlTest : public QObject {
    Q_OBJECT
private slots:
    void absentLibraryIsNotAnError() {
        qputenv("WINGSPAN_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
        const nvml::Probe p = nvml::probe();
        QVERIFY(!p.available);
        QCOMPARE(p.library, std::string("/nonexistent/libnvidia-ml.so.1"));
        QVERIFY(!p.error.empty());
        QVERIFY(p.gpus.empty());
        QVERIFY(!nvml::process_bytes(getpid()).has_value());
        const MachineProfile m = detect_this_machine();
        QCOMPARE(int(m.kind), int(MachineKind::Cpu));
        QCOMPARE(m.default_framework, std::string("libtorch-cpu"));
        QCOMPARE(m.memory_bytes, m.host_memory_bytes);
    }

    void aLibraryThatAnswersGivesTheGpu() {
        qputenv("WINGSPAN_NVML_LIBRARY", FAKE_NVML_LIBRARY);
        const nvml::Probe p = nvml::probe();
        QVERIFY2(p.available, p.error.c_str());
        QCOMPARE(int(p.gpus.size()), 1);
        QCOMPARE(p.gpus[0].name, std::string("Wingspan Test GPU"));
        QCOMPARE(p.gpus[0].total_bytes, std::int64_t(24) << 30);
        QCOMPARE(p.gpus[0].free_bytes, std::int64_t(20) << 30);
        QCOMPARE(p.gpus[0].cc_major, 8);
        QVERIFY(p.gpus[0].bf16);
        // Only this process's entry counts (the table asks for more room first).
        QCOMPARE(nvml::process_bytes(getpid()).value_or(-1), std::int64_t(123456789));
        QCOMPARE(nvml::process_bytes(getpid() + 2).value_or(-1), std::int64_t(0));

        const MachineProfile m = detect_this_machine();
        QCOMPARE(int(m.kind), int(MachineKind::Gpu));
        QCOMPARE(m.memory_bytes, std::int64_t(24) << 30);
        QCOMPARE(m.usable_bytes, std::int64_t(20) << 30);
        QVERIFY(m.host_memory_bytes > 0);
        QVERIFY(m.bf16);
        QVERIFY(QString::fromStdString(m.name).contains("Wingspan Test GPU"));
        QCOMPARE(m.default_framework, std::string("libtorch-cuda"));
        QCOMPARE(m.tflops_fp32, 2.0 * 16384 * 2520e6 / 1e12);   // cores × clock × FMA
        qunsetenv("WINGSPAN_NVML_LIBRARY");
    }
};

QTEST_GUILESS_MAIN(NvmlTest)
#include "test_nvml.moc"
