#pragma once
// What memory_qchart.cpp, memory_qchart_labels.cpp and memory_qchart_bars.cpp share: the chart's
// label items and where bars and ceilings sit in a category.
#include <array>
#include <utility>
#include <vector>

#include <QGraphicsRectItem>
#include <QLineF>
#include <QRegularExpression>

#include "charts/chart_text.hpp"

namespace wingspan::ui {

constexpr double kBarWidth = 0.62;      // of a category
constexpr double kCeilingHalf = 0.40;   // the dashed ceiling spans a bit more than the bar
constexpr double kTurnedCaptionWidth = 120;   // px a turned bar name may take under the plot

// "96 GB" stays on one line when a caption breaks: the space between a number and its unit
// becomes a no-break space (captions break at plain spaces only).
inline QString unbroken_amounts(QString s) {
    static const QRegularExpression amount(QStringLiteral("(\\d) (GB|GiB|TB|TiB)\\b"));
    return s.replace(amount, QStringLiteral("\\1\u00A0\\2"));
}

struct MemoryChartDecor {
    ChartText* title = nullptr;
    ChartText* subtitle = nullptr;
    ChartText* notice = nullptr;   // hidden segments of cut bars
    ChartText* footnote = nullptr;
    ChartText* empty = nullptr;
    std::vector<ChartText*> totals, verdicts;
    std::vector<std::array<ChartText*, 3>> captions;   // per bar: label, sublabel, note
    std::vector<std::pair<ChartText*, std::pair<int, int>>> groups;   // label, first..last bar
    std::vector<ChartText*> line_labels;
    // Reference lines whose name has no free spot on its line (the Sizes tab's six machines in a
    // plot ~200 px tall) are named in a key under the legend instead, top to bottom with their
    // values. Once in the key a line stays there until the data or the chart's size changes: the
    // key takes room from the plot, and a set that only grows ends the layout passes.
    ChartText* line_key = nullptr;
    std::vector<bool> in_key;   // per line
    QSizeF key_for_size;        // the chart's size when `in_key` was decided
    // The bars' names read upwards when one has no room across its slot ("14B" under a bar 20 px wide).
    bool captions_turned = false;
    std::vector<std::pair<QGraphicsRectItem*, ChartText*>> legend;   // swatch, name (per layer, then the ceiling)
    std::vector<QLineF> ceilings;   // per bar, where its dashed ceiling is drawn (chart coordinates)
    double line_height = 14;
};

}  // namespace wingspan::ui
