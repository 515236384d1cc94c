#include "wingspan/ui/chart.hpp"

#include <algorithm>
#include <cmath>

#include <QFocusEvent>
#include <QFontMetricsF>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QPalette>
#include <QPaintEngine>
#include <QStaticText>
#include <QHash>
#include <QToolTip>

namespace wingspan::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QColor blend(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * t), float(a.greenF() + (b.greenF() - a.greenF()) * t),
                            float(a.blueF() + (b.blueF() - a.blueF()) * t));
}

bool is_dark(const QColor& c) { return 0.2126 * c.redF() + 0.7152 * c.greenF() + 0.0722 * c.blueF() < 0.5; }

QString html_escape(const QString& s) { return s.toHtmlEscaped(); }

QString bytes_exact(std::int64_t b, ByteUnit unit) {
    return qs(format_count(b)) + " bytes (" + qs(format_bytes(double(b), unit, 2)) + ")";
}

// Value in the display unit, rounded for reading: "16.1", "0.08", "250".
QString short_value(double bytes, ByteUnit unit) {
    const double v = bytes / unit_bytes(unit);
    if (v >= 100) return QString::number(v, 'f', 0);
    if (v >= 0.95) return QString::number(v, 'f', 1);
    return QString::number(v, 'f', 2);
}

// A total above a bar: "20.9 GB", "1.2 TB"; without the unit when space is short.
QString compact_bytes(double bytes, ByteUnit unit, bool with_unit) {
    const double v = bytes / unit_bytes(unit);
    const bool gib = unit == ByteUnit::GiB;
    if (v >= 1000) {
        const QString t = QString::number(v / (gib ? 1024 : 1000), 'f', 1);
        return t + (gib ? " TiB" : " TB");
    }
    const QString n = v >= 10 ? QString::number(v, 'f', 0) : QString::number(v, 'f', 1);
    return with_unit ? n + (gib ? " GiB" : " GB") : n;
}

ChartSegment segment_for(const MemoryEstimate& e, Component c, std::int64_t bytes) {
    ChartSegment s;
    s.component = c;
    s.bytes = bytes;
    s.label = qs(std::string(component_label(c)));
    s.formula = qs(e.explain(c));
    return s;
}

std::vector<ChartSegment> segments_of(const MemoryEstimate& e) {
    std::vector<ChartSegment> out;
    for (Component c : kAllComponents) {
        auto it = e.components.find(c);
        if (it != e.components.end() && it->second > 0) out.push_back(segment_for(e, c, it->second));
    }
    return out;
}

QString footnote_for(ByteUnit unit, bool ceilings) {
    QString unit_text = unit == ByteUnit::GiB ? "GiB = 2³⁰ bytes" : "GB = 10⁹ bytes";
    QString s = "Memory the device holds at the peak of a training step · " + unit_text;
    if (ceilings) s += " · dashed: usable ceiling · tight = within 10 % of it";
    return s;
}

}  // namespace

