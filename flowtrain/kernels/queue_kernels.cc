// Kernels of the queue ops (FIFOQueueV2 ... QueueSizeV2). The queue op creates the Queue in
// the session's resource manager on first use and outputs its handle; the other ops look the
// queue up by that handle.
#include <algorithm>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/queue.h"

namespace flowtrain {
namespace {

class QueueOp : public OpKernel {
 public:
  QueueOp(OpKernelConstruction& c, Queue::Kind kind) : OpKernel(c) {
    options_.kind = kind;
    options_.dtypes = c.GetAttr<std::vector<DataType>>("component_types");
    options_.shapes = c.GetAttr<std::vector<PartialTensorShape>>("shapes");
    options_.capacity = c.GetAttr<int64_t>("capacity");
    if (kind == Queue::Kind::kRandomShuffle) {
      options_.min_after_dequeue = c.GetAttr<int64_t>("min_after_dequeue");
      const int64_t seed = c.GetAttr<int64_t>("seed");
      const int64_t seed2 = c.GetAttr<int64_t>("seed2");
      options_.seed = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(seed2);
    }
    std::string shared_name = c.GetAttr<std::string>("shared_name");
    options_.name = shared_name.empty() ? c.name() : shared_name;
    handle_ = Tensor(DT_RESOURCE, TensorShape());
    handle_.scalar<ResourceHandle>() = {
        .container = c.GetAttr<std::string>("container"), .name = options_.name, .type_name = "Queue"};
  }
  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle& h = handle_.scalar<ResourceHandle>();
    ctx->resource_manager()->LookupOrCreate<Queue>(h.container, h.name,
                                                   [&] { return std::make_shared<Queue>(options_); });
    ctx->set_output(0, handle_);
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  Queue::Options options_;
  Tensor handle_;
};

struct FIFOQueueOp : QueueOp {
  explicit FIFOQueueOp(OpKernelConstruction& c) : QueueOp(c, Queue::Kind::kFifo) {}
};
struct PaddingFIFOQueueOp : QueueOp {
  explicit PaddingFIFOQueueOp(OpKernelConstruction& c) : QueueOp(c, Queue::Kind::kPaddingFifo) {}
};
struct RandomShuffleQueueOp : QueueOp {
  explicit RandomShuffleQueueOp(OpKernelConstruction& c) : QueueOp(c, Queue::Kind::kRandomShuffle) {}
};
FT_REGISTER_KERNEL("FIFOQueueV2", FIFOQueueOp);
FT_REGISTER_KERNEL("PaddingFIFOQueueV2", PaddingFIFOQueueOp);
FT_REGISTER_KERNEL("RandomShuffleQueueV2", RandomShuffleQueueOp);

// Base of the ops that use a queue through its handle (input 0).
class QueueAccessOp : public OpKernel {
 public:
  explicit QueueAccessOp(OpKernelConstruction& c) : OpKernel(c) {
    if (c.HasAttr("timeout_ms")) timeout_ms_ = c.GetAttr<int64_t>("timeout_ms");
  }

 protected:
  std::shared_ptr<Queue> GetQueue(OpKernelContext* ctx) const {
    const Tensor& handle_tensor = ctx->input(0);
    if (handle_tensor.dtype() != DT_RESOURCE) {
      InvalidArgument(name(), " expects a queue handle, got a ", DataTypeString(handle_tensor.dtype()));
    }
    const ResourceHandle& handle = handle_tensor.scalar<ResourceHandle>();
    auto queue = ctx->resource_manager()->Lookup<Queue>(handle.container, handle.name);
    if (queue == nullptr) {
      NotFound("Resource ", handle.DebugString(), "/Queue does not exist.");
    }
    return queue;
  }
  Queue::Wait MakeWait(OpKernelContext* ctx) const {
    Queue::Wait wait{.cancellation = ctx->cancellation_manager(), .deadline = ctx->deadline()};
    if (timeout_ms_ > 0) {
      wait.deadline =
          std::min(wait.deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_));
    }
    return wait;
  }
  std::vector<Tensor> Components(OpKernelContext* ctx) const {
    std::vector<Tensor> components;
    for (int i = 1; i < ctx->num_inputs(); ++i) components.push_back(ctx->input(i));
    return components;
  }
  void SetOutputs(OpKernelContext* ctx, std::vector<Tensor> tuple) const {
    if (static_cast<int>(tuple.size()) != ctx->num_outputs()) {
      InvalidArgument(name(), " expects ", ctx->num_outputs(), " components but the queue holds ",
                      tuple.size());
    }
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      if (tuple[i].dtype() != ctx->output_type(i)) {
        InvalidArgument(name(), ": component ", i, " of the queue is ", DataTypeString(tuple[i].dtype()),
                        " but the op expects ", DataTypeString(ctx->output_type(i)));
      }
      ctx->set_output(i, std::move(tuple[i]));
    }
  }

 private:
  int64_t timeout_ms_ = -1;
};

struct EnqueueOp : QueueAccessOp {
  using QueueAccessOp::QueueAccessOp;
  void Compute(OpKernelContext* ctx) override { GetQueue(ctx)->Enqueue(Components(ctx), MakeWait(ctx)); }
};
struct EnqueueManyOp : QueueAccessOp {
  using QueueAccessOp::QueueAccessOp;
  void Compute(OpKernelContext* ctx) override { GetQueue(ctx)->EnqueueMany(Components(ctx), MakeWait(ctx)); }
};
struct DequeueOp : QueueAccessOp {
  using QueueAccessOp::QueueAccessOp;
  void Compute(OpKernelContext* ctx) override { SetOutputs(ctx, GetQueue(ctx)->Dequeue(MakeWait(ctx))); }
};
template <bool kUpTo>
struct DequeueManyOp : QueueAccessOp {
  using QueueAccessOp::QueueAccessOp;
  void Compute(OpKernelContext* ctx) override {
    const int32_t n = ctx->input(1).scalar<int32_t>();
    SetOutputs(ctx, GetQueue(ctx)->DequeueMany(n, kUpTo, MakeWait(ctx)));
  }
};
FT_REGISTER_KERNEL("QueueEnqueueV2", EnqueueOp);
FT_REGISTER_KERNEL("QueueEnqueueManyV2", EnqueueManyOp);
FT_REGISTER_KERNEL("QueueDequeueV2", DequeueOp);
FT_REGISTER_KERNEL("QueueDequeueManyV2", DequeueManyOp<false>);
FT_REGISTER_KERNEL("QueueDequeueUpToV2", DequeueManyOp<true>);

struct CloseOp : QueueAccessOp {
  explicit CloseOp(OpKernelConstruction& c)
      : QueueAccessOp(c), cancel_pending_(c.GetAttr<bool>("cancel_pending_enqueues")) {}
  void Compute(OpKernelContext* ctx) override { GetQueue(ctx)->Close(cancel_pending_); }
  KernelCost cost() const override { return KernelCost::kCheap; }
  bool cancel_pending_;
};
struct SizeOp : QueueAccessOp {
  using QueueAccessOp::QueueAccessOp;
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, Tensor::Scalar<int32_t>(static_cast<int32_t>(GetQueue(ctx)->Size())));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
struct IsClosedOp : QueueAccessOp {
  using QueueAccessOp::QueueAccessOp;
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, Tensor::Scalar<bool>(GetQueue(ctx)->IsClosed()));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("QueueCloseV2", CloseOp);
FT_REGISTER_KERNEL("QueueSizeV2", SizeOp);
FT_REGISTER_KERNEL("QueueIsClosedV2", IsClosedOp);

}  // namespace
}  // namespace flowtrain
