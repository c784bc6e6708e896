// Array ops: StopGradient, Size, Rank, ExpandDims, ConcatV2, Split/SplitV, Slice, StridedSlice,
// Unpack, Transpose, Tile, OneHot, Select/SelectV2, UnsortedSegmentSum and the gradients of
// these and of Pack and GatherV2 — kernel values, build-time shapes, errors at build and run
// time, and float64 finite-difference checks.
#include <limits>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/io_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/runtime/gradient_checker.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;
using testing::Values;

// 0, 1, ..., n-1 as floats in `shape`.
Output Iota(const TensorShape& shape) {
  std::vector<float> v(shape.num_elements());
  std::iota(v.begin(), v.end(), 0.0f);
  return ops::Const<float>(v, shape);
}

class ArrayOpsTest : public ::testing::Test {
 protected:
  Graph g_;
  ScopeGuard as_default_ = g_.AsDefault();
  Output In(const TensorShape& shape, std::string_view name = "x") {
    return ops::Placeholder(DT_DOUBLE, shape, name);
  }
  Tensor Run(Output y, const FeedList& feeds = {}) {
    Session sess(g_);
    return sess.Run(feeds, {y})[0];
  }
};

// ---- BroadcastTo ----

// One value broadcast everywhere (how a mean's gradient spreads) fills by doubling copies:
// every element set, for a number of elements that is not a power of two, numbers and strings.
TEST_F(ArrayOpsTest, BroadcastToOfOneValue) {
  Session sess(g_);
  const Tensor f = ops::BroadcastTo(ops::Const(7.5f), ops::Const<int32_t>({3, 7, 5})).Eval(sess);
  ASSERT_EQ(f.shape(), TensorShape({3, 7, 5}));
  for (float v : f.flat<float>()) ASSERT_EQ(v, 7.5f);
  const Tensor i =
      ops::BroadcastTo(ops::Const<int64_t>({-4}, TensorShape({1, 1})), ops::Const<int32_t>({5, 1}))
          .Eval(sess);
  ASSERT_EQ(i.shape(), TensorShape({5, 1}));
  for (int64_t v : i.flat<int64_t>()) ASSERT_EQ(v, -4);
  const Tensor s = ops::BroadcastTo(ops::Const(std::string("ab")), ops::Const<int32_t>({2, 3})).Eval(sess);
  for (const std::string& v : s.flat<std::string>()) ASSERT_EQ(v, "ab");
}

// ---- StopGradient, Size, Rank, ExpandDims ----

