// The iterator ops of tf.data: IteratorV2 holds the session's iterator resource; MakeIterator,
// IteratorGetNext, SerializeIterator and DeserializeIterator create, advance, save and restore it;
// IteratorToStringHandle names it as a string and IteratorFromStringHandleV2 finds it by that
// name (TF1's feedable iterators). OneShotIterator is an iterator that makes its dataset itself,
// by running a function of the library once.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"
#include "flowtrain/proto/resource_handle.pb.h"

namespace flowtrain::data {
namespace {

// The session's iterator: the dataset it was made from and the current position. A position
// restored before the iterator has a dataset waits in `pending_state` for the next
// MakeIterator (a monitored session restores checkpoints before it runs local_init_op).
class IteratorResource : public ResourceBase {
 public:
  IteratorResource(std::vector<DataType> types, std::vector<PartialTensorShape> shapes)
      : output_types(std::move(types)), output_shapes(std::move(shapes)) {}
  std::string DebugString() const override { return "Iterator"; }
  // What the IteratorV2 op that made the resource declared it yields.
  const std::vector<DataType> output_types;
  const std::vector<PartialTensorShape> output_shapes;
  absl::Mutex mu;
  DatasetRef dataset ABSL_GUARDED_BY(mu);
  std::unique_ptr<IteratorBase> iterator ABSL_GUARDED_BY(mu);
  std::optional<IteratorState> pending_state ABSL_GUARDED_BY(mu);
  bool delivered_origins ABSL_GUARDED_BY(mu) = false;  // has an entry in DeliveredOrigins
  ~IteratorResource() override {
    if (delivered_origins) DeliveredOrigins::Forget(this);
  }
};

constexpr char kIteratorPrefix[] = "Iterator";

// The scalar handle an iterator op outputs: its container and shared_name attrs (the node's
// name when shared_name is empty).
Tensor IteratorHandle(OpKernelConstruction& c) {
  const std::string shared_name = c.GetAttr<std::string>("shared_name");
  Tensor handle(DT_RESOURCE, TensorShape());
  handle.scalar<ResourceHandle>() = {.container = c.GetAttr<std::string>("container"),
                                     .name = shared_name.empty() ? c.name() : shared_name,
                                     .type_name = "Iterator"};
  return handle;
}

class IteratorHandleOp : public OpKernel {
 public:
  explicit IteratorHandleOp(OpKernelConstruction& c)
      : OpKernel(c),
        types_(c.GetAttr<std::vector<DataType>>("output_types")),
        shapes_(c.GetAttr<std::vector<PartialTensorShape>>("output_shapes")),
        handle_(IteratorHandle(c)) {}
  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle& h = handle_.scalar<ResourceHandle>();
    ctx->resource_manager()->LookupOrCreate<IteratorResource>(
        h.container, h.name, [this] { return std::make_shared<IteratorResource>(types_, shapes_); });
    ctx->set_output(0, handle_);
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  std::vector<DataType> types_;
  std::vector<PartialTensorShape> shapes_;
  Tensor handle_;
};
FT_REGISTER_KERNEL("IteratorV2", IteratorHandleOp);

// OneShotIterator (Dataset.make_one_shot_iterator): the iterator resource, which on the op's
// first run in a session gets its dataset from `dataset_factory` (a library function without
// arguments returning the dataset's variant) and an iterator over it; later runs return the
// same handle, so the iterator is made once per session and never re-initialized. A position
// restored before that first run (DeserializeIterator on a resource made by another op of the
// same name) is taken as MakeIterator takes it.
class OneShotIteratorOp : public OpKernel {
 public:
  explicit OneShotIteratorOp(OpKernelConstruction& c)
      : OpKernel(c),
        factory_(c.node().GetAttrValue("dataset_factory").func()),
        types_(c.GetAttr<std::vector<DataType>>("output_types")),
        shapes_(c.GetAttr<std::vector<PartialTensorShape>>("output_shapes")),
        handle_(IteratorHandle(c)) {}
  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle& h = handle_.scalar<ResourceHandle>();
    auto resource = ctx->resource_manager()->LookupOrCreate<IteratorResource>(
        h.container, h.name, [this] { return std::make_shared<IteratorResource>(types_, shapes_); });
    {
      absl::MutexLock lock(&resource->mu);
      if (resource->dataset == nullptr) {
        if (ctx->function_runtime() == nullptr) {
          FailedPrecondition(name(), ": no function runtime to run dataset_factory '", factory_.name(), "'");
        }
        // Under the resource's lock, so that concurrent first runs make one iterator.
        std::vector<Tensor> made = ctx->function_runtime()->Instantiate(factory_)->Run({});
        if (made.size() != 1) {
          InvalidArgument(name(), ": dataset_factory '", factory_.name(), "' returned ", made.size(),
                          " tensors, expected one dataset");
        }
        DatasetRef dataset = DatasetFromTensor(made[0], name());
        std::unique_ptr<IteratorBase> iterator = dataset->MakeIterator(kIteratorPrefix);
        if (resource->pending_state) {
          IteratorState pending = std::move(*resource->pending_state);
          resource->pending_state.reset();
          iterator->Restore(pending);
        }
        resource->iterator = std::move(iterator);
        resource->dataset = std::move(dataset);
      }
    }
    ctx->set_output(0, handle_);
  }

