#include "wingspan/ui/memory_qchart.hpp"

#include <algorithm>
#include <cmath>

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QFontMetricsF>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPainter>
#include <QStaticText>
#include <QStackedBarSeries>
#include <QValueAxis>

namespace wingspan::ui {

namespace {

constexpr double kBarWidth = 0.62;      // of a category
constexpr double kCeilingHalf = 0.40;   // the dashed ceiling spans a bit more than the bar
constexpr double kDecorZ = 1000;

QFont font_px(const ChartStyle& st, double px, bool bold = false) {
    QFont f;
    if (!st.font_family.isEmpty()) f.setFamily(st.font_family);
    f.setPixelSize(std::max(6, int(std::lround(px * st.font_scale))));
    f.setBold(bold);
    return f;
}

bool dark_background(const ChartStyle& st) { return st.background.lightness() < 128; }

// The overhead is hatched: black lines on light backgrounds, light lines on dark ones.
QColor hatch_colour(const ChartStyle& st) { return dark_background(st) ? QColor("#d8d8d8") : QColor("#000000"); }

QBrush set_brush(const std::optional<Component>& c, const ChartStyle& st) {
    if (!c) return QBrush(st.muted, Qt::Dense5Pattern);
    if (*c == Component::FrameworkOverhead) return QBrush(hatch_colour(st), Qt::BDiagPattern);
    return QBrush(component_qcolor(*c));
}

}  // namespace

// A text label that lays its glyphs out once (QStaticText), not on every paint like
// ChartText: the chart repaints on every slider step.
class ChartText : public QGraphicsItem {
public:
    ChartText(const QString& text, const QFont& font, const QColor& colour, QGraphicsItem* parent)
        : QGraphicsItem(parent), font_(font), colour_(colour) {
        text_.setTextFormat(Qt::PlainText);
        text_.setPerformanceHint(QStaticText::AggressiveCaching);
        setText(text);
    }
    void setText(const QString& t) {
        if (t == text_.text()) return;
        prepareGeometryChange();
        text_.setText(t);
        text_.prepare(QTransform(), font_);
        size_ = QSizeF(QFontMetricsF(font_).horizontalAdvance(t), QFontMetricsF(font_).height());
    }
    QString text() const { return text_.text(); }
    // Shows `full`, elided to `width` with the full text as tooltip; remembers the last answer
    // so a repeated layout costs no text shaping.
    void setElided(const QString& full, double width) {
        width = std::max(8.0, std::floor(width));
        if (full == elided_full_ && width == elided_width_) return;
        elided_full_ = full;
        elided_width_ = width;
        const QString e = QFontMetricsF(font_).elidedText(full, Qt::ElideRight, width);
        setText(e);
        setToolTip(e == full ? QString() : full);
    }
    void setBrush(const QColor& c) {
        if (c == colour_) return;
        colour_ = c;
        update();
    }
    QFont font() const { return font_; }
    QRectF boundingRect() const override { return QRectF(QPointF(0, 0), size_); }
    void paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) override {
        p->setFont(font_);
        p->setPen(colour_);
        p->drawStaticText(QPointF(0, 0), text_);
    }

private:
    QStaticText text_;
    QFont font_;
    QColor colour_;
    QSizeF size_;
    QString elided_full_;
    double elided_width_ = -1;
};

struct MemoryQChart::Decor {
    ChartText* title = nullptr;
    ChartText* subtitle = nullptr;
    ChartText* notice = nullptr;   // hidden segments of cut bars
    ChartText* footnote = nullptr;
    ChartText* empty = nullptr;
    std::vector<ChartText*> totals, verdicts;
    std::vector<std::vector<ChartText*>> captions;   // per bar: label, sublabel, note
    std::vector<std::pair<ChartText*, std::pair<int, int>>> groups;   // label, first..last bar
    std::vector<ChartText*> line_labels;
    qsizetype hidden_count = 0;
    int caption_lines = 1;
    bool any_sublabel = false, any_note = false;
    double line_height = 14;
};

MemoryQChart::MemoryQChart(QGraphicsItem* parent) : QChart(parent), decor_(std::make_unique<Decor>()) {
    setAnimationOptions(QChart::NoAnimation);
    setBackgroundRoundness(0);
    setDropShadowEnabled(false);
    setPlotAreaBackgroundVisible(false);
    layout()->setContentsMargins(0, 0, 0, 0);
    legend()->setAlignment(Qt::AlignTop);
    legend()->setShowToolTips(true);
    connect(this, &QChart::plotAreaChanged, this, [this] { layoutDecorations(); });
    setForScreen(true);
}