// Range, ShapeN and ConcatOffset: the index helpers TF's own graphs (its gradients of Mean,
// Conv2D and ConcatV2, dynamic_rnn, embedding_lookup) are full of.
TEST_F(ArrayOpsTest, RangeShapeNConcatOffset) {
  Output r = ops::Range(ops::Const(int32_t{3}), ops::Const(int32_t{12}), ops::Const(int32_t{4}));
  EXPECT_EQ(r.shape().DebugString(), "[3]");  // known at build time from the constants
  Output down = ops::Range(ops::Const(int64_t{5}), ops::Const(int64_t{0}), ops::Const(int64_t{-2}));
  Output f = ops::Range(ops::Const(0.5f), ops::Const(2.0f), ops::Const(0.5f));
  Output n = ops::Placeholder(DT_INT32, {}, "n");
  Output dynamic = ops::Range(ops::Const(int32_t{0}), n, ops::Const(int32_t{1}));
  EXPECT_EQ(dynamic.shape().DebugString(), "[?]");
  Session sess(g_);
  EXPECT_EQ(Values<int32_t>(r.Eval(sess)), (std::vector<int32_t>{3, 7, 11}));
  EXPECT_EQ(Values<int64_t>(down.Eval(sess)), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(Values<float>(f.Eval(sess)), (std::vector<float>{0.5f, 1.0f, 1.5f}));
  EXPECT_EQ(sess.Run({{n, Tensor::Scalar<int32_t>(0)}}, {dynamic})[0].NumElements(), 0);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{n, Tensor::Scalar<int32_t>(-1)}}, {dynamic});
      },
      {"Requires start <= limit when delta > 0"});
  ExpectInvalidArgument([&] { ops::Range(ops::Const(1), ops::Const(2), ops::Const(0)); },
                        {"Requires delta != 0"});

  const std::vector<Output> shapes = ops::ShapeN({Iota({2, 3}), Iota({4}), ops::Const(1.0f)});
  ASSERT_EQ(shapes.size(), 3u);
  const std::vector<Tensor> sv = sess.Run({}, shapes);
  EXPECT_EQ(Values<int32_t>(sv[0]), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(Values<int32_t>(sv[1]), (std::vector<int32_t>{4}));
  EXPECT_EQ(sv[2].NumElements(), 0);
  const std::vector<Output> s64 = ops::ShapeN({Iota({5, 1})}, DT_INT64);
  EXPECT_EQ(Values<int64_t>(s64[0].Eval(sess)), (std::vector<int64_t>{5, 1}));

  const std::vector<Output> offsets = ops::ConcatOffset(
      ops::Const(int32_t{1}),
      {ops::Const<int32_t>({2, 3, 5}), ops::Const<int32_t>({2, 4, 5}), ops::Const<int32_t>({2, 1, 5})});
  const std::vector<Tensor> ov = sess.Run({}, offsets);
  EXPECT_EQ(Values<int32_t>(ov[0]), (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(Values<int32_t>(ov[1]), (std::vector<int32_t>{0, 3, 0}));
  EXPECT_EQ(Values<int32_t>(ov[2]), (std::vector<int32_t>{0, 7, 0}));
  const std::vector<Output> negative_axis =
      ops::ConcatOffset(ops::Const(int32_t{-1}), {ops::Const<int32_t>({2, 3}), ops::Const<int32_t>({2, 4})});
  EXPECT_EQ(Values<int32_t>(negative_axis[1].Eval(sess)), (std::vector<int32_t>{0, 3}));
  const std::vector<Output> mismatch =
      ops::ConcatOffset(ops::Const(int32_t{0}), {ops::Const<int32_t>({2, 3}), ops::Const<int32_t>({2, 4})});
  ExpectInvalidArgument([&] { mismatch[1].Eval(sess); }, {"mismatch"});
}

TEST_F(ArrayOpsTest, UniqueAndDynamicStitch) {
  auto [y, idx] = ops::Unique(ops::Const<int32_t>({4, 1, 4, 7, 1, 1}));
  auto [sy, sidx] = ops::Unique(ops::Const<std::string>({"b", "a", "b"}), DT_INT64);
  Session sess(g_);
  std::vector<Tensor> u = sess.Run({}, {y, idx, sy, sidx});
  EXPECT_EQ(Values<int32_t>(u[0]), (std::vector<int32_t>{4, 1, 7}));
  EXPECT_EQ(Values<int32_t>(u[1]), (std::vector<int32_t>{0, 1, 0, 2, 1, 1}));
  EXPECT_EQ(Values<std::string>(u[2]), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(Values<int64_t>(u[3]), (std::vector<int64_t>{0, 1, 0}));

  // As TF's reduced_shape: stitch Shape(x) with 1s at the reduced axes.
  Output merged = ops::DynamicStitch({ops::Const<int32_t>({0, 1, 2}), ops::Const<int32_t>({1})},
                                     {ops::Const<int32_t>({2, 3, 4}), ops::Const<int32_t>({1})});
  EXPECT_EQ(Values<int32_t>(merged.Eval(sess)), (std::vector<int32_t>{2, 1, 4}));
  Output rows =
      ops::DynamicStitch({ops::Const<int32_t>({{2}, {0}}, TensorShape({2, 1})), ops::Const<int32_t>({3})},
                         {Iota({2, 1, 2}), ops::Const<float>({9, 9}, TensorShape({1, 2}))});
  const Tensor r = rows.Eval(sess);
  EXPECT_EQ(r.shape().DebugString(), "[4,2]");
  EXPECT_EQ(Values<float>(r), (std::vector<float>{2, 3, 0, 0, 0, 1, 9, 9}));
  Output bad = ops::DynamicStitch({ops::Const<int32_t>({0, 1})}, {ops::Const<float>({1, 2, 3})});
  ExpectInvalidArgument([&] { bad.Eval(sess); }, {"does not start with"});

  Output a = In({3, 2}, "a");
  Output b = In({2, 2}, "b");
  Output stitched = ops::DynamicStitch({ops::Const<int32_t>({4, 0, 2}), ops::Const<int32_t>({1, 3})}, {a, b});
  EXPECT_LT(ComputeGradientError({a, b}, {RandomDoubles({3, 2}, 31), RandomDoubles({2, 2}, 32)},
                                 stitched * stitched),
            1e-8);
}

TEST_F(ArrayOpsTest, StaticRegexFullMatchMatchesWholeStrings) {
  Output in = ops::Const<std::string>({"s3://bucket/x", "/tmp/s3://", "s3:/", ""});
  Session sess(g_);
  EXPECT_EQ(Values<bool>(ops::StaticRegexFullMatch(in, "^s3://.*").Eval(sess)),
            (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(Values<bool>(ops::StaticRegexFullMatch(in, "s3:/").Eval(sess)),
            (std::vector<bool>{false, false, true, false}));
  Output bad = ops::StaticRegexFullMatch(in, "(unclosed");
  ExpectInvalidArgument([&] { bad.Eval(sess); }, {"invalid pattern"});
}

TEST_F(ArrayOpsTest, StaticRegexFullMatchIsLinearInItsInputAsRe2) {
  // A backtracking matcher (std::regex) overflows its stack on the first and takes
  // exponential time on the second; RE2 answers both in one pass. (?i) is RE2 syntax.
  Output long_ab = ops::Const<std::string>({std::string(1 << 20, 'a') + "b", std::string(40, 'a')});
  Session sess(g_);
  EXPECT_EQ(Values<bool>(ops::StaticRegexFullMatch(long_ab, "(a|b)*").Eval(sess)),
            (std::vector<bool>{true, true}));
  EXPECT_EQ(Values<bool>(ops::StaticRegexFullMatch(long_ab, "(a*)*c").Eval(sess)),
            (std::vector<bool>{false, false}));
  Output upper = ops::Const<std::string>({"S3://X"});
  EXPECT_EQ(Values<bool>(ops::StaticRegexFullMatch(upper, "(?i)s3://.*").Eval(sess)),
            (std::vector<bool>{true}));
}

TEST_F(ArrayOpsTest, DynamicPartitionGradientGoesBackToEachElement) {
  // Partition 3 receives nothing and partition 2 reaches no loss: their elements get zeros.
  Output x = In({6, 2}, "x");
  std::vector<Output> parts = ops::DynamicPartition(x, ops::Const<int32_t>({1, 0, 2, 1, 0, 1}), 4);
  Output loss = ops::ReduceSum(parts[0] * parts[0]) + ops::ReduceSum(parts[1]) * ops::Const(3.0) +
                ops::ReduceSum(parts[3]);
  EXPECT_LT(ComputeGradientError({x}, {RandomDoubles({6, 2}, 41)}, loss), 1e-8);
  const std::vector<Output> dx = ops::Gradients({loss}, {x});
  const Tensor xv = RandomDoubles({6, 2}, 42);
  const std::vector<double> g = Values<double>(Run(dx[0], {{x, xv}}));
  const std::vector<double> v = Values<double>(xv);
  for (int col = 0; col < 2; ++col) {
    EXPECT_DOUBLE_EQ(g[1 * 2 + col], 2 * v[1 * 2 + col]);  // partition 0
    EXPECT_DOUBLE_EQ(g[0 * 2 + col], 3.0);                 // partition 1
    EXPECT_DOUBLE_EQ(g[2 * 2 + col], 0.0);                 // partition 2
  }
  // Partitions shaped like the data's leading dimensions.
  Output y = In({2, 3}, "y");
  std::vector<Output> cells =
      ops::DynamicPartition(y, ops::Const<int32_t>({0, 1, 0, 1, 1, 0}, TensorShape({2, 3})), 2);
  EXPECT_LT(ComputeGradientError({y}, {RandomDoubles({2, 3}, 43)}, cells[0] * cells[0]), 1e-8);
}

TEST_F(ArrayOpsTest, StopGradientSizeRankExpandDims) {
  Output x = In({2, 3});
  Output y = x * ops::StopGradient(x);
  std::vector<Output> g = ops::Gradients({y}, {x});
  const Tensor xv = RandomDoubles({2, 3});
  const Tensor gv = Run(g[0], {{x, xv}});
  EXPECT_EQ(Values<double>(gv), Values<double>(xv));  // d(x * c)/dx = c
  Session sess(g_);
  EXPECT_EQ(ops::Size(x).Eval(sess, FeedList{{x, xv}}).scalar<int32_t>(), 6);
  EXPECT_EQ(ops::Size(x, DT_INT64).Eval(sess, FeedList{{x, xv}}).scalar<int64_t>(), 6);
  EXPECT_EQ(ops::Rank(x).Eval(sess, FeedList{{x, xv}}).scalar<int32_t>(), 2);
  EXPECT_EQ(ops::Size(x).shape().DebugString(), "[]");
  Output e0 = ops::ExpandDims(x, 0);
  Output e_last = ops::ExpandDims(x, -1);
  EXPECT_EQ(e0.shape().DebugString(), "[1,2,3]");
  EXPECT_EQ(e_last.shape().DebugString(), "[2,3,1]");
  EXPECT_EQ(e_last.Eval(sess, FeedList{{x, xv}}).shape(), TensorShape({2, 3, 1}));
  ExpectInvalidArgument([&] { ops::ExpandDims(x, 4); },
                        "Tried to expand dim index 4 for tensor with 2 dimensions.");
  Output axis = ops::Placeholder(DT_INT32, PartialTensorShape({}), "axis");
  Output dynamic = ops::ExpandDims(x, axis);
  EXPECT_EQ(dynamic.shape().DebugString(), "[?,?,?]");
  ExpectInvalidArgument(
      [&] {
        sess.Run({{x, xv}, {axis, Tensor::Scalar<int32_t>(-4)}}, {dynamic});
      },
      "Tried to expand dim index -4 for tensor with 2 dimensions.");
  EXPECT_LT(ComputeGradientError({x}, {xv}, ops::ExpandDims(x, 1) * ops::Const(2.0)), 1e-8);
}

// ---- Concat, Split, SplitV ----

TEST_F(ArrayOpsTest, ConcatValuesShapesAndErrors) {
  Output a = Iota({2, 2});
  Output b = Iota({2, 3}) + ops::Const(10.0f);
  Output c = ops::Concat({a, b}, -1);
  EXPECT_EQ(c.op().type(), "ConcatV2");
  EXPECT_EQ(c.op().name(), "concat");
  EXPECT_EQ(c.shape().DebugString(), "[2,5]");
  Session sess(g_);
  EXPECT_EQ(Values<float>(c.Eval(sess)), (std::vector<float>{0, 1, 10, 11, 12, 2, 3, 13, 14, 15}));
  EXPECT_EQ(Values<float>(ops::Concat({a, a}, 0).Eval(sess)), (std::vector<float>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(ops::Concat({a}, 0).op().type(), "Identity");
  Output strings = ops::Concat({ops::Const<std::string>({"a"}), ops::Const<std::string>({"b", "c"})}, 0);
  EXPECT_EQ(Values<std::string>(strings.Eval(sess)), (std::vector<std::string>{"a", "b", "c"}));
  ExpectInvalidArgument(
      [&] {
        ops::Concat({a, b}, 0);
      },
      "Dimension 1 in both shapes must be equal, but are 2 and 3");
  ExpectInvalidArgument([&] { ops::Concat({a, b}, 2); }, "Expected axis in the range [-2, 2), but got 2");
  ExpectInvalidArgument([&] { ops::Concat({a, Iota({4})}, 0); }, "Shape must be rank 2 but is rank 1");
  // Partial shapes: the concatenated dimension is unknown if any part is.
  Output p = ops::Placeholder(DT_FLOAT, PartialTensorShape({2, -1}), "p");
  EXPECT_EQ(ops::Concat({a, p}, 1).shape().DebugString(), "[2,?]");
  EXPECT_EQ(ops::Concat({a, p}, 0).shape().DebugString(), "[4,2]");
  Output q = ops::Placeholder(DT_FLOAT, PartialTensorShape::Unknown(), "q");
  Output runtime_concat = ops::Concat({a, q}, 0);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{q, Tensor(DT_FLOAT, TensorShape({1, 3}))}}, {runtime_concat});
      },
      "ConcatOp : Dimensions of inputs should match: shape[0] = [2,2] vs. shape[1] = [1,3]");
}

TEST_F(ArrayOpsTest, SplitAndSplitV) {
  Output x = Iota({2, 6});
  std::vector<Output> parts = ops::Split(x, 3, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].shape().DebugString(), "[2,2]");
  EXPECT_EQ(parts[0].op().name(), "split");
  Session sess(g_);
  EXPECT_EQ(Values<float>(parts[1].Eval(sess)), (std::vector<float>{2, 3, 8, 9}));
  std::vector<Output> v = ops::SplitV(x, {1, -1, 2}, 1);
  EXPECT_EQ(v[1].shape().DebugString(), "[2,3]");
  EXPECT_EQ(Values<float>(v[1].Eval(sess)), (std::vector<float>{1, 2, 3, 7, 8, 9}));
  EXPECT_EQ(Values<float>(v[2].Eval(sess)), (std::vector<float>{4, 5, 10, 11}));
  ExpectInvalidArgument([&] { ops::Split(x, 4, 1); },
                        "Dimension size must be evenly divisible by 4 but is 6");
  ExpectInvalidArgument([&] { ops::SplitV(x, {1, 2}, 1); }, "Determined shape must either match input shape");
  ExpectInvalidArgument([&] { ops::SplitV(x, {-1, -1}, 1); }, "Only one dimensions can have a value of -1");
  Output p = ops::Placeholder(DT_FLOAT, PartialTensorShape::Unknown(), "p");
  std::vector<Output> runtime_parts = ops::Split(p, 4, 0);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{p, Tensor(DT_FLOAT, TensorShape({6}))}}, {runtime_parts[0]});
      },
      "Number of ways to split should evenly divide the split dimension");
}

