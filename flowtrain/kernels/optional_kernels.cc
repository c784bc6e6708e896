// Kernels of the optional ops (ops/optional_ops.cc). An optional is a DT_VARIANT scalar whose
// element is an OptionalValue; an empty std::any would be indistinguishable from a tensor
// that was never set, so None is an OptionalValue without components.
#include <any>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

struct OptionalValue {
  bool has_value = false;
  std::vector<Tensor> components;
};

Tensor MakeOptional(OptionalValue value) {
  Tensor t(DT_VARIANT, TensorShape({}));
  t.scalar<std::any>() = std::move(value);
  return t;
}

const OptionalValue& GetOptional(OpKernelContext* ctx) {
  const Tensor& t = ctx->input(0);
  const auto* value = t.dims() == 0 ? std::any_cast<OptionalValue>(&t.scalar<std::any>()) : nullptr;
  if (value == nullptr)
    InvalidArgument(ctx->node().name(), ": input must be a scalar optional (OptionalFromValue)");
  return *value;
}

class OptionalFromValueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    OptionalValue value{true, {}};
    for (int i = 0; i < ctx->num_inputs(); ++i) value.components.push_back(ctx->input(i));
    ctx->set_output(0, MakeOptional(std::move(value)));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("OptionalFromValue", OptionalFromValueOp);

class OptionalNoneOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, MakeOptional({})); }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("OptionalNone", OptionalNoneOp);

class OptionalHasValueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->allocate_output(0, TensorShape({}))->scalar<bool>() = GetOptional(ctx).has_value;
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("OptionalHasValue", OptionalHasValueOp);

// TF's error for None is InvalidArgument too ("The optional does not have a value").
class OptionalGetValueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const OptionalValue& value = GetOptional(ctx);
    if (!value.has_value) InvalidArgument(ctx->node().name(), ": The optional does not have a value");
    if (static_cast<int>(value.components.size()) != ctx->num_outputs()) {
      InvalidArgument(ctx->node().name(), ": the optional holds ", value.components.size(),
                      " components, the node has ", ctx->num_outputs(), " outputs");
    }
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      if (value.components[i].dtype() != ctx->output_type(i)) {
        InvalidArgument(ctx->node().name(), ": component ", i, " is ",
                        DataTypeString(value.components[i].dtype()), ", the node expects ",
                        DataTypeString(ctx->output_type(i)));
      }
      ctx->set_output(i, value.components[i]);
    }
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("OptionalGetValue", OptionalGetValueOp);

}  // namespace
}  // namespace flowtrain