 private:
  tensorflow::NameAttrList factory_;
  std::vector<DataType> types_;
  std::vector<PartialTensorShape> shapes_;
  Tensor handle_;
};
FT_REGISTER_KERNEL("OneShotIterator", OneShotIteratorOp);

std::shared_ptr<IteratorResource> LookupIterator(OpKernelContext* ctx, int input) {
  const Tensor& t = ctx->input(input);
  if (t.dtype() != DT_RESOURCE) InvalidArgument(ctx->node().name(), " expects an iterator handle");
  const ResourceHandle& h = t.scalar<ResourceHandle>();
  auto it = ctx->resource_manager()->Lookup<IteratorResource>(h.container, h.name);
  if (it == nullptr) NotFound("Resource ", h.DebugString(), "/Iterator does not exist.");
  return it;
}

[[noreturn]] void NotInitialized() {
  FailedPrecondition(
      "GetNext() failed because the iterator has not been initialized. Ensure that you have run "
      "the initializer operation for this iterator before getting the next element.");
}

struct MakeIteratorOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    DatasetRef dataset = DatasetFromTensor(ctx->input(0), name());
    auto resource = LookupIterator(ctx, 1);
    std::unique_ptr<IteratorBase> fresh = dataset->MakeIterator(kIteratorPrefix);
    std::unique_ptr<IteratorBase> old;
    {
      absl::MutexLock lock(&resource->mu);
      if (resource->pending_state) {
        // Taken first: a state from another pipeline fails this initialization only.
        IteratorState pending = std::move(*resource->pending_state);
        resource->pending_state.reset();
        fresh->Restore(pending);
      }
      old = std::move(resource->iterator);
      resource->iterator = std::move(fresh);
      resource->dataset = std::move(dataset);
    }
    // `old` (and any prefetch thread it runs) ends here, outside the lock.
  }
};
FT_REGISTER_KERNEL("MakeIterator", MakeIteratorOp);

class IteratorGetNextOp : public OpKernel {
 public:
  explicit IteratorGetNextOp(OpKernelConstruction& c)
      : OpKernel(c), shapes_(c.GetAttr<std::vector<PartialTensorShape>>("output_shapes")) {}
  void Compute(OpKernelContext* ctx) override {
    auto resource = LookupIterator(ctx, 0);
    IteratorContext ictx{.cancellation = ctx->cancellation_manager(), .deadline = ctx->deadline()};
    Element element;
    {
      absl::MutexLock lock(&resource->mu);
      if (resource->iterator == nullptr) NotInitialized();
      if (!resource->iterator->GetNext(ictx, &element)) OutOfRange("End of sequence");
      // Kernels that fail on the records later in the step name them (ParseExample).
      const RecordOrigins& origins = resource->iterator->origins();
      if (!origins.empty() || resource->delivered_origins) {
        DeliveredOrigins::Record(resource.get(), element, origins);
        resource->delivered_origins = !origins.empty();
      }
    }
    if (static_cast<int>(element.size()) != ctx->num_outputs()) {
      InvalidArgument(name(), ": the iterator produced ", element.size(), " components, expected ",
                      ctx->num_outputs());
    }
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      if (element[i].dtype() != ctx->output_type(i)) {
        InvalidArgument(name(), ": component ", i, " is ", DataTypeString(element[i].dtype()), ", expected ",
                        DataTypeString(ctx->output_type(i)));
      }
      if (i < static_cast<int>(shapes_.size()) && !shapes_[i].IsCompatibleWith(element[i].shape())) {
        InvalidArgument(name(), ": component ", i, " has shape ", element[i].shape().DebugString(),
                        ", expected ", shapes_[i].DebugString());
      }
      ctx->set_output(i, std::move(element[i]));
    }
  }

 private:
  std::vector<PartialTensorShape> shapes_;
};
FT_REGISTER_KERNEL("IteratorGetNext", IteratorGetNextOp);

// TF's string handle is a serialized ResourceHandleProto naming the iterator's resource; the
// iterator need not have been initialized.
struct IteratorToStringHandleOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    LookupIterator(ctx, 0);
    const ResourceHandle& h = ctx->input(0).scalar<ResourceHandle>();
    tensorflow::ResourceHandleProto proto;
    proto.set_container(h.container);
    proto.set_name(h.name);
    proto.set_maybe_type_name(h.type_name);
    ctx->set_output(0, Tensor::Scalar<std::string>(proto.SerializeAsString()));
  }
};
FT_REGISTER_KERNEL("IteratorToStringHandle", IteratorToStringHandleOp);