MemoryQChart::~MemoryQChart() = default;

void MemoryQChart::setForScreen(bool on) {
    for_screen_ = on;
    legend()->setCacheMode(on ? QGraphicsItem::DeviceCoordinateCache : QGraphicsItem::NoCache);
}

QString MemoryQChart::signature(const ChartData& d) const {
    // What decides the series and axes; values alone change in place.
    QString s = chart_scale_id(d.scale) + "|" + style_.background.name() + style_.text.name() + "|" +
                QString::number(d.lines.size()) + "|" + (d.has_offloaded() ? "o" : "-") + "|" + (d.is_error ? "e" : "-");
    for (Component c : d.legend()) s += QString::number(int(c)) + ",";
    for (const auto& b : d.bars) s += "|" + b.id + "/" + b.group + (b.ceiling ? "c" : "");
    return s;
}

void MemoryQChart::setContent(const ChartData& data, const ChartStyle& style) {
    data_ = data;
    style_ = style;
    axis_ = chart_axis(data_);
    const QString sig = signature(data_);
    const bool hidden_changed = hidden_segments(data_, axis_).size() != decor_->hidden_count;
    if (sig != signature_ || !bars_) {
        signature_ = sig;
        rebuild();
        clearDecorations();
        buildDecorations();
    } else {
        updateValues();
        if (hidden_changed) {
            clearDecorations();
            buildDecorations();
        } else {
            refreshDecorationTexts();
        }
    }
    layoutDecorations();
}

double MemoryQChart::axisValue(double bytes) const {
    const double v = std::clamp(bytes, axis_.min_bytes, axis_.max_bytes) / axis_.unit_bytes;
    return v;
}

QPointF MemoryQChart::toChart(double category, double bytes) const {
    if (!bars_) return {};
    return const_cast<MemoryQChart*>(this)->mapToPosition(QPointF(category, axisValue(bytes)), bars_);
}

