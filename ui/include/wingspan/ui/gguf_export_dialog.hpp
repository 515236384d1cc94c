#pragma once
// File ▸ Export GGUF… (issue 30): a model folder, optionally with a finished run's adapters
// merged on the fly, written as a GGUF file for llama.cpp, Ollama and LM Studio by
// `wingspan-train export --format gguf` (docs/protocol.md "`wingspan-train export`"): the dialog
// shows its per-tensor progress, its error or its result, and then what llama.cpp allocates to
// serve the file (core's llama_cpp_terms: frozen_weights, kv_cache, compute_buffer).
#include <QDialog>
#include <QProcess>
#include <QString>

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;

namespace wingspan::ui {

class GgufExportDialog : public QDialog {
    Q_OBJECT
public:
    // With wingspan-train found as the Run tab finds it (find_trainer), or at `trainer` (tests).
    explicit GgufExportDialog(QWidget* parent = nullptr);
    GgufExportDialog(QString trainer, QWidget* parent);
    ~GgufExportDialog() override;

    // Starts the export with the fields' values; false with error() when they will not do.
    bool start();
    bool running() const;
    QString error() const { return error_; }
    QString writtenFile() const { return written_; }
    // What llama.cpp allocates to serve the written file at 4,096 tokens, in words (empty before).
    QString servingSummary() const { return serving_; }

    QLineEdit* modelEdit() const { return model_; }
    QLineEdit* adapterEdit() const { return adapter_; }
    QLineEdit* outEdit() const { return out_; }
    QComboBox* quantCombo() const { return quant_; }
    QProgressBar* progressBar() const { return progress_; }
    QLabel* statusLabel() const { return status_; }

signals:
    void finished();

private:
    void readLines();
    void handleLine(const QByteArray& line);
    void processEnded(int code, QProcess::ExitStatus status);
    void describeServing();

    QString trainer_;
    QLineEdit* model_;
    QLineEdit* adapter_;
    QLineEdit* out_;
    QComboBox* quant_;
    QProgressBar* progress_;
    QLabel* status_;
    QPushButton* export_;
    QProcess* process_ = nullptr;
    QByteArray pending_;
    QString error_, written_, serving_;
};

}  // namespace wingspan::ui
