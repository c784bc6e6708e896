#include "flowtrain/ops/data_flow_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/array_ops.h"

namespace flowtrain {
namespace {

bool IsQueueOp(const Node* node) {
  const std::string& type = node->type();
  return type == "FIFOQueueV2" || type == "RandomShuffleQueueV2" || type == "PaddingFIFOQueueV2";
}

// The element shapes of the queue feeding input 0, when it is a queue op built with shapes.
std::vector<PartialTensorShape> QueueShapes(InferenceContext& c) {
  const Node* queue = c.node().input(0).node;
  if (!IsQueueOp(queue)) return {};
  return queue->GetAttr<std::vector<PartialTensorShape>>("shapes");
}

void DequeueShape(InferenceContext& c) {
  const std::vector<PartialTensorShape> shapes = QueueShapes(c);
  for (int i = 0; i < c.num_outputs(); ++i) {
    c.set_output(i, i < static_cast<int>(shapes.size()) ? shapes[i] : PartialTensorShape::Unknown());
  }
}

void DequeueManyShape(InferenceContext& c, bool up_to) {
  const std::vector<PartialTensorShape> shapes = QueueShapes(c);
  int64_t n = -1;
  if (!up_to) {
    if (const Tensor* t = c.input_tensor(1)) n = t->scalar<int32_t>();
  }
  for (int i = 0; i < c.num_outputs(); ++i) {
    if (i >= static_cast<int>(shapes.size()) || shapes[i].unknown_rank()) {
      c.set_output(i, PartialTensorShape::Unknown());
      continue;
    }
    DimVector dims = shapes[i].dim_sizes();
    dims.insert(dims.begin(), n);
    c.set_output(i, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
  }
}

}  // namespace

#define FT_QUEUE_OP_COMMON                      \
  .Output("handle: resource")                   \
      .Attr("component_types: list(type) >= 1") \
      .Attr("shapes: list(shape) >= 0 = []")    \
      .Attr("capacity: int = -1")               \
      .Attr("container: string = ''")           \
      .Attr("shared_name: string = ''")         \
      .SetIsStateful()                          \
      .SetShapeFn(shape_fns::ScalarShape)

FT_REGISTER_OP("FIFOQueueV2") FT_QUEUE_OP_COMMON;
FT_REGISTER_OP("PaddingFIFOQueueV2") FT_QUEUE_OP_COMMON;
FT_REGISTER_OP("RandomShuffleQueueV2")
FT_QUEUE_OP_COMMON.Attr("min_after_dequeue: int = 0").Attr("seed: int = 0").Attr("seed2: int = 0");
#undef FT_QUEUE_OP_COMMON

FT_REGISTER_OP("QueueEnqueueV2")
    .Input("handle: resource")
    .Input("components: Tcomponents")
    .Attr("Tcomponents: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape);

FT_REGISTER_OP("QueueEnqueueManyV2")
    .Input("handle: resource")
    .Input("components: Tcomponents")
    .Attr("Tcomponents: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape);

FT_REGISTER_OP("QueueDequeueV2")
    .Input("handle: resource")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(DequeueShape);

FT_REGISTER_OP("QueueDequeueManyV2")
    .Input("handle: resource")
    .Input("n: int32")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) { DequeueManyShape(c, false); });

FT_REGISTER_OP("QueueDequeueUpToV2")
    .Input("handle: resource")
    .Input("n: int32")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext& c) { DequeueManyShape(c, true); });

