#include "wingspan/ui/chart_view.hpp"

#include <algorithm>

#include <QFocusEvent>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QToolTip>

#include "wingspan/ui/memory_qchart.hpp"

namespace wingspan::ui {

MemoryChartWidget::MemoryChartWidget(QWidget* parent) : QChartView(parent) {
    chart_ = new MemoryQChart;
    setChart(chart_);
    // Bars are axis-aligned rectangles: no antialiasing needed, and painting stays cheap while
    // a slider moves. Text keeps its own antialiasing.
    setRenderHint(QPainter::Antialiasing, false);
    setOptimizationFlags(QGraphicsView::DontSavePainterState | QGraphicsView::DontAdjustForAntialiasing);
    if (scene()) scene()->setItemIndexMethod(QGraphicsScene::NoIndex);
    // The view fills every exposed pixel with its background brush (setData sets it), so the
    // viewport need not fill them first: one fill of the chart per slider step, not two.
    viewport()->setAttribute(Qt::WA_OpaquePaintEvent);
    viewport()->setAutoFillBackground(false);
    setFrameShape(QFrame::NoFrame);
    setMouseTracking(true);
    viewport()->setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    setRubberBand(QChartView::NoRubberBand);
    setAccessibleName("Memory chart");
    ring_ = new QGraphicsRectItem(chart_);
    ring_->setZValue(2000);
    ring_->setVisible(false);
    connect(chart_, &QChart::plotAreaChanged, this, [this] { updateFocusRing(); });
}

void MemoryChartWidget::setData(ChartData data) {
    data_ = std::move(data);
    const ChartStyle style = ChartStyle::from_palette(palette());
    chart_->setContent(data_, style);
    // Setting the view's brush repaints the whole view, even with the same colour: only when
    // it changes (a new theme), so a slider step repaints what moved.
    const QBrush background(style.background);
    if (backgroundBrush() != background) setBackgroundBrush(background);
    const int n = int(data_.bars.size());
    if (focus_bar_ >= n) focus_bar_ = n - 1;
    if (focus_bar_ >= 0 && focus_segment_ >= int(data_.bars[size_t(focus_bar_)].segments.size())) focus_segment_ = -1;
    QString desc = data_.title;
    for (const auto& b : data_.bars) desc += "; " + b.label + ": " + (b.verdict.isEmpty() ? QString::number(b.total) : b.verdict);
    setAccessibleDescription(desc);
    updateFocusRing();
}

QRectF MemoryChartWidget::barRect(int bar) const {
    const QRectF r = chart_->barRect(bar);
    if (r.isNull()) return r;
    return mapFromScene(chart_->mapToScene(r).boundingRect()).boundingRect();
}

std::optional<ChartHit> MemoryChartWidget::hit(const QPointF& pos) const {
    return chart_->hitAt(chart_->mapFromScene(mapToScene(pos.toPoint())));
}

QString MemoryChartWidget::focusText() const {
    if (focus_bar_ < 0) return {};
    ChartHit h{focus_bar_, focus_segment_, false, focus_segment_ < 0};
    return hit_text(data_, h, data_.unit);
}

bool MemoryChartWidget::showTooltipAt(const QPoint& pos, const QPoint& global) {
    if (auto h = hit(pos)) {
        QToolTip::showText(global, hit_tooltip(data_, *h, data_.unit), this);
        return true;
    }
    QToolTip::hideText();
    return false;
}

bool MemoryChartWidget::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(e);
        if (!showTooltipAt(he->pos(), he->globalPos())) e->ignore();
        return true;
    }
    return QChartView::event(e);
}

bool MemoryChartWidget::viewportEvent(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(e);
        if (!showTooltipAt(viewport()->mapTo(this, he->pos()), he->globalPos())) e->ignore();
        return true;
    }
    return QChartView::viewportEvent(e);
}

void MemoryChartWidget::mouseMoveEvent(QMouseEvent* e) {
    // Tooltips follow the pointer from segment to segment without waiting for a new delay.
    if (QToolTip::isVisible()) showTooltipAt(e->position().toPoint(), e->globalPosition().toPoint());
    QChartView::mouseMoveEvent(e);
}

void MemoryChartWidget::leaveEvent(QEvent* e) {
    QToolTip::hideText();
    QChartView::leaveEvent(e);
}

void MemoryChartWidget::keyPressEvent(QKeyEvent* e) {
    const int n = int(data_.bars.size());
    if (n == 0) return QChartView::keyPressEvent(e);
    const int segments = focus_bar_ >= 0 ? int(data_.bars[size_t(focus_bar_)].segments.size()) : 0;
    switch (e->key()) {
        case Qt::Key_Right: focus_bar_ = std::min(n - 1, focus_bar_ + 1); focus_segment_ = -1; break;
        case Qt::Key_Left: focus_bar_ = std::max(0, focus_bar_ - 1); focus_segment_ = -1; break;
        case Qt::Key_Home: focus_bar_ = 0; focus_segment_ = -1; break;
        case Qt::Key_End: focus_bar_ = n - 1; focus_segment_ = -1; break;
        // Up climbs the stack (bottom segment first), Down goes back towards the bar as a whole.
        case Qt::Key_Up: focus_segment_ = std::min(segments - 1, focus_segment_ + 1); break;
        case Qt::Key_Down: focus_segment_ = std::max(-1, focus_segment_ - 1); break;
        case Qt::Key_Escape: QToolTip::hideText(); return;
        default: return QChartView::keyPressEvent(e);
    }
    if (focus_bar_ < 0) focus_bar_ = 0;
    updateFocusRing();
    announce();
}

void MemoryChartWidget::announce() {
    if (focus_bar_ < 0) return;
    const QRectF r = focus_segment_ >= 0 ? mapFromScene(chart_->mapToScene(chart_->segmentRect(focus_bar_, focus_segment_)).boundingRect()).boundingRect()
                                         : barRect(focus_bar_);
    ChartHit h{focus_bar_, focus_segment_, false, focus_segment_ < 0};
    QToolTip::showText(mapToGlobal(r.center().toPoint()), hit_tooltip(data_, h, data_.unit), this);
    emit focusTextChanged(focusText());
}

void MemoryChartWidget::focusInEvent(QFocusEvent* e) {
    if (focus_bar_ < 0 && !data_.bars.empty()) focus_bar_ = 0;
    updateFocusRing();
    QChartView::focusInEvent(e);
    if (focus_bar_ >= 0) emit focusTextChanged(focusText());
}

void MemoryChartWidget::focusOutEvent(QFocusEvent* e) {
    updateFocusRing();
    QChartView::focusOutEvent(e);
}

void MemoryChartWidget::changeEvent(QEvent* e) {
    // A new theme: redraw in its colours.
    if (e->type() == QEvent::PaletteChange) setData(data_);
    QChartView::changeEvent(e);
}

void MemoryChartWidget::updateFocusRing() {
    const bool show = hasFocus() && focus_bar_ >= 0 && focus_bar_ < int(data_.bars.size());
    ring_->setVisible(show);
    if (!show) return;
    const QRectF r = focus_segment_ >= 0 ? chart_->segmentRect(focus_bar_, focus_segment_) : chart_->barRect(focus_bar_);
    ring_->setRect(r.adjusted(-4, -4, 4, 4));
    QPen pen(palette().color(QPalette::Highlight), 2.5, Qt::DotLine);
    ring_->setPen(pen);
}

}  // namespace wingspan::ui
