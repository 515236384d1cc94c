#include "wingspan/ui/round_ticks.hpp"

#include <algorithm>
#include <cmath>

#include <QValueAxis>

namespace wingspan::ui {

double round_step(double span, int target) {
    const double raw = std::max(span, 1e-12) / std::max(1, target);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / mag;
    // 2.5 is left out on purpose: its labels need a decimal the others do not.
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

RoundTicks round_ticks(double lo, double hi, int target, bool extend) {
    RoundTicks t;
    if (!(hi > lo)) hi = lo + 1;
    t.step = round_step(hi - lo, target);
    // A hair of tolerance: 15.000000001 from floating point must not add a step.
    const double eps = t.step * 1e-9;
    t.lo = extend ? std::floor((lo + eps) / t.step) * t.step : lo;
    t.hi = extend ? std::ceil((hi - eps) / t.step) * t.step : hi;
    t.decimals = std::max(0, int(-std::floor(std::log10(t.step) + 1e-9)));
    return t;
}

void apply_round_ticks(QValueAxis* axis, const RoundTicks& t) {
    if (!axis) return;
    if (axis->tickType() != QValueAxis::TicksDynamic) axis->setTickType(QValueAxis::TicksDynamic);
    if (axis->tickAnchor() != 0) axis->setTickAnchor(0);
    if (!std::isfinite(t.lo) || !std::isfinite(t.hi) || !(t.step > 0) || !std::isfinite(t.step)) return;
    // Dynamic ticks are laid out at once for every setter: a range grown a million-fold at the
    // old, small interval makes a million tick items (test_run_fake hung in createItems when a
    // run chart's range jumped). So the coarser step goes first and the finer one last: between
    // the two calls the axis never holds more ticks than before or after.
    const bool coarser = t.step > axis->tickInterval();
    if (coarser && axis->tickInterval() != t.step) axis->setTickInterval(t.step);
    if (axis->min() != t.lo || axis->max() != t.hi) axis->setRange(t.lo, t.hi);
    if (axis->tickInterval() != t.step) axis->setTickInterval(t.step);
    const QString format = t.labelFormat();
    if (axis->labelFormat() != format) axis->setLabelFormat(format);
}

}  // namespace wingspan::ui
