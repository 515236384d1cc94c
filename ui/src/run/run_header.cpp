// The run panel's header: what trains (model, weights, device) in plain view and how the run
// differs from the plan; and the verdict against the device's ceiling.
#include <algorithm>

#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QTimer>

#include "wingspan/ui/run_panel.hpp"

#include "run/run_form.hpp"
#include "run/run_panel_text.hpp"
#include "run/run_top_bar.hpp"

namespace wingspan::ui {

using namespace run_text;

// ------------------------------------------------------------------ the run header ----

QString RunPanel::runHeaderText() const { return top_ ? top_->runHeaderText() : QString(); }

void RunPanel::updateRunHeader() {
    if (!top_ || !form_ || form_->filling()) return;
    const RunOptions o = options();
    QString html;
    if (!form_->hasPlan()) {
        html = "Training: " + describe(o).toHtmlEscaped() + " on " + o.device_label.toHtmlEscaped();
    } else {
        html = compare_plan_and_run(lib_, form_->plan(), o, o.device_label).html;
        if (!form_->followsPlanner()) html += " <i>(settings edited here)</i>";
    }
    if (o.model_source == RunOptions::ModelSource::Planned && o.model_dir.isEmpty() && form_->hasPlan())
        html += "<br><span style='color:#c2410c'>" + form_->plannedModel().missingText().toHtmlEscaped() + "</span>";
    const QString blocked = trainBlockedReason();
    if (!blocked.isEmpty()) html += "<br>" + blocked.toHtmlEscaped() + " Start ▶ here trains the settings shown.";
    top_->showRunHeader(html, form_->hasPlan() && !form_->followsPlanner());
}

// ------------------------------------------------------------------ verdict ----

QString RunPanel::verdictLine(const RunRecord& r, const RunOptions& o, const DeviceMemoryTrack* device,
                              const RankTrack* ranks) const {
    const bool gpu = device && device->hasReserved() && !device->device.isEmpty() && !device->device.startsWith("cpu");
    std::int64_t measured = 0;
    QString what;
    std::int64_t ranks_rss = 0;
    if (ranks && ranks->multi())
        for (const auto& [rank, m] : ranks->ranks) ranks_rss += m.rss_peak;
    if (!gpu && ranks_rss > 0) {
        // Ranks on one machine share its memory: what they hold together meets the ceiling.
        int top = 0;
        const std::int64_t peak = ranks->max_peak(&top);
        measured = ranks_rss;
        what = QString("Peak per rank: tensors up to %1 (rank %2); the %3 ranks' processes hold %4 together")
                   .arg(format_run_bytes(double(peak), unit_))
                   .arg(top)
                   .arg(ranks->ranks.size())
                   .arg(format_run_bytes(double(ranks_rss), unit_));
    } else if (gpu) {
        measured = device->reserved_peak;
        what = QString("Peak on %1: allocated %2, reserved %3 by the caching allocator")
                   .arg(device->device, format_run_bytes(double(r.measured_peak()), unit_),
                        format_run_bytes(double(device->reserved_peak), unit_));
    } else {
        measured = r.measured_rss_peak() > 0 ? r.measured_rss_peak() : r.measured_peak();
        if (measured <= 0) return {};
        what = QString("Peak: tensors %1").arg(format_run_bytes(double(r.measured_peak()), unit_));
        if (r.measured_rss_peak() > 0) what += ", process " + format_run_bytes(double(r.measured_rss_peak()), unit_);
        if (device && device->hasReserved() && device->reserved_peak != r.measured_peak())
            what += ", reserved " + format_run_bytes(double(device->reserved_peak), unit_);
    }
    if (o.machine_ceiling <= 0 || measured <= 0) return what;
    const std::int64_t margin = o.machine_ceiling - measured;
    const QString name = o.machine_name.isEmpty() ? QString("the ceiling") : o.machine_name + "'s";
    QString fit = margin < 0 ? "over by " + format_run_bytes(double(-margin), unit_)
                  : double(margin) < 0.1 * double(o.machine_ceiling) ? "tight: " + format_run_bytes(double(margin), unit_) + " free"
                                                                       : "fits, " + format_run_bytes(double(margin), unit_) + " free";
    return what + QString(" — %1 of %2 %3 (%4)")
                      .arg(format_run_bytes(double(measured), unit_), name, format_run_bytes(double(o.machine_ceiling), unit_), fit);
}

}  // namespace wingspan::ui
