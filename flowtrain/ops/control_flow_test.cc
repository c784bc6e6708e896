// ops::Cond, ops::Case and ops::WhileLoop at build time: TF's node names, the pivots gating
// constants, the contexts nodes are built in, the Enters of loop invariants, shape
// invariants, the gradient nodes of a cond, and the InvalidArgument errors of bad input
// (node-for-node equality with TF and the values are checked by tests/tf/control_flow_test).
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/internal/control_flow_context.h"
#include "flowtrain/ops/math_ops.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using ops::control_flow_internal::ContextOf;
using testing::ExpectInvalidArgument;

std::vector<std::string> InputNames(const Operation& op) {
  std::vector<std::string> names;
  for (int i = 0; i < op.num_inputs(); ++i) names.push_back(op.input(i).name());
  for (const Operation& c : op.control_inputs()) names.push_back("^" + c.name());
  return names;
}

using Strings = std::vector<std::string>;

TEST(Cond, BuildsTfsNodesAndGatesTheBranches) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({2}), "x");
  Output pred = ops::Placeholder(DT_BOOL, PartialTensorShape({}), "p");
  Output r = ops::Cond(
      pred, [&] { return ops::Square(x); },
      [&] {
        return ops::Const({1.0f, 2.0f}, "c");
      });
  EXPECT_EQ(r.name(), "cond/Merge:0");
  EXPECT_EQ(r.shape().DebugString(), "[2]");
  EXPECT_EQ(InputNames(g.GetOperationByName("cond/Switch")), (Strings{"p:0", "p:0"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("cond/switch_t")), (Strings{"cond/Switch:1"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("cond/switch_f")), (Strings{"cond/Switch:0"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("cond/pred_id")), (Strings{"p:0"}));
  // x enters the true branch through a Switch on pred_id, colocated with x.
  EXPECT_EQ(InputNames(g.GetOperationByName("cond/Square")), (Strings{"cond/Square/Switch:1"}));
  Operation sw = g.GetOperationByName("cond/Square/Switch");
  EXPECT_EQ(InputNames(sw), (Strings{"x:0", "cond/pred_id:0"}));
  EXPECT_EQ(sw.node()->GetAttr<std::vector<std::string>>("_class"), (Strings{"loc:@x"}));
  // A constant of the false branch runs only when the branch is taken.
  EXPECT_EQ(InputNames(g.GetOperationByName("cond/c")), (Strings{"^cond/switch_f"}));
  EXPECT_EQ(InputNames(r.op()), (Strings{"cond/c:0", "cond/Square:0"}));

  auto* ctx_t = ContextOf(g.GetOperationByName("cond/Square"));
  auto* ctx_f = ContextOf(g.GetOperationByName("cond/c"));
  ASSERT_NE(ctx_t, nullptr);
  ASSERT_NE(ctx_f, nullptr);
  ASSERT_NE(ctx_t->AsCond(), nullptr);
  EXPECT_EQ(ctx_t->AsCond()->branch(), 1);
  EXPECT_EQ(ctx_f->AsCond()->branch(), 0);
  EXPECT_EQ(ctx_t->AsCond()->pred().name(), "cond/pred_id:0");
  EXPECT_EQ(ContextOf(r.op()), nullptr);
  EXPECT_EQ(ContextOf(x.op()), nullptr);
  // After the cond, nodes are built outside any context again.
  EXPECT_EQ(ContextOf(ops::Neg(r).op()), nullptr);
}

TEST(Cond, PassesAnOutsideTensorThroughASwitchAndNamesCondsUniquely) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output pred = ops::Placeholder(DT_BOOL, PartialTensorShape({}), "p");
  Output first = ops::Cond(
      pred, [&] { return x; }, [&] { return ops::Neg(x); });
  EXPECT_EQ(InputNames(first.op()), (Strings{"cond/Neg:0", "cond/Switch_1:1"}));
  Output second = ops::Cond(
      pred, [&] { return x; }, [&] { return x; });
  EXPECT_EQ(second.name(), "cond_1/Merge:0");
  EXPECT_EQ(InputNames(second.op()), (Strings{"cond_1/Switch_2:0", "cond_1/Switch_1:1"}));
}

TEST(Cond, RejectsBadPredicatesAndMismatchedBranches) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output pred = ops::Placeholder(DT_BOOL, PartialTensorShape({}), "p");
  auto fx = [&] { return x; };
  ExpectInvalidArgument([&] { ops::Cond(x, fx, fx); }, {"cond", "x:0", "must be a bool tensor, not float"});
  Output preds = ops::Placeholder(DT_BOOL, PartialTensorShape({3}), "ps");
  ExpectInvalidArgument([&] { ops::Cond(preds, fx, fx, "c"); }, {"cond 'c", "must be a scalar", "[3]"});
  ExpectInvalidArgument(
      [&] {
        ops::Cond(
            pred,
            [&] {
              return std::vector<Output>{x, x};
            },
            [&] { return std::vector<Output>{x}; }, "two");
      },
      {"cond 'two", "true_fn returned 2 tensors but false_fn 1"});
  ExpectInvalidArgument(
      [&] {
        ops::Cond(
            pred, fx, [&] { return ops::Const(1); }, "types");
      },
      {"cond 'types", "output 0", "same type: float, int32"});
  ExpectInvalidArgument(
      [&] {
        ops::Cond(
            pred, [] { return std::vector<Output>{}; }, [&] { return std::vector<Output>{x}; }, "none");
      },
      {"true_fn of cond 'none", "at least one tensor"});
  ExpectInvalidArgument([&] { ops::Cond(pred, ops::BranchFn(), ops::BranchFn(), "empty"); },
                        {"cond 'empty", "needs both"});
}

