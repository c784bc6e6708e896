// The nn ops end to end: values against hand-computed results and naive loops, gradients
// against central finite differences in float64, and bad input rejected with InvalidArgument
// naming the op (at build time when shapes are known, at run time otherwise).
#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/runtime/gradient_checker.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;

template <typename T>
Tensor Random(const TensorShape& shape, uint64_t seed, double low = -1, double high = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(low, high);
  Tensor t(DataTypeToEnum<T>::value, shape);
  for (T& v : t.flat<T>()) v = static_cast<T>(dist(rng));
  return t;
}

// Distinct values spaced well apart (a shuffled ramp), so max-pooling's argmax does not
// change under a finite-difference step.
Tensor DistinctDoubles(const TensorShape& shape, uint64_t seed) {
  Tensor t(DT_DOUBLE, shape);
  std::vector<double> values(t.NumElements());
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.05 * static_cast<double>(i) - 1.0;
  std::shuffle(values.begin(), values.end(), std::mt19937_64(seed));
  std::copy(values.begin(), values.end(), t.flat<double>().begin());
  return t;
}

class NnOpsTest : public ::testing::Test {
 protected:
  Graph g_;
  ScopeGuard as_default_ = g_.AsDefault();

  Output In(DataType dtype, const PartialTensorShape& shape, std::string_view name = "x") {
    return ops::Placeholder(dtype, shape, name);
  }
  Tensor Run(const Output& y, const FeedList& feeds = {}) {
    Session sess(g_);
    return sess.Run(feeds, {y})[0];
  }
};

void ExpectNear(const Tensor& actual, const std::vector<float>& expected, float tolerance = 1e-5f) {
  ASSERT_EQ(actual.NumElements(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual.flat<float>()[i], expected[i], tolerance) << "at " << i;
  }
}

// ---- Activations ----

TEST_F(NnOpsTest, ActivationValues) {
  Output x = ops::Const<float>({-2, -0.5f, 0, 0.5f, 3, 7}, TensorShape({2, 3}));
  Session sess(g_);
  auto out = sess.Run({}, {ops::Relu(x), ops::Relu6(x), ops::Elu(x), ops::LeakyRelu(x, 0.1f)});
  EXPECT_EQ(out[0].shape(), TensorShape({2, 3}));
  ExpectNear(out[0], {0, 0, 0, 0.5f, 3, 7});
  ExpectNear(out[1], {0, 0, 0, 0.5f, 3, 6});
  ExpectNear(out[2], {std::exp(-2.0f) - 1, std::exp(-0.5f) - 1, 0, 0.5f, 3, 7});
  ExpectNear(out[3], {-0.2f, -0.05f, 0, 0.5f, 3, 7});
  EXPECT_EQ(ops::Relu(x).op().name(), "Relu_1");
  EXPECT_EQ(ops::LeakyRelu(x).op().GetAttr<float>("alpha"), 0.2f);
}

TEST_F(NnOpsTest, ActivationGradients) {
  // Values away from the kinks at 0 and 6.
  Tensor v = Tensor::FromVector<double>({-2.5, -1.2, -0.3, 0.4, 1.7, 5.2, 6.8, 9.0}, TensorShape({2, 4}));
  Output x = In(DT_DOUBLE, {2, 4});
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::Relu(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::Relu6(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::Elu(x)), 1e-7);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::LeakyRelu(x, 0.3f)), 1e-8);
  // Second order: the *Grad ops are linear in their gradient input.
  Output g = In(DT_DOUBLE, {2, 4}, "g");
  Tensor gv = RandomDoubles({2, 4}, 3);
  FeedList features = {{x, v}};
  EXPECT_LT(ComputeGradientError({g}, {gv}, ops::ReluGrad(g, x), {.extra_feeds = features}), 1e-8);
  EXPECT_LT(ComputeGradientError({g}, {gv}, ops::Relu6Grad(g, x), {.extra_feeds = features}), 1e-8);
  EXPECT_LT(ComputeGradientError({g}, {gv}, ops::LeakyReluGrad(g, x, 0.3f), {.extra_feeds = features}), 1e-8);
}

TEST_F(NnOpsTest, ActivationGradKernelValues) {
  Output g = ops::Const<float>({1, 2, 3, 4}, TensorShape({4}));
  Output f = ops::Const<float>({-1, 0.5f, 6.5f, 2}, TensorShape({4}));
  Session sess(g_);
  auto out = sess.Run({}, {ops::ReluGrad(g, f), ops::Relu6Grad(g, f), ops::LeakyReluGrad(g, f, 0.5f),
                           ops::EluGrad(g, ops::Elu(f))});
  ExpectNear(out[0], {0, 2, 3, 4});
  ExpectNear(out[1], {0, 2, 0, 4});
  ExpectNear(out[2], {0.5f, 2, 3, 4});
  ExpectNear(out[3], {std::exp(-1.0f), 2, 3, 4});
}

