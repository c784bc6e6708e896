#include "flowtrain/proto/tensor_proto_util.h"

#include <cstring>

#include "flowtrain/core/error.h"

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

// Fills `out` from a repeated field, broadcasting a single value (or the last one) as TF does.
template <typename Out, typename Field>
void FillFromRepeated(const Field& field, std::span<Out> out, DataType dtype) {
  if (field.size() == 0) {
    for (Out& v : out) v = Out();
    return;
  }
  if (static_cast<size_t>(field.size()) > out.size()) {
    InvalidArgument("TensorProto of type ", DataTypeString(dtype), " has ", field.size(), " values for ",
                    out.size(), " elements");
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& v = field.Get(std::min<int>(static_cast<int>(i), field.size() - 1));
    if constexpr (std::is_same_v<Out, half> || std::is_same_v<Out, bfloat16>) {
      out[i] = Eigen::numext::bit_cast<Out>(static_cast<uint16_t>(v));
    } else {
      out[i] = static_cast<Out>(v);
    }
  }
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
  Tensor tensor(dtype, shape);
  const int64_t n = shape.num_elements();
  if (n == 0) return tensor;
  if (dtype == DT_STRING) {
    FillFromRepeated(proto.string_val(), tensor.flat<std::string>(), dtype);
    return tensor;
  }
  if (!proto.tensor_content().empty()) {
    const size_t expected = n * DataTypeSize(dtype);
    if (proto.tensor_content().size() != expected) {
      InvalidArgument("TensorProto tensor_content has ", proto.tensor_content().size(), " bytes, expected ",
                      expected, " for ", DataTypeString(dtype), " ", shape.DebugString());
    }
    std::memcpy(tensor.raw_data(), proto.tensor_content().data(), expected);
    return tensor;
  }
  DispatchDataType(dtype, "TensorFromProto", [&]<typename T>() {
    auto out = tensor.flat<T>();
    if constexpr (std::is_same_v<T, float>) {
      FillFromRepeated(proto.float_val(), out, dtype);
    } else if constexpr (std::is_same_v<T, double>) {
      FillFromRepeated(proto.double_val(), out, dtype);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      FillFromRepeated(proto.int64_val(), out, dtype);
    } else if constexpr (std::is_same_v<T, bool>) {
      FillFromRepeated(proto.bool_val(), out, dtype);
    } else if constexpr (std::is_same_v<T, uint32_t>) {
      FillFromRepeated(proto.uint32_val(), out, dtype);
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      FillFromRepeated(proto.uint64_val(), out, dtype);
    } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
      FillFromRepeated(proto.half_val(), out, dtype);
    } else if constexpr (std::is_same_v<T, std::string>) {
      FillFromRepeated(proto.string_val(), out, dtype);
    } else {
      FillFromRepeated(proto.int_val(), out, dtype);
    }
  });
  return tensor;
}

}  // namespace flowtrain
