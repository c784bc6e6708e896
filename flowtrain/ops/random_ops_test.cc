#include "flowtrain/ops/random_ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/framework/philox_random.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain {
namespace {

using random::PhiloxRandom;

// ---- Philox4x32-10 ----

// Known-answer vectors published with Random123 (kat_vectors).
TEST(PhiloxRandomTest, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(PhiloxRandom::Compute({0, 0, 0, 0}, {0, 0}),
            (PhiloxRandom::ResultType{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(PhiloxRandom::Compute({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (PhiloxRandom::ResultType{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(PhiloxRandom::Compute({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (PhiloxRandom::ResultType{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PhiloxRandomTest, SeedsGoToKeyAndUpperCounter) {
  PhiloxRandom gen(0x1122334455667788ULL, 0x99aabbccddeeff00ULL);
  EXPECT_EQ(gen.key(), (PhiloxRandom::Key{0x55667788, 0x11223344}));
  EXPECT_EQ(gen.counter(), (PhiloxRandom::Counter{0, 0, 0xddeeff00, 0x99aabbcc}));
}

TEST(PhiloxRandomTest, SkipEqualsDrawing) {
  PhiloxRandom a(5, 6), b(5, 6);
  for (int i = 0; i < 37; ++i) a();
  b.Skip(37);
  EXPECT_EQ(a(), b());
  // Carries ripple through all four counter words.
  PhiloxRandom c({0xffffffff, 0xffffffff, 0xffffffff, 0}, {1, 2});
  c.Skip(1);
  EXPECT_EQ(c.counter(), (PhiloxRandom::Counter{0, 0, 0, 1}));
  PhiloxRandom d({0xfffffffe, 0xffffffff, 7, 0}, {1, 2});
  d.Skip(uint64_t{1} << 33);
  EXPECT_EQ(d.counter(), (PhiloxRandom::Counter{0xfffffffe, 1, 8, 0}));
}

TEST(PhiloxRandomTest, FloatConversionsStayInUnitInterval) {
  EXPECT_EQ(random::Uint32ToFloat(0), 0.0f);
  EXPECT_LT(random::Uint32ToFloat(0xffffffff), 1.0f);
  EXPECT_GT(random::Uint32ToFloat(0xffffffff), 0.9999f);
  EXPECT_EQ(random::Uint64ToDouble(0, 0), 0.0);
  EXPECT_LT(random::Uint64ToDouble(0xffffffff, 0xffffffff), 1.0);
}

// ---- Seeds ----

TEST(RandomSeedTest, GetSeedFollowsTf) {
  Graph g;
  EXPECT_EQ(ops::GetSeed(g, std::nullopt).seed, 0);
  EXPECT_EQ(ops::GetSeed(g, std::nullopt).seed2, 0);
  ops::SeedPair op_only = ops::GetSeed(g, 5);
  EXPECT_EQ(op_only.seed, ops::kDefaultGraphSeed);
  EXPECT_EQ(op_only.seed2, 5);
  g.set_seed(3);
  ops::SeedPair both = ops::GetSeed(g, 9);
  EXPECT_EQ(both.seed, 3);
  EXPECT_EQ(both.seed2, 9);
  // Graph seed only: the op seeds count 0, 1, ... per graph, whatever other ops were built (as
  // TF 2.21's get_seed).
  auto as_default = g.AsDefault();
  ops::Const(1.0f);
  ops::Const(2.0f);
  EXPECT_EQ(ops::GetSeed(g, std::nullopt).seed2, 0);
  ops::Const(3.0f);
  EXPECT_EQ(ops::GetSeed(g, std::nullopt).seed2, 1);
  // (0, 0) is reserved for "unseeded" and moved away.
  g.set_seed(0);
  ops::SeedPair zeros = ops::GetSeed(g, 0);
  EXPECT_EQ(zeros.seed, 0);
  EXPECT_EQ(zeros.seed2, 2147483647);
  // Seeds are truncated to [0, 2^31 - 1) as TF does.
  g.set_seed(-1);
  EXPECT_EQ(ops::GetSeed(g, int64_t{1} << 40).seed, 2147483646);
  EXPECT_EQ(ops::GetSeed(g, int64_t{1} << 40).seed2, (int64_t{1} << 40) % 2147483647);
}

std::vector<float> Values(const Tensor& t) {
  auto f = t.flat<float>();
  return {f.begin(), f.end()};
}

TEST(RandomSeedTest, SameSeedsSameNumbersAcrossSessionsNewNumbersAcrossRuns) {
  Graph g;
  auto as_default = g.AsDefault();
  g.set_seed(42);
  Output u = ops::random::Uniform({1000});
  Session s1(g), s2(g);
  const std::vector<float> a1 = Values(u.Eval(s1)), a2 = Values(u.Eval(s1));
  const std::vector<float> b1 = Values(u.Eval(s2)), b2 = Values(u.Eval(s2));
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a2, b2);
  EXPECT_NE(a1, a2);
}

TEST(RandomSeedTest, GraphSeedMakesIdenticallyBuiltGraphsAgree) {
  auto build_and_run = [](std::optional<int64_t> graph_seed) {
    Graph g;
    auto as_default = g.AsDefault();
    if (graph_seed) g.set_seed(*graph_seed);
    ops::random::Normal({10});
    Output n = ops::random::Normal({10});
    Session s(g);
    return Values(n.Eval(s));
  };
  EXPECT_EQ(build_and_run(7), build_and_run(7));
  EXPECT_NE(build_and_run(7), build_and_run(8));
  // Unseeded: every session starts elsewhere.
  EXPECT_NE(build_and_run(std::nullopt), build_and_run(std::nullopt));
}

TEST(RandomSeedTest, TwoOpsWithGraphSeedOnlyDiffer) {
  Graph g;
  auto as_default = g.AsDefault();
  g.set_seed(1);
  Output a = ops::random::Uniform({100});
  Output b = ops::random::Uniform({100});
  EXPECT_NE(g.GetOperationByName("random_uniform/RandomUniform").GetAttr<int64_t>("seed2"),
            g.GetOperationByName("random_uniform_1/RandomUniform").GetAttr<int64_t>("seed2"));
  Session s(g);
  auto out = s.Run({}, {a, b});
  EXPECT_NE(Values(out[0]), Values(out[1]));
}

TEST(RandomSeedTest, OpSeedOnlyIsReproducible) {
  auto run = [] {
    Graph g;
    auto as_default = g.AsDefault();
    Output n = ops::random::TruncatedNormal({50}, 0.0, 1.0, DT_FLOAT, 123);
    EXPECT_EQ(g.GetOperationByName("truncated_normal/TruncatedNormal").GetAttr<int64_t>("seed"),
              ops::kDefaultGraphSeed);
    Session s(g);
    return Values(n.Eval(s));
  };
  EXPECT_EQ(run(), run());
}

TEST(RandomSeedTest, NumbersDoNotDependOnThreadCount) {
  Graph g;
  auto as_default = g.AsDefault();
  Output u = ops::random::Uniform({1 << 18}, 0.0, 1.0, DT_FLOAT, 5);
  Output t = ops::random::TruncatedNormal({1 << 17}, 0.0, 1.0, DT_FLOAT, 6);
  SessionOptions one;
  one.config.intra_op_parallelism_threads = 1;
  SessionOptions four;
  four.config.intra_op_parallelism_threads = 4;
  Session s1(g, one), s4(g, four);
  auto r1 = s1.Run({}, {u, t});
  auto r4 = s4.Run({}, {u, t});
  EXPECT_EQ(Values(r1[0]), Values(r4[0]));
  EXPECT_EQ(Values(r1[1]), Values(r4[1]));
}

// ---- Names and shapes ----

TEST(RandomOpsTest, NamesFollowTf) {
  Graph g;
  auto as_default = g.AsDefault();
  Output u = ops::random::Uniform({2, 3}, -1.0, 1.0);
  EXPECT_EQ(u.op().name(), "random_uniform");
  EXPECT_EQ(u.op().type(), "Add");
  EXPECT_NE(g.FindNode("random_uniform/RandomUniform"), nullptr);
  EXPECT_NE(g.FindNode("random_uniform/shape"), nullptr);
  EXPECT_NE(g.FindNode("random_uniform/min"), nullptr);
  EXPECT_NE(g.FindNode("random_uniform/max"), nullptr);
  EXPECT_NE(g.FindNode("random_uniform/sub"), nullptr);
  EXPECT_NE(g.FindNode("random_uniform/mul"), nullptr);
  EXPECT_EQ(u.shape().DebugString(), "[2,3]");
  Output n = ops::random::Normal({4});
  EXPECT_EQ(n.op().name(), "random_normal");
  EXPECT_NE(g.FindNode("random_normal/RandomStandardNormal"), nullptr);
  EXPECT_NE(g.FindNode("random_normal/stddev"), nullptr);
  ops::random::TruncatedNormal({4});
  EXPECT_NE(g.FindNode("truncated_normal/TruncatedNormal"), nullptr);
  Output u2 = ops::random::Uniform({2});
  EXPECT_EQ(u2.op().name(), "random_uniform_1");
  Output i = ops::random::Uniform({3}, 0, 10, DT_INT32);
  EXPECT_EQ(i.op().type(), "RandomUniformInt");
  EXPECT_EQ(i.dtype(), DT_INT32);
}

TEST(RandomOpsTest, ShapeErrorsAtBuildTime) {
  Graph g;
  auto as_default = g.AsDefault();
  EXPECT_THROW(ops::RandomUniform(ops::Const(3), DT_FLOAT), InvalidArgumentError);
  EXPECT_THROW(ops::RandomUniform(ops::Const<int32_t>({3}), DT_INT32), InvalidArgumentError);
  EXPECT_THROW(ops::random::Uniform({-1}), InvalidArgumentError);
  // A fed shape is checked when it runs.
  Output shape = ops::Placeholder(DT_INT32, {1});
  Output u = ops::RandomUniform(shape, DT_FLOAT);
  Session s(g);
  EXPECT_THROW(s.Run({{shape, Tensor::FromVector<int32_t>({-2})}}, {u}), InvalidArgumentError);
  EXPECT_EQ(s.Run({{shape, Tensor::FromVector<int32_t>({5})}}, {u})[0].NumElements(), 5);
}

// ---- Distributions ----

struct Moments {
  double mean, stddev, min, max;
};
template <typename T>
Moments MomentsOf(const Tensor& t) {
  double sum = 0, sq = 0, lo = 1e300, hi = -1e300;
  for (T v : t.flat<T>()) {
    const double d = static_cast<double>(v);
    sum += d;
    sq += d * d;
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  const double n = static_cast<double>(t.NumElements());
  const double mean = sum / n;
  return {mean, std::sqrt(sq / n - mean * mean), lo, hi};
}

TEST(RandomOpsTest, UniformDistribution) {
  Graph g;
  auto as_default = g.AsDefault();
  Output f = ops::random::Uniform({100000}, -2.0, 3.0, DT_FLOAT, 1);
  Output d = ops::random::Uniform({100000}, 0.0, 1.0, DT_DOUBLE, 2);
  Session s(g);
  auto out = s.Run({}, {f, d});
  Moments mf = MomentsOf<float>(out[0]);
  EXPECT_NEAR(mf.mean, 0.5, 0.03);
  EXPECT_NEAR(mf.stddev, 5.0 / std::sqrt(12.0), 0.02);
  EXPECT_GE(mf.min, -2.0);
  EXPECT_LT(mf.max, 3.0);
  Moments md = MomentsOf<double>(out[1]);
  EXPECT_NEAR(md.mean, 0.5, 0.01);
  EXPECT_GE(md.min, 0.0);
  EXPECT_LT(md.max, 1.0);
}

TEST(RandomOpsTest, NormalDistribution) {
  Graph g;
  auto as_default = g.AsDefault();
  Output f = ops::random::Normal({100001}, 1.0, 2.0, DT_FLOAT, 3);
  Output d = ops::random::Normal({100001}, 0.0, 1.0, DT_DOUBLE, 4);
  Session s(g);
  auto out = s.Run({}, {f, d});
  Moments mf = MomentsOf<float>(out[0]);
  EXPECT_NEAR(mf.mean, 1.0, 0.03);
  EXPECT_NEAR(mf.stddev, 2.0, 0.03);
  EXPECT_LT(mf.min, 1.0 - 2.0 * 3.5);  // tails exist
  Moments md = MomentsOf<double>(out[1]);
  EXPECT_NEAR(md.mean, 0.0, 0.02);
  EXPECT_NEAR(md.stddev, 1.0, 0.02);
}

TEST(RandomOpsTest, TruncatedNormalStaysWithinTwoStddevs) {
  Graph g;
  auto as_default = g.AsDefault();
  Output f = ops::random::TruncatedNormal({100003}, 5.0, 0.5, DT_FLOAT, 8);
  Output d = ops::random::TruncatedNormal({10001}, 0.0, 1.0, DT_DOUBLE, 9);
  Session s(g);
  auto out = s.Run({}, {f, d});
  Moments mf = MomentsOf<float>(out[0]);
  EXPECT_NEAR(mf.mean, 5.0, 0.01);
  // The stddev of a standard normal truncated at ±2 is 0.87962566.
  EXPECT_NEAR(mf.stddev, 0.5 * 0.8796, 0.01);
  EXPECT_GE(mf.min, 4.0);
  EXPECT_LE(mf.max, 6.0);
  EXPECT_LT(mf.min, 4.05);
  Moments md = MomentsOf<double>(out[1]);
  EXPECT_GT(md.min, -2.0);
  EXPECT_LT(md.max, 2.0);
  EXPECT_NEAR(md.stddev, 0.8796, 0.03);
}

TEST(RandomOpsTest, UniformIntCoversRange) {
  Graph g;
  auto as_default = g.AsDefault();
  Output i32 = ops::random::Uniform({10000}, -3, 4, DT_INT32, 1);
  Output i64 = ops::random::Uniform({10000}, 0, 5, DT_INT64, 1);
  Output bad = ops::RandomUniformInt(ops::Const<int32_t>({2}), ops::Const(5), ops::Const(5));
  Session s(g);
  auto out = s.Run({}, {i32, i64});
  std::set<int32_t> seen32(out[0].flat<int32_t>().begin(), out[0].flat<int32_t>().end());
  EXPECT_EQ(seen32, (std::set<int32_t>{-3, -2, -1, 0, 1, 2, 3}));
  std::set<int64_t> seen64(out[1].flat<int64_t>().begin(), out[1].flat<int64_t>().end());
  EXPECT_EQ(seen64, (std::set<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_THROW(bad.Eval(s), InvalidArgumentError);
}

TEST(RandomOpsTest, ShuffleIsAPermutationOfRows) {
  Graph g;
  auto as_default = g.AsDefault();
  std::vector<int32_t> rows(200);
  for (int i = 0; i < 200; ++i) rows[i] = i;
  std::vector<int32_t> matrix;
  for (int i = 0; i < 50; ++i) {
    matrix.push_back(i);
    matrix.push_back(-i);
  }
  Output v = ops::random::Shuffle(ops::Const(Tensor::FromVector<int32_t>(rows)), 17);
  Output m = ops::random::Shuffle(ops::Const(Tensor::FromVector<int32_t>(matrix, TensorShape({50, 2}))), 18);
  Output scalar = ops::random::Shuffle(ops::Const(3.0f));
  Session s(g);
  auto out = s.Run({}, {v, m, scalar});
  std::vector<int32_t> shuffled(out[0].flat<int32_t>().begin(), out[0].flat<int32_t>().end());
  EXPECT_NE(shuffled, rows);
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, rows);
  auto mf = out[1].flat<int32_t>();
  std::set<int32_t> firsts;
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(mf[2 * i + 1], -mf[2 * i]);  // rows move whole
    firsts.insert(mf[2 * i]);
  }
  EXPECT_EQ(firsts.size(), 50u);
  EXPECT_EQ(out[2].scalar<float>(), 3.0f);
  // A second run gives another permutation.
  Tensor second = v.Eval(s);
  std::vector<int32_t> again(second.flat<int32_t>().begin(), second.flat<int32_t>().end());
  EXPECT_NE(again, std::vector<int32_t>(out[0].flat<int32_t>().begin(), out[0].flat<int32_t>().end()));
}

// ---- Generator positions in checkpoints ----

TEST(RandomOpStatesTest, RestoredPositionsContinueTheSequence) {
  Graph g;
  auto as_default = g.AsDefault();
  g.set_seed(3);
  Output u = ops::random::Uniform({100});
  Output n = ops::random::Normal({5});
  auto saveable = ops::MakeSaveableRandomOpStates();
  Output states = saveable->specs[0].tensor;
  EXPECT_EQ(saveable->specs[0].name, "RandomOpStates");
  Output restored = ops::Placeholder(DT_STRING, PartialTensorShape({}));
  Operation restore = saveable->restore({restored});

  Session first(g);
  for (int i = 0; i < 3; ++i) first.Run({}, {u, n});
  const Tensor saved = first.Run({}, {states})[0];
  const std::vector<Tensor> next = first.Run({}, {u, n});

  // Restored before the kernels first run, and after they ran (and drew) already.
  for (bool run_first : {false, true}) {
    SCOPED_TRACE(run_first ? "after a run" : "before any run");
    Session second(g);
    if (run_first) second.Run({}, {u, n});
    second.Run({{restored, saved}}, {}, {restore});
    const std::vector<Tensor> got = second.Run({}, {u, n});
    EXPECT_EQ(Values(got[0]), Values(next[0]));
    EXPECT_EQ(Values(got[1]), Values(next[1]));
  }
  // Without the restore a new session starts from the seeds.
  Session fresh(g);
  EXPECT_NE(Values(fresh.Run({}, {u})[0]), Values(next[0]));
}

TEST(RandomOpStatesTest, GarbageStatesAreDataLossNamingTheLine) {
  Graph g;
  auto as_default = g.AsDefault();
  Output u = ops::random::Uniform({3}, 0.0, 1.0, DT_FLOAT, /*seed=*/1);
  auto saveable = ops::MakeSaveableRandomOpStates();
  Output restored = ops::Placeholder(DT_STRING, PartialTensorShape({}));
  Operation restore = saveable->restore({restored});
  Session sess(g);
  sess.Run({}, {u});
  const std::string good = sess.Run({}, {saveable->specs[0].tensor})[0].scalar<std::string>();
  ASSERT_NE(good.find("random_uniform/RandomUniform\t"), std::string::npos) << good;
  for (const std::string& bad : {good.substr(0, good.size() - 1), std::string("a\t1 2 3\n"),
                                 std::string("\t1 2 3 4 5 6\n"), good + "b\t1 2 3 4 5 x\n"}) {
    SCOPED_TRACE(bad);
    try {
      sess.Run({{restored, Tensor::Scalar<std::string>(bad)}}, {}, {restore});
      FAIL();
    } catch (const DataLossError& e) {
      EXPECT_NE(std::string(e.what()).find("Random op states: line "), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace flowtrain
