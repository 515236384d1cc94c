// The memory chart's labels placed so that none covers another (a bar's total and verdict, a
// reference line's name), and the chart laid out for a file (exports, their checks).
#include <algorithm>
#include <cmath>
#include <optional>

#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QPainter>

#include "charts/label_placement.hpp"
#include "charts/memory_qchart_decor.hpp"
#include "wingspan/ui/memory_qchart.hpp"

namespace wingspan::ui {

// Each bar's total and verdict as one stack over the bar, lifted above any dashed line it
// would sit on (its ceiling, a reference line) so no label is crossed by a line, and above a
// neighbour's stack where bars are narrower than their totals, so no text is drawn over
// another. Cut bars, and stacks that would rise past the plot's top, sit in rows at the top
// of the plot instead, each in the first row free.
void MemoryQChart::placeBarLabels(const QRectF& plot, double slot) {
    Decor& d = *decor_;
    std::vector<QRectF> stacks(data_.bars.size());
    double widest_half = 0;
    auto covers_neighbour = [&](size_t i, const QRectF& r) -> std::optional<QRectF> {
        const double cx = r.center().x();
        for (size_t j = i; j-- > 0;) {
            if (toChart(category_of_bar_[j], 0).x() < cx - r.width() / 2 - widest_half) break;
            if (stacks[j].intersects(r.adjusted(-1, -1, 1, 1))) return stacks[j];
        }
        return std::nullopt;
    };
    for (size_t i = 0; i < data_.bars.size(); ++i) {
        const ChartBar& b = data_.bars[i];
        const double cx = toChart(category_of_bar_[i], 0).x();
        ChartText* total = d.totals[i];
        ChartText* verdict = d.verdicts[i];
        if (verdict->isVisible()) verdict->setFitted(chart_verdict_text(b, axis_), std::max(slot - 4, 40.0), 2);
        const QRectF tb = total->boundingRect();
        const QRectF vb = verdict->isVisible() ? verdict->boundingRect() : QRectF();
        const double half = std::max(tb.width(), vb.width()) / 2;
        const double height = tb.height() + vb.height();
        auto stack_at = [&](double bottom) { return QRectF(cx - half, bottom - height, 2 * half, height); };
        double stack_bottom = toChart(category_of_bar_[i], double(b.total)).y() - 2;
        bool top_rows = !axis_.log && double(b.total) > axis_.max_bytes;
        if (!top_rows) {
            // Only the ceilings under the labels' width are looked at: bars sit left to right in
            // bar order, so they are the neighbours found walking out from this bar (looking at
            // every ceiling for every bar made long machine lists quadratic).
            size_t lo = i, hi = i;
            while (lo > 0 && toChart(category_of_bar_[lo - 1] + kCeilingHalf, 0).x() >= cx - half) --lo;
            while (hi + 1 < data_.bars.size() && toChart(category_of_bar_[hi + 1] - kCeilingHalf, 0).x() <= cx + half) ++hi;
            std::vector<double> lines;
            for (size_t j = lo; j <= hi; ++j) {
                const QLineF& c = d.ceilings[j];
                if (!c.isNull() && c.x2() >= cx - half && c.x1() <= cx + half) lines.push_back(c.y1());
            }
            for (const ChartLine& line : data_.lines) lines.push_back(toChart(0, double(line.bytes)).y());
            for (bool moved = true; moved;) {   // every move is upwards: it ends
                moved = false;
                const double stack_top = stack_bottom - height;
                for (double y : lines)
                    if (y + 2 >= stack_top && y - 2 <= stack_bottom) {
                        stack_bottom = y - 3;
                        moved = true;
                    }
                if (const auto hit = covers_neighbour(i, stack_at(stack_bottom))) {
                    stack_bottom = hit->top() - 1;
                    moved = true;
                }
            }
            top_rows = stack_bottom - height < plot.top() - 1;
        }
        if (top_rows) {
            stack_bottom = plot.top() + 2 + height;
            for (int row = 0; row < 8; ++row) {
                const auto hit = covers_neighbour(i, stack_at(stack_bottom));
                if (!hit) break;
                stack_bottom = hit->bottom() + 1 + height;
            }
            total->setPos(cx - tb.width() / 2, stack_bottom - height);   // the total first, the verdict under it
            verdict->setPos(cx - vb.width() / 2, stack_bottom - height + tb.height());
        } else {
            total->setPos(cx - tb.width() / 2, stack_bottom - tb.height());   // the verdict over the total
            verdict->setPos(cx - vb.width() / 2, stack_bottom - height);
        }
        stacks[i] = stack_at(stack_bottom);
        widest_half = std::max(widest_half, half);
    }
}

// Each reference line's name on its line, where it covers no total, verdict, bar or other
// name; a name with no such spot goes to the key under the legend (see Decor::in_key).
bool MemoryQChart::placeLineLabels(const QRectF& plot) {
    Decor& d = *decor_;
    LabelObstacles obstacles;
    for (size_t i = 0; i < data_.bars.size(); ++i) {
        for (const ChartText* t : {d.totals[i], d.verdicts[i]})
            if (t->isVisible() && !t->text().isEmpty()) obstacles.texts.push_back(t->mapRectToParent(t->boundingRect()));
        obstacles.bars.push_back(barRect(int(i)).intersected(plot));
        if (!d.ceilings[i].isNull()) obstacles.lines.push_back(d.ceilings[i]);
    }
    std::vector<double> line_y(data_.lines.size());
    for (size_t i = 0; i < data_.lines.size(); ++i) {
        line_y[i] = toChart(0, double(data_.lines[i].bytes)).y();
        obstacles.lines.push_back(QLineF(plot.left(), line_y[i], plot.right(), line_y[i]));
    }
    // The highest line first: it takes the right edge, the lines under it find room around it.
    std::vector<size_t> order(d.line_labels.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return line_y[a] < line_y[b]; });
    bool key_grew = false;
    for (size_t i : order) {
        ChartText* t = d.line_labels[i];
        t->setFitted(data_.lines[i].label, plot.width() / 2);
        LabelCover cover = LabelCover::Nothing;
        const QRectF spot = d.in_key[i] ? QRectF() : place_line_label(t->boundingRect().size(), line_y[i], plot, obstacles, &cover);
        if (!d.in_key[i] && cover >= LabelCover::Bar && !t->text().isEmpty()) {
            d.in_key[i] = true;
            key_grew = true;
        }
        t->setVisible(!d.in_key[i]);
        if (d.in_key[i]) continue;
        t->setPos(spot.topLeft());
        obstacles.texts.push_back(spot);
    }
    return key_grew;
}

