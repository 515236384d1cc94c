// The run panel's header: what trains (model, weights, device) in plain view, how the run
// differs from the plan, following the planner until the user edits, the device list from
// `wingspan-train devices`, and the verdict against the device's ceiling.
#include <algorithm>

#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QTimer>

#include "wingspan/ui/run_panel.hpp"

#include "run_panel_text.hpp"

namespace wingspan::ui {

using namespace run_text;

// ------------------------------------------------------------------ following ----

void RunPanel::onFormEdited() {
    if (syncing_) return;
    if (has_plan_) follow_planner_ = false;
    updateRunHeader();
}

void RunPanel::followPlanner() {
    follow_planner_ = true;
    if (has_plan_) setPlan(plan_);
}

QString RunPanel::trainBlockedReason() const { return has_plan_ ? cannot_train_reason(plan_) : QString(); }

PlanRunComparison RunPanel::planComparison() const {
    const RunOptions o = options();
    if (!has_plan_) return {};
    return compare_plan_and_run(lib_, plan_, o, o.device_label);
}

QString RunPanel::runHeaderText() const { return run_header_ ? run_header_->text() : QString(); }

void RunPanel::updateRunHeader() {
    if (!run_header_ || syncing_) return;
    const RunOptions o = options();
    QString html;
    if (!has_plan_) {
        html = "Training: " + describe(o).toHtmlEscaped() + " on " + o.device_label.toHtmlEscaped();
    } else {
        const PlanRunComparison c = compare_plan_and_run(lib_, plan_, o, o.device_label);
        html = c.html;
        if (!follow_planner_) html += " <i>(settings edited here)</i>";
    }
    if (o.model_source == RunOptions::ModelSource::Planned && o.model_dir.isEmpty() && has_plan_)
        html += "<br><span style='color:#c2410c'>" + planned_.missingText().toHtmlEscaped() + "</span>";
    const QString blocked = trainBlockedReason();
    if (!blocked.isEmpty()) html += "<br>" + blocked.toHtmlEscaped() + " Start ▶ here trains the settings shown.";
    run_header_->setText(html);
    follow_->setVisible(has_plan_ && !follow_planner_);
}

// ------------------------------------------------------------------ devices ----

void RunPanel::refreshDevices() {
    if (devices_process_) {
        devices_process_->disconnect(this);
        devices_process_->kill();
        devices_process_->waitForFinished(2000);   // reaped before it is deleted
        devices_process_->deleteLater();
    }
    if (!trainer_.ok()) {
        devices_ = cpu_only("wingspan-train is missing");
        populateDevices();
        return;
    }
    devices_ = cpu_only("asking wingspan-train for its devices…");
    populateDevices();
    auto* p = new QProcess(this);
    devices_process_ = p;
    p->setProgram(trainer_.path);
    p->setArguments({"devices"});
    // A trainer that hangs must not leave the choice open: CPU after 20 s.
    QTimer::singleShot(20000, p, [p] {
        if (p->state() != QProcess::NotRunning) p->kill();
    });
    connect(p, &QProcess::finished, this, [this, p](int code, QProcess::ExitStatus status) {
        QString error;
        const QByteArray out = p->readAllStandardOutput();
        std::vector<DeviceInfo> list;
        if (status == QProcess::NormalExit && code == 0) list = parse_devices(out, &error);
        if (!list.empty()) {
            devices_ = DeviceChoice{list, true, {}};
        } else {
            const QString err = QString::fromUtf8(p->readAllStandardError()).trimmed().section('\n', -1);
            devices_ = cpu_only("this wingspan-train cannot list devices" +
                                (err.isEmpty() ? error.isEmpty() ? QString() : " (" + error + ")" : " (" + err.left(160) + ")") +
                                "; it trains on the CPU");
        }
        p->deleteLater();
        populateDevices();
        emit devicesChanged();
    });
    connect(p, &QProcess::errorOccurred, this, [this, p](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;
        devices_ = cpu_only("wingspan-train did not start: " + p->errorString());
        p->deleteLater();
        populateDevices();
        emit devicesChanged();
    });
    p->start(QIODevice::ReadOnly);
}

void RunPanel::populateDevices() {
    if (!device_) return;
    const bool was = syncing_;
    syncing_ = true;
    device_->clear();
    QString pick = device_choice_;
    for (const DeviceInfo& d : devices_.devices) {
        device_->addItem(devices_.listed ? d.label() : QString("cpu"), devices_.listed ? d.id() : QString());
        // Without a choice, the first GPU: that is where a machine with one trains.
        if (device_choice_.isEmpty() && devices_.listed && d.isGpu() && pick.isEmpty()) pick = d.id();
    }
    const int i = device_->findData(pick);
    device_->setCurrentIndex(std::max(0, i));
    device_->setToolTip(devices_.listed ? "Where the trainer runs (--device), as `wingspan-train devices` lists it"
                                        : "CPU only: " + devices_.note);
    syncing_ = was;
    updateFormEnabled();
    updateRunHeader();
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
