// ChartData: what the planner's charts show, built from core's results, and the pieces every
// renderer shares (axis, units, hidden segments, tooltips, colours). No drawing here.
#include "wingspan/ui/chart.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <QLocale>
#include <QPalette>

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QColor blend(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(float(a.redF() * (1 - t) + b.redF() * t), float(a.greenF() * (1 - t) + b.greenF() * t),
                            float(a.blueF() * (1 - t) + b.blueF() * t));
}

bool is_dark(const QColor& c) { return 0.2126 * c.redF() + 0.7152 * c.greenF() + 0.0722 * c.blueF() < 0.5; }

QString html_escape(const QString& s) { return s.toHtmlEscaped(); }

QString bytes_exact(std::int64_t b, ByteUnit unit) {
    return qs(format_count(b)) + " bytes (" + qs(format_bytes(double(b), unit, 2)) + ")";
}

ChartSegment segment_for(const MemoryEstimate& e, const std::map<Component, std::int64_t>& maxima, Component c,
                         std::int64_t bytes, ByteUnit unit) {
    ChartSegment s;
    s.component = c;
    s.bytes = bytes;
    s.label = qs(std::string(component_label(c)));
    s.formula = qs(e.explain(c));
    // The lesson's per-parameter rules count each component at its own largest; the chart
    // shows the bytes alive at the step's peak. Say so where the two differ.
    if (auto it = maxima.find(c); it != maxima.end() && double(it->second) > 1.02 * double(bytes))
        s.peak_note = "At the peak (" + qs(e.peak_phase) + ") only " + qs(format_bytes(double(bytes), unit)) +
                      " of it is alive; its own largest is " + qs(format_bytes(double(it->second), unit)) +
                      ", in another phase of the step.";
    return s;
}

std::vector<ChartSegment> segments_of(const MemoryEstimate& e, ByteUnit unit) {
    std::vector<ChartSegment> out;
    const auto maxima = e.component_maxima();
    for (Component c : kAllComponents) {
        auto it = e.components.find(c);
        if (it != e.components.end() && it->second > 0) out.push_back(segment_for(e, maxima, c, it->second, unit));
    }
    return out;
}

// `serving`: the peak of a generation step (weights, KV cache), not of a training step.
QString footnote_for(ByteUnit unit, bool ceilings, bool serving = false) {
    QString unit_text = unit == ByteUnit::GiB ? "GiB = 2³⁰ bytes" : "GB = 10⁹ bytes";
    QString s = QString("Memory the device holds at the peak of ") +
                (serving ? "serving (weights, KV cache, one forward)" : "a training step") + " · " + unit_text;
    if (ceilings) s += " · dashed: usable ceiling · tight = within 10 % of it";
    return s;
}


// Where a machine's framework set what the plan left open (mlx-lm: bf16, the last 16 layers, no
// checkpointing): "mlx-lm: bf16, LoRA on the last 16 layers, checkpointing off". Empty when none.
bool precision_is_frameworks(const TrainingSetup& asked, const MachineVerdict& v) {
    return v.framework && v.setup.precision != asked.precision && !v.framework->default_precision.empty() &&
           to_string(v.setup.precision) == v.framework->default_precision;
}

// `brief`: the bar's caption under the bar ("mlx-lm: 16 layers, no ckpt"); else the
// tooltip's words ("mlx-lm: bf16, LoRA on the last 16 layers, checkpointing off").
QString framework_defaults_text(const TrainingSetup& asked, const MachineVerdict& v, bool brief) {
    QStringList changed;
    // The caption under an 85-pixel bar has two short lines: the precision stays in the tooltip.
    if (precision_is_frameworks(asked, v) && !brief) changed << qs(std::string(to_string(v.setup.precision)));
    if (v.setup.lora_layers != asked.lora_layers && v.setup.lora_layers > 0)
        changed << QString(brief ? "%1 layers" : "LoRA on the last %1 layers").arg(v.setup.lora_layers);
    if (v.setup.grad_checkpointing != asked.grad_checkpointing)
        changed << (brief ? QString(v.setup.grad_checkpointing ? "ckpt" : "no ckpt")
                          : QString("checkpointing %1").arg(v.setup.grad_checkpointing ? "on" : "off"));
    if (changed.isEmpty() || !v.framework) return {};
    return qs(v.framework->id) + ": " + changed.join(", ");
}

}  // namespace

QColor component_qcolor(Component c) { return QColor(QString::fromLatin1(component_color(c).data(), int(component_color(c).size()))); }

