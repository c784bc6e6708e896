#include "flowtrain/runtime/session.h"

#include <thread>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/state_ops.h"
#include "flowtrain/ops/variables.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

// ---- Test-only ops and kernels ----

// Emits an 8 MiB float tensor.
FT_REGISTER_OP("SessionTestBig").Output("out: float").SetShapeFn(shape_fns::UnknownShape);
class BigKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = ctx->allocate_output(0, TensorShape({2 << 20}));
    for (float& v : out->flat<float>()) v = 1.0f;
  }
};
FT_REGISTER_KERNEL("SessionTestBig", BigKernel);

// Emits the first element of its input.
FT_REGISTER_OP("SessionTestFirst").Input("x: float").Output("y: float").SetShapeFn(shape_fns::ScalarShape);
class FirstKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, Tensor::Scalar<float>(ctx->input(0).flat<float>()[0]));
  }
};
FT_REGISTER_KERNEL("SessionTestFirst", FirstKernel);

// Emits the allocator's bytes in use when it runs.
FT_REGISTER_OP("SessionTestLiveBytes")
    .Input("x: float")
    .Output("bytes: int64")
    .SetShapeFn(shape_fns::ScalarShape);
class LiveBytesKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, Tensor::Scalar<int64_t>(DefaultAllocatorStats().bytes_in_use));
  }
};
FT_REGISTER_KERNEL("SessionTestLiveBytes", LiveBytesKernel);

// Blocks until the run is cancelled or its deadline passes.
FT_REGISTER_OP("SessionTestBlock").Output("out: float").SetIsStateful().SetShapeFn(shape_fns::ScalarShape);
class BlockKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::mutex mu;
    std::condition_variable cv;
    auto token = ctx->cancellation_manager()->RegisterCallback([&] {
      std::lock_guard<std::mutex> lock(mu);
      cv.notify_all();
    });
    if (!token) Cancelled("cancelled before blocking");
    std::unique_lock<std::mutex> lock(mu);
    const bool woke =
        cv.wait_until(lock, ctx->deadline(), [&] { return ctx->cancellation_manager()->IsCancelled(); });
    lock.unlock();
    ctx->cancellation_manager()->DeregisterCallback(*token);
    if (!woke) DeadlineExceeded("Timed out waiting in ", name());
    Cancelled("Blocking op ", name(), " was cancelled");
  }
};
FT_REGISTER_KERNEL("SessionTestBlock", BlockKernel);

// Fails with a message.
FT_REGISTER_OP("SessionTestFail").Input("x: float").Output("y: float").SetShapeFn(shape_fns::UnchangedShape);
class FailKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override { InvalidArgument("this kernel always fails"); }
};
FT_REGISTER_KERNEL("SessionTestFail", FailKernel);

// ---- Tests ----

TEST(Session, RunsArithmetic) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = ops::Const<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  Output b = ops::Const<float>({1, 0, 0, 1}, TensorShape({2, 2}));
  Output product = ops::MatMul(a, b, false, true);
  Output sum = product + ops::Const(10.0f);
  Output scaled = ops::Mul(sum, ops::Const<float>({1, 2}));
  Session sess(g);
  std::vector<Tensor> out = sess.Run({}, {product, sum, scaled});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].flat<float>()[1], 2.0f);
  EXPECT_EQ(out[1].flat<float>()[3], 14.0f);
  EXPECT_EQ(out[2].shape(), TensorShape({2, 2}));
  EXPECT_EQ(out[2].flat<float>()[1], 24.0f);
  EXPECT_EQ(sum.Eval(sess).flat<float>()[0], 11.0f);
}

TEST(Session, FeedsFetchesAndPruning) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({-1, 2}), "x");
  Output unused = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "unused");
  Output y = x * ops::Const(2.0f);
  Output z = unused + ops::Const(1.0f);
  Session sess(g);
  Tensor batch = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  Tensor out = sess.Run({{x, batch}}, {y})[0];
  EXPECT_EQ(out.shape(), TensorShape({3, 2}));
  EXPECT_EQ(out.flat<float>()[5], 12.0f);
  // A fetched tensor that is fed returns the fed value, unchanged and uncopied.
  Tensor fed = sess.Run({{x, batch}}, {x})[0];
  EXPECT_TRUE(fed.SharesBufferWith(batch));
  // Feeding an intermediate tensor skips what computes it.
  Tensor z_out = sess.Run({{z, Tensor::Scalar<float>(5)}}, {z})[0];
  EXPECT_EQ(z_out.scalar<float>(), 5.0f);
  (void)z;
}