TEST_F(ArrayOpsTest, ConcatAndSplitGradients) {
  Output a = In({2, 2}, "a");
  Output b = In({2, 3}, "b");
  Output w = ops::Const<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, TensorShape({2, 5}));
  EXPECT_LT(ComputeGradientError({a, b}, {RandomDoubles({2, 2}, 1), RandomDoubles({2, 3}, 2)},
                                 ops::Concat({a, b}, 1) * w),
            1e-8);
  EXPECT_LT(ComputeGradientError({a, b}, {RandomDoubles({2, 2}, 3), RandomDoubles({2, 3}, 4)},
                                 ops::Concat({ops::Transpose(a), ops::Transpose(b)}, -2)),
            1e-8);
  Output x = In({2, 6}, "s");
  std::vector<Output> parts = ops::Split(x, 3, 1);
  // Only two of the three parts are used: the third gets a zero gradient.
  EXPECT_LT(ComputeGradientError({x}, {RandomDoubles({2, 6}, 5)}, parts[0] * parts[2]), 1e-8);
  std::vector<Output> v = ops::SplitV(x, {4, 2}, 1);
  EXPECT_LT(ComputeGradientError({x}, {RandomDoubles({2, 6}, 6)},
                                 ops::ReduceSum(v[0], {1}) * ops::ReduceSum(v[1], {1})),
            1e-8);
}