QColor fit_qcolor(const ChartStyle& style, Fit fit) {
    return fit == Fit::Fits ? style.fits : fit == Fit::Tight ? style.tight : style.no;
}

QString chart_scale_id(ChartScale s) { return s == ChartScale::Full ? "full" : s == ChartScale::Log ? "log" : "auto"; }

ChartScale parse_chart_scale(const QString& id) {
    return id == "full" ? ChartScale::Full : id == "log" ? ChartScale::Log : ChartScale::Auto;
}

const ChartBar* ChartData::bar(const QString& id) const {
    for (const auto& b : bars)
        if (b.id == id) return &b;
    return nullptr;
}

std::vector<Component> ChartData::legend() const {
    std::vector<Component> out;
    for (Component c : kAllComponents) {
        bool present = false;
        for (const auto& b : bars)
            for (const auto& s : b.segments) present |= s.component == c && s.bytes > 0;
        if (present) out.push_back(c);
    }
    return out;
}

bool ChartData::has_offloaded() const {
    for (const auto& b : bars)
        for (const auto& s : b.segments)
            if (!s.component && s.bytes > 0) return true;
    return false;
}

// ------------------------------------------------------------------------ builders ----

ChartData machines_chart(const Evaluation& eval, ByteUnit unit) {
    ChartData d;
    d.unit = unit;
    if (!eval.ok()) {
        d.title = "This plan cannot be computed";
        d.empty_message = qs(eval.error);
        d.is_error = true;
        return d;
    }
    const auto& p = eval.reference.params;
    d.title = qs(eval.model.name) + " — " + qs(method_label(eval.setup.method)) + ": memory on each machine";
    d.subtitle = qs(format_count(p.total)) + " parameters";
    if (eval.setup.trains())
        d.subtitle += ", " + qs(format_count(p.trainable)) + " trainable · ";
    else
        d.subtitle += " · ";
    d.subtitle += qs(describe_setup(eval.setup));
    if (eval.model.interpolated) d.subtitle += " · size interpolated between two real family members";
    if (!eval.reference.peak_phase.empty()) d.subtitle += " · peak: " + qs(eval.reference.peak_phase);
    d.footnote = footnote_for(unit, true, !eval.setup.trains());
    for (const auto& v : eval.verdicts) {
        const QString defaults = framework_defaults_text(eval.setup, v, false);
        ChartBar b;
        b.id = qs(v.machine->id);
        b.label = qs(short_machine_name(*v.machine));
        b.sublabel = qs(format_bytes(double(v.usable_bytes), unit)) + " usable";
        if (v.setup.precision != eval.setup.precision && !precision_is_frameworks(eval.setup, v))
            b.note = "runs in " + qs(std::string(to_string(v.setup.precision))).section('-', 0, 0) +
                     (v.machine->kind == MachineKind::Cpu ? "" : " (no bf16)");
        if (!defaults.isEmpty())
            b.note = (b.note.isEmpty() ? QString() : b.note + "; ") + framework_defaults_text(eval.setup, v, true);
        b.segments = segments_of(v.estimate, unit);
        b.total = v.estimate.total_bytes;
        if (v.needed_bytes > v.estimate.total_bytes) {
            ChartSegment host;
            host.bytes = v.needed_bytes - v.estimate.total_bytes;
            host.label = "Offloaded state (same memory pool)";
            host.formula = "optimizer state and master weights moved to host RAM, which on this machine is the same pool";
            b.segments.push_back(host);
            b.total = v.needed_bytes;
        } else if (v.estimate.host_bytes > 0) {
            // A separate host RAM: its part is not on the device bar; the caption names it and
            // the verdict checks it (core's host_fits).
            b.host_bytes = v.estimate.host_bytes;
            b.host_capacity = v.machine->host_memory_bytes;
            b.host_fits = v.host_fits;
            const QString host = (v.host_fits ? "+ " : "✗ ") + qs(format_bytes(double(b.host_bytes), unit)) + " host RAM" +
                                 (b.host_capacity > 0 ? " of " + qs(format_bytes(double(b.host_capacity), unit)) : QString());
            b.note = b.note.isEmpty() ? host : host + "; " + b.note;
        }
        b.ceiling = v.usable_bytes;
        b.fit = v.fit;
        b.margin = v.margin_bytes;
        b.verdict = qs(verdict_text(v, unit));
        QString details = "<b>" + html_escape(qs(v.machine->name)) + "</b><br>" + html_escape(qs(v.framework->name)) +
                          "<br>needs " + bytes_exact(v.needed_bytes, unit) + "<br>usable " +
                          bytes_exact(v.usable_bytes, unit) + "<br><b>" + html_escape(b.verdict) + "</b>";
        if (b.host_bytes > 0)
            details += "<br>host RAM: " + bytes_exact(b.host_bytes, unit) + " offloaded" +
                       (b.host_capacity > 0 ? " of " + bytes_exact(b.host_capacity, unit) : QString()) +
                       (b.host_fits ? QString() : " — <b>does not fit</b>");
        if (eval.setup.precision_auto)
            details += "<br>" + html_escape(qs(v.precision_reason));
        else if (v.setup.precision != eval.setup.precision)
            details += "<br>runs in " + qs(std::string(to_string(v.setup.precision)));
        if (!defaults.isEmpty())
            details += "<br>" + html_escape(defaults) + " (its defaults for what the plan leaves open, as "
                       "<tt>wingspan plan</tt> takes them)";
        details += "<br>≈ " + QString::number(v.speed.tokens_per_s, 'f', 0) + " tokens/s";
        for (const auto& n : v.notes) details += "<br><i>" + html_escape(qs(n)) + "</i>";
        b.details = details;
        d.bars.push_back(std::move(b));
    }
    if (d.bars.empty()) {
        d.empty_message = eval.missing_machines.empty()
                              ? "No machine selected. This plan needs " +
                                    qs(format_bytes(double(eval.reference.total_bytes), unit)) + " with " +
                                    qs(eval.reference_framework->name.substr(0, eval.reference_framework->name.find(" ("))) +
                                    ".\nTick machines in the list on the right to see where it fits."
                              : "None of this plan's machines are known here: " +
                                    qs([&] {
                                        std::string s;
                                        for (const auto& m : eval.missing_machines) s += (s.empty() ? "" : ", ") + m;
                                        return s;
                                    }());
    }
    return d;
}

