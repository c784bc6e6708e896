#include "flowtrain/train/learning_rate_decay.h"

#include <cmath>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/control_flow.h"
#include "flowtrain/ops/random_ops.h"
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

void RequirePositive(int64_t decay_steps, std::string_view op, std::string_view what = "decay_steps") {
  if (decay_steps <= 0) InvalidArgument(op, ": ", what, " must be positive, got ", decay_steps);
}

// What every schedule builds in: the step's graph made the default, the schedule's name scope,
// the initial learning rate and the step as float32. Finish() builds the last op outside the
// scope under the scope's own name, as TF's `name=name` does.
class ScheduleScope {
 public:
  ScheduleScope(double learning_rate, const Output& global_step, std::string_view name)
      : as_default_(global_step.graph()->AsDefault()), scope_(*global_step.graph(), name) {
    lr = ops::Const(static_cast<float>(learning_rate), "initial_learning_rate");
    step = AsFloat(global_step);
  }

  static Output Scalar(double value, std::string_view name) {
    return ops::Const(static_cast<float>(value), name);
  }

  Output Finish(std::string_view op, const Output& x, const Output& y) {
    scope_.Exit();
    return NodeBuilder(op, scope_.op_name()).ExactName().Input(x).Input(y).Finalize();
  }

  Output lr;
  Output step;

 private:
  ScopeGuard as_default_;
  OpNameScope scope_;
};

Output ExponentialWithRate(ScheduleScope& s, const Output& rate, int64_t decay_steps, bool staircase) {
  Output steps = s.Scalar(static_cast<double>(decay_steps), "decay_steps");
  // floor(step / decay_steps) for the staircase; FloorDiv on floats is exactly that.
  Output p = staircase ? ops::FloorDiv(s.step, steps) : ops::RealDiv(s.step, steps, "truediv");
  return s.Finish("Mul", s.lr, ops::Pow(rate, p));
}

// The linear-cosine schedules' common tail: learning_rate * ((alpha + linear) * cosine + beta)
// with cosine = 0.5 * (1 + cos(pi * 2 * num_periods * fraction)), in TF's order of operations.
Output LinearCosineTail(ScheduleScope& s, const Output& linear, const Output& completed_fraction,
                        double num_periods, double alpha, double beta, int first_add) {
  const auto add_name = [](int i) { return i == 0 ? std::string("add") : StrCat("add_", i); };
  Output fraction = ops::Mul(ops::Mul(s.Scalar(2.0, "mul/x"), s.Scalar(num_periods, "num_periods"), "mul"),
                             completed_fraction, "mul_1");
  Output angle = ops::Mul(s.Scalar(M_PI, "Const"), fraction, "mul_2");
  Output cosine = ops::Mul(
      s.Scalar(0.5, "mul_3/x"),
      ops::AddV2(s.Scalar(1.0, add_name(first_add) + "/x"), ops::Cos(angle), add_name(first_add)), "mul_3");
  Output scaled =
      ops::Mul(ops::AddV2(s.Scalar(alpha, "alpha"), linear, add_name(first_add + 1)), cosine, "mul_4");
  return s.Finish("Mul", s.lr, ops::AddV2(scaled, s.Scalar(beta, "beta"), add_name(first_add + 2)));
}

}  // namespace

Output ExponentialDecay(double learning_rate, Output global_step, int64_t decay_steps, double decay_rate,
                        bool staircase, std::string_view name) {
  RequireScalarStep(global_step, "exponential_decay");
  RequirePositive(decay_steps, "exponential_decay");
  ScheduleScope s(learning_rate, global_step, name);
  return ExponentialWithRate(s, s.Scalar(decay_rate, "decay_rate"), decay_steps, staircase);
}

Output NaturalExpDecay(double learning_rate, Output global_step, int64_t decay_steps, double decay_rate,
                       bool staircase, std::string_view name) {
  RequireScalarStep(global_step, "natural_exp_decay");
  RequirePositive(decay_steps, "natural_exp_decay");
  Graph& graph = *global_step.graph();
  auto as_default = graph.AsDefault();
  // TF computes the rate exp(-decay_rate) in the graph, before the schedule's scope opens.
  OpNameScope neg(graph, "Neg");
  Output rate_const = ops::Const(static_cast<float>(decay_rate), "x");
  neg.Exit();
  Output negated = NodeBuilder("Neg", neg.op_name()).ExactName().Input(rate_const).Finalize();
  Output natural_rate = ops::Exp(negated);
  ScheduleScope s(learning_rate, global_step, name);
  return ExponentialWithRate(s, natural_rate, decay_steps, staircase);
}

