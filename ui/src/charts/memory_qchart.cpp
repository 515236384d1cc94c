#include "wingspan/ui/memory_qchart.hpp"

#include "charts/chart_text.hpp"
#include "charts/memory_qchart_bars.hpp"
#include "charts/memory_qchart_decor.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <QBarCategoryAxis>
#include <QFontMetricsF>
#include <QGraphicsLayout>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPainter>
#include <QRegularExpression>
#include <QValueAxis>

namespace wingspan::ui {

namespace {

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

QBrush layer_brush(const std::optional<Component>& c, const ChartStyle& st) {
    if (!c) return QBrush(st.muted, Qt::Dense5Pattern);
    if (*c == Component::FrameworkOverhead) return QBrush(hatch_colour(st), Qt::BDiagPattern);
    return QBrush(component_qcolor(*c));
}

// A layer's outline: the background's colour between layers, the hatch's around the overhead.
QPen layer_pen(const std::optional<Component>& c, const ChartStyle& st) {
    return c && *c == Component::FrameworkOverhead ? QPen(hatch_colour(st), 1) : QPen(st.background, 0.8);
}

QString layer_name(const std::optional<Component>& c) {
    return c ? QString::fromStdString(std::string(component_label(*c))) : "Offloaded state (same pool)";
}


}  // namespace



MemoryQChart::MemoryQChart(QGraphicsItem* parent) : QChart(parent), decor_(std::make_unique<Decor>()) {
    bars_ = new StackedBars(this);
    setAnimationOptions(QChart::NoAnimation);
    setBackgroundRoundness(0);
    setDropShadowEnabled(false);
    setPlotAreaBackgroundVisible(false);
    layout()->setContentsMargins(0, 0, 0, 0);
    // Our own legend flows over as many rows as it needs, names in full (Qt's elides them).
    legend()->setVisible(false);
    connect(this, &QChart::plotAreaChanged, this, [this] { layoutDecorations(); });
    setForScreen(true);
}

MemoryQChart::~MemoryQChart() = default;

void MemoryQChart::setForScreen(bool on) {
    for_screen_ = on;
    // On screen the view paints the background already (MemoryChartWidget): filling it twice
    // per slider step is a whole-chart fill for nothing. Files need the chart's own.
    setBackgroundVisible(!on);
}

QString MemoryQChart::signature(const ChartData& d) const {
    // What decides the series, axes and label items; values and texts change in place (a
    // slider moving), so the chart's items are made once per set of bars.
    QString s = chart_scale_id(d.scale) + "|" + style_.background.name() + style_.text.name() + "|" +
                QString::number(d.lines.size()) + "|" + (d.is_error ? "e" : "-");
    for (const auto& b : d.bars) s += "|" + b.id + "/" + b.group + (b.ceiling ? "c" : "");
    return s;
}

void MemoryQChart::setContent(const ChartData& data, const ChartStyle& style) {
    // The lines named in the key stay there while the lines are the same (a slider moving the
    // bars keeps the key still); new lines are placed afresh.
    const bool same_lines = data.lines.size() == data_.lines.size() &&
                            std::equal(data.lines.begin(), data.lines.end(), data_.lines.begin(), [](const ChartLine& a, const ChartLine& b) {
                                return a.label == b.label && a.bytes == b.bytes;
                            });
    data_ = data;
    style_ = style;
    axis_ = chart_axis(data_);
    if (!same_lines) decor_->in_key.assign(data_.lines.size(), false);
    const QString sig = signature(data_);
    if (sig != signature_ || !frame_) {
        signature_ = sig;
        rebuild();
        clearDecorations();
        buildDecorations();
    } else {
        updateValues();
    }
    refreshDecorationTexts();
    layoutDecorations();
    // A new axis range (or new margins) leaves the chart's layout invalid with a request
    // posted; laid out now rather than after the view's first paint, the step paints once.
    if (QGraphicsLayout* l = layout(); l && !l->isActivated()) l->activate();
}

double MemoryQChart::axisValue(double bytes) const {
    const double v = std::clamp(bytes, axis_.min_bytes, axis_.max_bytes) / axis_.unit_bytes;
    return v;
}

QPointF MemoryQChart::toChart(double category, double bytes) const {
    if (!frame_) return {};
    return const_cast<MemoryQChart*>(this)->mapToPosition(QPointF(category, axisValue(bytes)), frame_);
}

void MemoryQChart::rebuild() {
    removeAllSeries();
    for (QAbstractAxis* a : axes()) {
        removeAxis(a);
        delete a;
    }
    frame_ = nullptr;
    x_ = nullptr;
    y_ = nullptr;
    ceilings_.clear();
    lines_.clear();
    layer_components_.clear();
    category_of_bar_.clear();

    setBackgroundBrush(style_.background);
    setBackgroundPen(Qt::NoPen);

    // Categories: a gap between groups so grouped bars read as groups.
    QStringList categories;
    for (size_t i = 0; i < data_.bars.size(); ++i) {
        if (i > 0 && !data_.bars[i].group.isEmpty() && data_.bars[i].group != data_.bars[i - 1].group)
            categories << QString::number(categories.size());
        category_of_bar_.push_back(int(categories.size()));
        categories << QString::number(categories.size());
    }
    if (categories.isEmpty()) categories << "0";

    // A layer for every component, present or not: a component appearing as a slider moves (an
    // offload, a master copy) then changes values, not the items. Empty layers draw nothing.
    for (Component c : kAllComponents) layer_components_.push_back(c);
    layer_components_.push_back(std::nullopt);
    std::vector<StackedBars::Layer> layers;
    for (const auto& c : layer_components_) layers.push_back({layer_brush(c, style_), layer_pen(c, style_)});
    bars_->setLayers(std::move(layers), int(data_.bars.size()));
    frame_ = new QLineSeries;
    addSeries(frame_);
    frame_->setVisible(false);

    x_ = new QBarCategoryAxis;
    x_->append(categories);
    // The category axis only places the bars: captions are drawn under the plot, several lines
    // each, and the value axis's zero gridline is the baseline. Hidden, Qt Charts neither lays
    // out nor paints its labels and ticks on every slider step.
    x_->setVisible(false);
    addAxis(x_, Qt::AlignBottom);
    frame_->attachAxis(x_);

    if (axis_.log) {
        auto* y = new QLogValueAxis;
        y->setBase(10);
        y->setLabelFormat("%g");
        y->setMinorTickCount(-1);
        y_ = y;
    } else {
        y_ = new QValueAxis;
    }
    y_->setTitleBrush(style_.muted);
    y_->setTitleFont(font_px(style_, 11));
    y_->setLabelsBrush(style_.muted);
    y_->setLabelsFont(font_px(style_, 11));
    // Cosmetic (zero-width) pens: a line item with a wide pen computes a stroked outline for its
    // bounding box on every paint.
    y_->setGridLinePen(QPen(style_.grid, 0));
    y_->setLinePen(QPen(style_.grid, 0));
    addAxis(y_, Qt::AlignLeft);
    frame_->attachAxis(y_);

    QPen ceiling_pen(style_.ceiling, 2, Qt::DashLine);
    ceiling_pen.setCapStyle(Qt::FlatCap);
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
        lines_.push_back(line);
    }
    updateValues();
}

