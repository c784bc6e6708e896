// Kernels of ParseExample, ParseExampleV2, ParseSingleExample and DecodeRaw.
#include <algorithm>
#include <bit>
#include <cstring>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/example_parser.h"
#include "flowtrain/framework/dataset.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

using io::DenseFeatureSpec;
using io::ExampleParser;
using io::RaggedFeatureSpec;
using io::SparseFeatureSpec;

// Runs `parser` on the op's inputs and sets its outputs; examples are parsed in parallel on
// the intra-op pool. Without `names`, a bad example that an iterator read from a file in this
// step is named by its file and record index.
void ParseInto(OpKernelContext* ctx, const ExampleParser& parser, const Tensor& serialized,
               const Tensor* names, const std::vector<Tensor>& defaults, bool single) {
  auto name_record = [&serialized](int64_t i) -> std::string {
    const data::RecordOrigins origins = data::DeliveredOrigins::Find(serialized);
    return i < static_cast<int64_t>(origins.size()) ? data::DescribeRecord(origins[i]) : "<unknown>";
  };
  std::vector<Tensor> outputs =
      parser.Parse(serialized, names, single, defaults, ctx->intra_op_pool(), name_record);
  for (size_t i = 0; i < outputs.size(); ++i) ctx->set_output(static_cast<int>(i), std::move(outputs[i]));
}

std::vector<DenseFeatureSpec> DenseFeatures(const OpKernelConstruction& c,
                                            const std::vector<std::string>& keys) {
  const auto types = c.GetAttr<std::vector<DataType>>("Tdense");
  const auto shapes = c.GetAttr<std::vector<PartialTensorShape>>("dense_shapes");
  if (types.size() != keys.size() || shapes.size() != keys.size()) {
    InvalidArgument(c.name(), ": ", keys.size(), " dense keys, ", types.size(), " types and ", shapes.size(),
                    " shapes");
  }
  std::vector<DenseFeatureSpec> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    // [?, d...]: a variable-length feature (FixedLenSequenceFeature), padded to the longest.
    const PartialTensorShape& shape = shapes[i];
    if (!shape.unknown_rank() && shape.dims() >= 1 && shape.dim_size(0) == -1) {
      const DimVector& dims = shape.dim_sizes();
      const PartialTensorShape inner(std::span<const int64_t>(dims.data() + 1, dims.size() - 1));
      if (inner.IsFullyDefined()) {
        out.push_back(
            {.key = keys[i], .dtype = types[i], .shape = inner.AsTensorShape(), .variable_length = true});
        continue;
      }
    }
    if (!shapes[i].IsFullyDefined()) {
      InvalidArgument(c.name(), ": dense feature ", keys[i], " needs a fully defined shape, got ",
                      shapes[i].DebugString());
    }
    out.push_back({.key = keys[i], .dtype = types[i], .shape = shapes[i].AsTensorShape()});
  }
  return out;
}

std::vector<SparseFeatureSpec> SparseFeatures(const OpKernelConstruction& c,
                                              const std::vector<std::string>& keys) {
  const auto types = c.GetAttr<std::vector<DataType>>("sparse_types");
  if (types.size() != keys.size())
    InvalidArgument(c.name(), ": ", keys.size(), " sparse keys but ", types.size(), " types");
  std::vector<SparseFeatureSpec> out;
  for (size_t i = 0; i < keys.size(); ++i) out.push_back({.key = keys[i], .dtype = types[i]});
  return out;
}

// ParseExample takes its keys as (constant) inputs; they are read on each run.
class ParseExampleOp : public OpKernel {
 public:
  explicit ParseExampleOp(OpKernelConstruction& c)
      : OpKernel(c),
        num_sparse_(static_cast<int>(c.GetAttr<int64_t>("Nsparse"))),
        num_dense_(static_cast<int>(c.GetAttr<int64_t>("Ndense"))) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& serialized = ctx->input(0);
    if (serialized.dims() != 1)
      InvalidArgument("Expected serialized to be a vector, got shape: ", serialized.shape().DebugString());
    std::vector<std::string> sparse_keys, dense_keys;
    for (int i = 0; i < num_sparse_; ++i) sparse_keys.push_back(ctx->input(2 + i).scalar<std::string>());
    for (int i = 0; i < num_dense_; ++i)
      dense_keys.push_back(ctx->input(2 + num_sparse_ + i).scalar<std::string>());
    std::vector<Tensor> defaults;
    for (int i = 0; i < num_dense_; ++i) defaults.push_back(ctx->input(2 + num_sparse_ + num_dense_ + i));
    std::shared_ptr<const ExampleParser> parser;
    {
      absl::MutexLock lock(&mu_);
      if (parser_ == nullptr || sparse_keys != sparse_keys_ || dense_keys != dense_keys_) {
        OpKernelConstruction c(node());
        parser_ =
            std::make_shared<ExampleParser>(SparseFeatures(c, sparse_keys), DenseFeatures(c, dense_keys));
        sparse_keys_ = sparse_keys;
        dense_keys_ = dense_keys;
      }
      parser = parser_;
    }
    ParseInto(ctx, *parser, serialized, &ctx->input(1), defaults, /*single=*/false);
  }

 private:
  int num_sparse_, num_dense_;
  absl::Mutex mu_;
  std::vector<std::string> sparse_keys_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> dense_keys_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const ExampleParser> parser_ ABSL_GUARDED_BY(mu_);
};
FT_REGISTER_KERNEL("ParseExample", ParseExampleOp);

