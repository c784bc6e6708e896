#include "flowtrain/summary/histogram_bins.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/summary/event_accumulator.h"
#include "flowtrain/summary/file_writer.h"
#include "flowtrain/summary/summary.h"
#include "tests/test_util.h"

namespace flowtrain::summary {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAreArray;
using ::testing::Matcher;

HistogramEvent Histogram(int64_t step, std::vector<HistogramBucket> buckets) {
  HistogramEvent h;
  h.step = step;
  h.buckets = std::move(buckets);
  return h;
}

std::vector<double> Counts(const std::vector<UniformBin>& bins) {
  std::vector<double> counts;
  for (const UniformBin& bin : bins) counts.push_back(bin.count);
  return counts;
}

std::vector<Matcher<double>> Near(const std::vector<double>& expected) {
  std::vector<Matcher<double>> matchers;
  for (double v : expected) matchers.push_back(DoubleNear(v, 1e-9));
  return matchers;
}

// The expected bins below are what TensorBoard 2.21's histogram dashboard computes for the same
// buckets: its re-binning function, taken from tensorboard/webfiles.zip and run under node on
// these [left, right, count] triples.
TEST(RebinSeries, MatchesTensorBoardOnASeriesWithASpikeAGapAndAPoint) {
  const std::vector<HistogramEvent> series = {
      // ReLU-like: 700 zeros in a 1e-12-wide bucket, inner empty buckets kept as TF writes them.
      Histogram(10, {{0, 1e-12, 700},
                     {1e-12, 0.9, 0},
                     {0.9, 1.0, 100},
                     {1.0, 1.1, 150},
                     {1.1, 2.7, 0},
                     {2.7, 3.0, 50}}),
      Histogram(20, {{-0.5, -0.4, 20}, {-0.4, 2.0, 80}}),
      Histogram(30, {{0.25, 0.25, 5}}),  // every value equal: a zero-width bucket
  };
  const std::vector<UniformHistogram> binned = RebinSeries(series);
  ASSERT_EQ(binned.size(), 3u);
  for (const UniformHistogram& h : binned) {
    ASSERT_EQ(h.bins.size(), 30u);
    // One range for the whole series: [-0.5, 3.0].
    EXPECT_DOUBLE_EQ(h.bins.front().left, -0.5);
    EXPECT_DOUBLE_EQ(h.bins.front().width, 0.11666666666666667);
  }
  EXPECT_EQ(binned[1].step, 20);

  std::vector<double> spike(30, 0.0);
  spike[4] = 700;  // all the zeros in one bin of the uniform width, not a 1e-12 sliver
  spike[12] = 125;
  spike[13] = 125;
  spike[27] = 11.111111111111;
  spike[28] = 19.444444444444;
  spike[29] = 19.444444444444;
  std::vector<double> spread(30, 3.888888888889);
  spread[0] = 20.555555555556;
  spread[21] = 1.666666666667;
  for (int i = 22; i < 30; ++i) spread[i] = 0;
  std::vector<double> point(30, 0.0);
  point[6] = 5;
  for (auto [h, expected] : {std::pair{&binned[0], &spike}, {&binned[1], &spread}, {&binned[2], &point}}) {
    SCOPED_TRACE(h->step);
    std::vector<Matcher<double>> near;
    for (double v : *expected) near.push_back(DoubleNear(v, 1e-9));
    EXPECT_THAT(Counts(h->bins), ElementsAreArray(near));
  }
}

TEST(Rebin, OneValueGetsARangeAroundIt) {
  // TensorBoard widens [2, 2] to [2 / 1.1 - 1, 2 * 1.1 + 1].
  const std::vector<UniformBin> bins = Rebin({{2, 2, 4}}, 2, 2);
  ASSERT_EQ(bins.size(), 30u);
  EXPECT_DOUBLE_EQ(bins.front().left, 0.8181818181818181);
  EXPECT_DOUBLE_EQ(bins.front().width, 0.07939393939393939);
  std::vector<double> expected(30, 0.0);
  expected[14] = 4;
  EXPECT_THAT(Counts(bins), ElementsAreArray(Near(expected)));
}

TEST(Rebin, APointAtTheTopEdgeCountsInTheLastBin) {
  const std::vector<UniformBin> bins = Rebin({{0, 3, 3}, {3, 3, 2}}, 0, 3);
  std::vector<double> expected(30, 0.1);
  expected[29] = 2.1;
  EXPECT_THAT(Counts(bins), ElementsAreArray(Near(expected)));
}

TEST(RebinSeries, EmptyHistogramsGetEmptyBinsAroundZero) {
  const std::vector<UniformHistogram> binned = RebinSeries({Histogram(1, {})});
  ASSERT_EQ(binned.size(), 1u);
  ASSERT_EQ(binned[0].bins.size(), 30u);
  EXPECT_DOUBLE_EQ(binned[0].bins.front().left, -1);
  EXPECT_THAT(Counts(binned[0].bins), ElementsAreArray(Near(std::vector<double>(30, 0.0))));
  EXPECT_TRUE(RebinSeries({}).empty());
}

TEST(Rebin, BadArgumentsAreInvalidArgument) {
  EXPECT_THROW(Rebin({}, 0, 1, 0), InvalidArgumentError);
  EXPECT_THROW(Rebin({}, 1, 0), InvalidArgumentError);
  EXPECT_THROW(Rebin({}, 0, std::numeric_limits<double>::infinity()), InvalidArgumentError);
  EXPECT_THROW(Rebin({}, std::nan(""), 1), InvalidArgumentError);
}

// The case that made histograms useless: ReLU activations, half of them exactly zero, written
// by the histogram summary op and read back. TF's bucket for the zeros is 1e-12 wide, so its
// density is ~5e14 times the rest; the uniform bins keep every value and show both parts.
TEST(RebinSeries, ReluActivationsFromTheSummaryOp) {
  const std::string logdir = ::flowtrain::testing::MakeTempDir("relu_histogram");
  std::vector<float> pre_activations;
  for (int i = 0; i < 1000; ++i) pre_activations.push_back(-3.0f + 6.0f * i / 999);
  Graph g;
  auto as_default = g.AsDefault();
  summary::Histogram("activations", ops::Relu(ops::Const<float>(pre_activations, TensorShape({1000}))));
  Output merged = MergeAll();
  {
    Session sess(g);
    FileWriter writer(logdir);
    writer.AddSummary(sess.Run({}, {merged})[0].scalar<std::string>(), 1);
  }
  EventAccumulator run(logdir);
  run.Reload();
  const HistogramEvent& h = run.Histograms("activations").back();
  ASSERT_EQ(h.num, 1000);
  double widest_density = 0;
  for (const HistogramBucket& b : h.buckets) {
    if (b.right > b.left) widest_density = std::max(widest_density, b.count / (b.right - b.left));
  }
  EXPECT_GT(widest_density, 1e14);  // the spike as count / width draws it

  const std::vector<UniformBin> bins = RebinSeries(run.Histograms("activations")).back().bins;
  ASSERT_EQ(bins.size(), 30u);
  EXPECT_DOUBLE_EQ(bins.front().left, 0);
  EXPECT_NEAR(bins.back().left + bins.back().width, 3, 1e-6);
  double total = 0;
  for (const UniformBin& bin : bins) total += bin.count;
  EXPECT_NEAR(total, 1000, 1e-6);
  // 500 zeros plus the ~17 positive values of the first 0.1; every other bin holds ~17.
  EXPECT_GE(bins[0].count, 500);
  EXPECT_LE(bins[0].count, 530);
  for (size_t i = 1; i < bins.size(); ++i) {
    EXPECT_GT(bins[i].count, 8) << "bin " << i;
    EXPECT_LT(bins[i].count, 26) << "bin " << i;
  }
}

}  // namespace
}  // namespace flowtrain::summary