// The activation kernels run a SIMD packet at a time with a scalar tail: long inputs (zeros,
// sixes and negatives included) against per-element formulas, in both float types.
TEST_F(NnOpsTest, ActivationKernelsMatchScalarFormulasOnLongInputs) {
  const int n = 75;  // several packets and a tail, for float and double
  auto check = [&]<typename T>(DataType dtype) {
    Tensor gv = Random<T>({n}, 50, -2, 2);
    Tensor fv = Random<T>({n}, 51, -8, 8);
    fv.flat<T>()[3] = 0;
    fv.flat<T>()[40] = 6;
    Output g = ops::Const(gv);
    Output f = ops::Const(fv);
    Session sess(g_);
    auto out =
        sess.Run({}, {ops::Relu(f), ops::Relu6(f), ops::LeakyRelu(f, 0.25f), ops::Elu(f), ops::ReluGrad(g, f),
                      ops::Relu6Grad(g, f), ops::LeakyReluGrad(g, f, 0.25f), ops::EluGrad(g, f)});
    for (int i = 0; i < n; ++i) {
      const T x = fv.flat<T>()[i], d = gv.flat<T>()[i];
      const T expected[] = {std::max(x, T(0)),       std::min(std::max(x, T(0)), T(6)),
                            x > 0 ? x : x * T(0.25), x < 0 ? std::exp(x) - 1 : x,
                            x > 0 ? d : T(0),        x > 0 && x < 6 ? d : T(0),
                            x > 0 ? d : d * T(0.25), x < 0 ? d * (x + 1) : d};
      for (size_t k = 0; k < out.size(); ++k) {
        EXPECT_NEAR(out[k].flat<T>()[i], expected[k], 1e-6 * std::max<double>(1, std::abs(expected[k])))
            << DataTypeString(dtype) << " output " << k << " at " << i << " (x = " << x << ")";
      }
    }
  };
  check.template operator()<float>(DT_FLOAT);
  check.template operator()<double>(DT_DOUBLE);
}

// ---- Softmax and losses ----

TEST_F(NnOpsTest, SoftmaxValues) {
  Output x = ops::Const<float>({1, 2, 3, 1000, 1000, 1000}, TensorShape({2, 3}));
  Session sess(g_);
  auto out = sess.Run({}, {ops::Softmax(x), ops::LogSoftmax(x)});
  const float z = std::exp(1.0f) + std::exp(2.0f) + std::exp(3.0f);
  ExpectNear(out[0],
             {std::exp(1.0f) / z, std::exp(2.0f) / z, std::exp(3.0f) / z, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f});
  ExpectNear(out[1], {1 - std::log(z), 2 - std::log(z), 3 - std::log(z), -std::log(3.0f), -std::log(3.0f),
                      -std::log(3.0f)});
}

TEST_F(NnOpsTest, SoftmaxGradients) {
  Output x = In(DT_DOUBLE, {3, 4});
  Tensor v = RandomDoubles({3, 4}, 5, -2, 2);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::Softmax(x)), 1e-8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::LogSoftmax(x)), 1e-8);
  Output x3 = In(DT_DOUBLE, {2, 2, 3}, "x3");
  EXPECT_LT(ComputeGradientError({x3}, {RandomDoubles({2, 2, 3}, 6)}, ops::Softmax(x3)), 1e-8);
}

TEST_F(NnOpsTest, SoftmaxCrossEntropyValues) {
  Output logits = ops::Const<float>({1, 2, 3, 0, 0, 0}, TensorShape({2, 3}));
  Output labels = ops::Const<float>({0, 0, 1, 0.5f, 0.5f, 0}, TensorShape({2, 3}));
  auto [loss, backprop] = ops::SoftmaxCrossEntropyWithLogits(labels, logits);
  EXPECT_EQ(loss.shape().DebugString(), "[2]");
  EXPECT_EQ(loss.op().name(), "SoftmaxCrossEntropyWithLogits");
  Session sess(g_);
  auto out = sess.Run({}, {loss, backprop});
  const float z = std::exp(1.0f) + std::exp(2.0f) + std::exp(3.0f);
  ExpectNear(out[0], {std::log(z) - 3, std::log(3.0f)});
  ExpectNear(out[1], {std::exp(1.0f) / z, std::exp(2.0f) / z, std::exp(3.0f) / z - 1, 1 / 3.0f - 0.5f,
                      1 / 3.0f - 0.5f, 1 / 3.0f});
}

TEST_F(NnOpsTest, SoftmaxCrossEntropyGradients) {
  Output logits = In(DT_DOUBLE, {3, 4}, "logits");
  Output labels = In(DT_DOUBLE, {3, 4}, "labels");
  Tensor lv = RandomDoubles({3, 4}, 7, -2, 2);
  // Each row of labels a distribution: the op's backprop (softmax - labels) assumes it.
  Tensor yv = RandomDoubles({3, 4}, 8, 0.1, 1);
  for (int r = 0; r < 3; ++r) {
    double sum = 0;
    for (int c = 0; c < 4; ++c) sum += yv.flat<double>()[r * 4 + c];
    for (int c = 0; c < 4; ++c) yv.flat<double>()[r * 4 + c] /= sum;
  }
  auto [loss, backprop] = ops::SoftmaxCrossEntropyWithLogits(labels, logits);
  EXPECT_LT(ComputeGradientError({logits, labels}, {lv, yv}, loss), 1e-8);
  // The backprop output's own gradient (second order).
  EXPECT_LT(ComputeGradientError({logits, labels}, {lv, yv}, backprop), 1e-8);
}