// ---- Slice, StridedSlice ----

TEST_F(ArrayOpsTest, SliceValuesAndErrors) {
  Output x = Iota({3, 4});
  Output s = ops::Slice(x, {1, 1}, {2, -1});
  EXPECT_EQ(s.shape().DebugString(), "[2,3]");
  Session sess(g_);
  EXPECT_EQ(Values<float>(s.Eval(sess)), (std::vector<float>{5, 6, 7, 9, 10, 11}));
  ExpectInvalidArgument([&] { ops::Slice(x, {1, 1}, {3, 1}); }, "Expected size[0] in [0, 2], but got 3");
  ExpectInvalidArgument([&] { ops::Slice(x, {4, 0}, {0, 1}); }, "Expected begin[0] in [0, 3], but got 4");
  ExpectInvalidArgument([&] { ops::Slice(x, {0}, {1}); }, "Expected begin argument to have 2 elements");
  Output begin = ops::Placeholder(DT_INT32, PartialTensorShape({2}), "begin");
  Output dynamic = ops::Slice(x, begin, ops::Const<int32_t>({2, 2}));
  EXPECT_EQ(dynamic.shape().DebugString(), "[2,2]");
  EXPECT_EQ(Values<float>(dynamic.Eval(sess, FeedList{{begin, Tensor::FromVector<int32_t>({0, 2})}})),
            (std::vector<float>{2, 3, 6, 7}));
  ExpectInvalidArgument(
      [&] {
        dynamic.Eval(sess, FeedList{{begin, Tensor::FromVector<int32_t>({2, 0})}});
      },
      "Expected size[0] in [0, 1], but got 2");
  Output xd = In({3, 4});
  EXPECT_LT(ComputeGradientError({xd}, {RandomDoubles({3, 4}, 7)}, ops::Slice(xd, {1, 0}, {-1, 3})), 1e-8);
}