void MemoryQChart::applyAxis() {
    if (!y_) return;
    const double lo = axis_.log ? axis_.min_bytes / axis_.unit_bytes : 0.0;
    const double hi = axis_.max_bytes / axis_.unit_bytes;
    // The unit follows the values (a slider can take the plan from GB to TB without a new set
    // of bars, so the title is set here, not where the axis is made).
    if (y_->titleText() != axis_.unitTitle()) y_->setTitleText(axis_.unitTitle());
    if (auto* y = qobject_cast<QValueAxis*>(y_)) {
        apply_round_ticks(y, axis_.ticks);
    } else if (auto* y = qobject_cast<QLogValueAxis*>(y_)) {
        if (y->min() != lo || y->max() != hi) y->setRange(lo, hi);
    }
}

void MemoryQChart::updateValues() {
    applyAxis();
    // Where the layers stand is placeBars' (it needs the plot, laid out after the axis changed).
    layer_values_.assign(layer_components_.size(), std::vector<double>(data_.bars.size(), 0.0));
    for (size_t k = 0; k < layer_components_.size(); ++k)
        for (size_t i = 0; i < data_.bars.size(); ++i) {
            double bytes = 0;
            for (const auto& seg : data_.bars[i].segments)
                if (seg.component == layer_components_[k]) bytes += double(seg.bytes);
            layer_values_[k][i] = bytes / axis_.unit_bytes;
        }
    for (size_t i = 0; i < ceilings_.size(); ++i) {
        if (!ceilings_[i]) continue;
        const double c = double(category_of_bar_[i]);
        const double v = axisValue(double(*data_.bars[i].ceiling));
        const QList<QPointF> points{{c - kCeilingHalf, v}, {c + kCeilingHalf, v}};
        if (ceilings_[i]->points() != points) ceilings_[i]->replace(points);   // a ceiling rarely moves
    }
    const double last = double(x_->count()) - 0.5;
    for (size_t i = 0; i < lines_.size(); ++i) {
        const double v = axisValue(double(data_.lines[i].bytes));
        const QList<QPointF> points{{-0.5, v}, {last, v}};
        if (lines_[i]->points() != points) lines_[i]->replace(points);
    }
}

