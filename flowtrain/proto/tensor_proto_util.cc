#include "flowtrain/proto/tensor_proto_util.h"

#include <cstring>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {

tensorflow::TensorShapeProto ShapeToProto(const PartialTensorShape& shape) {
  tensorflow::TensorShapeProto proto;
  if (shape.unknown_rank()) {
    proto.set_unknown_rank(true);
    return proto;
  }
  for (int64_t d : shape.dim_sizes()) proto.add_dim()->set_size(d);
  return proto;
}

PartialTensorShape PartialShapeFromProto(const tensorflow::TensorShapeProto& proto) {
  if (proto.unknown_rank()) return PartialTensorShape::Unknown();
  DimVector dims;
  for (const auto& dim : proto.dim()) dims.push_back(dim.size() < 0 ? -1 : dim.size());
  return PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
}

TensorShape ShapeFromProto(const tensorflow::TensorShapeProto& proto) {
  if (proto.unknown_rank()) InvalidArgument("Expected a fully defined shape, got unknown rank");
  DimVector dims;
  for (const auto& dim : proto.dim()) {
    if (dim.size() < 0) InvalidArgument("Expected a fully defined shape, got dimension ", dim.size());
    dims.push_back(dim.size());
  }
  return TensorShape(std::move(dims));
}

namespace {

// A GraphDef or event protobuf holds at most 2 GiB, so a tensor expanded from a few repeated
// values past this size was never written out by anyone: a 52-byte Const must not make the
// reader allocate gigabytes it was not asked for.
constexpr int64_t kMaxFillBytes = int64_t{1} << 31;

// Builds a `shape` tensor from a repeated field, broadcasting a single value (or the last one)
// as TF does. The size is checked before allocating: the shape comes from the same untrusted
// bytes as the values.
template <typename Out, typename Field>
Tensor FromRepeated(const Field& field, DataType dtype, const TensorShape& shape) {
  const int64_t n = shape.num_elements();
  if (field.size() > n) {
    InvalidArgument("TensorProto of type ", DataTypeString(dtype), " has ", field.size(), " values for ", n,
                    " elements");
  }
  int64_t bytes;
  if (field.size() < n &&
      (!MultiplySizes(n, static_cast<int64_t>(sizeof(Out)), &bytes) || bytes > kMaxFillBytes)) {
    InvalidArgument("TensorProto of type ", DataTypeString(dtype), " and shape ", shape.DebugString(),
                    " has ", field.size(), " values for ", n,
                    " elements; flowtrain expands repeated values to at most ", kMaxFillBytes,
                    " bytes (the most a protobuf can hold)");
  }
  Tensor tensor(dtype, shape);
  const std::span<Out> out = tensor.flat<Out>();
  if (field.size() == 0) {
    for (Out& v : out) v = Out();
    return tensor;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& v = field.Get(std::min<int>(static_cast<int>(i), field.size() - 1));
    if constexpr (std::is_same_v<Out, half> || std::is_same_v<Out, bfloat16>) {
      out[i] = Eigen::numext::bit_cast<Out>(static_cast<uint16_t>(v));
    } else {
      out[i] = static_cast<Out>(v);
    }
  }
  return tensor;
}

}  // namespace

tensorflow::TensorProto TensorToProto(const Tensor& tensor, bool use_typed_fields) {
  tensorflow::TensorProto proto;
  proto.set_dtype(static_cast<tensorflow::DataType>(tensor.dtype()));
  *proto.mutable_tensor_shape() = ShapeToProto(tensor.shape());
  if (tensor.NumElements() == 0) return proto;
  if (tensor.dtype() == DT_STRING) {
    for (const std::string& s : tensor.flat<std::string>()) proto.add_string_val(s);
    return proto;
  }
  if (!use_typed_fields) {
    proto.set_tensor_content(tensor.raw_data(), tensor.NumElements() * DataTypeSize(tensor.dtype()));
    return proto;
  }
  DispatchDataType(tensor.dtype(), "TensorToProto", [&]<typename T>() {
    for (const T& v : tensor.flat<T>()) {
      if constexpr (std::is_same_v<T, float>) {
        proto.add_float_val(v);
      } else if constexpr (std::is_same_v<T, double>) {
        proto.add_double_val(v);
      } else if constexpr (std::is_same_v<T, int64_t>) {
        proto.add_int64_val(v);
      } else if constexpr (std::is_same_v<T, bool>) {
        proto.add_bool_val(v);
      } else if constexpr (std::is_same_v<T, uint32_t>) {
        proto.add_uint32_val(v);
      } else if constexpr (std::is_same_v<T, uint64_t>) {
        proto.add_uint64_val(v);
      } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
        proto.add_half_val(Eigen::numext::bit_cast<uint16_t>(v));
      } else if constexpr (std::is_same_v<T, std::string>) {
        proto.add_string_val(v);
      } else {
        proto.add_int_val(static_cast<int32_t>(v));
      }
    }
  });
  return proto;
}

Tensor TensorFromProto(const tensorflow::TensorProto& proto) {
  const auto dtype = static_cast<DataType>(proto.dtype());
  if (!IsSupportedTensorType(dtype) || IsRefType(dtype)) {
    InvalidArgument("TensorProto has unsupported dtype ", DataTypeString(dtype));
  }
  const TensorShape shape = ShapeFromProto(proto.tensor_shape());
  if (shape.num_elements() == 0) return Tensor(dtype, shape);
  if (!proto.tensor_content().empty() && dtype != DT_STRING) {
    int64_t expected;
    if (!MultiplySizes(shape.num_elements(), static_cast<int64_t>(DataTypeSize(dtype)), &expected) ||
        proto.tensor_content().size() != static_cast<uint64_t>(expected)) {
      InvalidArgument("TensorProto tensor_content has ", proto.tensor_content().size(), " bytes, not the ",
                      shape.num_elements(), " elements of ", DataTypeSize(dtype), " bytes that ",
                      DataTypeString(dtype), " ", shape.DebugString(), " holds");
    }
    Tensor tensor(dtype, shape);
    std::memcpy(tensor.raw_data(), proto.tensor_content().data(), static_cast<size_t>(expected));
    return tensor;
  }
  Tensor tensor;
  DispatchDataType(dtype, "TensorFromProto", [&]<typename T>() {
    if constexpr (std::is_same_v<T, float>) {
      tensor = FromRepeated<T>(proto.float_val(), dtype, shape);
    } else if constexpr (std::is_same_v<T, double>) {
      tensor = FromRepeated<T>(proto.double_val(), dtype, shape);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      tensor = FromRepeated<T>(proto.int64_val(), dtype, shape);
    } else if constexpr (std::is_same_v<T, bool>) {
      tensor = FromRepeated<T>(proto.bool_val(), dtype, shape);
    } else if constexpr (std::is_same_v<T, uint32_t>) {
      tensor = FromRepeated<T>(proto.uint32_val(), dtype, shape);
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      tensor = FromRepeated<T>(proto.uint64_val(), dtype, shape);
    } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
      tensor = FromRepeated<T>(proto.half_val(), dtype, shape);
    } else if constexpr (std::is_same_v<T, std::string>) {
      tensor = FromRepeated<T>(proto.string_val(), dtype, shape);
    } else {
      tensor = FromRepeated<T>(proto.int_val(), dtype, shape);
    }
  });
  return tensor;
}

}  // namespace flowtrain