TEST_F(ArrayOpsTest, StridedSliceLikePythonIndexing) {
  Output x = Iota({2, 3, 4});
  Session sess(g_);
  // x[1]
  Output a = ops::StridedSlice(x, {1}, {2}, {1}, {.shrink_axis_mask = 1});
  EXPECT_EQ(a.op().name(), "strided_slice");
  EXPECT_EQ(a.shape().DebugString(), "[3,4]");
  EXPECT_EQ(Values<float>(a.Eval(sess))[0], 12);
  // x[:, 1:3]
  Output b = ops::StridedSlice(x, {0, 1}, {0, 3}, {1, 1}, {.begin_mask = 1, .end_mask = 1});
  EXPECT_EQ(b.shape().DebugString(), "[2,2,4]");
  EXPECT_EQ(Values<float>(b.Eval(sess))[8], 16);
  // x[..., ::-2]
  Output c =
      ops::StridedSlice(x, {0, 0}, {0, 0}, {1, -2}, {.begin_mask = 2, .end_mask = 2, .ellipsis_mask = 1});
  EXPECT_EQ(c.shape().DebugString(), "[2,3,2]");
  const std::vector<float> cv = Values<float>(c.Eval(sess));
  EXPECT_EQ(cv[0], 3);
  EXPECT_EQ(cv[1], 1);
  EXPECT_EQ(cv[11], 21);
  // x[:, tf.newaxis, -1]
  Output d = ops::StridedSlice(x, {0, 0, -1}, {0, 0, 0}, {1, 1, 1},
                               {.begin_mask = 1, .end_mask = 1, .new_axis_mask = 2, .shrink_axis_mask = 4});
  EXPECT_EQ(d.shape().DebugString(), "[2,1,4]");
  EXPECT_EQ(Values<float>(d.Eval(sess)), (std::vector<float>{8, 9, 10, 11, 20, 21, 22, 23}));
  // x[-1, -2:, 1:-1]
  Output e = ops::StridedSlice(x, {-1, -2, 1}, {0, 0, -1}, {1, 1, 1}, {.end_mask = 2, .shrink_axis_mask = 1});
  EXPECT_EQ(e.shape().DebugString(), "[2,2]");
  EXPECT_EQ(Values<float>(e.Eval(sess)), (std::vector<float>{17, 18, 21, 22}));
  // x[0:10] clamps; x[:] is the input itself.
  EXPECT_EQ(ops::StridedSlice(x, {0}, {10}).shape().DebugString(), "[2,3,4]");
  EXPECT_EQ(ops::StridedSlice(x, {2}, {10}).shape().DebugString(), "[0,3,4]");
  EXPECT_EQ(ops::StridedSlice(x, {0}, {0}, {1}, {.begin_mask = 1, .end_mask = 1}).Eval(sess).NumElements(),
            24);
  // Partial shapes: unknown dimensions stay unknown unless shrunk.
  Output p = ops::Placeholder(DT_FLOAT, PartialTensorShape({-1, 4}), "p");
  EXPECT_EQ(
      ops::StridedSlice(p, {0, 1}, {0, 3}, {1, 1}, {.begin_mask = 1, .end_mask = 1}).shape().DebugString(),
      "[?,2]");
  EXPECT_EQ(ops::StridedSlice(p, {0}, {1}, {1}, {.shrink_axis_mask = 1}).shape().DebugString(), "[4]");
}

TEST_F(ArrayOpsTest, StridedSliceErrors) {
  Output x = Iota({2, 3});
  ExpectInvalidArgument([&] { ops::StridedSlice(x, {5}, {6}, {1}, {.shrink_axis_mask = 1}); },
                        "slice index 5 of dimension 0 out of bounds.");
  ExpectInvalidArgument([&] { ops::StridedSlice(x, {0}, {1}, {0}); }, "strides[0] must be non-zero");
  ExpectInvalidArgument(
      [&] {
        ops::StridedSlice(x, {0, 0, 0}, {1, 1, 1});
      },
      "Index out of range using input dim 2");
  ExpectInvalidArgument(
      [&] {
        ops::StridedSlice(x, {0, 0}, {1, 1}, {1, 1}, {.ellipsis_mask = 3});
      },
      "Multiple ellipses in slice spec not allowed");
  Output begin = ops::Placeholder(DT_INT32, PartialTensorShape({1}), "begin");
  Output dynamic = ops::StridedSlice(x, begin, ops::Const<int32_t>({1}), ops::Const<int32_t>({1}),
                                     {.shrink_axis_mask = 1});
  EXPECT_TRUE(dynamic.shape().unknown_rank());
  Session sess(g_);
  EXPECT_EQ(Values<float>(dynamic.Eval(sess, FeedList{{begin, Tensor::FromVector<int32_t>({-1})}})),
            (std::vector<float>{3, 4, 5}));
  ExpectInvalidArgument(
      [&] {
        dynamic.Eval(sess, FeedList{{begin, Tensor::FromVector<int32_t>({-3})}});
      },
      "slice index -3 of dimension 0 out of bounds.");
}

TEST_F(ArrayOpsTest, StridedSliceGradients) {
  Output x = In({3, 4, 2});
  const Tensor v = RandomDoubles({3, 4, 2}, 8);
  EXPECT_LT(ComputeGradientError({x}, {v}, ops::StridedSlice(x, {1}, {2}, {1}, {.shrink_axis_mask = 1})),
            1e-8);
  EXPECT_LT(ComputeGradientError(
                {x}, {v}, ops::StridedSlice(x, {0, 3}, {0, 0}, {1, -2}, {.begin_mask = 1, .end_mask = 3})),
            1e-8);
  EXPECT_LT(
      ComputeGradientError(
          {x}, {v},
          ops::StridedSlice(x, {0, -1}, {0, 0}, {1, 1},
                            {.end_mask = 0, .ellipsis_mask = 1, .new_axis_mask = 0, .shrink_axis_mask = 2})),
      1e-8);
  // The gradient op's own gradient (second derivatives through a slice).
  Output dy = In({4, 2}, "dy");
  Output scattered =
      ops::StridedSliceGrad(ops::Const<int32_t>({3, 4, 2}), ops::Const<int32_t>({1}),
                            ops::Const<int32_t>({2}), ops::Const<int32_t>({1}), dy, {.shrink_axis_mask = 1});
  EXPECT_EQ(scattered.shape().DebugString(), "[3,4,2]");
  EXPECT_LT(ComputeGradientError({dy}, {RandomDoubles({4, 2}, 9)}, scattered), 1e-8);
}