TEST_F(NnOpsTest, SparseSoftmaxCrossEntropyValues) {
  Output logits = ops::Const<float>({1, 2, 3, 0, 0, 0}, TensorShape({2, 3}));
  const float z = std::exp(1.0f) + std::exp(2.0f) + std::exp(3.0f);
  for (DataType label_type : {DT_INT32, DT_INT64}) {
    Output labels = label_type == DT_INT32 ? ops::Const<int32_t>({2, 0}) : ops::Const<int64_t>({2, 0});
    Output loss = ops::SparseSoftmaxCrossEntropyWithLogits(labels, logits);
    EXPECT_EQ(loss.shape().DebugString(), "[2]");
    EXPECT_EQ(loss.op().type(), "SparseSoftmaxCrossEntropyWithLogits");
    ExpectNear(Run(loss), {std::log(z) - 3, std::log(3.0f)});
  }
  EXPECT_EQ(
      g_.GetOperationByName("SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits").type(),
      "SparseSoftmaxCrossEntropyWithLogits");
  // Rank 3 logits: flattened and the loss reshaped to the labels' shape.
  Output logits3 = ops::Const<float>({1, 2, 3, 0, 0, 0, 1, 2, 3, 0, 0, 0}, TensorShape({2, 2, 3}));
  Output labels2 = ops::Const<int64_t>({2, 0, 2, 1}, TensorShape({2, 2}));
  Tensor loss3 = Run(ops::SparseSoftmaxCrossEntropyWithLogits(labels2, logits3));
  EXPECT_EQ(loss3.shape(), TensorShape({2, 2}));
  ExpectNear(loss3, {std::log(z) - 3, std::log(3.0f), std::log(z) - 3, std::log(3.0f)});
}

TEST_F(NnOpsTest, SparseSoftmaxCrossEntropyGradient) {
  Output logits = In(DT_DOUBLE, {4, 5}, "logits");
  Output labels = ops::Const<int32_t>({0, 4, 2, 2});
  EXPECT_LT(ComputeGradientError({logits}, {RandomDoubles({4, 5}, 9, -3, 3)},
                                 ops::SparseSoftmaxCrossEntropyWithLogits(labels, logits)),
            1e-8);
}

TEST_F(NnOpsTest, SparseSoftmaxCrossEntropyRejectsOutOfRangeLabels) {
  Output logits = In(DT_FLOAT, {2, 10}, "logits");
  Output labels = In(DT_INT64, {2}, "labels");
  Output loss = ops::SparseSoftmaxCrossEntropyWithLogits(labels, logits);
  Session sess(g_);
  Tensor lv = Random<float>({2, 10}, 1);
  for (int64_t bad : {10, -1}) {
    ExpectInvalidArgument(
        [&] {
          sess.Run({{logits, lv}, {labels, Tensor::FromVector<int64_t>({1, bad})}}, {loss});
        },
        {StrCat("Received a label value of ", bad, " which is outside the valid range of [0, 10)"),
         "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits"});
  }
  // Rank and batch mismatches are caught while building.
  ExpectInvalidArgument(
      [&] {
        ops::SparseSoftmaxCrossEntropyWithLogits(In(DT_INT64, {2, 1}, "l2"), logits);
      },
      {"Rank mismatch", "SparseSoftmaxCrossEntropyWithLogits"});
  ExpectInvalidArgument([&] { ops::SparseSoftmaxCrossEntropyWithLogits(In(DT_INT64, {3}, "l3"), logits); },
                        {"Dimensions must be equal", "SparseSoftmaxCrossEntropyWithLogits"});
}

TEST_F(NnOpsTest, L2Loss) {
  Tensor v = Run(ops::L2Loss(ops::Const<float>({1, 2, 3, 4}, TensorShape({2, 2}))));
  EXPECT_EQ(v.shape(), TensorShape({}));
  EXPECT_FLOAT_EQ(v.scalar<float>(), 15.0f);
  Output x = In(DT_DOUBLE, {2, 3});
  EXPECT_LT(ComputeGradientError({x}, {RandomDoubles({2, 3}, 10)}, ops::L2Loss(x)), 1e-8);
}

// ---- Bias ----

TEST_F(NnOpsTest, BiasAddValuesAndGradient) {
  Output v = ops::Const<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Output b = ops::Const<float>({10, 20, 30});
  ExpectNear(Run(ops::BiasAdd(v, b)), {11, 22, 33, 14, 25, 36});
  ExpectNear(Run(ops::BiasAddGrad(v)), {5, 7, 9});
  Output x = In(DT_DOUBLE, {2, 2, 3}, "x");
  Output bias = In(DT_DOUBLE, {3}, "bias");
  EXPECT_LT(ComputeGradientError({x, bias}, {RandomDoubles({2, 2, 3}, 11), RandomDoubles({3}, 12)},
                                 ops::BiasAdd(x, bias)),
            1e-8);
  Output g = In(DT_DOUBLE, {4, 3}, "g");
  EXPECT_LT(ComputeGradientError({g}, {RandomDoubles({4, 3}, 13)}, ops::BiasAddGrad(g)), 1e-8);
}

TEST_F(NnOpsTest, BiasAddRejectsMismatchedChannels) {
  ExpectInvalidArgument(
      [&] {
        ops::BiasAdd(In(DT_FLOAT, {2, 3}), ops::Const<float>({1, 2}));
      },
      {"Dimensions must be equal, but are 3 and 2", "'BiasAdd'"});
  ExpectInvalidArgument(
      [&] {
        ops::BiasAdd(In(DT_FLOAT, {3}), ops::Const<float>({1, 2, 3}));
      },
      {"rank 2", "'BiasAdd"});
  // Unknown shapes: the kernel checks when run.
  Output x = In(DT_FLOAT, PartialTensorShape::Unknown(), "unknown");
  Output y = ops::BiasAdd(x, ops::Const<float>({1, 2}), "late_bias");
  Session sess(g_);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{x, Random<float>({2, 3}, 1)}}, {y});
      },
      {"Must provide as many biases as the last dimension", "late_bias"});
}

// ---- Convolution ----

