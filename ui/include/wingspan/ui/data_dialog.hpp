#pragma once
// "Plan from a data file…" (issue 26): pick a model folder (its tokenizer.json and chat template)
// and a JSONL data set; the window shows the token-length histogram with the bin that holds the
// cap (--seq) and the one that holds the peak batch's rows marked, and the peak batch the memory
// is planned at. The tokens are counted by the trainer's own reader (tokenizer/data_file.hpp),
// the batches by core (data_lengths.hpp); this dialog only renders them. The reading runs on a
// worker thread (a 36 MB file takes ~10 s): the window stays responsive, a bar shows the bytes
// read, and Cancel stops it within 256 lines.
#include <memory>
#include <optional>

#include <QDialog>

#include "wingspan/data_lengths.hpp"
#include "wingspan/plan.hpp"

class QChart;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QThread;
class QTimer;

namespace wingspan::ui {

class DataDialog : public QDialog {
    Q_OBJECT
public:
    // `plan` gives the cap, micro batch, devices, epochs and framework the batches follow.
    explicit DataDialog(const Plan& plan, QWidget* parent = nullptr);
    ~DataDialog() override;
    // Starts reading `data` with `model_dir`'s tokenizer on a worker thread (a reading under way
    // is cancelled first); readFinished tells the end.
    void startRead(const QString& model_dir, const QString& data);
    // Stops the reading under way (its figures are not shown).
    void cancelRead();
    bool reading() const { return worker_ != nullptr; }
    // startRead, then waits for the end with the event loop running; false (and `error`) when
    // either file cannot be read or the reading was cancelled.
    bool read(const QString& model_dir, const QString& data, QString* error = nullptr);
    const std::optional<DataSummary>& summary() const { return summary_; }
    QString summaryText() const;
    QChart* chart() const { return chart_; }

    struct Job;   // one reading's shared state (data_dialog.cpp)

signals:
    // ok: the figures are shown; else `error` says why (a bad file, or "cancelled").
    void readFinished(bool ok, const QString& error);

private:
    void show_summary();
    void finish_read();
    void show_progress();

    Plan plan_;
    std::string framework_;
    std::optional<DataSummary> summary_;
    QLineEdit* model_dir_ = nullptr;
    QLineEdit* data_ = nullptr;
    QComboBox* padding_ = nullptr;
    QLabel* text_ = nullptr;
    QChart* chart_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* go_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QTimer* poll_ = nullptr;
    QThread* worker_ = nullptr;
    std::shared_ptr<Job> job_;
};

}  // namespace wingspan::ui
