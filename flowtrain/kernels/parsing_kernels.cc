// Kernels of ParseExample, ParseSingleExample and DecodeRaw.
#include <algorithm>
#include <bit>
#include <cstring>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/kernels/op_kernel.h"
#include "flowtrain/proto/example.pb.h"

namespace flowtrain {
namespace {

struct DenseFeature {
  std::string key;
  DataType dtype;
  TensorShape shape;
};

struct SparseFeature {
  std::string key;
  DataType dtype;
};

std::string_view KindName(tensorflow::Feature::KindCase kind) {
  switch (kind) {
    case tensorflow::Feature::kFloatList: return "float";
    case tensorflow::Feature::kInt64List: return "int64";
    case tensorflow::Feature::kBytesList: return "string";
    default: return "none";
  }
}

tensorflow::Feature::KindCase KindOf(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT: return tensorflow::Feature::kFloatList;
    case DT_INT64: return tensorflow::Feature::kInt64List;
    default: return tensorflow::Feature::kBytesList;
  }
}

int64_t ValueCount(const tensorflow::Feature& f) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kFloatList: return f.float_list().value_size();
    case tensorflow::Feature::kInt64List: return f.int64_list().value_size();
    case tensorflow::Feature::kBytesList: return f.bytes_list().value_size();
    default: return 0;
  }
}

// Copies the values of `f` (whose kind matches `dtype`) to out[offset...].
void CopyValues(const tensorflow::Feature& f, Tensor& out, int64_t offset) {
  switch (out.dtype()) {
    case DT_FLOAT: std::copy(f.float_list().value().begin(), f.float_list().value().end(), out.data<float>() + offset); break;
    case DT_INT64: std::copy(f.int64_list().value().begin(), f.int64_list().value().end(), out.data<int64_t>() + offset); break;
    default: std::copy(f.bytes_list().value().begin(), f.bytes_list().value().end(), out.data<std::string>() + offset); break;
  }
}

// Parses examples into the op's outputs (layout: sparse indices, sparse values, sparse shapes,
// dense values). `single`: one scalar example, no batch dimension.
class ExampleParser {
 public:
  ExampleParser(std::vector<SparseFeature> sparse, std::vector<DenseFeature> dense)
      : sparse_(std::move(sparse)), dense_(std::move(dense)) {}

  void Parse(OpKernelContext* ctx, const Tensor& serialized, const Tensor* names,
             const std::vector<const Tensor*>& defaults, bool single) const {
    const int64_t batch = serialized.NumElements();
    auto records = serialized.flat<std::string>();
    auto name_of = [&](int64_t i) -> std::string {
      if (names != nullptr && names->NumElements() == batch) return names->flat<std::string>()[i];
      return "<unknown>";
    };
    std::vector<tensorflow::Example> examples(batch);
    for (int64_t i = 0; i < batch; ++i) {
      if (!examples[i].ParseFromString(records[i])) {
        InvalidArgument("Name: ", name_of(i), ", Could not parse example input, value: '",
                        records[i].substr(0, 32), "' (example ", i, " of ", batch, ")");
      }
    }
    const int ns = static_cast<int>(sparse_.size());
    for (size_t d = 0; d < dense_.size(); ++d) {
      const DenseFeature& spec = dense_[d];
      const Tensor& default_value = *defaults[d];
      const bool has_default = default_value.NumElements() > 0;
      if (has_default && default_value.NumElements() != spec.shape.num_elements()) {
        InvalidArgument("Default value of feature ", spec.key, " has shape ", default_value.shape().DebugString(),
                        ", expected ", spec.shape.DebugString());
      }
      TensorShape out_shape = spec.shape;
      if (!single) out_shape.InsertDim(0, batch);
      Tensor* out = ctx->allocate_output(3 * ns + static_cast<int>(d), out_shape);
      const int64_t n = spec.shape.num_elements();
      for (int64_t i = 0; i < batch; ++i) {
        const auto& map = examples[i].features().feature();
        auto it = map.find(spec.key);
        if (it == map.end() || it->second.kind_case() == tensorflow::Feature::KIND_NOT_SET) {
          if (!has_default) {
            InvalidArgument("Name: ", name_of(i), ", Feature: ", spec.key, " (data type: ",
                            DataTypeString(spec.dtype), ") is required but could not be found (example ",
                            i, ")");
          }
          Tensor slot = out->Reshaped(TensorShape({std::max<int64_t>(batch, 1) * n})).Slice(i * n, (i + 1) * n);
          slot.CopyDataFrom(default_value);
          continue;
        }
        CheckKind(it->second, spec.key, spec.dtype, name_of(i), i);
        const int64_t count = ValueCount(it->second);
        if (count != n) {
          InvalidArgument("Name: ", name_of(i), ", Key: ", spec.key, ", Index: ", i, ".  Number of ",
                          DataTypeString(spec.dtype), " values != expected.  Values size: ", count,
                          " but output shape: ", spec.shape.DebugString());
        }
        CopyValues(it->second, *out, i * n);
      }
    }
    for (int s = 0; s < ns; ++s) {
      const SparseFeature& spec = sparse_[s];
      int64_t total = 0, max_len = 0;
      std::vector<const tensorflow::Feature*> found(batch, nullptr);
      for (int64_t i = 0; i < batch; ++i) {
        const auto& map = examples[i].features().feature();
        auto it = map.find(spec.key);
        if (it == map.end() || it->second.kind_case() == tensorflow::Feature::KIND_NOT_SET) continue;
        CheckKind(it->second, spec.key, spec.dtype, name_of(i), i);
        found[i] = &it->second;
        const int64_t count = ValueCount(it->second);
        total += count;
        max_len = std::max(max_len, count);
      }
      const int rank = single ? 1 : 2;
      Tensor* indices = ctx->allocate_output(s, TensorShape({total, rank}));
      Tensor* values = ctx->allocate_output(ns + s, TensorShape({total}));
      Tensor* shape = ctx->allocate_output(2 * ns + s, TensorShape({rank}));
      int64_t* idx = indices->data<int64_t>();
      int64_t at = 0;
      for (int64_t i = 0; i < batch; ++i) {
        if (found[i] == nullptr) continue;
        const int64_t count = ValueCount(*found[i]);
        CopyValues(*found[i], *values, at);
        for (int64_t j = 0; j < count; ++j, ++at) {
          if (single) {
            idx[at] = j;
          } else {
            idx[2 * at] = i;
            idx[2 * at + 1] = j;
          }
        }
      }
      if (single) {
        shape->flat<int64_t>()[0] = max_len;
      } else {
        shape->flat<int64_t>()[0] = batch;
        shape->flat<int64_t>()[1] = max_len;
      }
    }
  }