// out[n, oh, ow, co] = sum input[n, oh*s - pad + fr, ow*s - pad + fc, ci] * filter[fr, fc, ci, co].
struct NaiveConv {
  int64_t n, h, w, ci, fh, fw, co, sh, sw, oh, ow, ph, pw;
  NaiveConv(const TensorShape& in, const TensorShape& f, int64_t stride_h, int64_t stride_w, bool same)
      : n(in.dim_size(0)),
        h(in.dim_size(1)),
        w(in.dim_size(2)),
        ci(in.dim_size(3)),
        fh(f.dim_size(0)),
        fw(f.dim_size(1)),
        co(f.dim_size(3)),
        sh(stride_h),
        sw(stride_w) {
    if (same) {
      oh = (h + sh - 1) / sh;
      ow = (w + sw - 1) / sw;
      ph = std::max<int64_t>((oh - 1) * sh + fh - h, 0) / 2;
      pw = std::max<int64_t>((ow - 1) * sw + fw - w, 0) / 2;
    } else {
      oh = (h - fh + sh) / sh;
      ow = (w - fw + sw) / sw;
      ph = pw = 0;
    }
  }
  // Calls fn(input_index, filter_index, output_index) for every multiply-add.
  template <typename Fn>
  void ForEach(const Fn& fn) const {
    for (int64_t b = 0; b < n; ++b)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          for (int64_t r = 0; r < fh; ++r)
            for (int64_t c = 0; c < fw; ++c) {
              const int64_t iy = y * sh - ph + r, ix = x * sw - pw + c;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              for (int64_t i = 0; i < ci; ++i)
                for (int64_t o = 0; o < co; ++o)
                  fn(((b * h + iy) * w + ix) * ci + i, ((r * fw + c) * ci + i) * co + o,
                     ((b * oh + y) * ow + x) * co + o);
            }
  }
};

void ExpectClose(const Tensor& actual, const std::vector<double>& expected, double tolerance) {
  ASSERT_EQ(actual.NumElements(), static_cast<int64_t>(expected.size()));
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(actual.flat<float>()[i]) - expected[i]));
  }
  EXPECT_LT(worst, tolerance);
}

struct ConvCase {
  TensorShape input, filter;
  int64_t stride_h, stride_w;
  std::string padding;
  TensorShape expected_output;
  // Winograd's transforms lose a few bits more than im2col's sums (winograd_conv.h).
  double tolerance_scale = 1;
};

TEST_F(NnOpsTest, Conv2DMatchesNaiveLoopsForwardAndBackward) {
  const std::vector<ConvCase> cases = {
      {{2, 5, 5, 3}, {3, 3, 3, 4}, 1, 1, "SAME", {2, 5, 5, 4}},
      {{2, 5, 5, 3}, {3, 3, 3, 4}, 1, 1, "VALID", {2, 3, 3, 4}},
      {{1, 7, 6, 2}, {2, 3, 2, 3}, 2, 2, "SAME", {1, 4, 3, 3}},
      {{1, 7, 6, 2}, {2, 3, 2, 3}, 2, 1, "VALID", {1, 3, 4, 3}},
      {{3, 4, 4, 5}, {1, 1, 5, 2}, 1, 1, "SAME", {3, 4, 4, 2}},  // pointwise path
      {{1, 4, 4, 2}, {1, 1, 2, 2}, 2, 2, "VALID", {1, 2, 2, 2}},
      // Big enough for several im2col blocks split over threads.
      {{4, 20, 20, 8}, {5, 5, 8, 16}, 1, 1, "SAME", {4, 20, 20, 16}},
      {{3, 31, 29, 6}, {4, 4, 6, 7}, 3, 2, "SAME", {3, 11, 15, 7}},
      // The CNN benchmark's second layer, smaller: 32 channels, patches deeper than one
      // GEMM depth block (800 > 512) and a one-channel first layer.
      {{2, 14, 14, 32}, {5, 5, 32, 9}, 1, 1, "SAME", {2, 14, 14, 9}},
      {{3, 28, 28, 1}, {5, 5, 1, 8}, 1, 1, "SAME", {3, 28, 28, 8}},
      // One channel, unit strides, output depth a multiple of 16: the direct kernel.
      {{2, 28, 28, 1}, {5, 5, 1, 32}, 1, 1, "SAME", {2, 28, 28, 32}},
      {{2, 9, 11, 1}, {3, 4, 1, 16}, 1, 1, "VALID", {2, 7, 8, 16}},
      {{3, 6, 5, 1}, {4, 5, 1, 48}, 1, 1, "SAME", {3, 6, 5, 48}},
      // 5x5 and 3x3, stride 1, 16+ channels both sides: Winograd (winograd_conv.h), odd sizes too.
      {{2, 14, 14, 32}, {5, 5, 32, 64}, 1, 1, "SAME", {2, 14, 14, 64}, 5},
      {{3, 9, 11, 16}, {5, 5, 16, 24}, 1, 1, "VALID", {3, 5, 7, 24}, 5},
      {{2, 13, 10, 24}, {3, 3, 24, 16}, 1, 1, "SAME", {2, 13, 10, 16}, 5},
      {{1, 7, 9, 16}, {3, 3, 16, 40}, 1, 1, "VALID", {1, 5, 7, 40}, 5},
  };
  uint64_t seed = 100;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(StrCat(c.input.DebugString(), " * ", c.filter.DebugString(), " ", c.padding));
    Graph g;
    auto as_default = g.AsDefault();
    Tensor in = Random<float>(c.input, ++seed);
    Tensor f = Random<float>(c.filter, ++seed);
    NaiveConv naive(c.input, c.filter, c.stride_h, c.stride_w, c.padding == "SAME");
    Tensor dy = Random<float>(c.expected_output, ++seed);
    Output x = ops::Placeholder(DT_FLOAT, c.input, "x");
    Output w = ops::Placeholder(DT_FLOAT, c.filter, "w");
    Output y = ops::Conv2D(x, w, {1, c.stride_h, c.stride_w, 1}, c.padding);
    EXPECT_EQ(y.shape().DebugString(), c.expected_output.DebugString());
    Output shape_in = ops::Const(Tensor::FromVector<int32_t>(
        std::vector<int32_t>(c.input.dim_sizes().begin(), c.input.dim_sizes().end())));
    Output shape_f = ops::Const(Tensor::FromVector<int32_t>(
        std::vector<int32_t>(c.filter.dim_sizes().begin(), c.filter.dim_sizes().end())));
    Output dyo = ops::Placeholder(DT_FLOAT, c.expected_output, "dy");
    Output dx = ops::Conv2DBackpropInput(shape_in, w, dyo, {1, c.stride_h, c.stride_w, 1}, c.padding);
    Output dw = ops::Conv2DBackpropFilter(x, shape_f, dyo, {1, c.stride_h, c.stride_w, 1}, c.padding);
    EXPECT_EQ(dx.shape().DebugString(), c.input.DebugString());
    EXPECT_EQ(dw.shape().DebugString(), c.filter.DebugString());
    Session sess(g);
    auto out = sess.Run({{x, in}, {w, f}, {dyo, dy}}, {y, dx, dw});
    ASSERT_EQ(out[0].shape(), c.expected_output);
    std::vector<double> want_y(c.expected_output.num_elements(), 0.0);
    std::vector<double> want_dx(c.input.num_elements(), 0.0);
    std::vector<double> want_dw(c.filter.num_elements(), 0.0);
    naive.ForEach([&](int64_t i, int64_t k, int64_t o) {
      want_y[o] += double(in.flat<float>()[i]) * f.flat<float>()[k];
      want_dx[i] += double(dy.flat<float>()[o]) * f.flat<float>()[k];
      want_dw[k] += double(dy.flat<float>()[o]) * in.flat<float>()[i];
    });
    ExpectClose(out[0], want_y, 1e-4 * c.tolerance_scale);
    ExpectClose(out[1], want_dx, 1e-4 * c.tolerance_scale);
    ExpectClose(out[2], want_dw, 1e-3 * c.tolerance_scale);
  }
}

