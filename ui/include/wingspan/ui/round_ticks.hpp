#pragma once
// Ticks at round steps for every value axis the window and its exports draw (memory bars, run
// charts): a step of 1, 2 or 5 × 10ⁿ and labels with exactly the decimals that step needs, so
// a label always reads the value its gridline stands at ("0, 5, 10, 15", never "3, 5, 8, 10,
// 13" for steps of 2.5 printed without decimals).
#include <QString>

class QValueAxis;

namespace wingspan::ui {

struct RoundTicks {
    double lo = 0, hi = 1;   // the axis range
    double step = 1;         // between gridlines, 1, 2 or 5 × 10ⁿ
    int decimals = 0;        // of every label: those of the step
    QString labelFormat() const { return QString("%.%1f").arg(decimals); }
};

// The round step that cuts `span` into about `target` pieces.
double round_step(double span, int target);
// Ticks over [lo, hi]; with `extend` the range grows out to whole steps (a y axis), without it
// the range stays and ticks sit at the multiples of the step inside it (a time axis).
RoundTicks round_ticks(double lo, double hi, int target, bool extend);
// The axis set to them: range, dynamic ticks at multiples of the step, labels' format. Each
// setter lays the axis out again even when the value is the same: only what changed is set.
void apply_round_ticks(QValueAxis* axis, const RoundTicks& ticks);

}  // namespace wingspan::ui