ChartData methods_chart(const ProfileLibrary& lib, const Plan& plan, const Evaluation& eval, ByteUnit unit) {
    ChartData d;
    d.unit = unit;
    if (!eval.ok()) {
        d.title = "This plan cannot be computed";
        d.empty_message = qs(eval.error);
        d.is_error = true;
        return d;
    }
    (void)lib;
    (void)plan;
    const FrameworkProfile& ref = *eval.reference_framework;
    d.title = qs(eval.model.name) + ": full fine-tune vs LoRA vs QLoRA";
    TrainingSetup shown = eval.setup;
    d.subtitle = "Same model, same batch: seq " + qs(format_count(shown.seq_len)) + " × batch " +
                 QString::number(shown.micro_batch) + ", checkpointing " + (shown.grad_checkpointing ? "on" : "off") +
                 ", " + qs(to_string(shown.optimizer)) + " · with " + qs(ref.name);
    d.footnote = footnote_for(unit, false) + " · lines: usable memory of the selected machines";
    for (auto& [label, setup] : method_variants(eval.setup)) {
        ChartBar b;
        b.id = qs(to_string(setup.method));
        b.label = qs(label);
        try {
            setup.validate(eval.model.arch);
        } catch (const std::exception& e) {
            continue;
        }
        const MemoryEstimate est = estimate_memory(eval.model.arch, setup, ref);
        b.segments = segments_of(est, unit);
        b.total = est.total_bytes;
        b.sublabel = qs(format_count(est.params.trainable)) + " trainable";
        b.details = "<b>" + html_escape(qs(label)) + "</b><br>total " + bytes_exact(est.total_bytes, unit) +
                    "<br>peak of allocated tensors " + bytes_exact(est.peak_allocated_bytes, unit) + " (" +
                    qs(est.peak_phase) + ")";
        d.bars.push_back(std::move(b));
    }
    for (const auto& v : eval.verdicts)
        d.lines.push_back({qs(short_machine_name(*v.machine)), v.usable_bytes});
    return d;
}