TEST(Case, NestsCondsFromTheLastPredicate) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output a = ops::Less(x, ops::Const(0.0f));
  Output b = ops::Less(x, ops::Const(1.0f));
  Output r =
      ops::Case({{a, [] { return ops::Const(-1.0f, "m"); }}, {b, [] { return ops::Const(0.5f, "h"); }}},
                [] { return ops::Const(1.0f, "d"); });
  EXPECT_EQ(r.name(), "case/cond/Merge:0");
  EXPECT_EQ(InputNames(r.op()), (Strings{"case/cond/cond/Merge:0", "case/cond/m:0"}));
  // The inner cond's predicate is switched into the outer cond's false branch.
  EXPECT_EQ(InputNames(g.GetOperationByName("case/cond/cond/Switch")),
            (Strings{"case/cond/cond/Switch/Switch:0", "case/cond/cond/Switch/Switch:0"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("case/cond/cond/d")), (Strings{"^case/cond/cond/switch_f"}));
  ExpectInvalidArgument(
      [&] {
        ops::Case({{x, [] { return ops::Const(1.0f); }}}, [] { return ops::Const(1.0f); });
      },
      {"case 'case'", "bool"});
  ExpectInvalidArgument(
      [&] {
        ops::Case({{a, [] { return ops::Const(1.0f); }}}, ops::SingleBranchFn());
      },
      {"case 'case'", "default"});
}

