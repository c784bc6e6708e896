// Re-bins histograms onto uniform bins the way TensorBoard's histogram dashboard draws them,
// so a viewer shows what TensorBoard shows. TF's own buckets grow exponentially away from zero
// and include ones about 1e-12 wide; drawn as they are (or as count / width), a single bucket
// of ReLU zeros dwarfs everything else. TensorBoard instead spreads each bucket's count over
// `bin_count` (30) equal bins spanning [min, max] of the whole series, in proportion to the
// overlap, and plots the counts.
//
//   const std::vector<HistogramEvent>& series = run.Histograms("dense/activations");
//   for (const UniformHistogram& h : RebinSeries(series)) {
//     for (const UniformBin& bin : h.bins) Plot(h.step, bin.left + bin.width / 2, bin.count);
//   }
//
// Pure functions of their arguments; thread-safe.
#ifndef FLOWTRAIN_SUMMARY_HISTOGRAM_BINS_H_
#define FLOWTRAIN_SUMMARY_HISTOGRAM_BINS_H_

#include <cstdint>
#include <vector>

#include "flowtrain/summary/event_accumulator.h"

namespace flowtrain::summary {

// TensorBoard's number of bins per histogram.
inline constexpr int kTensorBoardBinCount = 30;

struct UniformBin {
  double left = 0;
  double width = 0;
  double count = 0;  // the (fractional) number of values that fall in [left, left + width)
};

struct UniformHistogram {
  int64_t step = 0;
  double wall_time = 0;
  std::vector<UniformBin> bins;
};

// `buckets` (TensorBoard's [left, right, count] form, sorted, not overlapping) spread over
// `bin_count` equal bins covering [lo, hi]. A bucket's count goes to the bins it overlaps in
// proportion to the overlap; a zero-width bucket (all values equal) goes whole to the bin
// holding it, the last bin including its right edge. When lo == hi the range is widened to
// [lo / 1.1 - 1, lo * 1.1 + 1] as TensorBoard does. InvalidArgument if bin_count < 1 or
// lo > hi or either is not finite.
std::vector<UniformBin> Rebin(const std::vector<HistogramBucket>& buckets, double lo, double hi,
                              int bin_count = kTensorBoardBinCount);

// Every histogram of a series re-binned over one shared range: the smallest left edge and the
// largest right edge of all their buckets ([0, 0] when every histogram is empty), so the
// histograms of different steps line up.
std::vector<UniformHistogram> RebinSeries(const std::vector<HistogramEvent>& series,
                                          int bin_count = kTensorBoardBinCount);

}  // namespace flowtrain::summary

#endif  // FLOWTRAIN_SUMMARY_HISTOGRAM_BINS_H_
