#include "flowtrain/summary/histogram_bins.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "flowtrain/core/error.h"

namespace flowtrain::summary {

std::vector<UniformBin> Rebin(const std::vector<HistogramBucket>& buckets, double lo, double hi,
                              int bin_count) {
  if (bin_count < 1) InvalidArgument("Rebin needs at least one bin, got bin_count=", bin_count);
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) {
    InvalidArgument("Rebin needs a finite range lo <= hi, got [", lo, ", ", hi, "]");
  }
  if (lo == hi) {  // a series of one value still gets bins around it
    hi = lo * 1.1 + 1;
    lo = lo / 1.1 - 1;
  }
  const double width = (hi - lo) / bin_count;
  std::vector<UniformBin> bins;
  bins.reserve(bin_count);
  size_t next = 0;  // the first bucket not wholly given out to earlier bins
  for (int i = 0; i < bin_count; ++i) {
    const double bin_left = lo + i * width;
    const double bin_right = bin_left + width;
    double count = 0;
    while (next < buckets.size()) {
      const HistogramBucket& bucket = buckets[next];
      const double right = std::min(hi, bucket.right);
      const double left = std::max(lo, bucket.left);
      if (right - left > 0) {
        const double overlap = std::min(right, bin_right) - std::max(left, bin_left);
        if (overlap > 0) count += overlap / (right - left) * bucket.count;
      } else {
        // A point: it belongs to the bin whose half-open span holds it; the last bin is closed.
        const bool last_bin = bin_right >= hi;
        if (bin_left <= left && (last_bin ? right <= bin_right : right < bin_right)) {
          count += bucket.count;
        }
      }
      if (right > bin_right) break;  // the rest of this bucket belongs to later bins
      ++next;
    }
    bins.push_back({bin_left, width, count});
  }
  return bins;
}

std::vector<UniformHistogram> RebinSeries(const std::vector<HistogramEvent>& series, int bin_count) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  for (const HistogramEvent& h : series) {
    for (const HistogramBucket& b : h.buckets) {
      lo = std::min(lo, b.left);
      hi = std::max(hi, b.right);
    }
  }
  if (lo > hi) lo = hi = 0;
  std::vector<UniformHistogram> out;
  out.reserve(series.size());
  for (const HistogramEvent& h : series) {
    out.push_back({h.step, h.wall_time, Rebin(h.buckets, lo, hi, bin_count)});
  }
  return out;
}

}  // namespace flowtrain::summary
