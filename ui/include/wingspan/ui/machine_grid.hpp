#pragma once
// "Which machine trains what", the lesson's answer for any settings: for each size of the
// plan's model family (rows) and each method plus serving (columns), the machine that wins
// among the plan's machines, or none. The rule is the lesson's (core's machine_winners):
// a machine where the run fits with room beats one where it is tight; among those, the
// fastest wins. Every number comes from core (evaluate, solve).
#include <string>
#include <vector>

#include "wingspan/ui/plan.hpp"

namespace wingspan::ui {

struct GridCell {
    std::string model_id;
    TrainingSetup setup;                         // the plan's setup with this column's method
    const MachineProfile* winner = nullptr;      // nullptr: none fits
    Fit fit = Fit::No;
    std::int64_t margin_bytes = 0;
    int fitting = 0;                             // machines where it fits (with room or tight)
    std::string why;                             // "2.3× faster than Mac Studio M3 Ultra", ...
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

// The cell text shown in the window and the exports.
std::string grid_cell_text(const GridCell& cell, ByteUnit unit);

MachineGrid machine_grid(const ProfileLibrary& lib, const Plan& plan, ByteUnit unit);

// The plan a cell stands for: its model and setup, the plan's machines and data set.
Plan plan_for_cell(const Plan& plan, const GridCell& cell);

}  // namespace wingspan::ui
