#pragma once
// The run panel's live view (issue 27): memory over time per component (left), loss and
// tokens/s per step (right), and the line that reads what the keyboard cursor is on; drawn from
// RunChartInputs (run_charts.hpp). Private to ui/src: the panel is its only user.
#include <QElapsedTimer>
#include <QWidget>

#include "wingspan/ui/run_charts.hpp"

namespace wingspan::ui {

class RunLiveCharts : public QWidget {
public:
    explicit RunLiveCharts(QWidget* parent = nullptr);

    // Whether a redraw is due: always, except on a live run's tick, where the charts redraw at
    // most 2.5 times a second (the status line 5 times): on a busy CPU reading the trainer's
    // events comes before drawing them.
    bool due(bool live_tick) const;
    void show(const RunChartInputs& in);

    const TimeChartData& memory() const { return memory_data_; }
    const TimeChartData& loss() const { return loss_data_; }
    const TimeChartData& throughput() const { return throughput_data_; }

private:
    TimeChartWidget* memory_chart_ = nullptr;
    TimeChartWidget* loss_chart_ = nullptr;
    TimeChartWidget* throughput_chart_ = nullptr;
    TimeChartData memory_data_, loss_data_, throughput_data_;
    QElapsedTimer clock_;   // the last redraw
};

}  // namespace wingspan::ui
