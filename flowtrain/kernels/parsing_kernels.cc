// Kernels of ParseExample, ParseSingleExample and DecodeRaw.
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

// ParseExampleV2: the keys are 1-D string inputs, read on each run like ParseExample's; a
// scalar `serialized` is one Example, parsed as ParseSingleExample parses it.
class ParseExampleV2Op : public OpKernel {
 public:
  explicit ParseExampleV2Op(OpKernelConstruction& c) : OpKernel(c) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& serialized = ctx->input(0);
    if (serialized.dims() > 1) {
      Unimplemented("ParseExampleV2 of serialized examples of rank ", serialized.dims(),
                    " (flowtrain parses a scalar or a vector)");
    }
    if (ctx->input(4).NumElements() != 0) Unimplemented("ParseExampleV2 of ragged features");
    auto keys = [&](int input) {
      std::vector<std::string> out;
      for (const std::string& k : ctx->input(input).flat<std::string>()) out.push_back(k);
      return out;
    };
    const std::vector<std::string> sparse_keys = keys(2), dense_keys = keys(3);
    std::vector<Tensor> defaults;
    for (size_t i = 0; i < dense_keys.size(); ++i) defaults.push_back(ctx->input(5 + static_cast<int>(i)));
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
    const bool single = serialized.dims() == 0;
    const Tensor& names = ctx->input(1);
    ParseInto(ctx, *parser, serialized, single || names.NumElements() == 0 ? nullptr : &names, defaults,
              single);
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> sparse_keys_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> dense_keys_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const ExampleParser> parser_ ABSL_GUARDED_BY(mu_);
};
FT_REGISTER_KERNEL("ParseExampleV2", ParseExampleV2Op);

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
