#pragma once
// What memory_qchart.cpp and memory_qchart_labels.cpp share: the chart's label items and where
// bars and ceilings sit in a category.
#include <array>
#include <utility>
#include <vector>

#include <QGraphicsRectItem>
#include <QLineF>

#include "chart_text.hpp"
#include "wingspan/ui/memory_qchart.hpp"

namespace wingspan::ui {

constexpr double kBarWidth = 0.62;      // of a category
constexpr double kCeilingHalf = 0.40;   // the dashed ceiling spans a bit more than the bar

struct MemoryQChart::Decor {
    ChartText* title = nullptr;
    ChartText* subtitle = nullptr;
    ChartText* notice = nullptr;   // hidden segments of cut bars
    ChartText* footnote = nullptr;
    ChartText* empty = nullptr;
    std::vector<ChartText*> totals, verdicts;
    std::vector<std::array<ChartText*, 3>> captions;   // per bar: label, sublabel, note
    std::vector<std::pair<ChartText*, std::pair<int, int>>> groups;   // label, first..last bar
    std::vector<ChartText*> line_labels;
    std::vector<std::pair<QGraphicsRectItem*, ChartText*>> legend;   // swatch, name (per set, then the ceiling)
    std::vector<QLineF> ceilings;   // per bar, where its dashed ceiling is drawn (chart coordinates)
    double line_height = 14;
};

}  // namespace wingspan::ui