TEST(Session, FeedAndPlaceholderErrorsNameTheTensor) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({-1, 64}), "images");
  Output y = x * ops::Const(2.0f);
  Session sess(g);
  try {
    sess.Run({}, {y});
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "You must feed a value for placeholder tensor 'images' with dtype float and "
                  "shape [?,64]"),
              std::string::npos)
        << e.what();
  }
  try {
    sess.Run({{x, Tensor(DT_INT64, TensorShape({1, 64}))}}, {y});
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(), "Cannot feed value of type int64 for Tensor 'images:0', which has type float");
  }
  try {
    sess.Run({{x, Tensor(DT_FLOAT, TensorShape({3}))}}, {y});
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(), "Cannot feed value of shape [3] for Tensor 'images:0', which has shape [?,64]");
  }
}

TEST(Session, TensorOfAnotherGraphIsRejected) {
  Graph g1, g2;
  Output c1, c2;
  {
    auto d = g1.AsDefault();
    c1 = ops::Const(int32_t{42});
  }
  {
    auto d = g2.AsDefault();
    c2 = ops::Const(3.14f);
  }
  Session sess(g2);
  EXPECT_FLOAT_EQ(c2.Eval(sess).scalar<float>(), 3.14f);
  try {
    c1.Eval(sess);
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(),
                 "Fetch argument Tensor(\"Const:0\", shape=(), dtype=int32) cannot be interpreted "
                 "as a Tensor. (Tensor Tensor(\"Const:0\", shape=(), dtype=int32) is not an "
                 "element of this graph.)");
  }
  EXPECT_THROW(sess.Run({{c1, Tensor::Scalar<int32_t>(1)}}, {c2}), InvalidArgumentError);
  EXPECT_THROW(sess.Run({}, {}, {c1.op()}), InvalidArgumentError);
}

// TF1's `sess.run(init_op)`: a fetched Operation runs as a target, and its slot in the
// results is an empty Tensor (TF's None) — also for an op that has outputs.
TEST(Session, FetchedOperationRunsAndReturnsAnEmptyTensor) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable v(Tensor::Scalar<float>(1.5f), {.name = "v"});
  Operation init = ops::GlobalVariablesInitializer();
  ASSERT_EQ(init.num_outputs(), 0);
  Output bump = v.AssignAdd(ops::Const(1.0f));
  Session sess(g);
  std::vector<Tensor> out = sess.Run({}, {init});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].IsInitialized());
  EXPECT_FLOAT_EQ(v.value().Eval(sess).scalar<float>(), 1.5f);  // the initializer ran

  // An op with an output, fetched as an Operation, runs and returns nothing; fetched as its
  // output it returns the value. Both in one run, with tensors around them, keep the order.
  out = sess.Run({}, {v.value(), bump.op(), v});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FALSE(out[1].IsInitialized());
  EXPECT_FLOAT_EQ(v.value().Eval(sess).scalar<float>(), 2.5f);  // AssignAdd ran once
  out = sess.Run({}, {bump.op().output(0)});
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 3.5f);

  // Fetched and also a target, or fetched twice: it runs once.
  out = sess.Run({}, {bump.op(), bump.op()}, {bump.op()});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].IsInitialized());
  EXPECT_FALSE(out[1].IsInitialized());
  EXPECT_FLOAT_EQ(v.value().Eval(sess).scalar<float>(), 4.5f);

  // An empty Tensor read as a value is an error naming what is wrong, not a crash.
  testing::ExpectInvalidArgument([&] { (void)out[0].scalar<float>(); }, {"empty"});
  testing::ExpectInvalidArgument([&] { (void)out[0].flat<float>(); }, {"empty"});

  // A null Operation, or one of another graph, is rejected before anything runs.
  testing::ExpectInvalidArgument([&] { sess.Run({}, {Operation()}); }, {"Fetch argument <empty>"});
  Graph other;
  Operation foreign;
  {
    auto other_default = other.AsDefault();
    foreign = ops::NoOp("foreign");
  }
  testing::ExpectInvalidArgument([&] { sess.Run({}, {foreign}); }, {"is not an element of this graph"});
}

