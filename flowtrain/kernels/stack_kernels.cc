// Kernels of the stack ops (StackV2, StackPushV2, StackPopV2, StackCloseV2), which keep a
// while loop's forward values for its gradient loop. StackV2 creates a Stack in the run's
// per-step container (dropped when the run ends, as in TF); the others find it by handle.
// Errors and their wording are TF 1.15's (core/kernels/stack.cc).
#include <atomic>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/internal/step_resources.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

constexpr const char* kStackType = "Stack";

// A LIFO of tensors of one dtype, at most `max_size` deep when that is non-negative.
// Thread-safe.
class Stack : public ResourceBase {
 public:
  Stack(std::string name, DataType dtype, int64_t max_size)
      : name_(std::move(name)), dtype_(dtype), max_size_(max_size) {}

  std::string DebugString() const override { return StrCat("Stack ", name_); }

  void Push(const Tensor& value) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    CheckNotClosed();
    if (value.dtype() != dtype_) {
      InvalidArgument("Stack[", name_, "]: must have type ", DataTypeString(dtype_), " but got ",
                      DataTypeString(value.dtype()));
    }
    if (max_size_ >= 0 && static_cast<int64_t>(values_.size()) >= max_size_) {
      InvalidArgument("Stack[", name_, "] overflowed its max_size (", max_size_, ")");
    }
    values_.push_back(value);
  }
  Tensor Pop(DataType expected) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    CheckNotClosed();
    if (expected != dtype_) {
      InvalidArgument("Stack[", name_, "] holds ", DataTypeString(dtype_), " but the pop expects ",
                      DataTypeString(expected));
    }
    if (values_.empty()) InvalidArgument("Stack[", name_, "] is empty.");
    Tensor value = std::move(values_.back());
    values_.pop_back();
    return value;
  }
  void Close() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    values_.clear();
  }

 private:
  void CheckNotClosed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed_) InvalidArgument("Stack[", name_, "] has already been closed.");
  }

  const std::string name_;
  const DataType dtype_;
  const int64_t max_size_;
  mutable absl::Mutex mu_;
  std::vector<Tensor> values_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// TF names each stack "<stack_name>_<n>" with a process-wide counter.
std::atomic<int64_t> stack_counter{0};

// The stack behind input 0; InvalidArgument for a handle of another kind, NotFound when the
// stack is gone (another run's, or never created).
std::shared_ptr<Stack> GetStack(OpKernelContext* ctx, const OpKernel& kernel) {
  const Tensor& handle_tensor = ctx->input(0);
  if (handle_tensor.dtype() != DT_RESOURCE || handle_tensor.NumElements() != 1) {
    InvalidArgument(kernel.name(), " expects a stack handle, got a ", DataTypeString(handle_tensor.dtype()),
                    " tensor of shape ", handle_tensor.shape().DebugString());
  }
  const ResourceHandle& handle = handle_tensor.data<ResourceHandle>()[0];
  if (handle.type_name != kStackType) {
    InvalidArgument(kernel.name(), " expects a stack handle, but ", handle.DebugString(), " is a ",
                    handle.type_name.empty() ? std::string("resource of unknown kind") : handle.type_name);
  }
  auto stack = ctx->resource_manager()->Lookup<Stack>(handle.container, handle.name);
  if (stack == nullptr) {
    NotFound("Could not find resource: ", handle.DebugString(),
             " (a stack lives only for the run that created it)");
  }
  return stack;
}

class StackOp : public OpKernel {
 public:
  explicit StackOp(OpKernelConstruction& c)
      : OpKernel(c),
        dtype_(c.GetAttr<DataType>("elem_type")),
        base_name_(c.GetAttr<std::string>("stack_name")) {
    if (base_name_.empty()) base_name_ = c.name();
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& max_size = ctx->input(0);
    if (max_size.dims() != 0) {
      InvalidArgument("max_size must be a scalar, but had shape: ", max_size.shape().DebugString());
    }
    const int64_t limit = max_size.scalar<int32_t>();
    const std::string name = StrCat(base_name_, "_", stack_counter.fetch_add(1));
    const std::string container = ctx->step_container();
    ctx->resource_manager()->LookupOrCreate<Stack>(
        container, name, [&] { return std::make_shared<Stack>(name, dtype_, limit); });
    Tensor handle(DT_RESOURCE, TensorShape());
    handle.scalar<ResourceHandle>() = {.container = container, .name = name, .type_name = kStackType};
    ctx->set_output(0, std::move(handle));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  DataType dtype_;
  std::string base_name_;
};
FT_REGISTER_KERNEL("StackV2", StackOp);
FT_REGISTER_STEP_RESOURCE_OP("StackV2");

// Outputs the pushed value, so that the gradient loop can depend on the push. swap_memory
// (moving GPU values to host memory) has nothing to do on a CPU.
struct StackPushOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    GetStack(ctx, *this)->Push(ctx->input(1));
    ctx->set_output(0, ctx->input(1));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("StackPushV2", StackPushOp);

struct StackPopOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, GetStack(ctx, *this)->Pop(ctx->output_type(0)));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("StackPopV2", StackPopOp);

struct StackCloseOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { GetStack(ctx, *this)->Close(); }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("StackCloseV2", StackCloseOp);

}  // namespace
}  // namespace flowtrain
