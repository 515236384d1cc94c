// The run form's device list: `wingspan-train devices`, asked asynchronously, with the CPU
// alone when the trainer is missing, hangs or cannot list them (run_form.hpp).
#include <algorithm>

#include <QComboBox>
#include <QProcess>
#include <QTimer>

#include "run/run_form.hpp"

namespace wingspan::ui {

// ------------------------------------------------------------------ devices ----

void RunForm::refreshDevices(const TrainerLocation& trainer) {
    if (devices_process_) {
        devices_process_->disconnect(this);
        devices_process_->kill();
        devices_process_->waitForFinished(2000);   // reaped before it is deleted
        devices_process_->deleteLater();
    }
    if (!trainer.ok()) {
        devices_ = cpu_only("wingspan-train is missing");
        populateDevices();
        return;
    }
    devices_ = cpu_only("asking wingspan-train for its devices…");
    populateDevices();
    auto* p = new QProcess(this);
    devices_process_ = p;
    p->setProgram(trainer.path);
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

void RunForm::populateDevices() {
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
    updateEnabled();
    notifyChanged();
}

}  // namespace wingspan::ui
