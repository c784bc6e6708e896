// The kernel of ToBool (ops/functional_ops.cc), the truth test of a functional If's
// predicate: what the runtime's function lowering puts before the Switch of an If whose
// predicate is not a bool.
#include <cstdint>
#include <cstring>
#include <string>

#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

// A scalar's truth: not zero. Floating point compares as numbers so that -0.0 is false; the
// other numeric types are false exactly when every byte is zero.
bool ScalarIsTrue(const Tensor& t) {
  switch (t.dtype()) {
    case DT_FLOAT:
      return t.scalar<float>() != 0.0f;
    case DT_DOUBLE:
      return t.scalar<double>() != 0.0;
    case DT_STRING:
      return !t.scalar<std::string>().empty();
    case DT_HALF:
    case DT_BFLOAT16: {
      uint16_t bits;
      std::memcpy(&bits, t.raw_data(), sizeof(bits));
      return (bits & 0x7fff) != 0;  // both zeros are false
    }
    default: {
      const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
      for (size_t i = 0; i < t.TotalBytes(); ++i) {
        if (bytes[i] != 0) return true;
      }
      return false;
    }
  }
}

class ToBoolOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const bool truth = input.dims() == 0 ? ScalarIsTrue(input) : input.NumElements() > 0;
    ctx->allocate_output(0, TensorShape({}))->scalar<bool>() = truth;
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("ToBool", ToBoolOp);

}  // namespace
}  // namespace flowtrain
