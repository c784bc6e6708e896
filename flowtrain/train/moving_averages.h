// Exponential moving averages of variables and tensors, as TF 1.15's
// tf.train.ExponentialMovingAverage and assign_moving_average build them: the same shadow
// variable names ("<var>/ExponentialMovingAverage"), update ops and checkpoint keys, so that
// an evaluation job restores the averaged weights of a model TF or flowtrain trained.
//
//   train::ExponentialMovingAverage ema(0.999, {.num_updates = global_step});
//   Operation maintain_averages;
//   {
//     auto deps = graph.ControlDependencies({train_op});
//     maintain_averages = ema.Apply(ops::TrainableVariables());   // "ExponentialMovingAverage"
//   }
//   // In the evaluation job: restore every averaged variable from its shadow's key.
//   train::Saver saver({.var_map = ema.VariablesToRestore()});
//
// Thread safety: building is not thread-safe (like all graph building); the ops it builds run
// from any number of sessions.
#ifndef FLOWTRAIN_TRAIN_MOVING_AVERAGES_H_
#define FLOWTRAIN_TRAIN_MOVING_AVERAGES_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/variables.h"

namespace flowtrain::train {

// TF's assign_moving_average: variable -= (variable - value) * (1 - decay), the AssignSub
// named after the "AssignMovingAvg" scope. With zero_debias, as TF's _zero_debias: a "biased"
// average and a "local_step" count (variables under "<variable>/") and variable = biased /
// (1 - decay^local_step), so that averages started at zero are not biased toward it. Returns
// the variable's updated value. InvalidArgument when the dtypes do not match or the variable's
// shape is not fully defined (zero_debias).
Output AssignMovingAverage(const Variable& variable, const Output& value, const Output& decay,
                           bool zero_debias = true, std::string_view name = "AssignMovingAvg");

struct ExponentialMovingAverageOptions {
  // When given, the decay used is min(decay, (1 + num_updates) / (10 + num_updates)): averages
  // move faster early in training. Any numeric scalar (usually the global step).
  Output num_updates = {};
  // Debias the averages of tensors (not of variables, whose shadows start at their values).
  bool zero_debias = false;
  std::string name = "ExponentialMovingAverage";
};

// Keeps shadow copies of variables (and tensors) that follow them with an exponential decay.
class ExponentialMovingAverage {
 public:
  explicit ExponentialMovingAverage(double decay, ExponentialMovingAverageOptions options = {});

  const std::string& name() const { return options_.name; }

  // Creates the shadow variables not made yet (each starts at its variable's value: the
  // initialized value when the variable is initialized first; for a tensor, zeros), adds the
  // variables to MOVING_AVERAGE_VARIABLES, and returns the op updating every shadow of the list,
  // named `name()`. The variables must be half, bfloat16, float or double (InvalidArgument).
  Operation Apply(const std::vector<Variable>& var_list);
  // Every trainable variable of the default graph (TF's apply() without a list).
  Operation Apply();
  // Averages of tensors (e.g. a loss), zero-debiased when the options say so (TF passes them
  // to apply() with the variables; a Variable converts to an Output here, hence the name).
  Operation ApplyToTensors(const std::vector<Output>& tensors);

  // The shadow of `var` (or of a tensor), if Apply made one.
  std::optional<Variable> Average(const Variable& var) const;
  std::optional<Variable> Average(const Output& tensor) const;
  // The shadow's op name: the one made, else the name Apply would give it.
  std::string AverageName(const Variable& var) const;

  // Checkpoint key -> variable for restoring the averages into the variables themselves (TF's
  // variables_to_restore): every variable of `moving_avg_variables` (default: the trainable
  // variables and MOVING_AVERAGE_VARIABLES) under its shadow's name, every other global
  // variable under its own. For SaverOptions::var_map.
  std::map<std::string, Variable> VariablesToRestore(
      std::optional<std::vector<Variable>> moving_avg_variables = std::nullopt) const;

 private:
  Output DecayTensor(Graph& graph) const;
  // Updates each shadow with the value its function reads (built inside the update's scope
  // and the caller's control dependencies).
  Operation Update(Graph& graph,
                   const std::vector<std::pair<Variable, std::function<Output()>>>& shadows_and_values,
                   const std::vector<bool>& zero_debias);

  double decay_;
  ExponentialMovingAverageOptions options_;
  std::map<const void*, Variable> averages_;  // averaged node -> shadow variable
};

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_MOVING_AVERAGES_H_
