// ResourceHandle: the element of a DT_RESOURCE tensor — the (container, name) under which a
// session's ResourceMgr keeps a stateful object (a queue, an iterator), plus the object's type
// name for error messages. Ops such as FIFOQueueV2 and IteratorV2 output a scalar DT_RESOURCE
// tensor holding one; ops that use the object (QueueEnqueueV2, IteratorGetNext) look it up.
//
//   Tensor handle(DT_RESOURCE, TensorShape());
//   handle.scalar<ResourceHandle>() = {.container = "", .name = "fifo_queue", .type_name = "Queue"};
//
// DT_VARIANT tensors hold `std::any` elements (a dataset object flowing between dataset ops,
// a serialized iterator state); see tensor.h.
#ifndef FLOWTRAIN_CORE_RESOURCE_HANDLE_H_
#define FLOWTRAIN_CORE_RESOURCE_HANDLE_H_

#include <string>

namespace flowtrain {

struct ResourceHandle {
  std::string container;  // "" means the resource manager's default container
  std::string name;
  std::string type_name;

  bool operator==(const ResourceHandle&) const = default;
  // "container/name" as TF prints handles in errors.
  std::string DebugString() const { return container + "/" + name; }
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_CORE_RESOURCE_HANDLE_H_
