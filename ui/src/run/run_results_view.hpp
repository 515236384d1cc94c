#pragma once
// The run panel's results view (issue 27): the tabs under the charts. Summary (predicted and
// measured per component, the run's verdict and folder, the sample the model generated), the
// same as a bar chart, the trainer's log, Try it, and the history (the panel's page: it opens
// and compares runs). Private to ui/src: the panel is its only user.
#include <QString>
#include <QTabWidget>

#include "wingspan/ui/chart.hpp"
#include "wingspan/ui/export.hpp"

class QLabel;
class QPlainTextEdit;
class QTableView;

namespace wingspan::ui {

class RunSummaryChartView;
class TableModel;
class TryItBox;

class RunResultsView : public QTabWidget {
    Q_OBJECT
public:
    enum Tab { Summary, Chart, Log, TryIt, History };
    explicit RunResultsView(QWidget* history_page, QWidget* parent = nullptr);

    void showTab(Tab tab) { setCurrentIndex(int(tab)); }
    // The summary: the table and its bar chart, the text above the table (rich text).
    void setSummary(const Table& table, const ChartData& chart, const QString& html);
    // The sample the model generated at the end (empty: none), and what the box says when empty.
    void setSample(const QString& sample, const QString& placeholder);
    void clearSample();
    QString sampleText() const;
    QPlainTextEdit* log() const { return log_; }
    TryItBox* tryIt() const { return try_it_; }

signals:
    void chartTabChosen();   // the bar chart needs some height to be read

private:
    QLabel* summary_text_ = nullptr;
    TableModel* summary_model_ = nullptr;
    QTableView* summary_view_ = nullptr;
    QPlainTextEdit* sample_ = nullptr;
    RunSummaryChartView* summary_chart_ = nullptr;
    QPlainTextEdit* log_ = nullptr;
    TryItBox* try_it_ = nullptr;
};

}  // namespace wingspan::ui
