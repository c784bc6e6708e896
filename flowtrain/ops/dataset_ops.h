// tf.data in C++: input pipelines as graph ops with TF's names (TensorSliceDataset,
// TFRecordDataset, MapDataset, ShuffleDataset, BatchDatasetV2, PrefetchDataset, IteratorV2,
// MakeIterator, IteratorGetNext...). A Dataset is a builder over the Output of its last op.
//
//   auto ds = data::Dataset::FromTensorSlices({images, labels})      // [N,784], [N]
//                 .Shuffle(10000, /*seed=*/1)
//                 .Map([](const std::vector<Tensor>& e) { return Normalize(e); },
//                      {.num_parallel_calls = 2})
//                 .Batch(64)
//                 .Prefetch(data::kAutotune);
//   data::Iterator it = ds.MakeInitializableIterator();
//   std::vector<Output> next = it.GetNext();                          // [?,784], [?]
//   sess.Run({}, {}, {it.initializer()});
//   while (true) sess.Run({}, next);                                  // ends with OutOfRangeError
//
// Map and Filter take C++ functions, kept in a process-wide registry (dataset_functions.h)
// and named in the node's func attr; their nodes' `other_arguments` are empty (C++ functions
// capture what they need). In graphs TF writes, the func attr names a FunctionDef of the
// graph's library instead, which the kernels run (kernels/internal/dataset_function.h), as they
// do FlatMapDataset's, InterleaveDataset's and ParallelInterleaveDatasetV4's. Deviation from TF:
// SerializeIterator outputs a DT_STRING scalar rather than a variant, so that a Saver can store
// it like any tensor. TensorDataset, FlatMapDataset, the interleaves, OptimizeDataset,
// ModelDataset and IteratorToStringHandle are registered with TF's signatures for the graphs TF
// writes. MapGraph, FilterGraph, FlatMap, Interleave and ParallelInterleave take C++ functions
// that build ops instead, which become FunctionDefs of the graph's library as in TF, so that
// TF runs the GraphDef too; Dataset::FromVariant wraps the output of a node no builder makes.
#ifndef FLOWTRAIN_OPS_DATASET_OPS_H_
#define FLOWTRAIN_OPS_DATASET_OPS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/dataset_functions.h"
#include "flowtrain/ops/saveable_object.h"

namespace flowtrain::data {

// tf.data.experimental.AUTOTUNE: as a prefetch buffer size, lets the pipeline choose it.
inline constexpr int64_t kAutotune = -1;

// TF's iterator_ops.GLOBAL_ITERATORS: the graph collection every iterator's handle (an
// Output of its IteratorV2 node) joins when the iterator is made, as in TF 1.x. The default
// saver of MonitoredTrainingSession finds the input pipelines to save through it.
inline constexpr char kGlobalIterators[] = "iterators";

class Iterator;

struct MapOptions {
  // The function's output types; empty means the same as its input's.
  std::vector<DataType> output_types;
  // The function's output shapes; empty means unknown.
  std::vector<PartialTensorShape> output_shapes;
  // > 1 runs the function on that many threads (ParallelMapDataset), keeping element order.
  int num_parallel_calls = 1;
  std::string name;  // default "MapDataset" / "ParallelMapDataset"
};

// Dataset::FixedLengthRecord's optional arguments, as tf.data.FixedLengthRecordDataset's.
struct FixedLengthRecordOptions {
  int64_t header_bytes = 0;
  int64_t footer_bytes = 0;
  int64_t buffer_size = 256 * 1024;
  std::string compression_type{};  // "", "ZLIB" or "GZIP"
};

class Dataset {
 public:
  // Slices every component along its first dimension (all must have the same size).
  static Dataset FromTensorSlices(const std::vector<Output>& components);
  static Dataset FromTensorSlices(const std::vector<Tensor>& components);
  // Records of TFRecord files, as scalar strings, file after file. A corrupt record is
  // DataLossError naming the file and the record's index.
  static Dataset TFRecord(const std::vector<std::string>& filenames, const std::string& compression_type = "",
                          int64_t buffer_size = 256 * 1024);
  static Dataset TFRecord(Output filenames, const std::string& compression_type = "",
                          int64_t buffer_size = 256 * 1024);

