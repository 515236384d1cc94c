#pragma once
// The run panel's charts: what to draw for a run (TimeChartData, built from its RunRecord) and
// the Qt Charts views that draw it, live in the panel and in every export.
//   run_memory_chart / run_loss_chart / run_throughput_chart   data over time or steps
//   TimeChartWidget                                            a QChartView of TimeChartData
//   run_summary_chart / RunSummaryChartView                    predicted vs measured at the peak
// Nothing here computes memory: the numbers come from the trainer's events.
#include <cstdint>
#include <optional>
#include <vector>

#include <QChartView>
#include <QColor>
#include <QPointF>
#include <QLocale>
#include <QString>

#include "wingspan/run_record.hpp"
#include "wingspan/ui/chart.hpp"
#include "wingspan/ui/export.hpp"
#include "wingspan/plan.hpp"

class QAreaSeries;
class QChart;
class QLineSeries;
class QValueAxis;
class QXYSeries;

namespace wingspan::ui {

struct RunOptions;
struct DeviceMemoryTrack;
struct RankTrack;

// A chart over time (or steps): stacked areas bottom first, then lines and points, plus
// horizontal reference lines. Markers far above the data are listed as "off scale" instead of
// squashing the chart.
struct TimeSeries {
    enum class Kind { Area, Line, Points };
    QString label;
    QColor color;
    Kind kind = Kind::Line;
    Qt::PenStyle style = Qt::SolidLine;
    double width = 1.8;
    std::vector<QPointF> points;     // x ascending; areas of one chart share their x values
    std::optional<Component> component;
    bool fit = true;                 // false: drawn, clipped, but the y axis does not stretch for it
    bool halo = false;               // drawn wider, readable over busy areas
};

struct TimeMarker {
    QString label;
    double value = 0;
    QColor color;
    Qt::PenStyle style = Qt::DashLine;
    bool fit = true;                 // false: drawn only when inside the axis the data sets
};

struct TimeChartData {
    QString title;
    QString subtitle;
    QString footnote;
    QString x_title;                  // "time" or "step"
    bool x_is_time = true;            // seconds since launch
    bool y_bytes = true;              // ticks in `unit`
    ByteUnit unit = ByteUnit::GB;
    QString y_title;
    bool y_from_zero = true;
    std::vector<TimeSeries> series;
    std::vector<TimeMarker> markers;
    QString empty_message = "No data yet";
    double off_scale_factor = 3.0;    // fitting markers above this × the data's maximum are listed, not drawn