// --------------------------------------------------------------------- decorations ----

void MemoryQChart::clearDecorations() {
    Decor& d = *decor_;
    for (ChartText** t : {&d.title, &d.subtitle, &d.notice, &d.footnote, &d.empty, &d.line_key}) {
        delete *t;
        *t = nullptr;
    }
    for (auto* t : d.totals) delete t;
    for (auto* t : d.verdicts) delete t;
    for (auto& c : d.captions)
        for (auto* t : c) delete t;
    for (auto& g : d.groups) delete g.first;
    for (auto* t : d.line_labels) delete t;
    for (auto& [swatch, label] : d.legend) {
        delete swatch;
        delete label;
    }
    const std::vector<bool> in_key = d.in_key;
    const QSizeF key_for_size = d.key_for_size;
    d = Decor{};
    d.in_key = in_key;   // the lines' business (setContent), not the items'
    d.key_for_size = key_for_size;
}

// The label items, once per set of bars; their texts come from refreshDecorationTexts.
void MemoryQChart::buildDecorations() {
    Decor& d = *decor_;
    // On screen the labels that stay put while a slider moves (captions, legend, title) are
    // cached pixmaps; those whose text changes with every step (totals, verdicts) draw their
    // glyphs directly, as rendering a fresh pixmap per step costs more than it saves. Files
    // keep real text and vectors.
    auto text = [this](const QFont& f, const QColor& c, bool centred = false, bool changes_per_step = false) {
        auto* t = new ChartText(QString(), f, c, this);
        t->setZValue(kDecorZ);
        t->setCentred(centred);
        if (for_screen_ && !changes_per_step) t->setCacheMode(QGraphicsItem::DeviceCoordinateCache);
        return t;
    };
    const QFont small = font_px(style_, 11), normal = font_px(style_, 12), bold = font_px(style_, 12, true);
    d.line_height = QFontMetricsF(normal).height();
    d.title = text(font_px(style_, 15, true), style_.text);
    d.subtitle = text(small, style_.muted);
    d.notice = text(small, style_.tight);
    d.footnote = text(small, style_.muted);
    if (data_.bars.empty() && !data_.empty_message.isEmpty())
        d.empty = text(font_px(style_, 14), data_.is_error ? style_.no : style_.muted);
    for (size_t i = 0; i < data_.bars.size(); ++i) {
        d.totals.push_back(text(bold, style_.text, true, true));
        d.verdicts.push_back(text(small, style_.muted, true, true));
        d.captions.push_back({text(bold, style_.text, true), text(small, style_.muted, true), text(small, style_.tight, true)});
        const QString& g = data_.bars[i].group;
        if (g.isEmpty()) continue;
        if (d.groups.empty() || data_.bars[size_t(d.groups.back().second.second)].group != g)
            d.groups.push_back({text(bold, style_.text, true), {int(i), int(i)}});
        else
            d.groups.back().second.second = int(i);
    }
    for (size_t i = 0; i < data_.lines.size(); ++i) {
        d.line_labels.push_back(text(small, style_.muted));
        d.line_labels.back()->setBackground(style_.background);   // close lines may pass under a name
    }
    if (!data_.lines.empty()) d.line_key = text(small, style_.muted);
    d.in_key.resize(data_.lines.size(), false);
    if (data_.bars.empty()) return;
    auto add_key = [&](const QString& name, const QBrush& brush, const QPen& pen) {
        auto* swatch = new QGraphicsRectItem(this);
        swatch->setBrush(brush);
        swatch->setPen(pen);
        swatch->setZValue(kDecorZ);
        ChartText* label = text(normal, style_.text);
        label->setText(name);
        d.legend.push_back({swatch, label});
    };
    for (const auto& c : layer_components_)
        add_key(layer_name(c), layer_brush(c, style_), QPen(c && *c == Component::FrameworkOverhead ? hatch_colour(style_) : style_.background));
    add_key("Usable ceiling (dashed)", QBrush(Qt::NoBrush), QPen(style_.ceiling, 2, Qt::DashLine));
}

