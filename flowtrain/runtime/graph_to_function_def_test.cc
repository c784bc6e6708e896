// GraphToFunctionDef (graph/graph_to_function_def.h): the FunctionDef's signature and body
// form, its errors, and the round trip: the function, run by GraphFunctionRuntime, gives the
// values the graph gives in a session.
#include "flowtrain/graph/graph_to_function_def.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/function_library.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/runtime/graph_function_runtime.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;
using testing::Values;

TEST(GraphToFunctionDef, WritesSignatureAndBodyInFunctionDefForm) {
  Graph body;
  auto as_default = body.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({3}), "X");
  Output parts_in = ops::Placeholder(DT_FLOAT, PartialTensorShape({4}), "x");  // name clash once lowered
  std::vector<Output> parts = ops::Split(parts_in, 2);
  Output sum = ops::Add(x, ops::Const(1.f), "sum");
  Output done = ops::Identity(parts[1], "done");
  tensorflow::FunctionDef f = GraphToFunctionDef(body, "my_fn", {x, parts_in}, {sum, done, x}, {});

  ASSERT_EQ(f.signature().input_arg_size(), 2);
  EXPECT_EQ(f.signature().input_arg(0).name(), "x");
  EXPECT_EQ(f.signature().input_arg(1).name(), "x_1");
  EXPECT_EQ(f.signature().input_arg(0).type(), DT_FLOAT);
  ASSERT_EQ(f.signature().output_arg_size(), 3);
  EXPECT_EQ(f.signature().output_arg(2).name(), "output_2");
  EXPECT_EQ(f.signature().attr_size(), 0);
  EXPECT_EQ(f.ret().at("output_0"), "sum:z:0");
  EXPECT_EQ(f.ret().at("output_1"), "done:output:0");
  EXPECT_EQ(f.ret().at("output_2"), "x");  // an argument returned as it is
  for (const auto& node : f.node_def()) {
    EXPECT_NE(node.op(), "Placeholder");
    if (node.name() == "done") EXPECT_EQ(node.input(0), "split:output:1");  // Split's `output: num_split * T`
    if (node.name() == "sum") EXPECT_EQ(node.input(0), "x");
    if (node.name() == "split") EXPECT_EQ(node.input(1), "x_1");
  }
  // A FunctionLibrary accepts it as a well-formed body.
  FunctionLibrary library;
  EXPECT_NO_THROW(library.AddFunction(f));
}

TEST(GraphToFunctionDef, RejectsWhatCannotBeAFunction) {
  Graph body, other;
  auto as_default = body.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output y = ops::Neg(x);
  ExpectInvalidArgument([&] { GraphToFunctionDef(body, "f", {y}, {y}); }, "is not a Placeholder");
  ExpectInvalidArgument([&] { GraphToFunctionDef(body, "f", {x, x}, {y}); }, "given twice");
  ExpectInvalidArgument([&] { GraphToFunctionDef(body, "", {x}, {y}); }, "needs a name");
  ExpectInvalidArgument([&] { GraphToFunctionDef(body, "f", {x}, {y}, {"a", "b"}); }, "2 output names");
  ExpectInvalidArgument([&] { GraphToFunctionDef(body, "f", {x}, {y}, {"x"}); }, "repeats");
  Output elsewhere;
  {
    auto in_other = other.AsDefault();
    elsewhere = ops::Const(1.f);
  }
  ExpectInvalidArgument([&] { GraphToFunctionDef(body, "f", {x}, {elsewhere}); },
                        "not an output of the body");
  ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "fed");
  ExpectInvalidArgument([&] { GraphToFunctionDef(body, "f", {x}, {y}); }, "fed is a placeholder");
}

// The graph, run in a session, and its FunctionDef, run by GraphFunctionRuntime, give the
// same values, control input and multi-output op included.
TEST(GraphToFunctionDef, RoundTripsThroughGraphFunctionRuntime) {
  Graph body;
  auto as_default = body.AsDefault();
  Output a = ops::Placeholder(DT_FLOAT, PartialTensorShape({4}), "a");
  Output b = ops::Placeholder(DT_INT32, PartialTensorShape({}), "b");
  std::vector<Output> halves = ops::Split(a, 2);
  Output scaled = ops::Mul(halves[1], ops::Cast(b, DT_FLOAT));
  Operation gate = ops::NoOp("gate");
  Output after = [&] {
    auto deps = body.ControlDependencies({gate});
    return ops::Sub(scaled, halves[0], "after");
  }();
  Output count = ops::Add(b, ops::Const(10), "count");
  tensorflow::FunctionDef f = GraphToFunctionDef(body, "scale_halves", {a, b}, {after, count});

  const Tensor av = Tensor::FromVector<float>({1.f, 2.f, 3.f, 4.f});
  const Tensor bv = Tensor::Scalar<int32_t>(3);
  Session session(body);
  std::vector<Tensor> expected = session.Run({{a, av}, {b, bv}}, {after, count});

  FunctionLibrary library;
  library.AddFunction(f);
  auto resources = std::make_shared<ResourceMgr>();  // the runtime holds it weakly
  auto runtime = GraphFunctionRuntime::Create(library, resources);
  std::vector<Tensor> got = runtime->Run("scale_halves", {av, bv});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(Values<float>(got[0]), Values<float>(expected[0]));
  EXPECT_EQ(Values<float>(got[0]), (std::vector<float>{8.f, 10.f}));
  EXPECT_EQ(Values<int32_t>(got[1]), std::vector<int32_t>{13});
}

}  // namespace
}  // namespace flowtrain
