#pragma once
// The run panel's status line (issue 27): the status text and the progress bar that the status
// model computes (run_status.hpp), "Scale to the whole process", and under them which run is
// shown when it is not the live one (a saved run, a comparison) with the way back. Private to
// ui/src: the panel is its only user.
#include <QString>
#include <QWidget>

#include "wingspan/ui/run_status.hpp"

class QCheckBox;
class QLabel;
class QProgressBar;
class QPushButton;

namespace wingspan::ui {

class RunStatusLine : public QWidget {
    Q_OBJECT
public:
    explicit RunStatusLine(QWidget* parent = nullptr);

    void setStatus(const QString& html);
    QString statusText() const;
    void setProgress(const RunProgress& progress);
    // The memory chart's axis also fits the process RSS and the predicted process total.
    bool wholeProcess() const;
    // `html` names the saved or compared run shown; hidden when `html` is empty. `back`: the
    // way back to the live run (empty: none).
    void showViewBanner(const QString& html, const QString& back);

signals:
    void linkActivated(const QString& link);   // an offer in the status text
    void wholeProcessToggled();
    void backClicked();

private:
    QLabel* status_ = nullptr;
    QCheckBox* whole_process_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* view_banner_ = nullptr;
    QPushButton* back_live_ = nullptr;
};

}  // namespace wingspan::ui
