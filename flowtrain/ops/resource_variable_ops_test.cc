#include "flowtrain/ops/resource_variable_ops.h"

#include <cmath>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/data_flow_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/state_ops.h"
#include "flowtrain/ops/training_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"

namespace flowtrain {
namespace {

std::vector<float> Values(const Tensor& t) { return {t.flat<float>().begin(), t.flat<float>().end()}; }

// The message of the error `fn` throws, checking its type.
template <typename E, typename Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(ResourceVariableOpsTest, AssignReadUpdate) {
  Graph g;
  auto as_default = g.AsDefault();
  Output h = ops::VarHandleOp(DT_FLOAT, TensorShape({2}), "w", "", "w");
  EXPECT_EQ(h.dtype(), DT_RESOURCE);
  Operation init = ops::AssignVariableOp(h, ops::Const<float>({1, 2}));
  Output read = ops::ReadVariableOp(h, DT_FLOAT);
  EXPECT_EQ(read.shape().DebugString(), PartialTensorShape({2}).DebugString());
  Operation add = ops::AssignAddVariableOp(h, ops::Const<float>({10, 20}));
  Operation sub = ops::AssignSubVariableOp(h, ops::Const<float>({1, 1}));
  Output is_init = ops::VarIsInitializedOp(h);
  Session s(g);
  EXPECT_FALSE(s.Run({}, {is_init})[0].scalar<bool>());
  s.Run({}, {}, {init});
  EXPECT_TRUE(s.Run({}, {is_init})[0].scalar<bool>());
  Tensor before = s.Run({}, {read})[0];
  s.Run({}, {}, {add});
  EXPECT_EQ(Values(s.Run({}, {read})[0]), (std::vector<float>{11, 22}));
  // A value fetched earlier does not change under later in-place updates.
  EXPECT_EQ(Values(before), (std::vector<float>{1, 2}));
  s.Run({}, {}, {sub});
  EXPECT_EQ(Values(s.Run({}, {read})[0]), (std::vector<float>{10, 21}));
  EXPECT_EQ(s.Run({}, {ops::VariableShape(h)})[0].flat<int32_t>()[0], 2);
}

TEST(ResourceVariableOpsTest, SharedNameIsTheVariable) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = ops::VarHandleOp(DT_FLOAT, TensorShape({}), "a", "", "shared");
  Output b = ops::VarHandleOp(DT_FLOAT, TensorShape({}), "b", "", "shared");
  Operation init = ops::AssignVariableOp(a, ops::Const(3.0f));
  Session s(g);
  s.Run({}, {}, {init});
  EXPECT_EQ(s.Run({}, {ops::ReadVariableOp(b, DT_FLOAT)})[0].scalar<float>(), 3.0f);
}

TEST(ResourceVariableOpsTest, ReadingUninitializedIsFailedPreconditionNamingIt) {
  Graph g;
  auto as_default = g.AsDefault();
  Output h = ops::VarHandleOp(DT_FLOAT, TensorShape({2}), "w", "", "w");
  Output read = ops::ReadVariableOp(h, DT_FLOAT);
  Session s(g);
  const std::string msg = ErrorOf<FailedPreconditionError>([&] { s.Run({}, {read}); });
  EXPECT_NE(msg.find("Error while reading resource variable w"), std::string::npos) << msg;
  EXPECT_NE(msg.find("uninitialized"), std::string::npos) << msg;
  EXPECT_THROW(s.Run({}, {}, {ops::AssignAddVariableOp(h, ops::Const<float>({1, 1}))}),
               FailedPreconditionError);
}

TEST(ResourceVariableOpsTest, DtypeAndShapeMismatchesAreInvalidArgument) {
  Graph g;
  auto as_default = g.AsDefault();
  Output h = ops::VarHandleOp(DT_FLOAT, TensorShape({2}), "w", "", "w");
  // The declared shape is checked while building.
  EXPECT_THROW(ops::AssignVariableOp(h, ops::Const<float>({1, 2, 3})), InvalidArgumentError);
  // Another handle to the same variable, without a declared shape or with another dtype.
  Output loose = ops::VarHandleOp(DT_FLOAT, PartialTensorShape::Unknown(), "loose", "", "w");
  Output as_int = ops::VarHandleOp(DT_INT32, TensorShape({2}), "as_int", "", "w");
  Session s(g);
  s.Run({}, {}, {ops::AssignVariableOp(h, ops::Const<float>({1, 2}))});
  const std::string msg = ErrorOf<InvalidArgumentError>([&] {
    s.Run({}, {}, {ops::AssignVariableOp(as_int, ops::Const<int32_t>({1, 2}))});
  });
  EXPECT_NE(msg.find("wrong dtype"), std::string::npos) << msg;
  EXPECT_THROW(s.Run({}, {ops::ReadVariableOp(as_int, DT_INT32)}), InvalidArgumentError);
  EXPECT_THROW(s.Run({}, {}, {ops::AssignAddVariableOp(loose, ops::Const<float>({1, 2, 3}))}),
               InvalidArgumentError);
  // Updates refuse a variable of another dtype rather than reinterpret its buffer.
  EXPECT_THROW(
      s.Run({}, {}, {ops::ResourceApplyGradientDescent(as_int, ops::Const(1.0), ops::Const<double>({1, 2}))}),
      InvalidArgumentError);
}

TEST(ResourceVariableOpsTest, HandleOfAnotherKindIsInvalidArgument) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::FIFOQueue queue(10, {DT_FLOAT});
  Output read = ops::ReadVariableOp(queue.handle(), DT_FLOAT);
  Session s(g);
  const std::string msg = ErrorOf<InvalidArgumentError>([&] { s.Run({}, {read}); });
  EXPECT_NE(msg.find("resource variable handle"), std::string::npos) << msg;
  // A non-handle is refused while building.
  EXPECT_THROW(ops::ReadVariableOp(ops::Const(1.0f), DT_FLOAT), InvalidArgumentError);
}

