#include "flowtrain/kernels/internal/array_util.h"

#include <cstring>

#include "flowtrain/core/error.h"

namespace flowtrain {

void CopyElements(const Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset, int64_t count) {
  if (count <= 0) return;
  if (src.dtype() == DT_STRING) {
    const std::string* s = src.data<std::string>() + src_offset;
    std::string* d = dst.data<std::string>() + dst_offset;
    for (int64_t i = 0; i < count; ++i) d[i] = s[i];
    return;
  }
  const size_t bytes = DataTypeSize(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw_data()) + dst_offset * bytes,
              static_cast<const char*>(src.raw_data()) + src_offset * bytes, count * bytes);
}

int64_t ReadIndex(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_INT32:
      return t.flat<int32_t>()[i];
    case DT_INT64:
      return t.flat<int64_t>()[i];
    case DT_UINT8:
      return t.flat<uint8_t>()[i];
    default:
      InvalidArgument("Expected an int32 or int64 index tensor, got ", DataTypeString(t.dtype()));
  }
}

std::vector<int64_t> ReadIndices(const Tensor& t) {
  std::vector<int64_t> v(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = ReadIndex(t, i);
  return v;
}

DimVector RowMajorStrides(const TensorShape& shape) {
  DimVector strides(shape.dims(), 1);
  for (int d = shape.dims() - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape.dim_size(d + 1);
  return strides;
}

void SetZero(Tensor& t) {
  if (t.dtype() == DT_STRING) {
    for (std::string& s : t.flat<std::string>()) s.clear();
    return;
  }
  if (t.NumElements() > 0) std::memset(t.raw_data(), 0, t.NumElements() * DataTypeSize(t.dtype()));
}

}  // namespace flowtrain