// A FetchList takes the forms existing code passes: a braced list, a std::vector<Output>,
// a std::vector<Fetch>; indexing past its end is an error.
TEST(Session, FetchListAcceptsVectorsOfOutputsAndChecksItsIndex) {
  Graph g;
  auto as_default = g.AsDefault();
  Output c = ops::Const(2.0f, "c");
  Operation noop = ops::NoOp("nothing");
  Session sess(g);
  const std::vector<Output> tensors = {c, c};
  EXPECT_EQ(sess.Run({}, tensors).size(), 2u);
  const std::vector<Fetch> mixed = {c, noop};
  std::vector<Tensor> out = sess.Run({}, mixed);
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 2.0f);
  EXPECT_FALSE(out[1].IsInitialized());
  FetchList list = {c, noop};
  EXPECT_TRUE(list[1].is_operation());
  EXPECT_FALSE(list[0].is_operation());
  testing::ExpectInvalidArgument([&] { (void)list[2]; }, {"Fetch index 2 is out of range", "2 fetches"});
}

// Any index past an op's outputs is an InvalidArgument naming the op, not a read past the
// node's outputs; so is an op without outputs converted to an Output and fed or fetched.
TEST(Session, FetchingOrFeedingAMissingOutputIsRejected) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable v(Tensor::Scalar<float>(1.5f), {.name = "v"});
  Operation init = ops::GlobalVariablesInitializer();
  ASSERT_EQ(init.num_outputs(), 0);
  Output c = ops::Const(2.0f, "c");
  Session sess(g);
  testing::ExpectInvalidArgument(
      [&] { sess.Run({}, {Output(init)}); },
      {"Fetch 'init:0'", "operation 'init' (op: \"NoOp\")", "no outputs", "fetch the Operation itself"});
  testing::ExpectInvalidArgument(
      [&] {
        sess.Run({}, {c, Output(c.node(), 1)});
      },
      {"Fetch 'c:1' is out of range", "operation 'c' (op: \"Const\") has 1 output"});
  testing::ExpectInvalidArgument([&] { sess.Run({}, {Output(c.node(), -1)}); },
                                 {"Fetch 'c:-1' is out of range"});
  testing::ExpectInvalidArgument(
      [&] {
        sess.Run({{Output(c.node(), 3), Tensor::Scalar<float>(0)}}, {c});
      },
      {"Feed 'c:3' is out of range"});
  testing::ExpectInvalidArgument(
      [&] {
        sess.Run({{Output(init), Tensor::Scalar<float>(0)}}, {c});
      },
      {"Feed 'init:0'", "no outputs"});
  testing::ExpectInvalidArgument([&] { sess.Run({}, {Output()}); }, {"Fetch argument <empty>"});
  testing::ExpectInvalidArgument(
      [&] {
        sess.Run({{Output(), Tensor::Scalar<float>(0)}}, {c});
      },
      {"<empty>", "is not an element of this graph"});
  testing::ExpectInvalidArgument([&] { sess.Run({}, {c}, {Operation()}); }, {"<empty>"});
  // The session is unharmed, and the op runs as a target.
  sess.Run({}, {}, {init});
  EXPECT_FLOAT_EQ(v.value().Eval(sess).scalar<float>(), 1.5f);
  EXPECT_FLOAT_EQ(c.Eval(sess).scalar<float>(), 2.0f);
}