TEST(ResourceVariableOpsTest, DestroyResourceOp) {
  Graph g;
  auto as_default = g.AsDefault();
  Output h = ops::VarHandleOp(DT_FLOAT, TensorShape({}), "w", "", "w");
  Session s(g);
  s.Run({}, {}, {ops::AssignVariableOp(h, ops::Const(1.0f))});
  s.Run({}, {}, {ops::DestroyResourceOp(h)});
  EXPECT_FALSE(s.Run({}, {ops::VarIsInitializedOp(h)})[0].scalar<bool>());
  s.Run({}, {}, {ops::DestroyResourceOp(h)});  // ignore_lookup_error defaults to true
  EXPECT_THROW(s.Run({}, {}, {ops::DestroyResourceOp(h, /*ignore_lookup_error=*/false)}), NotFoundError);
}

TEST(ResourceVariableOpsTest, DisableCopyOnReadNeedsAnExistingVariable) {
  Graph g;
  auto as_default = g.AsDefault();
  Output h = ops::VarHandleOp(DT_FLOAT, TensorShape({}), "w", "", "w");
  Session s(g);
  const std::string msg =
      ErrorOf<FailedPreconditionError>([&] { s.Run({}, {}, {ops::DisableCopyOnRead(h)}); });
  EXPECT_NE(msg.find("resource variable w"), std::string::npos) << msg;
  s.Run({}, {}, {ops::AssignVariableOp(h, ops::Const(2.5f))});
  s.Run({}, {}, {ops::DisableCopyOnRead(h)});
  EXPECT_EQ(s.Run({}, {ops::ReadVariableOp(h, DT_FLOAT)})[0].scalar<float>(), 2.5f);
  EXPECT_THROW(ops::DisableCopyOnRead(ops::Const(1.0f)), InvalidArgumentError);
}

TEST(ResourceVariableOpsTest, ResourceGather) {
  Graph g;
  auto as_default = g.AsDefault();
  Output h = ops::VarHandleOp(DT_FLOAT, TensorShape({3, 2}), "w", "", "w");
  Operation init =
      ops::AssignVariableOp(h, ops::Const(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}).Reshaped({3, 2})));
  Output rows = ops::ResourceGather(h, ops::Const<int32_t>({2, 0, 2}), DT_FLOAT);
  EXPECT_EQ(rows.shape().DebugString(), PartialTensorShape({3, 2}).DebugString());
  Session s(g);
  s.Run({}, {}, {init});
  EXPECT_EQ(Values(s.Run({}, {rows})[0]), (std::vector<float>{5, 6, 1, 2, 5, 6}));
  EXPECT_THROW(s.Run({}, {ops::ResourceGather(h, ops::Const<int32_t>({3}), DT_FLOAT)}), InvalidArgumentError);
  // batch_dims other than 0 (TF's batched gather) is refused while building.
  EXPECT_THROW(NodeBuilder("ResourceGather")
                   .Input(h)
                   .Input(ops::Const<int32_t>({0}))
                   .Attr("dtype", DT_FLOAT)
                   .Attr("batch_dims", int64_t{1})
                   .Finalize(),
               InvalidArgumentError);
}

