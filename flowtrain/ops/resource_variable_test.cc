// Variable with use_resource: TF 1.15's ResourceVariable nodes and behaviour.
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variable_scope.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain {
namespace {

std::string TypeOf(Graph& g, std::string_view name) {
  Node* n = g.FindNode(name);
  return n == nullptr ? "<missing>" : n->type();
}

TEST(ResourceVariableTest, NodesAsTf115) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable w(Tensor::FromVector<float>({1, 2}), {.name = "w", .use_resource = true});
  EXPECT_TRUE(w.is_resource());
  EXPECT_EQ(w.name(), "w:0");
  EXPECT_EQ(w.dtype(), DT_FLOAT);
  EXPECT_EQ(w.shape().DebugString(), PartialTensorShape({2}).DebugString());
  EXPECT_EQ(TypeOf(g, "w"), "VarHandleOp");
  EXPECT_EQ(g.FindNode("w")->GetAttr<std::string>("shared_name"), "w");
  EXPECT_EQ(TypeOf(g, "w/IsInitialized/VarIsInitializedOp"), "VarIsInitializedOp");
  EXPECT_EQ(TypeOf(g, "w/Assign"), "AssignVariableOp");
  EXPECT_EQ(TypeOf(g, "w/Read/ReadVariableOp"), "ReadVariableOp");
  EXPECT_EQ(TypeOf(g, "w/Initializer/initial_value"), "Const");
  EXPECT_EQ(w.initializer().name(), "w/Assign");
  EXPECT_EQ(w.snapshot().name(), "w/Read/ReadVariableOp:0");
  EXPECT_EQ(w.initial_value().name(), "w/Initializer/initial_value:0");

  // Each use reads afresh, in the current scope.
  Output y;
  {
    auto scope = g.NameScope("layer");
    y = ops::Mul(w, w);
  }
  EXPECT_EQ(y.op().input(0).node()->type(), "ReadVariableOp");
  EXPECT_NE(y.op().input(0).node(), w.snapshot().node());

  Session s(g);
  EXPECT_THROW(s.Run({}, {w.snapshot()}), FailedPreconditionError);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  Tensor got = s.Run({}, {y})[0];
  EXPECT_EQ(got.flat<float>()[1], 4.0f);
  Output assigned = w.Assign(ops::Const<float>({5, 6}));
  EXPECT_EQ(assigned.op().control_inputs().at(0).type(), "AssignVariableOp");
  EXPECT_EQ(s.Run({}, {assigned})[0].flat<float>()[0], 5.0f);
  EXPECT_EQ(s.Run({}, {w.AssignAdd(ops::Const<float>({1, 1}))})[0].flat<float>()[1], 7.0f);
  EXPECT_EQ(s.Run({}, {w.AssignSub(ops::Const<float>({2, 2}))})[0].flat<float>()[1], 5.0f);
  // A wrongly shaped value fails while building.
  EXPECT_THROW(w.Assign(ops::Const<float>({1, 2, 3})), InvalidArgumentError);
}

TEST(ResourceVariableTest, InitializerFunctionAndReportUninitialized) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable w([] { return ops::ZerosInitializer()(TensorShape({3}), DT_FLOAT); },
             {.name = "w", .use_resource = true});
  Variable r(Tensor::FromVector<float>({1}), {.name = "r"});
  EXPECT_EQ(w.initial_value().name().rfind("w/Initializer/", 0), 0u) << w.initial_value().name();
  Output report = ops::ReportUninitializedVariables();
  Session s(g);
  Tensor names = s.Run({}, {report})[0];
  ASSERT_EQ(names.NumElements(), 2);
  EXPECT_EQ(names.flat<std::string>()[0], "w");
  s.Run({}, {}, {w.initializer()});
  names = s.Run({}, {report})[0];
  ASSERT_EQ(names.NumElements(), 1);
  EXPECT_EQ(names.flat<std::string>()[0], "r");
}

TEST(ResourceVariableTest, FromGraphRecoversTheResourceVariable) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable w(Tensor::FromVector<float>({1, 2}), {.name = "w", .use_resource = true});
  Variable again = Variable::FromGraph(g, "w");
  EXPECT_TRUE(again.is_resource());
  EXPECT_EQ(again.dtype(), DT_FLOAT);
  EXPECT_EQ(again.shape().DebugString(), w.shape().DebugString());
  EXPECT_EQ(again.snapshot().name(), "w/Read/ReadVariableOp:0");
  EXPECT_EQ(again.initializer().name(), "w/Assign");
  EXPECT_EQ(again.initial_value().name(), "w/Initializer/initial_value:0");
}

TEST(ResourceVariableTest, GetVariableUseResource) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable plain = ops::GetVariable("plain", {2});
  EXPECT_FALSE(plain.is_resource());
  Variable direct =
      ops::GetVariable("direct", {2}, DT_FLOAT, ops::ZerosInitializer(), {.use_resource = true});
  EXPECT_TRUE(direct.is_resource());
  EXPECT_EQ(TypeOf(g, "direct"), "VarHandleOp");
  {
    ops::VariableScope outer("dense", {.use_resource = true});
    {
      ops::VariableScope inner("inner");
      Variable k = ops::GetVariable("kernel", {2, 3});
      EXPECT_TRUE(k.is_resource());
      EXPECT_EQ(k.op().name(), "dense/inner/kernel");
      EXPECT_EQ(TypeOf(g, "dense/inner/kernel/Read/ReadVariableOp"), "ReadVariableOp");
      Variable ref = ops::GetVariable("ref", {2}, DT_FLOAT, ops::ZerosInitializer(), {.use_resource = false});
      EXPECT_FALSE(ref.is_resource());
    }
  }
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  EXPECT_EQ(s.Run({}, {direct.value()})[0].NumElements(), 2);
}

}  // namespace
}  // namespace flowtrain