TEST_F(NnOpsTest, Conv2DGradients) {
  for (const char* padding : {"SAME", "VALID"}) {
    for (int64_t stride : {1, 2}) {
      SCOPED_TRACE(StrCat(padding, " stride ", stride));
      Graph g;
      auto as_default = g.AsDefault();
      Output x = ops::Placeholder(DT_DOUBLE, {2, 5, 4, 2}, "x");
      Output w = ops::Placeholder(DT_DOUBLE, {3, 2, 2, 3}, "w");
      Output y = ops::Conv2D(x, w, {1, stride, stride, 1}, padding);
      EXPECT_LT(
          ComputeGradientError({x, w}, {RandomDoubles({2, 5, 4, 2}, 20), RandomDoubles({3, 2, 2, 3}, 21)}, y),
          1e-8);
    }
  }
}

TEST_F(NnOpsTest, Conv2DBackpropGradients) {
  // Second order, and the transposed convolution: both backprop ops are bilinear.
  Output w = In(DT_DOUBLE, {3, 3, 2, 3}, "w");
  Output x = In(DT_DOUBLE, {1, 5, 5, 2}, "x");
  Output dy = In(DT_DOUBLE, {1, 3, 3, 3}, "dy");
  Output dx = ops::Conv2DBackpropInput(ops::Const<int32_t>({1, 5, 5, 2}), w, dy, {1, 2, 2, 1}, "SAME");
  Output dw = ops::Conv2DBackpropFilter(x, ops::Const<int32_t>({3, 3, 2, 3}), dy, {1, 2, 2, 1}, "SAME");
  Tensor wv = RandomDoubles({3, 3, 2, 3}, 22), xv = RandomDoubles({1, 5, 5, 2}, 23);
  Tensor dyv = RandomDoubles({1, 3, 3, 3}, 24);
  EXPECT_LT(ComputeGradientError({w, dy}, {wv, dyv}, dx), 1e-8);
  EXPECT_LT(ComputeGradientError({x, dy}, {xv, dyv}, dw), 1e-8);
}

