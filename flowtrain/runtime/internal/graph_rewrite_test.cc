// The plan's fusions (graph_rewrite.h): fused runs against the same graph run with
// ConfigProto::remapping off, which groups fuse (seen in the traces' timeline labels), and
// the cases that must not fuse.
#include "flowtrain/runtime/internal/graph_rewrite.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/random_ops.h"
#include "flowtrain/ops/training_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/gradient_checker.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

Tensor RandomFloats(const TensorShape& shape, uint64_t seed, float scale = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  Tensor t(DT_FLOAT, shape);
  for (float& v : t.flat<float>()) v = dist(rng);
  return t;
}

Tensor Labels(int64_t batch, int64_t classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor t(DT_INT64, TensorShape({batch}));
  for (int64_t& v : t.flat<int64_t>()) v = static_cast<int64_t>(rng() % classes);
  return t;
}

SessionOptions Remapping(bool on) {
  SessionOptions options;
  options.config.remapping = on;
  options.config.intra_op_parallelism_threads = 2;
  options.config.inter_op_parallelism_threads = 2;
  return options;
}

// "name = Op" for every node a traced run executed.
std::vector<std::string> TracedNodes(Session& sess, const FeedList& feeds, const std::vector<Output>& fetches,
                                     const std::vector<Operation>& targets) {
  RunOptions options;
  options.trace_level = RunOptions::kFullTrace;
  RunMetadata metadata;
  sess.Run(feeds, fetches, targets, &options, &metadata);
  std::vector<std::string> labels;
  for (const auto& dev : metadata.step_stats().dev_stats()) {
    for (const auto& node : dev.node_stats()) {
      std::string label = node.timeline_label();
      labels.push_back(label.substr(0, label.find('(')));
    }
  }
  std::sort(labels.begin(), labels.end());
  return labels;
}

bool Has(const std::vector<std::string>& labels, const std::string& label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

void ExpectClose(const Tensor& got, const Tensor& want, double tolerance, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const float* g = got.data<float>();
  const float* w = want.data<float>();
  for (int64_t i = 0; i < got.NumElements(); ++i) {
    ASSERT_NEAR(g[i], w[i], tolerance * (1 + std::abs(w[i]))) << what << " at " << i;
  }
}

// An MLP in-hidden-hidden-classes with ReLUs, softmax cross-entropy and SGD, built from ops as
// TF's layers and GradientDescentOptimizer build it (with `gated` gradients, as optimizers
// gate them).
struct Mlp {
  static constexpr int64_t kIn = 600, kHidden = 96, kClasses = 10, kBatch = 70;
  Graph g;
  ScopeGuard as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, {kBatch, kIn}, "x");
  Output y = ops::Placeholder(DT_INT64, {kBatch}, "y");
  std::vector<Variable> vars;
  Output loss;
  Operation train;

  explicit Mlp(bool gated = false) {
    const int64_t sizes[] = {kIn, kHidden, kHidden, kClasses};
    Output h = x;
    for (int layer = 0; layer < 3; ++layer) {
      auto scope = g.NameScope(layer == 0 ? "dense" : "dense_" + std::to_string(layer));
      Variable w(ops::Const(RandomFloats(TensorShape({sizes[layer], sizes[layer + 1]}), 10 + layer,
                                         1 / std::sqrt(static_cast<float>(sizes[layer])))),
                 {.name = "kernel"});
      Variable b(ops::Const(RandomFloats(TensorShape({sizes[layer + 1]}), 20 + layer, 0.1f)),
                 {.name = "bias"});
      vars.push_back(w);
      vars.push_back(b);
      h = ops::BiasAdd(ops::MatMul(h, w), b);
      if (layer < 2) h = ops::Relu(h);
    }
    loss = ops::ReduceMean(ops::SparseSoftmaxCrossEntropyWithLogits(y, h));
    std::vector<Output> values;
    for (const Variable& v : vars) values.push_back(v.value());
    std::vector<Output> grads = ops::Gradients({loss}, values, {}, "gradients", gated);
    std::vector<Operation> updates;
    for (size_t i = 0; i < vars.size(); ++i) {
      updates.push_back(ops::ApplyGradientDescent(vars[i].ref(), ops::Const(0.1f), grads[i], false,
                                                  "update_" + std::to_string(i))
                            .op());
    }
    train = ops::Group(updates, "train");
  }

  FeedList Batch(int step) const {
    return {{x, RandomFloats(TensorShape({kBatch, kIn}), 100 + step)},
            {y, Labels(kBatch, kClasses, 200 + step)}};
  }
};