TEST(Session, VariablesLiveInTheSession) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable w(Tensor::FromVector<float>({1, 2}), {.name = "w"});
  Variable counter(Tensor::Scalar<int64_t>(0), {.name = "counter", .trainable = false});
  EXPECT_EQ(w.op().name(), "w");
  EXPECT_EQ(w.name(), "w:0");
  EXPECT_EQ(w.value().op().name(), "w/read");
  EXPECT_EQ(w.initializer().name(), "w/Assign");
  EXPECT_EQ(w.initial_value().op().name(), "w/initial_value");
  EXPECT_EQ(ops::GlobalVariables().size(), 2u);
  EXPECT_EQ(ops::TrainableVariables().size(), 1u);
  Output doubled = w * ops::Const(2.0f);
  Output bump = counter.AssignAdd(ops::Const(int64_t{1}));
  Operation init = ops::GlobalVariablesInitializer();
  EXPECT_EQ(init.name(), "init");
  Output uninitialized = ops::ReportUninitializedVariables();

  Session s1(g), s2(g);
  try {
    s1.Run({}, {doubled});
    FAIL();
  } catch (const FailedPreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("Attempting to use uninitialized value w"), std::string::npos)
        << e.what();
  }
  Tensor names = s1.Run({}, {uninitialized})[0];
  ASSERT_EQ(names.NumElements(), 2);
  EXPECT_EQ(names.flat<std::string>()[0], "w");
  EXPECT_EQ(names.flat<std::string>()[1], "counter");
  s1.Run({}, {}, {init});
  EXPECT_EQ(s1.Run({}, {uninitialized})[0].NumElements(), 0);
  EXPECT_EQ(s1.Run({}, {doubled})[0].flat<float>()[1], 4.0f);
  for (int i = 0; i < 3; ++i) s1.Run({}, {bump});
  EXPECT_EQ(counter.value().Eval(s1).scalar<int64_t>(), 3);
  // A second session on the same graph has its own values.
  EXPECT_EQ(s2.Run({}, {uninitialized})[0].NumElements(), 2);
  s2.Run({}, {}, {init});
  EXPECT_EQ(counter.value().Eval(s2).scalar<int64_t>(), 0);
  // A value fetched earlier does not change when the variable is updated afterwards.
  Tensor before = counter.value().Eval(s1);
  s1.Run({}, {bump});
  EXPECT_EQ(before.scalar<int64_t>(), 3);
  EXPECT_EQ(counter.value().Eval(s1).scalar<int64_t>(), 4);
  Output is_init = ops::IsVariableInitialized(w.ref());
  Session s3(g);
  EXPECT_FALSE(is_init.Eval(s3).scalar<bool>());
  EXPECT_TRUE(is_init.Eval(s1).scalar<bool>());
}

TEST(Session, AssignChecksShapes) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable v(Tensor::FromVector<float>({1, 2}), {.name = "v"});
  Output ok = v.Assign(ops::Const<float>({5, 6}));
  EXPECT_THROW(v.Assign(ops::Const<float>({1, 2, 3})), InvalidArgumentError);  // at build time
  Output unchecked = ops::Assign(v.ref(), ops::Const<float>({1, 2, 3}), /*validate_shape=*/false);
  Session sess(g);
  sess.Run({}, {}, {v.initializer()});
  EXPECT_EQ(sess.Run({}, {ok})[0].flat<float>()[1], 6.0f);
  EXPECT_EQ(sess.Run({}, {unchecked})[0].NumElements(), 3);
}

TEST(Session, CountUpToCountsToItsLimit) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable v32(Tensor::Scalar<int32_t>(0), {.name = "v32"});
  Variable v64(Tensor::Scalar<int64_t>(5), {.name = "v64"});
  Output up32 = ops::CountUpTo(v32.ref(), 2);
  Output up64 = ops::CountUpTo(v64.ref(), 7);
  EXPECT_EQ(up64.dtype(), DT_INT64);
  EXPECT_THROW(ops::CountUpTo(v32.value(), 2), InvalidArgumentError);  // needs the variable
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  EXPECT_EQ(sess.Run({}, {up32})[0].scalar<int32_t>(), 0);  // the value before the increment
  EXPECT_EQ(sess.Run({}, {up32})[0].scalar<int32_t>(), 1);
  try {
    sess.Run({}, {up32});
    ADD_FAILURE() << "expected OutOfRange";
  } catch (const OutOfRangeError& e) {
    EXPECT_NE(std::string(e.what()).find("Reached limit of 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sess.Run({}, {v32.value()})[0].scalar<int32_t>(), 2);  // unchanged at the limit
  EXPECT_EQ(sess.Run({}, {up64})[0].scalar<int64_t>(), 5);
  EXPECT_EQ(sess.Run({}, {up64})[0].scalar<int64_t>(), 6);
  EXPECT_THROW(sess.Run({}, {up64}), OutOfRangeError);
}

TEST(Session, PlansAreCompiledOncePerSignature) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output y = x + x;
  Session sess(g);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(sess.Run({{x, Tensor::Scalar<float>(static_cast<float>(i))}}, {y})[0].scalar<float>(),
              2.0f * i);
  }
  EXPECT_EQ(sess.num_compiled_plans(), 1);
  sess.Run({{x, Tensor::Scalar<float>(1)}}, {y, x});
  EXPECT_EQ(sess.num_compiled_plans(), 2);
  // The graph may grow after the session was created.
  Output z = y * y;
  EXPECT_EQ(sess.Run({{x, Tensor::Scalar<float>(1)}}, {z})[0].scalar<float>(), 4.0f);
}

