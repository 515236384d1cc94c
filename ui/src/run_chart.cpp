// The run panel's charts: memory over time (stacked per component, with the prediction, the
// machine's ceiling and the RSS Wingspan sampled itself), loss and tokens/s per step, and the
// predicted-vs-measured summary. One painter draws the window and every export.
#include <algorithm>
#include <cmath>

#include <QEvent>
#include <QFileInfo>
#include <QFontMetricsF>
#include <QHelpEvent>
#include <QPageSize>
#include <QPainter>
#include <QPainterPath>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QToolTip>

#include "wingspan/ui/run_panel.hpp"

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }
QString qs(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

const QColor kRssColor("#332288");        // measured process RSS and its prediction (not a component hue)
const QColor kOverlayColor("#6b6b6b");    // the second run of a comparison
const QColor kLossColor("#0072B2");
const QColor kEvalColor("#E69F00");
const QColor kSpeedColor("#009E73");

QString bytes_text(double b, ByteUnit unit, int = 1) { return format_run_bytes(b, unit); }

}  // namespace

// Bytes the way a run's scale reads: MB for small runs, GB with two decimals for big ones.
QString format_run_bytes(double b, ByteUnit unit) {
    const bool bin = unit == ByteUnit::GiB;
    const double k = bin ? 1024.0 : 1000.0;
    auto fmt = [](double v, const char* suffix) {
        return QLocale().toString(v, 'f', v >= 100 ? 0 : v >= 10 ? 1 : 2) + " " + suffix;
    };
    if (b >= 0.95 * k * k * k) return fmt(b / (k * k * k), bin ? "GiB" : "GB");
    if (b >= 0.95 * k * k) return fmt(b / (k * k), bin ? "MiB" : "MB");
    return fmt(b / k, bin ? "KiB" : "kB");
}

namespace {

// Keeps at most `max` points: in each bucket of neighbours, the point `pick` prefers.
template <typename T, typename Better>
std::vector<const T*> thin(const std::vector<T>& v, size_t max, Better better) {
    std::vector<const T*> out;
    if (v.empty()) return out;
    max = std::max<size_t>(max, 2);
    if (v.size() <= max) {
        out.reserve(v.size());
        for (const auto& x : v) out.push_back(&x);
        return out;
    }
    const double per = double(v.size()) / double(max);
    out.reserve(max + 1);
    for (size_t b = 0; b < max; ++b) {
        const size_t lo = size_t(std::floor(double(b) * per)), hi = std::min(v.size(), size_t(std::floor(double(b + 1) * per)));
        if (lo >= hi) continue;
        const T* best = &v[lo];
        for (size_t i = lo + 1; i < hi; ++i)
            if (better(v[i], *best)) best = &v[i];
        out.push_back(best);
    }
    if (out.back() != &v.back()) out.push_back(&v.back());
    return out;
}

std::vector<QPointF> thin_points(const std::vector<QPointF>& v, size_t max) {
    std::vector<QPointF> out;
    for (const QPointF* p : thin(v, max, [](const QPointF& a, const QPointF& b) { return a.y() > b.y(); })) out.push_back(*p);
    return out;
}

// Steps thinned by averaging neighbours (loss is noisy; a mean reads better than a max).
std::vector<QPointF> step_series(const std::vector<StepSample>& steps, size_t max, double StepSample::*field) {
    std::vector<QPointF> out;
    if (steps.empty()) return out;
    const size_t per = std::max<size_t>(1, (steps.size() + max - 1) / std::max<size_t>(max, 1));
    for (size_t i = 0; i < steps.size(); i += per) {
        const size_t end = std::min(steps.size(), i + per);
        double x = 0, y = 0;
        for (size_t k = i; k < end; ++k) x += double(steps[k].step), y += steps[k].*field;
        out.push_back({x / double(end - i), y / double(end - i)});
    }
    return out;
}

std::vector<QPointF> allocated_series(const RunRecord& r, size_t max) {
    std::vector<QPointF> out;
    for (const MemorySample* s :
         thin(r.memory(), max, [](const MemorySample& a, const MemorySample& b) { return a.allocated_bytes > b.allocated_bytes; }))
        out.push_back({s->t, double(s->allocated_bytes)});
    return out;
}

// The memory sample with the most live tensor bytes (its components make the measured bar).
const MemorySample* peak_sample(const RunRecord& r) {
    const MemorySample* best = nullptr;
    for (const auto& s : r.memory())
        if (!best || s.allocated_bytes > best->allocated_bytes) best = &s;
    return best;
}

}  // namespace

const TimeSeries* TimeChartData::find(const QString& label) const {
    for (const auto& s : series)
        if (s.label == label) return &s;
    return nullptr;
}

// ------------------------------------------------------------------ builders ----

