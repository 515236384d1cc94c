// How long one slider move takes in the planner window, from the slider's new value to the
// chart repainted: core recomputes every selected machine's verdict, the chart data is
// rebuilt, the verdict list and summary update and the chart paints. All bundled machines
// are selected. Target (issue 4): median under 5 ms, worst under 16 ms (one frame at 60 Hz).
// The tables beside the chart refresh lazily after the slider rests; their cost is reported
// separately. Runs offscreen unless QT_QPA_PLATFORM says otherwise.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#include <ctime>

#include <QApplication>
#include <QElapsedTimer>
#include <QSlider>
#include <QTest>
#include <QThread>

#include "wingspan/ui/main_window.hpp"

using namespace wingspan;
using namespace wingspan::ui;

namespace {

struct Stats {
    double median, p95, worst, mean;
};

Stats stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 95 / 100)], v.back(), mean};
}

// CPU time of this thread: the work a move costs, whatever else the machine is running.
double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
    if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    if (!qEnvironmentVariableIsSet("WINGSPAN_PROFILES")) qputenv("WINGSPAN_PROFILES", WINGSPAN_BENCH_PROFILES_DIR);
    QApplication app(argc, argv);
    int moves = 200;
    for (int i = 1; i + 1 < argc; ++i)
        if (QString(argv[i]) == "--moves") moves = std::max(10, atoi(argv[i + 1]));

    MainWindow w(QString(), MainWindow::Options{false, false});
    if (!w.hasLibrary()) {
        std::fprintf(stderr, "bench_ui_slider: %s\n", qPrintable(w.loadError()));
        return 1;
    }
    Plan plan = Plan::lesson_default();
    plan.machines.clear();
    for (const auto& m : w.library().machines()) plan.machines.push_back(m.id);
    w.setPlan(plan);
    w.resize(1600, 1000);
    w.show();
    if (!QTest::qWaitForWindowExposed(&w)) std::fprintf(stderr, "bench_ui_slider: window not exposed\n");
    QApplication::processEvents();

    auto* seq = w.findChild<QSlider*>("seqSlider");
    auto* size = w.findChild<QSlider*>("sizeSlider");
    auto* chart = w.machineChartWidget();
    if (!seq || !size || !chart) return 1;

    // Walk both sliders back and forth: sequence over its whole range, size along Llama 3.
    double in_set = 0, in_paint = 0;
    QElapsedTimer mt;
    auto move = [&](int i) {
        mt.start();
        if (i % 2 == 0) {
            const int n = seq->maximum() + 1;
            const int k = (i / 2) % (2 * n - 2);
            seq->setValue(k < n ? k : 2 * n - 2 - k);
        } else {
            const int k = (i / 2 * 37) % 2000;
            size->setValue(k <= 1000 ? k : 2000 - k);
        }
        in_set += double(mt.nsecsElapsed()) / 1e6;
        mt.start();
        chart->repaint();
        // What the event loop does next: the throttled panel updates that are due, then one
        // paint of every widget the move dirtied (the update requests), not of the whole window.
        QApplication::processEvents();
        QApplication::sendPostedEvents(nullptr, QEvent::UpdateRequest);
        in_paint += double(mt.nsecsElapsed()) / 1e6;
    };
    for (int i = 0; i < 20; ++i) move(i);   // warm caches (fonts, glyphs)
    if (qEnvironmentVariableIsSet("WINGSPAN_BENCH_SPLIT")) {
        QElapsedTimer st;
        double rec = 0, rep = 0;
        for (int i = 0; i < 100; ++i) {
            st.start();
            w.recompute();
            rec += double(st.nsecsElapsed()) / 1e6;
            st.start();
            chart->repaint();
            rep += double(st.nsecsElapsed()) / 1e6;
        }
        double sv = 0, zv = 0;
        for (int i = 0; i < 50; ++i) {
            st.start();
            seq->setValue(i % 2 ? 4 : 8);
            sv += double(st.nsecsElapsed()) / 1e6;
            st.start();
            size->setValue(i % 2 ? 300 : 700);
            zv += double(st.nsecsElapsed()) / 1e6;
        }
        std::printf("split: recompute %.2f ms, repaint %.2f ms, seq setValue %.2f ms, size setValue %.2f ms\n", rec / 100,
                    rep / 100, sv / 50, zv / 50);
    }

    std::vector<double> ms, cpu;
    ms.reserve(size_t(moves));
    QElapsedTimer t;
    for (int i = 0; i < moves; ++i) {
        const double c0 = thread_cpu_ms();
        t.start();
        move(i);
        ms.push_back(double(t.nsecsElapsed()) / 1e6);
        cpu.push_back(thread_cpu_ms() - c0);
    }
    const Stats s = stats(ms);
    const Stats sc = stats(cpu);
    if (qEnvironmentVariableIsSet("WINGSPAN_BENCH_SPLIT"))
        std::printf("in the loop: set %.2f ms, paint %.2f ms per move\n", in_set / (moves + 20), in_paint / (moves + 20));
    const int machines = int(w.evaluation().verdicts.size());

    // The lazy tables, for the record: what refreshing each costs once the slider rests.
    std::vector<double> table_ms[3];
    for (int i = 0; i < 20; ++i) {
        move(i);
        t.start();
        w.methodTable();
        table_ms[0].push_back(double(t.nsecsElapsed()) / 1e6);
        t.start();
        w.sizeTable();
        table_ms[1].push_back(double(t.nsecsElapsed()) / 1e6);
        t.start();
        w.machineTable();
        table_ms[2].push_back(double(t.nsecsElapsed()) / 1e6);
    }

    std::printf("Slider moves: %d (sequence and model-size sliders), %d machines selected, %dx%d window, platform %s\n",
                moves, machines, w.width(), w.height(), qPrintable(QGuiApplication::platformName()));
    std::printf("recompute + repaint per move:  median %.2f ms   p95 %.2f ms   worst %.2f ms   mean %.2f ms\n", s.median,
                s.p95, s.worst, s.mean);
    std::printf("CPU time per move:             median %.2f ms   p95 %.2f ms   worst %.2f ms   (wall minus waiting "
                "for a busy CPU)\n",
                sc.median, sc.p95, sc.worst);
    double load = 0;
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(f, "%lf", &load) != 1) load = 0;
        std::fclose(f);
    }
    std::printf("machine load average %.2f on %d CPUs while measuring\n", load, QThread::idealThreadCount());
    const bool ok = s.median < 5.0 && s.worst < 16.0;
    std::printf("target median < 5 ms, worst < 16 ms: %s\n", ok ? "met" : "NOT met");
    std::printf("lazy table refresh (median, after the slider rests): methods %.2f ms, sizes %.2f ms, "
                "which-machine (with the solver) %.2f ms\n",
                stats(table_ms[0]).median, stats(table_ms[1]).median, stats(table_ms[2]).median);
    std::printf("{\"bench\":\"ui_slider\",\"moves\":%d,\"machines\":%d,\"median_ms\":%.3f,\"p95_ms\":%.3f,"
                "\"worst_ms\":%.3f,\"cpu_median_ms\":%.3f,\"cpu_worst_ms\":%.3f,\"load\":%.2f,\"target_met\":%s}\n",
                moves, machines, s.median, s.p95, s.worst, sc.median, sc.worst, load, ok ? "true" : "false");
    return 0;
}