Output InverseTimeDecay(double learning_rate, Output global_step, int64_t decay_steps, double decay_rate,
                        bool staircase, std::string_view name) {
  RequireScalarStep(global_step, "inverse_time_decay");
  RequirePositive(decay_steps, "inverse_time_decay");
  ScheduleScope s(learning_rate, global_step, name);
  Output p = ops::RealDiv(s.step, s.Scalar(static_cast<double>(decay_steps), "decay_steps"), "truediv");
  if (staircase) p = ops::Floor(p);
  Output denominator =
      ops::AddV2(s.Scalar(1.0, "Const"), ops::Mul(s.Scalar(decay_rate, "decay_rate"), p, "Mul"), "Add");
  return s.Finish("RealDiv", s.lr, denominator);
}

Output PolynomialDecay(double learning_rate, Output global_step, int64_t decay_steps,
                       double end_learning_rate, double power, bool cycle, std::string_view name) {
  RequireScalarStep(global_step, "polynomial_decay");
  RequirePositive(decay_steps, "polynomial_decay");
  ScheduleScope s(learning_rate, global_step, name);
  Output end = s.Scalar(end_learning_rate, "end_learning_rate");
  Output steps = s.Scalar(static_cast<double>(decay_steps), "decay_steps");
  Output step = s.step;
  if (cycle) {
    // The first multiple of decay_steps at or above the step; 1 at step 0. (TF 1.15 picks
    // between the two with a cond, later TFs with SelectV2: the same values.)
    Output multiplier = ops::SelectV2(ops::Equal(step, s.Scalar(0.0, "Equal/y")), s.Scalar(1.0, "SelectV2/t"),
                                      ops::Ceil(ops::RealDiv(step, steps, "truediv")));
    steps = ops::Mul(steps, multiplier, "Mul");
  } else {
    step = ops::Minimum(step, steps);
  }
  Output p = ops::RealDiv(step, steps, cycle ? "truediv_1" : "truediv");
  Output remaining = ops::Sub(s.Scalar(1.0, "sub_1/x"), p, "sub_1");
  Output decayed = ops::Mul(ops::Sub(s.lr, end, "sub"), ops::Pow(remaining, s.Scalar(power, "power")),
                            cycle ? "Mul_1" : "Mul");
  return s.Finish("AddV2", decayed, end);
}

Output CosineDecay(double learning_rate, Output global_step, int64_t decay_steps, double alpha,
                   std::string_view name) {
  RequireScalarStep(global_step, "cosine_decay");
  RequirePositive(decay_steps, "cosine_decay");
  ScheduleScope s(learning_rate, global_step, name);
  Output steps = s.Scalar(static_cast<double>(decay_steps), "decay_steps");
  // The helper nodes carry the names TF's Python operators give them.
  Output completed_fraction = ops::RealDiv(ops::Minimum(s.step, steps), steps, "truediv");
  Output angle = ops::Mul(s.Scalar(M_PI, "Const"), completed_fraction, "mul");
  Output cosine_decayed =
      ops::Mul(s.Scalar(0.5, "mul_1/x"), ops::Add(s.Scalar(1.0, "add/x"), ops::Cos(angle), "add"), "mul_1");
  Output decayed = ops::Add(ops::Mul(s.Scalar(1 - alpha, "mul_2/x"), cosine_decayed, "mul_2"),
                            s.Scalar(alpha, "add_1/y"), "add_1");
  // TF leaves this multiply unnamed: within the scope it becomes Mul_3 (unique names ignore case).
  return ops::Mul(s.lr, decayed);
}