// New numbers in the items already made (a slider moved); where they go is layoutDecorations'.
void MemoryQChart::refreshDecorationTexts() {
    Decor& d = *decor_;
    if (!d.title) return;
    if (d.empty) d.empty->setText(data_.empty_message);
    for (size_t i = 0; i < data_.bars.size() && i < d.totals.size(); ++i) {
        const ChartBar& b = data_.bars[i];
        const bool cut = !axis_.log && double(b.total) > axis_.max_bytes;
        d.totals[i]->setText((cut ? "↑ " : "") + axis_value_text(double(b.total), axis_));
        d.verdicts[i]->setVisible(!b.verdict.isEmpty() && b.fit);
        if (b.fit) d.verdicts[i]->setBrush(fit_qcolor(style_, *b.fit));
    }
    // The legend names what is drawn: the components present, and the ceiling when there is one.
    const std::vector<Component> present = data_.legend();
    for (size_t k = 0; k < d.legend.size(); ++k) {
        bool shown = false;
        if (k < layer_components_.size()) {
            const auto& c = layer_components_[k];
            shown = c ? std::find(present.begin(), present.end(), *c) != present.end() : data_.has_offloaded();
        } else {
            shown = std::any_of(data_.bars.begin(), data_.bars.end(), [](const ChartBar& b) { return b.ceiling.has_value(); });
        }
        d.legend[k].first->setVisible(shown);
        d.legend[k].second->setVisible(shown);
    }
}

