// Per-step containers: only plans with an op that creates per-step resources get one (a fresh
// one per run, dropped as the run ends); other plans run without.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/stack_ops.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain {
namespace {

// Passes x through and records the step container its run gave it.
FT_REGISTER_OP("StepContainerProbe")
    .Input("x: float")
    .Output("y: float")
    .SetShapeFn(shape_fns::UnchangedShape);
absl::Mutex probe_mu;
std::string probe_seen ABSL_GUARDED_BY(probe_mu);
class ProbeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    absl::MutexLock lock(&probe_mu);
    probe_seen = ctx->step_container();
    ctx->set_output(0, ctx->input(0));
  }
};
FT_REGISTER_KERNEL("StepContainerProbe", ProbeKernel);

std::string LastSeen() {
  absl::MutexLock lock(&probe_mu);
  return probe_seen;
}

TEST(StepContainer, OnlyPlansThatCreateStepResourcesGetOne) {
  Graph g;
  auto as_default = g.AsDefault();
  Output probe = NodeBuilder("StepContainerProbe", "probe").Input(ops::Const(2.0f)).Finalize();
  Output stack = ops::StackV2(DT_FLOAT);
  Output pushed = ops::StackPushV2(stack, probe);
  Session session(g);

  EXPECT_EQ(session.Run({}, {ops::Identity(probe)}, {})[0].scalar<float>(), 2);
  EXPECT_EQ(LastSeen(), "");

  std::set<std::string> containers;
  for (int run = 0; run < 3; ++run) {
    EXPECT_EQ(session.Run({}, {pushed}, {})[0].scalar<float>(), 2);
    EXPECT_EQ(LastSeen().rfind("__per_step_", 0), 0u) << LastSeen();
    containers.insert(LastSeen());
    EXPECT_TRUE(session.resource_manager()->All<ResourceBase>().empty());
  }
  EXPECT_EQ(containers.size(), 3u);
}

}  // namespace
}  // namespace flowtrain
