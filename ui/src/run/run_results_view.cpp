// The run panel's results view: the tabs under the charts (run_results_view.hpp).
#include "run/run_results_view.hpp"

#include <QDesktopServices>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTableView>
#include <QUrl>
#include <QVBoxLayout>

#include "wingspan/ui/run_charts.hpp"
#include "wingspan/ui/run_try_it.hpp"
#include "wingspan/ui/widgets.hpp"

namespace wingspan::ui {

RunResultsView::RunResultsView(QWidget* history_page, QWidget* parent) : QTabWidget(parent) {
    setObjectName("runBottom");
    setDocumentMode(true);

    // Summary.
    auto* summary = new QWidget;
    auto* sh = new QHBoxLayout(summary);
    sh->setContentsMargins(4, 4, 4, 4);
    auto* left = new QVBoxLayout;
    summary_text_ = new QLabel;
    summary_text_->setObjectName("runSummaryText");
    summary_text_->setWordWrap(true);
    summary_text_->setTextFormat(Qt::RichText);
    summary_text_->setTextInteractionFlags(Qt::TextBrowserInteraction);
    summary_text_->setOpenExternalLinks(false);
    connect(summary_text_, &QLabel::linkActivated, this,
            [](const QString& link) { QDesktopServices::openUrl(QUrl::fromLocalFile(link)); });
    summary_model_ = new TableModel(this);
    summary_view_ = new QTableView;
    summary_view_->setObjectName("runSummaryTable");
    summary_view_->setAccessibleName("Predicted and measured bytes per component");
    summary_view_->setModel(summary_model_);
    summary_view_->verticalHeader()->hide();
    summary_view_->horizontalHeader()->setStretchLastSection(true);
    summary_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    summary_view_->setAlternatingRowColors(true);
    summary_view_->verticalHeader()->setDefaultSectionSize(summary_view_->fontMetrics().height() + 8);
    summary_view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    sample_ = new QPlainTextEdit;
    sample_->setObjectName("runSample");
    sample_->setAccessibleName("Sample the model generated");
    sample_->setReadOnly(true);
    sample_->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
    sample_->setPlaceholderText("The text the model generates at the end of the run appears here.");
    left->addWidget(summary_text_);
    left->addWidget(summary_view_, 1);
    auto* right = new QVBoxLayout;
    auto* sample_label = new QLabel("Sample the model generated at the end:");
    sample_label->setBuddy(sample_);
    right->addWidget(sample_label);
    right->addWidget(sample_, 1);
    sh->addLayout(left, 3);
    sh->addLayout(right, 2);
    addTab(summary, "Summar&y");

    // Predicted vs measured as the planner draws it: two stacked bars.
    summary_chart_ = new RunSummaryChartView;
    summary_chart_->setObjectName("runSummaryChart");
    summary_chart_->setMinimumSize(280, 180);
    addTab(summary_chart_, "Predicted vs measured");
    connect(this, &QTabWidget::currentChanged, this, [this](int index) {
        if (index == Chart) emit chartTabChosen();
    });

    // Log.
    log_ = new QPlainTextEdit;
    log_->setObjectName("runLog");
    log_->setAccessibleName("Trainer log");
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(5000);   // bounded, however much the trainer writes
    log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    log_->setLineWrapMode(QPlainTextEdit::NoWrap);
    log_->setPlaceholderText("The trainer's stderr, its log events and every line Wingspan could not read.");
    addTab(log_, "Lo&g");

    // Try it: the finished run's model answers a prompt.
    try_it_ = new TryItBox;
    addTab(try_it_, "&Try it");

    addTab(history_page, "History");
}

void RunResultsView::setSummary(const Table& table, const ChartData& chart, const QString& html) {
    summary_model_->setTable(table);
    summary_view_->resizeColumnsToContents();
    summary_chart_->setData(chart);
    if (html.isEmpty()) summary_text_->clear();
    else summary_text_->setText(html);
}

void RunResultsView::setSample(const QString& sample, const QString& placeholder) {
    if (sample_->toPlainText() != sample) sample_->setPlainText(sample);
    sample_->setPlaceholderText(placeholder);
}

void RunResultsView::clearSample() { sample_->clear(); }

QString RunResultsView::sampleText() const { return sample_->toPlainText(); }

}  // namespace wingspan::ui
