// Gradients through ops::WhileLoop (TF1 control flow v1): the values against central finite
// differences (float64) and known closed forms, and the gradient loop's structure as TF
// builds it (forward counter, stacks, backward counter, accumulators of loop invariants).
// TF itself running these gradient graphs is checked by tests/tf/control_flow_test.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/io_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/resource_variable_ops.h"
#include "flowtrain/runtime/gradient_checker.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using Vars = std::vector<Output>;

Output ScalarD(double v, std::string_view name = "Const") {
  return ops::Const(Tensor::Scalar<double>(v), name);
}

double Fetch(Session& session, const Output& t, const FeedList& feeds) {
  return session.Run(feeds, {t}, {})[0].scalar<double>();
}

// acc = acc * 0.9 + w, three times: acc3 = 0.729 acc0 + 2.71 w.
TEST(WhileLoopGrad, AccumulatesLoopInvariantAcrossIterations) {
  Graph g;
  auto as_default = g.AsDefault();
  Output w = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "w");
  Output acc0 = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "acc0");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(3)); },
                            [&](const Vars& v) {
                              return Vars{ops::AddV2(v[0], ops::Const(1), "add"),
                                          ops::AddV2(ops::Mul(v[1], ScalarD(0.9)), w, "add")};
                            },
                            {ops::Const(0, "i0"), acc0});
  Vars grads = ops::Gradients({out[1]}, {w, acc0});
  ASSERT_TRUE(grads[0] && grads[1]);
  // As TF: the loop invariant's gradient is an accumulator loop variable, acc0's an Exit.
  EXPECT_EQ(grads[0].op().type(), "Exit");
  EXPECT_EQ(grads[0].op().name(), "gradients/while/add_1/Enter_grad/b_acc_3");
  EXPECT_EQ(grads[1].op().name(), "gradients/while/Enter_1_grad/Exit");
  Session session(g);
  const FeedList feeds{{w, Tensor::Scalar<double>(0.5)}, {acc0, Tensor::Scalar<double>(2.0)}};
  EXPECT_NEAR(Fetch(session, grads[0], feeds), 2.71, 1e-12);
  EXPECT_NEAR(Fetch(session, grads[1], feeds), 0.729, 1e-12);
  EXPECT_LT(
      ComputeGradientError({w, acc0}, {Tensor::Scalar<double>(0.5), Tensor::Scalar<double>(2.0)}, out[1]),
      1e-8);
}

TEST(WhileLoopGrad, BuildsTfsForwardCounterStacksAndBackwardCounter) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(3)); },
                            [&](const Vars& v) {
                              return Vars{ops::AddV2(v[0], ops::Const(1)), ops::Mul(v[1], v[1])};
                            },
                            {ops::Const(0, "i0"), x});
  ops::Gradients({out[1]}, {x});
  auto type_of = [&](const char* name) { return g.GetOperationByName(name).type(); };
  EXPECT_EQ(type_of("gradients/f_count"), "Const");
  EXPECT_EQ(type_of("gradients/f_count_1"), "Enter");
  EXPECT_EQ(type_of("gradients/f_count_2"), "Exit");
  EXPECT_EQ(type_of("gradients/b_count_1"), "Enter");
  EXPECT_EQ(type_of("gradients/b_count_2"), "LoopCond");
  EXPECT_EQ(type_of("gradients/b_count_3"), "Exit");
  EXPECT_EQ(type_of("gradients/while/Exit_1_grad/b_exit"), "Enter");
  EXPECT_EQ(type_of("gradients/while/Switch_1_grad/b_switch"), "Merge");
  EXPECT_EQ(g.GetOperationByName("gradients/b_count_1").GetAttr<std::string>("frame_name"),
            "gradients/while/while_context");
  // The forward value the gradient needs goes onto a stack, one push per iteration.
  int pushes = 0, pops = 0;
  for (const Operation& op : g.operations()) {
    if (op.type() == "StackPushV2") {
      ++pushes;
      EXPECT_FALSE(op.GetAttr<bool>("swap_memory"));
    }
    if (op.type() == "StackPopV2") ++pops;
  }
  EXPECT_GE(pushes, 1);
  EXPECT_EQ(pushes, pops);
  // Only the user's loop is in the "while_context" collection, as in TF.
  EXPECT_EQ(g.GetCollectionItems(GraphKeys::kWhileContext).size(), 1u);
}

