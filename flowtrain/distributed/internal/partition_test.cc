#include "flowtrain/distributed/internal/partition.h"

#include <gtest/gtest.h>

#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"
#include "tests/test_util.h"

namespace flowtrain::distributed {
namespace {

const TaskId kPs{"ps", 0};
const TaskId kWorker{"worker", 0};

PartitionOptions Options() {
  return {.cluster = ClusterSpec::Parse("ps=a:1;worker=b:1"), .default_task = kWorker};
}

// Every key a partition pushes to another task, as "key->job".
std::vector<std::string> Pushes(const TaskPartition& partition) {
  std::vector<std::string> pushes;
  for (const Stage& stage : partition.request.stages()) {
    for (const StageOutput& output : stage.outputs()) {
      for (const PushTarget& push : output.pushes()) pushes.push_back(push.key() + "->" + push.job());
    }
    for (const PushTarget& push : stage.control_pushes()) pushes.push_back(push.key() + "->" + push.job());
  }
  return pushes;
}

TEST(PartitionTest, OnlyTensorsOfEdgesBetweenTasksArePushed) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable v;
  Output on_ps;
  {
    auto ps = g.Device("/job:ps/task:0");
    v = Variable(Tensor::Scalar<float>(1), {.name = "v"});
    on_ps = ops::Mul(v.ref(), ops::Const(3.0f, "three"), "on_ps");  // stays on the ps
  }
  Output x = ops::Placeholder(DT_FLOAT, {}, "x");
  Output y = ops::Add(on_ps, x, "y");     // on the worker
  Output assign = v.Assign(y, "assign");  // the variable's task

  PartitionPlan plan =
      PartitionGraph(g, {Endpoint{x.node(), 0}}, {Endpoint{x.node(), 0}}, {assign.node()}, Options());
  ASSERT_EQ(plan.partitions.size(), 2u);
  EXPECT_EQ(plan.fetch_is_feed, (std::vector<int>{0}));
  EXPECT_EQ(Pushes(plan.partitions.at(kPs)), (std::vector<std::string>{"on_ps:0->worker"}));
  EXPECT_EQ(Pushes(plan.partitions.at(kWorker)), (std::vector<std::string>{"y:0->ps"}));
  EXPECT_EQ(plan.partitions.at(kWorker).feed_indices, (std::vector<int>{0}));
  EXPECT_TRUE(plan.partitions.at(kPs).feed_indices.empty());
  // The ps runs on_ps, then (after the worker's y) the assign, with its own copy of v.
  const auto& ps_stages = plan.partitions.at(kPs).request.stages();
  ASSERT_EQ(ps_stages.size(), 2);
  EXPECT_EQ(plan.partitions.at(kWorker).request.stages_size(), 1);
  std::vector<std::string> last(ps_stages[1].targets().begin(), ps_stages[1].targets().end());
  EXPECT_EQ(last, (std::vector<std::string>{"v/flowtrain_stage_2", "assign"}));
}

TEST(PartitionTest, ReferencesAndColocationFollowTheVariable) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable v;
  {
    auto ps = g.Device("/job:ps/task:0");
    v = Variable(Tensor::Scalar<float>(1), {.name = "v"});
  }
  Output assign;
  {
    auto worker = g.Device("/job:worker/task:0");
    assign = v.AssignAdd(ops::Const(1.0f), "bump");  // asks for the worker, takes v's reference
  }
  PartitionPlan plan = PartitionGraph(g, {}, {}, {assign.node()}, Options());
  ASSERT_EQ(plan.partitions.size(), 2u);  // the Const stays on the worker
  EXPECT_EQ(Pushes(plan.partitions.at(kWorker)), (std::vector<std::string>{"Const:0->ps"}));

  Output elsewhere;
  {
    auto missing = g.Device("/job:ps/task:1");
    elsewhere = ops::Identity(v, "elsewhere");
  }
  testing::ExpectInvalidArgument(
      [&] {
        PartitionGraph(g, {}, {Endpoint{elsewhere.node(), 0}}, {}, Options());
      },
      {"Cannot assign a device for operation elsewhere", "no task /job:ps/replica:0/task:1"});
}

// The inputs of `partition`'s stages that may arrive dead, as "placeholder".
std::vector<std::string> MayBeDeadInputs(const TaskPartition& partition) {
  std::vector<std::string> inputs;
  for (const Stage& stage : partition.request.stages()) {
    for (const StageInput& input : stage.inputs()) {
      if (input.may_be_dead()) inputs.push_back(input.placeholder());
    }
  }
  return inputs;
}

