#pragma once
// The memory chart in the window: a QChartView over a MemoryQChart, with hover tooltips (exact
// bytes and formula), keyboard focus (arrow keys walk bars and segments and announce the same
// text in a status line) and a visible focus ring.
#include <optional>

#include <QChartView>

#include "wingspan/ui/chart.hpp"

class QGraphicsRectItem;

namespace wingspan::ui {

class MemoryQChart;

class MemoryChartWidget : public QChartView {
    Q_OBJECT
public:
    explicit MemoryChartWidget(QWidget* parent = nullptr);
    void setData(ChartData data);
    const ChartData& data() const { return data_; }
    MemoryQChart* memoryChart() const { return chart_; }
    // Where bar i is drawn, and what lies at a point, in this widget's coordinates.
    QRectF barRect(int bar) const;
    std::optional<ChartHit> hit(const QPointF& pos) const;
    QSize sizeHint() const override { return {760, 480}; }
    QSize minimumSizeHint() const override { return {320, 240}; }
    int focusedBar() const { return focus_bar_; }
    int focusedSegment() const { return focus_segment_; }
    // The hover text of the focused bar or segment, plain (what the status line shows).
    QString focusText() const;

signals:
    void focusTextChanged(const QString& text);

protected:
    bool event(QEvent* e) override;
    bool viewportEvent(QEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void leaveEvent(QEvent* e) override;
    void keyPressEvent(QKeyEvent* e) override;
    void focusInEvent(QFocusEvent* e) override;
    void focusOutEvent(QFocusEvent* e) override;
    void changeEvent(QEvent* e) override;

private:
    bool showTooltipAt(const QPoint& pos, const QPoint& global);
    void updateFocusRing();
    void announce();
    ChartData data_;
    MemoryQChart* chart_ = nullptr;
    QGraphicsRectItem* ring_ = nullptr;
    int focus_bar_ = -1;
    int focus_segment_ = -1;   // -1: the bar as a whole
};

}  // namespace wingspan::ui
