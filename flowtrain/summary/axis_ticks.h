// Round tick values for a chart axis: steps of 1, 2 or 5 times a power of ten ("nice numbers",
// as d3 and so TensorBoard's charts pick them), with the axis widened to the ticks around the
// data so that the first and last gridlines are labelled too.
//
//   const AxisTicks y = NiceTicks(0.0213, 2.3026);  // lo 0, hi 2.5, ticks 0, 0.5, ..., 2.5
//   for (double v : y.values) DrawGridline(v, FormatTick(v));
//
// Pure functions; thread-safe.
#ifndef FLOWTRAIN_SUMMARY_AXIS_TICKS_H_
#define FLOWTRAIN_SUMMARY_AXIS_TICKS_H_

#include <string>
#include <vector>

namespace flowtrain::summary {

struct AxisTicks {
  double lo = 0, hi = 0;       // the axis range: the data range widened to whole ticks
  double step = 0;             // 1, 2 or 5 times a power of ten
  std::vector<double> values;  // lo, lo + step, ..., hi
};

// Ticks for data spanning [lo, hi] (in either order), with a step near (hi - lo) / target, so
// about `target` intervals. A single value gets a range around it (±1 around 0, else ±10%).
// InvalidArgument for a non-finite bound or a target below 1.
AxisTicks NiceTicks(double lo, double hi, int target = 5);

// A tick value as a label: at most six significant digits, without noise from the steps'
// binary rounding ("0.3", not "0.30000000000000004"), exactly "0" for zero.
std::string FormatTick(double value);

}  // namespace flowtrain::summary

#endif  // FLOWTRAIN_SUMMARY_AXIS_TICKS_H_
