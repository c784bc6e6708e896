// Parses serialized tf.train.Example protos into tensors, as TF's ParseExample and
// ParseSingleExample ops do: FixedLenFeatures into dense tensors [batch, shape...], and
// VarLenFeatures into sparse triples (indices, values, dense shape). Used by those ops'
// kernels, and directly by input pipelines that parse inside a Dataset::Map.
//
//   io::ExampleParser parser({}, {{.key = "image", .dtype = DT_FLOAT, .shape = TensorShape({784})},
//                                 {.key = "label", .dtype = DT_INT64, .shape = TensorShape({})}});
//   std::vector<Tensor> out = parser.Parse(serialized_batch);   // [image [n,784], label [n]]
//
// Speed: the wire format is scanned in place and the values of the requested features are
// copied straight into the output tensors (packed floats with one memcpy), without building
// Example messages; a record the scanner does not handle falls back to the protobuf parser,
// which also words the errors. A thread pool, when given, parses parts of the batch in
// parallel.
#ifndef FLOWTRAIN_IO_EXAMPLE_PARSER_H_
#define FLOWTRAIN_IO_EXAMPLE_PARSER_H_

#include <functional>
#include <string>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/core/thread_pool.h"

namespace flowtrain::io {

// tf.io.FixedLenFeature. An empty default_value makes the feature required.
//
// With `variable_length` (tf.io.FixedLenSequenceFeature with allow_missing, whose op shape is
// [?, shape...]) each example holds any multiple of shape.num_elements() values, or none; the
// output is padded to the longest example with `default_value`, a single element (not set:
// 0 or ""). `shape` then holds the dimensions after the unknown first one.
struct DenseFeatureSpec {
  std::string key;
  DataType dtype = DT_FLOAT;
  TensorShape shape;
  Tensor default_value = {};
  bool variable_length = false;
};

// tf.io.VarLenFeature.
struct SparseFeatureSpec {
  std::string key;
  DataType dtype = DT_FLOAT;
};

// tf.io.RaggedFeature without partitions: each example's values, concatenated, and the row
// splits (int32 or int64) that delimit them.
struct RaggedFeatureSpec {
  std::string key;
  DataType dtype = DT_FLOAT;
  DataType splits_dtype = DT_INT64;
};

// Names the example at `index` of a batch in errors, e.g. "record 17 of /data/train.tfrecord".
using ExampleNamer = std::function<std::string(int64_t index)>;

class ExampleParser {
 public:
  // InvalidArgument for dtypes other than float, int64 and string (splits: int32, int64).
  ExampleParser(std::vector<SparseFeatureSpec> sparse, std::vector<DenseFeatureSpec> dense,
                std::vector<RaggedFeatureSpec> ragged = {});

  // Parses `serialized` (a vector of strings, or a scalar string when `single`) into the
  // outputs in ParseExample's order: every sparse feature's indices, then their values,
  // then their dense shapes, then every dense feature's values, then every ragged feature's
  // values, then their row splits ([batch + 1]; empty when `single`, as TF's ParseExampleV2
  // gives for a scalar input). `names` (optional, one per
  // example) name the examples in errors, or else `namer` does (called only on bad input);
  // `dense_defaults`, when not empty, replace the specs' default values (ParseExample takes
  // them as inputs on each run). Bad input is InvalidArgument naming the example ("Name:
  // <name>, ...") and its index.
  std::vector<Tensor> Parse(const Tensor& serialized, const Tensor* names = nullptr, bool single = false,
                            const std::vector<Tensor>& dense_defaults = {}, ThreadPool* pool = nullptr,
                            const ExampleNamer& namer = nullptr) const;

  const std::vector<SparseFeatureSpec>& sparse() const { return sparse_; }
  const std::vector<DenseFeatureSpec>& dense() const { return dense_; }
  const std::vector<RaggedFeatureSpec>& ragged() const { return ragged_; }

 private:
  std::vector<SparseFeatureSpec> sparse_;
  std::vector<DenseFeatureSpec> dense_;
  std::vector<RaggedFeatureSpec> ragged_;
};

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_EXAMPLE_PARSER_H_
