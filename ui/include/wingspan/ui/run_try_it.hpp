#pragma once
// "Try it" on a finished run: a prompt in, the fine-tuned model's text out, through
// `wingspan-train generate --model DIR --adapter RUN_OUT --prompt TEXT [--chat]` as a
// subprocess. The text streams in as the trainer prints it; the window never waits for it,
// and Stop ends it (SIGTERM, then SIGKILL).
#include <QPointer>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QWidget>

#include "wingspan/run_record.hpp"

class QCheckBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTimer;

namespace wingspan::ui {

struct RunOptions;

// What a finished run can be tried with: the base model's folder and the run's adapter.
struct TryItTarget {
    QString trainer;        // wingspan-train
    QString model_dir;      // a Hugging Face folder with tokenizer.json and safetensors
    QString adapter_dir;    // the run's output (adapter_config.json + adapter_model.safetensors)
    bool chat = false;      // the model has a chat template: prompts go through it by default
    QString unavailable;    // why this run cannot be tried (empty: it can)
};

// The target for a run: only LoRA/QLoRA runs of a model folder that finished with an adapter
// can be tried (the built-in demo and random weights have no weights on disk to load).
TryItTarget try_it_target(const QString& trainer, const RunOptions& options, const RunRecord& record,
                          bool run_active);

class TryItBox : public QWidget {
    Q_OBJECT
public:
    explicit TryItBox(QWidget* parent = nullptr);
    ~TryItBox() override;   // a generation still going is killed

    void setTarget(const TryItTarget& target);
    const TryItTarget& target() const { return target_; }
    void setPrompt(const QString& prompt);
    void setChat(bool on);
    void setMaxTokens(int n);
    bool generate(QString* error = nullptr);   // starts; false (and why) when it cannot
    void stop();
    bool isRunning() const;
    QString outputText() const;
    QString statusText() const;
    QStringList arguments() const { return arguments_; }

    static constexpr int kKillAfterMs = 3000;
    static constexpr int kMaxOutputChars = 1 << 20;

signals:
    void generationFinished(bool ok);

private:
    void onOutput();
    void onFinished(int code, QProcess::ExitStatus status);
    void updateEnabled();

    TryItTarget target_;
    QPointer<QProcess> process_;
    QTimer* kill_timer_ = nullptr;
    QStringList arguments_;
    QByteArray stderr_;
    QByteArray pending_utf8_;
    bool stopping_ = false;
    QLineEdit* prompt_ = nullptr;
    QCheckBox* chat_ = nullptr;
    QSpinBox* max_tokens_ = nullptr;
    QPushButton* go_ = nullptr;
    QPushButton* stop_ = nullptr;
    QLabel* status_ = nullptr;
    QPlainTextEdit* output_ = nullptr;
};

}  // namespace wingspan::ui
