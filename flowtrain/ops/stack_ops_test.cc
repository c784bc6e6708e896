// Stack ops: LIFO order within a run, TF's errors (empty pop, overflow, dtype, closed), and
// the stack's release at the end of the run.
#include "flowtrain/ops/stack_ops.h"

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;
using testing::Values;

class StackOpsTest : public ::testing::Test {
 protected:
  Graph g_;
  ScopeGuard as_default_ = g_.AsDefault();
};

TEST_F(StackOpsTest, OpDefsAndShapes) {
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({2, 3}), "x");
  Output stack = ops::StackV2(DT_FLOAT);
  EXPECT_EQ(stack.op().name(), "StackV2");
  EXPECT_EQ(stack.op().input(0).op().name(), "StackV2/max_size");
  EXPECT_EQ(stack.shape().DebugString(), "[2]");  // TF's static shape of the handle
  EXPECT_EQ(stack.op().GetAttr<std::string>("stack_name"), "");
  Output pushed = ops::StackPushV2(stack, x, /*swap_memory=*/true);
  EXPECT_EQ(pushed.shape().DebugString(), "[2,3]");
  EXPECT_TRUE(pushed.op().GetAttr<bool>("swap_memory"));
  EXPECT_FALSE(ops::StackPushV2(stack, x).op().GetAttr<bool>("swap_memory"));  // TF's default
  EXPECT_TRUE(ops::StackPopV2(stack, DT_FLOAT).shape().unknown_rank());
  EXPECT_EQ(ops::StackCloseV2(stack).type(), "StackCloseV2");
}

TEST_F(StackOpsTest, PopsInReverseOrder) {
  Output stack = ops::StackV2(DT_FLOAT, 2, "f_acc");
  Output p1 = ops::StackPushV2(stack, ops::Const(1.0f));
  Output p2;
  {
    auto deps = g_.ControlDependencies({p1.op()});
    p2 = ops::StackPushV2(stack, ops::Const(2.0f));
  }
  Output first, second;
  {
    auto deps = g_.ControlDependencies({p2.op()});
    first = ops::StackPopV2(stack, DT_FLOAT);
  }
  {
    auto deps = g_.ControlDependencies({first.op()});
    second = ops::StackPopV2(stack, DT_FLOAT);
  }
  Output third;
  {
    auto deps = g_.ControlDependencies({second.op()});
    third = ops::StackPopV2(stack, DT_FLOAT);
  }
  Output overflow;
  {
    auto deps = g_.ControlDependencies({p2.op()});
    overflow = ops::StackPushV2(stack, ops::Const(3.0f));
  }
  Output wrong_type = ops::StackPushV2(stack, ops::Const(1), false, "wrong_type");
  Output wrong_pop = ops::StackPopV2(stack, DT_INT32, "wrong_pop");
  Operation close = ops::StackCloseV2(stack);
  Output after_close;
  {
    auto deps = g_.ControlDependencies({close});
    after_close = ops::StackPushV2(stack, ops::Const(1.0f), false, "after_close");
  }

  Session sess(g_);
  const size_t before = sess.resource_manager()->All<ResourceBase>().size();
  auto out = sess.Run({}, {first, second}, {});
  EXPECT_EQ(out[0].scalar<float>(), 2.0f);
  EXPECT_EQ(out[1].scalar<float>(), 1.0f);
  // Every run has its own stack, dropped when the run ends.
  out = sess.Run({}, {first, second}, {});
  EXPECT_EQ(out[0].scalar<float>(), 2.0f);
  EXPECT_EQ(sess.resource_manager()->All<ResourceBase>().size(), before);
  ExpectInvalidArgument([&] { sess.Run({}, {third}, {}); }, {"Stack[f_acc_", "] is empty."});
  ExpectInvalidArgument([&] { sess.Run({}, {overflow}, {}); }, "overflowed its max_size (2)");
  ExpectInvalidArgument([&] { sess.Run({}, {wrong_type}, {}); }, "must have type float but got int32");
  ExpectInvalidArgument([&] { sess.Run({}, {wrong_pop}, {}); }, "holds float but the pop expects int32");
  ExpectInvalidArgument([&] { sess.Run({}, {after_close}, {}); }, "has already been closed.");
  EXPECT_EQ(sess.resource_manager()->All<ResourceBase>().size(), before);
}

TEST_F(StackOpsTest, HandleOfAnotherKind) {
  Output not_a_stack = ops::Placeholder(DT_RESOURCE, PartialTensorShape({}), "h");
  Output pop = ops::StackPopV2(not_a_stack, DT_FLOAT);
  Session sess(g_);
  Tensor handle(DT_RESOURCE, TensorShape());
  handle.scalar<ResourceHandle>() = {.container = "", .name = "q", .type_name = "Queue"};
  ExpectInvalidArgument(
      [&] {
        sess.Run({{not_a_stack, handle}}, {pop}, {});
      },
      "expects a stack handle, but /q is a Queue");
}

}  // namespace
}  // namespace flowtrain
