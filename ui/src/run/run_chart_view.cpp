// The run panel's charts drawn with Qt Charts: TimeChartData as stacked QAreaSeries (one per
// component, the fixed colours), QLineSeries for the RSS, reserved bytes, loss and tokens/s,
// QScatterSeries for eval points, and horizontal QLineSeries for the prediction, the ceiling
// and the cap. Live updates replace() each series' points once per refresh.
#include <algorithm>
#include <cmath>
#include <limits>

#include <QAreaSeries>
#include <QChart>
#include <QFocusEvent>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLocale>
#include <QPainter>
#include <QRegularExpression>
#include <QScatterSeries>
#include <QToolTip>
#include <QValueAxis>

#include "wingspan/ui/run_charts.hpp"

namespace wingspan::ui {

namespace {

// Where the y axis goes and what stays off it (markers or lines far above the data are named
// in the title instead of squashing the areas).
struct TimeLayout {
    bool empty = true;
    double x0 = 0, x1 = 1, y0 = 0, y1 = 1;   // bytes (or the series' own unit)
    std::vector<const TimeMarker*> drawn;
    std::vector<const TimeSeries*> hidden;
    QStringList off;                          // "Process RSS up to 346 MB"
};

TimeLayout layout_time_chart(const TimeChartData& d) {
    TimeLayout l;
    double xmin = std::numeric_limits<double>::max(), xmax = std::numeric_limits<double>::lowest();
    double ymin = std::numeric_limits<double>::max(), ymax = 0;
    std::vector<double> stack;
    for (const auto& s : d.series) {
        if (s.points.empty()) continue;
        l.empty = false;
        for (const auto& pt : s.points) xmin = std::min(xmin, pt.x()), xmax = std::max(xmax, pt.x());
        if (s.kind == TimeSeries::Kind::Area) {
            if (stack.size() < s.points.size()) stack.resize(s.points.size(), 0.0);
            for (size_t i = 0; i < s.points.size(); ++i) stack[i] += s.points[i].y();
        } else if (s.fit) {
            for (const auto& pt : s.points) ymax = std::max(ymax, pt.y()), ymin = std::min(ymin, pt.y());
        }
    }
    for (double v : stack) ymax = std::max(ymax, v), ymin = std::min(ymin, v);
    const double data_max = ymax;
    for (const auto& m : d.markers) {
        if (m.value <= 0 || !m.fit) continue;
        if (!l.empty && data_max > 0 && m.value > d.off_scale_factor * data_max) l.off << m.label;
        else l.drawn.push_back(&m);
    }
    for (const TimeMarker* m : l.drawn) ymax = std::max(ymax, m->value), ymin = std::min(ymin, m->value);
    const double fit_max = ymax;
    for (const auto& m : d.markers) {
        if (m.value <= 0 || m.fit) continue;
        if (m.value <= fit_max * 1.08) l.drawn.push_back(&m), ymax = std::max(ymax, m.value);
        else l.off << m.label;
    }
    for (const auto& s : d.series) {
        if (s.fit || s.kind == TimeSeries::Kind::Area || s.points.empty()) continue;
        double m = 0;
        for (const auto& pt : s.points) m = std::max(m, pt.y());
        if (m > ymax * 1.08 && ymax > 0) {
            l.off.prepend(s.label.section(" (", 0, 0) + " up to " +
                          (d.y_bytes ? format_run_bytes(m, d.unit) : QLocale().toString(m, 'f', 0)));
            l.hidden.push_back(&s);
        } else {
            ymax = std::max(ymax, m);
        }
    }
    if (l.empty && l.drawn.empty()) return l;
    if (d.y_from_zero || !(ymin < ymax)) ymin = d.y_from_zero ? 0 : ymin;
    if (!(ymax > ymin)) ymax = ymin + (ymin != 0 ? std::fabs(ymin) * 0.1 : 1.0);
    if (l.empty) xmin = 0, xmax = 1;
    if (d.x_is_time) xmin = std::min(0.0, xmin);
    if (!(xmax > xmin)) xmax = xmin + 1;
    l.empty = false;
    l.x0 = xmin, l.x1 = xmax, l.y0 = ymin, l.y1 = ymax;
    return l;
}

QString title_html(const QString& title, const QStringList& lines, const ChartStyle& st) {
    QString html = "<b>" + title.toHtmlEscaped() + "</b>";
    for (const QString& l : lines)
        if (!l.isEmpty()) html += "<br><span style='color:" + st.muted.name() + "; font-weight:normal'>" + l.toHtmlEscaped() + "</span>";
    return html;
}

// `text` broken at spaces into lines of at most `chars` characters: Qt Charts elides a title
// line that is wider than the chart ("…the me…" in the Run tab's cards at 1280×720), and a
// chart with no data yet has room for several short lines.
QStringList short_lines(const QString& text, int chars) {
    QStringList out;
    QString line;
    for (const QString& word : text.split(' ', Qt::SkipEmptyParts)) {
        if (!line.isEmpty() && line.size() + 1 + word.size() > chars) {
            out << line;
            line.clear();
        }
        line += (line.isEmpty() ? "" : " ") + word;
    }
    if (!line.isEmpty()) out << line;
    return out;
}

// At most this many legend entries read whole in one row under a run chart at laptop widths.
constexpr int kLegendRowEntries = 4;

void style_chart(QChart* chart, const ChartStyle& st) {
    chart->setBackgroundBrush(st.background);
    chart->setBackgroundRoundness(0);
    chart->setTitleBrush(st.text);
    chart->legend()->setLabelColor(st.text);
    // Qt's legend under a chart is one row that elides names that do not fit ("Frozen …",
    // "Rank 0:…"): a chart with many entries lists them in a column at its right instead, and
    // any name still cut shows whole on hover.
    int entries = 0;
    for (QLegendMarker* m : chart->legend()->markers()) entries += m->isVisible() ? 1 : 0;
    chart->legend()->setAlignment(entries > kLegendRowEntries ? Qt::AlignRight : Qt::AlignBottom);
    chart->legend()->setShowToolTips(true);
    chart->setMargins(QMargins(4, 4, 4, 4));
    QFont f = chart->titleFont();
    if (!st.font_family.isEmpty()) f.setFamily(st.font_family);
    chart->setTitleFont(f);
}

void style_axis(QValueAxis* a, const ChartStyle& st, const QString& title) {
    a->setTitleText(title);
    a->setTitleBrush(st.muted);
    a->setLabelsBrush(st.muted);
    a->setGridLinePen(QPen(st.grid, 1));
    a->setLinePen(QPen(st.muted, 1));
}

QList<QPointF> scaled(const std::vector<QPointF>& v, double scale) {
    QList<QPointF> out;
    out.reserve(qsizetype(v.size()));
    for (const auto& p : v) out.append({p.x(), p.y() / scale});
    return out;
}

QString structure_key(const TimeChartData& d, const TimeLayout& l) {
    QString k;
    for (const auto& s : d.series) {
        const bool hidden = std::find(l.hidden.begin(), l.hidden.end(), &s) != l.hidden.end();
        k += s.label + QChar(int(s.kind) + '0') + (hidden ? "h" : "") + (s.points.empty() ? "e" : "") + '|';
    }
    for (const TimeMarker* m : l.drawn) k += "m" + QString::number(m - d.markers.data()) + m->label + '|';
    return k;
}

}  // namespace

std::pair<double, QString> run_axis_unit(double max, ByteUnit unit) {
    const bool bin = unit == ByteUnit::GiB;
    const double k = bin ? 1024.0 : 1000.0;
    if (max >= k * k * k * 0.95) return {k * k * k, bin ? "GiB" : "GB"};
    if (max >= k * k * 0.95) return {k * k, bin ? "MiB" : "MB"};
    return {k, bin ? "KiB" : "kB"};
}

// ------------------------------------------------------------------ builder ----

QXYSeries* TimeChartBuilder::seriesFor(const QString& label) const {
    for (const auto& [l, s] : drawn_)
        if (l == label) return s;
    return nullptr;
}

void TimeChartBuilder::rebuild(QChart* chart, const TimeChartData& d, const ChartStyle& st) {
    ++rebuilds_;
    chart->removeAllSeries();   // deletes the series (and the areas' bounds with them)
    for (QAbstractAxis* a : chart->axes()) {
        chart->removeAxis(a);
        delete a;
    }
    // The areas' bounds are not owned by their QAreaSeries (they are the chart's children).
    for (QLineSeries* b : bounds_) delete b;
    bounds_.clear();
    drawn_.clear();
    lowers_.clear();
    markers_.clear();
    x_ = new QValueAxis(chart);
    y_ = new QValueAxis(chart);
    chart->addAxis(x_, Qt::AlignBottom);
    chart->addAxis(y_, Qt::AlignLeft);
    style_axis(x_, st, d.x_is_time ? d.x_title + " (s)" : d.x_title);
    style_axis(y_, st, d.y_title);
    const TimeLayout l = layout_time_chart(d);
    auto attach = [&](QAbstractSeries* s) {
        chart->addSeries(s);
        s->attachAxis(x_);
        s->attachAxis(y_);
    };
    // Areas first (stacked, bottom first), then lines and points over them.
    for (const auto& s : d.series) {
        if (s.kind != TimeSeries::Kind::Area || s.points.empty()) continue;
        auto* upper = new QLineSeries(chart);
        auto* lower = new QLineSeries(chart);
        bounds_.push_back(upper);
        bounds_.push_back(lower);
        lowers_.push_back(lower);
        auto* area = new QAreaSeries(upper, lower);
        area->setName(s.label);
        area->setColor(s.color);
        area->setBorderColor(s.color.darker(130));
        QPen border(s.color.darker(130), 0.8);
        area->setPen(border);
        attach(area);
        drawn_.push_back({s.label, upper});
    }
    for (const auto& s : d.series) {
        if (s.kind == TimeSeries::Kind::Area || s.points.empty()) continue;
        QXYSeries* xy = nullptr;
        if (s.kind == TimeSeries::Kind::Points) {
            auto* sc = new QScatterSeries;
            sc->setMarkerSize(8);
            sc->setColor(s.color);
            sc->setBorderColor(s.color.darker(120));
            xy = sc;
        } else {
            auto* line = new QLineSeries;
            QPen pen(s.color, s.halo ? s.width + 0.6 : s.width, s.style);
            pen.setCapStyle(Qt::FlatCap);
            line->setPen(pen);
            xy = line;
        }
        xy->setName(s.label);
        attach(xy);
        const bool hidden = std::find(l.hidden.begin(), l.hidden.end(), &s) != l.hidden.end();
        if (hidden) {
            xy->setVisible(false);
            for (QLegendMarker* m : chart->legend()->markers(xy)) m->setVisible(false);
        }
        drawn_.push_back({s.label, xy});
    }
    for (const TimeMarker* m : l.drawn) {
        auto* line = new QLineSeries;
        line->setName(m->label);
        line->setPen(QPen(m->color.isValid() ? m->color : st.ceiling, 1.6, m->style));
        attach(line);
        markers_.push_back(line);
    }
}

void TimeChartBuilder::apply(QChart* chart, const TimeChartData& d, const ChartStyle& st) {
    const TimeLayout l = layout_time_chart(d);
    const QString key = structure_key(d, l);
    if (key != key_ || !x_) {
        rebuild(chart, d, st);
        key_ = key;
    }
    style_chart(chart, st);
    QStringList lines{d.subtitle};
    if (!l.off.isEmpty()) lines << "↑ above this scale: " + l.off.join(" · ");
    if (l.empty) {
        lines << short_lines(d.empty_message, 28);
        chart->setTitle(title_html(d.title, lines, st));
        x_->setVisible(false);
        y_->setVisible(false);
        return;
    }
    chart->setTitle(title_html(d.title, lines, st));
    x_->setVisible(true);
    y_->setVisible(true);
    // The y axis reads in one unit (GB, MB or kB by the scale's top), the points follow it.
    y_scale_ = 1;
    QString y_title = d.y_title;
    if (d.y_bytes) {
        const auto [sc, name] = run_axis_unit(l.y1, d.unit);
        y_scale_ = sc;
        y_title = name;
    }
    y_->setTitleText(y_title);
    // One replace() per series: the whole (thinned) history at once.
    std::vector<double> base;
    size_t area_i = 0;
    for (const auto& s : d.series) {
        if (s.points.empty()) continue;
        QXYSeries* xy = seriesFor(s.label);
        if (!xy) continue;
        if (s.kind == TimeSeries::Kind::Area) {
            if (base.size() < s.points.size()) base.resize(s.points.size(), 0.0);
            QList<QPointF> up, low;
            up.reserve(qsizetype(s.points.size()));
            low.reserve(qsizetype(s.points.size()));
            for (size_t i = 0; i < s.points.size(); ++i) {
                low.append({s.points[i].x(), base[i] / y_scale_});
                base[i] += s.points[i].y();
                up.append({s.points[i].x(), base[i] / y_scale_});
            }
            xy->replace(up);
            if (area_i < lowers_.size()) lowers_[area_i]->replace(low);
            ++area_i;
        } else {
            xy->replace(scaled(s.points, y_scale_));
        }
    }
    for (size_t i = 0; i < markers_.size() && i < l.drawn.size(); ++i)
        markers_[i]->replace(QList<QPointF>{{l.x0, l.drawn[i]->value / y_scale_}, {l.x1, l.drawn[i]->value / y_scale_}});
    // Gridlines at round steps with labels that read them exactly: time (or steps) keeps the
    // run's span, the y axis grows out to whole steps.
    RoundTicks xt = round_ticks(l.x0, l.x1, 6, false);
    if (!d.x_is_time && xt.step < 1) {   // optimizer steps are whole
        xt.step = 1;
        xt.decimals = 0;
    }
    apply_round_ticks(x_, xt);
    apply_round_ticks(y_, round_ticks(l.y0 / y_scale_, l.y1 / y_scale_ * (d.y_from_zero ? 1.05 : 1.0), 5, true));
}

// ------------------------------------------------------------------ widget ----

TimeChartWidget::TimeChartWidget(QWidget* parent) : QChartView(new QChart, parent) {
    setRenderHint(QPainter::Antialiasing, true);
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(true);
    chart()->legend()->setAlignment(Qt::AlignBottom);
    chart()->setAnimationOptions(QChart::NoAnimation);   // a live chart moves with the data, not after it
}

void TimeChartWidget::setData(TimeChartData data) {
    data_ = std::move(data);
    // Out of sight (another tab, a folded panel) the series wait: a live run's refreshes must
    // not spend the CPU the trainer needs on a chart nobody sees. showEvent catches up.
    stale_ = !isVisible();
    if (!stale_) builder_.apply(chart(), data_, ChartStyle::from_palette(palette()));
    setAccessibleDescription(data_.subtitle + (data_.footnote.isEmpty() ? QString() : ". " + data_.footnote));
    if (cursor_ >= 0) moveCursor(cursor_);
}

void TimeChartWidget::showEvent(QShowEvent* e) {
    if (stale_) {
        stale_ = false;
        builder_.apply(chart(), data_, ChartStyle::from_palette(palette()));
    }
    QChartView::showEvent(e);
}

void TimeChartWidget::paintEvent(QPaintEvent* e) {
    QChartView::paintEvent(e);
    ++paints_;
    if (hasFocus()) {
        // A visible focus ring: the chart takes the keyboard (arrows walk the samples).
        QPainter p(viewport());
        p.setPen(QPen(palette().color(QPalette::Highlight), 2));
        p.drawRect(viewport()->rect().adjusted(1, 1, -2, -2));
    }
}

bool TimeChartWidget::viewportEvent(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(e);
        const QPointF in_chart = chart()->mapFromScene(mapToScene(he->pos()));
        if (!chart()->plotArea().contains(in_chart) || data_.series.empty()) {
            QToolTip::hideText();
            return true;
        }
        const QPointF value = chart()->mapToValue(in_chart);
        QToolTip::showText(he->globalPos(), time_chart_text_at(data_, value.x()), this);
        return true;
    }
    return QChartView::viewportEvent(e);
}