QColor component_qcolor(Component c) { return QColor(QString::fromLatin1(component_color(c).data(), int(component_color(c).size()))); }

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
    d.footnote = footnote_for(unit, true);
    for (const auto& v : eval.verdicts) {
        ChartBar b;
        b.id = qs(v.machine->id);
        b.label = qs(short_machine_name(*v.machine));
        b.sublabel = qs(format_bytes(double(v.usable_bytes), unit)) + " usable";
        if (v.setup.precision != eval.setup.precision)
            b.note = "runs in " + qs(std::string(to_string(v.setup.precision))).section('-', 0, 0) +
                     (v.machine->kind == MachineKind::Cpu ? "" : " (no bf16)");
        b.segments = segments_of(v.estimate);
        b.total = v.estimate.total_bytes;
        if (v.needed_bytes > v.estimate.total_bytes) {
            ChartSegment host;
            host.bytes = v.needed_bytes - v.estimate.total_bytes;
            host.label = "Offloaded state (same memory pool)";
            host.formula = "optimizer state and master weights moved to host RAM, which on this machine is the same pool";
            b.segments.push_back(host);
            b.total = v.needed_bytes;
        }
        b.ceiling = v.usable_bytes;
        b.fit = v.fit;
        b.margin = v.margin_bytes;
        b.verdict = qs(verdict_text(v, unit));
        QString details = "<b>" + html_escape(qs(v.machine->name)) + "</b><br>" + html_escape(qs(v.framework->name)) +
                          "<br>needs " + bytes_exact(v.needed_bytes, unit) + "<br>usable " +
                          bytes_exact(v.usable_bytes, unit) + "<br><b>" + html_escape(b.verdict) + "</b>";
        if (v.setup.precision != eval.setup.precision)
            details += "<br>runs in " + qs(std::string(to_string(v.setup.precision)));
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
        b.segments = segments_of(est);
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
    d.footnote = footnote_for(unit, false) + " · lines: usable memory · bars past the break are drawn cut";
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
                b.segments = segments_of(est);
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

ChartStyle ChartStyle::light() {
    ChartStyle s;
    s.background = QColor("#ffffff");
    s.text = QColor("#1d1f23");
    s.muted = QColor("#5f6368");
    s.grid = QColor("#e3e5e8");
    s.ceiling = QColor("#1d1f23");
    s.fits = QColor("#007a5a");
    s.tight = QColor("#b36b00");
    s.no = QColor("#c2410c");
    return s;
}

ChartStyle ChartStyle::dark() {
    ChartStyle s;
    s.background = QColor("#1f2126");
    s.text = QColor("#e8eaed");
    s.muted = QColor("#a0a4ab");
    s.grid = QColor("#34373d");
    s.ceiling = QColor("#f2f3f5");
    s.fits = QColor("#3ccf9f");
    s.tight = QColor("#f5b342");
    s.no = QColor("#ff7a45");
    return s;
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

// ------------------------------------------------------------------------- painter ----

namespace {

QFont font_px(const ChartStyle& st, double px, bool bold = false) {
    QFont f;
    if (!st.font_family.isEmpty()) f.setFamily(st.font_family);
    f.setPixelSize(std::max(6, int(std::lround(px * st.font_scale))));
    f.setBold(bold);
    return f;
}

double nice_step(double range, int target_ticks) {
    const double raw = range / std::max(1, target_ticks);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (raw <= m * mag) return m * mag;
    return 10 * mag;
}

QString tick_text(double value_units, double step) {
    const int decimals = step >= 1 ? 0 : step >= 0.1 ? 1 : 2;
    return QString::number(value_units, 'f', decimals);
}

// Wraps text into at most `max_lines` lines of `width`, eliding the last. Each word is measured
// once (a line's width is its words plus spaces), so long subtitles stay cheap to wrap.
QStringList wrap_text(const QString& text, const QFontMetricsF& fm, double width, int max_lines) {
    QStringList lines;
    const QStringList words = text.split(' ', Qt::SkipEmptyParts);
    const double space = fm.horizontalAdvance(' ');
    QString line;
    double line_w = 0;
    for (int i = 0; i < words.size(); ++i) {
        const double w = fm.horizontalAdvance(words[i]);
        if (line.isEmpty() || line_w + space + w <= width) {
            line_w = line.isEmpty() ? w : line_w + space + w;
            line = line.isEmpty() ? words[i] : line + ' ' + words[i];
        } else {
            if (lines.size() == max_lines - 1) {   // the last line takes the rest, elided
                line = QStringList(words.mid(i - (line.count(' ') + 1))).join(' ');
                line_w = width + 1;
                break;
            }
            lines << line;
            if (lines.size() == max_lines - 1) {
                line = QStringList(words.mid(i)).join(' ');
                line_w = width + 1;   // elide below if it is too long
                break;
            }
            line = words[i];
            line_w = w;
        }
    }
    if (!line.isEmpty()) lines << line;
    for (auto& l : lines)
        if (fm.horizontalAdvance(l) > width) l = fm.elidedText(l, Qt::ElideRight, width);
    return lines;
}


// A horizontal dashed line drawn as small rectangles: crisp at any scale, identical in PNG, SVG
// and PDF, and much cheaper than stroking a dashed pen.
void dashed_hline(QPainter& p, double x0, double x1, double y, double thickness, double dash, double gap,
                  const QColor& c) {
    for (double x = x0; x < x1; x += dash + gap)
        p.fillRect(QRectF(x, y - thickness / 2, std::min(dash, x1 - x), thickness), c);
}

// Framework overhead: black diagonal hatching on white. Vector lines for SVG and PDF; a tiled
// texture on raster devices (the window, PNG), which is far cheaper to fill.
void draw_hatch(QPainter& p, const QRectF& r, const QColor& line_color) {
    const bool raster = p.paintEngine() && p.paintEngine()->type() == QPaintEngine::Raster;
    if (raster) {
        static const QBrush tile = [] {
            QImage img(6, 6, QImage::Format_ARGB32_Premultiplied);
            img.fill(Qt::white);
            QPainter tp(&img);
            tp.setRenderHint(QPainter::Antialiasing, true);
            tp.setPen(QPen(Qt::black, 1.2));
            tp.drawLine(QPointF(-1, 7), QPointF(7, -1));
            tp.drawLine(QPointF(5, 7), QPointF(7, 5));
            tp.drawLine(QPointF(-1, 1), QPointF(1, -1));
            tp.end();
            return QBrush(img);
        }();
        if (line_color == QColor(Qt::black)) {
            p.fillRect(r, tile);
            return;
        }
    }
    // Each 45° line is cut to the rectangle here: SVG output does not keep clip paths.
    p.save();
    p.fillRect(r, QColor("#ffffff"));
    p.setPen(QPen(line_color, 1.3));
    const double step = 5.0, h = r.height();
    for (double x = r.left() - h + step; x < r.right(); x += step) {
        const double x0 = std::max(x, r.left()), x1 = std::min(x + h, r.right());
        if (x1 <= x0) continue;
        p.drawLine(QPointF(x0, r.bottom() - (x0 - x)), QPointF(x1, r.bottom() - (x1 - x)));
    }
    p.restore();
}

}  // namespace


// Text measured, wrapped and laid out once and reused on every repaint: shaping text is most
// of what drawing a chart costs, and between slider moves most labels stay the same.
struct TextCache {
    // Two generations: when the young one fills up it becomes the old one, and what is still
    // in use moves back on its next lookup. No frame ever starts from a cold cache.
    struct Gen {
        QHash<QString, double> width;
        QHash<QString, QStringList> wraps;
        QHash<QString, QStaticText> text;
        qsizetype size() const { return width.size() + wraps.size() + text.size(); }
    };
    Gen young, old;
    void age() {
        if (young.size() < 3000) return;
        old = std::move(young);
        young = Gen{};
    }
    template <typename T>
    static const T* find(QHash<QString, T>& y, QHash<QString, T>& o, const QString& k) {
        auto it = y.find(k);
        if (it != y.end()) return &*it;
        auto jt = o.find(k);
        if (jt == o.end()) return nullptr;
        return &*y.insert(k, *jt);
    }
};

namespace {

struct TextOps {
    QPainter& p;
    TextCache& c;

    // Fonts here differ only in pixel size and weight (one family per chart): a cheap key.
    static QString key(const QFont& f, const QString& s) {
        return QString::number(f.pixelSize() * 2 + (f.bold() ? 1 : 0)) + QChar(0x1f) + s;
    }

    double adv(const QFont& f, const QString& s) {
        const QString k = key(f, s);
        if (const double* w = TextCache::find(c.young.width, c.old.width, k)) return *w;
        const double w = QFontMetricsF(f).horizontalAdvance(s);
        c.young.width.insert(k, w);
        return w;
    }
    QString elide(const QFont& f, const QString& s, double w) {
        if (adv(f, s) <= w) return s;
        const QString k = key(f, s) + QChar(0x1e) + QString::number(int(w));
        if (const QStringList* found = TextCache::find(c.young.wraps, c.old.wraps, k)) return found->value(0);
        const QString out = QFontMetricsF(f).elidedText(s, Qt::ElideRight, w);
        c.young.wraps.insert(k, QStringList{out});
        return out;
    }
    QStringList wrap(const QString& s, const QFont& f, double w, int lines) {
        const QString k = key(f, s) + QChar(0x1f) + QString::number(int(w)) + "/" + QString::number(lines);
        if (const QStringList* found = TextCache::find(c.young.wraps, c.old.wraps, k)) return *found;
        const QStringList out = wrap_text(s, QFontMetricsF(f), w, lines);
        c.young.wraps.insert(k, out);
        return out;
    }
    // Like QPainter::drawText(rect, flags, text) for one line, through a cached QStaticText.
    void draw(const QRectF& r, int align, const QString& s) {
        if (s.isEmpty()) return;
        const QFont& f = p.font();
        const QString k = key(f, s);
        const QStaticText* found = TextCache::find(c.young.text, c.old.text, k);
        if (!found) {
            QStaticText st(s);
            st.setTextFormat(Qt::PlainText);
            st.setPerformanceHint(QStaticText::AggressiveCaching);
            st.prepare(QTransform(), f);
            found = &*c.young.text.insert(k, st);
        }
        const double w = adv(f, s), h = QFontMetricsF(f).height();
        double x = r.left(), y = r.top();
        if (align & Qt::AlignHCenter) x = r.center().x() - w / 2;
        else if (align & Qt::AlignRight) x = r.right() - w;
        if (align & Qt::AlignVCenter) y = r.center().y() - h / 2;
        else if (align & Qt::AlignBottom) y = r.bottom() - h;
        p.drawStaticText(QPointF(x, y), *found);
    }
};

}  // namespace

void ChartPainter::paint(QPainter& p, const QRectF& area, const ChartData& d, const ChartStyle& st) {
    geo_.clear();
    if (!cache_) cache_ = std::make_shared<TextCache>();
    cache_->age();
    TextOps tx{p, *cache_};
    p.save();
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setRenderHint(QPainter::TextAntialiasing, true);
    // In strips: one large fill makes the raster engine wake its thread pool, which costs more
    // than the fill itself on a busy machine.
    {
        const double strip = std::max(8.0, std::floor(60000.0 / std::max(1.0, area.width())));
        for (double yy = area.top(); yy < area.bottom(); yy += strip)
            p.fillRect(QRectF(area.left(), yy, area.width(), std::min(strip, area.bottom() - yy)), st.background);
    }

    const double m = 16;
    double y = area.top() + m;
    const double left = area.left() + m, right = area.right() - m;
    const double width = right - left;

    // Title and subtitle.
    QFont title_font = font_px(st, 17, true);
    p.setFont(title_font);
    p.setPen(d.is_error ? st.no : st.text);
    QFontMetricsF tfm(title_font);
    tx.draw(QRectF(left, y, width, tfm.height()), Qt::AlignLeft | Qt::AlignVCenter, tx.elide(title_font, d.title, width));
    y += tfm.height() + 3;
    if (!d.subtitle.isEmpty()) {
        QFont sf = font_px(st, 12.5);
        QFontMetricsF sfm(sf);
        p.setFont(sf);
        p.setPen(st.muted);
        for (const QString& line : tx.wrap(d.subtitle, sf, width, 2)) {
            tx.draw(QRectF(left, y, width, sfm.height()), Qt::AlignLeft | Qt::AlignVCenter, line);
            y += sfm.height();
        }
    }
    y += 8;

    // Empty or error state.
    if (d.bars.empty()) {
        QRectF box(left + width * 0.1, y + 30, width * 0.8, std::max(90.0, (area.bottom() - m - y) * 0.45));
        p.setPen(QPen(d.is_error ? st.no : st.grid, 1.5, Qt::DashLine));
        p.setBrush(Qt::NoBrush);
        p.drawRoundedRect(box, 10, 10);
        QFont f = font_px(st, 14);
        p.setFont(f);
        p.setPen(d.is_error ? st.no : st.muted);
        p.drawText(box.adjusted(20, 12, -20, -12), Qt::AlignCenter | Qt::TextWordWrap,
                   (d.is_error ? QString("⚠  ") : QString()) +
                       (d.empty_message.isEmpty() ? QString("Nothing to draw yet.") : d.empty_message));
        p.restore();
        return;
    }

    // Legend: the components present, then the ceiling marker.
    {
        QFont lf = font_px(st, 12);
        QFontMetricsF lfm(lf);
        p.setFont(lf);
        double x = left;
        const double row_h = lfm.height() + 5;
        auto place = [&](double w) {
            if (x + w > right && x > left) {
                x = left;
                y += row_h;
            }
            const double at = x;
            x += w + 16;
            return at;
        };
        const auto legend = d.legend();
        const bool both_green = std::count(legend.begin(), legend.end(), Component::Adapters) &&
                                std::count(legend.begin(), legend.end(), Component::TrainableWeights);
        for (Component c : legend) {
            if (both_green && c == Component::TrainableWeights) continue;
            QString label = QString::fromUtf8(component_label(c).data(), int(component_label(c).size()));
            if (both_green && c == Component::Adapters) label = "Trainable weights / LoRA adapters";
            const double w = 14 + 5 + tx.adv(lf, label);
            const double at = place(w);
            QRectF sw(at, y + (row_h - 5 - 12) / 2 + 1, 14, 12);
            if (c == Component::FrameworkOverhead) {
                draw_hatch(p, sw, QColor("#000000"));
                p.setPen(QPen(QColor("#000000"), 1));
                p.setBrush(Qt::NoBrush);
                p.drawRect(sw);
            } else {
                p.fillRect(sw, component_qcolor(c));
            }
            p.setPen(st.text);
            tx.draw(QRectF(at + 19, y, w, row_h - 5), Qt::AlignLeft | Qt::AlignVCenter, label);
        }
        bool has_ceiling = false;
        for (const auto& b : d.bars) has_ceiling |= b.ceiling.has_value();
        if (has_ceiling || !d.lines.empty()) {
            const QString label = has_ceiling ? "usable ceiling" : "machine ceilings";
            const double w = 22 + 5 + tx.adv(lf, label);
            const double at = place(w);
            const double ly = y + (row_h - 5) / 2;
            dashed_hline(p, at, at + 22, ly, 2.2, 6.6, 4.4, st.ceiling);
            p.setPen(st.text);
            tx.draw(QRectF(at + 27, y, w, row_h - 5), Qt::AlignLeft | Qt::AlignVCenter, label);
        }
        y += row_h + 6;
    }

    // Footnote at the bottom.
    double bottom = area.bottom() - m;
    if (!d.footnote.isEmpty()) {
        QFont ff = font_px(st, 11);
        QFontMetricsF ffm(ff);
        const QStringList lines = tx.wrap(d.footnote, ff, width, 2);
        bottom -= ffm.height() * lines.size();
        p.setFont(ff);
        p.setPen(st.muted);
        double fy = bottom;
        for (const QString& line : lines) {
            tx.draw(QRectF(left, fy, width, ffm.height()), Qt::AlignLeft | Qt::AlignVCenter, line);
            fy += ffm.height();
        }
        bottom -= 6;
    }

    // Scale: the tallest thing (bar, ceiling, line), with bars far above every ceiling cut.
    double max_ceiling = 0;
    for (const auto& b : d.bars)
        if (b.ceiling) max_ceiling = std::max(max_ceiling, double(*b.ceiling));
    for (const auto& l : d.lines) max_ceiling = std::max(max_ceiling, double(l.bytes));
    const double clip_at = max_ceiling > 0 ? d.clip_factor * max_ceiling : INFINITY;
    double top_value = max_ceiling;
    for (const auto& b : d.bars) top_value = std::max(top_value, std::min(double(b.total), clip_at));
    if (top_value <= 0) top_value = 1e9;

    const QFont axis_font = font_px(st, 11.5);
    const QFontMetricsF afm(axis_font);
    const QString unit = qs(unit_name(d.unit));
    const double ub = unit_bytes(d.unit);

    // Bottom captions: bar label (up to 2 lines) + sublabel, plus group labels.
    bool grouped = false;
    for (const auto& b : d.bars) grouped |= !b.group.isEmpty();
    const QFont label_font = font_px(st, 12, !grouped);
    const QFont sub_font = font_px(st, 11);
    const QFont group_font = font_px(st, 12, true);
    const QFontMetricsF lfm(label_font), sfm(sub_font), gfm(group_font);
    bool any_sub = false, any_note = false;
    for (const auto& b : d.bars) {
        any_sub |= !b.sublabel.isEmpty();
        any_note |= !b.note.isEmpty();
    }
    int label_lines = 1;
    {
        double slots_guess = double(d.bars.size());
        const double w_guess = (width * 0.85) / std::max(1.0, slots_guess);
        for (const auto& b : d.bars)
            if (!grouped) label_lines = std::max(label_lines, int(tx.wrap(b.label, label_font, w_guess - 4, 2).size()));
    }
    const double caption_h = lfm.height() * label_lines + (any_sub ? sfm.height() : 0) + (any_note ? sfm.height() : 0) + (grouped ? gfm.height() + 4 : 0) + 8;

    const double verdict_room = 36;
    const double plot_top = y;
    const double plot_bottom = bottom - caption_h;
    const double plot_h = std::max(40.0, plot_bottom - plot_top);
    const double px_per_byte = std::max(1e-3, plot_h - verdict_room) / top_value;
    axis_max_ = plot_h / px_per_byte;

    // Reference line labels, merged when they would collide, and the right margin they need.
    const QFont line_font = font_px(st, 10.5);
    const QFontMetricsF linefm(line_font);
    struct LineLabel {
        double y;
        QString names;
        std::int64_t bytes;
    };
    std::vector<LineLabel> line_labels;
    std::vector<ChartLine> lines = d.lines;
    std::sort(lines.begin(), lines.end(), [](const ChartLine& a, const ChartLine& b) { return a.bytes < b.bytes; });
    for (const auto& l : lines) {
        const double yy = plot_bottom - double(l.bytes) * px_per_byte;
        if (yy < plot_top) continue;
        if (!line_labels.empty() && std::fabs(line_labels.back().y - yy) < linefm.height()) {
            line_labels.back().names += ", " + l.label;
            continue;
        }
        line_labels.push_back({yy, l.label, l.bytes});
    }
    for (auto& l : line_labels) l.names += "  " + qs(format_bytes(double(l.bytes), d.unit));
    double right_pad = 8;
    if (!line_labels.empty()) {
        double w = 0;
        for (const auto& l : line_labels) w = std::max(w, tx.adv(line_font, l.names));
        right_pad = std::min(std::max(80.0, w + 12), width * 0.34);
    }
    const double step_units = nice_step(axis_max_ / ub, std::max(3, int(plot_h / 55)));
    double axis_w = 0;
    for (double v = 0; v * ub <= axis_max_; v += step_units)
        axis_w = std::max(axis_w, tx.adv(axis_font, tick_text(v, step_units) + " " + unit));
    const double plot_left = left + axis_w + 10;
    const double plot_right = right - right_pad;
    plot_ = QRectF(plot_left, plot_top, plot_right - plot_left, plot_bottom - plot_top);
    auto ymap = [&](double bytes) { return plot_.bottom() - bytes * px_per_byte; };

    // Grid and axis labels.
    p.setFont(axis_font);
    for (double v = 0; v * ub <= axis_max_ * 1.0001; v += step_units) {
        const double yy = ymap(v * ub);
        p.fillRect(QRectF(plot_.left(), yy - 0.5, plot_.width(), 1.0), v == 0 ? st.muted : st.grid);
        p.setPen(st.muted);
        tx.draw(QRectF(left, yy - afm.height() / 2, axis_w, afm.height()), Qt::AlignRight | Qt::AlignVCenter,
                   tick_text(v, step_units) + " " + unit);
    }

    // Horizontal reference lines (drawn under the bars) and their labels in the right margin.
    if (!lines.empty()) {
        const QColor line_colour = blend(st.ceiling, st.background, 0.25);
        for (const auto& l : lines) {
            const double yy = ymap(double(l.bytes));
            if (yy >= plot_.top()) dashed_hline(p, plot_.left(), plot_.right(), yy, 1.5, 7.5, 4.5, line_colour);
        }
        p.setFont(line_font);
        p.setPen(st.text);
        for (const auto& l : line_labels)
            tx.draw(QRectF(plot_.right() + 6, l.y - linefm.height() / 2, right_pad - 6, linefm.height()),
                    Qt::AlignLeft | Qt::AlignVCenter, tx.elide(line_font, l.names, right_pad - 6));
    }

    // Bar slot_count: groups get a gap between them.
    std::vector<double> slot_x;   // slot start per bar
    double slot_count = 0;
    QString last_group;
    for (size_t i = 0; i < d.bars.size(); ++i) {
        if (grouped && i > 0 && d.bars[i].group != last_group) slot_count += 0.45;
        slot_x.push_back(slot_count);
        slot_count += 1;
        last_group = d.bars[i].group;
    }
    const double slot_w = plot_.width() / std::max(1.0, slot_count);
    const double bar_w = std::min(slot_w * (grouped ? 0.78 : 0.56), 110.0);

    const QFont value_font = font_px(st, 10.5);
    const QFontMetricsF vfm(value_font);
    const QFont verdict_font = font_px(st, 11.5, true);
    const QFont margin_font = font_px(st, 11);
    const QFontMetricsF verfm(verdict_font), marfm(margin_font);

    // One caption font for every bar (grouped charts shrink it until the longest label fits),
    // and totals with their unit only when every one of them has room for it.
    QFont lf_fit = label_font;
    if (grouped) {
        double widest = 0;
        for (const auto& b : d.bars) widest = std::max(widest, tx.adv(label_font, b.label));
        for (double px = 12; px > 7.5 && widest > slot_w - 2; px -= 0.5) {
            lf_fit = font_px(st, px, false);
            widest = 0;
            for (const auto& b : d.bars) widest = std::max(widest, tx.adv(lf_fit, b.label));
        }
    }
    bool totals_with_unit = true;
    for (const auto& b : d.bars)
        if (!b.fit && tx.adv(margin_font, compact_bytes(double(b.total), d.unit, true)) > slot_w - 2) totals_with_unit = false;
    QFont total_font = margin_font;
    {
        double widest = 0;
        for (const auto& b : d.bars)
            if (!b.fit) widest = std::max(widest, tx.adv(margin_font, compact_bytes(double(b.total), d.unit, totals_with_unit)));
        for (double px = 11; px > 7.5 && widest > slot_w - 1; px -= 0.5) {
            total_font = font_px(st, px);
            widest = 0;
            for (const auto& b : d.bars)
                if (!b.fit)
                    widest = std::max(widest, tx.adv(total_font, compact_bytes(double(b.total), d.unit, totals_with_unit)));
        }
    }

    for (size_t i = 0; i < d.bars.size(); ++i) {
        const ChartBar& b = d.bars[i];
        BarGeometry g;
        const double cx = plot_.left() + (slot_x[i] + 0.5) * slot_w;
        double acc = 0;
        const bool clipped = double(b.total) > clip_at;
        const double limit = clipped ? clip_at : INFINITY;
        for (const auto& s : b.segments) {
            const double from = acc, to = std::min(acc + double(s.bytes), limit);
            acc += double(s.bytes);
            if (to <= from) {
                g.segments.emplace_back();
                continue;
            }
            QRectF r(cx - bar_w / 2, ymap(to), bar_w, ymap(from) - ymap(to));
            g.segments.push_back(r);
            if (!s.component) {
                QPen pen(st.muted, 1.2, Qt::DashLine);
                p.setPen(pen);
                p.setBrush(Qt::NoBrush);
                p.drawRect(r.adjusted(0.6, 0.6, -0.6, -0.6));
            } else if (*s.component == Component::FrameworkOverhead) {
                draw_hatch(p, r, QColor("#000000"));
                p.setPen(QPen(QColor("#000000"), 1));
                p.setBrush(Qt::NoBrush);
                p.drawRect(r.adjusted(0.5, 0.5, -0.5, -0.5));
            } else {
                p.fillRect(r, component_qcolor(*s.component));
            }
            if (r.height() >= 3 && s.component && *s.component != Component::FrameworkOverhead)
                p.fillRect(QRectF(r.left(), r.top(), r.width(), 1.0), st.background);
            // The value inside the segment when it has room.
            if (s.component && *s.component != Component::FrameworkOverhead && r.height() >= vfm.height() + 2 &&
                bar_w >= tx.adv(value_font, "888.8") + 6) {
                const QColor fill = component_qcolor(*s.component);
                p.setFont(value_font);
                p.setPen(is_dark(fill) ? QColor("#ffffff") : QColor("#111111"));
                tx.draw(r, Qt::AlignCenter, short_value(double(s.bytes), d.unit));
            }
        }
        const double top_bytes = std::min(double(b.total), limit);
        g.bar = QRectF(cx - bar_w / 2, ymap(top_bytes), bar_w, ymap(0) - ymap(top_bytes));
        double label_top = g.bar.top();
        if (clipped) {
            // A break mark: a slanted gap in the background colour across the bar.
            const double by = g.bar.top() + std::min(20.0, g.bar.height() * 0.3);
            const double x0 = g.bar.left() - 3, x1 = g.bar.right() + 3;
            QPolygonF gap;
            gap << QPointF(x0, by + 4) << QPointF(x1, by - 4) << QPointF(x1, by + 2) << QPointF(x0, by + 10);
            p.setPen(Qt::NoPen);
            p.setBrush(st.background);
            p.drawPolygon(gap);
            p.setPen(QPen(st.muted, 1));
            p.drawLine(QPointF(x0, by + 4), QPointF(x1, by - 4));
            p.drawLine(QPointF(x0, by + 10), QPointF(x1, by + 2));
        }
        // The ceiling marker.
        if (b.ceiling) {
            const double cy = ymap(double(*b.ceiling));
            const double w = std::min(slot_w * 0.92, bar_w + 30);
            QColor halo = st.background;
            halo.setAlphaF(0.75f);
            p.fillRect(QRectF(cx - w / 2, cy - 2.5, w, 5.0), halo);
            dashed_hline(p, cx - w / 2, cx + w / 2, cy, 2.4, 6.6, 4.0, st.ceiling);
            g.ceiling = QRectF(cx - w / 2, cy - 5, w, 10);
            label_top = std::min(label_top, cy - 3);
        }
        // Above the bar: the verdict, or the total when there is no ceiling.
        {
            QString line1, line2;
            QColor c1 = st.text;
            if (b.fit) {
                const double w_long = tx.adv(verdict_font, "✗ does not fit");
                const bool wide = slot_w >= w_long + 6, medium = slot_w >= tx.adv(verdict_font, "✗ too big") + 4;
                switch (*b.fit) {
                    case Fit::Fits: line1 = medium ? "✓ fits" : "✓"; c1 = st.fits; break;
                    case Fit::Tight: line1 = medium ? "! tight" : "!"; c1 = st.tight; break;
                    case Fit::No: line1 = wide ? "✗ does not fit" : medium ? "✗ too big" : "✗"; c1 = st.no; break;
                }
                const QString amount = short_value(std::fabs(double(b.margin)), d.unit) + " " + unit;
                const QString long2 = b.margin >= 0 ? amount + " free" : amount + " short";
                line2 = tx.adv(margin_font, long2) <= slot_w - 2 ? long2 : (b.margin >= 0 ? "+" : "−") + amount;
                if (b.fit == Fit::No && b.margin >= 0) line2 = "host RAM";
            } else {
                line2 = compact_bytes(double(b.total), d.unit, totals_with_unit);
            }
            const double h2 = marfm.height(), h1 = line1.isEmpty() ? 0 : verfm.height();
            QRectF r2(cx - slot_w / 2, label_top - 2 - h2, slot_w, h2);
            QRectF r1(cx - slot_w / 2, r2.top() - h1, slot_w, h1);
            {
                // A halo so labels stay readable where they cross grid or ceiling lines.
                QColor halo = st.background;
                halo.setAlphaF(0.85f);
                p.setFont(b.fit ? margin_font : total_font);
                const double w2 = tx.adv(p.font(), line2) + 4;
                p.fillRect(QRectF(cx - w2 / 2, r2.top() + 1, w2, r2.height() - 1), halo);
                if (!line1.isEmpty()) {
                    const double w1 = tx.adv(verdict_font, line1) + 4;
                    p.fillRect(QRectF(cx - w1 / 2, r1.top() + 1, w1, r1.height()), halo);
                }
            }
            if (!line1.isEmpty()) {
                p.setFont(verdict_font);
                p.setPen(c1);
                tx.draw(r1, Qt::AlignHCenter | Qt::AlignBottom, line1);
            }
            p.setFont(b.fit ? margin_font : total_font);
            p.setPen(b.fit ? c1 : st.text);
            tx.draw(r2, Qt::AlignHCenter | Qt::AlignBottom, line2);
            g.verdict = r1.united(r2);
        }
        // Captions under the plot.
        {
            double cy = plot_.bottom() + 5;
            const QFontMetricsF lfit(lf_fit);
            p.setFont(lf_fit);
            p.setPen(st.text);
            const QStringList lines = tx.wrap(b.label, lf_fit, slot_w - (grouped ? 0 : 4), grouped ? 1 : 2);
            for (const QString& l : lines) {
                tx.draw(QRectF(cx - slot_w / 2, cy, slot_w, lfm.height()), Qt::AlignHCenter | Qt::AlignTop, l);
                cy += lfm.height();
            }
            if (!grouped) cy = plot_.bottom() + 5 + lfm.height() * label_lines;
            if (!b.sublabel.isEmpty()) {
                p.setFont(sub_font);
                p.setPen(st.muted);
                tx.draw(QRectF(cx - slot_w / 2, cy, slot_w, sfm.height()), Qt::AlignHCenter | Qt::AlignTop,
                        tx.elide(sub_font, b.sublabel, slot_w - 2));
                cy += sfm.height();
            }
            if (!b.note.isEmpty()) {
                p.setFont(sub_font);
                p.setPen(st.tight);
                tx.draw(QRectF(cx - slot_w / 2, cy, slot_w, sfm.height()), Qt::AlignHCenter | Qt::AlignTop,
                        tx.elide(sub_font, b.note, slot_w - 2));
            }
            g.caption = QRectF(cx - slot_w / 2, plot_.bottom(), slot_w, caption_h);
        }
        geo_.push_back(std::move(g));
    }

    // Group labels under each group of bars.
    if (grouped) {
        p.setFont(group_font);
        p.setPen(st.text);
        size_t i = 0;
        while (i < d.bars.size()) {
            size_t j = i;
            while (j + 1 < d.bars.size() && d.bars[j + 1].group == d.bars[i].group) ++j;
            const double x0 = plot_.left() + slot_x[i] * slot_w, x1 = plot_.left() + (slot_x[j] + 1) * slot_w;
            const double gy = plot_.bottom() + caption_h - gfm.height() - 4;
            tx.draw(QRectF(x0, gy, x1 - x0, gfm.height()), Qt::AlignHCenter | Qt::AlignVCenter,
                    tx.elide(group_font, d.bars[i].group, x1 - x0));
            p.setPen(QPen(st.grid, 1));
            p.drawLine(QPointF(x0 + 6, gy - 1), QPointF(x1 - 6, gy - 1));
            p.setPen(st.text);
            i = j + 1;
        }
    }
    p.restore();
}

std::optional<ChartPainter::Hit> ChartPainter::hit(const QPointF& pos) const {
    for (int i = 0; i < int(geo_.size()); ++i) {
        const auto& g = geo_[size_t(i)];
        if (!g.ceiling.isNull() && g.ceiling.contains(pos)) return Hit{i, -1, true, false};
        for (int s = 0; s < int(g.segments.size()); ++s)
            if (!g.segments[size_t(s)].isNull() && g.segments[size_t(s)].contains(pos)) return Hit{i, s, false, false};
        if (g.verdict.contains(pos) || g.caption.contains(pos)) return Hit{i, -1, false, true};
    }
    return std::nullopt;
}

QRectF ChartPainter::bar_rect(int bar) const {
    if (bar < 0 || bar >= int(geo_.size())) return {};
    return geo_[size_t(bar)].bar;
}

double ChartPainter::y_for(double bytes) const {
    return plot_.bottom() - bytes * (plot_.height() / std::max(1.0, axis_max_));
}

QString hit_tooltip(const ChartData& d, const ChartPainter::Hit& h, ByteUnit unit) {
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
        return "<qt>" + html + "</qt>";
    }
    if (h.ceiling && b.ceiling) {
        return "<qt><b>Usable ceiling</b> — " + html_escape(b.label) + "<br>" + bytes_exact(*b.ceiling, unit) +
               "<br>what a training process can really use (after the driver, the desktop, the OS)<br><b>" +
               html_escape(b.verdict) + "</b></qt>";
    }
    return "<qt>" + (b.details.isEmpty() ? html_escape(b.label) : b.details) + "</qt>";
}

// -------------------------------------------------------------------------- widget ----

MemoryChartWidget::MemoryChartWidget(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setAccessibleName("Memory chart");
    setToolTip({});
}

void MemoryChartWidget::setData(ChartData data) {
    data_ = std::move(data);
    if (focus_bar_ >= int(data_.bars.size())) focus_bar_ = int(data_.bars.size()) - 1;
    QString desc = data_.title;
    for (const auto& b : data_.bars) desc += "; " + b.label + ": " + (b.verdict.isEmpty() ? QString::number(b.total) : b.verdict);
    setAccessibleDescription(desc);
    update();
}

void MemoryChartWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    ChartStyle st = ChartStyle::from_palette(palette());
    painter_.paint(p, rect(), data_, st);
    if (hasFocus() && focus_bar_ >= 0) {
        QRectF r = painter_.bar_rect(focus_bar_).adjusted(-4, -4, 4, 4);
        QPen pen(palette().color(QPalette::Highlight), 2, Qt::DotLine);
        p.setPen(pen);
        p.setBrush(Qt::NoBrush);
        p.drawRoundedRect(r, 3, 3);
    }
}