TimeChartData run_memory_chart(const RunChartInputs& in) {
    TimeChartData d;
    d.title = in.title.isEmpty() ? QString("Memory while training") : in.title;
    d.x_title = "time since launch";
    d.unit = in.unit;
    d.empty_message = "Waiting for the trainer's first memory sample…";
    if (!in.record) {
        d.empty_message = "No run yet. Start ▶ launches wingspan-train; the memory it uses appears here as it trains, "
                          "per component, beside the prediction.";
        return d;
    }
    const RunRecord& r = *in.record;

    // Stacked areas: live tensor bytes per component, as the trainer's allocator counts them.
    const auto samples =
        thin(r.memory(), in.max_points, [](const MemorySample& a, const MemorySample& b) { return a.allocated_bytes > b.allocated_bytes; });
    std::vector<Component> present;
    for (Component c : kAllComponents) {
        if (c == Component::FrameworkOverhead) continue;
        for (const MemorySample* s : samples) {
            auto it = s->components.find(c);
            if (it != s->components.end() && it->second > 0) {
                present.push_back(c);
                break;
            }
        }
    }
    for (Component c : present) {
        TimeSeries ts;
        ts.kind = TimeSeries::Kind::Area;
        ts.component = c;
        ts.label = qs(component_label(c));
        ts.color = component_qcolor(c);
        ts.points.reserve(samples.size());
        for (const MemorySample* s : samples) {
            auto it = s->components.find(c);
            ts.points.push_back({s->t, it == s->components.end() ? 0.0 : double(it->second)});
        }
        d.series.push_back(std::move(ts));
    }
    if (in.rss && !in.rss->empty()) {
        TimeSeries ts;
        ts.label = "Process RSS (read by Wingspan from /proc)";
        ts.color = kRssColor;
        ts.width = 2.2;
        ts.fit = in.whole_process;
        ts.points = thin_points(*in.rss, in.max_points);
        // Before t = 0 the trainer was still loading libtorch; its clock had not started.
        std::erase_if(ts.points, [](const QPointF& p) { return p.x() < 0; });
        d.series.push_back(std::move(ts));
    }
    if (in.overlay) {
        TimeSeries ts;
        ts.label = in.overlay_label + ": all tensors";
        ts.color = QColor("#1d1f23");
        ts.style = Qt::DotLine;
        ts.width = 2.4;
        ts.halo = true;
        // The comparison run as its peak envelope (about two points a second of run time at most):
        // a second jagged line over the areas would be unreadable.
        ts.points = allocated_series(*in.overlay, std::min<size_t>(in.max_points, 90));
        if (!ts.points.empty()) d.series.push_back(std::move(ts));
        if (in.overlay_rss && !in.overlay_rss->empty()) {
            TimeSeries rs;
            rs.label = in.overlay_label + ": process RSS";
            rs.color = kRssColor;
            rs.style = Qt::DotLine;
            rs.width = 2.2;
            rs.halo = true;
            rs.fit = in.whole_process;
            rs.points = thin_points(*in.overlay_rss, in.max_points);
            std::erase_if(rs.points, [](const QPointF& p) { return p.x() < 0; });
            d.series.push_back(std::move(rs));
        }
    }

    if (r.predicted_peak() > 0)
        d.markers.push_back({"Predicted peak, tensors " + bytes_text(double(r.predicted_peak()), in.unit),
                             double(r.predicted_peak()), QColor(), Qt::DashDotLine});
    if (r.predicted_total() > 0)
        d.markers.push_back({"Predicted process total " + bytes_text(double(r.predicted_total()), in.unit),
                             double(r.predicted_total()), kRssColor, Qt::DashLine, in.whole_process});
    if (in.options && in.options->machine_ceiling > 0)
        d.markers.push_back({(in.options->machine_name.isEmpty() ? QString("Machine") : in.options->machine_name) +
                                 " ceiling " + bytes_text(double(in.options->machine_ceiling), in.unit),
                             double(in.options->machine_ceiling), QColor(), Qt::DashLine});
    if (in.options && in.options->memory_limit > 0)
        d.markers.push_back({"Memory cap (--memory-limit) " + bytes_text(double(in.options->memory_limit), in.unit),
                             double(in.options->memory_limit), QColor("#c2410c"), Qt::SolidLine});

    QStringList sub;
    if (r.measured_peak() > 0) sub << "tensor peak " + bytes_text(double(r.measured_peak()), in.unit);
    QString rss_text;
    if (r.measured_rss_peak() > 0) rss_text = "RSS peak " + bytes_text(double(r.measured_rss_peak()), in.unit) + " by itself";
    if (in.rss && !in.rss->empty()) {
        double m = 0;
        for (const auto& p : *in.rss) m = std::max(m, p.y());
        rss_text += (rss_text.isEmpty() ? QString("RSS peak ") : QString(" / ")) + bytes_text(m, in.unit) + " by Wingspan";
    }
    if (!rss_text.isEmpty()) sub << rss_text;
    d.subtitle = sub.isEmpty() ? QString("Live tensor bytes per component, from the trainer's memory events") : sub.join(" · ");
    d.footnote = in.whole_process
                     ? "Areas: live tensors by component (the trainer's counting allocator). Dashed: the trainer's "
                       "prediction. Solid line: the process's resident memory, read by Wingspan itself from /proc."
                     : "Areas: live tensors by component (the trainer's counting allocator). Dashed: the trainer's "
                       "prediction. The process's resident memory (read by Wingspan itself) is listed when it is above the scale.";
    return d;
}

