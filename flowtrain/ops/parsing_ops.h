// Parsing of tf.train.Example protos (ParseExample, ParseSingleExample), of raw bytes
// (DecodeRaw) and of CSV records (DecodeCSV), with TF's op names and feature semantics.
//
//   Output serialized = iterator.GetNext()[0];                  // [batch] string
//   ops::ParsedExample parsed = ops::ParseExample(serialized, {
//       {"image", ops::FixedLenFeature{DT_FLOAT, TensorShape({784})}},
//       {"label", ops::FixedLenFeature{DT_INT64, TensorShape({}), Tensor::Scalar<int64_t>(0)}},
//       {"tags", ops::VarLenFeature{DT_STRING}}});
//   Output images = parsed.dense.at("image");                   // [batch, 784]
//   ops::SparseTensor tags = parsed.sparse.at("tags");          // indices, values, dense_shape
//
// A FixedLenFeature missing from an example takes its default, or is an InvalidArgumentError
// when it has none; a feature of the wrong type or length, or bytes that are no Example, is an
// InvalidArgumentError naming the feature and the example's index in the batch, and, when the
// Examples were read from TFRecord files (by the iterator feeding the op, or inside
// MapParseExample), the file and record index ("Name: record 17 of /data/train.tfrecord, ...").
#ifndef FLOWTRAIN_OPS_PARSING_OPS_H_
#define FLOWTRAIN_OPS_PARSING_OPS_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/dataset_ops.h"

namespace flowtrain::ops {

// A feature with a fixed number of values (float, int64 or string), read as a dense tensor.
struct FixedLenFeature {
  DataType dtype = DT_FLOAT;
  TensorShape shape;
  // Used when an example lacks the feature; its shape must be `shape`.
  std::optional<Tensor> default_value;
};

// A feature with any number of values, read as a SparseTensor.
struct VarLenFeature {
  DataType dtype = DT_FLOAT;
};

using FeatureSpec = std::variant<FixedLenFeature, VarLenFeature>;

// TF's SparseTensor: int64 indices [n, rank], values [n] and dense_shape [rank].
struct SparseTensor {
  Output indices;
  Output values;
  Output dense_shape;
};

struct ParsedExample {
  std::map<std::string, Output> dense;
  std::map<std::string, SparseTensor> sparse;
};

// Parses a vector of serialized Examples: dense features become [batch, ...shape], sparse
// ones have indices (example, position).
ParsedExample ParseExample(Output serialized, const std::map<std::string, FeatureSpec>& features,
                           std::string_view name = "ParseExample");
// Parses one serialized Example (a scalar): dense features have their own shape, sparse ones
// rank-1 indices.
ParsedExample ParseSingleExample(Output serialized, const std::map<std::string, FeatureSpec>& features,
                                 std::string_view name = "ParseSingleExample");

// Parsing inside an input pipeline, as `dataset.batch(64).map(lambda s:
// tf.io.parse_example(s, features), num_parallel_calls=2)` in TF: maps each element of
// `serialized` (a batch of serialized Examples, or a single one) to the parsed features, on the
// pipeline's threads instead of in the training step. The components are ParseExample's
// outputs in its order: each VarLenFeature's indices, then their values, then their dense
// shapes, then each FixedLenFeature's values — features in key order.
//
//   auto ds = data::Dataset::TFRecord({path}).Batch(64);
//   auto parsed = ops::MapParseExample(ds, {{"image", FixedLenFeature{DT_FLOAT, TensorShape({784})}},
//                                           {"label", FixedLenFeature{DT_INT64, TensorShape({})}}},
//                                      /*num_parallel_calls=*/2).Prefetch(2);
//   // components: image [?,784] float, label [?] int64
data::Dataset MapParseExample(const data::Dataset& serialized,
                              const std::map<std::string, FeatureSpec>& features, int num_parallel_calls = 1);

// Reinterprets the bytes of every string as a vector of `out_type` (all strings must have the
// same length): output shape is the input's plus one dimension.
Output DecodeRaw(Output bytes, DataType out_type, bool little_endian = true,
                 std::string_view name = "DecodeRaw");

struct DecodeCSVOptions {
  std::string field_delim = ",";     // one character
  bool use_quote_delim = true;       // RFC 4180 quotes; false makes '"' an ordinary character
  std::string na_value;              // a field equal to it takes the default
  std::vector<int64_t> select_cols;  // the columns to decode, increasing; empty: all
  std::string name = "DecodeCSV";
};

// tf.io.decode_csv: one output per default (float, double, int32, int64 or string; a scalar or
// 1-element vector, or a 0-element vector for a required column), each of `records`' shape.
// Bad records are InvalidArgumentError at run time in TF's words, naming the record and field
// (io/csv_record.h).
//
//   auto cols = ops::DecodeCSV(line, {ops::Const(0.0f), ops::Const(0.0f), ops::Const(int64_t{0})});
std::vector<Output> DecodeCSV(Output records, const std::vector<Output>& record_defaults,
                              const DecodeCSVOptions& options = {});

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_PARSING_OPS_H_
