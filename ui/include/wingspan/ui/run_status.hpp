#pragma once
// The run panel's status model (issue 27): the status line, the progress bar and the ETA of the
// shown run as plain functions of the run's record and a few facts about its process. No
// widgets: the panel sets a QLabel and a QProgressBar from these, tests/ui/test_run_status.cpp
// checks them with real records.
#include <cstdint>
#include <optional>
#include <vector>

#include <QColor>
#include <QString>

#include "wingspan/run_record.hpp"

namespace wingspan::ui {

// "1:05" or "1:02:03" (a negative duration is 0:00).
QString duration_text(double seconds);

// Seconds left at the pace of the last steps (up to the last 12 step events; one event alone:
// its time since the start over its step number). nullopt before the first step.
std::optional<double> eta_seconds(const std::vector<StepSample>& steps, std::int64_t total_steps);

// The step count the run aims at: its last step event's total, else the launch settings'.
std::int64_t total_steps(const RunRecord& r, std::int64_t planned_steps);

// What the status line and the progress bar show about one run.
struct RunStatusFacts {
    const RunRecord* record = nullptr;   // nullptr: no run shown yet
    std::int64_t planned_steps = 0;      // the launch settings' --steps
    bool live = false;                   // its process is running (not a saved run)
    bool stopping = false;               // SIGTERM sent, waiting for the trainer
    double stop_deadline_s = 0;          // seconds until SIGKILL while stopping
    double elapsed_s = 0;                // since the launch, while live
    QString launch_error;                // the process could not start or crashed (a finished live run)
    QString ranks_summary;               // one line for several ranks, empty for one process
    std::int64_t stderr_dropped = 0;     // stderr lines skipped while live
    QString stop_message;                // how the stop went, under the line
    bool trainer_ok = true;              // wingspan-train was found (the idle text says what to do)
};

// The colours the line uses: the live marker, warnings (stopping, unreadable lines), and each
// outcome of a finished run.
struct RunStatusColors {
    QColor running, warning, completed, interrupted, failed;
    QColor outcome(RunStatus s) const;
};

// The status line as rich text: "● Running · step 12 of 60 · 950 tokens/s · loss 2.412 · 0:09
// elapsed", "✓ Completed · 60 of 60 steps · in 0:41 · final loss 1.980", or the idle text.
QString run_status_html(const RunStatusFacts& f, const RunStatusColors& colors);

// The progress bar: a range (0..0 is Qt's busy indicator), a value and a format.
struct RunProgress {
    int minimum = 0;
    int maximum = 1;
    int value = 0;
    QString format;
};
// No run: "no run". Live before the first step: busy. Live: "%p% · ETA 0:41". Ended: "done", or
// "%p% · interrupted" / "%p% · failed".
RunProgress run_progress(const RunStatusFacts& f);

}  // namespace wingspan::ui