// ---- Pack, Unpack ----

TEST_F(ArrayOpsTest, UnpackAndPackGradients) {
  Output x = Iota({2, 3});
  std::vector<Output> cols = ops::Unstack(x, 1);
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(cols[0].op().name(), "unstack");
  EXPECT_EQ(cols[2].shape().DebugString(), "[2]");
  Session sess(g_);
  EXPECT_EQ(Values<float>(cols[2].Eval(sess)), (std::vector<float>{2, 5}));
  ExpectInvalidArgument([&] { ops::Unpack(x, 3, 0); }, "Dimension must be 3 but is 2");
  Output a = In({2, 3}, "a");
  Output b = In({2, 3}, "b");
  EXPECT_LT(ComputeGradientError({a, b}, {RandomDoubles({2, 3}, 10), RandomDoubles({2, 3}, 11)},
                                 ops::Pack({a, b * b}, 1)),
            1e-8);
  std::vector<Output> rows = ops::Unstack(a, 0);
  EXPECT_LT(ComputeGradientError({a}, {RandomDoubles({2, 3}, 12)}, rows[1] * ops::Const(3.0)), 1e-8);
}

// ---- Transpose, Tile ----

TEST_F(ArrayOpsTest, TransposeAndTile) {
  Output x = Iota({2, 3, 4});
  Output t = ops::Transpose(x, {2, 0, 1});
  EXPECT_EQ(t.shape().DebugString(), "[4,2,3]");
  EXPECT_EQ(t.op().name(), "transpose");
  Session sess(g_);
  const std::vector<float> tv = Values<float>(t.Eval(sess));
  EXPECT_EQ(tv[1], 4);   // t[0,0,1] = x[0,1,0]
  EXPECT_EQ(tv[3], 12);  // t[0,1,0] = x[1,0,0]
  EXPECT_EQ(tv[6], 1);   // t[1,0,0] = x[0,0,1]
  EXPECT_EQ(ops::Transpose(Iota({2, 3})).shape().DebugString(), "[3,2]");
  ExpectInvalidArgument([&] { ops::Transpose(x, {0, 1}); }, "transpose expects a vector of size 3");
  ExpectInvalidArgument([&] { ops::Transpose(x, {0, 1, 1}); }, "1 is duplicated in the input.");
  Output tile = ops::Tile(Iota({2, 2}), {2, 3});
  EXPECT_EQ(tile.shape().DebugString(), "[4,6]");
  const std::vector<float> tl = Values<float>(tile.Eval(sess));
  EXPECT_EQ((std::vector<float>(tl.begin(), tl.begin() + 6)), (std::vector<float>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(tl[18], 2);
  ExpectInvalidArgument(
      [&] {
        ops::Tile(x, {2, 2});
      },
      "Expected multiples argument to be a vector of length 3 but got length 2");
  Output perm = ops::Placeholder(DT_INT32, PartialTensorShape({3}), "perm");
  Output dynamic = ops::Transpose(x, perm);
  EXPECT_EQ(dynamic.shape().DebugString(), "[?,?,?]");
  ExpectInvalidArgument(
      [&] {
        dynamic.Eval(sess, FeedList{{perm, Tensor::FromVector<int32_t>({0, 3, 1})}});
      },
      "3 is out of range [0 .. 3)");
  Output xd = In({2, 3, 2});
  const Tensor v = RandomDoubles({2, 3, 2}, 13);
  EXPECT_LT(ComputeGradientError({xd}, {v}, ops::Transpose(xd, {1, 2, 0}) * ops::Const(2.0)), 1e-8);
  EXPECT_LT(ComputeGradientError({xd}, {v}, ops::Tile(xd, {2, 1, 3})), 1e-8);
  EXPECT_LT(ComputeGradientError({xd}, {v}, ops::Square(ops::Tile(xd, {1, 2, 1}))), 1e-8);
}

// ---- OneHot ----

// Shapes computed from tensor values that overflow int64 are InvalidArgument naming the op and
// the sizes, at build time when the values are constant and in the kernel when fed; never a
// wrapped shape (Tile of [4,4] by [2^62, 4] was [0,16]) or a wrapped byte count.
TEST_F(ArrayOpsTest, ShapesFromValuesThatOverflowInt64AreRejected) {
  constexpr int64_t k62 = int64_t{1} << 62;
  Output x = ops::Const<float>(std::vector<float>(16, 1.0f), TensorShape({4, 4}));
  // Tile: a constant multiple of 2^62 (the vector overload no longer truncates it to int32),
  // then fed multiples: one dimension's product, then the total.
  ExpectInvalidArgument([&] { ops::Tile(x, {k62, 4}); }, {"Tile", "4 * 4611686018427387904 overflows int64"});
  Output multiples = ops::Placeholder(DT_INT64, PartialTensorShape({2}), "multiples");
  Output tiled = ops::Tile(x, multiples);
  Session sess(g_);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{multiples, Tensor::FromVector<int64_t>({k62, 4})}}, {tiled});
      },
      {"Tile", "input dimension 0 times multiples[0]: 4 * 4611686018427387904 overflows int64"});
  ExpectInvalidArgument(
      [&] {
        sess.Run({{multiples, Tensor::FromVector<int64_t>({k62 / 4, k62 / 4})}}, {tiled});
      },
      {"Tile: shape [4611686018427387904,4611686018427387904] has too many elements"});
  EXPECT_EQ(sess.Run({{multiples, Tensor::FromVector<int64_t>({2, 1})}}, {tiled})[0].shape(),
            TensorShape({8, 4}));

  // Fill and BroadcastTo: dims whose product overflows; Fill of [2^62] floats (2^64 bytes).
  Output dims = ops::Placeholder(DT_INT64, PartialTensorShape({-1}), "dims");
  Output filled = ops::Fill(dims, ops::Const(1.0f));
  ExpectInvalidArgument(
      [&] {
        sess.Run({{dims, Tensor::FromVector<int64_t>({k62, 4})}}, {filled});
      },
      {"Fill: shape [4611686018427387904,4] has too many elements"});
  EXPECT_THROW(sess.Run({{dims, Tensor::FromVector<int64_t>({k62})}}, {filled}), ResourceExhaustedError);
  EXPECT_EQ(Values<float>(sess.Run({{dims, Tensor::FromVector<int64_t>({2})}}, {filled})[0]),
            (std::vector<float>{1, 1}));
  Output broadcast = ops::BroadcastTo(ops::Const(1.0f), dims);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{dims, Tensor::FromVector<int64_t>({4, k62})}}, {broadcast});
      },
      {"BroadcastTo: shape [4,4611686018427387904] has too many elements"});

  // Reshape with -1: the known sizes' product (2^62 * 8 wrapped to 0, 3 * 6148914691236517206
  // to 2).
  Output to = ops::Placeholder(DT_INT64, PartialTensorShape({3}), "to");
  Output reshaped = ops::Reshape(x, to);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{to, Tensor::FromVector<int64_t>({k62, 8, -1})}}, {reshaped});
      },
      {"Reshape", "4611686018427387904 * 8 overflows int64"});
  ExpectInvalidArgument(
      [&] {
        sess.Run({{to, Tensor::FromVector<int64_t>({3, 6148914691236517206, -1})}}, {reshaped});
      },
      {"Reshape", "overflows int64"});
  ExpectInvalidArgument([&] { ops::Reshape(x, {k62, 8, -1}); }, {"Reshape", "overflows int64"});

  // Range: INT64_MIN to INT64_MAX (limit - start overflows), and a float size past 2^63.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  ExpectInvalidArgument([&] { ops::Range(ops::Const(kMin), ops::Const(kMax), ops::Const(int64_t{1})); },
                        {"Range: size of", "overflows int64"});
  Output start = ops::Placeholder(DT_INT64, PartialTensorShape({}), "start");
  Output range = ops::Range(start, ops::Const(kMax), ops::Const(int64_t{1}));
  ExpectInvalidArgument(
      [&] {
        sess.Run({{start, Tensor::Scalar<int64_t>(kMin)}}, {range});
      },
      {"Range: size of (9223372036854775807 - -9223372036854775808) / 1", "overflows int64"});
  EXPECT_EQ(Values<int64_t>(sess.Run({{start, Tensor::Scalar<int64_t>(kMax - 2)}}, {range})[0]),
            (std::vector<int64_t>{kMax - 2, kMax - 1}));
  Output fstart = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "fstart");
  Output frange = ops::Range(fstart, ops::Const(1e30f), ops::Const(1e-10f));
  ExpectInvalidArgument(
      [&] {
        sess.Run({{fstart, Tensor::Scalar<float>(0)}}, {frange});
      },
      {"Range: size of", "overflows int64"});

  // ConcatV2 of zero-element tensors whose sizes along the axis sum past int64.
  Output part = ops::Placeholder(DT_FLOAT, PartialTensorShape::Unknown(), "part");
  Output concat = ops::Concat({part, part}, 0);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{part, Tensor(DT_FLOAT, TensorShape({kMax, 0}))}}, {concat});
      },
      {"ConcatOp", "overflows int64"});
}

