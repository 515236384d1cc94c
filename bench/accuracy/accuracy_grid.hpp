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
    std::string attention = "eager";  // --attention: eager | sdpa
    std::string targets;              // --targets (LoRA/QLoRA); empty: the trainer's default, all seven
    int processes = 1;                // --nproc: ranks of one data-parallel job
    std::string sharding = "ddp";     // with processes > 1: ddp | zero1 | zero2
    std::string precision = "fp32";   // --precision
    std::string cpu_bf16;             // WINGSPAN_CPU_BF16 (hardware | emulated); empty: the trainer's choice
    std::string objective;            // --objective dpo | orpo (issue 31); empty: SFT
    std::filesystem::path data;       // --data (preference pairs for dpo/orpo); empty: the bundled sample
    bool optimizer_in_backward = false;   // --optimizer-in-backward (issue 25)
    std::string label() const;
};

// The CPU's bf16 instruction set as `trainer devices` reports it ("amx_bf16", "avx512_bf16",
// "none"); empty when the trainer could not be asked.
std::string cpu_bf16_isa(const std::filesystem::path& trainer);

struct PointResult {
    GridPoint point;
    int rank = 0;                                          // which rank's events (processes > 1)
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

// Two-rank points (issue 18): ddp, zero1 and zero2 for full and LoRA on both architectures,
// micro-batch 1 per rank at seq 128.
std::vector<GridPoint> ranks_grid(const std::filesystem::path& work_dir);

// Writes a 135M-class (SmolLM2-135M-shaped) config.json into dir; random weights.
std::filesystem::path write_135m_config(const std::filesystem::path& dir);
// Writes a tiny Gemma 2 config.json into dir (random weights): soft-capped scores and logits, the
// sublayer output norms, a sliding window of 64 on the even layers, GeGLU, a tied head.
std::filesystem::path write_gemma2_config(const std::filesystem::path& dir);

// Runs one point. With `keep_runs`, the run is also kept as a RunStore folder under it (plan.json,
// events.jsonl, result.json), so `wingspan calibrate` and the window can use it.
PointResult run_point(const std::filesystem::path& trainer, const GridPoint& p, int steps,
                      const std::filesystem::path& scratch, const std::filesystem::path& keep_runs = {});
// The same for a point of several processes: one result per rank, each from that rank's events.
std::vector<PointResult> run_point_ranks(const std::filesystem::path& trainer, const GridPoint& p, int steps,
                                         const std::filesystem::path& scratch,
                                         const std::filesystem::path& keep_runs = {});

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
// The CSV's header line (without newline) and its rows for `results`.
extern const char* const kCsvHeader;
std::string csv_rows(const std::vector<PointResult>& results);

// The two-rank part of the report: its own markdown section (appended after the one-process
// report) and CSV rows (same columns; `processes`, `sharding` and `rank` tell them apart).
std::string ranks_markdown_section(const std::vector<PointResult>& results, const std::string& command,
                                   double wall_seconds = 0);
// The heading that starts that section, so --ranks-only can replace just it.
extern const char* const kRanksSectionHeading;
// `existing` (a committed report) with its two-rank section or rows replaced by `section`/`rows`.
std::string replace_ranks_markdown(const std::string& existing, const std::string& section);
std::string replace_ranks_csv(const std::string& existing, const std::string& rows_csv);

}  // namespace wingspan::accuracy
