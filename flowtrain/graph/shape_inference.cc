#include "flowtrain/graph/shape_inference.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {

InferenceContext::InferenceContext(const Node& node)
    : node_(node), outputs_(node.num_outputs(), PartialTensorShape::Unknown()), folded_(node.num_inputs()) {}

const PartialTensorShape& InferenceContext::input(int i) const {
  const Endpoint& e = node_.input(i);
  return e.node->output_shape(e.index);
}

const Tensor* InferenceContext::input_tensor(int i) {
  const Endpoint& e = node_.input(i);
  if (const Tensor* value = e.node->constant_value()) return value;
  if (folded_[i].has_value()) return &*folded_[i];
  // Shape(x) of a fully known x is known while building.
  if (e.node->type() == "Shape" && e.node->num_inputs() == 1) {
    const Endpoint& src = e.node->input(0);
    const PartialTensorShape& shape = src.node->output_shape(src.index);
    if (shape.IsFullyDefined()) {
      const DataType out_type = BaseType(e.node->output_type(0));
      Tensor t(out_type, TensorShape({shape.dims()}));
      for (int d = 0; d < shape.dims(); ++d) {
        if (out_type == DT_INT32) {
          t.flat<int32_t>()[d] = static_cast<int32_t>(shape.dim_size(d));
        } else {
          t.flat<int64_t>()[d] = shape.dim_size(d);
        }
      }
      folded_[i] = std::move(t);
      return &*folded_[i];
    }
  }
  return nullptr;
}

PartialTensorShape InferenceContext::InputAsShape(int i) {
  if (const Tensor* t = input_tensor(i)) {
    if (t->dims() != 1) {
      InvalidArgument("Shape input must be a vector, got shape ", t->shape().DebugString());
    }
    DimVector dims;
    for (int64_t d = 0; d < t->NumElements(); ++d) {
      const int64_t v = t->dtype() == DT_INT32 ? t->flat<int32_t>()[d] : t->flat<int64_t>()[d];
      dims.push_back(v < 0 ? -1 : v);
    }
    return PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
  }
  const PartialTensorShape& vector_shape = input(i);
  if (vector_shape.dims() == 1 && vector_shape.dim_size(0) >= 0) {
    return PartialTensorShape::UnknownOfRank(static_cast<int>(vector_shape.dim_size(0)));
  }
  return PartialTensorShape::Unknown();
}

void InferenceContext::set_output(int i, PartialTensorShape shape) {
  if (i < 0 || i >= num_outputs()) {
    Internal("Shape function of ", node_.type(), " set output ", i, " of ", num_outputs());
  }
  outputs_[i] = std::move(shape);
}

PartialTensorShape InferenceContext::WithRank(const PartialTensorShape& shape, int rank) const {
  if (shape.unknown_rank()) return PartialTensorShape::UnknownOfRank(rank);
  if (shape.dims() != rank) {
    InvalidArgument("Shape must be rank ", rank, " but is rank ", shape.dims());
  }
  return shape;
}

PartialTensorShape InferenceContext::WithRankAtLeast(const PartialTensorShape& shape, int rank) const {
  if (!shape.unknown_rank() && shape.dims() < rank) {
    InvalidArgument("Shape must be at least rank ", rank, " but is rank ", shape.dims());
  }
  return shape;
}

PartialTensorShape InferenceContext::WithRankAtMost(const PartialTensorShape& shape, int rank) const {
  if (!shape.unknown_rank() && shape.dims() > rank) {
    InvalidArgument("Shape must be at most rank ", rank, " but is rank ", shape.dims());
  }
  return shape;
}

int64_t InferenceContext::MergeDims(int64_t a, int64_t b) const {
  if (a < 0) return b;
  if (b < 0) return a;
  if (a != b) InvalidArgument("Dimensions must be equal, but are ", a, " and ", b);
  return a;
}

PartialTensorShape InferenceContext::Merge(const PartialTensorShape& a, const PartialTensorShape& b) const {
  if (a.unknown_rank()) return b;
  if (b.unknown_rank()) return a;
  if (a.dims() != b.dims()) {
    InvalidArgument("Shapes must be equal rank, but are ", a.dims(), " and ", b.dims());
  }
  DimVector dims;
  for (int i = 0; i < a.dims(); ++i) dims.push_back(MergeDims(a.dim_size(i), b.dim_size(i)));
  return PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
}

namespace shape_fns {

void UnchangedShape(InferenceContext& c) { c.set_output(0, c.input(0)); }

void ScalarShape(InferenceContext& c) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, PartialTensorShape({}));
}

void UnknownShape(InferenceContext& c) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, PartialTensorShape::Unknown());
}

PartialTensorShape BroadcastShapes(const PartialTensorShape& a, const PartialTensorShape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return PartialTensorShape::Unknown();
  const int rank = std::max(a.dims(), b.dims());
  DimVector dims(rank, -1);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.dims() - rank + i;
    const int ib = b.dims() - rank + i;
    const int64_t da = ia >= 0 ? a.dim_size(ia) : 1;
    const int64_t db = ib >= 0 ? b.dim_size(ib) : 1;
    if (da == 1) {
      dims[i] = db;
    } else if (db == 1) {
      dims[i] = da;
    } else if (da < 0 || db < 0) {
      dims[i] = da < 0 ? (db < 0 ? -1 : db) : da;
    } else if (da != db) {
      InvalidArgument("Dimensions must be equal, but are ", da, " and ", db);
    } else {
      dims[i] = da;
    }
  }
  return PartialTensorShape(std::span<const int64_t>(dims.data(), dims.size()));
}

void BroadcastBinaryOpShape(InferenceContext& c) { c.set_output(0, BroadcastShapes(c.input(0), c.input(1))); }

void ShapeFromShapeAttr(InferenceContext& c) { c.set_output(0, c.GetAttr<PartialTensorShape>("shape")); }

}  // namespace shape_fns
}  // namespace flowtrain
