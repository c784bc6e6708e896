// The op registry: for every op type, its signature (a TF `OpDef`: inputs, outputs, attrs
// with defaults), whether it is stateful, and the shape function run when a node is built.
// Signatures are written in TF's REGISTER_OP spec language so they read like TF's:
//
//   FT_REGISTER_OP("MatMul")
//       .Input("a: T")
//       .Input("b: T")
//       .Output("product: T")
//       .Attr("transpose_a: bool = false")
//       .Attr("transpose_b: bool = false")
//       .Attr("T: {half, bfloat16, float, double, int32, int64}")
//       .SetShapeFn(MatMulShape);
//
// Input/output specs: "name: float" (fixed type), "name: T" (type attr), "name: N * T"
// (homogeneous list), "name: Tlist" (list(type) attr), "name: Ref(T)" (TF1 reference).
// Attr specs: "name: type [= default]" with type one of int, float, bool, string, type, shape,
// tensor, list(int|float|bool|string|type|shape), func, or "{t1, t2}" (a type from a set).
#ifndef FLOWTRAIN_GRAPH_OP_REGISTRY_H_
#define FLOWTRAIN_GRAPH_OP_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/proto/op_def.pb.h"

namespace flowtrain {

class InferenceContext;
using ShapeFn = std::function<void(InferenceContext&)>;

struct OpRegistration {
  tensorflow::OpDef def;
  ShapeFn shape_fn;  // null: outputs get unknown shapes
};

class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string op_name);
  OpDefBuilder& Input(std::string_view spec);
  OpDefBuilder& Output(std::string_view spec);
  OpDefBuilder& Attr(std::string_view spec);
  OpDefBuilder& SetIsStateful();
  OpDefBuilder& SetIsCommutative();
  OpDefBuilder& SetIsAggregate();
  OpDefBuilder& SetAllowsUninitializedInput();
  OpDefBuilder& SetShapeFn(ShapeFn fn);
  OpDefBuilder& Doc(std::string_view summary);
  // Validates the signature (every referenced attr exists) and returns the registration.
  OpRegistration Build() const;

 private:
  OpRegistration registration_;
  std::vector<std::string> input_specs_;
  std::vector<std::string> output_specs_;
};

class OpRegistry {
 public:
  static OpRegistry* Global();
  // Throws AlreadyExists if the op type is registered twice.
  void Register(OpRegistration registration);
  // nullptr if unknown.
  const OpRegistration* LookUp(std::string_view op_type) const;
  // Throws NotFound naming the op type.
  const OpRegistration& Get(std::string_view op_type) const;
  std::vector<std::string> ListOps() const;

 private:
  struct Impl;
  OpRegistry();
  std::unique_ptr<Impl> impl_;
};

namespace op_registry_internal {
struct OpRegistrar {
  OpRegistrar(const OpDefBuilder& builder) {  // NOLINT: used by FT_REGISTER_OP
    OpRegistry::Global()->Register(builder.Build());
  }
};
}  // namespace op_registry_internal

#define FT_REGISTER_OP_UNIQ_HELPER(ctr, name) FT_REGISTER_OP_UNIQ(ctr, name)
#define FT_REGISTER_OP_UNIQ(ctr, name)                                                                 \
  static const ::flowtrain::op_registry_internal::OpRegistrar ft_op_registrar_##ctr [[maybe_unused]] = \
      ::flowtrain::OpDefBuilder(name)
#define FT_REGISTER_OP(name) FT_REGISTER_OP_UNIQ_HELPER(__COUNTER__, name)

}  // namespace flowtrain

#endif  // FLOWTRAIN_GRAPH_OP_REGISTRY_H_
