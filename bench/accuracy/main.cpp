// bench_accuracy: the predicted-vs-measured grid of issue 7, and the two-rank points of issue 18
// (ddp, zero1, zero2; per rank). Writes bench/results/accuracy.md and accuracy.csv (committed)
// and prints the summary.
//   bench_accuracy [--trainer PATH] [--out DIR] [--steps N] [--quick | --ranks-only] [--keep-runs DIR]
// --ranks-only runs only the two-rank points and replaces only their part of the reports in DIR.
// --keep-runs keeps every run as a RunStore folder (plan.json, events.jsonl, result.json) for
// `wingspan calibrate DIR/*` or the window's "Calibrate from my runs…".
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "accuracy_grid.hpp"

namespace fs = std::filesystem;
using namespace wingspan::accuracy;

int main(int argc, char** argv) {
    fs::path trainer = fs::path(argv[0]).parent_path() / "wingspan-train";
    fs::path out = WINGSPAN_BENCH_RESULTS_DIR;
    int steps = 2;
    bool quick = false, ranks_only = false;
    fs::path keep_runs;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--trainer" && i + 1 < argc) trainer = argv[++i];
        else if (a == "--out" && i + 1 < argc) out = argv[++i];
        else if (a == "--steps" && i + 1 < argc) steps = std::stoi(argv[++i]);
        else if (a == "--quick") quick = true;
        else if (a == "--ranks-only") ranks_only = true;
        else if (a == "--keep-runs" && i + 1 < argc) keep_runs = argv[++i];
        else {
            std::cerr << "usage: bench_accuracy [--trainer PATH] [--out DIR] [--steps N] [--quick | --ranks-only] "
                         "[--keep-runs DIR]\n";
            return 2;
        }
    }
    if (quick && ranks_only) {
        std::cerr << "bench_accuracy: --quick and --ranks-only are two different grids: pick one\n";
        return 2;
    }
    if (steps < 1) {
        std::cerr << "bench_accuracy: --steps must be at least 1\n";
        return 2;
    }
    if (!fs::exists(trainer)) {
        std::cerr << "bench_accuracy: no trainer at " << trainer << " (build wingspan-train, or pass --trainer)\n";
        return 2;
    }
    const fs::path scratch = fs::temp_directory_path() / ("wingspan-accuracy-" + std::to_string(::getpid()));
    const auto grid = quick ? quick_grid() : ranks_only ? std::vector<GridPoint>{} : full_grid(scratch);
    const auto rank_grid = quick ? std::vector<GridPoint>{} : ranks_grid(scratch);
    std::vector<PointResult> results, rank_results;
    const size_t count = grid.size() + rank_grid.size();
    size_t done = 0;
    auto progress = [](const PointResult& r) {
        std::fprintf(stderr, "%s, peak %+.1f %%, %.0f s\n", r.failure.empty() ? "ok" : r.failure.c_str(),
                     r.record.summary().peak_error_percent(), r.seconds);
    };
    const auto started = std::chrono::steady_clock::now();
    for (const auto& p : grid) {
        std::fprintf(stderr, "[%zu/%zu] %s ... ", ++done, count, p.label().c_str());
        results.push_back(run_point(trainer, p, steps, scratch / std::to_string(done), keep_runs));
        progress(results.back());
    }
    const auto ranks_started = std::chrono::steady_clock::now();
    for (const auto& p : rank_grid) {
        std::fprintf(stderr, "[%zu/%zu] %s ... ", ++done, count, p.label().c_str());
        for (auto& r : run_point_ranks(trainer, p, steps, scratch / std::to_string(done), keep_runs)) {
            if (r.rank > 0) std::fprintf(stderr, "    rank %d ... ", r.rank);
            progress(r);
            rank_results.push_back(std::move(r));
        }
    }
    fs::remove_all(scratch);
    fs::create_directories(out);
    const auto now = std::chrono::steady_clock::now();
    const std::string base = std::string("build/bin/bench_accuracy --steps ") + std::to_string(steps);
    const double wall = std::chrono::duration<double>(now - started).count();
    const double ranks_wall = std::chrono::duration<double>(now - ranks_started).count();
    const std::string section = rank_results.empty() ? std::string()
                                                     : ranks_markdown_section(rank_results, base + " --ranks-only", ranks_wall);
    auto read = [](const fs::path& f) {
        std::ifstream in(f);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    if (ranks_only) {
        const std::string md = read(out / "accuracy.md"), csv = read(out / "accuracy.csv");
        std::ofstream(out / "accuracy.md") << replace_ranks_markdown(md, section);
        std::ofstream(out / "accuracy.csv") << replace_ranks_csv(csv, csv_rows(rank_results));
    } else {
        std::string md = markdown_report(results, base + (quick ? " --quick" : ""), wall);
        if (!section.empty()) md = replace_ranks_markdown(md, section);
        std::ofstream(out / "accuracy.md") << md;
        std::ofstream(out / "accuracy.csv") << csv_report(results) << csv_rows(rank_results);
    }
    int failed = 0;
    for (const auto* set : {&results, &rank_results}) {
        if (set->empty()) continue;
        const ReportStats s = stats(*set);
        failed += s.failed;
        std::printf("%s: runs %d (failed %d); static exact %d/%d; activations median %.1f %% worst %.1f %%; "
                    "peak median %.1f %% worst %.1f %%; RSS median %.1f %% worst %.1f %%\n",
                    set == &results ? "one process" : "two ranks (per rank)", s.runs, s.failed, s.static_exact,
                    s.static_checked, s.activations_median, s.activations_worst, s.peak_median, s.peak_worst,
                    s.total_median, s.total_worst);
    }
    std::printf("report: %s\n", (out / "accuracy.md").c_str());
    return failed ? 1 : 0;
}
