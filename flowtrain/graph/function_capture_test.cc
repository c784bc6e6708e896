// CaptureExternalInputs (graph/function_capture.h): inputs from other graphs replaced by what
// the capture function returns, only for the body graph and only while the guard lives.
#include "flowtrain/graph/function_capture.h"

#include <gtest/gtest.h>

#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"

namespace flowtrain {
namespace {

FT_REGISTER_OP("FunctionCaptureTestConst").Output("output: float").SetShapeFn(shape_fns::ScalarShape);
FT_REGISTER_OP("FunctionCaptureTestAdd").Input("x: float").Input("y: float").Output("z: float");

Output TestConst() { return NodeBuilder("FunctionCaptureTestConst").Finalize(); }
Output TestAdd(Output x, Output y) {
  return NodeBuilder("FunctionCaptureTestAdd").Input(x).Input(y).Finalize();
}

TEST(FunctionCapture, ForeignInputsGoThroughTheCaptureFunction) {
  Graph outer, body;
  Output outer_value;
  {
    auto in_outer = outer.AsDefault();
    outer_value = TestConst();
  }
  auto in_body = body.AsDefault();
  Output local = TestConst();
  // Without a guard, mixing graphs is NodeBuilder's error.
  EXPECT_THROW(TestAdd(local, outer_value), InvalidArgumentError);
  std::vector<Output> captured;
  Output sum;
  {
    auto capturing = CaptureExternalInputs(body, [&](const Output& foreign) {
      captured.push_back(foreign);
      return TestConst();  // stands for it in `body`
    });
    EXPECT_TRUE(CaptureFunctionFor(body));
    EXPECT_FALSE(CaptureFunctionFor(outer));
    sum = TestAdd(outer_value, local);  // the first input foreign: the op still builds in `body`
  }
  EXPECT_FALSE(CaptureFunctionFor(body));
  ASSERT_EQ(captured.size(), 1u);
  EXPECT_EQ(captured[0], outer_value);
  EXPECT_EQ(sum.graph(), &body);
  EXPECT_NE(sum.node()->input(0).node, outer_value.node());
  EXPECT_EQ(sum.node()->input(0).node->graph(), &body);
  EXPECT_EQ(sum.node()->input(1).node, local.node());
}

}  // namespace
}  // namespace flowtrain