QRectF MemoryQChart::lineLabelRect(int line) const {
    if (line < 0 || line >= int(decor_->line_labels.size()) || lineInKey(line)) return {};
    const ChartText* t = decor_->line_labels[size_t(line)];
    return t->mapRectToParent(t->boundingRect());
}

// The lines named in the key, highest first, each with its value in the axis's unit.
QString MemoryQChart::lineKeyText() const {
    const Decor& d = *decor_;
    std::vector<size_t> keyed;
    for (size_t i = 0; i < data_.lines.size() && i < d.in_key.size(); ++i)
        if (d.in_key[i]) keyed.push_back(i);
    if (keyed.empty()) return {};
    std::stable_sort(keyed.begin(), keyed.end(), [&](size_t a, size_t b) { return data_.lines[a].bytes > data_.lines[b].bytes; });
    QStringList names;
    for (size_t i : keyed)
        names << unbroken_amounts(data_.lines[i].label + " at " + axis_value_text(double(data_.lines[i].bytes), axis_));
    const bool some_on_plot = keyed.size() < data_.lines.size();
    return QString(some_on_plot ? "Other dashed lines" : "Dashed lines") + ", top to bottom: " + names.join(" · ");
}

bool MemoryQChart::lineInKey(int line) const {
    return line >= 0 && line < int(decor_->in_key.size()) && decor_->in_key[size_t(line)];
}

