// Sparse gradients and embedding lookups: the gradient of a gather stays IndexedSlices through
// Identity, Cast and reads, adds up by concatenation, converts to the dense gradient (checked
// against finite differences); EmbeddingLookup over one table and over partitions (mod, div)
// returns the rows asked for, with a sparse gradient into each partition; a bad id is
// InvalidArgument naming it and the lookup.
#include <numeric>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/clip_ops.h"
#include "flowtrain/ops/embedding_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/io_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/gradient_checker.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;
using testing::Values;

// Row r of a [rows, cols] table holds r * 10 + c.
Tensor Table(int64_t first_row, int64_t rows, int64_t cols) {
  std::vector<float> v;
  for (int64_t r = first_row; r < first_row + rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) v.push_back(static_cast<float>(r * 10 + c));
  }
  Tensor t(DT_FLOAT, TensorShape({rows, cols}));
  std::copy(v.begin(), v.end(), t.flat<float>().begin());
  return t;
}

class EmbeddingOpsTest : public ::testing::Test {
 protected:
  Graph g_;
  ScopeGuard as_default_ = g_.AsDefault();
};

TEST_F(EmbeddingOpsTest, GatherGradientIsIndexedSlices) {
  Output params = ops::Placeholder(DT_FLOAT, PartialTensorShape({4, 3}), "params");
  Output ids = ops::Const<int32_t>({2, 0, 2});
  Output y = ops::Gather(ops::Identity(params), ids) * ops::Const(2.0f);
  std::vector<ops::GradientValue> g = ops::GradientsWithIndexedSlices({y}, {params});
  ASSERT_TRUE(g[0].is_sparse());
  ExpectInvalidArgument([&] { static_cast<void>(g[0].dense()); }, "IndexedSlices");
  Session sess(g_);
  const Tensor p = Table(0, 4, 3);
  std::vector<Tensor> out = sess.Run({{params, p}}, {g[0].slices().values, g[0].slices().indices,
                                                     g[0].slices().dense_shape, ops::ToDense(g[0])});
  EXPECT_EQ(Values<float>(out[0]), std::vector<float>(9, 2.0f));
  EXPECT_EQ(Values<int32_t>(out[1]), (std::vector<int32_t>{2, 0, 2}));
  EXPECT_EQ(Values<int32_t>(out[2]), (std::vector<int32_t>{4, 3}));
  // The repeated row adds up; the row never read gets zeros.
  EXPECT_EQ(Values<float>(out[3]), (std::vector<float>{2, 2, 2, 0, 0, 0, 4, 4, 4, 0, 0, 0}));
}

TEST_F(EmbeddingOpsTest, SparseGradientsAddUpByConcatenationAndMatchFiniteDifferences) {
  Output params = ops::Placeholder(DT_DOUBLE, PartialTensorShape({5, 2}), "params");
  Output a = ops::Gather(params, ops::Const<int32_t>({1, 3}));
  Output b = ops::Gather(ops::Identity(params), ops::Const<int64_t>({3}));
  Output y = ops::ReduceSum(a * a) + ops::ReduceSum(b) * ops::Const(3.0) + ops::ReduceSum(params);
  std::vector<ops::GradientValue> g = ops::GradientsWithIndexedSlices({y}, {params});
  ASSERT_TRUE(g[0].is_sparse());  // two gathers and a dense term concatenated
  EXPECT_EQ(g[0].slices().values.op().type(), "ConcatV2");
  // Through a Cast the gradient stays sparse, its values cast back.
  Output through_cast = ops::Gather(ops::Cast(params, DT_FLOAT), ops::Const<int32_t>({0}));
  std::vector<ops::GradientValue> cast_g = ops::GradientsWithIndexedSlices({through_cast}, {params});
  ASSERT_TRUE(cast_g[0].is_sparse());
  EXPECT_EQ(cast_g[0].slices().values.op().type(), "Cast");
  EXPECT_EQ(cast_g[0].dtype(), DT_DOUBLE);
  EXPECT_LT(ComputeGradientError({params}, {RandomDoubles({5, 2}, 7)}, y), 1e-8);
  // ClipByGlobalNorm takes the sparse gradient: the norm is that of its values.
  auto [clipped, norm] = ops::ClipByGlobalNorm(g, 1.0f);
  ASSERT_TRUE(clipped[0].is_sparse());
  Session sess(g_);
  const Tensor p = RandomDoubles({5, 2}, 8);
  std::vector<Tensor> out = sess.Run({{params, p}}, {g[0].slices().values, norm, clipped[0].slices().values});
  double sq = 0;
  for (double v : Values<double>(out[0])) sq += v * v;
  EXPECT_NEAR(out[1].scalar<double>(), std::sqrt(sq), 1e-9);
  std::vector<double> values = Values<double>(out[0]), scaled = Values<double>(out[2]);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_NEAR(scaled[i], values[i] / std::sqrt(sq), 1e-9);
}

TEST_F(EmbeddingOpsTest, OneTableLooksUpRowsAsTensorFlowNamesThem) {
  Variable table(Table(0, 6, 2), {.name = "table"});
  Output ids = ops::Const<int32_t>({4, 1, 4, 0}, TensorShape({2, 2}));
  Output rows = ops::EmbeddingLookup(table, ids);
  EXPECT_EQ(rows.op().name(), "embedding_lookup/Identity");
  EXPECT_EQ(rows.op().input(0).op().name(), "embedding_lookup");
  EXPECT_EQ(rows.op().input(0).op().type(), "GatherV2");
  std::vector<ops::GradientValue> g = ops::GradientsWithIndexedSlices({rows}, {table.ref()});
  ASSERT_TRUE(g[0].is_sparse());
  Session sess(g_);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  const Tensor got = rows.Eval(sess);
  EXPECT_EQ(got.shape(), TensorShape({2, 2, 2}));
  EXPECT_EQ(Values<float>(got), (std::vector<float>{40, 41, 10, 11, 40, 41, 0, 1}));
  EXPECT_EQ(Values<int32_t>(g[0].slices().indices.Eval(sess)), (std::vector<int32_t>{4, 1, 4, 0}));
}