TEST_F(NnOpsTest, Conv2DRejectsBadInputWhileBuilding) {
  Output x = In(DT_FLOAT, {1, 5, 5, 3});
  Output w = In(DT_FLOAT, {3, 3, 3, 8}, "w");
  ExpectInvalidArgument(
      [&] {
        ops::Conv2D(In(DT_FLOAT, {5, 5, 3}, "x3"), w, {1, 1, 1, 1}, "SAME");
      },
      {"Shape must be rank 4 but is rank 3", "'Conv2D'"});
  ExpectInvalidArgument(
      [&] {
        ops::Conv2D(x, In(DT_FLOAT, {3, 3, 2, 8}, "w2"), {1, 1, 1, 1}, "SAME");
      },
      {"Depth of input (3)", "input depth of filter (2)", "'Conv2D"});
  ExpectInvalidArgument(
      [&] {
        ops::Conv2D(x, w, {1, 1, 1, 1}, "FULL");
      },
      {"Value for attr 'padding' of \"FULL\"", "'Conv2D"});
  ExpectInvalidArgument(
      [&] {
        ops::Conv2D(x, w, {1, 1, 1}, "SAME");
      },
      {"strides field must specify 4 dimensions", "'Conv2D"});
  ExpectInvalidArgument(
      [&] {
        ops::Conv2D(x, w, {2, 1, 1, 1}, "SAME");
      },
      {"batch and depth dimensions", "'Conv2D"});
  ExpectInvalidArgument(
      [&] {
        ops::Conv2D(x, In(DT_FLOAT, {7, 7, 3, 8}, "w7"), {1, 1, 1, 1}, "VALID");
      },
      {"Computed output size would be negative", "'Conv2D"});
  ExpectInvalidArgument(
      [&] {
        ops::MaxPool(x, {1, 2, 2}, {1, 2, 2, 1}, "SAME");
      },
      {"ksize field must specify 4 dimensions", "'MaxPool'"});
  ExpectInvalidArgument(
      [&] {
        ops::AvgPool(x, {1, 2, 2, 1}, {1, 2, 2, 1}, "same");
      },
      {"padding", "'AvgPool'"});
  ExpectInvalidArgument(
      [&] {
        ops::MaxPool(In(DT_FLOAT, {5, 5}, "x2"), {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
      },
      {"rank 4", "'MaxPool"});
}

TEST_F(NnOpsTest, Conv2DRejectsBadInputWhenRun) {
  Output x = In(DT_FLOAT, PartialTensorShape::Unknown(), "x");
  Output w = In(DT_FLOAT, PartialTensorShape::Unknown(), "w");
  Output y = ops::Conv2D(x, w, {1, 1, 1, 1}, "VALID", "late_conv");
  Session sess(g_);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{x, Random<float>({1, 4, 4, 3}, 1)}, {w, Random<float>({2, 2, 2, 1}, 2)}}, {y});
      },
      {"same depth: 3 vs 2", "late_conv"});
  ExpectInvalidArgument(
      [&] {
        sess.Run({{x, Random<float>({4, 4, 3}, 1)}, {w, Random<float>({2, 2, 3, 1}, 2)}}, {y});
      },
      {"input must be 4-dimensional", "late_conv"});
  Output p = ops::MaxPool(x, {1, 3, 3, 1}, {1, 1, 1, 1}, "VALID", "late_pool");
  ExpectInvalidArgument(
      [&] {
        sess.Run({{x, Random<float>({1, 1, 1, 1}, 1)}}, {p});
      },
      {"Computed output size would be negative", "late_pool"});
}

// ---- Pooling ----

TEST_F(NnOpsTest, PoolingValues) {
  // One 3x3 single-channel image 1..9.
  Output x = ops::Const<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, TensorShape({1, 3, 3, 1}));
  Output max_valid = ops::MaxPool(x, {1, 2, 2, 1}, {1, 1, 1, 1}, "VALID");
  Output max_same = ops::MaxPool(x, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
  Output avg_same = ops::AvgPool(x, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
  Output avg_same3 = ops::AvgPool(x, {1, 3, 3, 1}, {1, 1, 1, 1}, "SAME");
  EXPECT_EQ(max_valid.shape().DebugString(), "[1,2,2,1]");
  EXPECT_EQ(max_same.shape().DebugString(), "[1,2,2,1]");
  Session sess(g_);
  auto out = sess.Run({}, {max_valid, max_same, avg_same, avg_same3});
  ExpectNear(out[0], {5, 6, 8, 9});
  ExpectNear(out[1], {5, 6, 8, 9});
  ExpectNear(out[2], {3, 4.5f, 7.5f, 9});  // padding not counted in the average
  ExpectNear(out[3], {3, 3.5f, 4, 4.5f, 5, 5.5f, 6, 6.5f, 7});
}

TEST_F(NnOpsTest, PoolingGradients) {
  for (const char* padding : {"SAME", "VALID"}) {
    SCOPED_TRACE(padding);
    Graph g;
    auto as_default = g.AsDefault();
    Output x = ops::Placeholder(DT_DOUBLE, {2, 5, 4, 3}, "x");
    Tensor v = DistinctDoubles({2, 5, 4, 3}, 30);
    EXPECT_LT(ComputeGradientError({x}, {v}, ops::MaxPool(x, {1, 2, 2, 1}, {1, 2, 2, 1}, padding)), 1e-8);
    EXPECT_LT(ComputeGradientError({x}, {v}, ops::MaxPool(x, {1, 3, 2, 1}, {1, 1, 2, 1}, padding)), 1e-8);
    EXPECT_LT(ComputeGradientError({x}, {v}, ops::AvgPool(x, {1, 2, 2, 1}, {1, 2, 2, 1}, padding)), 1e-8);
    EXPECT_LT(ComputeGradientError({x}, {v}, ops::AvgPool(x, {1, 3, 3, 1}, {1, 1, 2, 1}, padding)), 1e-8);
    // AvgPoolGrad is linear in its gradient; its gradient is AvgPool.
    Output g_in = ops::Placeholder(DT_DOUBLE, {2, 3, 2, 3}, "g");
    Output back =
        ops::AvgPoolGrad(ops::Const<int32_t>({2, 6, 4, 3}), g_in, {1, 2, 2, 1}, {1, 2, 2, 1}, padding);
    EXPECT_LT(ComputeGradientError({g_in}, {RandomDoubles({2, 3, 2, 3}, 31)}, back), 1e-8);
  }
}

// MaxPoolGrad scans channels a SIMD packet at a time: with 19 channels (packets and a tail),
// windows that tile the input and windows that overlap or leave pixels out, and ties, it
// matches a naive loop routing each gradient to the first maximum of its window.
TEST_F(NnOpsTest, MaxPoolGradMatchesNaiveLoopAcrossChannelPackets) {
  const int64_t batch = 2, rows = 7, cols = 6, depth = 19;
  Tensor xv = Random<float>({batch, rows, cols, depth}, 60, -1, 1);
  // Rounded to a few values so that windows hold ties.
  for (float& v : xv.flat<float>()) v = std::round(v * 2) / 2;
  struct Case {
    int64_t k, s;
    const char* padding;
  };
  for (const Case& c : {Case{2, 2, "SAME"}, Case{2, 2, "VALID"}, Case{3, 2, "SAME"}, Case{3, 1, "VALID"}}) {
    SCOPED_TRACE(std::to_string(c.k) + "x" + std::to_string(c.k) + " stride " + std::to_string(c.s) + " " +
                 c.padding);
    Graph g;
    auto as_default = g.AsDefault();
    Output x = ops::Const(xv);
    Output y = ops::MaxPool(x, {1, c.k, c.k, 1}, {1, c.s, c.s, 1}, c.padding);
    const TensorShape out_shape = y.shape().AsTensorShape();
    Tensor gv = Random<float>(out_shape, 61, -1, 1);
    Output dx = ops::MaxPoolGrad(x, y, ops::Const(gv), {1, c.k, c.k, 1}, {1, c.s, c.s, 1}, c.padding);
    Session sess(g);
    const Tensor got = sess.Run({}, {dx})[0];
    // The naive loop, with TF's padding: SAME pads (total) before = total / 2.
    const int64_t out_rows = out_shape.dim_size(1), out_cols = out_shape.dim_size(2);
    const bool same = std::string(c.padding) == "SAME";
    const int64_t pad_rows = same ? std::max<int64_t>((out_rows - 1) * c.s + c.k - rows, 0) / 2 : 0;
    const int64_t pad_cols = same ? std::max<int64_t>((out_cols - 1) * c.s + c.k - cols, 0) / 2 : 0;
    std::vector<float> expected(xv.NumElements(), 0.0f);
    auto at = [&](int64_t n, int64_t r, int64_t col, int64_t ch) {
      return ((n * rows + r) * cols + col) * depth + ch;
    };
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t oh = 0; oh < out_rows; ++oh) {
        for (int64_t ow = 0; ow < out_cols; ++ow) {
          for (int64_t ch = 0; ch < depth; ++ch) {
            int64_t best = -1;
            for (int64_t r = oh * c.s - pad_rows; r < oh * c.s - pad_rows + c.k; ++r) {
              for (int64_t col = ow * c.s - pad_cols; col < ow * c.s - pad_cols + c.k; ++col) {
                if (r < 0 || r >= rows || col < 0 || col >= cols) continue;
                if (best < 0 || xv.flat<float>()[at(n, r, col, ch)] > xv.flat<float>()[best])
                  best = at(n, r, col, ch);
              }
            }
            expected[best] += gv.flat<float>()[((n * out_rows + oh) * out_cols + ow) * depth + ch];
          }
        }
      }
    }
    ExpectNear(got, expected);
  }
}

