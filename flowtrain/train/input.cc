#include "flowtrain/train/input.h"

#include <functional>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/random_ops.h"
#include "flowtrain/ops/reader_ops.h"
#include "flowtrain/ops/state_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/train/queue_runner.h"

namespace flowtrain::train {
namespace {

std::vector<DataType> DTypes(const std::vector<Output>& tensors) {
  std::vector<DataType> dtypes;
  for (const Output& t : tensors) dtypes.push_back(t.dtype());
  return dtypes;
}

// The element shapes the queue is built with: given ones, else the inputs' static shapes.
std::vector<PartialTensorShape> ElementShapes(const std::vector<Output>& tensors, const BatchOptions& options,
                                              bool need_known) {
  if (!options.shapes.empty()) {
    if (options.shapes.size() != tensors.size()) {
      InvalidArgument("shapes has ", options.shapes.size(), " entries for ", tensors.size(), " tensors");
    }
    return options.shapes;
  }
  std::vector<PartialTensorShape> shapes;
  for (const Output& t : tensors) {
    PartialTensorShape shape = t.shape();
    if (options.enqueue_many && !shape.unknown_rank()) {
      if (shape.dims() < 1) InvalidArgument("enqueue_many needs batched inputs, got ", t.DebugString());
      DimVector dims(shape.dim_sizes().begin() + 1, shape.dim_sizes().end());
      shape = PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
    }
    if (need_known && !shape.IsFullyDefined()) {
      InvalidArgument("All shapes must be fully defined: ", t.DebugString(), " has shape ",
                      shape.DebugString(), "; give BatchOptions::shapes or use dynamic_pad");
    }
    shapes.push_back(shape);
  }
  return shapes;
}

std::vector<Output> Finish(const ops::QueueBase& queue, const std::vector<Output>& tensors,
                           int32_t batch_size, const BatchOptions& options) {
  const Operation enqueue = options.enqueue_many ? queue.EnqueueMany(tensors) : queue.Enqueue(tensors);
  AddQueueRunner(QueueRunner(queue, std::vector<Operation>(std::max(1, options.num_threads), enqueue)));
  return options.allow_smaller_final_batch ? queue.DequeueUpTo(batch_size, "batch")
                                           : queue.DequeueMany(batch_size, "batch");
}

}  // namespace

namespace {

// TF's limit_epochs: `tensor`, after CountUpTo of the local variable "limit_epochs/epochs",
// which fails with OutOfRange on the (num_epochs + 1)-th evaluation.
Output LimitEpochs(Graph& graph, Output tensor, int64_t num_epochs) {
  OpNameScope scope(graph, "limit_epochs");
  Variable epochs(Tensor::Scalar<int64_t>(0),
                  {.name = "epochs", .trainable = false, .collections = {GraphKeys::kLocalVariables}});
  Output counter = ops::CountUpTo(epochs.ref(), num_epochs);
  scope.Exit();
  return NodeBuilder("Identity", scope.op_name())
      .ExactName()
      .Input(tensor)
      .ControlInputs({counter.op()})
      .Finalize();
}

// Builds the producer under the name scope `options.name`; `strings` is called inside it.
ops::FIFOQueue BuildStringInputProducer(Graph& graph, const std::function<Output()>& strings,
                                        const StringInputProducerOptions& options) {
  auto scope = graph.NameScope(options.name);
  Output list = strings();
  if (list.dtype() != DT_STRING) {
    InvalidArgument("StringInputProducer needs strings, got ", list.DebugString());
  }
  // TF's input_producer: a shuffle per epoch, and limit_epochs counting the epochs in a local
  // variable, so that the graph is TF's and runs in TF.
  Output epoch = list;
  if (options.shuffle) epoch = ops::random::Shuffle(epoch, options.seed);
  if (options.num_epochs > 0) epoch = LimitEpochs(graph, epoch, options.num_epochs);
  ops::FIFOQueue queue(options.capacity, {DT_STRING},
                       {.shapes = {PartialTensorShape({})}, .shared_name = options.shared_name});
  AddQueueRunner(QueueRunner(queue, {queue.EnqueueMany({epoch})}));
  return queue;
}

}  // namespace

ops::FIFOQueue StringInputProducer(const std::vector<std::string>& strings,
                                   const StringInputProducerOptions& options) {
  if (strings.empty()) InvalidArgument("StringInputProducer needs at least one string");
  return BuildStringInputProducer(
      GetDefaultGraph(), [&] { return ops::Const(Tensor::FromVector<std::string>(strings), "input"); },
      options);
}

ops::FIFOQueue StringInputProducer(Output strings, const StringInputProducerOptions& options) {
  return BuildStringInputProducer(
      *strings.graph(), [&] { return strings; }, options);
}

std::vector<Output> Batch(const std::vector<Output>& tensors, int32_t batch_size,
                          const BatchOptions& options) {
  if (tensors.empty()) InvalidArgument("Batch needs at least one tensor");
  auto scope = tensors.front().graph()->NameScope(options.name.empty() ? "batch" : options.name);
  const std::vector<PartialTensorShape> shapes = ElementShapes(tensors, options, !options.dynamic_pad);
  ops::QueueOptions queue_options{.shapes = shapes, .shared_name = options.shared_name};
  if (options.dynamic_pad) {
    ops::PaddingFIFOQueue queue(options.capacity, DTypes(tensors), queue_options);
    return Finish(queue, tensors, batch_size, options);
  }
  ops::FIFOQueue queue(options.capacity, DTypes(tensors), queue_options);
  return Finish(queue, tensors, batch_size, options);
}

std::vector<Output> ShuffleBatch(const std::vector<Output>& tensors, int32_t batch_size, int64_t capacity,
                                 int64_t min_after_dequeue, const BatchOptions& options) {
  if (tensors.empty()) InvalidArgument("ShuffleBatch needs at least one tensor");
  if (min_after_dequeue >= capacity) {
    InvalidArgument("ShuffleBatch: min_after_dequeue (", min_after_dequeue, ") must be less than capacity (",
                    capacity, ")");
  }
  auto scope = tensors.front().graph()->NameScope(options.name.empty() ? "shuffle_batch" : options.name);
  ops::QueueOptions queue_options{.shapes = ElementShapes(tensors, options, true),
                                  .shared_name = options.shared_name,
                                  .seed = options.seed};
  ops::RandomShuffleQueue queue(capacity, min_after_dequeue, DTypes(tensors), queue_options);
  return Finish(queue, tensors, batch_size, options);
}

}  // namespace flowtrain::train
