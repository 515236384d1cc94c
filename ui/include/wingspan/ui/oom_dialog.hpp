#pragma once
// "Explain an out-of-memory message…": paste PyTorch's CUDA or MPS out-of-memory text; core
// reads it (oom_message.hpp) and, against the window's plan, says where the step ran out and
// which settings fit (oom_advice.hpp). The dialog only renders what core computed.
#include <QDialog>

#include "wingspan/plan.hpp"

class QPlainTextEdit;
class QTextBrowser;

namespace wingspan::ui {

class OomDialog : public QDialog {
    Q_OBJECT
public:
    // `eval` is the window's current plan (nullptr or not ok(): the figures only).
    OomDialog(const Evaluation* eval, QWidget* parent = nullptr);
    // Reads `message` and shows the answer; false when it is not an OOM message Wingspan knows.
    bool explain(const QString& message);
    QString answerText() const;   // the answer as plain text (tests read it)

private:
    const Evaluation* eval_;
    QPlainTextEdit* paste_ = nullptr;
    QTextBrowser* answer_ = nullptr;
};

}  // namespace wingspan::ui