TEST_F(NnOpsTest, MaxPoolGradRoutesToFirstMaximum) {
  // Ties: the first maximum in the window (row-major) gets the gradient.
  Output x = ops::Const<float>({1, 1, 1, 1}, TensorShape({1, 2, 2, 1}));
  Output y = ops::MaxPool(x, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
  Output g = ops::MaxPoolGrad(x, y, ops::Const<float>({5}, TensorShape({1, 1, 1, 1})), {1, 2, 2, 1},
                              {1, 2, 2, 1}, "VALID");
  ExpectNear(Run(g), {5, 0, 0, 0});
}

// ---- Fused batch norm ----

TEST_F(NnOpsTest, FusedBatchNormTrainingAndInference) {
  Tensor xv = Random<float>({2, 3, 2, 4}, 40, -3, 5);
  Output x = In(DT_FLOAT, {2, 3, 2, 4});
  Output scale = ops::Const<float>({1, 2, 0.5f, 1});
  Output offset = ops::Const<float>({0, 1, -1, 3});
  auto bn = ops::FusedBatchNorm(x, scale, offset);
  EXPECT_EQ(bn.op.type(), "FusedBatchNormV3");
  EXPECT_EQ(bn.y.shape().DebugString(), "[2,3,2,4]");
  EXPECT_EQ(bn.batch_mean.shape().DebugString(), "[4]");
  Output mean = ops::Const<float>({0.5f, -1, 2, 0});
  Output var = ops::Const<float>({1, 4, 0.25f, 2});
  auto inf = ops::FusedBatchNorm(x, scale, offset, mean, var, {.epsilon = 0.01f, .is_training = false});
  Session sess(g_);
  auto out = sess.Run({{x, xv}}, {bn.y, bn.batch_mean, bn.batch_variance, inf.y});
  const float s[4] = {1, 2, 0.5f, 1}, o[4] = {0, 1, -1, 3};
  const float m_in[4] = {0.5f, -1, 2, 0}, v_in[4] = {1, 4, 0.25f, 2};
  const int64_t rows = 12;
  for (int c = 0; c < 4; ++c) {
    double sum = 0, sq = 0;
    for (int64_t r = 0; r < rows; ++r) sum += xv.flat<float>()[r * 4 + c];
    const double m = sum / rows;
    for (int64_t r = 0; r < rows; ++r) sq += std::pow(xv.flat<float>()[r * 4 + c] - m, 2);
    const double v = sq / rows;
    EXPECT_NEAR(out[1].flat<float>()[c], m, 1e-5);
    EXPECT_NEAR(out[2].flat<float>()[c], sq / (rows - 1), 1e-4);  // unbiased
    for (int64_t r = 0; r < rows; ++r) {
      const double xi = xv.flat<float>()[r * 4 + c];
      EXPECT_NEAR(out[0].flat<float>()[r * 4 + c], s[c] * (xi - m) / std::sqrt(v + 0.001) + o[c], 1e-4);
      EXPECT_NEAR(out[3].flat<float>()[r * 4 + c], s[c] * (xi - m_in[c]) / std::sqrt(v_in[c] + 0.01) + o[c],
                  1e-4);
    }
  }
}

// Keras (TF >= 2.1) fuses the moving averages into the op: with exponential_avg_factor f the
// training outputs are (1 - f) * mean_in + f * batch statistic.
TEST_F(NnOpsTest, FusedBatchNormExponentialAverageFactor) {
  Output x = ops::Const<float>({1, 10, 3, 20, 5, 30, 7, 40}, TensorShape({1, 2, 2, 2}));
  Output scale = ops::Const<float>({1, 1});
  Output offset = ops::Const<float>({0, 0});
  Output mean_in = ops::Const<float>({2, -4});
  Output var_in = ops::Const<float>({1, 3});
  auto with_factor = [&](float f) {
    return NodeBuilder("FusedBatchNormV3", "bn")
        .Input(x)
        .Input(scale)
        .Input(offset)
        .Input(mean_in)
        .Input(var_in)
        .Attr("exponential_avg_factor", f)
        .Finalize();
  };
  Operation plain = with_factor(1.0f);
  Operation blended = with_factor(0.25f);
  Session sess(g_);
  const auto out = sess.Run({}, {plain.output(1), plain.output(2), blended.output(0), plain.output(0),
                                 blended.output(1), blended.output(2)});
  // Channel 0: 1, 3, 5, 7 (mean 4, unbiased variance 20/3); channel 1: 10..40 (25, 500/3).
  EXPECT_EQ(testing::Values<float>(out[0]), (std::vector<float>{4, 25}));
  EXPECT_NEAR(out[1].flat<float>()[0], 20.0 / 3, 1e-5);
  EXPECT_EQ(testing::Values<float>(out[2]),
            testing::Values<float>(out[3]));  // y uses the batch statistics either way
  EXPECT_NEAR(out[4].flat<float>()[0], 0.75 * 2 + 0.25 * 4, 1e-6);
  EXPECT_NEAR(out[4].flat<float>()[1], 0.75 * -4 + 0.25 * 25, 1e-6);
  EXPECT_NEAR(out[5].flat<float>()[0], 0.75 * 1 + 0.25 * 20.0 / 3, 1e-5);
  EXPECT_NEAR(out[5].flat<float>()[1], 0.75 * 3 + 0.25 * 500.0 / 3, 1e-4);
}

TEST_F(NnOpsTest, FusedBatchNormGradients) {
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "inference");
    Graph g;
    auto as_default = g.AsDefault();
    Output x = ops::Placeholder(DT_DOUBLE, {2, 2, 3, 3}, "x");
    Output scale = ops::Placeholder(DT_DOUBLE, {3}, "scale");
    Output offset = ops::Placeholder(DT_DOUBLE, {3}, "offset");
    Output mean = ops::Const<double>({0.1, -0.2, 0.3});
    Output var = ops::Const<double>({1.0, 0.5, 2.0});
    auto bn = training ? ops::FusedBatchNorm(x, scale, offset)
                       : ops::FusedBatchNorm(x, scale, offset, mean, var, {.is_training = false});
    EXPECT_LT(
        ComputeGradientError(
            {x, scale, offset},
            {RandomDoubles({2, 2, 3, 3}, 41), RandomDoubles({3}, 42, 0.5, 2), RandomDoubles({3}, 43)}, bn.y),
        1e-7);
  }
}

