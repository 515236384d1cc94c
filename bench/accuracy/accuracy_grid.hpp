#pragma once
// Predicted vs measured: runs wingspan-train over a grid of settings and compares the
// planner's prediction (the run's `predicted` event, from core) with what the trainer's
// counting allocator measured. Shared by bench_accuracy (the full grid and the committed
// report) and the `accuracy` test (a small subset with the 10 % bound).
#include <filesystem>
#include <string>
#include <vector>

#include "wingspan/run_record.hpp"

namespace wingspan::accuracy {

struct GridPoint {
    std::string arch;                 // "default" or "135m"
    std::filesystem::path model_dir;  // empty: the trainer's built-in default model
    std::string method;               // full | lora | qlora
    int seq = 128;
    int batch = 1;
    bool grad_checkpointing = false;
    std::string label() const;
};

struct PointResult {
    GridPoint point;
    RunRecord record;
    double seconds = 0;
    std::string failure;                                   // empty when the run completed
    std::map<Component, std::int64_t> measured;            // per-component peaks
    std::map<Component, std::int64_t> predicted;           // per-component maxima over phases
};

// The grid of issue 7: method × seq (128, 512) × micro-batch (1, 4) × checkpointing × two
// architectures. `work_dir` receives the 135M-class config folder.
std::vector<GridPoint> full_grid(const std::filesystem::path& work_dir);
// A few cheap points on the default architecture, one per method.
std::vector<GridPoint> quick_grid();

// Writes a 135M-class (SmolLM2-135M-shaped) config.json into dir; random weights.
std::filesystem::path write_135m_config(const std::filesystem::path& dir);

// Runs one point. With `keep_runs`, the run is also kept as a RunStore folder under it (plan.json,
// events.jsonl, result.json), so `wingspan calibrate` and the window can use it.
PointResult run_point(const std::filesystem::path& trainer, const GridPoint& p, int steps,
                      const std::filesystem::path& scratch, const std::filesystem::path& keep_runs = {});

// The components whose bytes are fixed by the tensors (must match to the byte).
bool is_static(Component c);
double error_percent(std::int64_t predicted, std::int64_t measured);

struct ReportStats {
    int runs = 0, failed = 0;
    int static_checked = 0, static_exact = 0;
    double activations_median = 0, activations_worst = 0;
    double peak_median = 0, peak_worst = 0;
    double total_median = 0, total_worst = 0;
};
ReportStats stats(const std::vector<PointResult>& results);
// `wall_seconds`: the whole grid's time, stated in the report when given.
std::string markdown_report(const std::vector<PointResult>& results, const std::string& command,
                            double wall_seconds = 0);
std::string csv_report(const std::vector<PointResult>& results);

}  // namespace wingspan::accuracy