TEST(PartitionTest, TensorsOfACondBranchCrossAsPossiblyDeadAndControlEdgesAsGatedConstants) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, {}, "x");
  Output r;
  {
    auto ps = g.Device("/job:ps/task:0");
    r = ops::Cond(
        ops::Greater(x, ops::Const(0.0f)),
        [&] {
          auto worker = g.Device("/job:worker/task:0");
          return ops::Add(x, ops::Const(1.0f, "one"));
        },
        [&] { return ops::Neg(x); });
  }
  PartitionPlan plan = PartitionGraph(g, {Endpoint{x.node(), 0}}, {Endpoint{r.node(), 0}}, {}, Options());
  // The branches' Switches of x sit with x on the worker; the pivots, Neg and Merge on the ps.
  EXPECT_EQ(MayBeDeadInputs(plan.partitions.at(kWorker)),
            (std::vector<std::string>{"flowtrain_input/s1/flowtrain_control/cond/switch_t"}));
  EXPECT_EQ(
      MayBeDeadInputs(plan.partitions.at(kPs)),
      (std::vector<std::string>{"flowtrain_input/s2/cond/Neg/Switch_0", "flowtrain_input/s2/cond/Add_0"}));
  EXPECT_EQ(
      Pushes(plan.partitions.at(kPs)),
      (std::vector<std::string>{"flowtrain_control/cond/switch_t:0->worker", "cond/pred_id:0->worker"}));
  // Without control flow nothing is marked, so stages keep the static plan.
  Graph plain;
  auto plain_default = plain.AsDefault();
  Output y = ops::Placeholder(DT_FLOAT, {}, "y");
  Output z;
  {
    auto ps = plain.Device("/job:ps/task:0");
    z = ops::Square(y);
  }
  PartitionPlan plain_plan =
      PartitionGraph(plain, {Endpoint{y.node(), 0}}, {Endpoint{ops::Neg(z).node(), 0}}, {}, Options());
  for (const auto& [task, partition] : plain_plan.partitions) EXPECT_TRUE(MayBeDeadInputs(partition).empty());
}

TEST(PartitionTest, ALoopSharesOneStageOnItsTaskAndOneSpanningTasksIsRefused) {
  Graph g;
  auto as_default = g.AsDefault();
  Output n = ops::Placeholder(DT_INT32, {}, "n");
  Output limit = ops::Identity(n, "limit");  // on the worker
  std::vector<Output> out;
  {
    auto ps = g.Device("/job:ps/task:0");
    out = ops::WhileLoop(
        [&](const std::vector<Output>& v) { return ops::Less(v[0], limit); },
        [&](const std::vector<Output>& v) { return std::vector<Output>{ops::Add(v[0], ops::Const(1))}; },
        {ops::Const(0)});
  }
  PartitionPlan plan =
      PartitionGraph(g, {Endpoint{n.node(), 0}}, {Endpoint{out[0].node(), 0}}, {}, Options());
  const RegisterGraphRequest& ps = plan.partitions.at(kPs).request;
  // The limit comes from the worker: the whole loop, its Enters too, waits for it in one stage.
  int loop_stages = 0;
  for (const Stage& stage : ps.stages()) {
    const bool has_loop = std::any_of(stage.targets().begin(), stage.targets().end(),
                                      [](const std::string& t) { return t.starts_with("while/"); });
    if (!has_loop) continue;
    ++loop_stages;
    EXPECT_EQ(stage.inputs_size(), 1);
    EXPECT_EQ(stage.inputs(0).transfer_key(), "limit:0");
  }
  EXPECT_EQ(loop_stages, 1);

  Graph spanning;
  auto spanning_default = spanning.AsDefault();
  std::vector<Output> loop =
      ops::WhileLoop([&](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(3)); },
                     [&](const std::vector<Output>& v) {
                       auto ps_device = spanning.Device("/job:ps/task:0");
                       return std::vector<Output>{ops::Add(v[0], ops::Const(1))};
                     },
                     {ops::Const(0)});
  testing::ExpectInvalidArgument(
      [&] {
        PartitionGraph(spanning, {}, {Endpoint{loop[0].node(), 0}}, {}, Options());
      },
      "The while loop 'while/while_context' spans 2 tasks");
}

}  // namespace
}  // namespace flowtrain::distributed
