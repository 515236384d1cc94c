#pragma once
// The memory chart's stacked bars, drawn by the chart itself: a rectangle per layer (a component,
// in stacking order) of each bar, painted by one item that clips them to the plot. Qt Charts only
// lays out the plot, draws the value axis and the dashed lines; MemoryQChart says where each
// rectangle goes (QChart::mapToPosition). A Qt Charts bar series lays every bar out again on each
// value signal of each set, and quieting those signals meant reaching Qt's private objects; here
// a slider step sets the rectangles and repaints the plot once. Private to ui/src.
#include <vector>

#include <QBrush>
#include <QGraphicsItem>
#include <QPen>

namespace wingspan::ui {

class StackedBars : public QGraphicsItem {
public:
    struct Layer {
        QBrush brush;
        QPen pen;
    };
    explicit StackedBars(QGraphicsItem* chart);

    // The layers and how many bars, once per set of bars (a slider step keeps them).
    void setLayers(std::vector<Layer> layers, int bars);
    // The plot the bars stand in, in the chart's coordinates; they are clipped to it.
    void setPlot(const QRectF& plot);
    // Where layer `layer` of bar `bar` is drawn, in the plot's coordinates (from its top left
    // corner); empty: not drawn.
    void place(int layer, int bar, const QRectF& rect);
    // The same in the chart's coordinates (empty when not drawn).
    QRectF placed(int layer, int bar) const;

    QRectF boundingRect() const override { return QRectF(QPointF(0, 0), plot_.size()); }
    void paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) override;

private:
    QRectF plot_;
    std::vector<Layer> layers_;
    std::vector<std::vector<QRectF>> rects_;   // [layer][bar], in the plot's coordinates
};

}  // namespace wingspan::ui
