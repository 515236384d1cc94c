#pragma once
// ChartData drawn on a Qt Charts plot: Qt Charts lays the plot out and draws the value axis and
// the dashed lines (usable ceilings, reference lines) as line series; the chart draws the rest
// itself: the stacked bars (one rectangle per component of each bar, the fixed Okabe-Ito
// colours, overhead hatched; StackedBars), their legend, and the totals, verdicts and captions
// placed over the plot. The window's chart view and every export (PNG, SVG, PDF, offscreen)
// draw this same QChart.
#include <optional>
#include <vector>

#include <QChart>

#include "wingspan/ui/chart.hpp"

class QPainter;

QT_BEGIN_NAMESPACE
class QBarCategoryAxis;
class QLineSeries;
class QAbstractAxis;
QT_END_NAMESPACE

namespace wingspan::ui {

class ChartText;
class StackedBars;

// The chart's label items and where its bars sit (charts/memory_qchart_decor.hpp, private to ui).
struct MemoryChartDecor;

class MemoryQChart : public QChart {
    Q_OBJECT
public:
    explicit MemoryQChart(QGraphicsItem* parent = nullptr);
    ~MemoryQChart() override;

    // Shows `data`: updates the series in place when only values changed (a slider moving),
    // rebuilds them otherwise.
    void setContent(const ChartData& data, const ChartStyle& style);
    const ChartData& content() const { return data_; }
    // On screen (default) labels are cached as pixmaps; files want real text and vectors.
    void setForScreen(bool on);
    const ChartAxis& valueAxis() const { return axis_; }

    // Where bar i is drawn, in chart coordinates (clipped to the plot when cut).
    QRectF barRect(int bar) const;
    // What lies at a point in chart coordinates.
    std::optional<ChartHit> hitAt(const QPointF& pos) const;
    // The rectangle of segment `segment` of bar `bar` (chart coordinates), for focus rings.
    QRectF segmentRect(int bar, int segment) const;
    // Where the chart drew layer `layer` of bar `bar` (chart coordinates, not clipped; empty when
    // the layer is): the layers stack from the bottom in kAllComponents order, then the
    // same-pool offload.
    QRectF drawnLayerRect(int bar, int layer) const;
    // Places the totals, verdicts and captions for the current plot area.
    void layoutDecorations();
    // Where bar i's total, verdict and dashed ceiling are drawn (chart coordinates; empty when
    // it has none), and the text its caption row (0 label, 1 sublabel, 2 note) shows.
    QRectF totalRect(int bar) const;
    QRectF verdictRect(int bar) const;
    QLineF ceilingLine(int bar) const;
    // Where reference line i's name is drawn (chart coordinates); empty when it is named in the
    // key under the legend instead (no free spot on its line), whose text keyText() gives.
    QRectF lineLabelRect(int line) const;
    bool lineInKey(int line) const;
    QString keyText() const;
    // Whether the bars' names are turned to read upwards (no room across a slot).
    bool captionsTurned() const;
    QString captionShown(int bar, int row) const;

private:
    using Decor = MemoryChartDecor;
    void rebuild();
    void updateValues();
    void applyAxis();
    void placeBars();
    void clearDecorations();
    void buildDecorations();
    void refreshDecorationTexts();
    void placeBarLabels(const QRectF& plot, double slot);
    // True when a line newly went to the key (the layout must run again).
    bool placeLineLabels(const QRectF& plot);
    QString lineKeyText() const;
    double axisValue(double bytes) const;   // bytes -> the value axis's units, clamped
    QPointF toChart(double category, double bytes) const;
    QString signature(const ChartData& d) const;

    ChartData data_;
    ChartStyle style_;
    ChartAxis axis_;
    QString signature_;
    std::vector<int> category_of_bar_;   // grouped charts leave a gap between groups
    // The bars' layers, bottom first (every component, then same-pool offload), and each
    // layer's value per bar in the value axis's units.
    std::vector<std::optional<Component>> layer_components_;
    std::vector<std::vector<double>> layer_values_;   // [layer][bar]
    StackedBars* bars_ = nullptr;
    // An undrawn series that carries both axes whatever the data (a chart may have no dashed
    // line): the series every position on the plot is mapped through.
    QLineSeries* frame_ = nullptr;
    std::vector<QLineSeries*> ceilings_;   // per bar (nullptr: no ceiling)
    std::vector<QLineSeries*> lines_;
    QBarCategoryAxis* x_ = nullptr;
    QAbstractAxis* y_ = nullptr;
    std::unique_ptr<Decor> decor_;
    bool for_screen_ = true;
};

// Draws `data` into `target` of any paint device (image, SVG, PDF) at `logical` size: the
// chart is laid out at the logical size and scaled to the target.
void render_memory_chart(QPainter& painter, const QRectF& target, const QSizeF& logical, const ChartData& data,
                         const ChartStyle& style);
// The texts that chart, laid out for a file at `logical` size, could not show whole (each in
// full): a file has no tooltip, so an export must have none.
QStringList cut_chart_texts(const QSizeF& logical, const ChartData& data, const ChartStyle& style);
// The pairs of texts that chart, laid out for a file at `logical` size, draws over each other
// ("24.3 GB | RTX 4090"): none, on a slide.
QStringList overlapping_chart_texts(const QSizeF& logical, const ChartData& data, const ChartStyle& style);
// The same for a chart already laid out (the window's).
QStringList overlapping_chart_texts(const MemoryQChart& chart);

}  // namespace wingspan::ui