// d(y)/d(variable) through the handle, against central finite differences taken by assigning
// perturbed values to the variable itself.
double HandleGradientError(Graph& g, const Output& handle, const Tensor& at, const Output& y) {
  Output grad = ops::Gradients({y}, {handle})[0];
  EXPECT_TRUE(grad) << "no gradient reaches the handle";
  if (!grad) return 1e9;
  Output value = ops::Placeholder(DT_DOUBLE, at.shape());
  Operation assign = ops::AssignVariableOp(handle, value);
  Session s(g);
  auto eval_y = [&](const Tensor& v) {
    s.Run({{value, v}}, {}, {assign});
    return s.Run({}, {y})[0].scalar<double>();
  };
  eval_y(at);
  Tensor symbolic = s.Run({}, {grad})[0];
  double worst = 0;
  const double delta = 1e-5;
  for (int64_t i = 0; i < at.NumElements(); ++i) {
    Tensor plus = at.DeepCopy(), minus = at.DeepCopy();
    plus.flat<double>()[i] += delta;
    minus.flat<double>()[i] -= delta;
    const double numeric = (eval_y(plus) - eval_y(minus)) / (2 * delta);
    worst = std::max(worst, std::abs(numeric - symbolic.flat<double>()[i]));
  }
  return worst;
}

TEST(ResourceVariableOpsTest, GradientThroughReadVariableOp) {
  Graph g;
  auto as_default = g.AsDefault();
  Output h = ops::VarHandleOp(DT_DOUBLE, TensorShape({2, 3}), "w", "", "w");
  Output w = ops::ReadVariableOp(h, DT_DOUBLE);
  Output y = ops::ReduceSum(ops::Square(w) * ops::Const(Tensor::FromVector<double>({1, 2, 3})));
  Tensor at(DT_DOUBLE, TensorShape({2, 3}));
  for (int i = 0; i < 6; ++i) at.flat<double>()[i] = 0.3 * i - 0.7;
  EXPECT_LT(HandleGradientError(g, h, at, y), 1e-6);
}

TEST(ResourceVariableOpsTest, GradientThroughResourceGatherIsDense) {
  Graph g;
  auto as_default = g.AsDefault();
  Output h = ops::VarHandleOp(DT_DOUBLE, TensorShape({4, 2}), "emb", "", "emb");
  Output rows = ops::ResourceGather(h, ops::Const<int64_t>({3, 1, 3}), DT_DOUBLE);
  Output y = ops::ReduceSum(ops::Square(rows) * ops::Const(Tensor::FromVector<double>({1.5, -2})));
  Tensor at(DT_DOUBLE, TensorShape({4, 2}));
  for (int i = 0; i < 8; ++i) at.flat<double>()[i] = 0.25 * i - 1;
  EXPECT_LT(HandleGradientError(g, h, at, y), 1e-6);
}

