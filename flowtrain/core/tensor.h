// Tensor: a dtype, a shape and a reference-counted, 64-byte-aligned buffer. Copying a Tensor
// shares the buffer (like TF's C++ Tensor); DeepCopy() makes an independent one.
//
//   Tensor t(DT_FLOAT, TensorShape({2, 3}));
//   auto v = t.flat<float>();                 // std::span<float> of 6 elements
//   v[0] = 1.0f;
//   Tensor s = Tensor::Scalar<int64_t>(7);    // s.scalar<int64_t>() == 7
//   Tensor names = Tensor::FromVector<std::string>({"a", "b"});
//
// Besides numbers, bools and strings, a tensor may hold ResourceHandles (DT_RESOURCE: the
// handle of a queue or iterator in a session) or std::any values (DT_VARIANT: a dataset object
// passed between dataset ops). Those two never reach files or protos.
//
// Eigen views (`flowtrain/core/tensor_eigen.h`) are kept out of this header so that code that
// only moves tensors around does not compile Eigen's tensor templates.
#ifndef FLOWTRAIN_CORE_TENSOR_H_
#define FLOWTRAIN_CORE_TENSOR_H_

#include <any>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "flowtrain/core/allocator.h"
#include "flowtrain/core/error.h"
#include "flowtrain/core/resource_handle.h"
#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/core/types.h"

namespace flowtrain {

// The storage behind one or more Tensors. Intrusively reference counted so that copying a
// Tensor costs one atomic increment and no allocation.
class TensorBuffer {
 public:
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  void* data() const { return data_; }
  size_t size_bytes() const { return size_bytes_; }
  void Ref() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  // The last owner skips the atomic read-modify-write (nobody else can take a reference
  // then): most tensors die with their only owner, and the update was a tenth of a
  // scalar node's time in a while loop.
  void Unref() const {
    if (refs_.load(std::memory_order_acquire) == 1 || refs_.fetch_sub(1, std::memory_order_acq_rel) == 1)
      delete this;
  }
  bool RefCountIsOne() const { return refs_.load(std::memory_order_acquire) == 1; }

 protected:
  TensorBuffer(void* data, size_t size_bytes) : data_(data), size_bytes_(size_bytes) {}
  virtual ~TensorBuffer() = default;

 private:
  void* data_;
  size_t size_bytes_;
  mutable std::atomic<int32_t> refs_{1};
};

class Tensor {
 public:
  // An empty tensor: dtype DT_INVALID, no buffer. IsInitialized() is false.
  Tensor() = default;
  // Allocates an uninitialized buffer (strings are constructed empty).
  Tensor(DataType dtype, const TensorShape& shape, Allocator* allocator = DefaultAllocator());
  // Wraps memory the caller owns; `release` runs when the last Tensor using it is gone.
  static Tensor WrapExternal(DataType dtype, const TensorShape& shape, void* data, size_t size_bytes,
                             std::function<void()> release);

  Tensor(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  template <typename T>
  static Tensor Scalar(T value);
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values);
  // Values in row-major order; their count must match the shape.
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const TensorShape& shape);

  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int dims() const { return shape_.dims(); }
  int64_t dim_size(int d) const { return shape_.dim_size(d); }
  int64_t NumElements() const { return shape_.num_elements(); }
  bool IsInitialized() const { return buffer_ != nullptr || (dtype_ != DT_INVALID && NumElements() == 0); }
  size_t TotalBytes() const;

  // Raw data; throws InvalidArgument unless T matches dtype() (an empty Tensor has none).
  template <typename T>
  T* data() const {
    CheckType(DataTypeToEnum<T>::value);
    return static_cast<T*>(data_);
  }
  template <typename T>
  std::span<T> flat() const {
    return std::span<T>(data<T>(), static_cast<size_t>(NumElements()));
  }
  // The single element of a tensor with one element (any rank); InvalidArgument otherwise.
  template <typename T>
  T& scalar() const {
    CheckOneElement();
    return *data<T>();
  }
  void* raw_data() const { return data_; }

  // A tensor of `shape` sharing this buffer; the element counts must match.
  Tensor Reshaped(const TensorShape& shape) const;
  // Rows [start, limit) of dimension 0, sharing this buffer.
  Tensor Slice(int64_t start, int64_t limit) const;
  // An independent copy of the data.
  Tensor DeepCopy() const;
  // Copies `other`'s elements into this tensor's buffer (same dtype and element count).
  void CopyDataFrom(const Tensor& other);

  bool SharesBufferWith(const Tensor& other) const { return buffer_ != nullptr && buffer_ == other.buffer_; }
  // True when no other Tensor shares the buffer, so a kernel may overwrite it in place.
  bool RefCountIsOne() const { return buffer_ != nullptr && buffer_->RefCountIsOne(); }

  // "Tensor<type: float shape: [2] values: 1 2>" as TF prints it.
  std::string DebugString(int max_entries = 3) const;
  // The first `max_entries` values, space separated, "..." if there are more.
  std::string SummarizeValue(int64_t max_entries) const;

 private:
  void CheckType(DataType expected) const;
  void CheckOneElement() const;

  DataType dtype_ = DT_INVALID;
  TensorShape shape_;
  TensorBuffer* buffer_ = nullptr;
  void* data_ = nullptr;
};

// ---- Implementation details below. ----

template <typename T>
Tensor Tensor::Scalar(T value) {
  Tensor t(DataTypeToEnum<T>::value, TensorShape());
  *t.data<T>() = std::move(value);
  return t;
}

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values) {
  return FromVector(values, TensorShape({static_cast<int64_t>(values.size())}));
}

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values, const TensorShape& shape) {
  if (static_cast<int64_t>(values.size()) != shape.num_elements()) {
    InvalidArgument("Tensor::FromVector: ", values.size(), " values do not fill shape ", shape.DebugString());
  }
  Tensor t(DataTypeToEnum<T>::value, shape);
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

// std::vector<bool> is packed, so it gets its own overload.
template <>
Tensor Tensor::FromVector<bool>(const std::vector<bool>& values, const TensorShape& shape);

}  // namespace flowtrain

#endif  // FLOWTRAIN_CORE_TENSOR_H_
