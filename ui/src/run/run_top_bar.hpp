#pragma once
// The run panel's top (issue 27): the missing-trainer banner, what this run trains against the
// plan ("Planner: X → this run: Y", with Follow the planner once the settings were edited), and
// the bar: the settings' fold with their one-line summary, Start ▶, Stop ■ and Export. Private
// to ui/src: the panel is its only user and decides what each click does.
#include <QString>
#include <QWidget>

#include "wingspan/ui/run_session.hpp"

class QLabel;
class QPushButton;
class QToolButton;

namespace wingspan::ui {

class RunTopBar : public QWidget {
    Q_OBJECT
public:
    explicit RunTopBar(QWidget* parent = nullptr);

    // The banner shows while the trainer is missing; Start ▶'s tooltip names the trainer, or why not.
    void showTrainer(const TrainerLocation& trainer);
    // What this run trains (rich text), and whether to offer to follow the planner again.
    void showRunHeader(const QString& html, bool offer_follow);
    QString runHeaderText() const;
    // The settings' fold: open, or folded with `summary` beside it.
    void showSettingsOpen(bool open, const QString& summary);
    // Start ▶ is off and Stop ■ on while a run is live; Stop reads "Kill now" while it stops.
    void showRunState(bool active, bool stopping);

    // The export menu's entries, in order (exportChosen's argument).
    enum Export { MemoryChart, LossChart, ThroughputChart, SummaryChart, SummaryTable };

signals:
    void startClicked();
    void stopClicked();
    void followClicked();
    void settingsToggled(bool open);
    void exportChosen(int which);
    void exportAllChosen();

private:
    QLabel* banner_ = nullptr;
    QLabel* run_header_ = nullptr;
    QPushButton* follow_ = nullptr;
    QToolButton* settings_toggle_ = nullptr;
    QLabel* settings_summary_ = nullptr;
    QPushButton* start_ = nullptr;
    QPushButton* stop_ = nullptr;
};

}  // namespace wingspan::ui
