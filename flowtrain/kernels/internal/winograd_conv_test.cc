// The Winograd F(2x2, 5x5) and F(4x4, 3x3) convolutions (forward, input gradient, filter
// gradient) against a float64 direct convolution: shapes with one image and several, sizes
// that are not a multiple of the tile, SAME and VALID padding, 1 to 64 channels, on one thread
// and split over a pool. Each output must be within kRelativeError of the sum of the absolute
// values of its terms (the float32 rounding of a 25 * in_depth term sum is ~1e-7 of that;
// Winograd's transforms, with coefficients up to 5 (and 8 in F(4x4, 3x3)'s A), lose a few more
// bits); the filter gradient, of the largest such sum of its tensor (see CheckClose).
#include "flowtrain/kernels/internal/winograd_conv.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/internal/cpu_features.h"
#include "flowtrain/core/thread_pool.h"

namespace flowtrain {
namespace {

constexpr double kRelativeError = 1e-5;  // measured worst: 2.8e-6 for 5x5, 5.9e-6 for 3x3

struct Reference {
  std::vector<double> value, magnitude;  // the exact sum and the sum of |terms|, per element
};

// Calls fn(input index, filter index, output index) for every term of the convolution d.
template <typename Fn>
void ForEachTerm(const WinogradConvDims& d, const Fn& fn) {
  const int64_t kR = d.filter_size;
  for (int64_t n = 0; n < d.batch; ++n)
    for (int64_t oh = 0; oh < d.out_rows; ++oh)
      for (int64_t ow = 0; ow < d.out_cols; ++ow)
        for (int64_t fr = 0; fr < kR; ++fr)
          for (int64_t fc = 0; fc < kR; ++fc) {
            const int64_t ih = oh - d.pad_rows + fr, iw = ow - d.pad_cols + fc;
            if (ih < 0 || ih >= d.in_rows || iw < 0 || iw >= d.in_cols) continue;
            for (int64_t ci = 0; ci < d.in_depth; ++ci)
              for (int64_t co = 0; co < d.out_depth; ++co)
                fn(((n * d.in_rows + ih) * d.in_cols + iw) * d.in_depth + ci,
                   ((fr * kR + fc) * d.in_depth + ci) * d.out_depth + co,
                   ((n * d.out_rows + oh) * d.out_cols + ow) * d.out_depth + co);
          }
}

std::vector<float> RandomValues(int64_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> values(size);
  for (float& v : values) v = dist(rng);
  return values;
}

// The largest |got - want| / scale_i over the elements, failing where it exceeds
// kRelativeError. scale_i is element i's sum of |terms|, or with `tensor_wide` the largest of
// the tensor's: a filter gradient tap sums the tiles' transformed products, in which all the
// taps of a 6x6 patch take part, so its error follows the largest of them, not its own sum.
double CheckClose(const std::vector<float>& got, const Reference& want, bool tensor_wide, const char* what) {
  const double widest = *std::max_element(want.magnitude.begin(), want.magnitude.end());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::abs(got[i] - want.value[i]);
    const double scale = tensor_wide ? widest : want.magnitude[i];
    if (error > 0) worst = std::max(worst, error / scale);
    if (!(error <= kRelativeError * scale)) {
      ADD_FAILURE() << what << " element " << i << ": " << got[i] << " vs " << want.value[i] << ", scale "
                    << scale;
      break;
    }
  }
  return worst;
}

struct ConvCase {
  int64_t batch, rows, cols, in_depth, out_depth;
  bool same;
};

void CheckCase(const ConvCase& c, int64_t kR, ThreadPool* pool, uint64_t seed) {
  WinogradConvDims d{.batch = c.batch,
                     .in_rows = c.rows,
                     .in_cols = c.cols,
                     .in_depth = c.in_depth,
                     .out_rows = c.same ? c.rows : c.rows - kR + 1,
                     .out_cols = c.same ? c.cols : c.cols - kR + 1,
                     .out_depth = c.out_depth,
                     .pad_rows = c.same ? (kR - 1) / 2 : 0,
                     .pad_cols = c.same ? (kR - 1) / 2 : 0,
                     .filter_size = kR};
  SCOPED_TRACE(std::to_string(c.batch) + "x" + std::to_string(c.rows) + "x" + std::to_string(c.cols) + "x" +
               std::to_string(c.in_depth) + " -> " + std::to_string(c.out_depth) +
               (c.same ? " SAME " : " VALID ") + std::to_string(kR) + "x" + std::to_string(kR) +
               (pool != nullptr ? " pool" : ""));
  const int64_t in_size = d.batch * d.in_rows * d.in_cols * d.in_depth;
  const int64_t out_size = d.batch * d.out_rows * d.out_cols * d.out_depth;
  const int64_t filter_size = kR * kR * d.in_depth * d.out_depth;
  const std::vector<float> x = RandomValues(in_size, seed), w = RandomValues(filter_size, seed + 1),
                           dy = RandomValues(out_size, seed + 2);
  Reference y{std::vector<double>(out_size), std::vector<double>(out_size)};
  Reference dx{std::vector<double>(in_size), std::vector<double>(in_size)};
  Reference dw{std::vector<double>(filter_size), std::vector<double>(filter_size)};
  ForEachTerm(d, [&](int64_t i, int64_t f, int64_t o) {
    const double fwd = double(x[i]) * w[f], bwd_in = double(dy[o]) * w[f], bwd_w = double(dy[o]) * x[i];
    y.value[o] += fwd;
    y.magnitude[o] += std::abs(fwd);
    dx.value[i] += bwd_in;
    dx.magnitude[i] += std::abs(bwd_in);
    dw.value[f] += bwd_w;
    dw.magnitude[f] += std::abs(bwd_w);
  });
  // Outputs start as NaN: every element must be written.
  std::vector<float> got_y(out_size, NAN), got_dx(in_size, NAN), got_dw(filter_size, NAN);
  WinogradConv2D(pool, d, x.data(), w.data(), got_y.data());
  WinogradConv2DBackpropInput(pool, d, w.data(), dy.data(), got_dx.data());
  WinogradConv2DBackpropFilter(pool, d, x.data(), dy.data(), got_dw.data());
  const double worst_y = CheckClose(got_y, y, false, "Conv2D");
  const double worst_dx = CheckClose(got_dx, dx, false, "Conv2DBackpropInput");
  const double worst_dw = CheckClose(got_dw, dw, true, "Conv2DBackpropFilter");
  std::printf("worst relative errors: Conv2D %.2g, Conv2DBackpropInput %.2g, Conv2DBackpropFilter %.2g\n",
              worst_y, worst_dx, worst_dw);
}

const ConvCase kCases[] = {
    {1, 14, 14, 32, 64, true},                           // the CNN benchmark's second layer, one image
    {2, 7, 9, 3, 5, false},                              // odd sizes: partial tiles on both edges
    {3, 11, 6, 17, 1, true},                             // one output channel, channels not a multiple of 16
    {1, 5, 5, 64, 16, false},                            // a single output pixel
    {2, 13, 13, 1, 64, true},                            // one input channel
    {1, 6, 9, 20, 33, false},  {2, 3, 4, 16, 16, true},  // an image smaller than the filter
};

constexpr char kNeedsAvx512[] =
    "the Winograd kernels need AVX-512, which this CPU lacks (or FLOWTRAIN_MAX_CPU_ISA excludes)";

// F(2x2, 5x5) and F(4x4, 3x3).
constexpr int64_t kFilterSizes[] = {5, 3};

TEST(WinogradConvTest, MatchesFloat64DirectConvolutionOnOneThread) {
  if (!CpuHasAvx512()) GTEST_SKIP() << kNeedsAvx512;
  uint64_t seed = 1;
  for (int64_t r : kFilterSizes) {
    for (const ConvCase& c : kCases) CheckCase(c, r, nullptr, seed += 3);
  }
}

TEST(WinogradConvTest, MatchesFloat64DirectConvolutionSplitOverPool) {
  if (!CpuHasAvx512()) GTEST_SKIP() << kNeedsAvx512;
  ThreadPool pool("winograd_test", 3);
  uint64_t seed = 100;
  for (int64_t r : kFilterSizes) {
    for (const ConvCase& c : kCases) CheckCase(c, r, &pool, seed += 3);
    // Many blocks of tiles, claimed by the pool's threads.
    CheckCase({6, 14, 14, 32, 64, true}, r, &pool, seed += 3);
    CheckCase({5, 17, 15, 24, 40, false}, r, &pool, seed += 3);
  }
}

TEST(WinogradConvTest, AppliesToThreeAndFiveSquareFiltersWithEnoughChannelsOnAvx512) {
  EXPECT_EQ(WinogradConvApplies(5, 5, 32, 64), CpuHasAvx512());
  EXPECT_EQ(WinogradConvApplies(3, 3, 16, 16), CpuHasAvx512());
  EXPECT_FALSE(WinogradConvApplies(7, 7, 32, 64));
  EXPECT_FALSE(WinogradConvApplies(5, 4, 32, 64));
  EXPECT_FALSE(WinogradConvApplies(5, 5, 1, 32));
  EXPECT_FALSE(WinogradConvApplies(5, 5, 32, 8));
}

// Where the CPU lacks AVX-512 the kernels refuse to run, naming why, instead of executing an
// illegal instruction.
TEST(WinogradConvTest, RefusesToRunWithoutAvx512) {
  if (CpuHasAvx512()) GTEST_SKIP() << "this CPU has AVX-512 (FLOWTRAIN_MAX_CPU_ISA=SSE2 runs this test)";
  const WinogradConvDims d{.batch = 1,
                           .in_rows = 5,
                           .in_cols = 5,
                           .in_depth = 16,
                           .out_rows = 5,
                           .out_cols = 5,
                           .out_depth = 16,
                           .pad_rows = 2,
                           .pad_cols = 2,
                           .filter_size = 5};
  std::vector<float> x(5 * 5 * 16), w(5 * 5 * 16 * 16), y(5 * 5 * 16);
  try {
    WinogradConv2D(nullptr, d, x.data(), w.data(), y.data());
    FAIL() << "WinogradConv2D ran without AVX-512";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("need AVX-512"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flowtrain
