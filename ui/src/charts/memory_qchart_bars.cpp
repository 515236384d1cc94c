#include "charts/memory_qchart_bars.hpp"

#include <algorithm>
#include <cmath>

#include <QBarCategoryAxis>
#include <QLineSeries>
#include <QPainter>

#include "charts/memory_qchart_decor.hpp"
#include "wingspan/ui/memory_qchart.hpp"

namespace wingspan::ui {

namespace {

// Qt Charts stacks a chart's items by z: the plot's background 0, shades 1, gridlines 2, axes 3,
// series 4, legend 5 (enum ZValues, src/charts/chartpresenter_p.h, Qt 6.4.2). The bars go over
// the gridlines and the axis line, as a bar series did, and under the dashed lines' series.
constexpr double kBarsZ = 3.5;

}  // namespace

StackedBars::StackedBars(QGraphicsItem* chart) : QGraphicsItem(chart) {
    setZValue(kBarsZ);
    // A bar cut at the top of the axis is drawn past it and clipped to the plot, as the bars of
    // a series are (ItemClipsChildrenToShape on its item).
    setFlag(QGraphicsItem::ItemClipsToShape);
    // A picture only: tooltips, focus and hits are the chart's (MemoryQChart::hitAt).
    setAcceptedMouseButtons(Qt::NoButton);
}

void StackedBars::setLayers(std::vector<Layer> layers, int bars) {
    layers_ = std::move(layers);
    rects_.assign(layers_.size(), std::vector<QRectF>(size_t(std::max(0, bars))));
    update();
}

void StackedBars::setPlot(const QRectF& plot) {
    if (plot == plot_) return;
    if (plot.size() != plot_.size()) prepareGeometryChange();
    plot_ = plot;
    // At the plot's corner, as a series' item is: a pattern brush (the hatched overhead) is
    // aligned to it, so the hatching falls where it fell with Qt's bars.
    setPos(plot.topLeft());
}

void StackedBars::place(int layer, int bar, const QRectF& rect) {
    if (layer < 0 || layer >= int(rects_.size()) || bar < 0 || bar >= int(rects_[size_t(layer)].size())) return;
    QRectF& r = rects_[size_t(layer)][size_t(bar)];
    if (r == rect) return;
    r = rect;
    update();   // one repaint of the plot however many rectangles a step moves
}

QRectF StackedBars::placed(int layer, int bar) const {
    if (layer < 0 || layer >= int(rects_.size()) || bar < 0 || bar >= int(rects_[size_t(layer)].size())) return {};
    const QRectF& r = rects_[size_t(layer)][size_t(bar)];
    return r.isEmpty() ? QRectF() : r.translated(plot_.topLeft());
}

void StackedBars::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
    // Layer by layer, each bar's rectangle as QGraphicsRectItem paints one (pen, brush, rect;
    // Qt Charts' bars are such items): each layer's outline is drawn over the one below it. An
    // empty layer draws nothing and sets nothing (an SVG would define its unused pattern).
    for (size_t k = 0; k < layers_.size(); ++k) {
        bool styled = false;
        for (const QRectF& r : rects_[k]) {
            if (r.isEmpty()) continue;
            if (!styled) {
                painter->setPen(layers_[k].pen);
                painter->setBrush(layers_[k].brush);
                styled = true;
            }
            painter->drawRect(r);
        }
    }
}

// ------------------------------------------------------------ where MemoryQChart's bars are ----

