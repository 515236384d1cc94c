// Predicted vs measured as Qt Charts stacked bars (scaled to the run), and the exports of the
// run panel's charts: the same QChart the panel shows, rendered into PNG, SVG or PDF.
#include <algorithm>
#include <cmath>

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QLegendMarker>
#include <QPainter>
#include <QStackedBarSeries>
#include <QValueAxis>

#include "wingspan/ui/run_charts.hpp"

#include "export/export_format.hpp"

namespace wingspan::ui {

// ------------------------------------------------------------------ summary ----

void build_summary_chart(QChart* chart, const ChartData& d, const ChartStyle& st) {
    chart->removeAllSeries();
    for (QAbstractAxis* a : chart->axes()) {
        chart->removeAxis(a);
        delete a;
    }
    chart->setBackgroundBrush(st.background);
    chart->setBackgroundRoundness(0);
    chart->setTitleBrush(st.text);
    chart->legend()->setLabelColor(st.text);
    chart->legend()->setAlignment(Qt::AlignRight);
    chart->setAnimationOptions(QChart::NoAnimation);
    QString title = "<b>" + d.title.toHtmlEscaped() + "</b>";
    auto muted = [&](const QString& t) {
        return "<br><span style='color:" + st.muted.name() + "; font-weight:normal'>" + t.toHtmlEscaped() + "</span>";
    };
    if (!d.subtitle.isEmpty()) title += muted(d.subtitle);
    if (d.bars.empty()) {
        chart->setTitle(title + muted(d.empty_message));
        return;
    }
    // One set per component (bottom to top in the planner's order), a value per bar.
    std::vector<std::pair<QString, std::optional<Component>>> sets;
    for (const auto& bar : d.bars)
        for (const auto& seg : bar.segments) {
            const bool seen = std::any_of(sets.begin(), sets.end(), [&](const auto& s) { return s.first == seg.label; });
            if (!seen) sets.push_back({seg.label, seg.component});
        }
    double max_total = 0;
    for (const auto& bar : d.bars) max_total = std::max(max_total, double(bar.total));
    const auto [scale, unit_name] = run_axis_unit(max_total, d.unit);
    auto* series = new QStackedBarSeries;
    for (const auto& [label, component] : sets) {
        auto* set = new QBarSet(label);
        QColor c = component ? component_qcolor(*component) : QColor("#000000");
        set->setColor(c);
        set->setBorderColor(c.darker(130));
        if (component == Component::FrameworkOverhead) {
            // The overhead is what the process holds beyond its tensors: hatched, as in the planner.
            set->setBrush(QBrush(QColor("#000000"), Qt::BDiagPattern));
            set->setBorderColor(QColor("#000000"));
        }
        for (const auto& bar : d.bars) {
            double v = 0;
            for (const auto& seg : bar.segments)
                if (seg.label == label) v += double(seg.bytes);
            set->append(v / scale);
        }
        series->append(set);
    }
    series->setBarWidth(0.55);
    chart->addSeries(series);
    auto* x = new QBarCategoryAxis(chart);
    QStringList cats;
    for (const auto& bar : d.bars) {
        QString c = bar.label + "\n" + bar.sublabel;
        if (!bar.verdict.isEmpty()) c += "\n" + bar.verdict;
        cats << c;
    }
    x->append(cats);
    x->setLabelsBrush(st.text);
    x->setGridLineVisible(false);
    auto* y = new QValueAxis(chart);
    // Scaled to the run: the bars fill the chart; a ceiling far above them is named, not drawn.
    double top = max_total;
    QStringList notes;
    for (const auto& bar : d.bars)
        if (bar.ceiling && *bar.ceiling > 0) {
            if (double(*bar.ceiling) <= 1.5 * max_total) top = std::max(top, double(*bar.ceiling));
            else notes << "cap " + format_run_bytes(double(*bar.ceiling), d.unit) + " is far above this scale";
        }
    apply_round_ticks(y, round_ticks(0, top / scale * 1.12, 5, true));
    y->setTitleText(unit_name);
    y->setTitleBrush(st.muted);
    y->setLabelsBrush(st.muted);
    y->setGridLinePen(QPen(st.grid, 1));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
    notes.removeDuplicates();
    for (const QString& n : notes) title += muted(n);
    chart->setTitle(title);
}

RunSummaryChartView::RunSummaryChartView(QWidget* parent) : QChartView(new QChart, parent) {
    setRenderHint(QPainter::Antialiasing, true);
    setFocusPolicy(Qt::StrongFocus);
    setAccessibleName("Predicted versus measured memory at the peak");
}

void RunSummaryChartView::setData(ChartData data) {
    // A live run refreshes the summary five times a second: rebuild only what changed, and
    // only when it can be seen.
    QString key = data.title + data.subtitle;
    for (const auto& bar : data.bars) {
        key += bar.label + bar.sublabel + bar.verdict + QString::number(bar.total) + '|';
        for (const auto& seg : bar.segments) key += seg.label + QString::number(seg.bytes) + ',';
    }
    data_ = std::move(data);
    if (key == key_ && !stale_) return;
    key_ = key;
    stale_ = !isVisible();
    if (!stale_) rebuild();
}

void RunSummaryChartView::showEvent(QShowEvent* e) {
    if (stale_) {
        stale_ = false;
        rebuild();
    }
    QChartView::showEvent(e);
}

void RunSummaryChartView::rebuild() {
    build_summary_chart(chart(), data_, ChartStyle::from_palette(palette()));
    axis_max_ = 0;
    for (QAbstractAxis* a : chart()->axes(Qt::Vertical))
        if (auto* v = qobject_cast<QValueAxis*>(a)) {
            double max_total = 0;
            for (const auto& bar : data_.bars) max_total = std::max(max_total, double(bar.total));
            axis_max_ = v->max() * run_axis_unit(max_total, data_.unit).first;
        }
    // The same numbers for a screen reader: one sentence per bar.
    QStringList text;
    for (const auto& bar : data_.bars) text << bar.label + " " + format_run_bytes(double(bar.total), data_.unit);
    setAccessibleDescription(text.join("; "));
}

void RunSummaryChartView::paintEvent(QPaintEvent* e) {
    QChartView::paintEvent(e);
    if (hasFocus()) {
        QPainter p(viewport());
        p.setPen(QPen(palette().color(QPalette::Highlight), 2));
        p.drawRect(viewport()->rect().adjusted(1, 1, -2, -2));
    }
}

// ------------------------------------------------------------------ exports ----

namespace {

ChartStyle export_style(const ImageOptions& o) {
    ChartStyle st = o.dark ? ChartStyle::dark() : ChartStyle::light();
    st.font_family = "DejaVu Sans";
    return st;
}

// Builds a chart in an offscreen scene of the export's logical size (pixels ÷ dpi/96, so text
// keeps its size at any DPI) and paints it onto `device`'s full area.
template <typename Build>
bool paint_chart(QPaintDevice* device, const ImageOptions& o, const QRectF& target, Build build) {
    const double s = o.dpi / 96.0;
    QGraphicsScene scene;
    auto* chart = new QChart;
    scene.addItem(chart);
    const QSizeF logical(o.width / s, o.height / s);
    chart->setGeometry(QRectF(QPointF(0, 0), logical));
    build(chart);
    if (chart->layout()) chart->layout()->activate();
    scene.setSceneRect(QRectF(QPointF(0, 0), logical));
    QPainter p;
    if (!p.begin(device)) return false;
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setRenderHint(QPainter::TextAntialiasing, true);
    scene.render(&p, target, QRectF(QPointF(0, 0), logical));
    p.end();
    return true;
}

template <typename Build>
bool export_any(const QString& path, const QString& title, const ImageOptions& o, QString* error, Build build) {
    return paint_to_image_file(path, o, title, export_style(o).background,
                               [&](QPaintDevice* device, const QRectF& target) { return paint_chart(device, o, target, build); },
                               error);
}

}  // namespace

QImage render_time_chart(const TimeChartData& d, const ImageOptions& o) {
    QImage img(std::max(1, o.width), std::max(1, o.height), QImage::Format_ARGB32_Premultiplied);
    img.fill(export_style(o).background);
    TimeChartBuilder builder;
    paint_chart(&img, o, QRectF(0, 0, img.width(), img.height()),
                [&](QChart* chart) { builder.apply(chart, d, export_style(o)); });
    return img;
}

bool export_time_chart(const TimeChartData& d, const QString& path, const ImageOptions& o, QString* error) {
    TimeChartBuilder builder;
    return export_any(path, d.title, o, error, [&](QChart* chart) { builder.apply(chart, d, export_style(o)); });
}

bool export_summary_chart(const ChartData& d, const QString& path, const ImageOptions& o, QString* error) {
    return export_any(path, d.title, o, error, [&](QChart* chart) { build_summary_chart(chart, d, export_style(o)); });
}

}  // namespace wingspan::ui