// ParseExampleV2 (TF 2.x's tf.io.parse_example): the keys are three string vectors, ragged
// features come after the dense ones, and a scalar `serialized` parses one example (outputs
// without the batch dimension, as ParseSingleExample).
class ParseExampleV2Op : public OpKernel {
 public:
  explicit ParseExampleV2Op(OpKernelConstruction& c)
      : OpKernel(c),
        num_sparse_(c.GetAttr<int64_t>("num_sparse")),
        sparse_types_(c.GetAttr<std::vector<DataType>>("sparse_types")),
        dense_types_(c.GetAttr<std::vector<DataType>>("Tdense")),
        ragged_value_types_(c.GetAttr<std::vector<DataType>>("ragged_value_types")),
        ragged_split_types_(c.GetAttr<std::vector<DataType>>("ragged_split_types")),
        dense_shapes_(c.GetAttr<std::vector<PartialTensorShape>>("dense_shapes")) {
    if (num_sparse_ != static_cast<int64_t>(sparse_types_.size()))
      InvalidArgument(c.name(), ": num_sparse ", num_sparse_, " but ", sparse_types_.size(), " sparse_types");
    if (dense_types_.size() != dense_shapes_.size()) {
      InvalidArgument(c.name(), ": ", dense_types_.size(), " Tdense but ", dense_shapes_.size(),
                      " dense_shapes");
    }
    if (ragged_value_types_.size() != ragged_split_types_.size()) {
      InvalidArgument(c.name(), ": ", ragged_value_types_.size(), " ragged_value_types but ",
                      ragged_split_types_.size(), " ragged_split_types");
    }
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& serialized = ctx->input(0);
    const Tensor& names = ctx->input(1);
    if (serialized.dims() > 1) {
      InvalidArgument("Expected serialized to be a scalar or vector, got shape: ",
                      serialized.shape().DebugString());
    }
    if (names.NumElements() > 0 && names.shape() != serialized.shape()) {
      InvalidArgument("Expected names have the same shape as serialized: name.shape=",
                      names.shape().DebugString(), ", serialized.shape=", serialized.shape().DebugString());
    }
    const std::vector<std::string> sparse_keys = Keys(ctx->input(2), "sparse_keys", sparse_types_.size());
    const std::vector<std::string> dense_keys = Keys(ctx->input(3), "dense_keys", dense_types_.size());
    const std::vector<std::string> ragged_keys =
        Keys(ctx->input(4), "ragged_keys", ragged_value_types_.size());
    std::vector<Tensor> defaults;
    for (size_t d = 0; d < dense_types_.size(); ++d) {
      defaults.push_back(ctx->input(5 + static_cast<int>(d)));
      CheckDefault(defaults.back(), d);
    }
    std::shared_ptr<const ExampleParser> parser;
    {
      absl::MutexLock lock(&mu_);
      if (parser_ == nullptr || sparse_keys != sparse_keys_ || dense_keys != dense_keys_ ||
          ragged_keys != ragged_keys_) {
        OpKernelConstruction c(node());
        std::vector<RaggedFeatureSpec> ragged;
        for (size_t r = 0; r < ragged_keys.size(); ++r) {
          ragged.push_back({.key = ragged_keys[r],
                            .dtype = ragged_value_types_[r],
                            .splits_dtype = ragged_split_types_[r]});
        }
        parser_ = std::make_shared<ExampleParser>(SparseFeatures(c, sparse_keys),
                                                  DenseFeatures(c, dense_keys), std::move(ragged));
        sparse_keys_ = sparse_keys;
        dense_keys_ = dense_keys;
        ragged_keys_ = ragged_keys;
      }
      parser = parser_;
    }
    ParseInto(ctx, *parser, serialized, names.NumElements() > 0 ? &names : nullptr, defaults,
              /*single=*/serialized.dims() == 0);
  }