TimeChartData run_loss_chart(const RunChartInputs& in) {
    TimeChartData d;
    d.title = "Loss";
    d.x_title = "step";
    d.x_is_time = false;
    d.y_bytes = false;
    d.y_from_zero = false;
    d.empty_message = in.record ? "Waiting for the first step…" : "The training loss, step by step";
    if (!in.record) return d;
    const RunRecord& r = *in.record;
    TimeSeries train;
    train.label = "Training loss";
    train.color = kLossColor;
    train.points = step_series(r.steps(), in.max_points, &StepSample::loss);
    if (!train.points.empty()) d.series.push_back(std::move(train));
    TimeSeries eval;
    eval.label = "Held-out loss";
    eval.color = kEvalColor;
    eval.kind = r.evals().size() > 40 ? TimeSeries::Kind::Line : TimeSeries::Kind::Points;
    for (const auto& [step, loss] : r.evals()) eval.points.push_back({double(step), loss});
    if (!eval.points.empty()) d.series.push_back(std::move(eval));
    if (in.overlay) {
        TimeSeries o;
        o.label = in.overlay_label + ": training loss";
        o.color = kOverlayColor;
        o.style = Qt::DotLine;
        o.width = 2.4;
        o.points = step_series(in.overlay->steps(), in.max_points, &StepSample::loss);
        if (!o.points.empty()) d.series.push_back(std::move(o));
    }
    if (!r.steps().empty()) {
        const auto& first = r.steps().front();
        const auto& last = r.steps().back();
        d.subtitle = QString("step %1: %2 → step %3: %4").arg(first.step).arg(first.loss, 0, 'f', 3).arg(last.step).arg(last.loss, 0, 'f', 3);
    }
    return d;
}

TimeChartData run_throughput_chart(const RunChartInputs& in) {
    TimeChartData d;
    d.title = "Throughput";
    d.x_title = "step";
    d.x_is_time = false;
    d.y_bytes = false;
    d.y_title = "tokens/s";
    d.empty_message = in.record ? "Waiting for the first step…" : "Tokens per second, step by step";
    if (!in.record) return d;
    const RunRecord& r = *in.record;
    TimeSeries ts;
    ts.label = "Tokens/s";
    ts.color = kSpeedColor;
    ts.points = step_series(r.steps(), in.max_points, &StepSample::tokens_per_s);
    if (!ts.points.empty()) d.series.push_back(std::move(ts));
    if (in.overlay) {
        TimeSeries o;
        o.label = in.overlay_label + ": tokens/s";
        o.color = kOverlayColor;
        o.style = Qt::DotLine;
        o.width = 2.4;
        o.points = step_series(in.overlay->steps(), in.max_points, &StepSample::tokens_per_s);
        if (!o.points.empty()) d.series.push_back(std::move(o));
    }
    if (!r.steps().empty()) {
        std::vector<double> v;
        for (const auto& s : r.steps()) v.push_back(s.tokens_per_s);
        std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
        d.subtitle = QString("median %1 tokens/s").arg(QLocale().toString(v[v.size() / 2], 'f', 0));
    }
    return d;
}

ChartData run_summary_chart(const RunRecord& r, const RunOptions* options, const QString& title, ByteUnit unit,
                            bool whole_process) {
    ChartData d;
    d.title = title.isEmpty() ? QString("Predicted vs measured, at the peak") : title;
    d.unit = unit;
    d.subtitle = whole_process ? "Tensors per component at the peak; on top, what the process holds beyond its tensors"
                               : "Tensors per component at the peak";
    d.footnote = QString("Predicted: the trainer's `predicted` event (core's memory model for this exact run). Measured: the "
                         "memory sample with the most live tensor bytes") +
                 (whole_process ? ", and the RSS peak." : ".");
    d.empty_message = "No prediction or measurement yet";
    ChartBar pred;
    pred.id = "predicted";
    pred.label = "Predicted";
    for (Component c : kAllComponents) {
        if (c == Component::FrameworkOverhead) continue;
        auto it = r.predicted().find(c);
        if (it == r.predicted().end() || it->second <= 0) continue;
        pred.segments.push_back({c, it->second, qs(component_label(c)), "from the trainer's `predicted` event"});
    }
    if (whole_process && r.predicted_total() > r.predicted_peak() && r.predicted_peak() > 0)
        pred.segments.push_back({Component::FrameworkOverhead, r.predicted_total() - r.predicted_peak(),
                                 "Framework overhead (predicted)", "predicted process total − predicted tensor peak"});
    ChartBar meas;
    meas.id = "measured";
    meas.label = "Measured";
    if (const MemorySample* s = peak_sample(r)) {
        for (Component c : kAllComponents) {
            auto it = s->components.find(c);
            if (it == s->components.end() || it->second <= 0) continue;
            meas.segments.push_back({c, it->second, qs(component_label(c)),
                                     QString("live bytes at t = %1 s (%2)").arg(s->t, 0, 'f', 2).arg(qs(s->phase))});
        }
    }
    std::int64_t tensors = 0;
    for (const auto& seg : meas.segments) tensors += seg.bytes;
    if (whole_process && r.measured_rss_peak() > tensors && tensors > 0)
        meas.segments.push_back({Component::FrameworkOverhead, r.measured_rss_peak() - tensors,
                                 "Framework overhead (RSS − tensors)", "measured RSS peak − tensors at the peak"});
    for (ChartBar* b : {&pred, &meas}) {
        for (const auto& s : b->segments) b->total += s.bytes;
        if (options && options->memory_limit > 0) {
            b->ceiling = options->memory_limit;
            b->margin = options->memory_limit - b->total;
            b->fit = b->margin < 0 ? Fit::No : double(b->margin) < 0.1 * double(options->memory_limit) ? Fit::Tight : Fit::Fits;
        }
        b->sublabel = bytes_text(double(b->total), unit, 2);
    }
    if (!pred.segments.empty()) d.bars.push_back(std::move(pred));
    if (!meas.segments.empty()) d.bars.push_back(std::move(meas));
    if (d.bars.size() == 2 && d.bars[1].total > 0) {
        const double err = 100.0 * double(d.bars[0].total - d.bars[1].total) / double(d.bars[1].total);
        d.bars[0].verdict = QString("%1%2 % vs measured").arg(err >= 0 ? "+" : "").arg(err, 0, 'f', 1);
    }
    return d;
}