    const TimeSeries* find(const QString& label) const;
};

// The panel's charts for a run (live or loaded). `rss` is what the GUI sampled; `overlay`
// (optional) a second run drawn as dotted lines, labelled `overlay_label`.
struct RunChartInputs {
    const RunRecord* record = nullptr;
    const std::vector<QPointF>* rss = nullptr;
    const RunOptions* options = nullptr;
    QString title;
    const RunRecord* overlay = nullptr;
    const std::vector<QPointF>* overlay_rss = nullptr;
    QString overlay_label;
    ByteUnit unit = ByteUnit::GB;
    size_t max_points = 1200;
    // The memory chart's scale: the tensors (the planner's components) or the whole process
    // (its RSS and predicted total too).
    bool whole_process = false;
    // What the device's caching allocator reserved (GPU runs), when the trainer reports it.
    const DeviceMemoryTrack* device = nullptr;
    // Each rank's memory when the run has several (the record then follows rank 0): drawn as
    // a line per rank against the per-device prediction.
    const RankTrack* ranks = nullptr;
};
// A run's title ("… · 60 steps") with the steps it ran where it stopped short: "… · 18 of 60
// steps" (the title is what a slide of a stopped run shows).
QString title_with_steps_run(QString title, const RunOptions* options, const RunRecord* record);
TimeChartData run_memory_chart(const RunChartInputs& in);
TimeChartData run_loss_chart(const RunChartInputs& in);
TimeChartData run_throughput_chart(const RunChartInputs& in);
// Predicted vs measured at the peak as two stacked bars, framework overhead on top of each
// (predicted: the trainer's own estimate; measured: RSS − tensors). `whole_process` false:
// tensors only. Scaled to the run: a ceiling or cap far above the bars is named in the
// subtitle, not drawn.
ChartData run_summary_chart(const RunRecord& record, const RunOptions* options, const QString& title, ByteUnit unit,
                            bool whole_process = true);
// Bytes as a run's scale reads: "70.2 MB" for small runs, "18.41 GB" for big ones.
// In the user's locale on screen; tables, which are also exported as CSV and Markdown, pass
// QLocale::c() (machine-readable numbers are always in the C locale).
QString format_run_bytes(double bytes, ByteUnit unit, const QLocale& locale = QLocale());
// The summary as a table: a row per component, the peak of all tensors and the process total.
// A run that ended before its first full step never reached its peak: components below the
// prediction read "not reached", not as errors.
Table run_summary_table(const RunRecord& record, ByteUnit unit);
// True when the run got through at least one optimizer step (every component has been live).
bool run_reached_peak(const RunRecord& record);

// The unit an axis reaching `max_bytes` reads in: (1e6, "MB"), (2^30, "GiB"), ...
std::pair<double, QString> run_axis_unit(double max_bytes, ByteUnit unit);

// The text of every series at x (the hover and the keyboard cursor say the same).
QString time_chart_text_at(const TimeChartData& data, double x);

// ---------------------------------------------------------------- Qt Charts ----

// Draws TimeChartData into a QChart. Kept series are updated with one replace() per series
// (never one append per event), so a flood of events costs one update per refresh.
class TimeChartBuilder {
public:
    void apply(QChart* chart, const TimeChartData& data, const ChartStyle& style);
    int rebuilds() const { return rebuilds_; }
    // The QXYSeries drawn for a TimeChartData series (areas: their upper line), or null.
    QXYSeries* seriesFor(const QString& label) const;
    QValueAxis* axisY() const { return y_; }
    QValueAxis* axisX() const { return x_; }
    double yScale() const { return y_scale_; }   // bytes per axis unit

private:
    void rebuild(QChart* chart, const TimeChartData& data, const ChartStyle& style);
    QString key_;
    std::vector<std::pair<QString, QXYSeries*>> drawn_;   // label → series holding its points
    std::vector<QLineSeries*> lowers_;                     // areas' lower bounds, in stack order
    std::vector<QLineSeries*> bounds_;                     // every area bound (children of the chart)
    std::vector<QLineSeries*> markers_;
    QValueAxis* x_ = nullptr;
    QValueAxis* y_ = nullptr;
    double y_scale_ = 1;
    int rebuilds_ = 0;
};

class TimeChartWidget : public QChartView {
    Q_OBJECT
public:
    explicit TimeChartWidget(QWidget* parent = nullptr);
    void setData(TimeChartData data);
    const TimeChartData& data() const { return data_; }
    const TimeChartBuilder& builder() const { return builder_; }
    QSize sizeHint() const override { return {640, 360}; }
    QSize minimumSizeHint() const override { return {280, 180}; }
    int paintCount() const { return paints_; }
    // Keyboard cursor: the sample index the arrow keys reached (-1: none) and its text.
    int cursorIndex() const { return cursor_; }
    QString cursorText() const { return cursor_text_; }

signals:
    // The keyboard cursor's text (the same as the hover tooltip), for a status line.
    void cursorTextChanged(const QString& text);

protected:
    void paintEvent(QPaintEvent*) override;
    void showEvent(QShowEvent*) override;
    bool viewportEvent(QEvent*) override;
    void keyPressEvent(QKeyEvent*) override;
    void focusInEvent(QFocusEvent*) override;
    void focusOutEvent(QFocusEvent*) override;

private:
    void moveCursor(int index);
    std::vector<double> cursorXs() const;
    TimeChartData data_;
    TimeChartBuilder builder_;
    int paints_ = 0;
    bool stale_ = false;   // data arrived while hidden; drawn when shown
    int cursor_ = -1;
    QString cursor_text_;
};

// Predicted vs measured as Qt Charts stacked bars (a set per component, the fixed colours,
// the framework overhead hatched), the axis scaled to the run.
void build_summary_chart(QChart* chart, const ChartData& data, const ChartStyle& style);

class RunSummaryChartView : public QChartView {
    Q_OBJECT
public:
    explicit RunSummaryChartView(QWidget* parent = nullptr);
    void setData(ChartData data);
    const ChartData& data() const { return data_; }
    double axisMaxBytes() const { return axis_max_; }
    QSize minimumSizeHint() const override { return {280, 180}; }

protected:
    void paintEvent(QPaintEvent*) override;
    void showEvent(QShowEvent*) override;

private:
    void rebuild();
    ChartData data_;
    QString key_;
    bool stale_ = false;
    double axis_max_ = 0;
};

// Renders a chart the way the panel shows it, into a PNG/SVG/PDF (from the suffix). Needs a
// QApplication (Qt Charts are graphics widgets).
QImage render_time_chart(const TimeChartData& data, const ImageOptions& options);
bool export_time_chart(const TimeChartData& data, const QString& path, const ImageOptions& options,
                       QString* error = nullptr);
bool export_summary_chart(const ChartData& data, const QString& path, const ImageOptions& options,
                          QString* error = nullptr);

}  // namespace wingspan::ui