// x^(2^n) by repeated squaring: d/dx = 2^n x^(2^n - 1).
TEST(WhileLoopGrad, RepeatedSquaring) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(3)); },
                            [&](const Vars& v) {
                              return Vars{ops::AddV2(v[0], ops::Const(1)), ops::Mul(v[1], v[1])};
                            },
                            {ops::Const(0, "i0"), x});
  Output dx = ops::Gradients({out[1]}, {x})[0];
  Session session(g);
  EXPECT_NEAR(Fetch(session, dx, {{x, Tensor::Scalar<double>(1.1)}}), 8 * std::pow(1.1, 7), 1e-9);
  EXPECT_LT(ComputeGradientError({x}, {Tensor::Scalar<double>(1.1)}, out[1]), 1e-6);
}

// A cond in the body: its predicate differs per iteration, so the backprop replays it.
TEST(WhileLoopGrad, CondInsideLoop) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Output v0 = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "v0");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(4)); },
                            [&](const Vars& v) {
                              Output r = ops::Cond(
                                  ops::Less(v[0], ops::Const(2)), [&] { return ops::Mul(v[1], x); },
                                  [&] { return ops::AddV2(ops::Sin(v[1]), x); });
                              return Vars{ops::AddV2(v[0], ops::Const(1)), r};
                            },
                            {ops::Const(0, "i0"), v0});
  EXPECT_LT(ComputeGradientError({x, v0}, {Tensor::Scalar<double>(0.7), Tensor::Scalar<double>(1.3)}, out[1]),
            1e-6);
}

// A branch that does not use the loop variable: its Switch side gets zeros in the backprop.
TEST(WhileLoopGrad, CondBranchIgnoringTheLoopVariable) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(3)); },
                            [&](const Vars& v) {
                              Output r = ops::Cond(
                                  ops::Less(v[0], ops::Const(1)), [&] { return ops::Mul(v[1], v[1]); },
                                  [&] { return ops::Mul(x, ScalarD(3.0)); });
                              return Vars{ops::AddV2(v[0], ops::Const(1)), ops::AddV2(r, v[1])};
                            },
                            {ops::Const(0, "i0"), x});
  EXPECT_LT(ComputeGradientError({x}, {Tensor::Scalar<double>(0.6)}, out[1]), 1e-8);
}

// The body reads a tensor computed outside the loop (as a variable read would be).
TEST(WhileLoopGrad, CapturedTensor) {
  Graph g;
  auto as_default = g.AsDefault();
  Output w = ops::Placeholder(DT_DOUBLE, PartialTensorShape({2}), "w");
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({2}), "x");
  Output captured = ops::Exp(w);
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(3)); },
                            [&](const Vars& v) {
                              return Vars{ops::AddV2(v[0], ops::Const(1)),
                                          ops::AddV2(ops::Mul(ops::Tanh(v[1]), captured), captured)};
                            },
                            {ops::Const(0, "i0"), x});
  EXPECT_LT(
      ComputeGradientError({w, x}, {RandomDoubles({2}, 3), RandomDoubles({2}, 4)}, ops::ReduceSum(out[1])),
      1e-8);
}

// A resource variable read in the body: the handle enters the loop as an invariant, and its
// gradient (the read's) is summed over the iterations, as for acc = acc * 0.9 + w.
TEST(WhileLoopGrad, VariableReadInTheBody) {
  Graph g;
  auto as_default = g.AsDefault();
  Output v = ops::VarHandleOp(DT_DOUBLE, PartialTensorShape({}), "v");
  Operation init = ops::AssignVariableOp(v, ScalarD(0.5));
  Vars out = ops::WhileLoop(
      [](const Vars& u) { return ops::Less(u[0], ops::Const(3)); },
      [&](const Vars& u) {
        return Vars{ops::AddV2(u[0], ops::Const(1)),
                    ops::AddV2(ops::Mul(u[1], ScalarD(0.9)), ops::ReadVariableOp(v, DT_DOUBLE))};
      },
      {ops::Const(0, "i0"), ScalarD(2.0, "acc0")},
      // The read in the loop has no static shape (the handle's shape does not cross the Enter).
      {.shape_invariants = {PartialTensorShape({}), PartialTensorShape::Unknown()}});
  Output dv = ops::Gradients({out[1]}, {v})[0];
  ASSERT_TRUE(dv);
  Session session(g);
  session.Run({}, {}, {init});
  EXPECT_NEAR(Fetch(session, dv, {}), 2.71, 1e-12);
  EXPECT_NEAR(Fetch(session, out[1], {}), 0.729 * 2.0 + 2.71 * 0.5, 1e-12);
}