Table run_summary_table(const RunRecord& r, ByteUnit unit) {
    Table t;
    t.id = "run-summary";
    t.title = "Predicted vs measured";
    t.caption = "Per component: the prediction's bytes and the peak measured (exact from the trainer's allocator at the end, "
                "sampled while it runs); error = (predicted − measured) / measured";
    t.headers = {"Component", "Predicted", "Measured", "Error"};
    auto error_cell = [](std::int64_t predicted, std::int64_t measured) {
        TableCell c;
        if (measured <= 0) {
            c.text = predicted > 0 ? "not measured" : "—";
            return c;
        }
        double e = 100.0 * double(predicted - measured) / double(measured);
        if (std::fabs(e) < 0.05) e = 0;   // no "-0.0 %"
        char buf[32];
        std::snprintf(buf, sizeof buf, "%+.1f %%", e);
        c.text = buf;
        c.value = e;
        const double a = std::fabs(e);
        c.fit = a <= 10 ? Fit::Fits : a <= 25 ? Fit::Tight : Fit::No;
        return c;
    };
    auto bytes_cell = [&](std::int64_t b) {
        TableCell c;
        c.text = b > 0 ? format_run_bytes(double(b), unit).toStdString() : "—";
        c.value = double(b);
        return c;
    };
    RunSummary s = r.summary();
    // The trainer's `done` carries exact per-component peaks (its allocator tracks them); the
    // memory events are samples that can miss a short-lived peak (the logits live for
    // milliseconds). Use the exact ones where given.
    if (r.done()) {
        auto it = r.done()->body.find("component_peaks");
        if (it != r.done()->body.end() && it->is_object()) {
            for (auto& c : s.components) {
                auto v = it->find(std::string(component_name(c.component)));
                if (v != it->end() && v->is_number()) c.measured = std::max(c.measured, v->get<std::int64_t>());
            }
        }
    }
    for (const auto& c : s.components)
        t.rows.push_back({{std::string(component_label(c.component)), {}, {}}, bytes_cell(c.predicted), bytes_cell(c.measured),
                          error_cell(c.predicted, c.measured)});
    if (s.predicted_peak > 0 || s.measured_peak > 0)
        t.rows.push_back({{"All tensors at the peak", {}, {}}, bytes_cell(s.predicted_peak), bytes_cell(s.measured_peak),
                          error_cell(s.predicted_peak, s.measured_peak)});
    if (s.predicted_total > 0 || s.measured_rss_peak > 0)
        t.rows.push_back({{"Process total (RSS)", {}, {}}, bytes_cell(s.predicted_total), bytes_cell(s.measured_rss_peak),
                          error_cell(s.predicted_total, s.measured_rss_peak)});
    return t;
}

// ------------------------------------------------------------------ painter ----

namespace {

QFont font_px(const ChartStyle& st, double px, bool bold = false) {
    QFont f;
    if (!st.font_family.isEmpty()) f.setFamily(st.font_family);
    f.setPixelSize(std::max(6, int(std::lround(px * st.font_scale))));
    f.setBold(bold);
    return f;
}

double nice_step(double range, int target) {
    if (!(range > 0)) return 1;
    const double raw = range / std::max(1, target);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (raw <= m * mag) return m * mag;
    return 10 * mag;
}

double time_step(double range, int target) {
    const double raw = range / std::max(1, target);
    for (double s : {0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0})
        if (raw <= s) return s;
    return nice_step(range, target);
}

QString time_text(double s, double range) {
    if (range < 90) return QString::number(s, 'g', 4) + " s";
    const qint64 t = qint64(std::llround(s));
    if (range < 3 * 3600) return QString("%1:%2").arg(t / 60).arg(t % 60, 2, 10, QChar('0'));
    return QString("%1:%2 h").arg(t / 3600).arg((t % 3600) / 60, 2, 10, QChar('0'));
}

// The unit the byte axis reads in: GB/MB/kB (or GiB/MiB/KiB) by magnitude.
std::pair<double, QString> byte_scale(double max, ByteUnit unit) {
    const bool bin = unit == ByteUnit::GiB;
    const double k = bin ? 1024.0 : 1000.0;
    if (max >= k * k * k * 0.95) return {k * k * k, bin ? "GiB" : "GB"};
    if (max >= k * k * 0.95) return {k * k, bin ? "MiB" : "MB"};
    return {k, bin ? "KiB" : "kB"};
}

QString number_text(double v, double step) {
    const int decimals = step >= 1 ? 0 : step >= 0.1 ? 1 : step >= 0.01 ? 2 : 3;
    return QLocale().toString(v, 'f', decimals);
}

QString bytes_axis_text(double b, ByteUnit unit) {
    const auto [scale, name] = byte_scale(b, unit);
    const double v = b / scale;
    return QLocale().toString(v, 'f', v >= 100 ? 0 : v >= 10 ? 1 : 2) + " " + name;
}

struct LegendItem {
    QString label;
    QColor color;
    TimeSeries::Kind kind;
    Qt::PenStyle style;
    double width;
};

}  // namespace