void ExpectFusedTrainingStepsMatchUnfused(bool gated) {
  SCOPED_TRACE(gated ? "gated gradients" : "plain gradients");
  Mlp mlp(gated);
  // The hidden layers' MatMuls have both gradients used (of the layer below and of the kernel).
  EXPECT_EQ(mlp.g.FindNode("gradients/dense_1/MatMul_grad/tuple/group_deps") != nullptr, gated);
  Session fused(mlp.g, Remapping(true)), plain(mlp.g, Remapping(false));
  for (Session* s : {&fused, &plain}) s->Run({}, {}, {ops::GlobalVariablesInitializer()});

  // The fused plan: _FusedMatMul named after each layer's last node, the hidden layers'
  // weight gradients applied by _FusedMatMulApplyGradientDescent, the input gradients of the
  // two upper layers masked by the ReLUs below as _FusedMatMulReluGrad. Only the output
  // layer's 10-column weight gradient stays a MatMul (too narrow to gain from accumulating
  // into the variable).
  const std::vector<std::string> traced = TracedNodes(fused, mlp.Batch(0), {mlp.loss}, {mlp.train});
  EXPECT_TRUE(Has(traced, "dense/Relu = _FusedMatMul")) << ::testing::PrintToString(traced);
  EXPECT_TRUE(Has(traced, "dense_1/Relu = _FusedMatMul"));
  EXPECT_TRUE(Has(traced, "dense_2/BiasAdd = _FusedMatMul"));
  EXPECT_FALSE(Has(traced, "dense/MatMul = MatMul"));
  EXPECT_FALSE(Has(traced, "dense/BiasAdd = BiasAdd"));
  int fused_updates = 0, fused_relu_grads = 0, matmuls = 0;
  for (const std::string& label : traced) {
    fused_updates += label.ends_with("= _FusedMatMulApplyGradientDescent");
    fused_relu_grads += label.ends_with("= _FusedMatMulReluGrad");
    matmuls += label.ends_with("= MatMul");
  }
  EXPECT_EQ(fused_updates, 2);
  EXPECT_EQ(fused_relu_grads, 2);
  EXPECT_EQ(matmuls, 1);
  EXPECT_TRUE(Has(traced, "update_0 = _FusedMatMulApplyGradientDescent"));
  EXPECT_TRUE(Has(traced, "update_4 = ApplyGradientDescent"));  // the output layer's kernel
  const std::vector<std::string> plain_traced = TracedNodes(plain, mlp.Batch(0), {mlp.loss}, {mlp.train});
  EXPECT_TRUE(Has(plain_traced, "dense/MatMul = MatMul"));
  for (const std::string& label : plain_traced) EXPECT_EQ(label.find("_Fused"), std::string::npos) << label;

  for (int step = 1; step < 6; ++step) {
    const Tensor fused_loss = fused.Run(mlp.Batch(step), {mlp.loss}, {mlp.train})[0];
    const Tensor plain_loss = plain.Run(mlp.Batch(step), {mlp.loss}, {mlp.train})[0];
    ExpectClose(fused_loss, plain_loss, 1e-5, "loss at step " + std::to_string(step));
  }
  // Training moved the variables (the comparison is not of untouched values).
  const Tensor initial = RandomFloats(TensorShape({Mlp::kIn, Mlp::kHidden}), 10, 1 / std::sqrt(600.0f));
  const Tensor trained = mlp.vars[0].value().Eval(fused);
  double moved = 0;
  for (int64_t i = 0; i < initial.NumElements(); ++i)
    moved += std::abs(trained.data<float>()[i] - initial.data<float>()[i]);
  EXPECT_GT(moved, 1.0);
  for (const Variable& v : mlp.vars) {
    ExpectClose(v.value().Eval(fused), v.value().Eval(plain), 1e-5, v.op().name());
  }
}

TEST(GraphRewriteTest, FusedTrainingStepsMatchUnfused) { ExpectFusedTrainingStepsMatchUnfused(false); }

// Gated gradients (ops::Tuple's identities after a gate, as optimizers build them) fuse the same:
// a group takes the identity in and the gate waits for the group.
TEST(GraphRewriteTest, GatedGradientsFuseAsPlainOnes) { ExpectFusedTrainingStepsMatchUnfused(true); }

