#include "charts/label_placement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wingspan::ui {

namespace {

constexpr double kGap = 2;    // px kept free around a label
constexpr double kStep = 4;   // px between the spots tried along the line

double covered_area(const QRectF& r, const std::vector<QRectF>& others) {
    double area = 0;
    for (const QRectF& o : others) {
        const QRectF i = r.intersected(o);
        if (!i.isEmpty()) area += i.width() * i.height();
    }
    return area;
}

bool crosses(const QRectF& r, const std::vector<QLineF>& lines) {
    for (const QLineF& l : lines) {
        const double y = l.y1();
        if (y > r.top() + 1 && y < r.bottom() - 1 && std::max(l.x1(), l.x2()) > r.left() && std::min(l.x1(), l.x2()) < r.right())
            return true;
    }
    return false;
}

}  // namespace

QRectF place_line_label(const QSizeF& size, double line_y, const QRectF& area, const LabelObstacles& obstacles,
                        LabelCover* covers) {
    const double right = area.right() - 4 - size.width();
    const double left = area.left() + 4;
    QRectF best;
    int best_tier = std::numeric_limits<int>::max();
    double best_cover = std::numeric_limits<double>::max();
    for (const double top : {line_y - size.height() - 1, line_y + 2}) {
        if (top < area.top() || top + size.height() > area.bottom()) continue;
        const int steps = right > left ? int(std::floor((right - left) / kStep)) : 0;
        for (int k = 0; k <= steps; ++k) {
            const QRectF r(QPointF(right - k * kStep, top), size);
            const QRectF padded = r.adjusted(-kGap, -kGap / 2, kGap, kGap / 2);
            const double cover = covered_area(padded, obstacles.texts);
            int tier = 3;
            if (cover <= 0) tier = covered_area(r, obstacles.bars) > 0 ? 2 : crosses(r, obstacles.lines) ? 1 : 0;
            if (tier < best_tier || (tier == 3 && cover < best_cover)) {
                best = r;
                best_tier = tier;
                best_cover = cover;
                if (tier == 0) break;
            }
        }
        if (best_tier == 0) break;
    }
    if (covers) *covers = best.isNull() ? LabelCover::Text : LabelCover(std::min(best_tier, 3));
    // A plot too small for the label: on the line at the right edge, as before.
    return best.isNull() ? QRectF(QPointF(right, line_y - size.height()), size) : best;
}

std::vector<std::pair<int, int>> overlapping_rects(const std::vector<QRectF>& rects, double tolerance) {
    std::vector<std::pair<int, int>> pairs;
    for (size_t i = 0; i < rects.size(); ++i)
        for (size_t j = i + 1; j < rects.size(); ++j) {
            const QRectF a = rects[i].adjusted(tolerance, tolerance, -tolerance, -tolerance);
            const QRectF b = rects[j].adjusted(tolerance, tolerance, -tolerance, -tolerance);
            if (a.isValid() && b.isValid() && a.intersects(b)) pairs.emplace_back(int(i), int(j));
        }
    return pairs;
}

}  // namespace wingspan::ui
