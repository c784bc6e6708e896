#include "flowtrain/framework/internal/batch_util.h"

#include <cstring>

#include "flowtrain/core/error.h"

namespace flowtrain::batch_util {

Tensor Stack(const std::vector<Tensor>& elements, std::string_view what, DataType dtype,
             const TensorShape& element_shape) {
  if (elements.empty()) {
    TensorShape shape = element_shape;
    shape.InsertDim(0, 0);
    return Tensor(dtype, shape);
  }
  const Tensor& first = elements.front();
  TensorShape shape = first.shape();
  shape.InsertDim(0, static_cast<int64_t>(elements.size()));
  Tensor out(first.dtype(), shape);
  const int64_t row = first.NumElements();
  const bool plain = first.dtype() != DT_STRING && DataTypeSize(first.dtype()) > 0;
  const size_t row_bytes = plain ? row * DataTypeSize(first.dtype()) : 0;
  for (size_t i = 0; i < elements.size(); ++i) {
    const Tensor& e = elements[i];
    if (e.dtype() != first.dtype() || e.shape() != first.shape()) {
      InvalidArgument(
          what, ": cannot batch tensors with different shapes in component: ", "first element had shape ",
          first.shape().DebugString(), " and element ", i, " had shape ", e.shape().DebugString());
    }
    if (plain) {
      std::memcpy(static_cast<char*>(out.raw_data()) + i * row_bytes, e.raw_data(), row_bytes);
    } else {
      Tensor slot = out.Slice(static_cast<int64_t>(i), static_cast<int64_t>(i) + 1);
      slot.CopyDataFrom(e);
    }
  }
  return out;
}

std::vector<Tensor> Unstack(const Tensor& batch) {
  if (batch.dims() < 1) InvalidArgument("Cannot split a scalar into elements");
  TensorShape row_shape = batch.shape();
  row_shape.RemoveDim(0);
  std::vector<Tensor> rows;
  rows.reserve(batch.dim_size(0));
  for (int64_t i = 0; i < batch.dim_size(0); ++i) rows.push_back(batch.Slice(i, i + 1).Reshaped(row_shape));
  return rows;
}

namespace {

// Copies `src` into the top-left corner of `dst` (same rank, every dim of dst >= src's).
template <typename T>
void CopyPadded(const T* src, const TensorShape& src_shape, T* dst, const TensorShape& dst_shape, int dim,
                int64_t src_offset, int64_t dst_offset) {
  if (dim == src_shape.dims()) {
    dst[dst_offset] = src[src_offset];
    return;
  }
  int64_t src_stride = 1, dst_stride = 1;
  for (int d = dim + 1; d < src_shape.dims(); ++d) {
    src_stride *= src_shape.dim_size(d);
    dst_stride *= dst_shape.dim_size(d);
  }
  for (int64_t i = 0; i < src_shape.dim_size(dim); ++i) {
    CopyPadded(src, src_shape, dst, dst_shape, dim + 1, src_offset + i * src_stride,
               dst_offset + i * dst_stride);
  }
}

}  // namespace

Tensor PadAndStack(const std::vector<Tensor>& elements, const PartialTensorShape& padded_shape,
                   std::string_view what, const Tensor* padding_value) {
  if (elements.empty()) InvalidArgument(what, ": nothing to batch");
  const int rank = elements.front().dims();
  DimVector dims(rank, 0);
  for (const Tensor& e : elements) {
    if (e.dims() != rank || e.dtype() != elements.front().dtype()) {
      InvalidArgument(what, ": cannot pad elements of different ranks or types: ",
                      elements.front().shape().DebugString(), " and ", e.shape().DebugString());
    }
    for (int d = 0; d < rank; ++d) dims[d] = std::max(dims[d], e.dim_size(d));
  }
  if (!padded_shape.unknown_rank()) {
    if (padded_shape.dims() != rank) {
      InvalidArgument(what, ": padded shape ", padded_shape.DebugString(), " has another rank than ",
                      elements.front().shape().DebugString());
    }
    for (int d = 0; d < rank; ++d) {
      const int64_t want = padded_shape.dim_size(d);
      if (want < 0) continue;
      if (want < dims[d]) {
        InvalidArgument(what, ": an element of shape ", TensorShape(dims).DebugString(),
                        " is larger than the padded shape ", padded_shape.DebugString());
      }
      dims[d] = want;
    }
  }
  const TensorShape row_shape(dims);
  TensorShape shape = row_shape;
  shape.InsertDim(0, static_cast<int64_t>(elements.size()));
  Tensor out(elements.front().dtype(), shape);
  if (padding_value != nullptr &&
      (padding_value->dtype() != out.dtype() || padding_value->NumElements() != 1)) {
    InvalidArgument(what, ": the padding value must be a scalar of ", DataTypeString(out.dtype()), ", got ",
                    DataTypeString(padding_value->dtype()), " of shape ",
                    padding_value->shape().DebugString());
  }
  DispatchDataType(out.dtype(), what, [&]<typename T>() {
    T* dst = out.data<T>();
    const int64_t n = out.NumElements();
    const T fill = padding_value != nullptr ? padding_value->data<T>()[0] : T();
    for (int64_t i = 0; i < n; ++i) dst[i] = fill;
    for (size_t i = 0; i < elements.size(); ++i) {
      const Tensor& e = elements[i];
      if (e.NumElements() == 0) continue;
      CopyPadded(e.data<T>(), e.shape(), dst + i * row_shape.num_elements(), row_shape, 0, 0, 0);
    }
  });
  return out;
}

}  // namespace flowtrain::batch_util