TEST(WhileLoop, BuildsTfsFrameAndEntersLoopInvariantsOnce) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({3}), "x");
  std::vector<Output> out =
      ops::WhileLoop([](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(4, "n")); },
                     [&](const std::vector<Output>& v) {
                       return std::vector<Output>{
                           ops::AddV2(v[0], ops::Const(1, "one")),
                           ops::Mul(v[1], x),
                       };
                     },
                     {ops::Const(0, "i"), x}, {.parallel_iterations = 3});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name(), "while/Exit:0");
  EXPECT_EQ(out[1].name(), "while/Exit_1:0");
  EXPECT_EQ(out[1].shape().DebugString(), "[3]");
  Operation enter = g.GetOperationByName("while/Enter");
  EXPECT_EQ(enter.node()->GetAttr<std::string>("frame_name"), "while/while_context");
  EXPECT_FALSE(enter.node()->GetAttr<bool>("is_constant"));
  EXPECT_EQ(enter.node()->GetAttr<int64_t>("parallel_iterations"), 3);
  EXPECT_EQ(InputNames(g.GetOperationByName("while/Merge")),
            (Strings{"while/Enter:0", "while/NextIteration:0"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("while/n")), (Strings{"^while/Merge"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("while/LoopCond")), (Strings{"while/Less:0"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("while/Switch_1")),
            (Strings{"while/Merge_1:0", "while/LoopCond:0"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("while/Identity_1")), (Strings{"while/Switch_1:1"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("while/one")), (Strings{"^while/Identity"}));
  // x, read by the body, enters once as a loop invariant.
  Operation invariant = g.GetOperationByName("while/Mul/Enter");
  EXPECT_TRUE(invariant.node()->GetAttr<bool>("is_constant"));
  EXPECT_EQ(InputNames(g.GetOperationByName("while/Mul")),
            (Strings{"while/Identity_1:0", "while/Mul/Enter:0"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("while/NextIteration_1")), (Strings{"while/Mul:0"}));
  EXPECT_EQ(InputNames(out[1].op()), (Strings{"while/Switch_1:0"}));
  auto* ctx = ContextOf(g.GetOperationByName("while/Mul"));
  ASSERT_NE(ctx, nullptr);
  ASSERT_NE(ctx->AsWhile(), nullptr);
  EXPECT_EQ(ctx->AsWhile()->frame_name(), "while/while_context");
  EXPECT_EQ(ctx->AsWhile()->pivot().name(), "while/LoopCond:0");
  EXPECT_EQ(ctx->AsWhile()->loop_exits().size(), 2u);

  // A second loop gets its own frame.
  std::vector<Output> again = ops::WhileLoop(
      [](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(2)); },
      [](const std::vector<Output>& v) { return std::vector<Output>{ops::AddV2(v[0], ops::Const(1))}; },
      {ops::Const(0)});
  EXPECT_EQ(g.GetOperationByName("while_1/Enter").node()->GetAttr<std::string>("frame_name"),
            "while_1/while_context");
}

TEST(WhileLoop, MaximumIterationsAddsTfsCounter) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output limit = ops::Const(int64_t{7}, "limit");
  std::vector<Output> out =
      ops::WhileLoop([](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(9.0f, "nine")); },
                     [](const std::vector<Output>& v) { return std::vector<Output>{ops::Mul(v[0], v[0])}; },
                     {x}, {.maximum_iterations = limit});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name(), "while/Exit_1:0");
  Operation counter = g.GetOperationByName("while/iteration_counter");
  EXPECT_EQ(counter.output(0).dtype(), DT_INT64);
  EXPECT_EQ(InputNames(g.GetOperationByName("while/Less")), (Strings{"while/Merge:0", "while/Less/Enter:0"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("while/LogicalAnd")),
            (Strings{"while/Less:0", "while/Less_1:0"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("while/add")), (Strings{"while/Identity:0", "while/add/y:0"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("while/add/y")), (Strings{"^while/Identity"}));
}

TEST(WhileLoop, ShapeInvariantsLetAShapeGrow) {
  Graph g;
  auto as_default = g.AsDefault();
  Output v0 = ops::Const({1.0f}, "v0");
  auto grow = [](const std::vector<Output>& v) {
    return std::vector<Output>{ops::ConcatV2({v[0], v[0]}, ops::Const(0))};
  };
  auto small = [](const std::vector<Output>& v) { return ops::Less(ops::Size(v[0]), ops::Const(8)); };
  ExpectInvalidArgument(
      [&] { ops::WhileLoop(small, grow, {v0}); },
      {"while loop 'while'", "v0:0", "enters the loop with shape [1]", "[2]", "shape_invariants"});
  std::vector<Output> out =
      ops::WhileLoop(small, grow, {v0}, {.shape_invariants = {PartialTensorShape({-1})}});
  EXPECT_EQ(out[0].shape().DebugString(), "[?]");
  EXPECT_EQ(g.GetOperationByName("while_1/Merge").output(0).shape().DebugString(), "[?]");
  ExpectInvalidArgument(
      [&] {
        ops::WhileLoop(small, grow, {v0}, {.shape_invariants = {PartialTensorShape({2})}, .name = "bad"});
      },
      {"while loop 'bad'", "shape invariant specified for v0:0", "shape [1]", "[2]"});
}

TEST(WhileLoop, RejectsBadBodiesConditionsAndLimits) {
  Graph g;
  auto as_default = g.AsDefault();
  Output i0 = ops::Const(0, "i0");
  auto below = [](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(3)); };
  auto next = [](const std::vector<Output>& v) {
    return std::vector<Output>{ops::AddV2(v[0], ops::Const(1))};
  };
  ExpectInvalidArgument([&] { ops::WhileLoop(below, next, {}, {.name = "empty"}); },
                        {"while loop 'empty'", "no loop variables"});
  ExpectInvalidArgument(
      [&] {
        ops::WhileLoop(below,
                       [](const std::vector<Output>& v) {
                         return std::vector<Output>{v[0], v[0]};
                       },
                       {i0}, {.name = "count"});
      },
      {"while loop 'count", "returned 2 tensors for 1 loop variables"});
  ExpectInvalidArgument(
      [&] {
        ops::WhileLoop(
            below,
            [](const std::vector<Output>& v) { return std::vector<Output>{ops::Cast(v[0], DT_FLOAT)}; }, {i0},
            {.name = "dtype"});
      },
      {"while loop 'dtype", "loop variable 0 (i0:0) is int32 but the body returned float"});
  ExpectInvalidArgument(
      [&] {
        ops::WhileLoop([](const std::vector<Output>& v) { return v[0]; }, next, {i0}, {.name = "notbool"});
      },
      {"while loop 'notbool", "cond must return a scalar bool, not int32"});
  ExpectInvalidArgument(
      [&] {
        ops::WhileLoop(below, next, {i0}, {.maximum_iterations = ops::Const({1, 2}), .name = "limit"});
      },
      {"while loop 'limit", "maximum_iterations must be a scalar", "[2]"});
  ExpectInvalidArgument(
      [&] { ops::WhileLoop(below, next, {i0}, {.maximum_iterations = ops::Const(2.0f), .name = "flimit"}); },
      {"while loop 'flimit", "int32 or int64, not float"});
  ExpectInvalidArgument([&] { ops::WhileLoop(below, next, {i0}, {.parallel_iterations = 0, .name = "pi"}); },
                        {"while loop 'pi", "parallel_iterations must be a positive integer"});
}

TEST(ControlFlowContexts, OutermostJoinTfsCollectionsWithTheirNestedOnes) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  ops::WhileLoop([](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(9.0f)); },
                 [&](const std::vector<Output>& v) {
                   return std::vector<Output>{ops::Cond(
                       ops::Less(v[0], x), [&] { return ops::Mul(v[0], x); }, [&] { return v[0]; })};
                 },
                 {x});
  using ops::control_flow_internal::ControlFlowContextPtr;
  const auto loops = g.GetCollection<ControlFlowContextPtr>(GraphKeys::kWhileContext);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_TRUE(g.GetCollection<ControlFlowContextPtr>(GraphKeys::kCondContext).empty());
  tensorflow::ControlFlowContextDef def;
  loops[0]->ToProto(&def);
  ASSERT_TRUE(def.has_while_ctxt());
  const tensorflow::WhileContextDef& loop = def.while_ctxt();
  EXPECT_EQ(loop.context_name(), "while/while_context");
  EXPECT_EQ(loop.pivot_name(), "while/LoopCond:0");
  EXPECT_EQ(loop.pivot_for_body_name(), "while/Identity:0");
  EXPECT_EQ(loop.values_def().external_values().at("x:0"), "while/Less_1/Enter:0");
  ASSERT_EQ(loop.nested_contexts_size(), 2);
  EXPECT_EQ(loop.nested_contexts(0).cond_ctxt().context_name(), "while/cond/cond_text");
  EXPECT_EQ(loop.nested_contexts(0).cond_ctxt().branch(), 1);
  EXPECT_EQ(loop.nested_contexts(1).cond_ctxt().context_name(), "while/cond/cond_text_1");
  EXPECT_EQ(loop.nested_contexts(1).cond_ctxt().pivot_name(), "while/cond/switch_f:0");
}

TEST(CondGradients, AreTfsSwitchAndMergeWithZerosForTheUntakenSide) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output r = ops::Cond(
      ops::Greater(x, ops::Const(0.0f, "zero")), [&] { return ops::Square(x); }, [&] { return ops::Neg(x); });
  std::vector<Output> grads = ops::Gradients({r}, {x});
  ASSERT_TRUE(grads[0].valid());
  Operation merge_grad = g.GetOperationByName("gradients/cond/Merge_grad/cond_grad");
  EXPECT_EQ(merge_grad.type(), "Switch");
  EXPECT_EQ(merge_grad.input(1).name(), "cond/pred_id:0");
  // Each branch Switch's gradient is a Merge of its gradient and zeros alive on the other side.
  Operation neg_switch_grad = g.GetOperationByName("gradients/cond/Neg/Switch_grad/cond_grad");
  EXPECT_EQ(neg_switch_grad.type(), "Merge");
  EXPECT_EQ(InputNames(neg_switch_grad)[1], "gradients/zeros:0");
  EXPECT_EQ(InputNames(g.GetOperationByName("gradients/Switch")), (Strings{"x:0", "cond/pred_id:0"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("gradients/Identity")), (Strings{"gradients/Switch:1"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("gradients/zeros/Const")), (Strings{"^gradients/Identity"}));
  EXPECT_EQ(InputNames(g.GetOperationByName("gradients/zeros")),
            (Strings{"gradients/Shape_1:0", "gradients/zeros/Const:0"}));
  EXPECT_EQ(grads[0].op().type(), "AddN");
}

}  // namespace
}  // namespace flowtrain
