#include "flowtrain/ops/parsing_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/io/example_parser.h"
#include "flowtrain/ops/array_ops.h"

namespace flowtrain {
namespace {

// Output layout shared by both parse ops: num_sparse indices, num_sparse values, num_sparse
// shapes, then the dense values.
void ParseShape(InferenceContext& c, bool single, int num_sparse) {
  const auto dense_shapes = c.GetAttr<std::vector<PartialTensorShape>>("dense_shapes");
  const int rank = single ? 1 : 2;
  for (int i = 0; i < num_sparse; ++i) {
    c.set_output(i, PartialTensorShape({-1, rank}));
    c.set_output(num_sparse + i, PartialTensorShape({-1}));
    c.set_output(2 * num_sparse + i, PartialTensorShape({rank}));
  }
  int64_t batch = -1;
  if (!single && !c.input(0).unknown_rank() && c.input(0).dims() == 1) batch = c.input(0).dim_size(0);
  for (size_t d = 0; d < dense_shapes.size(); ++d) {
    PartialTensorShape shape = dense_shapes[d];
    if (!single) {
      DimVector dims = shape.dim_sizes();
      dims.insert(dims.begin(), batch);
      shape = PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
    }
    c.set_output(3 * num_sparse + static_cast<int>(d), shape);
  }
}

}  // namespace

FT_REGISTER_OP("ParseExample")
    .Input("serialized: string")
    .Input("names: string")
    .Input("sparse_keys: Nsparse * string")
    .Input("dense_keys: Ndense * string")
    .Input("dense_defaults: Tdense")
    .Output("sparse_indices: Nsparse * int64")
    .Output("sparse_values: sparse_types")
    .Output("sparse_shapes: Nsparse * int64")
    .Output("dense_values: Tdense")
    .Attr("Nsparse: int >= 0")
    .Attr("Ndense: int >= 0")
    .Attr("sparse_types: list(type) >= 0")
    .Attr("Tdense: list(type) >= 0")
    .Attr("dense_shapes: list(shape) >= 0")
    .SetShapeFn([](InferenceContext& c) {
      c.WithRank(c.input(0), 1);
      ParseShape(c, false, static_cast<int>(c.GetAttr<int64_t>("Nsparse")));
    });

// As TF's: a scalar `serialized` gives outputs without the batch dimension; the batch size
// is not propagated, and the ragged outputs are vectors of unknown size.
FT_REGISTER_OP("ParseExampleV2")
    .Input("serialized: string")
    .Input("names: string")
    .Input("sparse_keys: string")
    .Input("dense_keys: string")
    .Input("ragged_keys: string")
    .Input("dense_defaults: Tdense")
    .Output("sparse_indices: num_sparse * int64")
    .Output("sparse_values: sparse_types")
    .Output("sparse_shapes: num_sparse * int64")
    .Output("dense_values: Tdense")
    .Output("ragged_values: ragged_value_types")
    .Output("ragged_row_splits: ragged_split_types")
    .Attr("Tdense: list(type) >= 0")
    .Attr("num_sparse: int >= 0")
    .Attr("sparse_types: list(type) >= 0")
    .Attr("ragged_value_types: list(type) >= 0")
    .Attr("ragged_split_types: list(type) >= 0")
    .Attr("dense_shapes: list(shape) >= 0")
    .SetShapeFn([](InferenceContext& c) {
      c.WithRankAtMost(c.input(0), 1);
      const PartialTensorShape& in = c.input(0);
      const int num_sparse = static_cast<int>(c.GetAttr<int64_t>("num_sparse"));
      const auto dense_shapes = c.GetAttr<std::vector<PartialTensorShape>>("dense_shapes");
      const int num_ragged = static_cast<int>(c.GetAttr<std::vector<DataType>>("ragged_value_types").size());
      const int64_t rank = in.unknown_rank() ? -1 : in.dims() + 1;
      for (int i = 0; i < num_sparse; ++i) {
        c.set_output(i, PartialTensorShape({-1, rank}));
        c.set_output(num_sparse + i, PartialTensorShape({-1}));
        c.set_output(2 * num_sparse + i, PartialTensorShape({rank}));
      }
      for (size_t d = 0; d < dense_shapes.size(); ++d) {
        PartialTensorShape shape = dense_shapes[d];
        if (in.unknown_rank()) {
          shape = PartialTensorShape::Unknown();
        } else if (in.dims() == 1) {
          DimVector dims = shape.dim_sizes();
          dims.insert(dims.begin(), -1);
          shape = PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
        }
        c.set_output(3 * num_sparse + static_cast<int>(d), shape);
      }
      const int ragged_at = 3 * num_sparse + static_cast<int>(dense_shapes.size());
      for (int r = 0; r < 2 * num_ragged; ++r) c.set_output(ragged_at + r, PartialTensorShape({-1}));
    });

FT_REGISTER_OP("ParseSingleExample")
    .Input("serialized: string")
    .Input("dense_defaults: Tdense")
    .Output("sparse_indices: num_sparse * int64")
    .Output("sparse_values: sparse_types")
    .Output("sparse_shapes: num_sparse * int64")
    .Output("dense_values: Tdense")
    .Attr("num_sparse: int >= 0")
    .Attr("sparse_keys: list(string) >= 0")
    .Attr("dense_keys: list(string) >= 0")
    .Attr("sparse_types: list(type) >= 0")
    .Attr("Tdense: list(type) >= 0")
    .Attr("dense_shapes: list(shape) >= 0")
    .SetShapeFn([](InferenceContext& c) {
      c.WithRank(c.input(0), 0);
      ParseShape(c, true, static_cast<int>(c.GetAttr<int64_t>("num_sparse")));
    });

FT_REGISTER_OP("DecodeRaw")
    .Input("bytes: string")
    .Output("output: out_type")
    .Attr("out_type: {half, float, double, int32, uint16, uint8, int16, int8, int64}")
    .Attr("little_endian: bool = true")
    .SetShapeFn([](InferenceContext& c) {
      const PartialTensorShape& in = c.input(0);
      if (in.unknown_rank()) {
        c.set_output(0, in);
        return;
      }
      DimVector dims = in.dim_sizes();
      dims.push_back(-1);
      c.set_output(0, PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
    });

FT_REGISTER_OP("DecodeCSV")
    .Input("records: string")
    .Input("record_defaults: OUT_TYPE")
    .Output("output: OUT_TYPE")
    .Attr("OUT_TYPE: list(type) >= 1")
    .Attr("field_delim: string = ','")
    .Attr("use_quote_delim: bool = true")
    .Attr("na_value: string = ''")
    .Attr("select_cols: list(int) = []")
    .SetShapeFn([](InferenceContext& c) {
      for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, c.input(0));
    });

namespace ops {
namespace {

bool IsParsableType(DataType t) { return t == DT_FLOAT || t == DT_INT64 || t == DT_STRING; }

// The pieces both parse ops are built from, in key order.
struct ParseSpec {
  std::vector<std::string> sparse_keys, dense_keys;
  std::vector<DataType> sparse_types, dense_types;
  std::vector<PartialTensorShape> dense_shapes;
  std::vector<Output> dense_defaults;
};

ParseSpec MakeSpec(const std::map<std::string, FeatureSpec>& features) {
  ParseSpec spec;
  for (const auto& [key, feature] : features) {
    if (const auto* var = std::get_if<VarLenFeature>(&feature)) {
      if (!IsParsableType(var->dtype))
        InvalidArgument("Feature ", key, ": unsupported type ", DataTypeString(var->dtype));
      spec.sparse_keys.push_back(key);
      spec.sparse_types.push_back(var->dtype);
      continue;
    }
    const auto& fixed = std::get<FixedLenFeature>(feature);
    if (!IsParsableType(fixed.dtype))
      InvalidArgument("Feature ", key, ": unsupported type ", DataTypeString(fixed.dtype));
    spec.dense_keys.push_back(key);
    spec.dense_types.push_back(fixed.dtype);
    spec.dense_shapes.push_back(fixed.shape);
    Tensor default_value;
    if (fixed.default_value) {
      default_value = *fixed.default_value;
      if (default_value.dtype() != fixed.dtype || default_value.NumElements() != fixed.shape.num_elements()) {
        InvalidArgument("Feature ", key, ": default value ", default_value.DebugString(),
                        " does not match type ", DataTypeString(fixed.dtype), " and shape ",
                        fixed.shape.DebugString());
      }
    } else {
      default_value = Tensor(fixed.dtype, TensorShape({0}));  // TF's "no default"
    }
    spec.dense_defaults.push_back(Const(default_value, StrCat("key_", key)));
  }
  return spec;
}

ParsedExample Collect(const Operation& op, const ParseSpec& spec) {
  ParsedExample parsed;
  const int ns = static_cast<int>(spec.sparse_keys.size());
  for (int i = 0; i < ns; ++i) {
    parsed.sparse[spec.sparse_keys[i]] = {op.output(i), op.output(ns + i), op.output(2 * ns + i)};
  }
  for (size_t d = 0; d < spec.dense_keys.size(); ++d) {
    parsed.dense[spec.dense_keys[d]] = op.output(3 * ns + static_cast<int>(d));
  }
  return parsed;
}

}  // namespace

ParsedExample ParseExample(Output serialized, const std::map<std::string, FeatureSpec>& features,
                           std::string_view name) {
  OpNameScope scope(*serialized.graph(), name);
  ParseSpec spec = MakeSpec(features);
  Output names = Const(Tensor(DT_STRING, TensorShape({0})), "names");
  std::vector<Output> sparse_keys, dense_keys;
  for (const auto& k : spec.sparse_keys) sparse_keys.push_back(Const(k, "sparse_keys"));
  for (const auto& k : spec.dense_keys) dense_keys.push_back(Const(k, "dense_keys"));
  scope.Exit();
  Operation op = NodeBuilder("ParseExample", scope.op_name())
                     .ExactName()
                     .Input(serialized)
                     .Input(names)
                     .Input(sparse_keys)
                     .Input(dense_keys)
                     .Input(spec.dense_defaults)
                     .Attr("Nsparse", static_cast<int64_t>(sparse_keys.size()))
                     .Attr("Ndense", static_cast<int64_t>(dense_keys.size()))
                     .Attr("sparse_types", spec.sparse_types)
                     .Attr("Tdense", spec.dense_types)
                     .Attr("dense_shapes", spec.dense_shapes)
                     .Finalize();
  return Collect(op, spec);
}

ParsedExample ParseSingleExample(Output serialized, const std::map<std::string, FeatureSpec>& features,
                                 std::string_view name) {
  OpNameScope scope(*serialized.graph(), name);
  ParseSpec spec = MakeSpec(features);
  scope.Exit();
  Operation op = NodeBuilder("ParseSingleExample", scope.op_name())
                     .ExactName()
                     .Input(serialized)
                     .Input(spec.dense_defaults)
                     .Attr("num_sparse", static_cast<int64_t>(spec.sparse_keys.size()))
                     .Attr("sparse_keys", spec.sparse_keys)
                     .Attr("dense_keys", spec.dense_keys)
                     .Attr("sparse_types", spec.sparse_types)
                     .Attr("Tdense", spec.dense_types)
                     .Attr("dense_shapes", spec.dense_shapes)
                     .Finalize();
  return Collect(op, spec);
}

Output DecodeRaw(Output bytes, DataType out_type, bool little_endian, std::string_view name) {
  return NodeBuilder("DecodeRaw", name)
      .Input(bytes)
      .Attr("out_type", out_type)
      .Attr("little_endian", little_endian)
      .Finalize();
}

data::Dataset MapParseExample(const data::Dataset& serialized,
                              const std::map<std::string, FeatureSpec>& features, int num_parallel_calls) {
  if (serialized.output_types() != std::vector<DataType>{DT_STRING}) {
    InvalidArgument("MapParseExample expects a dataset of serialized Examples (one string component)");
  }
  const PartialTensorShape& input_shape = serialized.output_shapes()[0];
  const bool single = !input_shape.unknown_rank() && input_shape.dims() == 0;
  const int64_t batch =
      !single && !input_shape.unknown_rank() && input_shape.dims() == 1 ? input_shape.dim_size(0) : -1;
  const int rank = single ? 1 : 2;
  std::vector<io::SparseFeatureSpec> sparse;
  std::vector<io::DenseFeatureSpec> dense;
  data::MapOptions options{.num_parallel_calls = num_parallel_calls};
  std::vector<PartialTensorShape> dense_shapes;
  for (const auto& [key, spec] : features) {
    if (const auto* fixed = std::get_if<FixedLenFeature>(&spec)) {
      dense.push_back({.key = key,
                       .dtype = fixed->dtype,
                       .shape = fixed->shape,
                       .default_value = fixed->default_value.value_or(Tensor())});
      DimVector dims = fixed->shape.dim_sizes();
      if (!single) dims.insert(dims.begin(), batch);
      dense_shapes.push_back(PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size())));
    } else {
      sparse.push_back({.key = key, .dtype = std::get<VarLenFeature>(spec).dtype});
    }
  }
  for (size_t s = 0; s < sparse.size(); ++s) {
    options.output_types.push_back(DT_INT64);
    options.output_shapes.push_back(PartialTensorShape({-1, rank}));
  }
  for (const io::SparseFeatureSpec& s : sparse) {
    options.output_types.push_back(s.dtype);
    options.output_shapes.push_back(PartialTensorShape({-1}));
  }
  for (size_t s = 0; s < sparse.size(); ++s) {
    options.output_types.push_back(DT_INT64);
    options.output_shapes.push_back(PartialTensorShape({rank}));
  }
  for (size_t d = 0; d < dense.size(); ++d) {
    options.output_types.push_back(dense[d].dtype);
    options.output_shapes.push_back(dense_shapes[d]);
  }
  auto parser = std::make_shared<const io::ExampleParser>(std::move(sparse), std::move(dense));
  // Given the records' origins, errors name the bad Example's file and record index.
  data::OriginAwareMapFunction parse = [parser](const std::vector<Tensor>& element,
                                                const data::RecordOrigins& origins) {
    const Tensor& records = element.at(0);
    io::ExampleNamer namer;
    if (static_cast<int64_t>(origins.size()) == records.NumElements()) {
      namer = [&origins](int64_t i) { return data::DescribeRecord(origins[i]); };
    }
    return parser->Parse(records, nullptr, /*single=*/records.dims() == 0, {}, nullptr, namer);
  };
  return serialized.Map(std::move(parse), options);
}

std::vector<Output> DecodeCSV(Output records, const std::vector<Output>& record_defaults,
                              const DecodeCSVOptions& options) {
  if (record_defaults.empty()) InvalidArgument("DecodeCSV needs at least one record default");
  if (options.field_delim.size() != 1) InvalidArgument("field_delim should be only 1 char");
  for (size_t i = 1; i < options.select_cols.size(); ++i) {
    if (options.select_cols[i] <= options.select_cols[i - 1])
      InvalidArgument("select_cols is not strictly increasing.");
  }
  if (!options.select_cols.empty() && options.select_cols.size() != record_defaults.size()) {
    InvalidArgument("Length of select_cols and record_defaults do not match.");
  }
  Operation op = NodeBuilder("DecodeCSV", options.name)
                     .Input(records)
                     .Input(record_defaults)
                     .Attr("field_delim", options.field_delim)
                     .Attr("use_quote_delim", options.use_quote_delim)
                     .Attr("na_value", options.na_value)
                     .Attr("select_cols", options.select_cols)
                     .Finalize();
  std::vector<Output> out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(op.output(i));
  return out;
}

}  // namespace ops
}  // namespace flowtrain
