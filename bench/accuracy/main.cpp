// bench_accuracy: the predicted-vs-measured grid of issue 7. Writes
// bench/results/accuracy.md and accuracy.csv (committed) and prints the summary.
//   bench_accuracy [--trainer PATH] [--out DIR] [--steps N] [--quick] [--keep-runs DIR]
// --keep-runs keeps every run as a RunStore folder (plan.json, events.jsonl, result.json) for
// `wingspan calibrate DIR/*` or the window's "Calibrate from my runs…".
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "accuracy_grid.hpp"

namespace fs = std::filesystem;
using namespace wingspan::accuracy;

int main(int argc, char** argv) {
    fs::path trainer = fs::path(argv[0]).parent_path() / "wingspan-train";
    fs::path out = WINGSPAN_BENCH_RESULTS_DIR;
    int steps = 2;
    bool quick = false;
    fs::path keep_runs;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--trainer" && i + 1 < argc) trainer = argv[++i];
        else if (a == "--out" && i + 1 < argc) out = argv[++i];
        else if (a == "--steps" && i + 1 < argc) steps = std::stoi(argv[++i]);
        else if (a == "--quick") quick = true;
        else if (a == "--keep-runs" && i + 1 < argc) keep_runs = argv[++i];
        else {
            std::cerr << "usage: bench_accuracy [--trainer PATH] [--out DIR] [--steps N] [--quick] [--keep-runs DIR]\n";
            return 2;
        }
    }
    if (!fs::exists(trainer)) {
        std::cerr << "bench_accuracy: no trainer at " << trainer << " (build wingspan-train, or pass --trainer)\n";
        return 2;
    }
    const fs::path scratch = fs::temp_directory_path() / ("wingspan-accuracy-" + std::to_string(::getpid()));
    const auto grid = quick ? quick_grid() : full_grid(scratch);
    std::vector<PointResult> results;
    const auto started = std::chrono::steady_clock::now();
    for (size_t i = 0; i < grid.size(); ++i) {
        std::fprintf(stderr, "[%zu/%zu] %s ... ", i + 1, grid.size(), grid[i].label().c_str());
        results.push_back(run_point(trainer, grid[i], steps, scratch / std::to_string(i), keep_runs));
        const auto sum = results.back().record.summary();
        std::fprintf(stderr, "%s, peak %+.1f %%, %.0f s\n",
                     results.back().failure.empty() ? "ok" : results.back().failure.c_str(), sum.peak_error_percent(),
                     results.back().seconds);
    }
    fs::remove_all(scratch);
    fs::create_directories(out);
    const std::string command = std::string("build/bin/bench_accuracy --steps ") + std::to_string(steps) +
                                (quick ? " --quick" : "");
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::ofstream(out / "accuracy.md") << markdown_report(results, command, wall);
    std::ofstream(out / "accuracy.csv") << csv_report(results);
    const ReportStats s = stats(results);
    std::printf("runs %d (failed %d); static exact %d/%d; activations median %.1f %% worst %.1f %%; "
                "peak median %.1f %% worst %.1f %%; RSS median %.1f %% worst %.1f %%\nreport: %s\n",
                s.runs, s.failed, s.static_exact, s.static_checked, s.activations_median, s.activations_worst,
                s.peak_median, s.peak_worst, s.total_median, s.total_worst, (out / "accuracy.md").c_str());
    return s.failed ? 1 : 0;
}
