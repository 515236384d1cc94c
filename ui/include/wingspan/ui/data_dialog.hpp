#pragma once
// "Plan from a data file…" (issue 26): pick a model folder (its tokenizer.json and chat template)
// and a JSONL data set; the window shows the token-length histogram with the bin that holds the
// cap (--seq) and the one that holds the peak batch's rows marked, and the peak batch the memory
// is planned at. The tokens are counted by the trainer's own reader (tokenizer/data_file.hpp),
// the batches by core (data_lengths.hpp); this dialog only renders them.
#include <optional>

#include <QDialog>

#include "wingspan/data_lengths.hpp"
#include "wingspan/ui/plan.hpp"

class QChart;
class QComboBox;
class QLabel;
class QLineEdit;

namespace wingspan::ui {

class DataDialog : public QDialog {
    Q_OBJECT
public:
    // `plan` gives the cap, micro batch, devices, epochs and framework the batches follow.
    explicit DataDialog(const Plan& plan, QWidget* parent = nullptr);
    // Reads `data` with `model_dir`'s tokenizer and shows the result; false (and `error`) when
    // either cannot be read.
    bool read(const QString& model_dir, const QString& data, QString* error = nullptr);
    const std::optional<DataSummary>& summary() const { return summary_; }
    QString summaryText() const;
    QChart* chart() const { return chart_; }

private:
    void show_summary();

    Plan plan_;
    std::string framework_;
    std::optional<DataSummary> summary_;
    QLineEdit* model_dir_ = nullptr;
    QLineEdit* data_ = nullptr;
    QComboBox* padding_ = nullptr;
    QLabel* text_ = nullptr;
    QChart* chart_ = nullptr;
};

}  // namespace wingspan::ui