TEST_F(ArrayOpsTest, OneHot) {
  Output indices = ops::Const<int32_t>({0, 2, -1, 5});
  Output oh = ops::OneHot(indices, 3);
  EXPECT_EQ(oh.op().name(), "one_hot");
  EXPECT_EQ(oh.dtype(), DT_FLOAT);
  EXPECT_EQ(oh.shape().DebugString(), "[4,3]");
  Session sess(g_);
  EXPECT_EQ(Values<float>(oh.Eval(sess)), (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}));
  Output oh0 = ops::OneHot(ops::Const<int64_t>({1, 0}), ops::Const(int32_t{2}), ops::Const(int32_t{7}),
                           ops::Const(int32_t{-1}), 0);
  EXPECT_EQ(oh0.shape().DebugString(), "[2,2]");
  EXPECT_EQ(Values<int32_t>(oh0.Eval(sess)), (std::vector<int32_t>{-1, 7, 7, -1}));
  ExpectInvalidArgument([&] { ops::OneHot(indices, 3, DT_FLOAT, 2); },
                        "Expected axis to be -1 or between [0, 1]");
  ExpectInvalidArgument(
      [&] { ops::OneHot(indices, ops::Const(int32_t{3}), ops::Const(1.0f), ops::Const(0.0)); }, "OneHot");
}

// ---- Select, SelectV2 ----