// A MatMul whose output is fetched, or used by another node of the run, stays unfused; a
// fetched BiasAdd ends its group (the Relu runs alone).
TEST(GraphRewriteTest, TensorsUsedOutsideAGroupAreNotFused) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, {5, 40}, "x");
  Output w = ops::Const(RandomFloats(TensorShape({40, 7}), 1), "w");
  const Tensor b_value = RandomFloats(TensorShape({7}), 2);
  Output b = ops::Const(b_value, "b");
  Output product = ops::MatMul(x, w, false, false, "product");
  Output biased = ops::BiasAdd(product, b, "biased");
  Output relu = ops::Relu(biased, "relu");
  Output other = ops::ReduceSum(product, {0, 1});
  const FeedList feeds = {{x, RandomFloats(TensorShape({5, 40}), 3)}};
  Session fused(g, Remapping(true)), plain(g, Remapping(false));

  std::vector<std::string> traced = TracedNodes(fused, feeds, {relu, product}, {});
  EXPECT_TRUE(Has(traced, "product = MatMul")) << ::testing::PrintToString(traced);
  EXPECT_TRUE(Has(traced, "relu = Relu"));
  traced = TracedNodes(fused, feeds, {relu, other}, {});
  EXPECT_TRUE(Has(traced, "product = MatMul")) << ::testing::PrintToString(traced);
  traced = TracedNodes(fused, feeds, {relu, biased}, {});
  EXPECT_TRUE(Has(traced, "biased = _FusedMatMul")) << ::testing::PrintToString(traced);
  EXPECT_TRUE(Has(traced, "relu = Relu"));
  traced = TracedNodes(fused, feeds, {relu}, {});
  EXPECT_TRUE(Has(traced, "relu = _FusedMatMul")) << ::testing::PrintToString(traced);

  for (const std::vector<Output>& fetches :
       std::vector<std::vector<Output>>{{relu, product}, {relu, other}, {relu, biased}, {relu}}) {
    const std::vector<Tensor> got = fused.Run(feeds, fetches);
    const std::vector<Tensor> want = plain.Run(feeds, fetches);
    for (size_t i = 0; i < got.size(); ++i) ExpectClose(got[i], want[i], 1e-6, fetches[i].name());
  }
  // A fed product is not computed at all: nothing to fuse, the fed value is used.
  Tensor fed_product = RandomFloats(TensorShape({5, 7}), 4);
  const Tensor got = fused.Run({{product, fed_product}}, {relu})[0];
  for (int64_t i = 0; i < got.NumElements(); ++i) {
    const float want = std::max(0.0f, fed_product.data<float>()[i] + b_value.data<float>()[i % 7]);
    ASSERT_NEAR(got.data<float>()[i], want, 1e-6);
  }
}

// Products big enough to split over the intra-op threads, by rows and by columns, masked by
// ReluGrad's features in the fused kernel: the same values as MatMul then ReluGrad.
TEST(GraphRewriteTest, FusedReluGradMatchesUnfusedOnSplitProducts) {
  struct Shape {
    int64_t m, k, n;
  };
  for (const Shape& shape : {Shape{256, 512, 300}, Shape{600, 256, 64}, Shape{7, 5, 3}}) {
    Graph g;
    auto as_default = g.AsDefault();
    Output dy = ops::Placeholder(DT_FLOAT, {shape.m, shape.k}, "dy");
    Output w = ops::Placeholder(DT_FLOAT, {shape.n, shape.k}, "w");
    Output features = ops::Placeholder(DT_FLOAT, {shape.m, shape.n}, "features");
    Output grad = ops::ReluGrad(ops::MatMul(dy, w, false, true), features, "grad");
    const FeedList feeds = {{dy, RandomFloats(TensorShape({shape.m, shape.k}), 11)},
                            {w, RandomFloats(TensorShape({shape.n, shape.k}), 12)},
                            {features, RandomFloats(TensorShape({shape.m, shape.n}), 13)}};
    Session fused(g, Remapping(true)), plain(g, Remapping(false));
    EXPECT_TRUE(Has(TracedNodes(fused, feeds, {grad}, {}), "grad = _FusedMatMulReluGrad"));
    const Tensor got = fused.Run(feeds, {grad})[0];
    const Tensor want = plain.Run(feeds, {grad})[0];
    ExpectClose(got, want, 1e-5, "ReluGrad of the product");
    int64_t zeros = 0;
    for (int64_t i = 0; i < got.NumElements(); ++i) zeros += got.data<float>()[i] == 0;
    EXPECT_GT(zeros, got.NumElements() / 4);  // about half the features are negative
  }
}