// Each layer of each bar where a stacked bar series put it (StackedBarChartItem::calculateLayout,
// src/charts/barchart/vertical/stacked/stackedbarchartitem.cpp, Qt 6.4.2), so the picture is the
// one the window showed with Qt's bars: a layer spans from the sum of the layers under it (the
// axis's floor under the first) up by its own value, kBarWidth of a category wide. Cut bars run
// past the top of the plot and are clipped there.
void MemoryQChart::placeBars() {
    if (!frame_) return;
    const QRectF plot = plotArea();
    bars_->setPlot(plot);
    const double floor = axis_.log ? axis_.min_bytes / axis_.unit_bytes : 0.0;
    // In the plot's coordinates. Nothing (zero, or the log axis's floor) stands on the plot's
    // bottom edge: there Qt Charts computes the plot's height exactly, and so does this, where
    // mapToPosition's corner added and taken away again could put it a rounding apart (a bar's
    // outline one pixel row lower on the Sizes tab).
    auto y_of = [&](double category, double value) {
        return value <= 0 ? plot.height() : mapToPosition(QPointF(category, value), frame_).y() - plot.top();
    };
    for (size_t i = 0; i < data_.bars.size() && i < category_of_bar_.size(); ++i) {
        const double c = category_of_bar_[i];
        const double left = mapToPosition(QPointF(c - kBarWidth / 2, floor), frame_).x() - plot.left();
        const double right = mapToPosition(QPointF(c + kBarWidth / 2, floor), frame_).x() - plot.left();
        double below = 0, below_y = plot.height();
        for (size_t k = 0; k < layer_values_.size(); ++k) {
            below += layer_values_[k][i];
            const double top_y = y_of(c, below);
            bars_->place(int(k), int(i), QRectF(QPointF(left, top_y), QPointF(right, below_y)).normalized());
            below_y = top_y;   // the next layer stands on this one
        }
    }
}

QRectF MemoryQChart::drawnLayerRect(int bar, int layer) const { return bars_->placed(layer, bar); }

QRectF MemoryQChart::barRect(int bar) const {
    if (!frame_ || bar < 0 || bar >= int(data_.bars.size())) return {};
    const double c = category_of_bar_[size_t(bar)];
    const double base = axis_.log ? axis_.min_bytes : 0.0;
    const QPointF a = toChart(c - kBarWidth / 2, double(data_.bars[size_t(bar)].total));
    const QPointF b = toChart(c + kBarWidth / 2, base);
    return QRectF(a, b).normalized();
}

QRectF MemoryQChart::segmentRect(int bar, int segment) const {
    if (!frame_ || bar < 0 || bar >= int(data_.bars.size())) return {};
    const ChartBar& b = data_.bars[size_t(bar)];
    if (segment < 0 || segment >= int(b.segments.size())) return {};
    // Stacked in the layers' order, whatever order the segments are listed in.
    auto layer_index = [this](const ChartSegment& s) {
        for (size_t k = 0; k < layer_components_.size(); ++k)
            if (layer_components_[k] == s.component) return int(k);
        return int(layer_components_.size());
    };
    const int mine = layer_index(b.segments[size_t(segment)]);
    double below = axis_.log ? axis_.min_bytes : 0.0;
    for (size_t k = 0; k < b.segments.size(); ++k) {
        const int other = layer_index(b.segments[k]);
        if (other < mine || (other == mine && int(k) < segment)) below += double(b.segments[k].bytes);
    }
    const double c = category_of_bar_[size_t(bar)];
    const QPointF p0 = toChart(c - kBarWidth / 2, below + double(b.segments[size_t(segment)].bytes));
    const QPointF p1 = toChart(c + kBarWidth / 2, below);
    return QRectF(p0, p1).normalized();
}

std::optional<ChartHit> MemoryQChart::hitAt(const QPointF& pos) const {
    if (!frame_) return std::nullopt;
    const QRectF plot = plotArea();
    const double slot = plot.width() / std::max(1, x_->count());
    for (int i = 0; i < int(data_.bars.size()); ++i) {
        const ChartBar& b = data_.bars[size_t(i)];
        const double cx = toChart(category_of_bar_[size_t(i)], 0).x();
        if (std::fabs(pos.x() - cx) > slot / 2) continue;
        if (b.ceiling) {
            const double cyl = toChart(category_of_bar_[size_t(i)], double(*b.ceiling)).y();
            if (std::fabs(pos.y() - cyl) <= 4 && std::fabs(pos.x() - cx) <= slot * kCeilingHalf) return ChartHit{i, -1, true, false};
        }
        for (int s = 0; s < int(b.segments.size()); ++s)
            if (segmentRect(i, s).adjusted(0, -0.5, 0, 0.5).contains(pos)) return ChartHit{i, s, false, false};
        // The caption under the plot, the total and verdict above the bar.
        if (pos.y() > plot.bottom() || barRect(i).adjusted(-4, -2 * decor_->line_height - 6, 4, 0).contains(pos))
            return ChartHit{i, -1, false, true};
    }
    return std::nullopt;
}

}  // namespace wingspan::ui