void MemoryQChart::rebuild() {
    removeAllSeries();
    for (QAbstractAxis* a : axes()) {
        removeAxis(a);
        delete a;
    }
    bars_ = nullptr;
    x_ = nullptr;
    y_ = nullptr;
    sets_.clear();
    ceilings_.clear();
    lines_.clear();
    set_components_.clear();
    category_of_bar_.clear();

    setBackgroundBrush(style_.background);
    setBackgroundPen(Qt::NoPen);
    legend()->setLabelColor(style_.text);
    legend()->setFont(font_px(style_, 12));
    legend()->setVisible(!data_.bars.empty());

    // Categories: a gap between groups so grouped bars read as groups.
    QStringList categories;
    for (size_t i = 0; i < data_.bars.size(); ++i) {
        if (i > 0 && !data_.bars[i].group.isEmpty() && data_.bars[i].group != data_.bars[i - 1].group)
            categories << QString::number(categories.size());
        category_of_bar_.push_back(int(categories.size()));
        categories << QString::number(categories.size());
    }
    if (categories.isEmpty()) categories << "0";

    bars_ = new QStackedBarSeries;
    bars_->setBarWidth(kBarWidth);
    for (Component c : data_.legend()) set_components_.push_back(c);
    if (data_.has_offloaded()) set_components_.push_back(std::nullopt);
    for (const auto& c : set_components_) {
        auto* set = new QBarSet(c ? QString::fromStdString(std::string(component_label(*c))) : "Offloaded state (same pool)");
        set->setBrush(set_brush(c, style_));
        set->setPen(c && *c == Component::FrameworkOverhead ? QPen(hatch_colour(style_), 1) : QPen(style_.background, 0.8));
        set->setLabelColor(style_.text);
        sets_.push_back(set);
        bars_->append(set);
    }
    addSeries(bars_);

    x_ = new QBarCategoryAxis;
    x_->append(categories);
    x_->setLabelsVisible(false);   // captions are drawn under the plot, several lines each
    x_->setGridLineVisible(false);
    x_->setLinePenColor(style_.grid);
    addAxis(x_, Qt::AlignBottom);
    bars_->attachAxis(x_);

    const QString unit_title = axis_.unit_suffix.trimmed() + (axis_.unit_suffix.contains("i") ? " (2ⁿ bytes)" : " (10ⁿ bytes)");
    if (axis_.log) {
        auto* y = new QLogValueAxis;
        y->setBase(10);
        y->setLabelFormat("%g");
        y->setMinorTickCount(-1);
        y_ = y;
    } else {
        auto* y = new QValueAxis;
        y->setTickType(QValueAxis::TicksDynamic);
        y->setTickAnchor(0);
        y_ = y;
    }
    y_->setTitleText(unit_title.section(' ', 0, 0) + (axis_.log ? ", log scale" : ""));
    y_->setTitleBrush(style_.muted);
    y_->setTitleFont(font_px(style_, 11));
    y_->setLabelsBrush(style_.muted);
    y_->setLabelsFont(font_px(style_, 11));
    y_->setGridLineColor(style_.grid);
    y_->setLinePenColor(style_.grid);
    addAxis(y_, Qt::AlignLeft);
    bars_->attachAxis(y_);

    QPen ceiling_pen(style_.ceiling, 2, Qt::DashLine);
    ceiling_pen.setCapStyle(Qt::FlatCap);
    bool first_ceiling = true;
    for (size_t i = 0; i < data_.bars.size(); ++i) {
        if (!data_.bars[i].ceiling) {
            ceilings_.push_back(nullptr);
            continue;
        }
        auto* line = new QLineSeries;
        line->setName("Usable ceiling");
        line->setPen(ceiling_pen);
        line->append(0, 0);
        line->append(0, 0);
        addSeries(line);
        line->attachAxis(x_);
        line->attachAxis(y_);
        for (QLegendMarker* m : legend()->markers(line)) m->setVisible(first_ceiling);
        first_ceiling = false;
        ceilings_.push_back(line);
    }
    QPen line_pen(style_.muted, 1.5, Qt::DashLine);
    for (size_t i = 0; i < data_.lines.size(); ++i) {
        auto* line = new QLineSeries;
        line->setName(data_.lines[i].label);
        line->setPen(line_pen);
        line->append(0, 0);
        line->append(0, 0);
        addSeries(line);
        line->attachAxis(x_);
        line->attachAxis(y_);
        for (QLegendMarker* m : legend()->markers(line)) m->setVisible(false);   // labelled at the line's end
        lines_.push_back(line);
    }
    updateValues();
}

void MemoryQChart::applyAxis() {
    if (!y_) return;
    const double lo = axis_.log ? axis_.min_bytes / axis_.unit_bytes : 0.0;
    const double hi = axis_.max_bytes / axis_.unit_bytes;
    if (auto* y = qobject_cast<QValueAxis*>(y_)) {
        // About six gridlines at round numbers.
        const double raw = hi / 6;
        const double mag = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-12))));
        const double f = raw / mag;
        const double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * mag;
        y->setRange(lo, hi);
        y->setTickInterval(step);
        y->setLabelFormat(step >= 1 ? "%.0f" : step >= 0.1 ? "%.1f" : "%.2f");
    } else if (auto* y = qobject_cast<QLogValueAxis*>(y_)) {
        y->setRange(lo, hi);
    }
}

void MemoryQChart::updateValues() {
    applyAxis();
    const double floor_value = axis_.log ? axis_.min_bytes / axis_.unit_bytes : 0.0;
    // Stacked on a log axis, an empty set still counts from the axis floor: give it nothing.
    for (size_t s = 0; s < sets_.size(); ++s) {
        std::vector<double> values(size_t(x_->count()), 0.0);
        for (size_t i = 0; i < data_.bars.size(); ++i) {
            double bytes = 0;
            for (const auto& seg : data_.bars[i].segments)
                if (seg.component == set_components_[s]) bytes += double(seg.bytes);
            values[size_t(category_of_bar_[i])] = bytes / axis_.unit_bytes;
        }
        bool same = sets_[s]->count() == int(values.size());
        for (int k = 0; same && k < int(values.size()); ++k) same = sets_[s]->at(k) == values[size_t(k)];
        if (same) continue;
        // Two signals per set (not one per bar): the series lays its bars out once for each.
        sets_[s]->remove(0, sets_[s]->count());
        sets_[s]->append(QList<qreal>(values.begin(), values.end()));
    }
    (void)floor_value;
    for (size_t i = 0; i < ceilings_.size(); ++i) {
        if (!ceilings_[i]) continue;
        const double c = double(category_of_bar_[i]);
        const double v = axisValue(double(*data_.bars[i].ceiling));
        ceilings_[i]->replace(QList<QPointF>{{c - kCeilingHalf, v}, {c + kCeilingHalf, v}});
    }
    const double last = double(x_->count()) - 0.5;
    for (size_t i = 0; i < lines_.size(); ++i) {
        const double v = axisValue(double(data_.lines[i].bytes));
        lines_[i]->replace(QList<QPointF>{{-0.5, v}, {last, v}});
    }
}