// A gradient that something else also reads (a clipping norm, a summary) is materialised and
// applied by ApplyGradientDescent itself; the result is the same.
TEST(GraphRewriteTest, GradientReadElsewhereIsNotFused) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = ops::Placeholder(DT_FLOAT, {30, 20}, "a");
  Output dy = ops::Placeholder(DT_FLOAT, {30, 48}, "dy");
  Variable var(ops::Const(RandomFloats(TensorShape({20, 48}), 5)), {.name = "var"});
  Output grad = ops::MatMul(a, dy, true, false, "grad");
  Output norm = ops::ReduceSum(ops::Square(grad), {0, 1}, false, "norm");
  Output update = ops::ApplyGradientDescent(var.ref(), ops::Const(0.5f), grad, false, "update");
  const FeedList feeds = {{a, RandomFloats(TensorShape({30, 20}), 6)},
                          {dy, RandomFloats(TensorShape({30, 48}), 7)}};
  Session fused(g, Remapping(true)), plain(g, Remapping(false));
  for (Session* s : {&fused, &plain}) s->Run({}, {}, {ops::GlobalVariablesInitializer()});

  std::vector<std::string> traced = TracedNodes(fused, feeds, {norm}, {update.op()});
  EXPECT_TRUE(Has(traced, "grad = MatMul")) << ::testing::PrintToString(traced);
  EXPECT_TRUE(Has(traced, "update = ApplyGradientDescent"));
  traced = TracedNodes(fused, feeds, {grad}, {update.op()});
  EXPECT_TRUE(Has(traced, "update = ApplyGradientDescent")) << ::testing::PrintToString(traced);
  traced = TracedNodes(fused, feeds, {}, {update.op()});
  EXPECT_TRUE(Has(traced, "update = _FusedMatMulApplyGradientDescent")) << ::testing::PrintToString(traced);
  plain.Run(feeds, {norm}, {update.op()});
  plain.Run(feeds, {grad}, {update.op()});
  plain.Run(feeds, {}, {update.op()});
  ExpectClose(var.value().Eval(fused), var.value().Eval(plain), 1e-5, "var");
}

// The fused update's ref output is ApplyGradientDescent's: a fetch of it and a read that
// control-depends on it see the updated variable, and the value fetched before an update
// does not change under the caller.
TEST(GraphRewriteTest, FusedUpdateKeepsApplyGradientDescentOutputs) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = ops::Placeholder(DT_FLOAT, {16, 4}, "a");
  Output dy = ops::Placeholder(DT_FLOAT, {16, 40}, "dy");
  Variable var(ops::Const(RandomFloats(TensorShape({4, 40}), 8)), {.name = "var"});
  Output update =
      ops::ApplyGradientDescent(var.ref(), ops::Const(0.25f), ops::MatMul(a, dy, true), false, "update");
  Output after;
  {
    auto deps = g.ControlDependencies({update.op()});
    after = ops::Identity(var.ref(), "after");  // reads the variable when it runs
  }
  const Tensor a_value = RandomFloats(TensorShape({16, 4}), 9),
               dy_value = RandomFloats(TensorShape({16, 40}), 10);
  const FeedList feeds = {{a, a_value}, {dy, dy_value}};
  Session sess(g, Remapping(true));
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  const Tensor before = var.value().Eval(sess);
  const Tensor before_copy = before.DeepCopy();
  EXPECT_TRUE(Has(TracedNodes(sess, feeds, {update}, {}), "update = _FusedMatMulApplyGradientDescent"));
  Tensor want = before_copy.DeepCopy();
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 40; ++j) {
      double grad = 0;
      for (int r = 0; r < 16; ++r)
        grad += a_value.data<float>()[r * 4 + i] * dy_value.data<float>()[r * 40 + j];
      want.data<float>()[i * 40 + j] -= static_cast<float>(0.25 * grad);
    }
  }
  ExpectClose(var.value().Eval(sess), want, 1e-5, "after one traced update");
  ExpectClose(before, before_copy, 0, "the value fetched before the update");
  const std::vector<Tensor> out = sess.Run(feeds, {update, after});
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    double grad_i = before_copy.data<float>()[i] - want.data<float>()[i];
    want.data<float>()[i] -= static_cast<float>(grad_i);
  }
  ExpectClose(out[0], want, 1e-5, "the fetched update");
  ExpectClose(out[1], want, 1e-5, "a read after the update");
}

