#include "flowtrain/ops/training_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/resource_variable_ops.h"

namespace flowtrain {
namespace {

// The shape of variable input `i`: the input's own for a reference, the declared shape of the
// variable for a resource handle.
PartialTensorShape VarShape(InferenceContext& c, int i) {
  if (c.input_type(i) != DT_RESOURCE) return c.input(i);
  const Endpoint& in = c.node().input(i);
  return ResourceVariableShape(Output(in.node, in.index));
}

// Sets the ref op's output; the resource twin has none.
void SetVarOutput(InferenceContext& c, const PartialTensorShape& shape) {
  if (c.num_outputs() > 0) c.set_output(0, shape);
}

// Shape function of the Apply* ops: the first `num_vars` inputs (variable and slots) and the
// gradient (input `grad`, the last one when -1) share one shape; every other input is a scalar.
ShapeFn ApplyShape(int num_vars, int grad = -1) {
  return [num_vars, grad](InferenceContext& c) {
    PartialTensorShape shape = VarShape(c, 0);
    for (int i = 1; i < num_vars; ++i) shape = c.Merge(shape, VarShape(c, i));
    const int g = grad < 0 ? c.num_inputs() - 1 : grad;
    for (int i = num_vars; i < c.num_inputs(); ++i) {
      if (i != g) c.WithRank(c.input(i), 0);
    }
    shape = c.Merge(shape, c.input(g));
    SetVarOutput(c, shape);
  };
}

// Shape function of the SparseApply* ops: variable and slots share
// one shape, `indices` (right after `grad`) is a vector, every other input but grad a scalar.
ShapeFn SparseApplyShape(int num_vars, int grad) {
  return [num_vars, grad](InferenceContext& c) {
    PartialTensorShape shape = VarShape(c, 0);
    for (int i = 1; i < num_vars; ++i) shape = c.Merge(shape, VarShape(c, i));
    for (int i = num_vars; i < c.num_inputs(); ++i) {
      if (i != grad) c.WithRank(c.input(i), i == grad + 1 ? 1 : 0);
    }
    SetVarOutput(c, shape);
  };
}

void MomentumShape(InferenceContext& c) {
  // grad sits before momentum here, unlike the other ops.
  PartialTensorShape shape = c.Merge(VarShape(c, 0), VarShape(c, 1));
  c.WithRank(c.input(2), 0);
  shape = c.Merge(shape, c.input(3));
  c.WithRank(c.input(4), 0);
  SetVarOutput(c, shape);
}

// TF pairs each update op on reference variables, ApplyX (variable inputs `Ref(T)`, output
// `out: Ref(T)`), with ResourceApplyX on resource variables (variable inputs `resource`, no
// output), otherwise alike. One description registers both, so the two cannot drift apart.
// The variable inputs come first in every such op.
struct ApplyOpDef {
  std::string name;  // the ref op's; the resource op is "Resource" + name
  std::vector<std::string> var_inputs;
  std::vector<std::string> other_inputs;  // full specs, e.g. "lr: T"
  std::vector<std::string> extra_attrs;   // besides T and use_locking
  ShapeFn shape_fn;
};

bool RegisterApplyOps(const ApplyOpDef& def) {
  for (const bool resource : {false, true}) {
    OpDefBuilder b(resource ? "Resource" + def.name : def.name);
    for (const std::string& v : def.var_inputs) b.Input(v + (resource ? ": resource" : ": Ref(T)"));
    for (const std::string& in : def.other_inputs) b.Input(in);
    if (!resource) b.Output("out: Ref(T)");
    b.Attr("T: {float, double}");
    for (const std::string& a : def.extra_attrs) b.Attr(a);
    b.Attr("use_locking: bool = false");
    // The resource twins are stateful in TF (they reach the variables through the session).
    if (resource) b.SetIsStateful();
    b.SetShapeFn(def.shape_fn);
    OpRegistry::Global()->Register(b.Build());
  }
  return true;
}

const bool kApplyOpsRegistered [[maybe_unused]] = [] {
  RegisterApplyOps({"ApplyGradientDescent", {"var"}, {"alpha: T", "delta: T"}, {}, ApplyShape(1)});
  RegisterApplyOps({"ApplyMomentum",
                    {"var", "accum"},
                    {"lr: T", "grad: T", "momentum: T"},
                    {"use_nesterov: bool = false"},
                    MomentumShape});
  RegisterApplyOps(
      {"ApplyAdam",
       {"var", "m", "v"},
       {"beta1_power: T", "beta2_power: T", "lr: T", "beta1: T", "beta2: T", "epsilon: T", "grad: T"},
       {"use_nesterov: bool = false"},
       ApplyShape(3)});
  RegisterApplyOps(
      {"ApplyAdagrad", {"var", "accum"}, {"lr: T", "grad: T"}, {"update_slots: bool = true"}, ApplyShape(2)});
  // ApplyAdagrad on the rows `indices` of var and accum only (what Adagrad runs for an
  // IndexedSlices gradient such as embedding_lookup's): grad holds one row per index.
  RegisterApplyOps({"SparseApplyAdagrad",
                    {"var", "accum"},
                    {"lr: T", "grad: T", "indices: Tindices"},
                    {"Tindices: {int32, int64}", "update_slots: bool = true"},
                    SparseApplyShape(2, 3)});
  RegisterApplyOps({"ApplyRMSProp",
                    {"var", "ms", "mom"},
                    {"lr: T", "rho: T", "momentum: T", "epsilon: T", "grad: T"},
                    {},
                    ApplyShape(3)});
  RegisterApplyOps({"ApplyCenteredRMSProp",
                    {"var", "mg", "ms", "mom"},
                    {"lr: T", "rho: T", "momentum: T", "epsilon: T", "grad: T"},
                    {},
                    ApplyShape(4)});
  RegisterApplyOps({"SparseApplyMomentum",
                    {"var", "accum"},
                    {"lr: T", "grad: T", "indices: Tindices", "momentum: T"},
                    {"Tindices: {int32, int64}", "use_nesterov: bool = false"},
                    SparseApplyShape(2, 3)});
  RegisterApplyOps({"SparseApplyRMSProp",
                    {"var", "ms", "mom"},
                    {"lr: T", "rho: T", "momentum: T", "epsilon: T", "grad: T", "indices: Tindices"},
                    {"Tindices: {int32, int64}"},
                    SparseApplyShape(3, 7)});
  RegisterApplyOps({"SparseApplyCenteredRMSProp",
                    {"var", "mg", "ms", "mom"},
                    {"lr: T", "rho: T", "momentum: T", "epsilon: T", "grad: T", "indices: Tindices"},
                    {"Tindices: {int32, int64}"},
                    SparseApplyShape(4, 8)});
  RegisterApplyOps({"ApplyAdadelta",
                    {"var", "accum", "accum_update"},
                    {"lr: T", "rho: T", "epsilon: T", "grad: T"},
                    {},
                    ApplyShape(3)});
  RegisterApplyOps({"SparseApplyAdadelta",
                    {"var", "accum", "accum_update"},
                    {"lr: T", "rho: T", "epsilon: T", "grad: T", "indices: Tindices"},
                    {"Tindices: {int32, int64}"},
                    SparseApplyShape(3, 6)});
  RegisterApplyOps({"ApplyProximalGradientDescent",
                    {"var"},
                    {"alpha: T", "l1: T", "l2: T", "delta: T"},
                    {},
                    ApplyShape(1)});
  RegisterApplyOps({"SparseApplyProximalGradientDescent",
                    {"var"},
                    {"alpha: T", "l1: T", "l2: T", "grad: T", "indices: Tindices"},
                    {"Tindices: {int32, int64}"},
                    SparseApplyShape(1, 4)});
  RegisterApplyOps(
      {"ApplyProximalAdagrad", {"var", "accum"}, {"lr: T", "l1: T", "l2: T", "grad: T"}, {}, ApplyShape(2)});
  RegisterApplyOps({"SparseApplyProximalAdagrad",
                    {"var", "accum"},
                    {"lr: T", "l1: T", "l2: T", "grad: T", "indices: Tindices"},
                    {"Tindices: {int32, int64}"},
                    SparseApplyShape(2, 5)});
  // Ftrl and AdagradDA take grad right after the slots.
  RegisterApplyOps({"ApplyFtrl",
                    {"var", "accum", "linear"},
                    {"grad: T", "lr: T", "l1: T", "l2: T", "lr_power: T"},
                    {"multiply_linear_by_lr: bool = false"},
                    ApplyShape(3, 3)});
  RegisterApplyOps({"SparseApplyFtrl",
                    {"var", "accum", "linear"},
                    {"grad: T", "indices: Tindices", "lr: T", "l1: T", "l2: T", "lr_power: T"},
                    {"Tindices: {int32, int64}", "multiply_linear_by_lr: bool = false"},
                    SparseApplyShape(3, 3)});
  RegisterApplyOps({"ApplyFtrlV2",
                    {"var", "accum", "linear"},
                    {"grad: T", "lr: T", "l1: T", "l2: T", "l2_shrinkage: T", "lr_power: T"},
                    {"multiply_linear_by_lr: bool = false"},
                    ApplyShape(3, 3)});
  RegisterApplyOps(
      {"SparseApplyFtrlV2",
       {"var", "accum", "linear"},
       {"grad: T", "indices: Tindices", "lr: T", "l1: T", "l2: T", "l2_shrinkage: T", "lr_power: T"},
       {"Tindices: {int32, int64}", "multiply_linear_by_lr: bool = false"},
       SparseApplyShape(3, 3)});
  RegisterApplyOps({"ApplyAdagradDA",
                    {"var", "gradient_accumulator", "gradient_squared_accumulator"},
                    {"grad: T", "lr: T", "l1: T", "l2: T", "global_step: int64"},
                    {},
                    ApplyShape(3, 3)});
  RegisterApplyOps({"SparseApplyAdagradDA",
                    {"var", "gradient_accumulator", "gradient_squared_accumulator"},
                    {"grad: T", "indices: Tindices", "lr: T", "l1: T", "l2: T", "global_step: int64"},
                    {"Tindices: {int32, int64}"},
                    SparseApplyShape(3, 3)});
  return true;
}();

}  // namespace

FT_REGISTER_NO_GRADIENT("ApplyGradientDescent");
FT_REGISTER_NO_GRADIENT("ApplyMomentum");
FT_REGISTER_NO_GRADIENT("ApplyAdam");
FT_REGISTER_NO_GRADIENT("ApplyAdagrad");
FT_REGISTER_NO_GRADIENT("SparseApplyAdagrad");
FT_REGISTER_NO_GRADIENT("ApplyRMSProp");
FT_REGISTER_NO_GRADIENT("ApplyCenteredRMSProp");
FT_REGISTER_NO_GRADIENT("SparseApplyMomentum");
FT_REGISTER_NO_GRADIENT("SparseApplyRMSProp");
FT_REGISTER_NO_GRADIENT("SparseApplyCenteredRMSProp");
FT_REGISTER_NO_GRADIENT("ResourceSparseApplyMomentum");
FT_REGISTER_NO_GRADIENT("ResourceSparseApplyRMSProp");
FT_REGISTER_NO_GRADIENT("ResourceSparseApplyCenteredRMSProp");
FT_REGISTER_NO_GRADIENT("ResourceApplyGradientDescent");
FT_REGISTER_NO_GRADIENT("ResourceApplyMomentum");
FT_REGISTER_NO_GRADIENT("ResourceApplyAdam");
FT_REGISTER_NO_GRADIENT("ResourceApplyAdagrad");
FT_REGISTER_NO_GRADIENT("ResourceSparseApplyAdagrad");
FT_REGISTER_NO_GRADIENT("ResourceApplyRMSProp");
FT_REGISTER_NO_GRADIENT("ResourceApplyCenteredRMSProp");
FT_REGISTER_NO_GRADIENT("ApplyAdadelta");
FT_REGISTER_NO_GRADIENT("SparseApplyAdadelta");
FT_REGISTER_NO_GRADIENT("ResourceApplyAdadelta");
FT_REGISTER_NO_GRADIENT("ResourceSparseApplyAdadelta");
FT_REGISTER_NO_GRADIENT("ApplyProximalGradientDescent");
FT_REGISTER_NO_GRADIENT("SparseApplyProximalGradientDescent");
FT_REGISTER_NO_GRADIENT("ResourceApplyProximalGradientDescent");
FT_REGISTER_NO_GRADIENT("ResourceSparseApplyProximalGradientDescent");
FT_REGISTER_NO_GRADIENT("ApplyProximalAdagrad");
FT_REGISTER_NO_GRADIENT("SparseApplyProximalAdagrad");
FT_REGISTER_NO_GRADIENT("ResourceApplyProximalAdagrad");
FT_REGISTER_NO_GRADIENT("ResourceSparseApplyProximalAdagrad");
FT_REGISTER_NO_GRADIENT("ApplyFtrl");
FT_REGISTER_NO_GRADIENT("SparseApplyFtrl");
FT_REGISTER_NO_GRADIENT("ResourceApplyFtrl");
FT_REGISTER_NO_GRADIENT("ResourceSparseApplyFtrl");
FT_REGISTER_NO_GRADIENT("ApplyFtrlV2");
FT_REGISTER_NO_GRADIENT("SparseApplyFtrlV2");
FT_REGISTER_NO_GRADIENT("ResourceApplyFtrlV2");
FT_REGISTER_NO_GRADIENT("ResourceSparseApplyFtrlV2");
FT_REGISTER_NO_GRADIENT("ApplyAdagradDA");
FT_REGISTER_NO_GRADIENT("SparseApplyAdagradDA");
FT_REGISTER_NO_GRADIENT("ResourceApplyAdagradDA");
FT_REGISTER_NO_GRADIENT("ResourceSparseApplyAdagradDA");

namespace ops {
namespace {

// Builds the update op `type` ("Apply..." or "ResourceApply...") after checking that the
// variable inputs are of the kind it takes.
Operation BuildApply(std::string_view type, std::string_view name, std::initializer_list<Output> vars,
                     std::initializer_list<Output> others,
                     std::initializer_list<std::pair<const char*, bool>> attrs) {
  const bool want_resource = type.starts_with("Resource");
  for (const Output& v : vars) {
    if (!v || (want_resource ? v.dtype() != DT_RESOURCE : !v.is_ref())) {
      InvalidArgument(
          type, " requires ", want_resource ? "resource variable handles" : "variables (reference tensors)",
          " for its variable and slot inputs, got ", v ? v.DebugString() : std::string("an empty Output"));
    }
  }
  NodeBuilder b(type, name);
  for (const Output& v : vars) b.Input(v);
  for (const Output& o : others) b.Input(o);
  for (const auto& [attr, value] : attrs) b.Attr(attr, value);
  return b.Finalize();
}

}  // namespace

Output ApplyGradientDescent(Output var, Output alpha, Output delta, bool use_locking, std::string_view name) {
  return BuildApply("ApplyGradientDescent", name, {var}, {alpha, delta}, {{"use_locking", use_locking}})
      .output(0);
}
Operation ResourceApplyGradientDescent(Output var, Output alpha, Output delta, bool use_locking,
                                       std::string_view name) {
  return BuildApply("ResourceApplyGradientDescent", name, {var}, {alpha, delta},
                    {{"use_locking", use_locking}});
}

Output ApplyMomentum(Output var, Output accum, Output lr, Output grad, Output momentum, bool use_locking,
                     bool use_nesterov, std::string_view name) {
  return BuildApply("ApplyMomentum", name, {var, accum}, {lr, grad, momentum},
                    {{"use_locking", use_locking}, {"use_nesterov", use_nesterov}})
      .output(0);
}
Operation ResourceApplyMomentum(Output var, Output accum, Output lr, Output grad, Output momentum,
                                bool use_locking, bool use_nesterov, std::string_view name) {
  return BuildApply("ResourceApplyMomentum", name, {var, accum}, {lr, grad, momentum},
                    {{"use_locking", use_locking}, {"use_nesterov", use_nesterov}});
}

Output ApplyAdam(Output var, Output m, Output v, Output beta1_power, Output beta2_power, Output lr,
                 Output beta1, Output beta2, Output epsilon, Output grad, bool use_locking, bool use_nesterov,
                 std::string_view name) {
  return BuildApply("ApplyAdam", name, {var, m, v},
                    {beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad},
                    {{"use_locking", use_locking}, {"use_nesterov", use_nesterov}})
      .output(0);
}
Operation ResourceApplyAdam(Output var, Output m, Output v, Output beta1_power, Output beta2_power, Output lr,
                            Output beta1, Output beta2, Output epsilon, Output grad, bool use_locking,
                            bool use_nesterov, std::string_view name) {
  return BuildApply("ResourceApplyAdam", name, {var, m, v},
                    {beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad},
                    {{"use_locking", use_locking}, {"use_nesterov", use_nesterov}});
}

Output ApplyAdagrad(Output var, Output accum, Output lr, Output grad, bool use_locking, bool update_slots,
                    std::string_view name) {
  return BuildApply("ApplyAdagrad", name, {var, accum}, {lr, grad},
                    {{"use_locking", use_locking}, {"update_slots", update_slots}})
      .output(0);
}
Operation ResourceApplyAdagrad(Output var, Output accum, Output lr, Output grad, bool use_locking,
                               bool update_slots, std::string_view name) {
  return BuildApply("ResourceApplyAdagrad", name, {var, accum}, {lr, grad},
                    {{"use_locking", use_locking}, {"update_slots", update_slots}});
}

Output SparseApplyAdagrad(Output var, Output accum, Output lr, Output grad, Output indices, bool use_locking,
                          bool update_slots, std::string_view name) {
  return BuildApply("SparseApplyAdagrad", name, {var, accum}, {lr, grad, indices},
                    {{"use_locking", use_locking}, {"update_slots", update_slots}})
      .output(0);
}
Operation ResourceSparseApplyAdagrad(Output var, Output accum, Output lr, Output grad, Output indices,
                                     bool use_locking, bool update_slots, std::string_view name) {
  return BuildApply("ResourceSparseApplyAdagrad", name, {var, accum}, {lr, grad, indices},
                    {{"use_locking", use_locking}, {"update_slots", update_slots}});
}

Output SparseApplyMomentum(Output var, Output accum, Output lr, Output grad, Output indices, Output momentum,
                           bool use_locking, bool use_nesterov, std::string_view name) {
  return BuildApply("SparseApplyMomentum", name, {var, accum}, {lr, grad, indices, momentum},
                    {{"use_locking", use_locking}, {"use_nesterov", use_nesterov}})
      .output(0);
}
Operation ResourceSparseApplyMomentum(Output var, Output accum, Output lr, Output grad, Output indices,
                                      Output momentum, bool use_locking, bool use_nesterov,
                                      std::string_view name) {
  return BuildApply("ResourceSparseApplyMomentum", name, {var, accum}, {lr, grad, indices, momentum},
                    {{"use_locking", use_locking}, {"use_nesterov", use_nesterov}});
}

Output SparseApplyRMSProp(Output var, Output ms, Output mom, Output lr, Output rho, Output momentum,
                          Output epsilon, Output grad, Output indices, bool use_locking,
                          std::string_view name) {
  return BuildApply("SparseApplyRMSProp", name, {var, ms, mom}, {lr, rho, momentum, epsilon, grad, indices},
                    {{"use_locking", use_locking}})
      .output(0);
}
Operation ResourceSparseApplyRMSProp(Output var, Output ms, Output mom, Output lr, Output rho,
                                     Output momentum, Output epsilon, Output grad, Output indices,
                                     bool use_locking, std::string_view name) {
  return BuildApply("ResourceSparseApplyRMSProp", name, {var, ms, mom},
                    {lr, rho, momentum, epsilon, grad, indices}, {{"use_locking", use_locking}});
}
Output SparseApplyCenteredRMSProp(Output var, Output mg, Output ms, Output mom, Output lr, Output rho,
                                  Output momentum, Output epsilon, Output grad, Output indices,
                                  bool use_locking, std::string_view name) {
  return BuildApply("SparseApplyCenteredRMSProp", name, {var, mg, ms, mom},
                    {lr, rho, momentum, epsilon, grad, indices}, {{"use_locking", use_locking}})
      .output(0);
}
Operation ResourceSparseApplyCenteredRMSProp(Output var, Output mg, Output ms, Output mom, Output lr,
                                             Output rho, Output momentum, Output epsilon, Output grad,
                                             Output indices, bool use_locking, std::string_view name) {
  return BuildApply("ResourceSparseApplyCenteredRMSProp", name, {var, mg, ms, mom},
                    {lr, rho, momentum, epsilon, grad, indices}, {{"use_locking", use_locking}});
}

Output ApplyRMSProp(Output var, Output ms, Output mom, Output lr, Output rho, Output momentum, Output epsilon,
                    Output grad, bool use_locking, std::string_view name) {
  return BuildApply("ApplyRMSProp", name, {var, ms, mom}, {lr, rho, momentum, epsilon, grad},
                    {{"use_locking", use_locking}})
      .output(0);
}
Operation ResourceApplyRMSProp(Output var, Output ms, Output mom, Output lr, Output rho, Output momentum,
                               Output epsilon, Output grad, bool use_locking, std::string_view name) {
  return BuildApply("ResourceApplyRMSProp", name, {var, ms, mom}, {lr, rho, momentum, epsilon, grad},
                    {{"use_locking", use_locking}});
}

Output ApplyCenteredRMSProp(Output var, Output mg, Output ms, Output mom, Output lr, Output rho,
                            Output momentum, Output epsilon, Output grad, bool use_locking,
                            std::string_view name) {
  return BuildApply("ApplyCenteredRMSProp", name, {var, mg, ms, mom}, {lr, rho, momentum, epsilon, grad},
                    {{"use_locking", use_locking}})
      .output(0);
}
Operation ResourceApplyCenteredRMSProp(Output var, Output mg, Output ms, Output mom, Output lr, Output rho,
                                       Output momentum, Output epsilon, Output grad, bool use_locking,
                                       std::string_view name) {
  return BuildApply("ResourceApplyCenteredRMSProp", name, {var, mg, ms, mom},
                    {lr, rho, momentum, epsilon, grad}, {{"use_locking", use_locking}});
}

Output ApplyAdadelta(Output var, Output accum, Output accum_update, Output lr, Output rho, Output epsilon,
                     Output grad, bool use_locking, std::string_view name) {
  return BuildApply("ApplyAdadelta", name, {var, accum, accum_update}, {lr, rho, epsilon, grad},
                    {{"use_locking", use_locking}})
      .output(0);
}

Operation ResourceApplyAdadelta(Output var, Output accum, Output accum_update, Output lr, Output rho,
                                Output epsilon, Output grad, bool use_locking, std::string_view name) {
  return BuildApply("ResourceApplyAdadelta", name, {var, accum, accum_update}, {lr, rho, epsilon, grad},
                    {{"use_locking", use_locking}});
}

Output SparseApplyAdadelta(Output var, Output accum, Output accum_update, Output lr, Output rho,
                           Output epsilon, Output grad, Output indices, bool use_locking,
                           std::string_view name) {
  return BuildApply("SparseApplyAdadelta", name, {var, accum, accum_update},
                    {lr, rho, epsilon, grad, indices}, {{"use_locking", use_locking}})
      .output(0);
}

Operation ResourceSparseApplyAdadelta(Output var, Output accum, Output accum_update, Output lr, Output rho,
                                      Output epsilon, Output grad, Output indices, bool use_locking,
                                      std::string_view name) {
  return BuildApply("ResourceSparseApplyAdadelta", name, {var, accum, accum_update},
                    {lr, rho, epsilon, grad, indices}, {{"use_locking", use_locking}});
}

Output ApplyProximalGradientDescent(Output var, Output alpha, Output l1, Output l2, Output delta,
                                    bool use_locking, std::string_view name) {
  return BuildApply("ApplyProximalGradientDescent", name, {var}, {alpha, l1, l2, delta},
                    {{"use_locking", use_locking}})
      .output(0);
}

Operation ResourceApplyProximalGradientDescent(Output var, Output alpha, Output l1, Output l2, Output delta,
                                               bool use_locking, std::string_view name) {
  return BuildApply("ResourceApplyProximalGradientDescent", name, {var}, {alpha, l1, l2, delta},
                    {{"use_locking", use_locking}});
}

Output SparseApplyProximalGradientDescent(Output var, Output alpha, Output l1, Output l2, Output grad,
                                          Output indices, bool use_locking, std::string_view name) {
  return BuildApply("SparseApplyProximalGradientDescent", name, {var}, {alpha, l1, l2, grad, indices},
                    {{"use_locking", use_locking}})
      .output(0);
}

Operation ResourceSparseApplyProximalGradientDescent(Output var, Output alpha, Output l1, Output l2,
                                                     Output grad, Output indices, bool use_locking,
                                                     std::string_view name) {
  return BuildApply("ResourceSparseApplyProximalGradientDescent", name, {var}, {alpha, l1, l2, grad, indices},
                    {{"use_locking", use_locking}});
}

Output ApplyProximalAdagrad(Output var, Output accum, Output lr, Output l1, Output l2, Output grad,
                            bool use_locking, std::string_view name) {
  return BuildApply("ApplyProximalAdagrad", name, {var, accum}, {lr, l1, l2, grad},
                    {{"use_locking", use_locking}})
      .output(0);
}

Operation ResourceApplyProximalAdagrad(Output var, Output accum, Output lr, Output l1, Output l2, Output grad,
                                       bool use_locking, std::string_view name) {
  return BuildApply("ResourceApplyProximalAdagrad", name, {var, accum}, {lr, l1, l2, grad},
                    {{"use_locking", use_locking}});
}

Output SparseApplyProximalAdagrad(Output var, Output accum, Output lr, Output l1, Output l2, Output grad,
                                  Output indices, bool use_locking, std::string_view name) {
  return BuildApply("SparseApplyProximalAdagrad", name, {var, accum}, {lr, l1, l2, grad, indices},
                    {{"use_locking", use_locking}})
      .output(0);
}

Operation ResourceSparseApplyProximalAdagrad(Output var, Output accum, Output lr, Output l1, Output l2,
                                             Output grad, Output indices, bool use_locking,
                                             std::string_view name) {
  return BuildApply("ResourceSparseApplyProximalAdagrad", name, {var, accum}, {lr, l1, l2, grad, indices},
                    {{"use_locking", use_locking}});
}

Output ApplyFtrl(Output var, Output accum, Output linear, Output grad, Output lr, Output l1, Output l2,
                 Output lr_power, bool use_locking, bool multiply_linear_by_lr, std::string_view name) {
  return BuildApply("ApplyFtrl", name, {var, accum, linear}, {grad, lr, l1, l2, lr_power},
                    {{"use_locking", use_locking}, {"multiply_linear_by_lr", multiply_linear_by_lr}})
      .output(0);
}

Operation ResourceApplyFtrl(Output var, Output accum, Output linear, Output grad, Output lr, Output l1,
                            Output l2, Output lr_power, bool use_locking, bool multiply_linear_by_lr,
                            std::string_view name) {
  return BuildApply("ResourceApplyFtrl", name, {var, accum, linear}, {grad, lr, l1, l2, lr_power},
                    {{"use_locking", use_locking}, {"multiply_linear_by_lr", multiply_linear_by_lr}});
}

Output SparseApplyFtrl(Output var, Output accum, Output linear, Output grad, Output indices, Output lr,
                       Output l1, Output l2, Output lr_power, bool use_locking, bool multiply_linear_by_lr,
                       std::string_view name) {
  return BuildApply("SparseApplyFtrl", name, {var, accum, linear}, {grad, indices, lr, l1, l2, lr_power},
                    {{"use_locking", use_locking}, {"multiply_linear_by_lr", multiply_linear_by_lr}})
      .output(0);
}

Operation ResourceSparseApplyFtrl(Output var, Output accum, Output linear, Output grad, Output indices,
                                  Output lr, Output l1, Output l2, Output lr_power, bool use_locking,
                                  bool multiply_linear_by_lr, std::string_view name) {
  return BuildApply("ResourceSparseApplyFtrl", name, {var, accum, linear},
                    {grad, indices, lr, l1, l2, lr_power},
                    {{"use_locking", use_locking}, {"multiply_linear_by_lr", multiply_linear_by_lr}});
}

Output ApplyFtrlV2(Output var, Output accum, Output linear, Output grad, Output lr, Output l1, Output l2,
                   Output l2_shrinkage, Output lr_power, bool use_locking, bool multiply_linear_by_lr,
                   std::string_view name) {
  return BuildApply("ApplyFtrlV2", name, {var, accum, linear}, {grad, lr, l1, l2, l2_shrinkage, lr_power},
                    {{"use_locking", use_locking}, {"multiply_linear_by_lr", multiply_linear_by_lr}})
      .output(0);
}

Operation ResourceApplyFtrlV2(Output var, Output accum, Output linear, Output grad, Output lr, Output l1,
                              Output l2, Output l2_shrinkage, Output lr_power, bool use_locking,
                              bool multiply_linear_by_lr, std::string_view name) {
  return BuildApply("ResourceApplyFtrlV2", name, {var, accum, linear},
                    {grad, lr, l1, l2, l2_shrinkage, lr_power},
                    {{"use_locking", use_locking}, {"multiply_linear_by_lr", multiply_linear_by_lr}});
}

Output SparseApplyFtrlV2(Output var, Output accum, Output linear, Output grad, Output indices, Output lr,
                         Output l1, Output l2, Output l2_shrinkage, Output lr_power, bool use_locking,
                         bool multiply_linear_by_lr, std::string_view name) {
  return BuildApply("SparseApplyFtrlV2", name, {var, accum, linear},
                    {grad, indices, lr, l1, l2, l2_shrinkage, lr_power},
                    {{"use_locking", use_locking}, {"multiply_linear_by_lr", multiply_linear_by_lr}})
      .output(0);
}

Operation ResourceSparseApplyFtrlV2(Output var, Output accum, Output linear, Output grad, Output indices,
                                    Output lr, Output l1, Output l2, Output l2_shrinkage, Output lr_power,
                                    bool use_locking, bool multiply_linear_by_lr, std::string_view name) {
  return BuildApply("ResourceSparseApplyFtrlV2", name, {var, accum, linear},
                    {grad, indices, lr, l1, l2, l2_shrinkage, lr_power},
                    {{"use_locking", use_locking}, {"multiply_linear_by_lr", multiply_linear_by_lr}});
}

Output ApplyAdagradDA(Output var, Output gradient_accumulator, Output gradient_squared_accumulator,
                      Output grad, Output lr, Output l1, Output l2, Output global_step, bool use_locking,
                      std::string_view name) {
  return BuildApply("ApplyAdagradDA", name, {var, gradient_accumulator, gradient_squared_accumulator},
                    {grad, lr, l1, l2, global_step}, {{"use_locking", use_locking}})
      .output(0);
}

Operation ResourceApplyAdagradDA(Output var, Output gradient_accumulator, Output gradient_squared_accumulator,
                                 Output grad, Output lr, Output l1, Output l2, Output global_step,
                                 bool use_locking, std::string_view name) {
  return BuildApply("ResourceApplyAdagradDA", name, {var, gradient_accumulator, gradient_squared_accumulator},
                    {grad, lr, l1, l2, global_step}, {{"use_locking", use_locking}});
}

Output SparseApplyAdagradDA(Output var, Output gradient_accumulator, Output gradient_squared_accumulator,
                            Output grad, Output indices, Output lr, Output l1, Output l2, Output global_step,
                            bool use_locking, std::string_view name) {
  return BuildApply("SparseApplyAdagradDA", name, {var, gradient_accumulator, gradient_squared_accumulator},
                    {grad, indices, lr, l1, l2, global_step}, {{"use_locking", use_locking}})
      .output(0);
}

Operation ResourceSparseApplyAdagradDA(Output var, Output gradient_accumulator,
                                       Output gradient_squared_accumulator, Output grad, Output indices,
                                       Output lr, Output l1, Output l2, Output global_step, bool use_locking,
                                       std::string_view name) {
  return BuildApply("ResourceSparseApplyAdagradDA", name,
                    {var, gradient_accumulator, gradient_squared_accumulator},
                    {grad, indices, lr, l1, l2, global_step}, {{"use_locking", use_locking}});
}

}  // namespace ops
}  // namespace flowtrain