  // Lines of text files (tf.data.TextLineDataset), as scalar strings without their '\n'
  // (every '\r' dropped, as TF does), file after file, in the default graph.
  //   auto lines = Dataset::TextLine({"train.csv"}).Skip(1);  // without the header line
  static Dataset TextLine(const std::vector<std::string>& filenames, const std::string& compression_type = "",
                          int64_t buffer_size = 256 * 1024);
  // Records of `record_bytes` bytes (tf.data.FixedLengthRecordDataset) between a header and a
  // footer of fixed sizes, in the default graph. A file whose body is not whole records is
  // InvalidArgument (DataLoss, at its end, when compressed), as in TF.
  //   auto images = Dataset::FixedLengthRecord({"data_batch_1.bin"}, 1 + 32 * 32 * 3);
  static Dataset FixedLengthRecord(const std::vector<std::string>& filenames, int64_t record_bytes,
                                   const FixedLengthRecordOptions& options = {});

  Dataset Map(MapFunction fn, const MapOptions& options = {}) const;
  // A function that is also given where the element was read from, to name the bad record of
  // a batch in its errors (ops::MapParseExample).
  Dataset Map(OriginAwareMapFunction fn, const MapOptions& options = {}) const;
  Dataset Filter(PredicateFunction predicate, std::string_view name = "FilterDataset") const;
  // tf.data.experimental.map_and_batch: Map(fn, options) then Batch(batch_size,
  // drop_remainder) as one op (MapAndBatchDataset), the function on num_parallel_calls threads.
  Dataset MapAndBatch(MapFunction fn, int64_t batch_size, const MapOptions& options = {},
                      bool drop_remainder = false) const;
  // Fills a buffer of `buffer_size` elements and draws from it at random. With a seed the order
  // is reproducible; reshuffle_each_iteration gives every new iterator (epoch) a new order.
  Dataset Shuffle(int64_t buffer_size, std::optional<int64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;
  // `count` passes over the input; -1 repeats forever.
  Dataset Repeat(int64_t count = -1) const;
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;
  // Produces up to `buffer_size` elements ahead on a background thread, refilling the buffer
  // in bursts once half of it has been taken. kAutotune (or 0) chooses the size: up to 16
  // elements, at most 64 MB of them (TF grows its autotuned buffer only when the consumer finds
  // it empty, which keeps it at 1-2 and wakes the producer for every element).
  Dataset Prefetch(int64_t buffer_size) const;
  Dataset Take(int64_t count) const;
  Dataset Skip(int64_t count) const;

  Iterator MakeInitializableIterator(const std::string& shared_name = "") const;

  // The dataset's DT_VARIANT output.
  Output variant() const { return variant_; }
  const std::vector<DataType>& output_types() const { return types_; }
  const std::vector<PartialTensorShape>& output_shapes() const { return shapes_; }

  // ---- tf.data breadth (issue #20).
  // start, start + step, ... while before stop (int64 scalars); step 0 is InvalidArgument.
  static Dataset Range(int64_t start, int64_t stop, int64_t step = 1);
  // The elements of `datasets` side by side (their components concatenated), as long as the
  // shortest.
  static Dataset Zip(const std::vector<Dataset>& datasets);
  // This dataset's elements, then `other`'s; InvalidArgument if their component types differ.
  Dataset Concatenate(const Dataset& other, std::string_view name = "ConcatenateDataset") const;
  // Batches with every component padded to `padded_shapes` (default: the components' shapes,
  // which must have known ranks), -1 dimensions to the largest in the batch, with
  // `padding_values` (default: 0 or ""; one scalar per component).
  Dataset PaddedBatch(int64_t batch_size, std::vector<PartialTensorShape> padded_shapes = {},
                      std::vector<Tensor> padding_values = {}, bool drop_remainder = false) const;
  // Splits each element along its first dimension.
  Dataset Unbatch() const;
  // Elements index, index + num_shards, ... of this dataset.
  Dataset Shard(int64_t num_shards, int64_t index, bool require_non_empty = false) const;
  // The elements of this dataset, kept on the first complete pass and read from the cache
  // on every later one: in memory when `filename` is "", otherwise in a tensor bundle with
  // that prefix (the layout TF's cache files have, so either system reads the other's). A
  // pass that stops early keeps nothing; a second writer of the same prefix fails with
  // AlreadyExists while the first one runs ("<filename>_0.lockfile").
  Dataset Cache(const std::string& filename = "") const;
  // tf.data.experimental.shuffle_and_repeat: Shuffle and Repeat(count) in one, as TF 2.21
  // runs it: each epoch drains before the next fills the buffer, each epoch seeded anew
  // (TF 1.15 blended epochs at their boundaries).
  Dataset ShuffleAndRepeat(int64_t buffer_size, int64_t count = -1,
                           std::optional<int64_t> seed = std::nullopt,
                           bool reshuffle_each_iteration = true) const;
  // ---- Functions that build ops (the TF way). The lambda is called once, here, on
  // placeholders standing for an element's components (named "args_0", "args_1"... as TF
  // names them); the ops it builds go into a FunctionDef (graph/graph_to_function_def.h) added
  // to this dataset's graph's library, which the dataset node names in its func attr, so the
  // pipeline is a plain GraphDef that TF runs too. Captures are implicit, as in TF: a tensor
  // of the graph around the lambda that it uses becomes a placeholder of the function and an
  // `other_arguments` input of the node (graph/function_capture.h). Errors of the lambda
  // propagate from the builder; GraphToFunctionDef's (a Placeholder of its own inside the
  // lambda) are InvalidArgument. Not thread-safe against other building in the same graph.
  //
  //   Output scale = ops::Const(10.f);
  //   auto ds = lines.MapGraph([&](const std::vector<Output>& e) {
  //     std::vector<Output> cols = ops::DecodeCSV(e[0], {ops::Const(0.f)});
  //     return std::vector<Output>{ops::Mul(cols[0], scale)};        // `scale` is captured
  //   });
  //   auto lines = files.FlatMap([](const std::vector<Output>& f) { return Dataset::TextLine(f[0]); });
  using GraphMapFunction = std::function<std::vector<Output>(const std::vector<Output>&)>;
  using GraphPredicate = std::function<Output(const std::vector<Output>&)>;
  using DatasetFunction = std::function<Dataset(const std::vector<Output>&)>;

  // Map with a function that builds ops (MapDataset, ParallelMapDataset when
  // options.num_parallel_calls > 1). The element's types and shapes are those of the outputs
  // the lambda returns; options.output_types, output_shapes and name are not used (the node is
  // "MapDataset"/"ParallelMapDataset", its function "__inference_Dataset_map_lambda_<n>").
  Dataset MapGraph(const GraphMapFunction& fn, const MapOptions& options = {}) const;
  // Filter (FilterDataset) with a predicate that builds ops: a DT_BOOL scalar output
  // (InvalidArgument otherwise).
  Dataset FilterGraph(const GraphPredicate& predicate, std::string_view name = "FilterDataset") const;
  // Dataset.flat_map (FlatMapDataset): the elements of the dataset `fn` builds from each element,
  // dataset after dataset. Every dataset `fn` gives must have the types of the one built here.
  Dataset FlatMap(const DatasetFunction& fn) const;
  // Dataset.interleave (InterleaveDataset): `cycle_length` datasets of `fn` open at once,
  // `block_length` elements from each in turn.
  Dataset Interleave(const DatasetFunction& fn, int64_t cycle_length, int64_t block_length = 1) const;
  // Dataset.interleave(num_parallel_calls=...) (ParallelInterleaveDatasetV4). flowtrain yields
  // Interleave's order whatever `deterministic` says (the kernel's deviation).
  Dataset ParallelInterleave(const DatasetFunction& fn, int64_t cycle_length, int64_t block_length,
                             int64_t num_parallel_calls, bool deterministic = true) const;
  // Dataset.window (WindowDataset): windows of `size` elements, one every `shift` (default:
  // size) elements, of every `stride`-th element; shorter windows at the end unless
  // drop_remainder. Each element is one scalar DT_VARIANT dataset per component, holding that
  // component's values in the window: use them in FlatMap through FromVariant.
  //
  //   auto batches = ds.Window(3).FlatMap([&](const std::vector<Output>& w) {
  //     return Dataset::FromVariant(w[0], {DT_INT64}, {PartialTensorShape({})}).Batch(3);
  //   });
  // InvalidArgument when a size, shift or stride is not positive.
  Dataset Window(int64_t size, std::optional<int64_t> shift = std::nullopt, int64_t stride = 1,
                 bool drop_remainder = false) const;
  // Dataset.make_one_shot_iterator (OneShotIterator): an iterator that needs no initializer.
  // The ops this dataset depends on are copied into a function of no arguments, the iterator's
  // dataset_factory, which the iterator runs once, on its first use in a session.
  // InvalidArgument if the dataset depends on a Placeholder (a one-shot iterator cannot be
  // fed), as TF.
  Iterator MakeOneShotIterator(const std::string& shared_name = "") const;
  // TextLine over a DT_STRING Output of file names (a scalar or vector), e.g. an element in a
  // FlatMap or Interleave lambda.
  static Dataset TextLine(Output filenames, const std::string& compression_type = "",
                          int64_t buffer_size = 256 * 1024);
  // ---- end of tf.data breadth.

  // The dataset of a node these builders do not make (a MapDataset over a function of the
  // graph's library, a dataset op of an imported graph): `variant` is its handle output,
  // `types` and `shapes` its elements'. InvalidArgument if their sizes differ.
  static Dataset FromVariant(Output variant, std::vector<DataType> types,
                             std::vector<PartialTensorShape> shapes);

 private:
  Dataset(Output variant, std::vector<DataType> types, std::vector<PartialTensorShape> shapes);
  // Map over the function registered under `hint` by `register_fn(hint)`.
  template <typename RegisterFn>
  Dataset MapRegistered(const MapOptions& options, RegisterFn register_fn) const;
  Output variant_;
  std::vector<DataType> types_;
  std::vector<PartialTensorShape> shapes_;
};

// An iterator over a dataset, living in the session (IteratorV2). Run initializer() (a
// MakeIterator op) to start, or restart, it from the beginning of its dataset.
class Iterator {
 public:
  // tf.data.Iterator.from_structure: an iterator that MakeInitializer() binds to datasets of
  // these types and shapes.
  static Iterator FromStructure(std::vector<DataType> types, std::vector<PartialTensorShape> shapes,
                                const std::string& shared_name = "", std::string_view name = "Iterator");
  // The iterator behind an existing handle (an IteratorV2 output, e.g. from the
  // kGlobalIterators collection of an imported graph), with its types and shapes from the
  // node; it has no initializer(). InvalidArgument if `handle` is not an IteratorV2 output.
  static Iterator FromHandle(Output handle);
  // tf.data.Iterator.from_string_handle: a feedable iterator, whichever iterator the string
  // fed to `string_handle` names (the StringHandle() of another iterator, run once), as TF1
  // code switches between training and evaluation data. InvalidArgument at run time if that
  // iterator's types or shapes differ from these. It has no initializer().
  //
  //   Output handle = ops::Placeholder(DT_STRING, PartialTensorShape({}));
  //   Iterator feedable = Iterator::FromStringHandle(handle, train.output_types(), train.output_shapes());
  //   auto next = feedable.GetNext();
  //   Tensor train_handle = sess.Run({}, {train_it.StringHandle()})[0];
  //   sess.Run({{handle, train_handle}}, next);
  static Iterator FromStringHandle(Output string_handle, std::vector<DataType> types,
                                   std::vector<PartialTensorShape> shapes,
                                   std::string_view name = "IteratorFromStringHandleV2");
  // The iterator's handle as a DT_STRING scalar, for FromStringHandle.
  Output StringHandle(std::string_view name = "IteratorToStringHandle") const;

