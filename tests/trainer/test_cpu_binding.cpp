// The trainer's compute threads one per CPU (support/cpu_binding): the slices ranks take, what a
// binding does to ATen's real pool threads (each thread's own affinity mask, read on that thread),
// and every case where nothing is bound, with the sentence `hello` carries.
#include <QtTest>

#include <ATen/Parallel.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "support/cpu_binding.hpp"

using namespace wingspan::train;

namespace {

struct ScopedEnv {
    std::string name;
    ScopedEnv(const char* n, const char* value) : name(n) { ::setenv(n, value, 1); }
    ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

class TestCpuBinding : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        // Read the process's CPUs before anything binds (allowed_cpus caches the first read).
        QVERIFY(!cpu::allowed_cpus().empty());
        for (const char* v : {"WINGSPAN_CPU_BIND", "OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "KMP_AFFINITY"})
            ::unsetenv(v);
    }

    void ranksTakeEqualContiguousSlices() {
        const std::vector<int> four{0, 1, 2, 3};
        QCOMPARE(cpu::rank_slice(four, 0, 1), four);
        QCOMPARE(cpu::rank_slice(four, 0, 2), (std::vector<int>{0, 1}));
        QCOMPARE(cpu::rank_slice(four, 1, 2), (std::vector<int>{2, 3}));
        // Three CPUs for two ranks: one each, the third left to the system.
        QCOMPARE(cpu::rank_slice({4, 6, 9}, 1, 2), (std::vector<int>{6}));
        // More ranks than CPUs, or a rank outside the job: nothing to bind to.
        QVERIFY(cpu::rank_slice({0, 1}, 0, 3).empty());
        QVERIFY(cpu::rank_slice(four, 2, 2).empty());
        QVERIFY(cpu::rank_slice(four, -1, 2).empty());
    }

    // The cases that bind nothing come first: a binding cannot be undone by a later call.
    void offLeavesEveryThreadOnEveryCpu() {
        const auto allowed = cpu::allowed_cpus();
        if (allowed.size() < 2) QSKIP("one CPU: a pool of two threads is not bound anyway");
        at::set_num_threads(2);
        ScopedEnv off("WINGSPAN_CPU_BIND", "off");
        const auto b = cpu::bind_compute_threads(2);
        QVERIFY(!b.bound);
        QCOMPARE(b.why, std::string("not bound (WINGSPAN_CPU_BIND=off)"));
        QCOMPARE(cpu::binding_summary(), b.why);
        for (const auto& cpus : cpu::pool_thread_cpus(2)) QCOMPARE(cpus, allowed);
    }

    void theUsersOpenMpPlacementWins() {
        ScopedEnv places("OMP_PLACES", "cores");
        const auto b = cpu::bind_compute_threads(2);
        QVERIFY(!b.bound);
        QVERIFY2(contains(b.why, "OMP_PLACES"), b.why.c_str());
    }

    void moreThreadsThanCpusAreNotBound() {
        const int n = static_cast<int>(cpu::allowed_cpus().size()) + 1;
        const auto b = cpu::bind_compute_threads(n);
        QVERIFY(!b.bound);
        QVERIFY2(contains(b.why, std::to_string(n) + " threads, " + std::to_string(n - 1) + " CPUs"), b.why.c_str());
        // More ranks than CPUs: a rank has no CPU of its own.
        const auto r = cpu::bind_compute_threads(1, 0, n);
        QVERIFY(!r.bound);
        QVERIFY2(contains(r.why, "0 CPUs for this process"), r.why.c_str());
    }

    void oneThreadAloneStaysFree() {
        const auto b = cpu::bind_compute_threads(1);
        QVERIFY(!b.bound);
        QVERIFY2(contains(b.why, "one thread"), b.why.c_str());
    }

    // Last: binds the pool of this process for good.
    void everyPoolThreadRunsOnItsOwnCpu() {
        const auto allowed = cpu::allowed_cpus();
        if (allowed.size() < 2) QSKIP("one CPU: nothing to spread two threads over");
        at::set_num_threads(2);
        const auto b = cpu::bind_compute_threads(2);
        QVERIFY2(b.bound, b.why.c_str());
        const std::vector<int> expected{allowed[0], allowed[1]};
        QCOMPARE(b.cpus, expected);
        QCOMPARE(b.why, "compute threads bound one per CPU: " + std::to_string(allowed[0]) + "," +
                            std::to_string(allowed[1]));
        const auto seen = cpu::pool_thread_cpus(2);
        QCOMPARE(seen.size(), size_t(2));
        QCOMPARE(seen[0], std::vector<int>{allowed[0]});
        QCOMPARE(seen[1], std::vector<int>{allowed[1]});
        // The process's CPUs are still all of them, though the main thread now has one.
        QCOMPARE(cpu::allowed_cpus(), allowed);
        // A rank's share: the second of two ranks puts its one thread on the second CPU.
        const auto r = cpu::bind_compute_threads(1, 1, 2);
        QVERIFY2(r.bound, r.why.c_str());
        QVERIFY2(contains(r.why, "this rank's share"), r.why.c_str());
        const size_t per_rank = allowed.size() / 2;
        QCOMPARE(cpu::pool_thread_cpus(1)[0], std::vector<int>{allowed[per_rank]});
    }
};

QTEST_GUILESS_MAIN(TestCpuBinding)
#include "test_cpu_binding.moc"