QString MemoryQChart::keyText() const { return decor_->line_key && decor_->line_key->isVisible() ? decor_->line_key->text() : QString(); }

bool MemoryQChart::captionsTurned() const { return decor_->captions_turned; }

QRectF MemoryQChart::totalRect(int bar) const {
    if (bar < 0 || bar >= int(decor_->totals.size())) return {};
    const ChartText* t = decor_->totals[size_t(bar)];
    return t->mapRectToParent(t->boundingRect());
}

QRectF MemoryQChart::verdictRect(int bar) const {
    if (bar < 0 || bar >= int(decor_->verdicts.size()) || !decor_->verdicts[size_t(bar)]->isVisible()) return {};
    const ChartText* t = decor_->verdicts[size_t(bar)];
    return t->mapRectToParent(t->boundingRect());
}

QLineF MemoryQChart::ceilingLine(int bar) const {
    return bar >= 0 && bar < int(decor_->ceilings.size()) ? decor_->ceilings[size_t(bar)] : QLineF();
}

QString MemoryQChart::captionShown(int bar, int row) const {
    if (bar < 0 || bar >= int(decor_->captions.size()) || row < 0 || row > 2) return {};
    return decor_->captions[size_t(bar)][size_t(row)]->text();
}

// ---------------------------------------------------------------------- offscreen ----

namespace {

// The chart laid out at `logical` size in `scene` as a file gets it.
MemoryQChart* lay_out_for_file(QGraphicsScene& scene, const QSizeF& logical, const ChartData& data, const ChartStyle& style) {
    auto* chart = new MemoryQChart;
    chart->setForScreen(false);
    scene.addItem(chart);
    const QRectF area(QPointF(0, 0), logical);
    scene.setSceneRect(area);
    chart->setGeometry(area);
    chart->setContent(data, style);
    // Until the plot stops moving: the first pass may move the legend beside the plot, a line
    // sent to the key takes room at the top; the second and later passes place the labels.
    for (int pass = 0; pass < 2 + int(data.lines.size()); ++pass) {
        const QRectF before = chart->plotArea();
        chart->layout()->invalidate();
        chart->layout()->activate();
        chart->layoutDecorations();
        if (pass >= 1 && chart->plotArea() == before) break;
    }
    return chart;
}

}  // namespace

void render_memory_chart(QPainter& painter, const QRectF& target, const QSizeF& logical, const ChartData& data,
                         const ChartStyle& style) {
    QGraphicsScene scene;
    lay_out_for_file(scene, logical, data, style);
    scene.render(&painter, target, QRectF(QPointF(0, 0), logical), Qt::IgnoreAspectRatio);
}

QStringList cut_chart_texts(const QSizeF& logical, const ChartData& data, const ChartStyle& style) {
    QGraphicsScene scene;
    lay_out_for_file(scene, logical, data, style);
    QStringList cut;
    for (QGraphicsItem* item : scene.items())
        if (auto* t = dynamic_cast<ChartText*>(item); t && t->isVisible() && !t->toolTip().isEmpty())
            cut << t->toolTip();   // a ChartText keeps the full text as tooltip only when it cut it
    return cut;
}

QStringList overlapping_chart_texts(const MemoryQChart& chart) {
    std::vector<QRectF> rects;
    QStringList texts;
    for (QGraphicsItem* item : chart.childItems())
        if (auto* t = dynamic_cast<ChartText*>(item); t && t->isVisible() && !t->text().isEmpty()) {
            rects.push_back(t->mapRectToParent(t->boundingRect()));
            texts << t->text();
        }
    QStringList pairs;
    for (const auto& [i, j] : overlapping_rects(rects)) pairs << texts[i] + " | " + texts[j];
    return pairs;
}

QStringList overlapping_chart_texts(const QSizeF& logical, const ChartData& data, const ChartStyle& style) {
    QGraphicsScene scene;
    return overlapping_chart_texts(*lay_out_for_file(scene, logical, data, style));
}

}  // namespace wingspan::ui
