#pragma once
// Small text and file helpers the run panel's parts share (form, live view, results,
// history). Private to ui/src.
#include <cmath>
#include <filesystem>

#include <QColor>
#include <QPalette>
#include <QString>

#include <nlohmann/json.hpp>

#include "wingspan/json_input.hpp"
#include "wingspan/ui/chart.hpp"
#include "wingspan/ui/run_session.hpp"
#include "wingspan/ui/run_status.hpp"

namespace wingspan::ui::run_text {

inline QString qs(const std::string& s) { return QString::fromStdString(s); }

inline QString method_text(Method m) {
    switch (m) {
        case Method::Full: return "Full fine-tune";
        case Method::Lora: return "LoRA";
        case Method::Qlora: return "QLoRA";
        case Method::Serve: return "Serve";
    }
    return "LoRA";
}

// One line for a run's settings: "built-in · LoRA r16 · seq 128 × 4 · 60 steps".
inline QString describe(const RunOptions& o) {
    QString s = o.model_label + " · " + method_text(o.method);
    if (o.method != Method::Full) s += QString(" r%1").arg(o.rank);
    s += QString(" · seq %1 × %2").arg(o.seq).arg(o.batch);
    if (o.grad_accum > 1) s += QString(" × %1").arg(o.grad_accum);
    s += QString(" · %1 steps").arg(o.steps);
    if (o.processes > 1) s += QString(" · %1 processes (%2)").arg(o.processes).arg(to_string(o.sharding));
    if (o.memory_limit > 0) s += " · cap " + qs(format_bytes(double(o.memory_limit)));
    return s;
}

// The last `max_bytes` of a text file, with a note when the start was cut; empty when it is
// missing or not a regular file (core's bounded reader: a pipe never blocks the window).
inline QString read_tail(const std::filesystem::path& p, std::uint64_t max_bytes) {
    bool cut = false;
    std::string bytes;
    try {
        bytes = read_regular_file_tail(p, max_bytes, &cut);
    } catch (const std::exception&) {
        return {};
    }
    QString text = QString::fromUtf8(bytes.data(), qsizetype(bytes.size()));
    if (cut) text = "[… earlier lines in " + qs(p.string()) + "]\n" + text.mid(text.indexOf('\n') + 1);
    return text;
}

inline QColor status_color(RunStatus s, const QPalette& pal) {
    const ChartStyle st = ChartStyle::from_palette(pal);
    switch (s) {
        case RunStatus::Completed: return st.fits;
        case RunStatus::Interrupted: return st.tight;
        case RunStatus::Failed: return st.no;
        case RunStatus::Running: return pal.color(QPalette::Highlight);
    }
    return st.text;
}

}  // namespace wingspan::ui::run_text
