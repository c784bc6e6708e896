// The optional ops (optional_ops.cc) run in a Session: an optional keeps its components,
// None has none and refuses GetValue.
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;

TEST(OptionalOps, FromValueKeepsItsComponentsAndNoneHasNone) {
  Graph g;
  auto scope = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape::Unknown(), "x");
  Output n = ops::Placeholder(DT_INT32, PartialTensorShape::Unknown(), "n");
  Operation some = NodeBuilder("OptionalFromValue", "some").Input(std::vector<Output>{x, n}).Finalize();
  Operation none = NodeBuilder("OptionalNone", "none").Finalize();
  std::vector<PartialTensorShape> shapes = {PartialTensorShape::Unknown(), PartialTensorShape::Unknown()};
  std::vector<DataType> types = {DT_FLOAT, DT_INT32};
  auto get = [&](Operation optional, const std::string& name) {
    return NodeBuilder("OptionalGetValue", name)
        .Input(optional.output(0))
        .Attr("output_types", types)
        .Attr("output_shapes", shapes)
        .Finalize();
  };
  get(some, "got");
  get(none, "from_none");
  NodeBuilder("OptionalHasValue", "has_some").Input(some.output(0)).Finalize();
  NodeBuilder("OptionalHasValue", "has_none").Input(none.output(0)).Finalize();

  Session s(g);
  const std::vector<Tensor> out =
      s.Run({{"x:0", Tensor::FromVector<float>({1.5f, -2.0f})}, {"n:0", Tensor::Scalar<int32_t>(7)}},
            {"got:0", "got:1", "has_some:0", "has_none:0"}, {});
  EXPECT_EQ(out[0].flat<float>()[1], -2.0f);
  EXPECT_EQ(out[1].scalar<int32_t>(), 7);
  EXPECT_TRUE(out[2].scalar<bool>());
  EXPECT_FALSE(out[3].scalar<bool>());
  ExpectInvalidArgument([&] { s.Run(std::vector<std::pair<std::string, Tensor>>{}, {"from_none:0"}, {}); },
                        {"from_none", "does not have a value"});
}

}  // namespace
}  // namespace flowtrain
