#pragma once
// "Which machine trains what", the lesson's answer for any settings: for each size of the
// plan's model family (rows) and each method plus serving (columns), the machine that wins
// among the machines compared (the course's RTX 4090 and Mac Studio unless the user picks
// others; not the plan's whole list), or none. The rule is the lesson's (core's machine_winners):
// a machine where the run fits with room beats one where it is tight; among those, the
// fastest wins. Every number comes from core (evaluate, solve).
#include <string>
#include <vector>

#include "wingspan/plan.hpp"

namespace wingspan::ui {

// One compared machine in one cell, as core evaluated it there.
struct GridContender {
    const MachineProfile* machine = nullptr;
    std::string label;                           // the cell's name for it: "Mac Studio", "RTX 4090"
    Fit fit = Fit::No;
    std::int64_t margin_bytes = 0;               // negative: short by
    double tokens_per_s = 0;
    double run_seconds = 0;                      // the plan's data set; 0 when serving
    std::string setup;                           // the setup as run there (framework defaults applied)
};

struct GridCell {
    std::string model_id;
    TrainingSetup setup;                         // the plan's setup with this column's method
    const MachineProfile* winner = nullptr;      // nullptr: none fits
    Fit fit = Fit::No;
    std::int64_t margin_bytes = 0;
    int fitting = 0;                             // machines where it fits (with room or tight)
    std::string why;                             // "2.3× faster than Mac Studio M3 Ultra 96 GB", ...
    std::string closest;                         // none fits: "Mac Studio short 68.9 GB"
    std::string verdict;                         // compact: "RTX 4090 3.3× faster", "Mac Studio only", "none fits"
    std::vector<GridContender> contenders;       // every compared machine, in the order compared
    std::int64_t max_batch = 0;                  // on the winner, everything else as the plan
    std::int64_t max_seq = 0;
    std::string error;                           // the setup is impossible for this model
};

struct MachineGrid {
    std::vector<std::string> row_labels;         // "1B (Llama 3.2 1B)"
    std::vector<std::string> column_labels;      // "Full fine-tune", "LoRA", "QLoRA", "Serve"
    std::vector<std::vector<GridCell>> cells;    // [row][column]
    std::string caption;
    // One line per cell: "RTX 4090 — 2.3× faster · batch ≤ 8 · seq ≤ 16,384" or "none fits — ...".
    Table to_table(ByteUnit unit) const;
};

// The compact cell text shown in the window and the exports: verdict symbol, who wins and by
// how much, the run time ("✓ RTX 4090 3.3× faster · 2.1 h").
std::string grid_cell_text(const GridCell& cell, ByteUnit unit);
// Everything behind a cell, one line each (the tooltip): each machine's verdict, speed, time and
// setup, the winner's largest batch and sequence.
std::string grid_cell_details(const GridCell& cell, ByteUnit unit);

// The names a cell uses for the compared machines: the first two words of each short name
// ("Mac Studio", "RTX 4090") unless two machines share them, then the whole short name.
std::vector<std::string> grid_machine_labels(const std::vector<const MachineProfile*>& machines);

// The course's two machines: what the grid compares until the user picks others.
const std::vector<std::string>& lesson_compared_machines();

MachineGrid machine_grid(const ProfileLibrary& lib, const Plan& plan, ByteUnit unit,
                         const std::vector<std::string>& compared = lesson_compared_machines());

// The plan a cell stands for: its model and setup, the plan's machines and data set.
Plan plan_for_cell(const Plan& plan, const GridCell& cell);

}  // namespace wingspan::ui