void MemoryQChart::layoutDecorations() {
    Decor& d = *decor_;
    if (!d.title) return;
    const QRectF r = rect();
    const double text_width = r.width() - 24;
    double y = r.top() + 6;
    // A file cannot show a tooltip: titles, subtitles, notices and footnotes wrap, never elide.
    d.title->setFitted(data_.title, text_width, 2);
    d.title->setPos(r.left() + 12, y);
    y += d.title->boundingRect().height();
    d.subtitle->setFitted(data_.subtitle, text_width, 3);
    d.subtitle->setPos(r.left() + 12, y);
    y += d.subtitle->boundingRect().height() * 1.15;
    const QStringList hidden = hidden_segments(data_, axis_);
    d.notice->setVisible(!hidden.isEmpty());
    if (!hidden.isEmpty()) {
        const QString how = "(the window's “Scale: show every bar whole” shows them whole)";
        d.notice->setFitted("Cut at the top " + how + ": " + hidden.join("; "), text_width, 3);
        // What each cut bar holds above the axis is in its tooltip; where the list has no room,
        // the notice names the cut bars only (it ended "…abov…" at 1280×720).
        if (!d.notice->toolTip().isEmpty()) {
            QStringList cut;
            for (const ChartBar& b : data_.bars)
                if (double(b.total) > axis_.max_bytes) cut << (b.group.isEmpty() ? b.label : b.label + " " + b.group);
            d.notice->setFitted(QString::number(cut.size()) + (cut.size() == 1 ? " bar" : " bars") + " cut at the top " + how + ": " + cut.join(", "),
                                text_width, 3);
        }
        d.notice->setPos(r.left() + 12, y);
        y += d.notice->boundingRect().height() * 1.2;
    }
    d.footnote->setFitted(data_.footnote, text_width, 2);
    d.footnote->setPos(r.left() + 12, r.bottom() - d.footnote->boundingRect().height() - 4);
    if (d.empty) {
        d.empty->setFitted(data_.empty_message, text_width, 4);
        const QRectF b = d.empty->boundingRect();
        d.empty->setPos(r.center().x() - b.width() / 2, r.center().y() - b.height() / 2);
    }

    // The legend flows under the title block, as many rows as it needs, names in full.
    double lx = r.left() + 12, ly = y + 4;
    const double row_h = d.line_height + 4;
    bool any_key = false;
    for (auto& [swatch, label] : d.legend) {
        if (!label->isVisible()) continue;
        const double w = 16 + label->boundingRect().width() + 16;
        if (lx + w > r.right() - 8 && lx > r.left() + 12) {
            lx = r.left() + 12;
            ly += row_h;
        }
        swatch->setRect(lx, ly + (d.line_height - 11) / 2, 11, 11);
        label->setPos(lx + 16, ly);
        lx += w;
        any_key = true;
    }
    double top = (any_key ? ly + row_h : ly) + 6 - r.top();
    if (d.key_for_size != r.size()) {   // a new size: every line gets its chance on the plot again
        d.in_key.assign(data_.lines.size(), false);
        d.key_for_size = r.size();
    }
    if (d.line_key) {
        const QString key = lineKeyText();
        d.line_key->setVisible(!key.isEmpty());
        if (!key.isEmpty()) {
            d.line_key->setFitted(key, text_width, 3);
            d.line_key->setPos(r.left() + 12, r.top() + top - 4);
            top += d.line_key->boundingRect().height() + 2;
        }
    }

    // The captions under the bars, each row as many lines as its longest needs (at most two).
    const QRectF plot0 = plotArea();
    const double slot0 = frame_ ? plot0.width() / std::max(1, x_->count()) : 0;
    std::array<double, 3> row_height{0, 0, 0};
    d.captions_turned = false;
    for (size_t i = 0; i < d.captions.size(); ++i) {
        const ChartBar& b = data_.bars[i];
        const QString texts[3] = {unbroken_amounts(b.label), b.sublabel, b.note};
        for (size_t k = 0; k < 3; ++k) {
            ChartText* t = d.captions[i][k];
            // A name may take a third line ("Mac Studio / M3 Ultra / 96 GB") before it elides.
            t->setFitted(texts[k], slot0 - 4, k == 0 ? 3 : 2);
            if (k == 0 && !t->toolTip().isEmpty()) d.captions_turned = true;
            if (!texts[k].isEmpty()) row_height[k] = std::max(row_height[k], t->boundingRect().height());
        }
    }
    // A name with no room across its slot even on three lines ("14B" under a bar 20 px wide,
    // the Sizes tab's 18 bars at 1280×720): every name turns to read upwards, whole, ending
    // under its bar, rather than "1…" under one bar and "8B" under the next.
    for (size_t i = 0; i < d.captions.size(); ++i) {
        ChartText* t = d.captions[i][0];
        t->setRotation(d.captions_turned ? -90 : 0);
        if (!d.captions_turned) continue;
        t->setFitted(data_.bars[i].label, kTurnedCaptionWidth);
        if (i == 0) row_height[0] = 0;
        row_height[0] = std::max(row_height[0], t->boundingRect().width() + 2);
    }
    const double captions_height = row_height[0] + row_height[1] + row_height[2];
    const double bottom = 8 + captions_height + (d.groups.empty() ? 0 : d.line_height * 1.2) +
                          d.footnote->boundingRect().height() * 1.5;
    if (std::fabs(margins().top() - top) > 1 || std::fabs(margins().bottom() - bottom) > 1) {
        QMargins m = margins();
        m.setTop(int(std::ceil(top)));
        m.setBottom(int(std::ceil(bottom)));
        m.setLeft(10);
        m.setRight(16);
        setMargins(m);   // lays the plot out again, and this runs once more
    }
    placeBars();
    if (!frame_ || data_.bars.empty()) return;

    const QRectF plot = plotArea();
    const double slot = plot.width() / std::max(1, x_->count());
    d.ceilings.assign(data_.bars.size(), QLineF());
    for (size_t i = 0; i < data_.bars.size(); ++i)
        if (const auto& c = data_.bars[i].ceiling) {
            const double cat = category_of_bar_[i];
            d.ceilings[i] = QLineF(toChart(cat - kCeilingHalf, double(*c)), toChart(cat + kCeilingHalf, double(*c)));
        }
    placeBarLabels(plot, slot);
    for (size_t i = 0; i < data_.bars.size(); ++i) {
        const double cx = toChart(category_of_bar_[i], 0).x();
        double cy = plot.bottom() + 4;
        for (size_t k = 0; k < 3; ++k) {
            ChartText* t = d.captions[i][k];
            const QRectF tb = t->boundingRect();
            // Turned a quarter left about its origin, the text spans (0, -width)..(height, 0).
            if (k == 0 && d.captions_turned) t->setPos(cx - tb.height() / 2, cy + tb.width());
            else t->setPos(cx - tb.width() / 2, cy);
            cy += row_height[k];
        }
    }
    for (auto& [label, span] : d.groups) {
        const double x0 = toChart(category_of_bar_[size_t(span.first)], 0).x();
        const double x1 = toChart(category_of_bar_[size_t(span.second)], 0).x();
        label->setFitted(data_.bars[size_t(span.first)].group, x1 - x0 + slot - 4);
        const QRectF gb = label->boundingRect();
        label->setPos((x0 + x1) / 2 - gb.width() / 2, plot.bottom() + 6 + captions_height);
    }
    // A line newly sent to the key takes room at the top: lay out once more (the set only grows).
    if (placeLineLabels(plot)) layoutDecorations();
}

}  // namespace wingspan::ui