TEST_F(NnOpsTest, FusedBatchNormRejectsBadInput) {
  Output x = In(DT_FLOAT, {2, 3, 3, 4});
  ExpectInvalidArgument(
      [&] {
        ops::FusedBatchNorm(x, ops::Const<float>({1, 1, 1}), ops::Const<float>({0, 0, 0}));
      },
      {"Dimensions must be equal", "'FusedBatchNormV3'"});
  ExpectInvalidArgument(
      [&] {
        ops::FusedBatchNorm(In(DT_FLOAT, {2, 4}, "x2"), ops::Const<float>({1}), ops::Const<float>({0}));
      },
      {"rank 4", "'FusedBatchNormV3"});
}

// A small training step through conv, pool, batch norm, bias, relu and the sparse loss: the
// gradients of every op chain together.
TEST_F(NnOpsTest, SmallCnnEndToEndGradient) {
  Output x = In(DT_DOUBLE, {2, 6, 6, 1}, "images");
  Output w = In(DT_DOUBLE, {3, 3, 1, 2}, "w");
  Output b = In(DT_DOUBLE, {2}, "b");
  Output h = ops::Relu(ops::BiasAdd(ops::Conv2D(x, w, {1, 1, 1, 1}, "SAME"), b));
  Output p = ops::MaxPool(h, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
  Output logits = ops::Reshape(p, std::vector<int64_t>{2, 18});
  Output loss =
      ops::ReduceMean(ops::SparseSoftmaxCrossEntropyWithLogits(ops::Const<int64_t>({3, 7}), logits));
  FeedList feeds = {{x, DistinctDoubles({2, 6, 6, 1}, 50)}};
  EXPECT_LT(ComputeGradientError({w, b}, {RandomDoubles({3, 3, 1, 2}, 51), RandomDoubles({2}, 52, 0.3, 0.6)},
                                 loss, {.extra_feeds = feeds}),
            1e-7);
}

}  // namespace
}  // namespace flowtrain
