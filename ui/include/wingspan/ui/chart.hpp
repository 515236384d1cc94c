#pragma once
// The stacked memory bar chart: a plain description of what to draw (ChartData, built from
// core's results), one painter that draws it into any QPainter (window, PNG, SVG, PDF), and
// the widget that shows it with hover tooltips.
#include <memory>
#include <optional>
#include <vector>

#include <QColor>
#include <QFont>
#include <QPointF>
#include <QRectF>
#include <QString>
#include <QWidget>

#include "wingspan/ui/plan.hpp"

class QPainter;
class QPalette;

namespace wingspan::ui {

struct ChartSegment {
    std::optional<Component> component;   // nullopt: offloaded state kept in the same pool
    std::int64_t bytes = 0;
    QString label;                         // "Frozen weights"
    QString formula;                       // core's explanation, one term per line
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
};

// A horizontal reference line across the whole chart (a machine's ceiling in the method and
// size charts).
struct ChartLine {
    QString label;
    std::int64_t bytes = 0;
};

struct ChartData {
    QString title;
    QString subtitle;
    QString footnote;
    std::vector<ChartBar> bars;
    std::vector<ChartLine> lines;
    ByteUnit unit = ByteUnit::GB;
    QString empty_message;                 // shown instead of bars when there are none
    bool is_error = false;                 // the empty message is an error
    // Bars taller than this many times the largest ceiling are cut with a break mark.
    double clip_factor = 2.2;

    const ChartBar* bar(const QString& id) const;
    std::vector<Component> legend() const;   // components present, in kAllComponents order
};

// Builders (all numbers from core):
ChartData machines_chart(const Evaluation& eval, ByteUnit unit);
ChartData methods_chart(const ProfileLibrary& lib, const Plan& plan, const Evaluation& eval, ByteUnit unit);
// Grouped bars: one group per size (rows), one bar per method (columns) of a size_table
// scenario, with the ceilings of `machines` as reference lines.
ChartData size_chart(const ProfileLibrary& lib, const nlohmann::json& scenario,
                     const std::vector<const MachineProfile*>& machines, ByteUnit unit);

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

struct TextCache;

// Draws a ChartData; remembers where everything went for hit tests.
class ChartPainter {
public:
    void paint(QPainter& p, const QRectF& area, const ChartData& data, const ChartStyle& style);

    struct Hit {
        int bar = -1;
        int segment = -1;     // -1: not on a segment
        bool ceiling = false; // on the ceiling marker
        bool verdict = false; // on the verdict label or the bar's caption
    };
    std::optional<Hit> hit(const QPointF& pos) const;
    QRectF bar_rect(int bar) const;          // the bar's full drawn rect (for tests and focus)
    double y_for(double bytes) const;        // axis mapping of the last paint
    double axis_max_bytes() const { return axis_max_; }

private:
    struct BarGeometry {
        QRectF bar;
        std::vector<QRectF> segments;
        QRectF ceiling;
        QRectF verdict;
        QRectF caption;
    };
    std::vector<BarGeometry> geo_;
    QRectF plot_;
    double axis_max_ = 1;
    std::shared_ptr<TextCache> cache_;
};

// Tooltip HTML for a hit (bytes exact, formula with its numbers).
QString hit_tooltip(const ChartData& data, const ChartPainter::Hit& hit, ByteUnit unit);

class MemoryChartWidget : public QWidget {
    Q_OBJECT
public:
    explicit MemoryChartWidget(QWidget* parent = nullptr);
    void setData(ChartData data);
    const ChartData& data() const { return data_; }
    const ChartPainter& painter() const { return painter_; }
    QSize sizeHint() const override { return {760, 480}; }
    QSize minimumSizeHint() const override { return {360, 260}; }
    int focusedBar() const { return focus_bar_; }

protected:
    void paintEvent(QPaintEvent*) override;
    void mouseMoveEvent(QMouseEvent*) override;
    void leaveEvent(QEvent*) override;
    void keyPressEvent(QKeyEvent*) override;
    void focusInEvent(QFocusEvent*) override;
    void focusOutEvent(QFocusEvent*) override;
    bool event(QEvent*) override;

private:
    void showFocusTooltip();
    ChartData data_;
    ChartPainter painter_;
    int focus_bar_ = -1;
};

}  // namespace wingspan::ui
