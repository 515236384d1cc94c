// The run panel's live view: its three charts (run_live_charts.hpp).
#include "run/run_live_charts.hpp"

#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>

namespace wingspan::ui {

RunLiveCharts::RunLiveCharts(QWidget* parent) : QWidget(parent) {
    auto* split = new QSplitter(Qt::Horizontal);
    split->setChildrenCollapsible(false);
    memory_chart_ = new TimeChartWidget;
    memory_chart_->setObjectName("runMemoryChart");
    memory_chart_->setMinimumSize(360, 240);
    loss_chart_ = new TimeChartWidget;
    loss_chart_->setObjectName("runLossChart");
    throughput_chart_ = new TimeChartWidget;
    throughput_chart_->setObjectName("runThroughputChart");
    auto* right = new QSplitter(Qt::Vertical);
    right->setChildrenCollapsible(false);
    right->addWidget(loss_chart_);
    right->addWidget(throughput_chart_);
    split->addWidget(memory_chart_);
    split->addWidget(right);
    split->setStretchFactor(0, 5);
    split->setStretchFactor(1, 3);
    // The charts take the keyboard (Tab to one, arrows walk its samples); what the cursor
    // reads is said on this line, as the hover says it.
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(2);
    auto* cursor = new QLabel("Tab to a chart, then ← → Home End walk its samples.");
    cursor->setObjectName("runChartCursor");
    cursor->setTextFormat(Qt::RichText);
    cursor->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    const std::pair<TimeChartWidget*, const char*> charts[] = {
        {memory_chart_, "Memory over time, per component"}, {loss_chart_, "Loss per step"}, {throughput_chart_, "Tokens per second"}};
    for (const auto& [chart, name] : charts) {
        chart->setAccessibleName(name);
        connect(chart, &TimeChartWidget::cursorTextChanged, cursor,
                [cursor](const QString& html) { cursor->setText(QString(html).replace("<br>", " · ")); });
    }
    v->addWidget(split, 1);
    v->addWidget(cursor);
}

bool RunLiveCharts::due(bool live_tick) const { return !live_tick || !clock_.isValid() || clock_.elapsed() >= 400; }

void RunLiveCharts::show(const RunChartInputs& in) {
    clock_.restart();
    memory_data_ = run_memory_chart(in);
    loss_data_ = run_loss_chart(in);
    throughput_data_ = run_throughput_chart(in);
    memory_chart_->setData(memory_data_);
    loss_chart_->setData(loss_data_);
    throughput_chart_->setData(throughput_data_);
}

}  // namespace wingspan::ui
