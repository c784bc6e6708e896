#include "flowtrain/ops/layers.h"

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/variable_scope.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain {
namespace {

std::vector<std::string> VariableNames() {
  std::vector<std::string> names;
  for (const Variable& v : ops::GlobalVariables()) names.push_back(v.op().name());
  return names;
}

TEST(LayersTest, NamesFollowTfLayers) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, {-1, 8, 8, 1}, "x");
  Output h = layers::Conv2D(x, 4, {3, 3}, {1, 1}, "same", ops::Relu);
  EXPECT_EQ(h.op().name(), "conv2d/Relu");
  EXPECT_EQ(h.shape().DebugString(), "[?,8,8,4]");
  EXPECT_NE(g.FindNode("conv2d/Conv2D"), nullptr);
  EXPECT_NE(g.FindNode("conv2d/BiasAdd"), nullptr);
  h = layers::MaxPooling2D(h, {2, 2}, {2, 2});
  EXPECT_EQ(h.op().name(), "max_pooling2d/MaxPool");
  EXPECT_EQ(h.shape().DebugString(), "[?,4,4,4]");
  h = layers::Flatten(h);
  EXPECT_EQ(h.op().name(), "flatten/Reshape");
  EXPECT_EQ(h.shape().DebugString(), "[?,64]");
  h = layers::Dense(h, 16, ops::Relu);
  EXPECT_EQ(h.op().name(), "dense/Relu");
  EXPECT_NE(g.FindNode("dense/MatMul"), nullptr);
  EXPECT_NE(g.FindNode("dense/BiasAdd"), nullptr);
  h = layers::Dropout(h, 0.5, /*training=*/true);
  Output logits = layers::Dense(h, 10, nullptr, {.use_bias = false});
  EXPECT_EQ(logits.op().name(), "dense_1/MatMul");
  EXPECT_EQ(logits.shape().DebugString(), "[?,10]");
  Output named = layers::Dense(logits, 2, ops::Tanh, {.name = "head"});
  EXPECT_EQ(named.op().name(), "head/Tanh");
  EXPECT_EQ(VariableNames(),
            (std::vector<std::string>{"conv2d/kernel", "conv2d/bias", "dense/kernel", "dense/bias",
                                      "dense_1/kernel", "head/kernel", "head/bias"}));
  EXPECT_EQ(g.FindNode("conv2d/kernel")->GetAttr<PartialTensorShape>("shape").DebugString(), "[3,3,1,4]");
  EXPECT_NE(g.FindNode("dense/kernel/Initializer/random_uniform"), nullptr);
  EXPECT_NE(g.FindNode("dense/bias/Initializer/zeros"), nullptr);
  // Inside a variable scope, layer variables nest.
  Output flat = ops::Placeholder(DT_FLOAT, {-1, 3}, "flat");
  {
    ops::VariableScope scope("model");
    layers::Dense(flat, 3, nullptr, {.name = "fc"});
  }
  EXPECT_NE(g.FindNode("model/fc/kernel"), nullptr);
  EXPECT_NE(g.FindNode("model/fc/MatMul"), nullptr);
  // Reusing a layer name without reuse is TF's "already exists" error; inputs must be rank 2.
  EXPECT_THROW(layers::Dense(flat, 3, nullptr, {.name = "head"}), InvalidArgumentError);
  EXPECT_THROW(layers::Dense(x, 3), InvalidArgumentError);
}

TEST(LayersTest, DenseComputesAffineMap) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Const<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Output y = layers::Dense(x, 2, ops::Relu,
                           {.kernel_initializer = ops::ConstantInitializer(1.0),
                            .bias_initializer = ops::ConstantInitializer(-7.0)});
  Session s(g);
  s.Run({}, {}, {ops::GlobalVariablesInitializer()});
  Tensor out = y.Eval(s);
  // rows: 6 - 7 -> relu 0; 15 - 7 = 8.
  EXPECT_EQ(out.flat<float>()[0], 0.0f);
  EXPECT_EQ(out.flat<float>()[2], 8.0f);
}

TEST(LayersTest, DropoutScalesKeptValuesAndIsIdentityInInference) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Const(Tensor::FromVector<float>(std::vector<float>(10000, 1.0f)));
  Output train = layers::Dropout(x, 0.25, true, 3);
  Output infer = layers::Dropout(x, 0.25, false);
  EXPECT_EQ(infer.op().type(), "Identity");
  Session s(g);
  auto out = s.Run({}, {train, infer});
  int kept = 0;
  for (float v : out[0].flat<float>()) {
    if (v != 0.0f) {
      EXPECT_NEAR(v, 1.0f / 0.75f, 1e-6);
      ++kept;
    }
  }
  EXPECT_NEAR(kept / 10000.0, 0.75, 0.02);
  for (float v : out[1].flat<float>()) EXPECT_EQ(v, 1.0f);
  EXPECT_THROW(layers::Dropout(x, 1.0, true), InvalidArgumentError);
}

}  // namespace
}  // namespace flowtrain