bool MemoryChartWidget::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(e);
        if (auto h = painter_.hit(he->pos())) {
            QToolTip::showText(he->globalPos(), hit_tooltip(data_, *h, data_.unit), this);
        } else {
            QToolTip::hideText();
            e->ignore();
        }
        return true;
    }
    return QWidget::event(e);
}

void MemoryChartWidget::mouseMoveEvent(QMouseEvent* e) {
    // Tooltips follow the pointer from segment to segment without waiting for a new delay.
    if (QToolTip::isVisible()) {
        if (auto h = painter_.hit(e->position()))
            QToolTip::showText(e->globalPosition().toPoint(), hit_tooltip(data_, *h, data_.unit), this);
        else
            QToolTip::hideText();
    }
    QWidget::mouseMoveEvent(e);
}

void MemoryChartWidget::leaveEvent(QEvent* e) {
    QToolTip::hideText();
    QWidget::leaveEvent(e);
}

void MemoryChartWidget::keyPressEvent(QKeyEvent* e) {
    const int n = int(data_.bars.size());
    if (n == 0) return QWidget::keyPressEvent(e);
    if (e->key() == Qt::Key_Right || e->key() == Qt::Key_Down) {
        focus_bar_ = std::min(n - 1, focus_bar_ + 1);
    } else if (e->key() == Qt::Key_Left || e->key() == Qt::Key_Up) {
        focus_bar_ = std::max(0, focus_bar_ - 1);
    } else if (e->key() == Qt::Key_Home) {
        focus_bar_ = 0;
    } else if (e->key() == Qt::Key_End) {
        focus_bar_ = n - 1;
    } else {
        return QWidget::keyPressEvent(e);
    }
    update();
    showFocusTooltip();
}

void MemoryChartWidget::focusInEvent(QFocusEvent* e) {
    if (focus_bar_ < 0 && !data_.bars.empty()) focus_bar_ = 0;
    update();
    QWidget::focusInEvent(e);
}

void MemoryChartWidget::focusOutEvent(QFocusEvent* e) {
    update();
    QWidget::focusOutEvent(e);
}

void MemoryChartWidget::showFocusTooltip() {
    if (focus_bar_ < 0) return;
    const QRectF r = painter_.bar_rect(focus_bar_);
    ChartPainter::Hit h{focus_bar_, -1, false, true};
    QToolTip::showText(mapToGlobal(r.center().toPoint()), hit_tooltip(data_, h, data_.unit), this);
}

}  // namespace wingspan::ui