// The handle of the iterator a string from IteratorToStringHandle names, after checking that it
// exists and, when this op declares output types and shapes, that it yields them.
class IteratorFromStringHandleOp : public OpKernel {
 public:
  explicit IteratorFromStringHandleOp(OpKernelConstruction& c)
      : OpKernel(c),
        types_(c.GetAttr<std::vector<DataType>>("output_types")),
        shapes_(c.GetAttr<std::vector<PartialTensorShape>>("output_shapes")) {
    if (!shapes_.empty() && shapes_.size() != types_.size()) {
      InvalidArgument(name(), ": ", types_.size(), " output_types but ", shapes_.size(), " output_shapes");
    }
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    if (in.NumElements() != 1) {
      InvalidArgument(name(), ": string_handle must be a scalar, got shape ", in.shape().DebugString());
    }
    tensorflow::ResourceHandleProto proto;
    if (!proto.ParseFromString(in.flat<std::string>()[0]) || proto.name().empty()) {
      InvalidArgument(name(), ": could not parse string_handle as a valid ResourceHandle");
    }
    Tensor handle(DT_RESOURCE, TensorShape());
    handle.scalar<ResourceHandle>() = {
        .container = proto.container(), .name = proto.name(), .type_name = proto.maybe_type_name()};
    auto resource = ctx->resource_manager()->Lookup<IteratorResource>(proto.container(), proto.name());
    if (resource == nullptr) {
      NotFound(name(), ": the string handle names the iterator '", proto.name(),
               "', which does not exist in this session");
    }
    if (!types_.empty()) Verify(*resource);
    ctx->set_output(0, handle);
  }

 private:
  void Verify(const IteratorResource& resource) const {
    if (types_.size() != resource.output_types.size()) {
      InvalidArgument(name(), ": number of components does not match: expected ", types_.size(),
                      " types but got ", resource.output_types.size(), ".");
    }
    for (size_t i = 0; i < types_.size(); ++i) {
      if (types_[i] != resource.output_types[i]) {
        InvalidArgument(name(), ": data type mismatch at component ", i, ": expected ",
                        DataTypeString(types_[i]), " but got ", DataTypeString(resource.output_types[i]),
                        ".");
      }
      if (i < shapes_.size() && i < resource.output_shapes.size() &&
          !shapes_[i].IsCompatibleWith(resource.output_shapes[i])) {
        InvalidArgument(name(), ": incompatible shapes at component ", i, ": expected ",
                        shapes_[i].DebugString(), " but got ", resource.output_shapes[i].DebugString(), ".");
      }
    }
  }

  std::vector<DataType> types_;
  std::vector<PartialTensorShape> shapes_;
};
FT_REGISTER_KERNEL("IteratorFromStringHandleV2", IteratorFromStringHandleOp);

struct SerializeIteratorOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto resource = LookupIterator(ctx, 0);
    IteratorState state;
    {
      // Beyond TF, which fails here: an iterator not initialized yet saves the position a
      // restore left waiting for it, or none (an empty state), so that a default saver that
      // saves every iterator of the graph works before the user initializes one.
      absl::MutexLock lock(&resource->mu);
      if (resource->iterator != nullptr) {
        resource->iterator->Save(state);
      } else if (resource->pending_state) {
        state = *resource->pending_state;
      }
    }
    ctx->set_output(0, Tensor::Scalar<std::string>(state.Serialize()));
  }
};
FT_REGISTER_KERNEL("SerializeIterator", SerializeIteratorOp);

struct DeserializeIteratorOp : OpKernel {
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto resource = LookupIterator(ctx, 0);
    IteratorState state = IteratorState::Parse(ctx->input(1).scalar<std::string>());
    std::unique_ptr<IteratorBase> old;
    absl::MutexLock lock(&resource->mu);
    if (resource->dataset == nullptr) {
      // An empty state (saved before any initialization) leaves nothing to continue from.
      if (state.empty()) {
        resource->pending_state.reset();
      } else {
        resource->pending_state = std::move(state);
      }
      return;
    }
    // An empty state restarts the dataset from its beginning, as the save had no position.
    std::unique_ptr<IteratorBase> restored = resource->dataset->MakeIterator(kIteratorPrefix);
    if (!state.empty()) restored->Restore(state);
    old = std::move(resource->iterator);
    resource->iterator = std::move(restored);
  }
};
FT_REGISTER_KERNEL("DeserializeIterator", DeserializeIteratorOp);

}  // namespace
}  // namespace flowtrain::data
