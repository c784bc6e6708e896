// TF1 control flow over real gRPC servers: conds whose predicate and branches sit on
// different tasks (dead tensors cross as dead), loops within one task fed from others, a loop
// spanning tasks refused when the master partitions the graph, and a monitored training job
// whose graph holds a cond on the global step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/distributed/server.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session_factory.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/device_setter.h"
#include "flowtrain/train/gradient_descent.h"
#include "flowtrain/train/monitored_training_session.h"
#include "tests/test_util.h"

namespace flowtrain::distributed {
namespace {

using ::testing::HasSubstr;

float Scalar(SessionInterface& sess, const FeedList& feeds, const Output& fetch) {
  return sess.Run(feeds, {fetch}, {})[0].scalar<float>();
}

class DistributedControlFlowTest : public ::testing::Test {
 protected:
  std::unique_ptr<SessionInterface> WorkerSession(Graph& g) {
    return NewSession(g, {.target = local_.workers[0]->target()});
  }

  LocalCluster local_ = CreateLocalCluster(1, 2);  // /job:worker/task:0, /job:ps/task:0 and 1
};

// pred on ps:0, the true branch on ps:1 (with a side effect there), the false branch on the
// worker; the Merge on the worker receives one live and one dead tensor in every step.
TEST_F(DistributedControlFlowTest, CondWithPredicateAndBranchesOnDifferentTasks) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, {}, "x");
  Variable taken;
  {
    auto ps1 = g.Device("/job:ps/task:1");
    taken = Variable(Tensor::Scalar<float>(0), {.name = "taken"});
  }
  Output r;
  {
    auto ps0 = g.Device("/job:ps/task:0");
    Output pred = ops::Greater(x, ops::Const(0.0f));
    r = ops::Cond(
        pred,
        [&] {
          auto ps1 = g.Device("/job:ps/task:1");
          // The constant's control input is the pivot on ps:0: its deadness crosses too.
          Output counted = ops::Mul(taken.AssignAdd(ops::Const(1.0f)), ops::Const(0.0f));
          return ops::Add(ops::Mul(ops::Square(x), ops::Const(3.0f)), counted);
        },
        [&] {
          auto worker = g.Device("/job:worker/task:0");
          return ops::Sub(ops::Neg(x), ops::Const(1.0f));
        });
  }
  EXPECT_EQ(r.node()->requested_device(), "/job:ps/task:0");
  auto sess = WorkerSession(g);
  sess->Run({}, {}, {ops::GlobalVariablesInitializer()});
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(Scalar(*sess, {{x, Tensor::Scalar<float>(2)}}, r), 12);
    EXPECT_EQ(Scalar(*sess, {{x, Tensor::Scalar<float>(-3)}}, r), 2);
  }
  // The true branch ran in the two steps that took it only. In the others its x arrived dead
  // from the worker and its constant's pivot dead from ps:0, and what they reach stayed dead
  // (a live garbage value would have reached the Merge first or failed the step).
  EXPECT_EQ(Scalar(*sess, {}, taken.value()), 2);

  // Fetching the untaken branch's tensor (from another task) fails as in a local session.
  Node* branch_sub = g.FindNode("cond/Sub");
  ASSERT_NE(branch_sub, nullptr);
  try {
    sess->Run({{x, Tensor::Scalar<float>(2)}}, {Output(branch_sub, 0)}, {});
    FAIL() << "fetched a dead tensor";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInvalidArgument) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("is dead"));
  }
}

// d/dx of cond(x > 0, 3x^2 on ps:1, -x - 1 on the worker): the gradient's conds span the
// tasks too.
TEST_F(DistributedControlFlowTest, GradientOfACondAcrossTasks) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, {}, "x");
  Output pred;
  {
    auto ps0 = g.Device("/job:ps/task:0");
    pred = ops::Greater(x, ops::Const(0.0f));
  }
  Output r = ops::Cond(
      pred,
      [&] {
        auto ps1 = g.Device("/job:ps/task:1");
        return ops::Mul(ops::Square(x), ops::Const(3.0f));
      },
      [&] { return ops::Sub(ops::Neg(x), ops::Const(1.0f)); });
  Output dx = ops::Gradients({r}, {x})[0];
  auto sess = WorkerSession(g);
  EXPECT_EQ(Scalar(*sess, {{x, Tensor::Scalar<float>(2)}}, dx), 12);
  EXPECT_EQ(Scalar(*sess, {{x, Tensor::Scalar<float>(-3)}}, dx), -1);
}

