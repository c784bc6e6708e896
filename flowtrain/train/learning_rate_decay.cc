#include "flowtrain/train/learning_rate_decay.h"

#include <cmath>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain::train {
namespace {

Output AsFloat(const Output& x) { return x.dtype() == DT_FLOAT ? x : ops::Cast(x, DT_FLOAT); }

void RequireScalarStep(const Output& step, std::string_view op) {
  if (!step) InvalidArgument(op, ": global_step is required");
  if (step.shape().dims() > 0) {
    InvalidArgument(op, ": global_step must be a scalar, got shape ", step.shape().DebugString());
  }
}

}  // namespace

Output ExponentialDecay(double learning_rate, Output global_step, int64_t decay_steps, double decay_rate,
                        bool staircase, std::string_view name) {
  RequireScalarStep(global_step, "exponential_decay");
  if (decay_steps <= 0) InvalidArgument("exponential_decay: decay_steps must be positive");
  Graph& graph = *global_step.graph();
  auto as_default = graph.AsDefault();
  OpNameScope scope(graph, name);
  Output lr = ops::Const(static_cast<float>(learning_rate), "initial_learning_rate");
  Output steps = ops::Const(static_cast<float>(decay_steps), "decay_steps");
  Output rate = ops::Const(static_cast<float>(decay_rate), "decay_rate");
  Output step = AsFloat(global_step);
  // floor(step / decay_steps) for the staircase; FloorDiv on floats is exactly that.
  Output p = staircase ? ops::FloorDiv(step, steps) : step / steps;
  Output decay = ops::Pow(rate, p);
  scope.Exit();
  return NodeBuilder("Mul", scope.op_name()).ExactName().Input(lr).Input(decay).Finalize();
}

Output CosineDecay(double learning_rate, Output global_step, int64_t decay_steps, double alpha,
                   std::string_view name) {
  RequireScalarStep(global_step, "cosine_decay");
  if (decay_steps <= 0) InvalidArgument("cosine_decay: decay_steps must be positive");
  Graph& graph = *global_step.graph();
  auto as_default = graph.AsDefault();
  auto scope = graph.NameScope(name);
  Output lr = ops::Const(static_cast<float>(learning_rate), "initial_learning_rate");
  Output steps = ops::Const(static_cast<float>(decay_steps), "decay_steps");
  // The helper nodes carry the names TF's Python operators give them, so the result is
  // `name`/Mul_3 as in TF.
  Output completed_fraction = ops::RealDiv(ops::Minimum(AsFloat(global_step), steps), steps, "truediv");
  Output angle = ops::Mul(ops::Const(static_cast<float>(M_PI)), completed_fraction, "mul");
  Output cosine_decayed = ops::Mul(ops::Const(0.5f, "mul_1/x"),
                                   ops::Add(ops::Const(1.0f, "add/x"), ops::Cos(angle), "add"), "mul_1");
  Output decayed =
      ops::Add(ops::Mul(ops::Const(static_cast<float>(1 - alpha), "mul_2/x"), cosine_decayed, "mul_2"),
               ops::Const(static_cast<float>(alpha), "add_1/y"), "add_1");
  return ops::Mul(lr, decayed);
}

Output PiecewiseConstant(Output x, const std::vector<double>& boundaries, const std::vector<double>& values,
                         std::string_view name) {
  RequireScalarStep(x, "piecewise_constant");
  if (values.size() != boundaries.size() + 1) {
    InvalidArgument("The length of boundaries should be 1 less than the length of values");
  }
  for (size_t i = 1; i < boundaries.size(); ++i) {
    if (!(boundaries[i - 1] < boundaries[i])) {
      InvalidArgument("piecewise_constant: boundaries must be increasing");
    }
  }
  Graph& graph = *x.graph();
  auto as_default = graph.AsDefault();
  OpNameScope scope(graph, name);
  std::vector<float> value_list(values.begin(), values.end());
  Output value_tensor = ops::Const(Tensor::FromVector<float>(value_list), "values");
  Output index;
  if (boundaries.empty()) {
    index = ops::Const(int32_t{0}, "index");
  } else {
    // The number of boundaries x has passed is the index of its value (exact values, no
    // arithmetic on the learning rates).
    Tensor bounds = DispatchNumericType(x.dtype(), "piecewise_constant", [&]<typename T>() {
      std::vector<T> b;
      for (double v : boundaries) b.push_back(static_cast<T>(v));
      return Tensor::FromVector<T>(b);
    });
    Output passed = ops::Greater(x, ops::Const(bounds, "boundaries"));
    index = ops::ReduceSum(ops::Cast(passed, DT_INT32), {}, false, "index");
  }
  scope.Exit();
  return NodeBuilder("GatherV2", scope.op_name())
      .ExactName()
      .Input(value_tensor)
      .Input(index)
      .Input(ops::Const(int32_t{0}, "axis"))
      .Finalize();
}

}  // namespace flowtrain::train