// --------------------------------------------------------------------- decorations ----

void MemoryQChart::clearDecorations() {
    auto drop = [](ChartText*& t) {
        delete t;
        t = nullptr;
    };
    drop(decor_->title);
    drop(decor_->subtitle);
    drop(decor_->notice);
    drop(decor_->footnote);
    drop(decor_->empty);
    for (auto* t : decor_->totals) delete t;
    for (auto* t : decor_->verdicts) delete t;
    for (auto& c : decor_->captions)
        for (auto* t : c) delete t;
    for (auto& g : decor_->groups) delete g.first;
    for (auto* t : decor_->line_labels) delete t;
    decor_->totals.clear();
    decor_->verdicts.clear();
    decor_->captions.clear();
    decor_->groups.clear();
    decor_->line_labels.clear();
}

void MemoryQChart::buildDecorations() {
    Decor& d = *decor_;
    auto text = [this](const QString& s, const QFont& f, const QColor& c) {
        auto* t = new ChartText(s, f, c, this);
        t->setZValue(kDecorZ);
        // On screen the labels are cached pixmaps (cheap repaints while a slider moves); files
        // keep real text and vectors.
        if (for_screen_) t->setCacheMode(QGraphicsItem::DeviceCoordinateCache);
        return t;
    };
    const QFont small = font_px(style_, 11), normal = font_px(style_, 12), bold = font_px(style_, 12, true);
    d.line_height = QFontMetricsF(normal).height();
    d.title = text(data_.title, font_px(style_, 15, true), style_.text);
    d.subtitle = text(data_.subtitle, small, style_.muted);
    const QStringList hidden = hidden_segments(data_, axis_);
    d.hidden_count = hidden.size();
    d.notice = text(hidden.isEmpty() ? QString()
                                     : "Cut at the top (View ▸ Scale shows them whole): " + hidden.join("; "),
                    small, style_.tight);
    d.footnote = text(data_.footnote, small, style_.muted);
    if (data_.bars.empty() && !data_.empty_message.isEmpty())
        d.empty = text(data_.empty_message, font_px(style_, 14), data_.is_error ? style_.no : style_.muted);

    bool any_sub = false, any_note = false;
    for (const auto& b : data_.bars) {
        any_sub |= !b.sublabel.isEmpty();
        any_note |= !b.note.isEmpty();
    }
    d.caption_lines = 1 + (any_sub ? 1 : 0) + (any_note ? 1 : 0);
    d.any_sublabel = any_sub;
    d.any_note = any_note;
    for (const auto& b : data_.bars) {
        const bool cut = !axis_.log && double(b.total) > axis_.max_bytes;
        d.totals.push_back(text((cut ? "↑ " : "") + axis_value_text(double(b.total), axis_), bold, style_.text));
        ChartText* verdict = nullptr;
        if (!b.verdict.isEmpty() && b.fit) verdict = text(chart_verdict_text(b, axis_), small, fit_qcolor(style_, *b.fit));
        d.verdicts.push_back(verdict);
        std::vector<ChartText*> lines{text(b.label, bold, style_.text)};
        if (any_sub) lines.push_back(text(b.sublabel, small, style_.muted));
        if (any_note) lines.push_back(text(b.note, small, style_.tight));
        d.captions.push_back(lines);
    }
    for (size_t i = 0; i < data_.bars.size(); ++i) {
        const QString& g = data_.bars[i].group;
        if (g.isEmpty()) continue;
        if (d.groups.empty() || data_.bars[size_t(d.groups.back().second.second)].group != g)
            d.groups.push_back({text(g, bold, style_.text), {int(i), int(i)}});
        else
            d.groups.back().second.second = int(i);
    }
    for (const auto& l : data_.lines) d.line_labels.push_back(text(l.label, small, style_.muted));

    // Room for the title block above and the captions below the plot.
    const double top = 10 + QFontMetricsF(font_px(style_, 15, true)).height() + QFontMetricsF(small).height() * 1.2 +
                       (hidden.isEmpty() ? 0 : QFontMetricsF(small).height() * 1.2);
    const double bottom = 8 + d.line_height * (d.caption_lines + (d.groups.empty() ? 0 : 1.2)) +
                          QFontMetricsF(small).height() * 1.5;
    setMargins(QMargins(10, int(std::ceil(top)), 16, int(std::ceil(bottom))));
}