TEST_F(ArrayOpsTest, SelectAndSelectV2) {
  Output x = Iota({2, 3});
  Output y = Iota({2, 3}) * ops::Const(-1.0f);
  Session sess(g_);
  Output same =
      ops::Select(ops::Const<bool>({true, false, true, false, true, false}, TensorShape({2, 3})), x, y);
  EXPECT_EQ(Values<float>(same.Eval(sess)), (std::vector<float>{0, -1, 2, -3, 4, -5}));
  Output rows = ops::Select(ops::Const<bool>({false, true}), x, y);
  EXPECT_EQ(Values<float>(rows.Eval(sess)), (std::vector<float>{0, -1, -2, 3, 4, 5}));
  Output broadcast = ops::SelectV2(ops::Const<bool>({true, false, true}), x, ops::Const(9.0f));
  EXPECT_EQ(broadcast.shape().DebugString(), "[2,3]");
  EXPECT_EQ(Values<float>(broadcast.Eval(sess)), (std::vector<float>{0, 9, 2, 3, 9, 5}));
  ExpectInvalidArgument(
      [&] {
        ops::Select(ops::Const<bool>({true, false, true}), x, y);
      },
      "Dimensions must be equal, but are 3 and 2 for 'Select");
  ExpectInvalidArgument([&] { ops::Select(ops::Const<bool>({true, false}), x, Iota({3, 2})); }, "Select");
  ExpectInvalidArgument([&] { ops::SelectV2(ops::Const<bool>({true, false}), x, y); }, "SelectV2");
  Output c = ops::Placeholder(DT_BOOL, PartialTensorShape::Unknown(), "c");
  Output runtime_select = ops::Select(c, x, y);
  ExpectInvalidArgument(
      [&] {
        runtime_select.Eval(sess, FeedList{{c, Tensor::FromVector<bool>({true, false, true})}});
      },
      "Number of batches of 'then' must match size of 'cond'");
  Output xd = In({2, 3}, "xd");
  Output yd = In({2, 3}, "yd");
  Output cond = ops::Const<bool>({true, false, false, true, true, false}, TensorShape({2, 3}));
  EXPECT_LT(ComputeGradientError({xd, yd}, {RandomDoubles({2, 3}, 14), RandomDoubles({2, 3}, 15)},
                                 ops::Select(cond, xd, yd * yd)),
            1e-8);
  Output row = In({3}, "row");
  EXPECT_LT(
      ComputeGradientError({xd, row}, {RandomDoubles({2, 3}, 16), RandomDoubles({3}, 17)},
                           ops::SelectV2(ops::Const<bool>({true, false}, TensorShape({2, 1})), xd, row)),
      1e-8);
}

// ---- GatherV2 gradient, UnsortedSegmentSum ----

TEST_F(ArrayOpsTest, GatherGradients) {
  Output params = In({4, 3});
  const Tensor v = RandomDoubles({4, 3}, 18);
  Output idx = ops::Const<int32_t>({2, 0, 2});  // a repeated index accumulates
  EXPECT_LT(ComputeGradientError({params}, {v}, ops::Gather(params, idx) * ops::Const(3.0)), 1e-8);
  EXPECT_LT(ComputeGradientError({params}, {v}, ops::Gather(params, ops::Const<int64_t>({1, 1}), 1)), 1e-8);
  Output p3 = In({2, 3, 2}, "p3");
  Output idx2 = ops::Const<int32_t>({1, 0, 1, 1}, TensorShape({2, 2}));
  EXPECT_LT(ComputeGradientError({p3}, {RandomDoubles({2, 3, 2}, 19)}, ops::Gather(p3, idx2, 1)), 1e-8);
  EXPECT_LT(ComputeGradientError({p3}, {RandomDoubles({2, 3, 2}, 20)}, ops::Gather(p3, idx2, -1)), 1e-8);
  std::vector<Output> g = ops::Gradients({ops::Gather(params, idx)}, {params});
  EXPECT_EQ(g[0].op().type(), "UnsortedSegmentSum");
  // Errors: axis out of range at build time, an index out of range at run time.
  ExpectInvalidArgument([&] { ops::Gather(params, idx, 2); }, "GatherV2");
  Output i = ops::Placeholder(DT_INT32, PartialTensorShape({-1}), "i");
  Session sess(g_);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{params, v}, {i, Tensor::FromVector<int32_t>({1, 4})}}, {ops::Gather(params, i)});
      },
      "indices[1] = 4 is not in [0, 4)");
}

TEST_F(ArrayOpsTest, UnsortedSegmentSum) {
  Output data = Iota({4, 2});
  Output ids = ops::Const<int32_t>({1, 0, 1, -1});
  Output sum = ops::UnsortedSegmentSum(data, ids, ops::Const(int32_t{3}));
  EXPECT_EQ(sum.shape().DebugString(), "[3,2]");
  Session sess(g_);
  // Row 3 has a negative id and is dropped.
  EXPECT_EQ(Values<float>(sum.Eval(sess)), (std::vector<float>{2, 3, 4, 6, 0, 0}));
  ExpectInvalidArgument(
      [&] {
        ops::UnsortedSegmentSum(data, ops::Const<int32_t>({0, 1, 2}), ops::Const(int32_t{3}));
      },
      "does not start with segment_ids.shape");
  Output bad = ops::UnsortedSegmentSum(data, ops::Const<int32_t>({0, 1, 3, 0}), ops::Const(int32_t{3}));
  ExpectInvalidArgument([&] { bad.Eval(sess); }, "segment_ids[2] = 3 is out of range [0, 3)");
  Output xd = In({4, 2});
  EXPECT_LT(ComputeGradientError({xd}, {RandomDoubles({4, 2}, 21)},
                                 ops::UnsortedSegmentSum(xd, ids, ops::Const(int32_t{3}))),
            1e-8);
}

}  // namespace
}  // namespace flowtrain