// A loop on ps:0 (not the client's task) whose limit comes from the worker and whose body
// adds a variable's value read on ps:1 before the loop.
TEST_F(DistributedControlFlowTest, LoopOnAPsTaskWithInputsFromOtherTasks) {
  Graph g;
  auto as_default = g.AsDefault();
  Output n = ops::Placeholder(DT_INT32, {}, "n");
  Variable v;
  Output read;
  {
    auto ps1 = g.Device("/job:ps/task:1");
    v = Variable(Tensor::Scalar<float>(1.5f), {.name = "v"});
    read = ops::Identity(v.value(), "read");
  }
  std::vector<Output> out;
  {
    auto ps0 = g.Device("/job:ps/task:0");
    out = ops::WhileLoop(
        [&](const std::vector<Output>& vars) { return ops::Less(vars[0], n); },
        [&](const std::vector<Output>& vars) {
          return std::vector<Output>{ops::Add(vars[0], ops::Const(1)), ops::Add(vars[1], read)};
        },
        {ops::Const(0), ops::Const(0.0f)});
  }
  Output doubled = ops::Mul(out[1], ops::Const(2.0f));  // on the worker, after the loop
  auto sess = WorkerSession(g);
  sess->Run({}, {}, {ops::GlobalVariablesInitializer()});
  for (int limit : {4, 0, 10}) {
    std::vector<Tensor> result = sess->Run({{n, Tensor::Scalar<int32_t>(limit)}}, {out[0], doubled}, {});
    EXPECT_EQ(result[0].scalar<int32_t>(), limit);
    EXPECT_EQ(result[1].scalar<float>(), 3.0f * limit);
  }
  EXPECT_EQ(local_.workers[0]->resource_manager()->All<Var>().size(), 0u);
}

// The client's own task runs the loop; the value it adds comes from ps:0 each step.
TEST_F(DistributedControlFlowTest, LoopOnTheWorkerReadingAPsVariable) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable v;
  {
    auto ps0 = g.Device("/job:ps/task:0");
    v = Variable(Tensor::Scalar<float>(2), {.name = "v"});
  }
  Output read = ops::Identity(v.value(), "read");  // before the loop, on the worker
  std::vector<Output> out =
      ops::WhileLoop([&](const std::vector<Output>& vars) { return ops::Less(vars[1], ops::Const(20.0f)); },
                     [&](const std::vector<Output>& vars) {
                       return std::vector<Output>{ops::Add(vars[0], ops::Const(1)), ops::Mul(vars[1], read)};
                     },
                     {ops::Const(0), ops::Const(1.0f)});
  auto sess = WorkerSession(g);
  sess->Run({}, {}, {ops::GlobalVariablesInitializer()});
  std::vector<Tensor> result = sess->Run({}, {out[0], out[1]}, {});
  EXPECT_EQ(result[0].scalar<int32_t>(), 5);
  EXPECT_EQ(result[1].scalar<float>(), 32);
}

// A loop whose condition runs on the worker and whose body on ps:0 is refused before any
// task runs it, naming the loop and both tasks.
TEST_F(DistributedControlFlowTest, LoopSpanningTasksIsRefusedAtCompileTime) {
  Graph g;
  auto as_default = g.AsDefault();
  std::vector<Output> out =
      ops::WhileLoop([&](const std::vector<Output>& vars) { return ops::Less(vars[0], ops::Const(3)); },
                     [&](const std::vector<Output>& vars) {
                       auto ps0 = g.Device("/job:ps/task:0");
                       return std::vector<Output>{ops::Add(vars[0], ops::Const(1))};
                     },
                     {ops::Const(0)});
  auto sess = WorkerSession(g);
  try {
    sess->Run({}, {out[0]}, {});
    FAIL() << "a loop spanning tasks ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInvalidArgument) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("The while loop 'while/while_context' spans 2 tasks"));
    EXPECT_THAT(e.what(), HasSubstr("/job:ps/replica:0/task:0 (while/"));
    EXPECT_THAT(e.what(), HasSubstr("/job:worker/replica:0/task:0 (while/"));
  }
  // The session still runs what has no such loop.
  EXPECT_EQ(sess->Run({}, {ops::Const(7)}, {})[0].scalar<int32_t>(), 7);
}