TEST(Session, TensorsAreFreedAfterTheirLastUse) {
  Graph g;
  auto as_default = g.AsDefault();
  Output big = NodeBuilder("SessionTestBig").Finalize();
  Output first = NodeBuilder("SessionTestFirst").Input(big).Finalize();
  Output live = NodeBuilder("SessionTestLiveBytes").Input(first).Finalize();
  Session sess(g);
  sess.Run({}, {live});  // warm up: kernels and run state exist
  const int64_t before = DefaultAllocatorStats().bytes_in_use;
  const int64_t during = sess.Run({}, {live})[0].scalar<int64_t>();
  // The 8 MiB tensor is gone by the time its consumer's consumer runs.
  EXPECT_LT(during - before, 1 << 20);
  const int64_t after = DefaultAllocatorStats().bytes_in_use;
  EXPECT_LT(after - before, 1 << 16);
}

TEST(Session, ParallelBranchesUseThePool) {
  Graph g;
  auto as_default = g.AsDefault();
  std::vector<float> values(256 * 256);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 7) * 0.01f;
  Output m = ops::Const(values, TensorShape({256, 256}));
  std::vector<Output> branches;
  for (int i = 0; i < 4; ++i) branches.push_back(ops::MatMul(m, m));
  Output total = branches[0];
  for (int i = 1; i < 4; ++i) total = total + branches[i];
  SessionOptions options;
  options.config.inter_op_parallelism_threads = 2;
  // One intra-op thread leaves cores for overlapping kernels (else the plan runs inline).
  options.config.intra_op_parallelism_threads = 1;
  Session sess(g, options);
  Tensor parallel = sess.Run({}, {total})[0];
  SessionOptions single;
  single.config.inter_op_parallelism_threads = 1;
  Session sequential(g, single);
  Tensor expected = sequential.Run({}, {total})[0];
  ASSERT_EQ(parallel.NumElements(), expected.NumElements());
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    ASSERT_FLOAT_EQ(parallel.flat<float>()[i], expected.flat<float>()[i]);
  }
  // Concurrent runs of the same plan.
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        Tensor r = sess.Run({}, {total})[0];
        if (r.flat<float>()[123] != expected.flat<float>()[123]) ++mismatches;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Session, KernelErrorsNameTheNode) {
  Graph g;
  auto as_default = g.AsDefault();
  Output bad = NodeBuilder("SessionTestFail", "broken").Input(ops::Const(1.0f)).Finalize();
  Session sess(g);
  try {
    sess.Run({}, {bad});
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_EQ(std::string(e.what()), "this kernel always fails\n\t [[node broken]]");
  }
  // Errors in a parallel plan surface too.
  Output other = NodeBuilder("SessionTestFail", "broken2").Input(ops::Const(1.0f)).Finalize();
  SessionOptions options;
  options.config.inter_op_parallelism_threads = 2;
  options.config.intra_op_parallelism_threads = 1;
  Session parallel(g, options);
  EXPECT_THROW(parallel.Run({}, {bad, other,
                                 ops::MatMul(ops::Const<float>({1}, TensorShape({1, 1})),
                                             ops::Const<float>({1}, TensorShape({1, 1})))}),
               InvalidArgumentError);
}

TEST(Session, TimeoutAndCloseWakeBlockedRuns) {
  Graph g;
  auto as_default = g.AsDefault();
  Output block = NodeBuilder("SessionTestBlock").Finalize();
  Session sess(g);
  RunOptions options;
  options.timeout_in_ms = 50;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(sess.Run({}, {block}, {}, &options), DeadlineExceededError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));

  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    sess.Close();
  });
  EXPECT_THROW(sess.Run({}, {block}), CancelledError);
  closer.join();
  try {
    sess.Run({}, {block});
    FAIL();
  } catch (const FailedPreconditionError& e) {
    EXPECT_STREQ(e.what(), "Attempted to use a closed Session.");
  }
}

TEST(Session, RunMetadataHasNodeTimings) {
  Graph g;
  auto as_default = g.AsDefault();
  Output y = ops::Const(1.0f) + ops::Const(2.0f);
  Session sess(g);
  RunOptions options;
  options.trace_level = RunOptions::kFullTrace;
  RunMetadata metadata;
  sess.Run({}, {y}, {}, &options, &metadata);
  ASSERT_EQ(metadata.step_stats().dev_stats_size(), 1);
  EXPECT_EQ(metadata.step_stats().dev_stats(0).device(), kLocalCpuDevice);
  EXPECT_EQ(metadata.step_stats().dev_stats(0).node_stats_size(), 3);
}

