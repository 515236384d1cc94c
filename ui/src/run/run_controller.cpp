// The run panel's controller: the session, its states and Train ▶ (run_controller.hpp).
#include "wingspan/ui/run_controller.hpp"

#include <QAction>
#include <QTimer>
#include <QWidget>

namespace wingspan::ui {

RunController::RunController(const QString& executable, QObject* parent) : QObject(parent) {
    trainer_ = find_trainer(executable);
    sample_data_ = find_sample_data(executable);
    store_root_ = RunStore::default_root();
    repaint_timer_ = new QTimer(this);
    repaint_timer_->setInterval(200);   // views repaint on this clock, never per event
    connect(repaint_timer_, &QTimer::timeout, this, &RunController::tick);
}

RunController::~RunController() {
    if (session_) {
        // Stop a live trainer before whoever listens to it is gone.
        session_->disconnect(this);
        delete session_;
        session_ = nullptr;
    }
}

void RunController::setTrainerPath(const QString& path) {
    trainer_override_ = path;
    trainer_ = check_trainer(path);
}

const TrainerLocation& RunController::recheckTrainer() {
    if (!trainer_override_.isEmpty()) trainer_ = check_trainer(trainer_override_);
    return trainer_;
}

bool RunController::start(const RunOptions& options, const nlohmann::json& plan, QString* error) {
    if (isRunning()) {
        if (error) *error = "a run is already going; stop it first";
        return false;
    }
    auto* s = new RunSession(this);
    QString err;
    if (!s->start(trainer_.path, options, plan, store_root_, sample_data_, &err)) {
        delete s;
        if (error) *error = err;
        return false;
    }
    if (session_) {
        session_->disconnect(this);
        session_->deleteLater();
    }
    session_ = s;
    connect(s, &RunSession::finished, this, &RunController::onFinished);
    connect(s, &RunSession::stateChanged, this, &RunController::stateChanged);
    repaint_timer_->start();
    emit started();
    return true;
}

void RunController::stop() {
    if (!isRunning()) return;
    session_->stop(kill_timeout_ms_);
    emit stateChanged();
}

void RunController::killNow() {
    if (!isRunning()) return;
    session_->killNow();
    emit stateChanged();
}

void RunController::onFinished() {
    repaint_timer_->stop();
    emit finished();
    if (closing_window_) {
        QPointer<QWidget> w = closing_window_;
        QTimer::singleShot(0, this, [w] {
            if (w) w->close();
        });
    }
}

void RunController::setTrainAction(QAction* action, const QString& blocked_reason) {
    train_action_ = action;
    if (!action) return;
    train_tip_ = action->toolTip();
    action->setVisible(true);
    showTrainAvailability(blocked_reason);
}

void RunController::showTrainAvailability(const QString& blocked_reason) {
    if (!train_action_) return;
    train_action_->setEnabled(blocked_reason.isEmpty());
    train_action_->setToolTip(blocked_reason.isEmpty() ? train_tip_ : blocked_reason);
}

}  // namespace wingspan::ui