ChartData size_chart(const ProfileLibrary& lib, const nlohmann::json& s, const std::vector<const MachineProfile*>& machines,
                     ByteUnit unit) {
    ChartData d;
    d.unit = unit;
    d.title = qs(s.value("title", std::string("Memory by model size and method")));
    d.subtitle = qs(s.value("caption", std::string()));
    d.footnote = footnote_for(unit, false) + " · lines: usable memory";
    try {
        const FrameworkProfile& fw = lib.framework(s.value("framework", std::string("pytorch-cuda")));
        const nlohmann::json defaults = s.value("defaults", nlohmann::json::object());
        // Grouped by method, a bar per size: the short size labels fit under narrow bars, and
        // each group shows how one method grows with the model against the machines' lines.
        for (const auto& c : s.at("columns")) {
            const QString group = qs(c.value("label", std::string()));
            nlohmann::json merged = defaults;
            if (c.contains("setup"))
                for (auto& [k, v] : c["setup"].items()) merged[k] = v;
            const TrainingSetup setup = TrainingSetup::from_json(merged);
            for (const auto& r : s.at("rows")) {
                const ModelProfile& model = lib.model(r.at("model").get<std::string>());
                const MemoryEstimate est = estimate_memory(model.arch, setup, fw);
                ChartBar b;
                b.group = group;
                b.label = qs(r.value("label", model.name));
                b.id = group + "/" + b.label;
                b.segments = segments_of(est, unit);
                b.total = est.total_bytes;
                b.details = "<b>" + html_escape(qs(model.name)) + " · " + html_escape(group) + "</b><br>" +
                            bytes_exact(est.total_bytes, unit) + "<br>" + html_escape(qs(describe_setup(setup)));
                d.bars.push_back(std::move(b));
            }
        }
    } catch (const std::exception& e) {
        d.bars.clear();
        d.empty_message = qs(e.what());
        d.is_error = true;
    }
    for (const auto* m : machines) d.lines.push_back({qs(short_machine_name(*m)), usable_bytes(*m, lib.framework_for(*m))});
    return d;
}

// ------------------------------------------------------------------------- styles ----

namespace {

// A style from its colours, in ChartStyle's field order: background, text, muted, grid,
// ceiling, fits, tight, no.
ChartStyle style_of(const std::array<const char*, 8>& hex) {
    ChartStyle s;
    QColor* fields[] = {&s.background, &s.text, &s.muted, &s.grid, &s.ceiling, &s.fits, &s.tight, &s.no};
    for (size_t i = 0; i < hex.size(); ++i) *fields[i] = QColor(hex[i]);
    return s;
}

}  // namespace

ChartStyle ChartStyle::light() {
    return style_of({"#ffffff", "#1d1f23", "#5f6368", "#e3e5e8", "#1d1f23", "#007a5a", "#b36b00", "#c2410c"});
}

ChartStyle ChartStyle::dark() {
    return style_of({"#1f2126", "#e8eaed", "#a0a4ab", "#34373d", "#f2f3f5", "#3ccf9f", "#f5b342", "#ff7a45"});
}

ChartStyle ChartStyle::from_palette(const QPalette& p) {
    ChartStyle s = is_dark(p.color(QPalette::Base)) ? dark() : light();
    s.background = p.color(QPalette::Base);
    s.text = p.color(QPalette::Text);
    s.muted = blend(s.text, s.background, 0.38);
    s.grid = blend(s.text, s.background, 0.86);
    s.ceiling = s.text;
    return s;
}

// ------------------------------------------------------------------------- axis ----

ChartAxis chart_axis(const ChartData& d) {
    ChartAxis a;
    double tallest = 0, reference = 0, smallest = INFINITY;
    for (const auto& b : d.bars) {
        tallest = std::max(tallest, double(b.total));
        if (b.ceiling) reference = std::max(reference, double(*b.ceiling));
        for (const auto& s : b.segments)
            if (s.bytes > 0) smallest = std::min(smallest, double(s.bytes));
    }
    for (const auto& l : d.lines) reference = std::max(reference, double(l.bytes));
    const double top = std::max({tallest, reference, 1.0});
    const bool gib = d.unit == ByteUnit::GiB;
    a.unit_bytes = unit_bytes(d.unit);
    a.unit_suffix = gib ? " GiB" : " GB";
    a.log = d.scale == ChartScale::Log;
    double shown = top;
    if (d.scale == ChartScale::Auto && reference > 0 && tallest > d.clip_factor * reference) {
        // Cut only when some bar stays whole: with every bar past the cut, cutting hides the
        // comparison instead of keeping the small ones readable.
        const bool some_whole = std::any_of(d.bars.begin(), d.bars.end(), [&](const ChartBar& b) {
            return double(b.total) <= d.clip_factor * reference;
        });
        if (some_whole) {
            shown = d.clip_factor * reference;
            a.clipped = true;
        }
    }
    // One unit for the whole chart: terabytes only when the axis itself reaches them.
    if (shown / a.unit_bytes >= 1000) {
        a.unit_bytes *= gib ? 1024 : 1000;
        a.unit_suffix = gib ? " TiB" : " TB";
    }
    if (a.log) {
        const double hi = std::pow(10.0, std::ceil(std::log10(top * 1.6 / a.unit_bytes)));
        const double low_value = std::isfinite(smallest) ? smallest : top / 1000;
        double lo = std::pow(10.0, std::floor(std::log10(low_value / a.unit_bytes)));
        lo = std::max(lo, hi / 1e6);
        a.min_bytes = lo * a.unit_bytes;
        a.max_bytes = hi * a.unit_bytes;
        return a;
    }
    if (a.clipped) {
        // Cut where the ceilings say, gridlines at the round steps under it.
        a.ticks = round_ticks(0, shown / a.unit_bytes, 6, false);
    } else {
        // Room above the tallest bar for its total and verdict; the top on a whole step.
        a.ticks = round_ticks(0, shown * 1.14 / a.unit_bytes, 6, true);
    }
    a.max_bytes = a.ticks.hi * a.unit_bytes;
    return a;
}

