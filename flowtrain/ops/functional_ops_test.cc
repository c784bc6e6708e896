// ToBool (functional_ops.cc), the truth test of a non-bool If predicate, runs in a Session
// with TF's truth rules.
#include <gtest/gtest.h>

#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain {
namespace {

TEST(FunctionalOps, ToBoolFollowsTfsTruthRules) {
  Graph g;
  auto scope = g.AsDefault();
  Output f = ops::Placeholder(DT_FLOAT, PartialTensorShape::Unknown(), "f");
  Output str = ops::Placeholder(DT_STRING, PartialTensorShape::Unknown(), "str");
  NodeBuilder("ToBool", "f_truth").Input(f).Finalize();
  NodeBuilder("ToBool", "str_truth").Input(str).Finalize();
  Session s(g);
  auto truth = [&](const std::string& feed, Tensor value) {
    return s.Run({{feed + ":0", value}}, {feed + "_truth:0"}, {})[0].scalar<bool>();
  };
  EXPECT_TRUE(truth("f", Tensor::Scalar(0.5f)));
  EXPECT_FALSE(truth("f", Tensor::Scalar(0.0f)));
  EXPECT_FALSE(truth("f", Tensor::Scalar(-0.0f)));
  EXPECT_TRUE(truth("f", Tensor::FromVector<float>({0.0f})));  // not a scalar: has elements
  EXPECT_FALSE(truth("f", Tensor::FromVector<float>({})));
  EXPECT_TRUE(truth("str", Tensor::Scalar<std::string>("a")));
  EXPECT_FALSE(truth("str", Tensor::Scalar<std::string>("")));
}

}  // namespace
}  // namespace flowtrain