void TimeChartPainter::paint(QPainter& p, const QRectF& area, const TimeChartData& d, const ChartStyle& st) {
    p.save();
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setRenderHint(QPainter::TextAntialiasing, true);
    p.fillRect(area, st.background);
    y_bytes_ = d.y_bytes;
    unit_ = d.unit;
    const QRectF r = area.adjusted(12, 10, -14, -8);
    const QFont title_font = font_px(st, 15, true), sub_font = font_px(st, 11.5), small = font_px(st, 11);
    const QFontMetricsF tfm(title_font), sfm(sub_font), lfm(small);
    double top = r.top();
    if (!d.title.isEmpty()) {
        p.setFont(title_font);
        p.setPen(st.text);
        p.drawText(QRectF(r.left(), top, r.width(), tfm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                   tfm.elidedText(d.title, Qt::ElideRight, r.width()));
        top += tfm.height() + 2;
    }
    if (!d.subtitle.isEmpty()) {
        p.setFont(sub_font);
        p.setPen(st.muted);
        p.drawText(QRectF(r.left(), top, r.width(), sfm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                   sfm.elidedText(d.subtitle, Qt::ElideRight, r.width()));
        top += sfm.height() + 2;
    }

    // Data range: what fits sets the axis; the rest is drawn clipped or listed above it.
    double xmin = std::numeric_limits<double>::max(), xmax = std::numeric_limits<double>::lowest();
    double ymin = std::numeric_limits<double>::max(), ymax = 0;
    bool any = false;
    std::vector<double> stack;   // running top of the stacked areas, per index
    for (const auto& s : d.series) {
        if (s.points.empty()) continue;
        any = true;
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
    std::vector<const TimeMarker*> drawn, off;
    for (const auto& m : d.markers) {
        if (m.value <= 0 || !m.fit) continue;
        if (any && data_max > 0 && m.value > d.off_scale_factor * data_max) off.push_back(&m);
        else drawn.push_back(&m);
    }
    for (const TimeMarker* m : drawn) ymax = std::max(ymax, m->value), ymin = std::min(ymin, m->value);
    const double fit_max = ymax;
    for (const auto& m : d.markers) {
        if (m.value <= 0 || m.fit) continue;
        if (m.value <= fit_max * 1.08) drawn.push_back(&m), ymax = std::max(ymax, m.value);
        else off.push_back(&m);
    }
    QStringList off_lines;   // series that leave the axis: "Process RSS up to 346 MB" (not drawn)
    std::vector<const TimeSeries*> hidden;
    for (const auto& s : d.series) {
        if (s.fit || s.kind == TimeSeries::Kind::Area || s.points.empty()) continue;
        double m = 0;
        for (const auto& pt : s.points) m = std::max(m, pt.y());
        if (m > ymax * 1.08 && ymax > 0) {
            off_lines << s.label.section(" (", 0, 0) + " up to " +
                             (d.y_bytes ? bytes_axis_text(m, d.unit) : QLocale().toString(m, 'f', 0));
            hidden.push_back(&s);
        } else {
            ymax = std::max(ymax, m);
        }
    }
    auto is_hidden = [&](const TimeSeries& s) { return std::find(hidden.begin(), hidden.end(), &s) != hidden.end(); };
    if (!any && drawn.empty()) {
        p.setFont(font_px(st, 13));
        p.setPen(st.muted);
        p.drawText(QRectF(r.left(), top, r.width(), r.bottom() - top), Qt::AlignCenter | Qt::TextWordWrap, d.empty_message);
        plot_ = {};
        p.restore();
        return;
    }
    if (d.y_from_zero || !(ymin < ymax)) ymin = d.y_from_zero ? 0 : ymin;
    if (!(ymax > ymin)) ymax = ymin + (ymin != 0 ? std::fabs(ymin) * 0.1 : 1.0);
    if (!any) xmin = 0, xmax = 1;
    if (d.x_is_time) xmin = std::min(0.0, xmin);
    if (!(xmax > xmin)) xmax = xmin + 1;

    // Off-scale markers: one muted line above the plot.
    if (!off.empty() || !off_lines.isEmpty()) {
        QStringList names = off_lines;
        for (const TimeMarker* m : off) names << m->label;
        p.setFont(small);
        p.setPen(st.muted);
        // At most two lines: as many names as fit on the first, the rest (elided) on the second.
        QStringList out;
        QString cur = "↑ above this scale: ";
        bool fresh = true;
        for (const QString& name : names) {
            const QString candidate = cur + (fresh ? "" : " · ") + name;
            if (!fresh && out.isEmpty() && lfm.horizontalAdvance(candidate) > r.width()) {
                out << cur;
                cur = "    " + name;
            } else {
                cur = candidate;
            }
            fresh = false;
        }
        out << cur;
        for (const QString& l : out) {
            p.drawText(QRectF(r.left(), top, r.width(), lfm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                       lfm.elidedText(l, Qt::ElideRight, r.width()));
            top += lfm.height();
        }
        top += 2;
    }

    // Legend and footnote at the bottom.
    std::vector<LegendItem> legend;
    for (const auto& s : d.series)
        if (!s.points.empty() && !is_hidden(s)) legend.push_back({s.label, s.color, s.kind, s.style, s.width});
    for (const TimeMarker* m : drawn)
        legend.push_back({m->label, m->color.isValid() ? m->color : st.ceiling, TimeSeries::Kind::Line, m->style, 1.6});
    const double sw = 22, gap = 14, row_h = lfm.height() + 4;
    std::vector<std::vector<std::pair<const LegendItem*, double>>> rows(1);
    double x = 0;
    for (const auto& item : legend) {
        const double w = sw + 5 + std::min(lfm.horizontalAdvance(item.label), r.width() - sw - 5);
        if (x > 0 && x + w > r.width()) {
            rows.emplace_back();
            x = 0;
        }
        rows.back().push_back({&item, w});
        x += w + gap;
    }
    if (rows.back().empty()) rows.pop_back();
    QStringList foot_lines;
    if (!d.footnote.isEmpty() && r.height() > 260) {
        // Wrap into at most two lines.
        const QStringList words = d.footnote.split(' ');
        QString line;
        for (const QString& w : words) {
            const QString next = line.isEmpty() ? w : line + ' ' + w;
            if (lfm.horizontalAdvance(next) > r.width() && !line.isEmpty()) {
                foot_lines << line;
                line = w;
            } else {
                line = next;
            }
        }
        if (!line.isEmpty()) foot_lines << line;
        while (foot_lines.size() > 2) foot_lines.removeLast();
    }
    const double legend_h = double(rows.size()) * row_h;
    const double foot_h = double(foot_lines.size()) * lfm.height();
    const double bottom = r.bottom() - legend_h - foot_h - (foot_lines.isEmpty() ? 0 : 4);

    // Axis ticks.
    double ystep, scale = 1;
    QString yunit = d.y_title;
    if (d.y_bytes) {
        const auto [sc, name] = byte_scale(ymax, d.unit);
        scale = sc;
        yunit = name;
    }
    ystep = nice_step((ymax - ymin) / scale, 5) * scale;
    y0_ = d.y_from_zero ? 0 : std::floor(ymin / ystep) * ystep;
    y1_ = std::ceil(ymax / ystep) * ystep;
    if (y1_ <= ymax + 1e-12 * std::fabs(ymax) && !d.y_from_zero) y1_ += 0;   // keep the top line on the data
    if (!(y1_ > y0_)) y1_ = y0_ + ystep;
    double xstep = d.x_is_time ? time_step(xmax - xmin, 6) : std::max(1.0, nice_step(xmax - xmin, 6));
    if (!d.x_is_time && std::fmod(xstep, 1.0) != 0) xstep = std::ceil(xstep);   // steps are whole
    if (!d.x_is_time && xstep >= 2 && xstep < 10 && std::fmod(xstep, 5.0) != 0 && xstep != 2) xstep = 5;
    x0_ = xmin;
    x1_ = xmax;

    p.setFont(small);
    double label_w = lfm.horizontalAdvance(yunit);
    for (double v = y0_; v <= y1_ + ystep * 0.01; v += ystep)
        label_w = std::max(label_w, lfm.horizontalAdvance(number_text(v / scale, ystep / scale)));
    const double plot_top = top + lfm.height() + 6;
    const double plot_bottom = bottom - lfm.height() - 8 - lfm.height();
    plot_ = QRectF(r.left() + label_w + 8, plot_top, r.width() - label_w - 8, std::max(20.0, plot_bottom - plot_top));
    auto X = [&](double v) { return plot_.left() + (v - x0_) / (x1_ - x0_) * plot_.width(); };
    auto Y = [&](double v) { return plot_.bottom() - (v - y0_) / (y1_ - y0_) * plot_.height(); };

    // Grid and y labels.
    p.setPen(st.muted);
    p.drawText(QRectF(r.left(), top, label_w + 40, lfm.height()), Qt::AlignLeft | Qt::AlignVCenter, yunit);
    for (double v = y0_; v <= y1_ + ystep * 0.01; v += ystep) {
        const double y = Y(v);
        p.setPen(QPen(st.grid, 1));
        p.drawLine(QPointF(plot_.left(), y), QPointF(plot_.right(), y));
        p.setPen(st.muted);
        p.drawText(QRectF(r.left(), y - lfm.height() / 2, label_w, lfm.height()), Qt::AlignRight | Qt::AlignVCenter,
                   number_text(v / scale, ystep / scale));
    }
    // X ticks.
    const double first = std::ceil(x0_ / xstep) * xstep;
    for (double v = first; v <= x1_ + xstep * 1e-6; v += xstep) {
        const double xx = X(v);
        p.setPen(QPen(st.grid, 1));
        p.drawLine(QPointF(xx, plot_.bottom()), QPointF(xx, plot_.bottom() + 4));
        p.setPen(st.muted);
        const QString text = d.x_is_time ? time_text(v, x1_ - x0_) : QLocale().toString(qint64(std::llround(v)));
        p.drawText(QRectF(xx - 40, plot_.bottom() + 5, 80, lfm.height()), Qt::AlignHCenter | Qt::AlignTop, text);
    }
    p.drawText(QRectF(plot_.left(), plot_.bottom() + 5 + lfm.height(), plot_.width(), lfm.height()),
               Qt::AlignRight | Qt::AlignTop, d.x_title);
    p.setPen(QPen(st.muted, 1));
    p.drawLine(plot_.bottomLeft(), plot_.bottomRight());

    // Stacked areas.
    p.save();
    p.setClipRect(plot_.adjusted(-1, -1, 1, 1));
    std::vector<double> base;
    for (const auto& s : d.series) {
        if (s.kind != TimeSeries::Kind::Area || s.points.empty()) continue;
        if (base.size() < s.points.size()) base.resize(s.points.size(), 0.0);
        QPolygonF poly;
        poly.reserve(qsizetype(s.points.size() * 2));
        std::vector<double> next(base);
        for (size_t i = 0; i < s.points.size(); ++i) {
            next[i] = base[i] + s.points[i].y();
            poly << QPointF(X(s.points[i].x()), Y(next[i]));
        }
        for (size_t i = s.points.size(); i-- > 0;) poly << QPointF(X(s.points[i].x()), Y(base[i]));
        QColor fill = s.color;
        p.setPen(Qt::NoPen);
        p.setBrush(fill);
        p.drawPolygon(poly);
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(fill.darker(130), 0.8));
        p.drawPolyline(poly.data(), qsizetype(s.points.size()));
        base = std::move(next);
    }
    // Markers.
    std::vector<QRectF> used;
    for (const TimeMarker* m : drawn) {
        const QColor c = m->color.isValid() ? m->color : st.ceiling;
        const double y = Y(m->value);
        p.setPen(QPen(c, 1.6, m->style));
        p.drawLine(QPointF(plot_.left(), y), QPointF(plot_.right(), y));
    }
    // Lines and points.
    for (const auto& s : d.series) {
        if (s.kind == TimeSeries::Kind::Area || s.points.empty() || is_hidden(s)) continue;
        QPolygonF poly;
        poly.reserve(qsizetype(s.points.size()));
        for (const auto& pt : s.points) poly << QPointF(X(pt.x()), Y(pt.y()));
        if (s.kind == TimeSeries::Kind::Points) {
            p.setPen(QPen(s.color.darker(120), 1));
            p.setBrush(s.color);
            for (const auto& q : poly) p.drawEllipse(q, 3.2, 3.2);
            p.setBrush(Qt::NoBrush);
        } else {
            if (s.halo && poly.size() > 1) {
                QPen halo(st.background, s.width + 3.0);
                halo.setJoinStyle(Qt::RoundJoin);
                p.setPen(halo);
                p.drawPolyline(poly);
            }
            QPen pen(s.color, s.width, s.style);
            pen.setCapStyle(Qt::FlatCap);
            pen.setJoinStyle(Qt::RoundJoin);
            p.setPen(pen);
            if (poly.size() == 1) p.drawEllipse(poly[0], 2.5, 2.5);
            else p.drawPolyline(poly);
        }
    }
    p.restore();
    // Marker labels, right-aligned above their line, nudged apart.
    p.setFont(small);
    std::vector<const TimeMarker*> by_y(drawn);
    std::sort(by_y.begin(), by_y.end(), [](const TimeMarker* a, const TimeMarker* b) { return a->value > b->value; });
    for (const TimeMarker* m : by_y) {
        const QColor c = m->color.isValid() ? m->color : st.ceiling;
        const double w = std::min(lfm.horizontalAdvance(m->label) + 8, plot_.width());
        QRectF box(plot_.right() - w, Y(m->value) - lfm.height() - 1, w, lfm.height());
        for (const QRectF& u : used)
            if (box.intersects(u)) box.moveTop(u.bottom() + 1);
        box.moveTop(std::max(box.top(), plot_.top() - lfm.height()));
        used.push_back(box);
        QColor bg = st.background;
        bg.setAlpha(200);
        p.fillRect(box, bg);
        p.setPen(c);
        p.drawText(box.adjusted(4, 0, -4, 0), Qt::AlignRight | Qt::AlignVCenter,
                   lfm.elidedText(m->label, Qt::ElideRight, box.width() - 8));
    }

    // Legend.
    double ly = bottom + 2;
    for (const auto& row : rows) {
        double lx = r.left();
        for (const auto& [item, w] : row) {
            const QRectF swatch(lx, ly + (row_h - 10) / 2 - 1, sw, 10);
            if (item->kind == TimeSeries::Kind::Area) {
                p.fillRect(swatch.adjusted(4, 0, -4, 0), item->color);
            } else if (item->kind == TimeSeries::Kind::Points) {
                p.setPen(QPen(item->color.darker(120), 1));
                p.setBrush(item->color);
                p.drawEllipse(swatch.center(), 3.2, 3.2);
                p.setBrush(Qt::NoBrush);
            } else {
                p.setPen(QPen(item->color, std::min(item->width, 2.4), item->style));
                p.drawLine(QPointF(swatch.left(), swatch.center().y()), QPointF(swatch.right(), swatch.center().y()));
            }
            p.setPen(st.text);
            p.drawText(QRectF(lx + sw + 5, ly, w - sw - 5, row_h), Qt::AlignLeft | Qt::AlignVCenter,
                       lfm.elidedText(item->label, Qt::ElideRight, w - sw - 5));
            lx += w + gap;
        }
        ly += row_h;
    }
    p.setPen(st.muted);
    for (const QString& line : foot_lines) {
        p.drawText(QRectF(r.left(), ly + 4, r.width(), lfm.height()), Qt::AlignLeft | Qt::AlignVCenter, line);
        ly += lfm.height();
    }
    p.restore();
}

QString TimeChartPainter::tooltip(const QPointF& pos, const TimeChartData& d) const {
    if (plot_.isEmpty() || !plot_.adjusted(-4, -4, 4, 4).contains(pos)) return {};
    const double xv = x0_ + (pos.x() - plot_.left()) / plot_.width() * (x1_ - x0_);
    auto value_text = [&](double v) {
        return d.y_bytes ? qs(format_bytes(v, d.unit, 2)) : QLocale().toString(v, 'f', std::fabs(v) < 100 ? 3 : 0);
    };
    QString html = "<b>" + (d.x_is_time ? QString("t = %1 s").arg(xv, 0, 'f', 1) : QString("step %1").arg(std::llround(xv))) + "</b>";
    double stacked = 0;
    bool areas = false;
    for (const auto& s : d.series) {
        if (s.points.empty()) continue;
        auto it = std::lower_bound(s.points.begin(), s.points.end(), xv, [](const QPointF& a, double x) { return a.x() < x; });
        if (it == s.points.end()) it = std::prev(it);
        else if (it != s.points.begin() && std::fabs(std::prev(it)->x() - xv) < std::fabs(it->x() - xv)) it = std::prev(it);
        if (s.kind == TimeSeries::Kind::Area) stacked += it->y(), areas = true;
        html += QString("<br><span style='color:%1'>■</span> %2: %3").arg(s.color.name(), s.label.toHtmlEscaped(), value_text(it->y()));
    }
    if (areas) html += "<br>all tensors: " + value_text(stacked);
    for (const auto& m : d.markers) html += "<br>" + m.label.toHtmlEscaped();
    return html;
}

QImage render_time_chart(const TimeChartData& d, const ImageOptions& o) {
    QImage img(std::max(1, o.width), std::max(1, o.height), QImage::Format_ARGB32_Premultiplied);
    const int dpm = int(std::lround(o.dpi / 0.0254));
    img.setDotsPerMeterX(dpm);
    img.setDotsPerMeterY(dpm);
    ChartStyle st = o.dark ? ChartStyle::dark() : ChartStyle::light();
    st.font_family = "DejaVu Sans";
    img.fill(st.background);
    QPainter p(&img);
    const double s = o.dpi / 96.0;
    p.scale(s, s);
    TimeChartPainter painter;
    painter.paint(p, QRectF(0, 0, img.width() / s, img.height() / s), d, st);
    p.end();
    return img;
}

bool export_time_chart(const TimeChartData& d, const QString& path, const ImageOptions& o, QString* error) {
    auto fail = [&](const QString& m) {
        if (error) *error = m;
        return false;
    };
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (o.width < 16 || o.height < 16 || o.width > 20000 || o.height > 20000 || o.dpi < 24 || o.dpi > 1200)
        return fail("image size must be 16–20000 pixels and DPI 24–1200");
    ChartStyle st = o.dark ? ChartStyle::dark() : ChartStyle::light();
    st.font_family = "DejaVu Sans";
    const double s = o.dpi / 96.0;
    if (suffix == "png") {
        if (!render_time_chart(d, o).save(path, "PNG")) return fail("cannot write " + path);
        return true;
    }
    if (suffix == "svg") {
        QSvgGenerator gen;
        gen.setFileName(path);
        gen.setSize(QSize(o.width, o.height));
        gen.setViewBox(QRect(0, 0, o.width, o.height));
        gen.setResolution(int(std::lround(o.dpi)));
        gen.setTitle(d.title);
        gen.setDescription(d.subtitle);
        QPainter p;
        if (!p.begin(&gen)) return fail("cannot write " + path);
        p.scale(s, s);
        TimeChartPainter().paint(p, QRectF(0, 0, o.width / s, o.height / s), d, st);
        p.end();
        return QFileInfo::exists(path) || fail("cannot write " + path);
    }
    if (suffix == "pdf") {
        QPdfWriter pdf(path);
        pdf.setTitle(d.title);
        pdf.setCreator("Wingspan");
        pdf.setResolution(int(std::lround(o.dpi)));
        pdf.setPageSize(QPageSize(QSizeF(o.width * 72.0 / o.dpi, o.height * 72.0 / o.dpi), QPageSize::Point, QString(),
                                  QPageSize::ExactMatch));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        QPainter p;
        if (!p.begin(&pdf)) return fail("cannot write " + path);
        p.scale(s, s);
        TimeChartPainter().paint(p, QRectF(0, 0, pdf.width() / s, pdf.height() / s), d, st);
        p.end();
        return true;
    }
    return fail("unknown chart format '" + suffix + "' (use .png, .svg or .pdf)");
}

// ------------------------------------------------------------------ widget ----

TimeChartWidget::TimeChartWidget(QWidget* parent) : QWidget(parent) {
    setAttribute(Qt::WA_OpaquePaintEvent);
    setMouseTracking(true);
}

void TimeChartWidget::setData(TimeChartData data) {
    data_ = std::move(data);
    update();
}

void TimeChartWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    painter_.paint(p, QRectF(rect()), data_, ChartStyle::from_palette(palette()));
    ++paints_;
}

bool TimeChartWidget::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(e);
        const QString tip = painter_.tooltip(he->pos(), data_);
        if (tip.isEmpty()) QToolTip::hideText();
        else QToolTip::showText(he->globalPos(), tip, this);
        return true;
    }
    return QWidget::event(e);
}

}  // namespace wingspan::ui