QString axis_value_text(double bytes, const ChartAxis& axis) {
    const double v = bytes / axis.unit_bytes;
    const int decimals = v >= 100 ? 0 : v >= 10 ? 1 : v >= 0.95 ? 1 : 2;
    return QLocale::system().toString(v, 'f', decimals) + axis.unit_suffix;
}

QStringList hidden_segments(const ChartData& d, const ChartAxis& axis) {
    QStringList out;
    if (!axis.clipped) return out;
    for (const auto& b : d.bars) {
        if (double(b.total) <= axis.max_bytes) continue;
        QStringList parts;
        double base = 0;
        for (const auto& s : b.segments) {
            const double top = base + double(s.bytes);
            const double above = top - std::max(base, axis.max_bytes);
            if (above > 0) parts << s.label.toLower() + " " + axis_value_text(above, axis);
            base = top;
        }
        const QString name = b.group.isEmpty() ? b.label : b.label + " · " + b.group;
        out << name + " (" + axis_value_text(double(b.total), axis) + "): " + parts.join(", ") + " above the axis";
    }
    return out;
}

QString chart_verdict_text(const ChartBar& b, const ChartAxis& axis) {
    if (!b.fit) return b.verdict;
    const double margin = double(b.margin);
    switch (*b.fit) {
        case Fit::Fits: return "✓ " + axis_value_text(margin, axis) + " free";
        case Fit::Tight: return "! tight, " + axis_value_text(margin, axis) + " free";
        case Fit::No: return margin < 0 ? "✗ short " + axis_value_text(-margin, axis) : "✗ host RAM";
    }
    return b.verdict;
}

// ---------------------------------------------------------------------- tooltips ----

QString hit_tooltip(const ChartData& d, const ChartHit& h, ByteUnit unit) {
    if (h.bar < 0 || h.bar >= int(d.bars.size())) return {};
    const ChartBar& b = d.bars[size_t(h.bar)];
    if (h.segment >= 0 && h.segment < int(b.segments.size())) {
        const ChartSegment& s = b.segments[size_t(h.segment)];
        QString html = "<b>" + html_escape(s.label) + "</b> — " + html_escape(b.label.isEmpty() ? b.id : b.label);
        if (!b.group.isEmpty()) html += " · " + html_escape(b.group);
        html += "<br>" + bytes_exact(s.bytes, unit);
        if (b.total > 0) html += QString(" · %1 % of the bar").arg(100.0 * double(s.bytes) / double(b.total), 0, 'f', 1);
        if (!s.formula.isEmpty()) {
            QString f = html_escape(s.formula);
            f.replace("\n", "<br>");
            html += "<br><span style='font-size:small'>" + f + "</span>";
        }
        if (!s.peak_note.isEmpty()) html += "<br><i>" + html_escape(s.peak_note) + "</i>";
        return "<qt>" + html + "</qt>";
    }
    if (h.ceiling && b.ceiling) {
        return "<qt><b>Usable ceiling</b> — " + html_escape(b.label) + "<br>" + bytes_exact(*b.ceiling, unit) +
               "<br>what a training process can really use (after the driver, the desktop, the OS)<br><b>" +
               html_escape(b.verdict) + "</b></qt>";
    }
    return "<qt>" + (b.details.isEmpty() ? html_escape(b.label) : b.details) + "</qt>";
}

QString hit_text(const ChartData& d, const ChartHit& h, ByteUnit unit) {
    QString html = hit_tooltip(d, h, unit);
    html.replace("<br>", " · ");
    QString plain;
    bool in_tag = false;
    for (QChar c : html) {
        if (c == '<') in_tag = true;
        else if (c == '>') in_tag = false;
        else if (!in_tag) plain += c;
    }
    plain.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&");
    return plain.simplified();
}

}  // namespace wingspan::ui
