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
struct DenseFeatureSpec {
  std::string key;
  DataType dtype = DT_FLOAT;
  TensorShape shape;
  Tensor default_value = {};
};

// tf.io.VarLenFeature.
struct SparseFeatureSpec {
  std::string key;
  DataType dtype = DT_FLOAT;
};

// Names the example at `index` of a batch in errors, e.g. "record 17 of /data/train.tfrecord".
using ExampleNamer = std::function<std::string(int64_t index)>;

class ExampleParser {
 public:
  // InvalidArgument for dtypes other than float, int64 and string, or a default value whose
  // size does not match its shape.
  ExampleParser(std::vector<SparseFeatureSpec> sparse, std::vector<DenseFeatureSpec> dense);

  // Parses `serialized` (a vector of strings, or a scalar string when `single`) into the
  // outputs in ParseExample's order: every sparse feature's indices, then their values,
  // then their dense shapes, then every dense feature's values. `names` (optional, one per
  // example) name the examples in errors, or else `namer` does (called only on bad input);
  // `dense_defaults`, when not empty, replace the specs' default values (ParseExample takes
  // them as inputs on each run). Bad input is InvalidArgument naming the example ("Name:
  // <name>, ...") and its index.
  std::vector<Tensor> Parse(const Tensor& serialized, const Tensor* names = nullptr, bool single = false,
                            const std::vector<Tensor>& dense_defaults = {}, ThreadPool* pool = nullptr,
                            const ExampleNamer& namer = nullptr) const;

  const std::vector<SparseFeatureSpec>& sparse() const { return sparse_; }
  const std::vector<DenseFeatureSpec>& dense() const { return dense_; }

 private:
  std::vector<SparseFeatureSpec> sparse_;
  std::vector<DenseFeatureSpec> dense_;
};

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_EXAMPLE_PARSER_H_
