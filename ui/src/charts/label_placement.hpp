#pragma once
// Where a reference line's label goes on the memory chart: on its line (just above, else just
// below), as far right as it can, and never over another text. Nearby ceilings ("This machine"
// 22.1 GB and "RTX 4090" 22.5 GB) and a bar's total used to print over each other (issue 32,
// items 7 and 8); this looks for the free spot instead of staggering by index.
#include <vector>

#include <QLineF>
#include <QRectF>
#include <QSizeF>

namespace wingspan::ui {

struct LabelObstacles {
    std::vector<QRectF> texts;   // placed labels: totals, verdicts, earlier line labels (never covered)
    std::vector<QRectF> bars;    // bars' rectangles (covered only when nothing else is free)
    std::vector<QLineF> lines;   // other dashed lines (crossed only when nothing else is free)
};

// The rectangle for a label of `size` on the horizontal line at `line_y`, inside `area`.
// Tried from the right edge leftwards, above the line then below it; the first spot that covers
// no text, no bar and crosses no line wins, then one that only crosses a line, then one over a
// bar; when every spot covers a text, the one covering the least. `cover`, when given, says
// what the chosen spot covers.
enum class LabelCover { Nothing, Line, Bar, Text };
QRectF place_line_label(const QSizeF& size, double line_y, const QRectF& area, const LabelObstacles& obstacles,
                        LabelCover* cover = nullptr);

// Pairs (i, j), i < j, of rectangles that overlap by more than `tolerance` px each way.
std::vector<std::pair<int, int>> overlapping_rects(const std::vector<QRectF>& rects, double tolerance = 0.5);

}  // namespace wingspan::ui