// Same bars, new numbers (a slider moved): new texts in the items already placed.
void MemoryQChart::refreshDecorationTexts() {
    Decor& d = *decor_;
    if (!d.title) return;
    for (size_t i = 0; i < data_.bars.size() && i < d.totals.size(); ++i) {
        const ChartBar& b = data_.bars[i];
        const bool cut = !axis_.log && double(b.total) > axis_.max_bytes;
        d.totals[i]->setText((cut ? "↑ " : "") + axis_value_text(double(b.total), axis_));
        if (ChartText* v = d.verdicts[i]) {
            if (b.fit) v->setBrush(fit_qcolor(style_, *b.fit));
        }
    }
}

void MemoryQChart::layoutDecorations() {
    Decor& d = *decor_;
    if (!d.title) return;
    const QRectF r = rect();
    // The legend's names in full: beside the plot when the chart is wide, above it otherwise
    // (elided there, with the full name as tooltip).
    const Qt::Alignment legend_side = r.width() >= 1100 ? Qt::AlignRight : Qt::AlignTop;
    if (legend()->alignment() != legend_side) legend()->setAlignment(legend_side);
    const QRectF plot = plotArea();
    auto elide = [](ChartText* t, const QString& full, double width) { t->setElided(full, width); };
    double y = r.top() + 6;
    elide(d.title, data_.title, r.width() - 24);
    d.title->setPos(r.left() + 12, y);
    y += d.title->boundingRect().height();
    elide(d.subtitle, data_.subtitle, r.width() - 24);
    d.subtitle->setPos(r.left() + 12, y);
    y += d.subtitle->boundingRect().height() * 1.15;
    if (!hidden_segments(data_, axis_).isEmpty()) {
        const QString full = "Cut at the top (View ▸ Scale shows them whole): " + hidden_segments(data_, axis_).join("; ");
        elide(d.notice, full, r.width() - 24);
        d.notice->setPos(r.left() + 12, y);
    }
    elide(d.footnote, data_.footnote, r.width() - 24);
    d.footnote->setPos(r.left() + 12, r.bottom() - d.footnote->boundingRect().height() - 4);
    if (d.empty) {
        const QRectF b = d.empty->boundingRect();
        d.empty->setPos(r.center().x() - b.width() / 2, r.center().y() - b.height() / 2);
    }
    if (!bars_ || data_.bars.empty()) return;

    const double slot = plot.width() / std::max(1, x_->count());
    int cut_run = 0;   // neighbouring cut bars stagger their totals so they never overlap
    for (size_t i = 0; i < data_.bars.size(); ++i) {
        const ChartBar& b = data_.bars[i];
        const double cx = toChart(category_of_bar_[i], 0).x();
        const bool cut = !axis_.log && double(b.total) > axis_.max_bytes;
        cut_run = cut ? cut_run + 1 : 0;
        double top_y = cut ? plot.top() + 2 + double((cut_run + 1) % 2) * d.line_height * 1.1
                           : toChart(category_of_bar_[i], double(b.total)).y();
        if (b.ceiling && !cut) top_y = std::min(top_y, toChart(category_of_bar_[i], double(*b.ceiling)).y());
        ChartText* total = d.totals[i];
        const QRectF tb = total->boundingRect();
        double ty = cut ? top_y : top_y - tb.height() - 2;
        total->setPos(cx - tb.width() / 2, ty);
        if (ChartText* v = d.verdicts[i]) {
            elide(v, chart_verdict_text(b, axis_), std::max(slot - 4, 40.0));
            const QRectF vb = v->boundingRect();
            v->setPos(cx - vb.width() / 2, cut ? ty + tb.height() : ty - vb.height());
        }
        double cy = plot.bottom() + 4;
        QStringList texts{b.label};
        if (d.any_sublabel) texts << b.sublabel;
        if (d.any_note) texts << b.note;
        for (size_t k = 0; k < d.captions[i].size(); ++k) {
            ChartText* t = d.captions[i][k];
            elide(t, texts.value(int(k)), slot - 4);
            const QRectF cb = t->boundingRect();
            t->setPos(cx - cb.width() / 2, cy);
            cy += d.line_height;
        }
    }
    for (auto& [label, span] : d.groups) {
        const double x0 = toChart(category_of_bar_[size_t(span.first)], 0).x();
        const double x1 = toChart(category_of_bar_[size_t(span.second)], 0).x();
        elide(label, data_.bars[size_t(span.first)].group, x1 - x0 + slot - 4);
        const QRectF gb = label->boundingRect();
        label->setPos((x0 + x1) / 2 - gb.width() / 2, plot.bottom() + 6 + d.line_height * d.caption_lines);
    }
    for (size_t i = 0; i < d.line_labels.size(); ++i) {
        ChartText* t = d.line_labels[i];
        const QRectF lb = t->boundingRect();
        const double ly = toChart(0, double(data_.lines[i].bytes)).y();
        // Stagger labels of nearby lines so they stay readable.
        t->setPos(plot.right() - lb.width() - 4 - double(i % 2) * (lb.width() + 10), ly - lb.height());
    }
}

