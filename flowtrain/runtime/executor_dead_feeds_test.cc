// Executor runs whose feeds arrive dead and whose fetches may be dead, as a distributed
// partition's stages run (a tensor from an untaken cond branch on another task): consumers
// of a dead feed are dead and not run, a Merge takes its live input, and dead fetches are
// flagged instead of failing the run.
#include <memory>
#include <unordered_map>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/runtime/executor.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

class ExecutorDeadFeedsTest : public ::testing::Test {
 protected:
  std::unique_ptr<Executor> Compile(const std::vector<Endpoint>& feeds, const std::vector<Endpoint>& fetches,
                                    bool feeds_may_be_dead) {
    ExecutorEnv env;
    env.resource_mgr = &resources_;
    env.feeds_may_be_dead = feeds_may_be_dead;
    env.get_kernel = [this](const Node* node) {
      std::unique_ptr<OpKernel>& kernel = kernels_[node];
      if (kernel == nullptr) {
        node->set_assigned_device(kLocalCpuDevice);
        kernel = KernelRegistry::Global()->CreateKernel(*node);
      }
      return kernel.get();
    };
    std::vector<const Node*> targets;
    for (const Endpoint& e : fetches) targets.push_back(e.node);
    return std::make_unique<Executor>(env, feeds, fetches, targets);
  }

  Graph graph_;
  ResourceMgr resources_;
  std::unordered_map<const Node*, std::unique_ptr<OpKernel>> kernels_;
};

Endpoint E(const Output& o) { return Endpoint{o.node(), o.index()}; }

TEST_F(ExecutorDeadFeedsTest, DeadFeedsMakeTheirConsumersDeadAndMergeTakesTheLiveOne) {
  auto as_default = graph_.AsDefault();
  Output a = ops::Placeholder(DT_FLOAT, {}, "a");
  Output b = ops::Placeholder(DT_FLOAT, {}, "b");
  Output squared = ops::Square(a);  // no control flow op reads a: the plan is frame-aware anyway
  Output merged = ops::Merge({ops::Neg(b), squared}).output;
  std::unique_ptr<Executor> executor = Compile({E(a), E(b)}, {E(squared), E(merged)}, true);
  const std::vector<Tensor> feeds = {Tensor::Scalar<float>(3), Tensor::Scalar<float>(5)};
  std::vector<bool> dead_feeds = {true, false};
  std::vector<bool> dead_fetches;
  ExecutorRunArgs args{.dead_feeds = &dead_feeds, .dead_fetches = &dead_fetches};
  std::vector<Tensor> out = executor->Run(args, feeds);
  EXPECT_EQ(dead_fetches, (std::vector<bool>{true, false}));
  EXPECT_FALSE(out[0].IsInitialized());
  EXPECT_EQ(out[1].scalar<float>(), -5);

  dead_feeds = {false, true};
  out = executor->Run(args, feeds);
  EXPECT_EQ(dead_fetches, (std::vector<bool>{false, false}));
  EXPECT_EQ(out[0].scalar<float>(), 9);
  EXPECT_EQ(out[1].scalar<float>(), 9);

  // Without dead_fetches a dead fetch fails the run, as a local session's does.
  dead_feeds = {true, true};
  args.dead_fetches = nullptr;
  EXPECT_THROW(executor->Run(args, feeds), Error);
}

TEST_F(ExecutorDeadFeedsTest, StaticPlansFlagNothingAndRefuseDeadFeeds) {
  auto as_default = graph_.AsDefault();
  Output a = ops::Placeholder(DT_FLOAT, {}, "a");
  Output squared = ops::Square(a);
  std::unique_ptr<Executor> executor = Compile({E(a)}, {E(squared)}, false);
  const std::vector<Tensor> feeds = {Tensor::Scalar<float>(4)};
  std::vector<bool> dead_fetches = {true};
  ExecutorRunArgs args{.dead_fetches = &dead_fetches};
  EXPECT_EQ(executor->Run(args, feeds)[0].scalar<float>(), 16);
  EXPECT_EQ(dead_fetches, (std::vector<bool>{false}));
  std::vector<bool> dead_feeds = {true};
  args.dead_feeds = &dead_feeds;
  try {
    executor->Run(args, feeds);
    FAIL() << "a static plan ran a dead feed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInternal) << e.what();
  }
}

}  // namespace
}  // namespace flowtrain
