// TF1 control-flow primitives as graph nodes: the builders' op types (Ref variants for
// references), attrs and build-time shapes, and GraphDefs with a loop's back edge
// (NextIteration -> Merge) imported and exported unchanged.
#include <algorithm>

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/state_ops.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;

TEST(ControlFlowOps, BuildersPickTheOpAndItsRefVariant) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({2, 3}), "x");
  Output pred = ops::Placeholder(DT_BOOL, PartialTensorShape({}), "pred");
  ops::SwitchOutputs sw = ops::Switch(x, pred);
  EXPECT_EQ(sw.output_false.op().type(), "Switch");
  EXPECT_EQ(sw.output_false.index(), 0);
  EXPECT_EQ(sw.output_true.index(), 1);
  EXPECT_EQ(sw.output_true.shape().DebugString(), "[2,3]");

  Output var = ops::VariableV2(PartialTensorShape({2, 3}), DT_FLOAT, "v");
  ASSERT_TRUE(var.is_ref());
  EXPECT_EQ(ops::Switch(var, pred).output_true.op().type(), "RefSwitch");
  EXPECT_TRUE(ops::Switch(var, pred).output_true.is_ref());
  EXPECT_EQ(ops::Enter(var, "loop").op().type(), "RefEnter");
  EXPECT_EQ(ops::Exit(var).op().type(), "RefExit");
  EXPECT_EQ(ops::NextIteration(var).op().type(), "RefNextIteration");
  EXPECT_EQ(ops::Merge({var, var}).output.op().type(), "RefMerge");
  EXPECT_EQ(ops::Merge({var, x}).output.op().type(), "Merge");  // not all references

  Output entered = ops::Enter(x, "while/while_context", {.is_constant = true, .parallel_iterations = 32});
  EXPECT_EQ(entered.op().GetAttr<std::string>("frame_name"), "while/while_context");
  EXPECT_TRUE(entered.op().GetAttr<bool>("is_constant"));
  EXPECT_EQ(entered.op().GetAttr<int64_t>("parallel_iterations"), 32);
  EXPECT_EQ(ops::Enter(x, "f").op().GetAttr<int64_t>("parallel_iterations"), 10);  // TF's default
  EXPECT_EQ(ops::LoopCond(pred).op().type(), "LoopCond");
  EXPECT_EQ(ops::ControlTrigger().type(), "ControlTrigger");
}

TEST(ControlFlowOps, ShapesAtBuildTime) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = ops::Placeholder(DT_FLOAT, PartialTensorShape({2, 3}), "a");
  Output b = ops::Placeholder(DT_FLOAT, PartialTensorShape({2, 4}), "b");
  Output c = ops::Placeholder(DT_FLOAT, PartialTensorShape({2}), "c");
  ops::MergeOutputs same = ops::Merge({a, a});
  EXPECT_EQ(same.output.shape().DebugString(), "[2,3]");
  EXPECT_EQ(same.value_index.dtype(), DT_INT32);
  EXPECT_EQ(same.value_index.shape().DebugString(), "[]");
  EXPECT_EQ(ops::Merge({a, b}).output.shape().DebugString(), "[2,?]");
  EXPECT_TRUE(ops::Merge({a, c}).output.shape().unknown_rank());

  Output vector_pred = ops::Placeholder(DT_BOOL, PartialTensorShape({2}), "vp");
  EXPECT_THROW(ops::Switch(a, vector_pred), InvalidArgumentError);
  EXPECT_THROW(ops::LoopCond(vector_pred), InvalidArgumentError);
  EXPECT_THROW(ops::Switch(a, a), InvalidArgumentError);  // pred must be bool
  ExpectInvalidArgument([] { ops::Merge({}); }, "at least one input");
}

// i = 0; while i < 10: i += 1, built from the primitives as tf.while_loop does.
struct CountingLoop {
  Output exit;
  Operation merge;
};
CountingLoop BuildCountingLoop() {
  Output zero = ops::Const(0, "zero");
  Output entered = ops::Enter(zero, "while/while_context", {}, "while/Enter");
  ops::MergeOutputs merge = ops::Merge({entered, entered}, "while/Merge");
  Output limit =
      ops::Enter(ops::Const(10, "limit"), "while/while_context", {.is_constant = true}, "while/limit");
  Output cond = ops::LoopCond(ops::Less(merge.output, limit, "while/Less"), "while/LoopCond");
  ops::SwitchOutputs sw = ops::Switch(merge.output, cond, "while/Switch");
  Output body =
      ops::Add(ops::Identity(sw.output_true, "while/Identity"), ops::Const(1, "while/one"), "while/add");
  Output next = ops::NextIteration(body, "while/NextIteration");
  merge.output.graph()->UpdateInput(merge.output.op(), 1, next);
  return {ops::Exit(sw.output_false, "while/Exit"), merge.output.op()};
}

TEST(ControlFlowOps, ALoopsBackEdgeRoundTripsThroughAGraphDef) {
  Graph g;
  auto as_default = g.AsDefault();
  CountingLoop loop = BuildCountingLoop();
  EXPECT_EQ(loop.merge.input(1).op().type(), "NextIteration");
  tensorflow::GraphDef def = g.ToGraphDef();

  // Imported in any node order, the cycle is rebuilt and exports the same GraphDef.
  tensorflow::GraphDef shuffled = def;
  std::reverse(shuffled.mutable_node()->begin(), shuffled.mutable_node()->end());
  Graph copy;
  ImportGraphDef(shuffled, &copy);
  const Node* merge = copy.FindNode("while/Merge");
  ASSERT_NE(merge, nullptr);
  EXPECT_EQ(merge->input(0).node->name(), "while/Enter");
  EXPECT_EQ(merge->input(1).node->name(), "while/NextIteration");
  tensorflow::GraphDef again = copy.ToGraphDef();
  std::sort(again.mutable_node()->begin(), again.mutable_node()->end(),
            [](const auto& x, const auto& y) { return x.name() < y.name(); });
  std::sort(def.mutable_node()->begin(), def.mutable_node()->end(),
            [](const auto& x, const auto& y) { return x.name() < y.name(); });
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(again, def));
}

TEST(ControlFlowOps, ImportRejectsAMergeFedOnlyByNextIterations) {
  tensorflow::GraphDef def;
  auto* merge = def.add_node();
  merge->set_name("m");
  merge->set_op("Merge");
  merge->add_input("n");
  (*merge->mutable_attr())["T"].set_type(tensorflow::DT_INT32);
  (*merge->mutable_attr())["N"].set_i(1);
  auto* next = def.add_node();
  next->set_name("n");
  next->set_op("NextIteration");
  next->add_input("m");
  (*next->mutable_attr())["T"].set_type(tensorflow::DT_INT32);
  Graph g;
  ExpectInvalidArgument([&] { ImportGraphDef(def, &g); }, {"'m'", "merges only NextIteration outputs"});
}

TEST(ControlFlowOps, ImportStillRejectsOtherCycles) {
  tensorflow::GraphDef def;
  for (const char* name : {"a", "b"}) {
    auto* n = def.add_node();
    n->set_name(name);
    n->set_op("Identity");
    n->add_input(std::string(name) == "a" ? "b" : "a");
    (*n->mutable_attr())["T"].set_type(tensorflow::DT_FLOAT);
  }
  Graph g;
  ExpectInvalidArgument([&] { ImportGraphDef(def, &g); }, "cycle");
}

}  // namespace
}  // namespace flowtrain