Output CosineDecayRestarts(double learning_rate, Output global_step, int64_t first_decay_steps, double t_mul,
                           double m_mul, double alpha, std::string_view name) {
  RequireScalarStep(global_step, "cosine_decay_restarts");
  RequirePositive(first_decay_steps, "cosine_decay_restarts", "first_decay_steps");
  if (!(t_mul > 0)) InvalidArgument("cosine_decay_restarts: t_mul must be positive, got ", t_mul);
  ScheduleScope s(learning_rate, global_step, name);
  Output first = s.Scalar(static_cast<double>(first_decay_steps), "first_decay_steps");
  Output t = s.Scalar(t_mul, "t_mul");
  Output fraction = ops::RealDiv(s.step, first, "truediv");
  // The index of the current period and how far into it the step is: periods of equal
  // length when t_mul == 1, else a geometric series of lengths.
  std::vector<Output> restart = ops::Cond(
      ops::Equal(t, s.Scalar(1.0, "Equal/y")),
      [&] {
        Output i = ops::Floor(fraction);
        return std::vector<Output>{i, ops::Sub(fraction, i, "sub")};
      },
      [&] {
        Output one = s.Scalar(1.0, "sub_1/x");
        Output i = ops::Floor(
            ops::RealDiv(ops::Log(ops::Sub(s.Scalar(1.0, "sub_2/x"),
                                           ops::Mul(fraction, ops::Sub(one, t, "sub_1"), "mul"), "sub_2")),
                         ops::Log(t), "truediv"));
        Output periods_before = ops::RealDiv(ops::Sub(s.Scalar(1.0, "sub_3/x"), ops::Pow(t, i), "sub_3"),
                                             ops::Sub(s.Scalar(1.0, "sub_4/x"), t, "sub_4"), "truediv_1");
        return std::vector<Output>{i, ops::RealDiv(ops::Sub(fraction, periods_before, "sub_5"),
                                                   ops::Pow(t, i, "pow_1"), "truediv_2")};
      });
  Output peak =
      ops::Mul(s.Scalar(0.5, "mul/x"), ops::Pow(s.Scalar(m_mul, "m_mul"), restart[0], "pow"), "mul");
  Output angle = ops::Mul(s.Scalar(M_PI, "Const"), restart[1], "mul_1");
  Output cosine = ops::Mul(peak, ops::AddV2(s.Scalar(1.0, "add/x"), ops::Cos(angle), "add"), "mul_2");
  Output decayed =
      ops::AddV2(ops::Mul(ops::Sub(s.Scalar(1.0, "sub/x"), s.Scalar(alpha, "alpha"), "sub"), cosine, "mul_3"),
                 s.Scalar(alpha, "alpha_1"), "add_1");
  return s.Finish("Mul", s.lr, decayed);
}

Output LinearCosineDecay(double learning_rate, Output global_step, int64_t decay_steps, double num_periods,
                         double alpha, double beta, std::string_view name) {
  RequireScalarStep(global_step, "linear_cosine_decay");
  RequirePositive(decay_steps, "linear_cosine_decay");
  ScheduleScope s(learning_rate, global_step, name);
  Output steps = s.Scalar(static_cast<double>(decay_steps), "decay_steps");
  Output step = ops::Minimum(s.step, steps);
  Output linear = ops::RealDiv(ops::Sub(steps, step, "sub"), steps, "truediv");
  Output completed_fraction = ops::RealDiv(step, steps, "truediv_1");
  return LinearCosineTail(s, linear, completed_fraction, num_periods, alpha, beta, /*first_add=*/0);
}

Output NoisyLinearCosineDecay(double learning_rate, Output global_step, int64_t decay_steps,
                              double initial_variance, double variance_decay, double num_periods,
                              double alpha, double beta, std::string_view name) {
  RequireScalarStep(global_step, "noisy_linear_cosine_decay");
  RequirePositive(decay_steps, "noisy_linear_cosine_decay");
  if (!(initial_variance >= 0)) {
    InvalidArgument("noisy_linear_cosine_decay: initial_variance must be >= 0, got ", initial_variance);
  }
  ScheduleScope s(learning_rate, global_step, name);
  Graph& graph = *global_step.graph();
  Output steps = s.Scalar(static_cast<double>(decay_steps), "decay_steps");
  Output step = ops::Minimum(s.step, steps);
  Output linear = ops::RealDiv(ops::Sub(steps, step, "sub"), steps, "truediv");
  Output variance = ops::RealDiv(
      s.Scalar(initial_variance, "initial_variance"),
      ops::Pow(ops::AddV2(s.Scalar(1.0, "add/x"), step, "add"), s.Scalar(variance_decay, "variance_decay")),
      "truediv_1");
  Output stddev = ops::Sqrt(variance);
  // tf.random.normal(shape=[], stddev=stddev): a standard normal scaled in the graph.
  OpNameScope normal(graph, "random_normal");
  Output standard = ops::RandomStandardNormal(ops::Const(Tensor::FromVector<int32_t>({}), "shape"), DT_FLOAT,
                                              ops::GetSeed(graph, std::nullopt));
  Output scaled = ops::Mul(standard, stddev, "mul");
  Output mean = s.Scalar(0.0, "mean");
  normal.Exit();
  Output noise = NodeBuilder("AddV2", normal.op_name()).ExactName().Input(scaled).Input(mean).Finalize();
  Output noisy_linear = ops::AddV2(linear, noise, "add_1");
  Output completed_fraction = ops::RealDiv(step, steps, "truediv_2");
  return LinearCosineTail(s, noisy_linear, completed_fraction, num_periods, alpha, beta, /*first_add=*/2);
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