// A ref variable of ps:0 used in a loop's body on the worker enters by its value; a resource
// variable read there (ReadVariableOp goes with its handle, hence the handle's Enter too)
// puts part of the loop on ps:0, and the loop is refused.
TEST_F(DistributedControlFlowTest, LoopsUsingVariablesOfAnotherTask) {
  for (bool use_resource : {false, true}) {
    Graph g;
    auto as_default = g.AsDefault();
    Variable v;
    {
      auto ps0 = g.Device("/job:ps/task:0");
      v = Variable(Tensor::Scalar<float>(2), {.name = "v", .use_resource = use_resource});
    }
    std::vector<Output> out = ops::WhileLoop(
        [&](const std::vector<Output>& vars) { return ops::Less(vars[0], ops::Const(20.0f)); },
        [&](const std::vector<Output>& vars) { return std::vector<Output>{ops::Mul(vars[0], v.value())}; },
        {ops::Const(1.0f)}, ops::WhileLoopOptions{.shape_invariants = {PartialTensorShape::Unknown()}});
    auto sess = WorkerSession(g);
    sess->Run({}, {}, {ops::GlobalVariablesInitializer()});
    if (!use_resource) {
      EXPECT_EQ(sess->Run({}, {out[0]}, {})[0].scalar<float>(), 32);
      continue;
    }
    try {
      sess->Run({}, {out[0]}, {});
      FAIL() << "a loop spanning tasks ran";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::kInvalidArgument) << e.what();
      EXPECT_THAT(e.what(), HasSubstr("The while loop 'while/while_context' spans 2 tasks"));
    }
  }
}

// Between-graph training whose loss is scaled through a cond on the global step, its
// predicate on the ps next to the step: the monitored session trains and stops at step 12.
TEST_F(DistributedControlFlowTest, MonitoredTrainingSessionWithACondOnTheGlobalStep) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable global_step, w;
  Output x, phase;
  Operation train_op;
  {
    auto scope = g.Device(train::ReplicaDeviceSetter({.cluster = &local_.cluster}));
    global_step = train::GetOrCreateGlobalStep();
    w = Variable(Tensor::Scalar<float>(0), {.name = "w"});
    x = ops::Placeholder(DT_FLOAT, {-1}, "x");
    Output early;
    {
      auto ps = g.Device("/job:ps/task:0");
      early = ops::Less(global_step.value(), ops::Const<int64_t>(6));
    }
    phase = ops::Cond(
        early, [&] { return ops::Const(1.0f); }, [&] { return ops::Const(0.5f); }, "phase");
    Output loss = ops::Mul(
        phase, ops::ReduceMean(ops::Square(ops::Sub(ops::Mul(w, x), ops::Mul(x, ops::Const(3.0f))))));
    train_op = train::GradientDescentOptimizer(0.05).Minimize(loss, global_step);
  }
  const FeedList batch = {{x, Tensor::FromVector<float>({-1, 0, 1, 2}, TensorShape({4}))}};
  train::MonitoredTrainingSessionOptions options;
  options.master = local_.workers[0]->target();
  options.is_chief = true;
  options.hooks = {std::make_shared<train::StopAtStepHook>(train::LastStep{12})};
  options.graph = &g;
  auto sess = train::MonitoredTrainingSession(options);
  int steps = 0;
  while (!sess->ShouldStop()) {
    sess->Run(batch, {}, {train_op});
    ++steps;
  }
  sess->Close();
  EXPECT_EQ(steps, 12);
  auto plain = WorkerSession(g);
  std::vector<Tensor> out = plain->Run({}, {global_step.value(), phase, w.value()}, {});
  EXPECT_EQ(out[0].scalar<int64_t>(), 12);
  EXPECT_EQ(out[1].scalar<float>(), 0.5f);
  EXPECT_GT(out[2].scalar<float>(), 2.0f);
}

}  // namespace
}  // namespace flowtrain::distributed