// Concurrent steps updating one variable through fused updates lose none of them (the
// variable is locked for the product, as use_locking asks).
TEST(GraphRewriteTest, ConcurrentFusedUpdatesWithUseLockingLoseNone) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = ops::Placeholder(DT_FLOAT, {64, 128}, "a");
  Output dy = ops::Placeholder(DT_FLOAT, {64, 96}, "dy");
  Tensor zeros(DT_FLOAT, TensorShape({128, 96}));
  for (float& v : zeros.flat<float>()) v = 0;
  Variable var(ops::Const(zeros), {.name = "var"});
  Output update =
      ops::ApplyGradientDescent(var.ref(), ops::Const(1.0f), ops::MatMul(a, dy, true), true, "update");
  // a^T dy = -1 everywhere (a = 1/64, dy = -1): every update adds exactly 1.
  Tensor a_value(DT_FLOAT, TensorShape({64, 128})), dy_value(DT_FLOAT, TensorShape({64, 96}));
  for (float& v : a_value.flat<float>()) v = 1.0f / 64;
  for (float& v : dy_value.flat<float>()) v = -1.0f;
  Session sess(g, Remapping(true));
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  EXPECT_TRUE(Has(TracedNodes(sess, {{a, a_value}, {dy, dy_value}}, {}, {update.op()}),
                  "update = _FusedMatMulApplyGradientDescent"));
  constexpr int kThreads = 4, kSteps = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kSteps; ++i) sess.Run({{a, a_value}, {dy, dy_value}}, {}, {update.op()});
    });
  }
  for (std::thread& t : threads) t.join();
  const Tensor value = var.value().Eval(sess);
  for (int64_t i = 0; i < value.NumElements(); ++i)
    ASSERT_EQ(value.data<float>()[i], 1 + kThreads * kSteps) << i;
}

// Gradients through fused layers (float64: the fused kernel's double path) match finite
// differences.
TEST(GraphRewriteTest, GradientCheckThroughFusedLayers) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, {6, 5}, "x");
  Output w = ops::Placeholder(DT_DOUBLE, {5, 4}, "w");
  Output b = ops::Placeholder(DT_DOUBLE, {4}, "b");
  Output y = ops::Relu(ops::BiasAdd(ops::MatMul(x, w), b));
  Output out = ops::BiasAdd(ops::MatMul(y, w, false, true), ops::Const({0.5, -0.5, 0.25, 1.0, 2.0}));
  const double error = ComputeGradientError(
      {x, w, b}, {RandomDoubles({6, 5}, 1), RandomDoubles({5, 4}, 2), RandomDoubles({4}, 3, 0.2, 0.6)}, out);
  EXPECT_LT(error, 1e-6);
  Session sess(g);
  const FeedList feeds = {
      {x, RandomDoubles({6, 5}, 1)}, {w, RandomDoubles({5, 4}, 2)}, {b, RandomDoubles({4}, 3)}};
  const std::vector<std::string> traced = TracedNodes(sess, feeds, {out}, {});
  int fused = 0;
  for (const std::string& label : traced) fused += label.ends_with("= _FusedMatMul");
  EXPECT_EQ(fused, 2) << ::testing::PrintToString(traced);
}

// A node only a control edge waits for, whose outputs no running kernel reads, runs as a NoOp
// (TF's dependency optimizer), as a first layer's input gradient grouped with its filter
// gradient does; what has effects runs whatever reads it.
TEST(GraphRewriteTest, KernelsWhoseOutputsNothingReadsAreSkipped) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape::Unknown(), "x");
  Output mismatched = ops::MatMul(x, x, false, false, "mismatched");  // fed [2, 3]: fails if run
  Output unread = ops::Relu(mismatched, "unread");
  Variable counter(Tensor::FromVector(std::vector<float>{0}, TensorShape({1})));
  Output bump = counter.AssignAdd(ops::Const<float>({1}));
  Output noise = ops::RandomUniform(ops::Const<int32_t>({2}), DT_FLOAT);
  Operation group = ops::Group({unread.op(), bump.op(), noise.op()});
  const FeedList feeds = {{x, RandomFloats({2, 3}, 7)}};

  Session sess(g);
  sess.Run({}, {}, {counter.initializer()});
  const std::vector<std::string> traced = TracedNodes(sess, feeds, {}, {group});
  EXPECT_TRUE(Has(traced, "mismatched = NoOp")) << ::testing::PrintToString(traced);
  EXPECT_TRUE(Has(traced, "unread = NoOp")) << ::testing::PrintToString(traced);
  EXPECT_TRUE(Has(traced, "AssignAdd = AssignAdd")) << ::testing::PrintToString(traced);
  EXPECT_TRUE(Has(traced, "RandomUniform = RandomUniform")) << ::testing::PrintToString(traced);
  EXPECT_EQ(counter.value().Eval(sess).data<float>()[0], 1);
  // Fetched, it runs (and fails).
  testing::ExpectInvalidArgument([&] { sess.Run(feeds, {unread}, {}); }, {"mismatched"});

  SessionOptions every_kernel;
  every_kernel.config.dependency_optimization = false;
  Session plain(g, every_kernel);
  testing::ExpectInvalidArgument([&] { plain.Run(feeds, {}, {group}); }, {"mismatched"});
}

}  // namespace
}  // namespace flowtrain