FT_REGISTER_OP("QueueCloseV2")
    .Input("handle: resource")
    .Attr("cancel_pending_enqueues: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape);

FT_REGISTER_OP("QueueSizeV2")
    .Input("handle: resource")
    .Output("size: int32")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("QueueIsClosedV2")
    .Input("handle: resource")
    .Output("is_closed: bool")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

namespace ops {
namespace {

std::string OpName(std::string_view given, const QueueBase& queue, std::string_view suffix) {
  return given.empty() ? StrCat(queue.name(), suffix) : std::string(given);
}

std::vector<Output> Outputs(const Operation& op) {
  std::vector<Output> out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(op.output(i));
  return out;
}

Output BuildQueue(std::string_view op_type, std::string_view default_name,
                  const std::vector<DataType>& dtypes, int64_t capacity, const QueueOptions& options,
                  const std::function<void(NodeBuilder&)>& extra = nullptr) {
  NodeBuilder builder(op_type, options.name.empty() ? default_name : std::string_view(options.name));
  builder.Attr("component_types", dtypes)
      .Attr("shapes", options.shapes)
      .Attr("capacity", capacity)
      .Attr("container", options.container)
      .Attr("shared_name", options.shared_name);
  if (extra) extra(builder);
  return builder.Finalize();
}

}  // namespace

std::pair<int64_t, int64_t> GetSeeds(Graph& graph, std::optional<int64_t> op_seed) {
  constexpr int64_t kDefaultGraphSeed = 87654321;
  const std::optional<int64_t> graph_seed = graph.seed();
  if (graph_seed && op_seed) return {*graph_seed, *op_seed};
  if (graph_seed) return {*graph_seed, graph.NextOpSeed()};
  if (op_seed) return {kDefaultGraphSeed, *op_seed};
  return {0, 0};
}

QueueBase::QueueBase(Output handle, std::vector<DataType> dtypes, std::vector<PartialTensorShape> shapes)
    : handle_(handle), dtypes_(std::move(dtypes)), shapes_(std::move(shapes)) {}

QueueBase QueueBase::FromHandle(Output handle) {
  if (!handle || !IsQueueOp(handle.node())) {
    InvalidArgument("QueueBase::FromHandle needs the output of a queue op, got ",
                    handle ? handle.DebugString() : std::string("an empty Output"));
  }
  return QueueBase(handle, handle.node()->GetAttr<std::vector<DataType>>("component_types"),
                   handle.node()->GetAttr<std::vector<PartialTensorShape>>("shapes"));
}

Operation QueueBase::Enqueue(const std::vector<Output>& values, std::string_view name) const {
  return NodeBuilder("QueueEnqueueV2", OpName(name, *this, "_enqueue"))
      .Input(handle_)
      .Input(values)
      .Finalize();
}

Operation QueueBase::EnqueueMany(const std::vector<Output>& values, std::string_view name) const {
  return NodeBuilder("QueueEnqueueManyV2", OpName(name, *this, "_EnqueueMany"))
      .Input(handle_)
      .Input(values)
      .Finalize();
}

std::vector<Output> QueueBase::Dequeue(std::string_view name) const {
  return Outputs(NodeBuilder("QueueDequeueV2", OpName(name, *this, "_Dequeue"))
                     .Input(handle_)
                     .Attr("component_types", dtypes_)
                     .Finalize());
}

std::vector<Output> QueueBase::DequeueN(std::string_view op, Output n, std::string_view name,
                                        std::string_view default_suffix, bool exact_name) const {
  NodeBuilder builder(op, OpName(name, *this, default_suffix));
  if (exact_name) builder.ExactName();
  return Outputs(builder.Input(handle_).Input(n).Attr("component_types", dtypes_).Finalize());
}

std::vector<Output> QueueBase::DequeueMany(Output n, std::string_view name) const {
  return DequeueN("QueueDequeueManyV2", n, name, "_DequeueMany");
}

std::vector<Output> QueueBase::DequeueMany(int32_t n, std::string_view name) const {
  OpNameScope scope(*handle_.graph(), OpName(name, *this, "_DequeueMany"));
  Output count = Const(n, "n");
  scope.Exit();
  return DequeueN("QueueDequeueManyV2", count, scope.op_name(), "", /*exact_name=*/true);
}

std::vector<Output> QueueBase::DequeueUpTo(Output n, std::string_view name) const {
  return DequeueN("QueueDequeueUpToV2", n, name, "_DequeueUpTo");
}

std::vector<Output> QueueBase::DequeueUpTo(int32_t n, std::string_view name) const {
  OpNameScope scope(*handle_.graph(), OpName(name, *this, "_DequeueUpTo"));
  Output count = Const(n, "n");
  scope.Exit();
  return DequeueN("QueueDequeueUpToV2", count, scope.op_name(), "", /*exact_name=*/true);
}

Operation QueueBase::Close(bool cancel_pending_enqueues, std::string_view name) const {
  return NodeBuilder("QueueCloseV2", OpName(name, *this, "_Close"))
      .Input(handle_)
      .Attr("cancel_pending_enqueues", cancel_pending_enqueues)
      .Finalize();
}

Output QueueBase::Size(std::string_view name) const {
  return NodeBuilder("QueueSizeV2", OpName(name, *this, "_Size")).Input(handle_).Finalize();
}

FIFOQueue::FIFOQueue(int64_t capacity, std::vector<DataType> dtypes, const QueueOptions& options)
    : QueueBase(BuildQueue("FIFOQueueV2", "fifo_queue", dtypes, capacity, options), dtypes, options.shapes) {}

PaddingFIFOQueue::PaddingFIFOQueue(int64_t capacity, std::vector<DataType> dtypes,
                                   const QueueOptions& options)
    : QueueBase(BuildQueue("PaddingFIFOQueueV2", "padding_fifo_queue", dtypes, capacity, options), dtypes,
                options.shapes) {
  if (options.shapes.size() != dtypes.size()) {
    InvalidArgument("Shapes must be provided for all components, but received ", options.shapes.size(),
                    " shapes for ", dtypes.size(), " dtypes.");
  }
}

RandomShuffleQueue::RandomShuffleQueue(int64_t capacity, int64_t min_after_dequeue,
                                       std::vector<DataType> dtypes, const QueueOptions& options)
    : QueueBase(
          BuildQueue("RandomShuffleQueueV2", "random_shuffle_queue", dtypes, capacity, options,
                     [&](NodeBuilder& b) {
                       const auto [seed, seed2] = GetSeeds(GetDefaultGraph(), options.seed);
                       b.Attr("min_after_dequeue", min_after_dequeue).Attr("seed", seed).Attr("seed2", seed2);
                     }),
          dtypes, options.shapes) {}

}  // namespace ops
}  // namespace flowtrain
