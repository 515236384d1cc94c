#pragma once
// The run panel's controller (issue 27): owns the trainer session and its states (idle, running,
// stopping, ended), where the trainer and the run store are, the repaint clock of a live run,
// a window waiting to close once the trainer exited, and Train ▶, the planner's action, whose
// state and tooltip it sets. No widgets of its own: the panel's views follow its signals.
#include <filesystem>

#include <QObject>
#include <QPointer>
#include <QString>

#include <nlohmann/json.hpp>

#include "wingspan/ui/run_session.hpp"

class QAction;
class QTimer;
class QWidget;

namespace wingspan::ui {

class RunController : public QObject {
    Q_OBJECT
public:
    // `executable`: the wingspan program (the trainer and the sample data are found beside it).
    explicit RunController(const QString& executable, QObject* parent = nullptr);
    ~RunController() override;   // a live trainer is stopped (SIGTERM, then SIGKILL) with the session

    // Where wingspan-train is: found beside `executable`, or the path given (tests, odd installs).
    void setTrainerPath(const QString& path);
    TrainerLocation trainer() const { return trainer_; }
    const TrainerLocation& recheckTrainer();   // looks again (an overridden path may have appeared)
    QString sampleData() const { return sample_data_; }
    void setStoreRoot(const std::filesystem::path& root) { store_root_ = root; }
    std::filesystem::path storeRoot() const { return store_root_; }
    void setKillTimeout(int ms) { kill_timeout_ms_ = ms; }
    int killTimeout() const { return kill_timeout_ms_; }

    // The newest session (live or ended), nullptr before the first run.
    RunSession* session() const { return session_; }
    bool isRunning() const { return session_ && session_->isActive(); }
    bool isStopping() const { return session_ && session_->state() == RunSession::State::Stopping; }
    // Launches wingspan-train with `options` (the caller checked that the run fits); the
    // previous session is let go. False, with the reason in `error`, when it cannot start.
    bool start(const RunOptions& options, const nlohmann::json& plan, QString* error);
    void stop();      // SIGTERM, SIGKILL after killTimeout()
    void killNow();
    // `window` is closed once the live trainer exited (the user chose "Stop and close").
    void closeWhenFinished(QWidget* window) { closing_window_ = window; }
    bool closing() const { return bool(closing_window_); }

    // Train ▶: shown, enabled with its own tooltip when the plan trains, disabled with the
    // reason as its tooltip when it does not (`blocked_reason` from cannot_train_reason).
    void setTrainAction(QAction* action, const QString& blocked_reason);
    void showTrainAvailability(const QString& blocked_reason);

signals:
    void started();        // a new session is live
    void stateChanged();   // the session's state changed (stopping, ended)
    void finished();       // the session's process ended
    void tick();           // every 200 ms while a session is live: the views repaint on this clock

private:
    void onFinished();

    TrainerLocation trainer_;
    QString trainer_override_;
    QString sample_data_;
    std::filesystem::path store_root_;
    int kill_timeout_ms_ = 60000;
    RunSession* session_ = nullptr;
    QTimer* repaint_timer_ = nullptr;
    QPointer<QWidget> closing_window_;
    QPointer<QAction> train_action_;
    QString train_tip_;   // the action's tooltip when the plan trains
};

}  // namespace wingspan::ui
