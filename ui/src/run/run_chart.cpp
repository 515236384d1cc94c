// The run panel's charts: memory over time (stacked per component, with the prediction, the
// machine's ceiling and the RSS Wingspan sampled itself), loss and tokens/s per step, and the
// predicted-vs-measured summary, as data; run_chart_view.cpp draws them with Qt Charts.
#include <algorithm>
#include <cmath>
#include <tuple>

#include <QLocale>

#include "wingspan/ui/run_device.hpp"
#include "wingspan/ui/run_charts.hpp"
#include "wingspan/ui/run_session.hpp"
#include "wingspan/ui/run_ranks.hpp"

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }
QString qs(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

const QColor kRssColor("#332288");        // measured process RSS and its prediction (not a component hue)
const QColor kOverlayColor("#6b6b6b");
const QColor kReservedColor("#882255");   // a GPU allocator's reserved bytes (not a component hue)    // the second run of a comparison
const QColor kLossColor("#0072B2");
const QColor kEvalColor("#E69F00");
const QColor kSpeedColor("#009E73");
// One line per rank, in greys and dark tones no component uses, told apart by their dashes too.
const QColor kRankColors[] = {QColor("#1d1f23"), QColor("#6b6b6b"), QColor("#3b3b6d"), QColor("#8c6d31")};
const Qt::PenStyle kRankStyles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine};

QString bytes_text(double b, ByteUnit unit, int = 1) { return format_run_bytes(b, unit); }

}  // namespace

