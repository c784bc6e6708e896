#include "flowtrain/distributed/internal/partition.h"

#include <gtest/gtest.h>

#include "flowtrain/ops/array_ops.h"
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

}  // namespace
}  // namespace flowtrain::distributed
