#include "flowtrain/ops/dataset_ops.h"

#include <atomic>
#include <set>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/function_capture.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/graph/graph_to_function_def.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/data_flow_ops.h"
#include "flowtrain/ops/random_ops.h"

namespace flowtrain {
namespace {

void GetNextShape(InferenceContext& c) {
  const auto shapes = c.GetAttr<std::vector<PartialTensorShape>>("output_shapes");
  for (int i = 0; i < c.num_outputs(); ++i) {
    c.set_output(i, i < static_cast<int>(shapes.size()) ? shapes[i] : PartialTensorShape::Unknown());
  }
}

}  // namespace

#define FT_DATASET_OUTPUT                      \
  .Output("handle: variant")                   \
      .Attr("output_types: list(type) >= 1")   \
      .Attr("output_shapes: list(shape) >= 1") \
      .SetShapeFn(shape_fns::ScalarShape)

// Dataset.from_tensors: one element, the components themselves.
// Every dataset op takes TF 2.x's `metadata` (a debug name; TensorSliceDataset's `is_files` and
// `replicate_on_split`, RangeDataset's `replicate_on_split`, for tf.data service sharding): TF 2.x
// writes them; flowtrain accepts and ignores them, and leaves them out of the GraphDefs it writes
// when at their defaults (graph_def.cc), for TF 1.15.
FT_REGISTER_OP("TensorDataset")
    .Attr("metadata: string = \"\"")
    .Input("components: Toutput_types")
    .Output("handle: variant")
    .Attr("Toutput_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("TensorSliceDataset")
    .Attr("metadata: string = \"\"")
    .Attr("is_files: bool = false")
    .Attr("replicate_on_split: bool = false")
    .Input("components: Toutput_types")
    .Output("handle: variant")
    .Attr("Toutput_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("TFRecordDataset")
    .Attr("metadata: string = \"\"")
    .Input("filenames: string")
    .Input("compression_type: string")
    .Input("buffer_size: int64")
    .Output("handle: variant")
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("TextLineDataset")
    .Attr("metadata: string = \"\"")
    .Input("filenames: string")
    .Input("compression_type: string")
    .Input("buffer_size: int64")
    .Output("handle: variant")
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("FixedLengthRecordDatasetV2")
    .Attr("metadata: string = \"\"")
    .Input("filenames: string")
    .Input("header_bytes: int64")
    .Input("record_bytes: int64")
    .Input("footer_bytes: int64")
    .Input("buffer_size: int64")
    .Input("compression_type: string")
    .Output("handle: variant")
    .SetShapeFn(shape_fns::ScalarShape);

// The datasets over a function (issue #20): `f`/`predicate` names a C++ function registered in
// this process (ops/dataset_functions.h) or a function of the graph's library, which is given
// each element's components followed by `other_arguments` (the tensors it captured). Their
// signatures are TF 2.21's.
FT_REGISTER_OP("MapDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Attr("f: func")
    .Attr("Targuments: list(type) >= 0")
    .Attr("use_inter_op_parallelism: bool = true")
    .Attr("preserve_cardinality: bool = false")
    .Attr("force_synchronous: bool = false") FT_DATASET_OUTPUT;

FT_REGISTER_OP("ParallelMapDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Input("num_parallel_calls: int32")
    .Attr("f: func")
    .Attr("Targuments: list(type) >= 0")
    .Attr("use_inter_op_parallelism: bool = true")
    .Attr("sloppy: bool = false")
    .Attr("preserve_cardinality: bool = false") FT_DATASET_OUTPUT;

// Dataset.map(num_parallel_calls=...) in TF 2.x. flowtrain keeps the input order whatever
// `deterministic` says (an order TF may also give).
FT_REGISTER_OP("ParallelMapDatasetV2")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Input("num_parallel_calls: int64")
    .Attr("f: func")
    .Attr("Targuments: list(type) >= 0")
    .Attr("use_inter_op_parallelism: bool = true")
    .Attr("deterministic: string = 'default'")
    .Attr("preserve_cardinality: bool = false")
    .Attr("use_unbounded_threadpool: bool = false") FT_DATASET_OUTPUT;

// tf.data.experimental.map_and_batch: a map and a batch in one op.
FT_REGISTER_OP("MapAndBatchDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Input("batch_size: int64")
    .Input("num_parallel_calls: int64")
    .Input("drop_remainder: bool")
    .Attr("f: func")
    .Attr("Targuments: list(type) >= 0")
    .Attr("preserve_cardinality: bool = false") FT_DATASET_OUTPUT;

FT_REGISTER_OP("FilterDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Attr("predicate: func")
    .Attr("Targuments: list(type) >= 0") FT_DATASET_OUTPUT;

// Dataset.flat_map: `f` (a library function) maps an element to a dataset, whose elements
// come out in turn. Also TF 2.x's TFRecordDataset of several files and from_generator.
FT_REGISTER_OP("FlatMapDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Attr("f: func")
    .Attr("Targuments: list(type) >= 0") FT_DATASET_OUTPUT;

// Dataset.interleave: cycle_length datasets of `f` open at once, block_length elements from
// each in turn.
FT_REGISTER_OP("InterleaveDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Input("cycle_length: int64")
    .Input("block_length: int64")
    .Attr("f: func")
    .Attr("Targuments: list(type) >= 0") FT_DATASET_OUTPUT;

// Dataset.interleave(num_parallel_calls=...). flowtrain yields InterleaveDataset's order (TF's
// deterministic order) whatever `deterministic` says; the buffering inputs are hints.
FT_REGISTER_OP("ParallelInterleaveDatasetV4")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Input("cycle_length: int64")
    .Input("block_length: int64")
    .Input("buffer_output_elements: int64")
    .Input("prefetch_input_elements: int64")
    .Input("num_parallel_calls: int64")
    .Attr("f: func")
    .Attr("deterministic: string = 'default'")
    .Attr("Targuments: list(type) >= 0") FT_DATASET_OUTPUT;

FT_REGISTER_OP("ShuffleDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("buffer_size: int64")
    .Input("seed: int64")
    .Input("seed2: int64")
    .Attr("reshuffle_each_iteration: bool = true") FT_DATASET_OUTPUT;

// TF 2.x's shuffle, which TF writes inside functions (a flat_map's body): the seed generator
// resource is DummySeedGenerator there, and the dataset keeps its own (see the kernel).
FT_REGISTER_OP("ShuffleDatasetV3")
    .Input("input_dataset: variant")
    .Input("buffer_size: int64")
    .Input("seed: int64")
    .Input("seed2: int64")
    .Input("seed_generator: resource")
    .Attr("reshuffle_each_iteration: bool = true")
    .Attr("metadata: string = \"\"")
    .SetIsStateful() FT_DATASET_OUTPUT;

FT_REGISTER_OP("DummySeedGenerator")
    .Output("handle: resource")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("RepeatDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("count: int64") FT_DATASET_OUTPUT;

FT_REGISTER_OP("BatchDatasetV2")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("batch_size: int64")
    .Input("drop_remainder: bool")
    .Attr("parallel_copy: bool = false") FT_DATASET_OUTPUT;

FT_REGISTER_OP("PrefetchDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("buffer_size: int64")
    .Attr("slack_period: int = 0")
    // TF 2.x writes legacy_autotune = false; it and buffer_size_min only tune TF's autotuning
    // of an AUTOTUNE buffer, which flowtrain does not do.
    .Attr("legacy_autotune: bool = true")
    .Attr("buffer_size_min: int = 0") FT_DATASET_OUTPUT;

// What TF 1.x's iterator makers wrap every pipeline in: static rewrites (OptimizeDataset)
// and autotuning (ModelDataset), both leaving the elements as they are.
FT_REGISTER_OP("OptimizeDataset")
    .Input("input_dataset: variant")
    .Input("optimizations: string")
    .Attr("optimization_configs: list(string) = []") FT_DATASET_OUTPUT;

FT_REGISTER_OP("ModelDataset")
    .Input("input_dataset: variant")
    .Attr("algorithm: int = 0")
    .Attr("cpu_budget: int = 0") FT_DATASET_OUTPUT;

FT_REGISTER_OP("TakeDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("count: int64") FT_DATASET_OUTPUT;
FT_REGISTER_OP("SkipDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("count: int64") FT_DATASET_OUTPUT;
// ---- tf.data breadth (issue #20): sources and structural datasets, with TF 1.15's signatures.
FT_REGISTER_OP("RangeDataset")
    .Attr("metadata: string = \"\"")
    .Attr("replicate_on_split: bool = false")
    .Input("start: int64")
    .Input("stop: int64")
    .Input("step: int64") FT_DATASET_OUTPUT;

FT_REGISTER_OP("ZipDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_datasets: N * variant")
    .Attr("N: int >= 1") FT_DATASET_OUTPUT;

FT_REGISTER_OP("ConcatenateDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("another_dataset: variant") FT_DATASET_OUTPUT;

FT_REGISTER_OP("PaddedBatchDatasetV2")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("batch_size: int64")
    .Input("padded_shapes: N * int64")
    .Input("padding_values: Toutput_types")
    .Input("drop_remainder: bool")
    .Output("handle: variant")
    .Attr("parallel_copy: bool = false")
    .Attr("Toutput_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("N: int >= 1")
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("UnbatchDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant") FT_DATASET_OUTPUT;

FT_REGISTER_OP("ShardDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("num_shards: int64")
    .Input("index: int64")
    .Attr("require_non_empty: bool = false") FT_DATASET_OUTPUT;

// filename "" caches in memory; otherwise in a tensor bundle with that prefix.
FT_REGISTER_OP("CacheDataset").Input("input_dataset: variant").Input("filename: string") FT_DATASET_OUTPUT;

// TF 2.x's cache: the memory cache is a resource (DummyMemoryCache in graphs TF writes).
FT_REGISTER_OP("CacheDatasetV2")
    .Input("input_dataset: variant")
    .Input("filename: string")
    .Input("cache: resource")
    .SetIsStateful() FT_DATASET_OUTPUT;

FT_REGISTER_OP("DummyMemoryCache")
    .Output("handle: resource")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("ShuffleAndRepeatDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("buffer_size: int64")
    .Input("seed: int64")
    .Input("seed2: int64")
    .Input("count: int64")
    .Attr("reshuffle_each_iteration: bool = true") FT_DATASET_OUTPUT;

// Dataset.window: each element a tuple of scalar variant datasets, one per input component,
// holding the values of one window.
FT_REGISTER_OP("WindowDataset")
    .Attr("metadata: string = \"\"")
    .Input("input_dataset: variant")
    .Input("size: int64")
    .Input("shift: int64")
    .Input("stride: int64")
    .Input("drop_remainder: bool") FT_DATASET_OUTPUT;

// ---- end of tf.data breadth datasets.
#undef FT_DATASET_OUTPUT

FT_REGISTER_OP("IteratorV2")
    .Output("handle: resource")
    .Attr("shared_name: string")
    .Attr("container: string")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

// Dataset.make_one_shot_iterator: an iterator that, on its first run in a session, makes its
// dataset by calling `dataset_factory` (a function of no arguments returning the dataset).
FT_REGISTER_OP("OneShotIterator")
    .Output("handle: resource")
    .Attr("dataset_factory: func")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("container: string = \"\"")
    .Attr("shared_name: string = \"\"")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("MakeIterator")
    .Input("dataset: variant")
    .Input("iterator: resource")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape);

FT_REGISTER_OP("IteratorGetNext")
    .Input("iterator: resource")
    .Output("components: output_types")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetIsStateful()
    .SetShapeFn(GetNextShape);

// The iterator's handle as a string (a serialized ResourceHandleProto), which TF's feedable
// iterators take.
FT_REGISTER_OP("IteratorToStringHandle")
    .Input("resource_handle: resource")
    .Output("string_handle: string")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

// A feedable iterator: the iterator resource a string handle names. With output_types (and
// output_shapes) given, the iterator must produce them.
FT_REGISTER_OP("IteratorFromStringHandleV2")
    .Input("string_handle: string")
    .Output("resource_handle: resource")
    .Attr("output_types: list(type) >= 0 = []")
    .Attr("output_shapes: list(shape) >= 0 = []")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("SerializeIterator")
    .Input("resource_handle: resource")
    .Output("serialized: string")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("DeserializeIterator")
    .Input("resource_handle: resource")
    .Input("serialized: string")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape);

namespace data {
namespace {

AttrValue FuncAttr(const std::string& function_name) {
  AttrValue value;
  value.mutable_func()->set_name(function_name);
  return value;
}

PartialTensorShape WithoutFirstDim(const PartialTensorShape& shape) {
  if (shape.unknown_rank()) return shape;
  if (shape.dims() < 1) InvalidArgument("Cannot slice a scalar into dataset elements");
  DimVector dims(shape.dim_sizes().begin() + 1, shape.dim_sizes().end());
  return PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
}

PartialTensorShape WithFirstDim(const PartialTensorShape& shape, int64_t dim) {
  if (shape.unknown_rank()) return shape;
  DimVector dims = shape.dim_sizes();
  dims.insert(dims.begin(), dim);
  return PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
}

// A dataset op whose inputs are the input dataset plus scalar int64 arguments, under
// "<Op>/" for its argument constants.
Output UnaryDataset(const Dataset& input, std::string_view op_type,
                    const std::vector<std::pair<std::string, Tensor>>& arguments,
                    const std::vector<DataType>& types, const std::vector<PartialTensorShape>& shapes,
                    const std::function<void(NodeBuilder&)>& attrs = nullptr, bool has_captures = false,
                    const std::vector<Output>& captures = {}) {
  OpNameScope scope(*input.variant().graph(), op_type);
  std::vector<Output> argument_outputs;
  for (const auto& [name, value] : arguments) argument_outputs.push_back(ops::Const(value, name));
  scope.Exit();
  NodeBuilder builder(op_type, scope.op_name());
  builder.ExactName().Input(input.variant());
  // The ops over a function take its captured tensors next (a C++ function captures none).
  if (has_captures) {
    std::vector<DataType> capture_types;
    for (const Output& c : captures) capture_types.push_back(c.dtype());
    builder.Input(captures).Attr("Targuments", capture_types);
  }
  for (const Output& a : argument_outputs) builder.Input(a);
  builder.Attr("output_types", types).Attr("output_shapes", shapes);
  if (attrs) attrs(builder);
  return builder.Finalize();
}

// A function of the outer graph's library that a lambda built: its name, the tensors of the
// graph around the lambda it captured (the dataset node's `other_arguments`, in the order of
// the function's trailing arguments) and its results' types and shapes.
struct BuiltFunction {
  std::string name;
  std::vector<Output> captured;
  std::vector<DataType> result_types;
  std::vector<PartialTensorShape> result_shapes;
};

// "__inference_Dataset_<hint>_<n>", as TF names its tf.data functions, free in `graph`'s
// library (the number is process-wide, so graphs merged later rarely clash).
std::string UniqueFunctionName(const Graph& graph, std::string_view hint) {
  static std::atomic<int64_t> counter{0};
  while (true) {
    std::string name = StrCat("__inference_Dataset_", hint, "_", counter++);
    if (graph.library().Find(name) == nullptr) return name;
  }
}

// Calls `build` once on placeholders "args_<i>" of a new body graph (one per element
// component), capturing the outer tensors it uses, and adds the body as a FunctionDef to
// `outer`'s library (with the functions of the body's own library, from nested builders).
BuiltFunction BuildFunction(Graph& outer, std::string_view hint, const std::vector<DataType>& types,
                            const std::vector<PartialTensorShape>& shapes,
                            const std::function<std::vector<Output>(const std::vector<Output>&)>& build) {
  Graph body;
  if (outer.seed()) body.set_seed(*outer.seed());
  BuiltFunction built;
  std::vector<Output> args, inner_captures, results;
  {
    auto as_default = body.AsDefault();
    for (size_t i = 0; i < types.size(); ++i) {
      args.push_back(ops::Placeholder(types[i], shapes[i], StrCat("args_", i)));
    }
    auto capturing = CaptureExternalInputs(body, [&](const Output& outer_tensor) {
      for (size_t i = 0; i < built.captured.size(); ++i) {
        if (built.captured[i] == outer_tensor) return inner_captures[i];
      }
      // At the root, whatever name scope the op being built is in.
      auto root = body.NameScope("");
      Output placeholder = ops::Placeholder(outer_tensor.dtype(), outer_tensor.shape(), "captured");
      built.captured.push_back(outer_tensor);
      inner_captures.push_back(placeholder);
      return placeholder;
    });
    results = build(args);
    // A result taken as it is from the graph around the lambda passes through the body.
    for (Output& r : results) {
      if (r && r.graph() != &body) r = ops::Identity(r);
    }
  }
  for (const Output& r : results) {
    if (!r || !r.valid()) InvalidArgument("The dataset function (", hint, ") returned an empty Output");
    built.result_types.push_back(r.dtype());
    built.result_shapes.push_back(r.shape());
  }
  built.name = UniqueFunctionName(outer, hint);
  std::vector<Output> arguments = args;
  arguments.insert(arguments.end(), inner_captures.begin(), inner_captures.end());
  const tensorflow::FunctionDef def = GraphToFunctionDef(body, built.name, arguments, results);
  if (!body.library().empty()) outer.library().AddLibrary(body.library().ToProto());
  outer.library().AddFunction(def);
  return built;
}

}  // namespace

Dataset::Dataset(Output variant, std::vector<DataType> types, std::vector<PartialTensorShape> shapes)
    : variant_(variant), types_(std::move(types)), shapes_(std::move(shapes)) {}

Dataset Dataset::FromVariant(Output variant, std::vector<DataType> types,
                             std::vector<PartialTensorShape> shapes) {
  if (types.size() != shapes.size()) {
    InvalidArgument("Dataset::FromVariant: ", types.size(), " types but ", shapes.size(), " shapes");
  }
  return Dataset(variant, std::move(types), std::move(shapes));
}

Dataset Dataset::FromTensorSlices(const std::vector<Output>& components) {
  if (components.empty()) InvalidArgument("FromTensorSlices needs at least one component");
  std::vector<DataType> types;
  std::vector<PartialTensorShape> shapes;
  for (const Output& c : components) {
    types.push_back(c.dtype());
    shapes.push_back(WithoutFirstDim(c.shape()));
  }
  Output variant = NodeBuilder("TensorSliceDataset", "TensorSliceDataset")
                       .Input(components)
                       .Attr("output_shapes", shapes)
                       .Finalize();
  return Dataset(variant, types, shapes);
}

Dataset Dataset::FromTensorSlices(const std::vector<Tensor>& components) {
  std::vector<Output> consts;
  for (const Tensor& t : components) consts.push_back(ops::Const(t, "tensors/component"));
  return FromTensorSlices(consts);
}

Dataset Dataset::TFRecord(const std::vector<std::string>& filenames, const std::string& compression_type,
                          int64_t buffer_size) {
  return TFRecord(ops::Const(Tensor::FromVector<std::string>(filenames), "filenames"), compression_type,
                  buffer_size);
}

namespace {

// The graph a source over an Output builds into: inside a dataset function's lambda the
// function's body, even when the Output is a tensor of the graph around it (then captured).
Graph& SourceGraph(const Output& input) {
  return CaptureFunctionFor(GetDefaultGraph()) ? GetDefaultGraph() : *input.graph();
}

// A source of scalar strings read from files (TFRecordDataset, TextLineDataset): its inputs
// filenames, compression_type and buffer_size.
Output FileRecordsDataset(std::string_view op_type, Output filenames, const std::string& compression_type,
                          int64_t buffer_size) {
  OpNameScope scope(SourceGraph(filenames), op_type);
  Output compression = ops::Const(compression_type, "compression_type");
  Output buffer = ops::Const(buffer_size, "buffer_size");
  scope.Exit();
  return NodeBuilder(op_type, scope.op_name())
      .ExactName()
      .Input(filenames)
      .Input(compression)
      .Input(buffer)
      .Finalize();
}

}  // namespace

Dataset Dataset::TFRecord(Output filenames, const std::string& compression_type, int64_t buffer_size) {
  return Dataset(FileRecordsDataset("TFRecordDataset", filenames, compression_type, buffer_size), {DT_STRING},
                 {PartialTensorShape({})});
}

Dataset Dataset::TextLine(const std::vector<std::string>& filenames, const std::string& compression_type,
                          int64_t buffer_size) {
  Graph& graph = GetDefaultGraph();
  OpNameScope scope(graph, "TextLineDataset");
  Output files = ops::Const(Tensor::FromVector<std::string>(filenames), "filenames");
  Output compression = ops::Const(compression_type, "compression_type");
  Output buffer = ops::Const(buffer_size, "buffer_size");
  scope.Exit();
  Output variant = NodeBuilder("TextLineDataset", scope.op_name())
                       .ExactName()
                       .Input(files)
                       .Input(compression)
                       .Input(buffer)
                       .Finalize();
  return Dataset(variant, {DT_STRING}, {PartialTensorShape({})});
}

Dataset Dataset::FixedLengthRecord(const std::vector<std::string>& filenames, int64_t record_bytes,
                                   const FixedLengthRecordOptions& options) {
  Graph& graph = GetDefaultGraph();
  OpNameScope scope(graph, "FixedLengthRecordDataset");
  Output files = ops::Const(Tensor::FromVector<std::string>(filenames), "filenames");
  Output header = ops::Const(options.header_bytes, "header_bytes");
  Output record = ops::Const(record_bytes, "record_bytes");
  Output footer = ops::Const(options.footer_bytes, "footer_bytes");
  Output buffer = ops::Const(options.buffer_size, "buffer_size");
  Output compression = ops::Const(options.compression_type, "compression_type");
  scope.Exit();
  Output variant = NodeBuilder("FixedLengthRecordDatasetV2", scope.op_name())
                       .ExactName()
                       .Input(files)
                       .Input(header)
                       .Input(record)
                       .Input(footer)
                       .Input(buffer)
                       .Input(compression)
                       .Finalize();
  return Dataset(variant, {DT_STRING}, {PartialTensorShape({})});
}

template <typename RegisterFn>
Dataset Dataset::MapRegistered(const MapOptions& options, RegisterFn register_fn) const {
  std::vector<DataType> types = options.output_types.empty() ? types_ : options.output_types;
  std::vector<PartialTensorShape> shapes = options.output_shapes;
  if (shapes.empty()) shapes.assign(types.size(), PartialTensorShape::Unknown());
  if (shapes.size() != types.size()) {
    InvalidArgument("Map: ", shapes.size(), " output shapes for ", types.size(), " output types");
  }
  const bool parallel = options.num_parallel_calls > 1;
  const std::string op_type = parallel ? "ParallelMapDataset" : "MapDataset";
  const std::string function_name = register_fn(options.name.empty() ? op_type : options.name);
  std::vector<std::pair<std::string, Tensor>> arguments;
  if (parallel)
    arguments.emplace_back("num_parallel_calls", Tensor::Scalar<int32_t>(options.num_parallel_calls));
  Output variant = UnaryDataset(
      *this, op_type, arguments, types, shapes,
      [&](NodeBuilder& b) { b.SetAttr("f", FuncAttr(function_name)); },
      /*has_captures=*/true);
  return Dataset(variant, types, shapes);
}

Dataset Dataset::MapAndBatch(MapFunction fn, int64_t batch_size, const MapOptions& options,
                             bool drop_remainder) const {
  if (batch_size < 1) InvalidArgument("MapAndBatch: batch size must be at least 1, got ", batch_size);
  std::vector<DataType> types = options.output_types.empty() ? types_ : options.output_types;
  std::vector<PartialTensorShape> shapes = options.output_shapes;
  if (shapes.empty()) shapes.assign(types.size(), PartialTensorShape::Unknown());
  if (shapes.size() != types.size()) {
    InvalidArgument("MapAndBatch: ", shapes.size(), " output shapes for ", types.size(), " output types");
  }
  for (auto& s : shapes) s = WithFirstDim(s, drop_remainder ? batch_size : -1);
  const std::string function_name =
      RegisterMapFunction(options.name.empty() ? "MapAndBatchDataset" : options.name, std::move(fn));
  Output variant = UnaryDataset(
      *this, "MapAndBatchDataset",
      {{"batch_size", Tensor::Scalar<int64_t>(batch_size)},
       {"num_parallel_calls", Tensor::Scalar<int64_t>(std::max(1, options.num_parallel_calls))},
       {"drop_remainder", Tensor::Scalar<bool>(drop_remainder)}},
      types, shapes, [&](NodeBuilder& b) { b.SetAttr("f", FuncAttr(function_name)); },
      /*has_captures=*/true);
  return Dataset(variant, types, shapes);
}

Dataset Dataset::Map(MapFunction fn, const MapOptions& options) const {
  return MapRegistered(options,
                       [&](const std::string& hint) { return RegisterMapFunction(hint, std::move(fn)); });
}

Dataset Dataset::Map(OriginAwareMapFunction fn, const MapOptions& options) const {
  return MapRegistered(options,
                       [&](const std::string& hint) { return RegisterMapFunction(hint, std::move(fn)); });
}

Dataset Dataset::Filter(PredicateFunction predicate, std::string_view name) const {
  const std::string function_name = RegisterPredicateFunction(name, std::move(predicate));
  Output variant = UnaryDataset(
      *this, "FilterDataset", {}, types_, shapes_,
      [&](NodeBuilder& b) { b.SetAttr("predicate", FuncAttr(function_name)); },
      /*has_captures=*/true);
  return Dataset(variant, types_, shapes_);
}

Dataset Dataset::Shuffle(int64_t buffer_size, std::optional<int64_t> seed,
                         bool reshuffle_each_iteration) const {
  if (buffer_size < 1) InvalidArgument("Shuffle buffer_size must be at least 1, got ", buffer_size);
  // TF's get_seed, with its truncation and its move of a deliberate (0, 0).
  const ops::SeedPair seeds = ops::GetSeed(*variant_.graph(), seed);
  Output variant = UnaryDataset(
      *this, "ShuffleDataset",
      {{"buffer_size", Tensor::Scalar<int64_t>(buffer_size)},
       {"seed", Tensor::Scalar<int64_t>(seeds.seed)},
       {"seed2", Tensor::Scalar<int64_t>(seeds.seed2)}},
      types_, shapes_, [&](NodeBuilder& b) { b.Attr("reshuffle_each_iteration", reshuffle_each_iteration); });
  return Dataset(variant, types_, shapes_);
}

Dataset Dataset::Repeat(int64_t count) const {
  return Dataset(
      UnaryDataset(*this, "RepeatDataset", {{"count", Tensor::Scalar<int64_t>(count)}}, types_, shapes_),
      types_, shapes_);
}

Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  if (batch_size < 1) InvalidArgument("Batch size must be at least 1, got ", batch_size);
  std::vector<PartialTensorShape> shapes;
  for (const auto& s : shapes_) shapes.push_back(WithFirstDim(s, drop_remainder ? batch_size : -1));
  Output variant = UnaryDataset(*this, "BatchDatasetV2",
                                {{"batch_size", Tensor::Scalar<int64_t>(batch_size)},
                                 {"drop_remainder", Tensor::Scalar<bool>(drop_remainder)}},
                                types_, shapes);
  return Dataset(variant, types_, shapes);
}

Dataset Dataset::Prefetch(int64_t buffer_size) const {
  return Dataset(UnaryDataset(*this, "PrefetchDataset",
                              {{"buffer_size", Tensor::Scalar<int64_t>(buffer_size)}}, types_, shapes_),
                 types_, shapes_);
}

Dataset Dataset::Take(int64_t count) const {
  return Dataset(
      UnaryDataset(*this, "TakeDataset", {{"count", Tensor::Scalar<int64_t>(count)}}, types_, shapes_),
      types_, shapes_);
}

Dataset Dataset::Skip(int64_t count) const {
  return Dataset(
      UnaryDataset(*this, "SkipDataset", {{"count", Tensor::Scalar<int64_t>(count)}}, types_, shapes_),
      types_, shapes_);
}

Iterator Dataset::MakeInitializableIterator(const std::string& shared_name) const {
  Iterator it = Iterator::FromStructure(types_, shapes_, shared_name);
  it.initializer_ = it.MakeInitializer(*this);
  return it;
}

Iterator Iterator::FromStructure(std::vector<DataType> types, std::vector<PartialTensorShape> shapes,
                                 const std::string& shared_name, std::string_view name) {
  if (types.size() != shapes.size()) {
    InvalidArgument("Iterator::FromStructure: ", types.size(), " types but ", shapes.size(), " shapes");
  }
  Iterator it;
  it.handle_ = NodeBuilder("IteratorV2", name)
                   .Attr("shared_name", shared_name)
                   .Attr("container", "")
                   .Attr("output_types", types)
                   .Attr("output_shapes", shapes)
                   .Finalize();
  it.types_ = std::move(types);
  it.shapes_ = std::move(shapes);
  it.handle_.graph()->AddToCollection(kGlobalIterators, it.handle_);
  return it;
}

Iterator Iterator::FromHandle(Output handle) {
  if (!handle || handle.node()->type() != "IteratorV2") {
    InvalidArgument("Iterator::FromHandle: ", handle ? handle.name() : std::string("an empty Output"),
                    " is not the output of an IteratorV2 op");
  }
  Iterator it;
  it.handle_ = handle;
  it.types_ = handle.node()->GetAttr<std::vector<DataType>>("output_types");
  it.shapes_ = handle.node()->GetAttr<std::vector<PartialTensorShape>>("output_shapes");
  return it;
}

Operation Iterator::MakeInitializer(const Dataset& dataset, std::string_view name) const {
  if (dataset.output_types() != types_) {
    InvalidArgument("Expected output types of the dataset to match the iterator's");
  }
  return NodeBuilder("MakeIterator", name).Input(dataset.variant()).Input(handle_).Finalize();
}

std::vector<Output> Iterator::GetNext(std::string_view name) const {
  Operation op = NodeBuilder("IteratorGetNext", name)
                     .Input(handle_)
                     .Attr("output_types", types_)
                     .Attr("output_shapes", shapes_)
                     .Finalize();
  std::vector<Output> out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(op.output(i));
  return out;
}

Output Iterator::Serialize(std::string_view name) const {
  return NodeBuilder("SerializeIterator", name).Input(handle_).Finalize();
}

Operation Iterator::Deserialize(Output state, std::string_view name) const {
  return NodeBuilder("DeserializeIterator", name).Input(handle_).Input(state).Finalize();
}

std::shared_ptr<SaveableObject> MakeSaveableFromIterator(const Iterator& iterator) {
  Output handle = iterator.handle();
  FT_REQUIRE(handle, "MakeSaveableFromIterator: the iterator has no handle");
  auto as_default = handle.graph()->AsDefault();
  auto saveable = std::make_shared<SaveableObject>();
  saveable->op = handle.op();
  saveable->name = handle.name();
  saveable->specs = {{iterator.Serialize(), handle.name() + "-state"}};
  saveable->restore = [iterator](const std::vector<Output>& restored) {
    auto colocate = iterator.handle().graph()->ColocateWith(iterator.handle().op());
    return iterator.Deserialize(restored[0]);
  };
  return saveable;
}

// ---- tf.data breadth (issue #20).

Dataset Dataset::Range(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) InvalidArgument("Dataset::Range: step must be a non-zero integer.");
  OpNameScope scope(GetDefaultGraph(), "RangeDataset");
  Output start_t = ops::Const(start, "start");
  Output stop_t = ops::Const(stop, "stop");
  Output step_t = ops::Const(step, "step");
  scope.Exit();
  const std::vector<DataType> types = {DT_INT64};
  const std::vector<PartialTensorShape> shapes = {PartialTensorShape({})};
  Output variant = NodeBuilder("RangeDataset", scope.op_name())
                       .ExactName()
                       .Input(start_t)
                       .Input(stop_t)
                       .Input(step_t)
                       .Attr("output_types", types)
                       .Attr("output_shapes", shapes)
                       .Finalize();
  return Dataset(variant, types, shapes);
}

Dataset Dataset::Zip(const std::vector<Dataset>& datasets) {
  if (datasets.empty()) InvalidArgument("Dataset::Zip needs at least one dataset");
  std::vector<Output> variants;
  std::vector<DataType> types;
  std::vector<PartialTensorShape> shapes;
  for (const Dataset& d : datasets) {
    variants.push_back(d.variant());
    types.insert(types.end(), d.types_.begin(), d.types_.end());
    shapes.insert(shapes.end(), d.shapes_.begin(), d.shapes_.end());
  }
  Output variant = NodeBuilder("ZipDataset", "ZipDataset")
                       .Input(variants)
                       .Attr("output_types", types)
                       .Attr("output_shapes", shapes)
                       .Finalize();
  return Dataset(variant, types, shapes);
}

Dataset Dataset::Concatenate(const Dataset& other, std::string_view name) const {
  if (other.types_ != types_) {
    std::vector<std::string> mine, theirs;
    for (DataType t : types_) mine.push_back(DataTypeString(t));
    for (DataType t : other.types_) theirs.push_back(DataTypeString(t));
    InvalidArgument("Two datasets to concatenate have different types (", StrJoin(mine, ", "), ") and (",
                    StrJoin(theirs, ", "), ")");
  }
  // The most specific shape both inputs' elements have: a dimension they disagree on is unknown.
  std::vector<PartialTensorShape> shapes;
  for (size_t i = 0; i < shapes_.size(); ++i) {
    const PartialTensorShape& a = shapes_[i];
    const PartialTensorShape& b = other.shapes_[i];
    if (a.unknown_rank() || b.unknown_rank() || a.dims() != b.dims()) {
      shapes.push_back(PartialTensorShape::Unknown());
      continue;
    }
    DimVector dims;
    for (int d = 0; d < a.dims(); ++d) dims.push_back(a.dim_size(d) == b.dim_size(d) ? a.dim_size(d) : -1);
    shapes.emplace_back(std::span<const int64_t>(dims.data(), dims.size()));
  }
  Output variant = NodeBuilder("ConcatenateDataset", name)
                       .Input(variant_)
                       .Input(other.variant_)
                       .Attr("output_types", types_)
                       .Attr("output_shapes", shapes)
                       .Finalize();
  return Dataset(variant, types_, shapes);
}

Dataset Dataset::PaddedBatch(int64_t batch_size, std::vector<PartialTensorShape> padded_shapes,
                             std::vector<Tensor> padding_values, bool drop_remainder) const {
  if (batch_size < 1) InvalidArgument("PaddedBatch: batch size must be at least 1, got ", batch_size);
  if (padded_shapes.empty()) padded_shapes = shapes_;
  if (padded_shapes.size() != types_.size()) {
    InvalidArgument("PaddedBatch: ", padded_shapes.size(), " padded shapes for ", types_.size(),
                    " components");
  }
  if (padding_values.empty()) {
    for (DataType t : types_) {
      Tensor zero(t, TensorShape());
      DispatchDataType(t, "PaddedBatch", [&]<typename T>() { zero.scalar<T>() = T(); });
      padding_values.push_back(zero);
    }
  }
  if (padding_values.size() != types_.size()) {
    InvalidArgument("PaddedBatch: ", padding_values.size(), " padding values for ", types_.size(),
                    " components");
  }
  OpNameScope scope(*variant_.graph(), "PaddedBatchDataset");
  Output batch = ops::Const(batch_size, "batch_size");
  std::vector<Output> shape_inputs, value_inputs;
  std::vector<PartialTensorShape> out_shapes;
  for (size_t i = 0; i < types_.size(); ++i) {
    const PartialTensorShape& p = padded_shapes[i];
    if (p.unknown_rank())
      InvalidArgument("PaddedBatch: component ", i, " needs a padded shape of known rank");
    if (!shapes_[i].unknown_rank() && shapes_[i].dims() != p.dims()) {
      InvalidArgument("PaddedBatch: the padded shape ", p.DebugString(), " of component ", i,
                      " is not compatible with its shape ", shapes_[i].DebugString());
    }
    const Tensor& v = padding_values[i];
    if (v.dtype() != types_[i] || v.dims() != 0) {
      InvalidArgument("PaddedBatch: the padding value of component ", i, " must be a scalar of ",
                      DataTypeString(types_[i]), ", got ", DataTypeString(v.dtype()), " of shape ",
                      v.shape().DebugString());
    }
    std::vector<int64_t> dims(p.dim_sizes().begin(), p.dim_sizes().end());
    shape_inputs.push_back(ops::Const(Tensor::FromVector<int64_t>(dims), "padded_shapes"));
    value_inputs.push_back(ops::Const(v, "padding_values"));
    out_shapes.push_back(WithFirstDim(p, drop_remainder ? batch_size : -1));
  }
  Output drop = ops::Const(drop_remainder, "drop_remainder");
  scope.Exit();
  Output variant = NodeBuilder("PaddedBatchDatasetV2", scope.op_name())
                       .ExactName()
                       .Input(variant_)
                       .Input(batch)
                       .Input(shape_inputs)
                       .Input(value_inputs)
                       .Input(drop)
                       .Attr("output_shapes", out_shapes)
                       .Finalize();
  return Dataset(variant, types_, out_shapes);
}

Dataset Dataset::Unbatch() const {
  std::vector<PartialTensorShape> shapes;
  for (const auto& s : shapes_) {
    if (!s.unknown_rank() && s.dims() == 0)
      InvalidArgument("Cannot unbatch an input with scalar components.");
    shapes.push_back(s.unknown_rank() ? s : WithoutFirstDim(s));
  }
  return Dataset(UnaryDataset(*this, "UnbatchDataset", {}, types_, shapes), types_, shapes);
}

Dataset Dataset::Shard(int64_t num_shards, int64_t index, bool require_non_empty) const {
  Output variant = UnaryDataset(
      *this, "ShardDataset",
      {{"num_shards", Tensor::Scalar<int64_t>(num_shards)}, {"index", Tensor::Scalar<int64_t>(index)}},
      types_, shapes_, [&](NodeBuilder& b) { b.Attr("require_non_empty", require_non_empty); });
  return Dataset(variant, types_, shapes_);
}

Dataset Dataset::Cache(const std::string& filename) const {
  Output variant = UnaryDataset(*this, "CacheDataset", {{"filename", Tensor::Scalar<std::string>(filename)}},
                                types_, shapes_);
  return Dataset(variant, types_, shapes_);
}

Dataset Dataset::ShuffleAndRepeat(int64_t buffer_size, int64_t count, std::optional<int64_t> seed,
                                  bool reshuffle_each_iteration) const {
  if (buffer_size < 1) InvalidArgument("ShuffleAndRepeat buffer_size must be at least 1, got ", buffer_size);
  // TF's get_seed, with its truncation and its move of a deliberate (0, 0).
  const ops::SeedPair seeds = ops::GetSeed(*variant_.graph(), seed);
  Output variant = UnaryDataset(
      *this, "ShuffleAndRepeatDataset",
      {{"buffer_size", Tensor::Scalar<int64_t>(buffer_size)},
       {"seed", Tensor::Scalar<int64_t>(seeds.seed)},
       {"seed2", Tensor::Scalar<int64_t>(seeds.seed2)},
       {"count", Tensor::Scalar<int64_t>(count)}},
      types_, shapes_, [&](NodeBuilder& b) { b.Attr("reshuffle_each_iteration", reshuffle_each_iteration); });
  return Dataset(variant, types_, shapes_);
}

Iterator Iterator::FromStringHandle(Output string_handle, std::vector<DataType> types,
                                    std::vector<PartialTensorShape> shapes, std::string_view name) {
  if (types.size() != shapes.size()) {
    InvalidArgument("Iterator::FromStringHandle: ", types.size(), " types but ", shapes.size(), " shapes");
  }
  if (!string_handle || string_handle.dtype() != DT_STRING) {
    InvalidArgument("Iterator::FromStringHandle: the handle must be a DT_STRING scalar, got ",
                    string_handle ? DataTypeString(string_handle.dtype()) : std::string("an empty Output"));
  }
  Iterator it;
  it.handle_ = NodeBuilder("IteratorFromStringHandleV2", name)
                   .Input(string_handle)
                   .Attr("output_types", types)
                   .Attr("output_shapes", shapes)
                   .Finalize();
  it.types_ = std::move(types);
  it.shapes_ = std::move(shapes);
  return it;
}

Output Iterator::StringHandle(std::string_view name) const {
  return NodeBuilder("IteratorToStringHandle", name).Input(handle_).Finalize();
}

// ---- Functions that build ops.

Dataset Dataset::MapGraph(const GraphMapFunction& fn, const MapOptions& options) const {
  const bool parallel = options.num_parallel_calls > 1;
  const std::string op_type = parallel ? "ParallelMapDataset" : "MapDataset";
  const BuiltFunction f = BuildFunction(*variant_.graph(), "map_lambda", types_, shapes_, fn);
  if (f.result_types.empty()) InvalidArgument("MapGraph: the map function returns no tensors");
  std::vector<std::pair<std::string, Tensor>> arguments;
  if (parallel)
    arguments.emplace_back("num_parallel_calls", Tensor::Scalar<int32_t>(options.num_parallel_calls));
  Output variant = UnaryDataset(
      *this, op_type, arguments, f.result_types, f.result_shapes,
      [&](NodeBuilder& b) { b.SetAttr("f", FuncAttr(f.name)); }, /*has_captures=*/true, f.captured);
  return Dataset(variant, f.result_types, f.result_shapes);
}

Dataset Dataset::FilterGraph(const GraphPredicate& predicate, std::string_view name) const {
  const BuiltFunction f =
      BuildFunction(*variant_.graph(), "filter_lambda", types_, shapes_,
                    [&](const std::vector<Output>& e) { return std::vector<Output>{predicate(e)}; });
  const PartialTensorShape& shape = f.result_shapes[0];
  if (f.result_types[0] != DT_BOOL || (!shape.unknown_rank() && shape.dims() != 0)) {
    InvalidArgument("FilterGraph: the predicate must return a scalar bool, got ",
                    DataTypeString(f.result_types[0]), " of shape ", shape.DebugString());
  }
  OpNameScope scope(*variant_.graph(), name);
  scope.Exit();
  std::vector<DataType> capture_types;
  for (const Output& c : f.captured) capture_types.push_back(c.dtype());
  Output variant = NodeBuilder("FilterDataset", scope.op_name())
                       .ExactName()
                       .Input(variant_)
                       .Input(f.captured)
                       .Attr("Targuments", capture_types)
                       .SetAttr("predicate", FuncAttr(f.name))
                       .Attr("output_types", types_)
                       .Attr("output_shapes", shapes_)
                       .Finalize();
  return Dataset(variant, types_, shapes_);
}

namespace {

// A dataset op over a function returning a dataset (FlatMapDataset, the interleaves): `fn`
// built into the function `f`, the op's elements those of the datasets it returns.
Dataset DatasetOfDatasets(const Dataset& input, std::string_view op_type, std::string_view hint,
                          const Dataset::DatasetFunction& fn,
                          const std::vector<std::pair<std::string, Tensor>>& arguments,
                          const std::function<void(NodeBuilder&)>& attrs = nullptr) {
  std::vector<DataType> types;
  std::vector<PartialTensorShape> shapes;
  const BuiltFunction f = BuildFunction(*input.variant().graph(), hint, input.output_types(),
                                        input.output_shapes(), [&](const std::vector<Output>& e) {
                                          Dataset d = fn(e);
                                          types = d.output_types();
                                          shapes = d.output_shapes();
                                          return std::vector<Output>{d.variant()};
                                        });
  if (f.result_types[0] != DT_VARIANT) {
    InvalidArgument(op_type, ": the function must return a dataset, got a ",
                    DataTypeString(f.result_types[0]));
  }
  Output variant = UnaryDataset(
      input, op_type, arguments, types, shapes,
      [&](NodeBuilder& b) {
        b.SetAttr("f", FuncAttr(f.name));
        if (attrs) attrs(b);
      },
      /*has_captures=*/true, f.captured);
  return Dataset::FromVariant(variant, types, shapes);
}

}  // namespace

Dataset Dataset::FlatMap(const DatasetFunction& fn) const {
  return DatasetOfDatasets(*this, "FlatMapDataset", "flat_map_lambda", fn, {});
}

Dataset Dataset::Interleave(const DatasetFunction& fn, int64_t cycle_length, int64_t block_length) const {
  if (cycle_length < 1 && cycle_length != kAutotune) {
    InvalidArgument("Interleave: cycle_length must be positive or kAutotune, got ", cycle_length);
  }
  if (block_length < 1) InvalidArgument("Interleave: block_length must be positive, got ", block_length);
  return DatasetOfDatasets(*this, "InterleaveDataset", "interleave_lambda", fn,
                           {{"cycle_length", Tensor::Scalar<int64_t>(cycle_length)},
                            {"block_length", Tensor::Scalar<int64_t>(block_length)}});
}

Dataset Dataset::ParallelInterleave(const DatasetFunction& fn, int64_t cycle_length, int64_t block_length,
                                    int64_t num_parallel_calls, bool deterministic) const {
  if (cycle_length < 1 && cycle_length != kAutotune) {
    InvalidArgument("ParallelInterleave: cycle_length must be positive or kAutotune, got ", cycle_length);
  }
  if (block_length < 1)
    InvalidArgument("ParallelInterleave: block_length must be positive, got ", block_length);
  if (num_parallel_calls < 1 && num_parallel_calls != kAutotune) {
    InvalidArgument("ParallelInterleave: num_parallel_calls must be positive or kAutotune, got ",
                    num_parallel_calls);
  }
  // buffer_output_elements and prefetch_input_elements at TF's default, AUTOTUNE.
  return DatasetOfDatasets(
      *this, "ParallelInterleaveDatasetV4", "interleave_lambda", fn,
      {{"cycle_length", Tensor::Scalar<int64_t>(cycle_length)},
       {"block_length", Tensor::Scalar<int64_t>(block_length)},
       {"buffer_output_elements", Tensor::Scalar<int64_t>(kAutotune)},
       {"prefetch_input_elements", Tensor::Scalar<int64_t>(kAutotune)},
       {"num_parallel_calls", Tensor::Scalar<int64_t>(num_parallel_calls)}},
      [&](NodeBuilder& b) { b.Attr("deterministic", std::string(deterministic ? "true" : "false")); });
}

Dataset Dataset::Window(int64_t size, std::optional<int64_t> shift, int64_t stride,
                        bool drop_remainder) const {
  const int64_t step = shift.value_or(size);
  if (size < 1) InvalidArgument("Window: size must be positive, got ", size);
  if (step < 1) InvalidArgument("Window: shift must be positive, got ", step);
  if (stride < 1) InvalidArgument("Window: stride must be positive, got ", stride);
  const std::vector<DataType> types(types_.size(), DT_VARIANT);
  const std::vector<PartialTensorShape> shapes(types_.size(), PartialTensorShape({}));
  Output variant = UnaryDataset(*this, "WindowDataset",
                                {{"size", Tensor::Scalar<int64_t>(size)},
                                 {"shift", Tensor::Scalar<int64_t>(step)},
                                 {"stride", Tensor::Scalar<int64_t>(stride)},
                                 {"drop_remainder", Tensor::Scalar<bool>(drop_remainder)}},
                                types, shapes);
  return Dataset(variant, types, shapes);
}

Iterator Dataset::MakeOneShotIterator(const std::string& shared_name) const {
  Graph& outer = *variant_.graph();
  // The ops the dataset depends on, copied into the factory function's body.
  std::set<std::string> needed;
  std::vector<const Node*> stack = {variant_.node()};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!needed.insert(n->name()).second) continue;
    if (n->type() == "Placeholder" || n->type() == "PlaceholderWithDefault") {
      InvalidArgument("MakeOneShotIterator: the dataset depends on placeholder '", n->name(),
                      "', and a one-shot iterator cannot be fed; use MakeInitializableIterator");
    }
    for (const Endpoint& e : n->inputs()) stack.push_back(e.node);
    for (const Node* c : n->control_inputs()) stack.push_back(c);
  }
  const tensorflow::GraphDef all = outer.ToGraphDef();
  tensorflow::GraphDef part;
  for (const auto& node : all.node()) {
    if (needed.count(node.name()) != 0) *part.add_node() = node;
  }
  *part.mutable_versions() = all.versions();
  *part.mutable_library() = all.library();
  Graph body;
  ImportGraphDef(part, &body);
  const std::string name = UniqueFunctionName(outer, "make_dataset");
  outer.library().AddFunction(GraphToFunctionDef(body, name, {}, {body.GetTensorByName(variant_.name())}));
  Iterator it;
  it.handle_ = NodeBuilder("OneShotIterator", "OneShotIterator")
                   .Graph(&outer)
                   .SetAttr("dataset_factory", FuncAttr(name))
                   .Attr("output_types", types_)
                   .Attr("output_shapes", shapes_)
                   .Attr("container", "")
                   .Attr("shared_name", shared_name)
                   .Finalize();
  it.types_ = types_;
  it.shapes_ = shapes_;
  outer.AddToCollection(kGlobalIterators, it.handle_);
  return it;
}

Dataset Dataset::TextLine(Output filenames, const std::string& compression_type, int64_t buffer_size) {
  return Dataset(FileRecordsDataset("TextLineDataset", filenames, compression_type, buffer_size), {DT_STRING},
                 {PartialTensorShape({})});
}

// ---- end of tf.data breadth.

}  // namespace data
}  // namespace flowtrain