 private:
  static void CheckKind(const tensorflow::Feature& f, const std::string& key, DataType dtype,
                        const std::string& name, int64_t index) {
    if (f.kind_case() != KindOf(dtype)) {
      InvalidArgument("Name: ", name, ", Feature: ", key, ".  Data types don't match. Data type: ",
                      KindName(f.kind_case()), " but expected type: ", DataTypeString(dtype), " (example ",
                      index, ")");
    }
  }

  std::vector<SparseFeature> sparse_;
  std::vector<DenseFeature> dense_;
};

std::vector<DenseFeature> DenseFeatures(const OpKernelConstruction& c, const std::vector<std::string>& keys) {
  const auto types = c.GetAttr<std::vector<DataType>>("Tdense");
  const auto shapes = c.GetAttr<std::vector<PartialTensorShape>>("dense_shapes");
  if (types.size() != keys.size() || shapes.size() != keys.size()) {
    InvalidArgument(c.name(), ": ", keys.size(), " dense keys, ", types.size(), " types and ", shapes.size(), " shapes");
  }
  std::vector<DenseFeature> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!shapes[i].IsFullyDefined()) {
      InvalidArgument(c.name(), ": dense feature ", keys[i], " needs a fully defined shape, got ",
                      shapes[i].DebugString());
    }
    out.push_back({keys[i], types[i], shapes[i].AsTensorShape()});
  }
  return out;
}

std::vector<SparseFeature> SparseFeatures(const OpKernelConstruction& c, const std::vector<std::string>& keys) {
  const auto types = c.GetAttr<std::vector<DataType>>("sparse_types");
  if (types.size() != keys.size()) InvalidArgument(c.name(), ": ", keys.size(), " sparse keys but ", types.size(), " types");
  std::vector<SparseFeature> out;
  for (size_t i = 0; i < keys.size(); ++i) out.push_back({keys[i], types[i]});
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
    if (serialized.dims() != 1) InvalidArgument("Expected serialized to be a vector, got shape: ", serialized.shape().DebugString());
    std::vector<std::string> sparse_keys, dense_keys;
    for (int i = 0; i < num_sparse_; ++i) sparse_keys.push_back(ctx->input(2 + i).scalar<std::string>());
    for (int i = 0; i < num_dense_; ++i) dense_keys.push_back(ctx->input(2 + num_sparse_ + i).scalar<std::string>());
    std::vector<const Tensor*> defaults;
    for (int i = 0; i < num_dense_; ++i) defaults.push_back(&ctx->input(2 + num_sparse_ + num_dense_ + i));
    std::lock_guard<std::mutex> lock(mu_);
    if (parser_ == nullptr || sparse_keys != sparse_keys_ || dense_keys != dense_keys_) {
      OpKernelConstruction c(node());
      parser_ = std::make_unique<ExampleParser>(SparseFeatures(c, sparse_keys), DenseFeatures(c, dense_keys));
      sparse_keys_ = sparse_keys;
      dense_keys_ = dense_keys;
    }
    parser_->Parse(ctx, serialized, &ctx->input(1), defaults, /*single=*/false);
  }

 private:
  int num_sparse_, num_dense_;
  std::mutex mu_;
  std::vector<std::string> sparse_keys_, dense_keys_;
  std::unique_ptr<ExampleParser> parser_;
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
    if (serialized.dims() != 0) InvalidArgument("Expected serialized to be a scalar, got shape: ", serialized.shape().DebugString());
    std::vector<const Tensor*> defaults;
    for (int i = 1; i < ctx->num_inputs(); ++i) defaults.push_back(&ctx->input(i));
    parser_.Parse(ctx, serialized, nullptr, defaults, /*single=*/true);
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