// Every ResourceApplyX runs the update of its ApplyX twin: the same results on the same
// inputs.
TEST(ResourceVariableOpsTest, ResourceApplyMatchesApply) {
  const std::vector<float> init = {1.0f, -2.0f, 3.0f};
  const std::vector<float> grad = {0.5f, -1.5f, 0.25f};
  struct Case {
    const char* name;
    int slots;
    std::function<Output(const std::vector<Output>&, Output)> ref;
    std::function<Operation(const std::vector<Output>&, Output)> resource;
  };
  auto c = [](float v) { return ops::Const(v); };
  std::vector<Case> cases = {
      {"GradientDescent", 0, [&](auto& v, Output gr) { return ops::ApplyGradientDescent(v[0], c(0.1f), gr); },
       [&](auto& v, Output gr) { return ops::ResourceApplyGradientDescent(v[0], c(0.1f), gr); }},
      {"Momentum", 1,
       [&](auto& v, Output gr) { return ops::ApplyMomentum(v[0], v[1], c(0.1f), gr, c(0.9f), false, true); },
       [&](auto& v, Output gr) {
         return ops::ResourceApplyMomentum(v[0], v[1], c(0.1f), gr, c(0.9f), false, true);
       }},
      {"Adam", 2,
       [&](auto& v, Output gr) {
         return ops::ApplyAdam(v[0], v[1], v[2], c(0.9f), c(0.999f), c(0.01f), c(0.9f), c(0.999f), c(1e-7f),
                               gr);
       },
       [&](auto& v, Output gr) {
         return ops::ResourceApplyAdam(v[0], v[1], v[2], c(0.9f), c(0.999f), c(0.01f), c(0.9f), c(0.999f),
                                       c(1e-7f), gr);
       }},
      {"Adagrad", 1, [&](auto& v, Output gr) { return ops::ApplyAdagrad(v[0], v[1], c(0.1f), gr); },
       [&](auto& v, Output gr) { return ops::ResourceApplyAdagrad(v[0], v[1], c(0.1f), gr); }},
      {"RMSProp", 2,
       [&](auto& v, Output gr) {
         return ops::ApplyRMSProp(v[0], v[1], v[2], c(0.1f), c(0.9f), c(0.5f), c(1e-7f), gr);
       },
       [&](auto& v, Output gr) {
         return ops::ResourceApplyRMSProp(v[0], v[1], v[2], c(0.1f), c(0.9f), c(0.5f), c(1e-7f), gr);
       }},
      {"CenteredRMSProp", 3,
       [&](auto& v, Output gr) {
         return ops::ApplyCenteredRMSProp(v[0], v[1], v[2], v[3], c(0.1f), c(0.9f), c(0.5f), c(1e-7f), gr);
       },
       [&](auto& v, Output gr) {
         return ops::ResourceApplyCenteredRMSProp(v[0], v[1], v[2], v[3], c(0.1f), c(0.9f), c(0.5f), c(1e-7f),
                                                  gr);
       }},
  };
  for (const Case& k : cases) {
    std::vector<float> results[2];
    for (const bool resource : {false, true}) {
      Graph g;
      auto as_default = g.AsDefault();
      std::vector<Variable> vars;
      std::vector<Output> inputs;
      for (int i = 0; i <= k.slots; ++i) {
        vars.emplace_back(Tensor::FromVector<float>(i == 0 ? init : std::vector<float>{0.5f, 0.25f, 0.125f}),
                          VariableOptions{.name = "v" + std::to_string(i), .use_resource = resource});
        inputs.push_back(vars.back().ref());
      }
      Output gr = ops::Const(Tensor::FromVector<float>(grad));
      Operation step = resource ? k.resource(inputs, gr) : k.ref(inputs, gr).op();
      if (resource) {
        EXPECT_EQ(step.type(), std::string("ResourceApply") + k.name);
      }
      EXPECT_EQ(step.num_outputs(), resource ? 0 : 1);
      Session s(g);
      s.Run({}, {}, {ops::GlobalVariablesInitializer()});
      s.Run({}, {}, {step});
      s.Run({}, {}, {step});
      results[resource] = Values(s.Run({}, {vars[0].value()})[0]);
    }
    EXPECT_EQ(results[0], results[1]) << k.name;
    EXPECT_NE(results[1], init) << k.name;
  }
}

TEST(ResourceVariableOpsTest, ResourceSparseApplyAdagradMatchesSparseApplyAdagrad) {
  std::vector<float> results[2];
  for (const bool resource : {false, true}) {
    Graph g;
    auto as_default = g.AsDefault();
    Variable var(Tensor::FromVector<float>({1, 2, 3, 4}).Reshaped({2, 2}),
                 {.name = "var", .use_resource = resource});
    Variable accum(Tensor::FromVector<float>({0.1f, 0.1f, 0.1f, 0.1f}).Reshaped({2, 2}),
                   {.name = "accum", .use_resource = resource});
    Output grad = ops::Const(Tensor::FromVector<float>({0.5f, -1}).Reshaped({1, 2}));
    Output idx = ops::Const<int32_t>({1});
    Operation step =
        resource ? ops::ResourceSparseApplyAdagrad(var.ref(), accum.ref(), ops::Const(0.1f), grad, idx)
                 : ops::SparseApplyAdagrad(var.ref(), accum.ref(), ops::Const(0.1f), grad, idx).op();
    Session s(g);
    s.Run({}, {}, {ops::GlobalVariablesInitializer()});
    s.Run({}, {}, {step});
    results[resource] = Values(s.Run({}, {var.value()})[0]);
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[1][0], 1.0f);  // row 0 untouched
  // The resource twin refuses reference inputs, and the ref op handles.
  Graph g;
  auto as_default = g.AsDefault();
  Variable ref_var(Tensor::FromVector<float>({1}), {.name = "r"});
  Variable res_var(Tensor::FromVector<float>({1}), {.name = "h", .use_resource = true});
  EXPECT_THROW(ops::ResourceApplyGradientDescent(ref_var.ref(), ops::Const(0.1f), ops::Const<float>({1})),
               InvalidArgumentError);
  EXPECT_THROW(ops::ApplyGradientDescent(res_var.ref(), ops::Const(0.1f), ops::Const<float>({1})),
               InvalidArgumentError);
}

}  // namespace
}  // namespace flowtrain