  Output handle() const { return handle_; }
  Operation initializer() const { return initializer_; }
  // A MakeIterator op binding this iterator to `dataset` (types must match).
  Operation MakeInitializer(const Dataset& dataset, std::string_view name = "MakeIterator") const;
  // The next element; OutOfRangeError "End of sequence" after the last one.
  std::vector<Output> GetNext(std::string_view name = "IteratorGetNext") const;
  // The iterator's position (including shuffle buffers and random state) as a DT_STRING scalar.
  Output Serialize(std::string_view name = "SerializeIterator") const;
  // Restores a position written by Serialize, for the same pipeline (at the next
  // initialization if the iterator has none yet; see MakeSaveableFromIterator).
  Operation Deserialize(Output state, std::string_view name = "DeserializeIterator") const;

 private:
  friend class Dataset;
  Output handle_;
  Operation initializer_;
  std::vector<DataType> types_;
  std::vector<PartialTensorShape> shapes_;
};

// tf.data.experimental.make_saveable_from_iterator: the iterator's position (shuffle buffers
// and random state included) as a SaveableObject, saved under TF 1.x's checkpoint key
// "<handle tensor name>-state" ("Iterator:0-state"). Add it to the SAVEABLE_OBJECTS
// collection and every default Saver — Scaffold's, so CheckpointSaverHook's and the monitored
// session's restore — saves and restores it, so a restarted run continues with the next
// unseen element:
//
//   data::Iterator it = dataset.MakeInitializableIterator();
//   graph.AddToCollection(GraphKeys::kSaveableObjects, data::MakeSaveableFromIterator(it));
//   scaffold->local_init_op = ops::Group({Scaffold::DefaultLocalInitOp(graph), it.initializer()});
//
// Unlike TF's, our iterator state does not carry the dataset's graph, so a restore needs the
// iterator's dataset: restoring an iterator that has one (it was initialized) replaces its
// position at once; restoring one that has none yet (a fresh session, where the monitored
// session restores before running local_init_op) keeps the position until the next
// initializer run, which then continues from it instead of starting over — whichever order
// the session runs restore and initializer in.
std::shared_ptr<SaveableObject> MakeSaveableFromIterator(const Iterator& iterator);

}  // namespace flowtrain::data

#endif  // FLOWTRAIN_OPS_DATASET_OPS_H_
