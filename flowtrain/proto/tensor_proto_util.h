// Conversions between flowtrain's Tensor/TensorShape and TF's TensorProto/TensorShapeProto.
//
//   tensorflow::TensorProto proto = TensorToProto(t);         // tensor_content for numbers
//   Tensor back = TensorFromProto(proto);                     // also reads float_val, int_val...
//
// TensorFromProto accepts every encoding TF writes (tensor_content, or the typed *_val
// fields, including the single-value broadcast TF uses for constants such as `zeros`).
#ifndef FLOWTRAIN_PROTO_TENSOR_PROTO_UTIL_H_
#define FLOWTRAIN_PROTO_TENSOR_PROTO_UTIL_H_

#include "flowtrain/core/tensor.h"
#include "flowtrain/proto/tensor.pb.h"
#include "flowtrain/proto/tensor_shape.pb.h"

namespace flowtrain {

tensorflow::TensorShapeProto ShapeToProto(const PartialTensorShape& shape);
PartialTensorShape PartialShapeFromProto(const tensorflow::TensorShapeProto& proto);
// Throws InvalidArgument if the proto has an unknown rank or dimension.
TensorShape ShapeFromProto(const tensorflow::TensorShapeProto& proto);

// Numbers are written as tensor_content; `use_typed_fields` writes float_val etc. instead
// (TF does that for small constants; GraphDef text is easier to read that way).
tensorflow::TensorProto TensorToProto(const Tensor& tensor, bool use_typed_fields = false);
Tensor TensorFromProto(const tensorflow::TensorProto& proto);

}  // namespace flowtrain

#endif  // FLOWTRAIN_PROTO_TENSOR_PROTO_UTIL_H_