// Bytes the way a run's scale reads: MB for small runs, GB with two decimals for big ones.
QString format_run_bytes(double b, ByteUnit unit, const QLocale& locale) {
    const bool bin = unit == ByteUnit::GiB;
    const double k = bin ? 1024.0 : 1000.0;
    auto fmt = [&locale](double v, const char* suffix) {
        return locale.toString(v, 'f', v >= 100 ? 0 : v >= 10 ? 1 : 2) + " " + suffix;
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

QString title_with_steps_run(QString title, const RunOptions* options, const RunRecord* record) {
    if (!options || !record || options->steps <= 0) return title;
    const std::int64_t run = record->steps().empty() ? 0 : record->steps().back().step;
    const QString asked = QString(" · %1 steps").arg(options->steps);
    if (run < options->steps && title.contains(asked))
        title.replace(asked, QString(" · %1 of %2 steps").arg(run).arg(options->steps));
    return title;
}

TimeChartData run_memory_chart(const RunChartInputs& in) {
    TimeChartData d;
    d.title = in.title.isEmpty() ? QString("Memory while training") : title_with_steps_run(in.title, in.options, in.record);
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
    if (in.device && in.device->hasReserved() && !in.device->device.isEmpty() && !in.device->device.startsWith("cpu")) {
        // A GPU's caching allocator holds more than the live tensors: drawn apart, above them.
        TimeSeries ts;
        ts.label = "Reserved by the allocator (" + in.device->device + ")";
        ts.color = kReservedColor;
        ts.style = Qt::DashDotLine;
        ts.width = 2.0;
        ts.points = thin_points(in.device->reserved, in.max_points);
        d.series.push_back(std::move(ts));
    }
    const bool ranked = in.ranks && in.ranks->multi();
    if (ranked) {
        // Every rank's live tensors, rank 0's being the top of the areas.
        for (const auto& [rank, m] : in.ranks->ranks) {
            if (m.allocated.empty()) continue;
            TimeSeries ts;
            ts.label = QString("Rank %1: all tensors").arg(rank);
            ts.color = kRankColors[size_t(rank) % std::size(kRankColors)];
            ts.style = kRankStyles[size_t(rank) % std::size(kRankStyles)];
            ts.width = 2.0;
            ts.halo = true;
            ts.points = thin_points(m.allocated, in.max_points);
            d.series.push_back(std::move(ts));
        }
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
        d.markers.push_back({(ranked ? "Predicted peak per device" + (in.ranks->sharding.isEmpty() ? QString() : " (" + in.ranks->sharding + ")") +
                                           ", tensors "
                                     : QString("Predicted peak, tensors ")) +
                                 bytes_text(double(r.predicted_peak()), in.unit),
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
    // Several ranks: their summary names the tensor peaks (rank 0's is one of them).
    if (r.measured_peak() > 0 && !ranked) sub << "tensor peak " + bytes_text(double(r.measured_peak()), in.unit);
    QString rss_text;
    if (r.measured_rss_peak() > 0) rss_text = "RSS peak " + bytes_text(double(r.measured_rss_peak()), in.unit) + " by itself";
    if (in.rss && !in.rss->empty()) {
        double m = 0;
        for (const auto& p : *in.rss) m = std::max(m, p.y());
        rss_text += (rss_text.isEmpty() ? QString("RSS peak ") : QString(" / ")) + bytes_text(m, in.unit) + " by Wingspan";
    }
    if (!rss_text.isEmpty()) sub << rss_text;
    if (in.device && in.device->hasReserved() && !in.device->device.startsWith("cpu") && !in.device->device.isEmpty())
        sub << "reserved peak " + bytes_text(double(in.device->reserved_peak), in.unit) + " on " + in.device->device;
    if (ranked) sub.prepend(in.ranks->summaryText(in.unit));
    d.subtitle = sub.isEmpty() ? QString("Live tensor bytes per component, from the trainer's memory events") : sub.join(" · ");
    if (ranked) {
        d.footnote = "Areas: rank 0's live tensors by component; lines: each rank's live tensors (the trainer's counting "
                     "allocator). Dashed: core's prediction for one device of this sharding. The process line is rank 0's "
                     "resident memory, read by Wingspan from /proc.";
        return d;
    }
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
    // DPO/ORPO: the reward margin and accuracy beside the loss (issue 31).
    const bool preference = !r.steps().empty() && std::isfinite(r.steps().back().reward_accuracy);
    if (preference) {
        for (const auto& [label, color, field] : {std::tuple{"Reward margin", QColor("#009E73"), &StepSample::reward_margin},
                                                  std::tuple{"Reward accuracy", QColor("#CC79A7"), &StepSample::reward_accuracy}}) {
            TimeSeries t;
            t.label = label;
            t.color = color;
            t.style = Qt::DashLine;
            t.points = step_series(r.steps(), in.max_points, field);
            std::erase_if(t.points, [](const QPointF& p) { return !std::isfinite(p.y()); });
            if (!t.points.empty()) d.series.push_back(std::move(t));
        }
    }
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
        if (preference)
            d.subtitle += QString(" · reward margin %1, accuracy %2").arg(last.reward_margin, 0, 'f', 3).arg(last.reward_accuracy, 0, 'f', 2);
    }
    return d;
}

// " · step 0.100 s measured, 0.125 s predicted (+25.0 %)": the error is the prediction's, as the
// memory summary's (predicted − measured) / measured.
static QString step_time_comparison(const RunRecord& r) {
    const double measured = r.measured_step_time_s(), predicted = r.predicted_step_time_s();
    if (measured <= 0 || predicted <= 0) return {};
    auto secs = [](double s) { return QLocale().toString(s, 'f', s < 10 ? 3 : 1) + " s"; };
    return QString(" · step %1 measured, %2 predicted (%3%4 %)")
        .arg(secs(measured), secs(predicted), predicted >= measured ? "+" : "−")
        .arg(std::fabs(100.0 * (predicted - measured) / measured), 0, 'f', 1);
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
    // The planner's speed for this run (the trainer's `predicted` event), as the memory chart
    // draws the predicted peak: a line to read the measured steps against.
    if (r.predicted_tokens_per_s() > 0)
        d.markers.push_back({"Predicted " + QLocale().toString(r.predicted_tokens_per_s(), 'f', 0) + " tokens/s",
                             r.predicted_tokens_per_s(), QColor(), Qt::DashDotLine, true});
    if (!r.steps().empty()) {
        std::vector<double> v;
        for (const auto& s : r.steps()) v.push_back(s.tokens_per_s);
        std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
        d.subtitle = QString("median %1 tokens/s").arg(QLocale().toString(v[v.size() / 2], 'f', 0));
        d.subtitle += step_time_comparison(r);
    }
    if (r.predicted_step_time_s() > 0)
        d.footnote = "Predicted: the trainer's `predicted` event (core's speed model for this machine). Measured: the median "
                     "step after the first (warm-up) step.";
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
    if (d.bars.size() == 2 && !run_reached_peak(r)) {
        d.bars[1].sublabel += " so far";
        d.bars[1].verdict = "not reached: the run ended before its first step";
    } else if (d.bars.size() == 2 && d.bars[1].total > 0) {
        const double err = 100.0 * double(d.bars[0].total - d.bars[1].total) / double(d.bars[1].total);
        d.bars[0].verdict = QString("%1%2 % vs measured").arg(err >= 0 ? "+" : "").arg(err, 0, 'f', 1);
    }
    return d;
}

bool run_reached_peak(const RunRecord& r) { return r.reached_peak(); }

Table run_summary_table(const RunRecord& r, ByteUnit unit) {
    Table t;
    t.id = "run-summary";
    t.title = "Predicted vs measured";
    t.caption = "Per component: the prediction's bytes and the peak measured (exact from the trainer's allocator at the end, "
                "sampled while it runs); error = (predicted − measured) / measured";
    t.headers = {"Component", "Predicted", "Measured", "Error"};
    // A run that ended before its first step never reached its peak: what it measured is what
    // it got to, not an error of the prediction.
    const bool reached = run_reached_peak(r);
    auto error_cell = [reached](std::int64_t predicted, std::int64_t measured) {
        TableCell c;
        if (!reached && measured < predicted) {
            c.text = "not reached";
            return c;
        }
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
        c.text = b > 0 ? format_run_bytes(double(b), unit, QLocale::c()).toStdString() : "—";   // exported as CSV/Markdown
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
                if (v != it->end() && v->is_number_integer()) c.measured = std::max(c.measured, v->get<std::int64_t>());
            }
        }
    }
    auto measured_cell = [&](std::int64_t predicted, std::int64_t measured) {
        TableCell c = bytes_cell(measured);
        if (!reached && measured < predicted) c.text = measured > 0 ? c.text + " so far" : "not reached";
        return c;
    };
    for (const auto& c : s.components)
        t.rows.push_back({{std::string(component_label(c.component)), {}, {}}, bytes_cell(c.predicted),
                          measured_cell(c.predicted, c.measured), error_cell(c.predicted, c.measured)});
    if (s.predicted_peak > 0 || s.measured_peak > 0)
        t.rows.push_back({{"All tensors at the peak", {}, {}}, bytes_cell(s.predicted_peak),
                          measured_cell(s.predicted_peak, s.measured_peak), error_cell(s.predicted_peak, s.measured_peak)});
    if (s.predicted_total > 0 || s.measured_rss_peak > 0)
        t.rows.push_back({{"Process total (RSS)", {}, {}}, bytes_cell(s.predicted_total),
                          measured_cell(s.predicted_total, s.measured_rss_peak),
                          error_cell(s.predicted_total, s.measured_rss_peak)});
    return t;
}

// ------------------------------------------------------------------ text ----

QString time_chart_text_at(const TimeChartData& d, double xv) {
    auto value_text = [&](double v) {
        return d.y_bytes ? format_run_bytes(v, d.unit) : QLocale().toString(v, 'f', std::fabs(v) < 100 ? 3 : 0);
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

}  // namespace wingspan::ui