TEST(Session, RunByNameAndEmptyGraph) {
  Graph empty;
  Session empty_sess(empty);
  EXPECT_THROW(empty_sess.Run({}, {}), FailedPreconditionError);
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  ops::Identity(x + ops::Const(1.0f), "y");
  Operation noop = ops::NoOp("nothing");
  Session sess(g);
  auto out = sess.Run({{"x:0", Tensor::Scalar<float>(2)}}, {"y:0", "y"}, {"nothing"});
  EXPECT_EQ(out[0].scalar<float>(), 3.0f);
  EXPECT_EQ(out[1].scalar<float>(), 3.0f);
  (void)noop;
}

TEST(Session, DevicePlacement) {
  Graph g;
  auto as_default = g.AsDefault();
  Output on_ps;
  {
    auto device = g.Device("/job:ps/task:0");
    on_ps = ops::Const(1.0f);
  }
  Output on_gpu;
  {
    auto device = g.Device("/device:GPU:0");
    on_gpu = ops::Const(2.0f);
  }
  Output on_cpu;
  {
    auto device = g.Device("/cpu:0");
    on_cpu = ops::Const(3.0f);
  }
  Session sess(g);
  EXPECT_EQ(on_cpu.Eval(sess).scalar<float>(), 3.0f);
  EXPECT_THROW(on_ps.Eval(sess), InvalidArgumentError);
  EXPECT_THROW(on_gpu.Eval(sess), InvalidArgumentError);
  SessionOptions soft;
  soft.config.allow_soft_placement = true;
  Session soft_sess(g, soft);
  EXPECT_EQ(on_gpu.Eval(soft_sess).scalar<float>(), 2.0f);
  EXPECT_EQ(on_gpu.op().node()->assigned_device(), kLocalCpuDevice);
}

TEST(Session, GroupAndControlDependencies) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable a(Tensor::Scalar<float>(0), {.name = "a"});
  Variable b(Tensor::Scalar<float>(0), {.name = "b"});
  Operation both = ops::Group({a.Assign(ops::Const(1.0f)).op(), b.Assign(ops::Const(2.0f)).op()}, "both");
  // As in TF1, a read that must see the update depends on it and reads the variable itself
  // (its reference), not a snapshot taken earlier.
  Output sum_after = ops::WithDependencies({both}, a.ref()) + ops::WithDependencies({both}, b.ref());
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  EXPECT_EQ(sum_after.Eval(sess).scalar<float>(), 3.0f);
}

TEST(Session, ReshapeGatherAndBroadcast) {
  Graph g;
  auto as_default = g.AsDefault();
  Output v = ops::Const<float>({0, 1, 2, 3, 4, 5}, TensorShape({6}));
  Output r = ops::Reshape(v, {2, -1});
  EXPECT_EQ(r.shape().DebugString(), "[2,3]");
  EXPECT_EQ(r.op().name(), "Reshape");
  EXPECT_NE(g.FindNode("Reshape/shape"), nullptr);
  Output rows = ops::GatherV2(r, ops::Const<int32_t>({1, 0, 1}), ops::Const(int32_t{0}));
  EXPECT_EQ(rows.shape().DebugString(), "[3,3]");
  Output col = ops::Const<float>({10, 20}, TensorShape({2, 1}));
  Output bcast = r + col;  // [2,3] + [2,1]
  Output stacked = ops::Pack({v, v}, 1);
  EXPECT_EQ(stacked.shape().DebugString(), "[6,2]");
  Output bad_index = ops::GatherV2(v, ops::Const<int32_t>({7}), ops::Const(int32_t{0}));
  EXPECT_THROW(ops::Reshape(v, {4, -1}), InvalidArgumentError);
  Session sess(g);
  auto out = sess.Run({}, {rows, bcast, stacked});
  EXPECT_EQ(out[0].flat<float>()[0], 3.0f);
  EXPECT_EQ(out[1].flat<float>()[5], 25.0f);
  EXPECT_EQ(out[1].flat<float>()[0], 10.0f);
  EXPECT_EQ(out[2].flat<float>()[3], 1.0f);
  try {
    bad_index.Eval(sess);
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("indices[0] = 7 is not in [0, 6)"), std::string::npos);
  }
}

}  // namespace
}  // namespace flowtrain
