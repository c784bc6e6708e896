#include "flowtrain/ops/training_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/gradients.h"

namespace flowtrain {
namespace {

// Shape function of the Apply* ops: the first `num_vars` inputs (variable and slots) and the
// gradient (last input) share one shape; every other input is a scalar.
ShapeFn ApplyShape(int num_vars) {
  return [num_vars](InferenceContext& c) {
    PartialTensorShape shape = c.input(0);
    for (int i = 1; i < num_vars; ++i) shape = c.Merge(shape, c.input(i));
    const int grad = c.num_inputs() - 1;
    for (int i = num_vars; i < grad; ++i) c.WithRank(c.input(i), 0);
    shape = c.Merge(shape, c.input(grad));
    c.set_output(0, shape);
  };
}

constexpr const char* kFloatTypes = "T: {float, double}";

void RequireRefs(std::string_view op, std::initializer_list<const Output*> refs) {
  for (const Output* ref : refs) {
    if (!*ref || !ref->is_ref()) {
      InvalidArgument(op,
                      " requires variables (reference tensors) for its variable and slot "
                      "inputs, got ",
                      *ref ? ref->DebugString() : std::string("an empty Output"));
    }
  }
}

}  // namespace

FT_REGISTER_OP("ApplyGradientDescent")
    .Input("var: Ref(T)")
    .Input("alpha: T")
    .Input("delta: T")
    .Output("out: Ref(T)")
    .Attr(kFloatTypes)
    .Attr("use_locking: bool = false")
    .SetShapeFn(ApplyShape(1));

FT_REGISTER_OP("ApplyMomentum")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Input("momentum: T")
    .Output("out: Ref(T)")
    .Attr(kFloatTypes)
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn([](InferenceContext& c) {
      // grad sits before momentum here, unlike the other ops.
      PartialTensorShape shape = c.Merge(c.input(0), c.input(1));
      c.WithRank(c.input(2), 0);
      shape = c.Merge(shape, c.input(3));
      c.WithRank(c.input(4), 0);
      c.set_output(0, shape);
    });

FT_REGISTER_OP("ApplyAdam")
    .Input("var: Ref(T)")
    .Input("m: Ref(T)")
    .Input("v: Ref(T)")
    .Input("beta1_power: T")
    .Input("beta2_power: T")
    .Input("lr: T")
    .Input("beta1: T")
    .Input("beta2: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr(kFloatTypes)
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn(ApplyShape(3));

FT_REGISTER_OP("ApplyAdagrad")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr(kFloatTypes)
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetShapeFn(ApplyShape(2));

// ApplyAdagrad on the rows `indices` of var and accum only (TF's SparseApplyAdagrad, what
// Adagrad runs for an IndexedSlices gradient such as embedding_lookup's): grad holds one row
// per index.
FT_REGISTER_OP("SparseApplyAdagrad")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Output("out: Ref(T)")
    .Attr(kFloatTypes)
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetShapeFn([](InferenceContext& c) {
      const PartialTensorShape var = c.Merge(c.input(0), c.input(1));
      c.WithRank(c.input(2), 0);
      c.WithRank(c.input(4), 1);
      c.set_output(0, var);
    });

FT_REGISTER_OP("ApplyRMSProp")
    .Input("var: Ref(T)")
    .Input("ms: Ref(T)")
    .Input("mom: Ref(T)")
    .Input("lr: T")
    .Input("rho: T")
    .Input("momentum: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr(kFloatTypes)
    .Attr("use_locking: bool = false")
    .SetShapeFn(ApplyShape(3));

FT_REGISTER_OP("ApplyCenteredRMSProp")
    .Input("var: Ref(T)")
    .Input("mg: Ref(T)")
    .Input("ms: Ref(T)")
    .Input("mom: Ref(T)")
    .Input("lr: T")
    .Input("rho: T")
    .Input("momentum: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr(kFloatTypes)
    .Attr("use_locking: bool = false")
    .SetShapeFn(ApplyShape(4));

FT_REGISTER_NO_GRADIENT("ApplyGradientDescent");
FT_REGISTER_NO_GRADIENT("ApplyMomentum");
FT_REGISTER_NO_GRADIENT("ApplyAdam");
FT_REGISTER_NO_GRADIENT("ApplyAdagrad");
FT_REGISTER_NO_GRADIENT("SparseApplyAdagrad");
FT_REGISTER_NO_GRADIENT("ApplyRMSProp");
FT_REGISTER_NO_GRADIENT("ApplyCenteredRMSProp");

namespace ops {

Output ApplyGradientDescent(Output var, Output alpha, Output delta, bool use_locking, std::string_view name) {
  RequireRefs("ApplyGradientDescent", {&var});
  return NodeBuilder("ApplyGradientDescent", name)
      .Input(var)
      .Input(alpha)
      .Input(delta)
      .Attr("use_locking", use_locking)
      .Finalize();
}

Output ApplyMomentum(Output var, Output accum, Output lr, Output grad, Output momentum, bool use_locking,
                     bool use_nesterov, std::string_view name) {
  RequireRefs("ApplyMomentum", {&var, &accum});
  return NodeBuilder("ApplyMomentum", name)
      .Input(var)
      .Input(accum)
      .Input(lr)
      .Input(grad)
      .Input(momentum)
      .Attr("use_locking", use_locking)
      .Attr("use_nesterov", use_nesterov)
      .Finalize();
}

Output ApplyAdam(Output var, Output m, Output v, Output beta1_power, Output beta2_power, Output lr,
                 Output beta1, Output beta2, Output epsilon, Output grad, bool use_locking, bool use_nesterov,
                 std::string_view name) {
  RequireRefs("ApplyAdam", {&var, &m, &v});
  return NodeBuilder("ApplyAdam", name)
      .Input(var)
      .Input(m)
      .Input(v)
      .Input(beta1_power)
      .Input(beta2_power)
      .Input(lr)
      .Input(beta1)
      .Input(beta2)
      .Input(epsilon)
      .Input(grad)
      .Attr("use_locking", use_locking)
      .Attr("use_nesterov", use_nesterov)
      .Finalize();
}

Output SparseApplyAdagrad(Output var, Output accum, Output lr, Output grad, Output indices, bool use_locking,
                          bool update_slots, std::string_view name) {
  RequireRefs("SparseApplyAdagrad", {&var, &accum});
  return NodeBuilder("SparseApplyAdagrad", name)
      .Input(var)
      .Input(accum)
      .Input(lr)
      .Input(grad)
      .Input(indices)
      .Attr("use_locking", use_locking)
      .Attr("update_slots", update_slots)
      .Finalize();
}

Output ApplyAdagrad(Output var, Output accum, Output lr, Output grad, bool use_locking, bool update_slots,
                    std::string_view name) {
  RequireRefs("ApplyAdagrad", {&var, &accum});
  return NodeBuilder("ApplyAdagrad", name)
      .Input(var)
      .Input(accum)
      .Input(lr)
      .Input(grad)
      .Attr("use_locking", use_locking)
      .Attr("update_slots", update_slots)
      .Finalize();
}

Output ApplyRMSProp(Output var, Output ms, Output mom, Output lr, Output rho, Output momentum, Output epsilon,
                    Output grad, bool use_locking, std::string_view name) {
  RequireRefs("ApplyRMSProp", {&var, &ms, &mom});
  return NodeBuilder("ApplyRMSProp", name)
      .Input(var)
      .Input(ms)
      .Input(mom)
      .Input(lr)
      .Input(rho)
      .Input(momentum)
      .Input(epsilon)
      .Input(grad)
      .Attr("use_locking", use_locking)
      .Finalize();
}

Output ApplyCenteredRMSProp(Output var, Output mg, Output ms, Output mom, Output lr, Output rho,
                            Output momentum, Output epsilon, Output grad, bool use_locking,
                            std::string_view name) {
  RequireRefs("ApplyCenteredRMSProp", {&var, &mg, &ms, &mom});
  return NodeBuilder("ApplyCenteredRMSProp", name)
      .Input(var)
      .Input(mg)
      .Input(ms)
      .Input(mom)
      .Input(lr)
      .Input(rho)
      .Input(momentum)
      .Input(epsilon)
      .Input(grad)
      .Attr("use_locking", use_locking)
      .Finalize();
}

}  // namespace ops
}  // namespace flowtrain