TEST_F(EmbeddingOpsTest, PartitionedTablesLookUpByModAndDiv) {
  // 7 rows in 2 partitions. mod: row r is row r / 2 of partition r % 2. div: partition 0 holds
  // rows 0-3 (7 % 2 = 1 partition gets an extra row), partition 1 rows 4-6.
  const std::vector<int64_t> ids_v = {6, 3, 0, 3, 5};
  for (const std::string strategy : {"mod", "div"}) {
    SCOPED_TRACE(strategy);
    Graph g;
    auto as_default = g.AsDefault();
    Tensor p0, p1;
    if (strategy == "mod") {
      p0 = Tensor(DT_FLOAT, TensorShape({4, 2}));
      p1 = Tensor(DT_FLOAT, TensorShape({3, 2}));
      for (int64_t r = 0; r < 7; ++r) {
        Tensor& part = r % 2 == 0 ? p0 : p1;
        for (int c = 0; c < 2; ++c) part.flat<float>()[(r / 2) * 2 + c] = static_cast<float>(r * 10 + c);
      }
    } else {
      p0 = Table(0, 4, 2);
      p1 = Table(4, 3, 2);
    }
    Variable part0(p0, {.name = "part0"}), part1(p1, {.name = "part1", .use_resource = true});
    Output lookup_ids = ops::Const<int64_t>({6, 3, 0, 3, 5});
    Output rows = ops::EmbeddingLookup({part0, part1}, lookup_ids, {.partition_strategy = strategy});
    EXPECT_EQ(rows.op().input(0).op().name(), "embedding_lookup");
    EXPECT_EQ(rows.op().input(0).op().type(), "ParallelDynamicStitch");
    std::vector<ops::GradientValue> g_values =
        ops::GradientsWithIndexedSlices({rows * rows}, {part0.ref(), part1.ref()});
    ASSERT_TRUE(g_values[0].is_sparse());
    ASSERT_TRUE(g_values[1].is_sparse());
    Session sess(g);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
    std::vector<float> want;
    for (int64_t id : ids_v) {
      want.push_back(static_cast<float>(id * 10));
      want.push_back(static_cast<float>(id * 10 + 1));
    }
    EXPECT_EQ(Values<float>(rows.Eval(sess)), want);
    // The gradient into each partition is 2 * row, in the partition's own rows.
    const Tensor d0 = ops::ToDense(g_values[0]).Eval(sess);
    const Tensor d1 = ops::ToDense(g_values[1]).Eval(sess);
    EXPECT_EQ(d0.shape(), p0.shape());
    EXPECT_EQ(d1.shape(), p1.shape());
    std::vector<float> both = Values<float>(d0), second = Values<float>(d1);
    both.insert(both.end(), second.begin(), second.end());
    float total = std::accumulate(both.begin(), both.end(), 0.0f);
    float want_total = 0;
    for (float v : want) want_total += 2 * v;
    EXPECT_EQ(total, want_total);
  }
}

TEST_F(EmbeddingOpsTest, BadInputIsInvalidArgument) {
  Variable table(Table(0, 1000, 2), {.name = "table"});
  Output ids = ops::Placeholder(DT_INT32, PartialTensorShape({-1}), "ids");
  Output rows = ops::EmbeddingLookup(table, ids);
  Session sess(g_);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  ExpectInvalidArgument(
      [&] {
        sess.Run({{ids, Tensor::FromVector<int32_t>({3, 1005})}}, {rows});
      },
      {"indices[1] = 1005 is not in [0, 1000)", "embedding_lookup"});
  ExpectInvalidArgument(
      [&] {
        sess.Run({{ids, Tensor::FromVector<int32_t>({-1})}}, {rows});
      },
      {"indices[0] = -1 is not in [0, 1000)"});
  ExpectInvalidArgument([&] { ops::EmbeddingLookup(std::vector<ops::EmbeddingParam>{}, ids); },
                        "at least one");
  ExpectInvalidArgument(
      [&] {
        ops::EmbeddingLookup({table, table}, ids, {.partition_strategy = "hash"});
      },
      "hash");
  ExpectInvalidArgument([&] { ops::EmbeddingLookup(table, ops::Const(1.0f)); }, "int32 or int64");
}

TEST_F(EmbeddingOpsTest, MaxNormClipsLongRows) {
  Output table = ops::Const<float>({3, 4, 0.3f, 0.4f}, TensorShape({2, 2}));
  Output rows = ops::EmbeddingLookup(table, ops::Const<int32_t>({0, 1}), {.max_norm = 1.0f});
  Session sess(g_);
  std::vector<float> got = Values<float>(rows.Eval(sess));
  EXPECT_NEAR(got[0], 0.6f, 1e-6);
  EXPECT_NEAR(got[1], 0.8f, 1e-6);
  EXPECT_NEAR(got[2], 0.3f, 1e-6);
  EXPECT_NEAR(got[3], 0.4f, 1e-6);
}

}  // namespace
}  // namespace flowtrain