// maximum_iterations stops a loop whose condition would run 100 times after 4.
TEST(WhileLoopGrad, MaximumIterations) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Vars out =
      ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(100)); },
                     [&](const Vars& v) {
                       return Vars{ops::AddV2(v[0], ops::Const(1)), ops::Mul(v[1], x)};
                     },
                     {ops::Const(0, "i0"), ScalarD(1.0, "one")}, {.maximum_iterations = ops::Const(4)});
  Output dx = ops::Gradients({out[1]}, {x})[0];
  Session session(g);
  EXPECT_NEAR(Fetch(session, dx, {{x, Tensor::Scalar<double>(1.5)}}), 4 * std::pow(1.5, 3), 1e-9);
  EXPECT_LT(ComputeGradientError({x}, {Tensor::Scalar<double>(1.5)}, out[1]), 1e-7);
}

// Only one loop output is differentiated, but it depends on another loop variable, whose
// unused Exit then feeds zeros into the gradient loop.
TEST(WhileLoopGrad, UnusedExitOfAContributingLoopVariable) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Vars out = ops::WhileLoop(
      [](const Vars& v) { return ops::Less(v[0], ops::Const(3)); },
      [&](const Vars& v) {
        return Vars{ops::AddV2(v[0], ops::Const(1)), ops::AddV2(v[1], v[2]), ops::Mul(v[2], x)};
      },
      {ops::Const(0, "i0"), ScalarD(0.0, "a0"), x});
  EXPECT_LT(ComputeGradientError({x}, {Tensor::Scalar<double>(0.8)}, out[1]), 1e-8);
}

// A loop variable whose next value does not depend on itself (TF's PostProcessing case).
TEST(WhileLoopGrad, LoopVariableNotDependingOnItself) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(3)); },
                            [&](const Vars& v) {
                              return Vars{ops::AddV2(v[0], ops::Const(1)),
                                          ops::AddV2(v[1], ops::Square(v[2])), ops::Mul(x, ScalarD(2.0))};
                            },
                            {ops::Const(0, "i0"), ScalarD(0.0, "a0"), x});
  EXPECT_LT(ComputeGradientError({x}, {Tensor::Scalar<double>(0.8)}, out[1]), 1e-7);
}

// A loop variable the body never reads: its gradient Merge gets a zero back edge (TF's
// PostProcessing), so only the last iteration's x * 2 counts.
TEST(WhileLoopGrad, LoopVariableTheBodyNeverReads) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(3)); },
                            [&](const Vars& v) {
                              return Vars{ops::AddV2(v[0], ops::Const(1)), ops::Mul(x, ScalarD(2.0))};
                            },
                            {ops::Const(0, "i0"), ScalarD(0.0, "b0")});
  Output dx = ops::Gradients({out[1]}, {x})[0];
  Session session(g);
  EXPECT_NEAR(Fetch(session, dx, {{x, Tensor::Scalar<double>(0.8)}}), 2.0, 1e-12);
}

// Vectors whose shape the loop does not know: accumulators start from zeros of the runtime
// shape instead of a constant.
TEST(WhileLoopGrad, UnknownShapes) {
  Graph g;
  auto as_default = g.AsDefault();
  Output w = ops::Placeholder(DT_DOUBLE, PartialTensorShape({-1}), "w");
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({-1}), "x");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(2)); },
                            [&](const Vars& v) {
                              return Vars{ops::AddV2(v[0], ops::Const(1)), ops::Mul(ops::Sin(v[1]), w)};
                            },
                            {ops::Const(0, "i0"), x});
  EXPECT_LT(
      ComputeGradientError({w, x}, {RandomDoubles({3}, 5), RandomDoubles({3}, 6)}, ops::ReduceSum(out[1])),
      1e-8);
  // As TF: the gradient's Shape of a forward value runs in the forward loop, whose stack keeps
  // the shapes rather than the tensors.
  bool shape_history = false;
  for (const Operation& op : g.operations()) {
    if (op.type() == "StackPushV2" && op.input(1).op().type() == "Shape") shape_history = true;
  }
  EXPECT_TRUE(shape_history);
}

