// tf.nn.dropout (declared in nn_ops.h): built from the random and math ops, so kept apart
// from the nn op registrations.
#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/random_ops.h"

namespace flowtrain {
namespace ops {
namespace {

// A scalar constant of a floating dtype.
Output FloatConst(DataType dtype, double value, std::string_view name) {
  return dtype == DT_DOUBLE ? Const(value, name) : Const(static_cast<float>(value), name);
}

void CheckDropoutInput(const Output& x, std::string_view name) {
  if (x.dtype() != DT_FLOAT && x.dtype() != DT_DOUBLE) {
    InvalidArgument("x has to be a floating point tensor since it's going to be scaled. Got a ",
                    DataTypeString(x.dtype()), " tensor instead (", name, ")");
  }
}

// The body of tf.nn.dropout inside its "dropout" name scope.
Output DropoutInScope(Output x, Output rate, std::optional<int64_t> seed) {
  // x * (1 / (1 - rate)) * cast(uniform >= rate): an element survives with probability 1 - rate.
  Output uniform = random::Uniform(Shape(x), 0.0, 1.0, x.dtype(), seed);
  Output keep_prob = Sub(FloatConst(x.dtype(), 1.0, "sub/x"), rate, "sub");
  Output scale = RealDiv(FloatConst(x.dtype(), 1.0, "truediv/x"), keep_prob, "truediv");
  Output keep_mask = GreaterEqual(uniform, rate, "GreaterEqual");
  return Mul(Mul(x, scale, "mul"), Cast(keep_mask, x.dtype(), "Cast"), "mul_1");
}

}  // namespace

Output Dropout(Output x, float rate, std::optional<int64_t> seed, std::string_view name) {
  if (!(rate >= 0.0f && rate < 1.0f)) {
    InvalidArgument("rate must be a scalar tensor or a float in the range [0, 1), got ", rate, " in ", name);
  }
  CheckDropoutInput(x, name);
  auto scope = x.graph()->NameScope(name);
  return DropoutInScope(x, FloatConst(x.dtype(), rate, "rate"), seed);
}

Output Dropout(Output x, Output rate, std::optional<int64_t> seed, std::string_view name) {
  CheckDropoutInput(x, name);
  auto scope = x.graph()->NameScope(name);
  return DropoutInScope(x, rate, seed);
}

}  // namespace ops
}  // namespace flowtrain
