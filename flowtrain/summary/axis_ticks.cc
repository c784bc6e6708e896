#include "flowtrain/summary/axis_ticks.h"

#include <cmath>
#include <cstdio>
#include <utility>

#include "flowtrain/core/error.h"

namespace flowtrain::summary {

AxisTicks NiceTicks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) {
    InvalidArgument("NiceTicks needs a finite range, got [", lo, ", ", hi, "]");
  }
  if (target < 1) InvalidArgument("NiceTicks needs a target of at least 1 interval, got ", target);
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  // d3's rule: the raw step's leading digit decides between 1, 2, 5 and 10 by geometric means.
  const double raw = (hi - lo) / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double error = raw / power;
  const double multiple = error >= std::sqrt(50.0)   ? 10
                          : error >= std::sqrt(10.0) ? 5
                          : error >= std::sqrt(2.0)  ? 2
                                                     : 1;
  AxisTicks ticks;
  ticks.step = multiple * power;
  // Whole multiples of the step, computed as k * step (or k / (1 / step) for small steps, which
  // is exact for them) so that 0.1 * 3 does not print as 0.30000000000000004.
  const bool small = ticks.step < 1;
  const double inverse = small ? std::round(1 / ticks.step) : 0;
  auto at = [&](double k) { return small ? k / inverse : k * ticks.step; };
  // The nudges keep a bound that is a tick up to rounding (2.0000000001 steps) from adding a
  // whole interval beyond it.
  const double first = std::floor(lo / ticks.step + 1e-9);
  const double last = std::ceil(hi / ticks.step - 1e-9);
  if (!std::isfinite(ticks.step) || !(last - first <= 4.0 * target) || first + 1 == first) {
    // Beyond double precision (a span of 1e308, or 16 units at 1e17 where k + 1 == k): the
    // bounds themselves are the only ticks that can be told apart.
    return {lo, hi, hi - lo, {lo, hi}};
  }
  for (double k = first; k <= last; ++k) ticks.values.push_back(at(k));
  ticks.lo = ticks.values.front();
  ticks.hi = ticks.values.back();
  return ticks;
}

std::string FormatTick(double value) {
  if (value == 0) return "0";  // also for -0
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", value);
  return buf;
}

}  // namespace flowtrain::summary