// ------------------------------------------------------------------------- geometry ----

QRectF MemoryQChart::barRect(int bar) const {
    if (!bars_ || bar < 0 || bar >= int(data_.bars.size())) return {};
    const double c = category_of_bar_[size_t(bar)];
    const double base = axis_.log ? axis_.min_bytes : 0.0;
    const QPointF a = toChart(c - kBarWidth / 2, double(data_.bars[size_t(bar)].total));
    const QPointF b = toChart(c + kBarWidth / 2, base);
    return QRectF(a, b).normalized();
}

QRectF MemoryQChart::segmentRect(int bar, int segment) const {
    if (!bars_ || bar < 0 || bar >= int(data_.bars.size())) return {};
    const ChartBar& b = data_.bars[size_t(bar)];
    if (segment < 0 || segment >= int(b.segments.size())) return {};
    // Stacked in the series' set order, whatever order the segments are listed in.
    auto set_index = [this](const ChartSegment& s) {
        for (size_t k = 0; k < set_components_.size(); ++k)
            if (set_components_[k] == s.component) return int(k);
        return int(set_components_.size());
    };
    const int mine = set_index(b.segments[size_t(segment)]);
    double below = axis_.log ? axis_.min_bytes : 0.0;
    for (size_t k = 0; k < b.segments.size(); ++k) {
        const int other = set_index(b.segments[k]);
        if (other < mine || (other == mine && int(k) < segment)) below += double(b.segments[k].bytes);
    }
    const double c = category_of_bar_[size_t(bar)];
    const QPointF p0 = toChart(c - kBarWidth / 2, below + double(b.segments[size_t(segment)].bytes));
    const QPointF p1 = toChart(c + kBarWidth / 2, below);
    return QRectF(p0, p1).normalized();
}

std::optional<ChartHit> MemoryQChart::hitAt(const QPointF& pos) const {
    if (!bars_) return std::nullopt;
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

// ---------------------------------------------------------------------- offscreen ----

void render_memory_chart(QPainter& painter, const QRectF& target, const QSizeF& logical, const ChartData& data,
                         const ChartStyle& style) {
    QGraphicsScene scene;
    auto* chart = new MemoryQChart;
    chart->setForScreen(false);
    scene.addItem(chart);
    const QRectF area(QPointF(0, 0), logical);
    scene.setSceneRect(area);
    chart->setGeometry(area);
    chart->setContent(data, style);
    // Twice: the first pass may move the legend beside the plot, the second places the labels.
    for (int pass = 0; pass < 2; ++pass) {
        chart->layout()->invalidate();
        chart->layout()->activate();
        chart->layoutDecorations();
    }
    scene.render(&painter, target, area, Qt::IgnoreAspectRatio);
}

}  // namespace wingspan::ui