std::vector<double> TimeChartWidget::cursorXs() const {
    for (const auto& s : data_.series)
        if (!s.points.empty()) {
            std::vector<double> xs;
            for (const auto& p : s.points) xs.push_back(p.x());
            return xs;
        }
    return {};
}

void TimeChartWidget::moveCursor(int index) {
    const auto xs = cursorXs();
    if (xs.empty()) {
        cursor_ = -1;
        cursor_text_.clear();
        return;
    }
    cursor_ = std::clamp(index, 0, int(xs.size()) - 1);
    cursor_text_ = time_chart_text_at(data_, xs[size_t(cursor_)]);
    setAccessibleDescription(QString(cursor_text_).replace("<br>", ". ").remove(QRegularExpression("<[^>]*>")));
    emit cursorTextChanged(cursor_text_);
    if (hasFocus() && isVisible()) {
        const QPointF pos = chart()->mapToPosition({xs[size_t(cursor_)], builder_.axisY() ? builder_.axisY()->max() : 0});
        QToolTip::showText(mapToGlobal(mapFromScene(chart()->mapToScene(pos))), cursor_text_, this);
    }
}

void TimeChartWidget::keyPressEvent(QKeyEvent* e) {
    const int n = int(cursorXs().size());
    const int page = std::max(1, n / 10);
    switch (e->key()) {
        case Qt::Key_Right: moveCursor(cursor_ < 0 ? 0 : cursor_ + 1); break;
        case Qt::Key_Left: moveCursor(cursor_ < 0 ? n - 1 : cursor_ - 1); break;
        case Qt::Key_PageUp: moveCursor(cursor_ + page); break;
        case Qt::Key_PageDown: moveCursor(cursor_ - page); break;
        case Qt::Key_Home: moveCursor(0); break;
        case Qt::Key_End: moveCursor(n - 1); break;
        default: QChartView::keyPressEvent(e); return;
    }
    e->accept();
}

void TimeChartWidget::focusInEvent(QFocusEvent* e) {
    QChartView::focusInEvent(e);
    viewport()->update();
}

void TimeChartWidget::focusOutEvent(QFocusEvent* e) {
    QChartView::focusOutEvent(e);
    QToolTip::hideText();
    viewport()->update();
}

}  // namespace wingspan::ui