// The value of y after the loop, times something outside: the Exit's gradient arrives from
// an op, not from ys directly.
TEST(WhileLoopGrad, ExitConsumedOutsideTheLoop) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(2)); },
                            [&](const Vars& v) {
                              return Vars{ops::AddV2(v[0], ops::Const(1)), ops::Mul(v[1], x)};
                            },
                            {ops::Const(0, "i0"), x});
  Output y = ops::Mul(ops::Square(out[1]), x);
  EXPECT_LT(ComputeGradientError({x}, {Tensor::Scalar<double>(0.9)}, y), 1e-6);
}

// A loop in a loop: the inner loop's counts and values are kept per outer iteration.
TEST(WhileLoopGrad, NestedLoops) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(2)); },
                            [&](const Vars& v) {
                              Vars inner = ops::WhileLoop(
                                  [](const Vars& u) { return ops::Less(u[0], ops::Const(3)); },
                                  [&](const Vars& u) {
                                    return Vars{ops::AddV2(u[0], ops::Const(1)), ops::Mul(u[1], x)};
                                  },
                                  {ops::Const(0, "j0"), v[1]});
                              return Vars{ops::AddV2(v[0], ops::Const(1)), ops::Sin(inner[1])};
                            },
                            {ops::Const(0, "i0"), x});
  EXPECT_LT(ComputeGradientError({x}, {Tensor::Scalar<double>(0.9)}, out[1]), 1e-6);
}

TEST(WhileLoopGrad, NoGradientWithoutBackProp) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(2)); },
                            [&](const Vars& v) {
                              return Vars{ops::AddV2(v[0], ops::Const(1)), ops::Mul(v[1], x)};
                            },
                            {ops::Const(0, "i0"), x}, {.back_prop = false});
  Vars grads = ops::Gradients({out[1]}, {x});
  EXPECT_FALSE(grads[0]);
}

// Optimizers gate gradients (ops::Tuple inside the gradient loop); a second Gradients() call
// on the same loop builds a second gradient loop with its own counters.
TEST(WhileLoopGrad, GatedAndRepeatedGradients) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Output w = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "w");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(3)); },
                            [&](const Vars& v) {
                              return Vars{ops::AddV2(v[0], ops::Const(1)), ops::Mul(ops::Mul(v[1], w), x)};
                            },
                            {ops::Const(0, "i0"), ScalarD(1.0, "one")});
  Vars gated = ops::Gradients({out[1]}, {x, w}, {}, "gradients", /*gate_gradients=*/true);
  Vars again = ops::Gradients({out[1]}, {x, w});
  EXPECT_EQ(g.GetOperationByName("gradients_1/b_count_2").type(), "LoopCond");
  Session session(g);
  const FeedList feeds{{x, Tensor::Scalar<double>(1.2)}, {w, Tensor::Scalar<double>(0.7)}};
  // out = (w x)^3: d/dx = 3 w^3 x^2, d/dw = 3 w^2 x^3.
  const double dx = 3 * std::pow(0.7, 3) * 1.44, dw = 3 * 0.49 * std::pow(1.2, 3);
  for (const Vars& grads : {gated, again}) {
    EXPECT_NEAR(Fetch(session, grads[0], feeds), dx, 1e-12);
    EXPECT_NEAR(Fetch(session, grads[1], feeds), dw, 1e-12);
  }
}

// As TF: differentiating a gradient loop again is refused, naming the Exit.
TEST(WhileLoopGrad, SecondOrderGradientsAreRejected) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
  Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(2)); },
                            [&](const Vars& v) {
                              return Vars{ops::AddV2(v[0], ops::Const(1)), ops::Mul(v[1], v[1])};
                            },
                            {ops::Const(0, "i0"), x});
  Output dx = ops::Gradients({out[1]}, {x})[0];
  testing::ExpectInvalidArgument([&] { ops::Gradients({dx}, {x}); }, "second-order");
}

}  // namespace
}  // namespace flowtrain
