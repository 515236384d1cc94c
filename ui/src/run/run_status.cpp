// The run panel's status model: the status line, the progress bar and the ETA (run_status.hpp).
#include "wingspan/ui/run_status.hpp"

#include <algorithm>
#include <cmath>

#include <QLocale>
#include <QStringList>

namespace wingspan::ui {

namespace {

// The progress bar's range is an int; a run of more steps shows its share of 2^30.
int bar_int(std::int64_t v) { return int(std::clamp<std::int64_t>(v, 0, std::int64_t(1) << 30)); }

QString outcome_text(const RunRecord& r) {
    QString text = QString::fromStdString(r.status_text());
    if (!text.isEmpty()) text[0] = text[0].toUpper();
    return text;
}

// The seconds a finished run took: its done event's time, or its last memory sample's if later.
double run_seconds(const RunRecord& r) {
    double last_t = r.done() ? r.done()->t : 0;
    if (!r.memory().empty()) last_t = std::max(last_t, r.memory().back().t);
    return last_t;
}

}  // namespace

QString duration_text(double s) {
    if (!(s > 0)) s = 0;
    const qint64 t = qint64(std::llround(std::min(s, 1e12)));
    if (t < 3600) return QString("%1:%2").arg(t / 60).arg(t % 60, 2, 10, QChar('0'));
    return QString("%1:%2:%3").arg(t / 3600).arg((t % 3600) / 60, 2, 10, QChar('0')).arg(t % 60, 2, 10, QChar('0'));
}

std::optional<double> eta_seconds(const std::vector<StepSample>& steps, std::int64_t total_steps) {
    if (steps.empty()) return std::nullopt;
    const size_t n = std::min<size_t>(steps.size(), 12);
    const StepSample& a = steps[steps.size() - n];
    const StepSample& b = steps.back();
    const double per_step = n > 1 && b.step > a.step ? (b.t - a.t) / double(b.step - a.step)
                                                     : b.t / double(std::max<std::int64_t>(1, b.step));
    return per_step * double(std::max<std::int64_t>(0, total_steps - b.step));
}

std::int64_t total_steps(const RunRecord& r, std::int64_t planned_steps) {
    const std::int64_t from_events = r.steps().empty() ? 0 : r.steps().back().total_steps;
    return from_events > 0 ? from_events : planned_steps;
}

QColor RunStatusColors::outcome(RunStatus s) const {
    switch (s) {
        case RunStatus::Completed: return completed;
        case RunStatus::Interrupted: return interrupted;
        case RunStatus::Failed: return failed;
        case RunStatus::Running: return running;
    }
    return running;
}

QString run_status_html(const RunStatusFacts& f, const RunStatusColors& colors) {
    if (!f.record) {
        return f.trainer_ok ? QString("Ready. <b>Start ▶</b> trains with these settings; <b>Train ▶</b> in the planner "
                                      "fills them from the plan and starts.")
                            : QString("<span style='color:#c2410c'>Training needs wingspan-train; the note above says "
                                      "how to build it.</span>");
    }
    const RunRecord& r = *f.record;
    const auto& steps = r.steps();
    const std::int64_t step = steps.empty() ? 0 : steps.back().step;
    const std::int64_t total = total_steps(r, f.planned_steps);
    QStringList parts;
    if (f.live) {
        if (f.stopping)
            parts << QString("<b style='color:%1'>■ Stopping</b>: SIGTERM sent; waiting for the trainer to finish its step "
                             "and save (SIGKILL in %2 s)")
                         .arg(colors.warning.name())
                         .arg(std::ceil(f.stop_deadline_s));
        else
            parts << QString("<b style='color:%1'>● Running</b>").arg(colors.running.name());
        if (steps.empty()) {
            parts << "setting up (loading the model and data)";
        } else {
            parts << QString("step %1 of %2").arg(step).arg(total);
            parts << QLocale().toString(steps.back().tokens_per_s, 'f', 0) + " tokens/s";
            parts << QString("loss %1").arg(steps.back().loss, 0, 'f', 3);
        }
        parts << duration_text(f.elapsed_s) + " elapsed";
    } else {
        const RunStatus st = r.status();
        const QString icon = st == RunStatus::Completed ? "✓" : st == RunStatus::Interrupted ? "■" : "✗";
        parts << QString("<b style='color:%1'>%2 %3</b>").arg(colors.outcome(st).name(), icon, outcome_text(r).toHtmlEscaped());
        if (!steps.empty()) parts << QString("%1 of %2 steps").arg(step).arg(total);
        if (const double s = run_seconds(r); s > 0) parts << "in " + duration_text(s);
        if (!steps.empty()) parts << "final loss " + QString::number(steps.back().loss, 'f', 3);
        if (!f.launch_error.isEmpty()) parts << f.launch_error.toHtmlEscaped();
    }
    if (!f.ranks_summary.isEmpty()) parts << f.ranks_summary.toHtmlEscaped();
    if (r.malformed_lines() > 0)
        parts << QString("<span style='color:%1'>%2 unreadable line%3 ignored (see Log)</span>")
                     .arg(colors.warning.name())
                     .arg(r.malformed_lines())
                     .arg(r.malformed_lines() == 1 ? "" : "s");
    if (f.live && f.stderr_dropped > 0) parts << QString("%1 stderr lines skipped").arg(f.stderr_dropped);
    QString html = parts.join(" · ");
    if (!f.stop_message.isEmpty()) html += "<br>" + f.stop_message.toHtmlEscaped();
    return html;
}

RunProgress run_progress(const RunStatusFacts& f) {
    if (!f.record) return {0, 1, 0, "no run"};
    const RunRecord& r = *f.record;
    const auto& steps = r.steps();
    const std::int64_t step = steps.empty() ? 0 : steps.back().step;
    const std::int64_t total = total_steps(r, f.planned_steps);
    if (f.live) {
        if (steps.empty()) return {0, 0, 0, QString()};   // busy until the first step
        const double eta = eta_seconds(steps, total).value_or(0);
        return {0, bar_int(total), bar_int(std::min(step, total)), QString("%p% · ETA %1").arg(duration_text(eta))};
    }
    const RunStatus st = r.status();
    return {0, std::max(1, bar_int(total)), bar_int(std::min(step, total)),
            st == RunStatus::Completed ? QString("done") : QString("%p% · ") + QString::fromStdString(to_string(st))};
}

}  // namespace wingspan::ui