 private:
  // The strings of a keys input, which must hold one key per type of its kind.
  static std::vector<std::string> Keys(const Tensor& keys, std::string_view what, size_t expected) {
    if (keys.dims() > 1)
      InvalidArgument("Expected ", what, " to be a vector, got shape: ", keys.shape().DebugString());
    if (static_cast<size_t>(keys.NumElements()) != expected) {
      std::string_view types = what == "sparse_keys"  ? "sparse_types"
                               : what == "dense_keys" ? "dense_types"
                                                      : "ragged_value_types";
      InvalidArgument("Expected len(", what, ") == len(", types, ") but got: ", keys.NumElements(), " vs. ",
                      expected);
    }
    const auto flat = keys.flat<std::string>();
    return std::vector<std::string>(flat.begin(), flat.end());
  }

  // TF's checks of a dense default: the padding element of a variable-length feature, or
  // empty (required) or of the feature's shape.
  void CheckDefault(const Tensor& value, size_t d) const {
    const PartialTensorShape& shape = dense_shapes_[d];
    if (value.dtype() != dense_types_[d]) {
      InvalidArgument("dense_defaults[", d, "] has type ", DataTypeString(value.dtype()), ", expected ",
                      DataTypeString(dense_types_[d]));
    }
    if (!shape.unknown_rank() && shape.dims() >= 1 && shape.dim_size(0) == -1) {
      if (value.NumElements() != 1) {
        InvalidArgument("dense_shape[", d, "] is a variable length shape: ", shape.DebugString(),
                        ", therefore def_value[", d,
                        "] must contain a single element (the padding element).  But its shape is: ",
                        value.shape().DebugString());
      }
      return;
    }
    if (value.NumElements() > 0 && !shape.IsCompatibleWith(value.shape())) {
      InvalidArgument("def_value[", d, "].shape() == ", value.shape().DebugString(),
                      " is not compatible with dense_shapes_[", d, "] == ", shape.DebugString());
    }
  }

  const int64_t num_sparse_;
  const std::vector<DataType> sparse_types_, dense_types_, ragged_value_types_, ragged_split_types_;
  const std::vector<PartialTensorShape> dense_shapes_;
  absl::Mutex mu_;
  std::vector<std::string> sparse_keys_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> dense_keys_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> ragged_keys_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const ExampleParser> parser_ ABSL_GUARDED_BY(mu_);
};
FT_REGISTER_KERNEL("ParseExampleV2", ParseExampleV2Op);

class ParseSingleExampleOp : public OpKernel {
 public:
  explicit ParseSingleExampleOp(OpKernelConstruction& c)
      : OpKernel(c),
        parser_(SparseFeatures(c, c.GetAttr<std::vector<std::string>>("sparse_keys")),
                DenseFeatures(c, c.GetAttr<std::vector<std::string>>("dense_keys"))) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& serialized = ctx->input(0);
    if (serialized.dims() != 0)
      InvalidArgument("Expected serialized to be a scalar, got shape: ", serialized.shape().DebugString());
    std::vector<Tensor> defaults;
    for (int i = 1; i < ctx->num_inputs(); ++i) defaults.push_back(ctx->input(i));
    ParseInto(ctx, parser_, serialized, nullptr, defaults, /*single=*/true);
  }

 private:
  ExampleParser parser_;
};
FT_REGISTER_KERNEL("ParseSingleExample", ParseSingleExampleOp);

class DecodeRawOp : public OpKernel {
 public:
  explicit DecodeRawOp(OpKernelConstruction& c)
      : OpKernel(c), little_endian_(c.GetAttr<bool>("little_endian")) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const DataType dtype = ctx->output_type(0);
    const size_t width = DataTypeSize(dtype);
    auto strings = in.flat<std::string>();
    const size_t bytes = strings.empty() ? 0 : strings[0].size();
    for (size_t i = 0; i < strings.size(); ++i) {
      if (strings[i].size() != bytes) {
        InvalidArgument("DecodeRaw requires input strings to all be the same size, but element ", i,
                        " has size ", strings[i].size(), " != ", bytes);
      }
    }
    if (bytes % width != 0) {
      InvalidArgument("Input to DecodeRaw has length ", bytes, " that is not a multiple of ", width,
                      ", the size of ", DataTypeString(dtype));
    }
    TensorShape shape = in.shape();
    shape.AddDim(static_cast<int64_t>(bytes / width));
    Tensor* out = ctx->allocate_output(0, shape);
    char* dst = static_cast<char*>(out->raw_data());
    for (size_t i = 0; i < strings.size(); ++i) std::memcpy(dst + i * bytes, strings[i].data(), bytes);
    const bool host_little = std::endian::native == std::endian::little;
    if (width > 1 && little_endian_ != host_little) {
      for (size_t k = 0; k < strings.size() * bytes; k += width) std::reverse(dst + k, dst + k + width);
    }
  }

 private:
  bool little_endian_;
};
FT_REGISTER_KERNEL("DecodeRaw", DecodeRawOp);

}  // namespace
}  // namespace flowtrain
