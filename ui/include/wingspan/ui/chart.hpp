#pragma once
// The stacked memory bar chart: a plain description of what to draw (ChartData, built from
// core's results), drawn by MemoryQChart (its own bars on a Qt Charts plot and value axis)
// in the window, in every export and offscreen for `wingspan export`.
#include <optional>
#include <vector>

#include <QColor>
#include <QString>

#include "wingspan/plan.hpp"
#include "wingspan/ui/round_ticks.hpp"

class QPalette;

namespace wingspan::ui {

struct ChartSegment {
    std::optional<Component> component;   // nullopt: offloaded state kept in the same pool
    std::int64_t bytes = 0;
    QString label;                         // "Frozen weights"
    QString formula;                       // core's explanation, one term per line
    // When this component is larger in another phase of the step than at the peak (gradients
    // at a mid-backward peak): why it looks small here, with its own maximum.
    QString peak_note;
};

struct ChartBar {
    QString id;                            // machine id, method name, ...
    QString label;                         // under the bar
    QString sublabel;                      // second line under the bar ("24.9 GB usable")
    QString note;                          // third line, when it matters ("runs in fp32")
    QString group;                         // grouped charts: the group this bar belongs to
    std::vector<ChartSegment> segments;    // bottom to top
    std::int64_t total = 0;                // sum of segments
    std::optional<std::int64_t> ceiling;   // usable bytes: the dashed marker
    std::optional<Fit> fit;
    std::int64_t margin = 0;               // ceiling - needed
    QString verdict;                       // "fits · 4.0 GB free"
    QString details;                       // tooltip text for the bar as a whole (HTML)
    // Offloaded state in a separate host RAM (a GPU box: optimizer offload, activation offload,
    // paged optimizer state), shown apart from the device bar and checked against that RAM.
    std::int64_t host_bytes = 0;
    std::int64_t host_capacity = 0;        // the machine's host RAM (0: not known)
    bool host_fits = true;
};

// A horizontal reference line across the whole chart (a machine's ceiling in the method and
// size charts).
struct ChartLine {
    QString label;
    std::int64_t bytes = 0;
};

// How the value axis copes with a bar far past the others.
enum class ChartScale {
    Auto,   // linear; when a bar passes clip_factor × the largest ceiling, cut it there (listed)
    Full,   // linear up to the tallest bar
    Log,    // logarithmic: small and huge bars both readable
};
QString chart_scale_id(ChartScale s);              // "auto", "full", "log"
ChartScale parse_chart_scale(const QString& id);   // unknown: Auto

struct ChartData {
    QString title;
    QString subtitle;
    QString footnote;
    std::vector<ChartBar> bars;
    std::vector<ChartLine> lines;
    ByteUnit unit = ByteUnit::GB;
    QString empty_message;                 // shown instead of bars when there are none
    bool is_error = false;                 // the empty message is an error
    // Auto scale: bars taller than this many times the largest ceiling are cut (and listed).
    double clip_factor = 2.2;
    ChartScale scale = ChartScale::Auto;

    const ChartBar* bar(const QString& id) const;
    std::vector<Component> legend() const;   // components present, in kAllComponents order
    bool has_offloaded() const;              // a segment without a component (same-pool offload)
};

// Builders (all numbers from core):
ChartData machines_chart(const Evaluation& eval, ByteUnit unit);
ChartData methods_chart(const ProfileLibrary& lib, const Plan& plan, const Evaluation& eval, ByteUnit unit);
// Grouped bars: one group per method, one bar per size of a size_table scenario, with the
// ceilings of `machines` as reference lines.
ChartData size_chart(const ProfileLibrary& lib, const nlohmann::json& scenario,
                     const std::vector<const MachineProfile*>& machines, ByteUnit unit);

// Value axis of a chart: one unit for the whole chart (no "1212 GB" beside "1.2 TB").
struct ChartAxis {
    double max_bytes = 1;        // top of the axis
    double min_bytes = 0;        // bottom (log scale: above zero)
    bool log = false;
    bool clipped = false;        // some bars pass the top
    QString unit_suffix;         // " GB" / " GiB" / " TB" / " TiB"
    double unit_bytes = 1e9;     // bytes per axis unit
    RoundTicks ticks;            // linear axes: range and gridlines in the axis's unit
    QString unitTitle() const { return unit_suffix.trimmed() + (log ? ", log scale" : ""); }
};
ChartAxis chart_axis(const ChartData& data);
// "21.3 GB": a byte count in the axis's unit, the same unit on every label of the chart.
QString axis_value_text(double bytes, const ChartAxis& axis);
// What a cut bar hides above the top of the axis ("70B · Full: optimizer state 420 GB,
// gradients 140 GB above 175 GB"), one line per cut bar. Empty when nothing is cut.
QStringList hidden_segments(const ChartData& data, const ChartAxis& axis);
// The verdict printed over a bar, its bytes in the axis's unit ("does not fit · short 1,212 GB").
QString chart_verdict_text(const ChartBar& bar, const ChartAxis& axis);

// Colours and fonts for drawing; light is what exports use.
struct ChartStyle {
    QColor background, text, muted, grid, ceiling;
    QColor fits, tight, no;
    QString font_family;
    double font_scale = 1.0;
    static ChartStyle light();
    static ChartStyle dark();
    static ChartStyle from_palette(const QPalette& p);
};

QColor component_qcolor(Component c);
QColor fit_qcolor(const ChartStyle& style, Fit fit);

// A place on the chart: a bar, and a segment of it or its ceiling or its caption.
struct ChartHit {
    int bar = -1;
    int segment = -1;     // -1: not on a segment
    bool ceiling = false; // on the ceiling marker
    bool verdict = false; // on the verdict label or the bar's caption
};
// Tooltip HTML for a hit (bytes exact, formula with its numbers).
QString hit_tooltip(const ChartData& data, const ChartHit& hit, ByteUnit unit);
// The same as plain text, for the status line and screen readers.
QString hit_text(const ChartData& data, const ChartHit& hit, ByteUnit unit);

}  // namespace wingspan::ui
