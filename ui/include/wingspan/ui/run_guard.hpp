#pragma once
// Train ▶'s guard: before wingspan-train starts, the run is planned on this machine with the
// settings the trainer will really get (its precision, sequence, batch, rank, method,
// checkpointing, processes) and its memory cap. A run that does not fit is not started; the
// panel says by how much and offers what fits (the built-in demo, a shorter sequence).
#include <cstdint>

#include <QString>

#include "wingspan/plan.hpp"

namespace wingspan::ui {

struct RunOptions;

struct RunFitCheck {
    bool checked = false;              // the model is known (the plan's, or its random weights)
    bool fits = true;
    std::int64_t needed_bytes = 0;     // what the planner predicts the run holds
    std::int64_t usable_bytes = 0;     // this machine's usable memory, or the cap when lower
    std::int64_t seq_that_fits = 0;    // the run's sequence halved until it fits, the rest kept; 0: none
    QString where;                     // "this machine", "the 12.0 GB memory cap", "cuda:0"
    QString error;                     // the plan could not be computed
};

// Folder and built-in models are not checked (their architecture is not the plan's; the demo
// is a few megabytes), nor anything without a library or a plan.
RunFitCheck check_run_fit(const ProfileLibrary* lib, const Plan* plan, const RunOptions& options);
// "Llama 3.1 8B does not fit this machine: needs 30.1 GB, 22.1 GB usable (short 8.0 GB)."
QString run_fit_problem(const RunFitCheck& check, const QString& model, ByteUnit unit);

}  // namespace wingspan::ui
