#include "flowtrain/core/tensor.h"

#include <cstring>
#include <functional>
#include <new>

#include "flowtrain/core/str_util.h"

namespace flowtrain {
namespace {

// Calls fn.operator()<T>() for the dtypes whose elements are C++ objects that must be
// constructed, destroyed and copied one by one (strings, resource handles, variants);
// returns false for plain-memory dtypes.
template <typename Fn>
bool VisitObjectType(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DT_STRING:
      fn.template operator()<std::string>();
      return true;
    case DT_RESOURCE:
      fn.template operator()<ResourceHandle>();
      return true;
    case DT_VARIANT:
      fn.template operator()<std::any>();
      return true;
    default:
      return false;
  }
}

// A buffer whose header and data live in one block from an Allocator, so a new tensor costs
// one allocation. The block starts with a raw prefix (allocator, block size) that is not part
// of the object, so releasing the block after the destructor ran reads no member of a dead
// object.
class PooledBuffer final : public TensorBuffer {
 public:
  static PooledBuffer* Create(DataType dtype, int64_t elements, size_t data_bytes, Allocator* allocator) {
    const size_t block_bytes = kHeaderBytes + data_bytes;
    char* block = static_cast<char*>(allocator->Allocate(block_bytes));
    const BlockPrefix prefix{allocator, block_bytes};
    std::memcpy(block, &prefix, sizeof(prefix));
    auto* buffer = new (block + kPrefixBytes) PooledBuffer(block + kHeaderBytes, data_bytes, dtype, elements);
    VisitObjectType(dtype, [&]<typename T>() {
      auto* objects = static_cast<T*>(buffer->data());
      for (int64_t i = 0; i < elements; ++i) new (objects + i) T();
    });
    return buffer;
  }

  // Prefix and object, rounded up so the data that follows stays 64-byte aligned.
  static constexpr size_t kPrefixBytes = 16;
  static constexpr size_t kHeaderBytes = 64;

 private:
  struct BlockPrefix {
    Allocator* allocator;
    size_t block_bytes;
  };

  PooledBuffer(void* data, size_t data_bytes, DataType dtype, int64_t elements)
      : TensorBuffer(data, data_bytes), dtype_(dtype), elements_(elements) {}

  ~PooledBuffer() override {
    VisitObjectType(dtype_, [&]<typename T>() {
      auto* objects = static_cast<T*>(data());
      for (int64_t i = 0; i < elements_; ++i) objects[i].~T();
    });
  }

  // The object lives inside an allocator block: deletion destroys in place (done by the
  // delete-expression) and returns the whole block.
  static void operator delete(void* ptr) {
    char* block = static_cast<char*>(ptr) - kPrefixBytes;
    BlockPrefix prefix;
    std::memcpy(&prefix, block, sizeof(prefix));
    prefix.allocator->Deallocate(block, prefix.block_bytes);
  }

  DataType dtype_;
  int64_t elements_;
};
static_assert(PooledBuffer::kPrefixBytes + sizeof(PooledBuffer) <= PooledBuffer::kHeaderBytes);

class ExternalBuffer final : public TensorBuffer {
 public:
  ExternalBuffer(void* data, size_t size_bytes, std::function<void()> release)
      : TensorBuffer(data, size_bytes), release_(std::move(release)) {}
  ~ExternalBuffer() override {
    if (release_) release_();
  }

 private:
  std::function<void()> release_;
};

size_t ElementBytes(DataType dtype) {
  size_t bytes = DataTypeSize(dtype);
  VisitObjectType(dtype, [&]<typename T>() { bytes = sizeof(T); });
  return bytes;
}

}  // namespace

Tensor::Tensor(DataType dtype, const TensorShape& shape, Allocator* allocator)
    : dtype_(dtype), shape_(shape) {
  const bool handle_type = dtype == DT_RESOURCE || dtype == DT_VARIANT;
  if ((!IsSupportedTensorType(dtype) && !handle_type) || IsRefType(dtype)) {
    InvalidArgument("Cannot create a tensor of type ", DataTypeString(dtype));
  }
  const int64_t n = shape.num_elements();
  if (n == 0) return;
  // A valid shape can still be too big in bytes ([2^62] floats is 2^64 bytes, which wrapped
  // to an empty block that the kernel then wrote past).
  int64_t bytes;
  if (!MultiplySizes(n, static_cast<int64_t>(ElementBytes(dtype)), &bytes)) {
    ResourceExhausted("OOM when allocating tensor with shape ", shape.DebugString(), " and type ",
                      DataTypeString(dtype), ": ", n, " elements of ", ElementBytes(dtype),
                      " bytes overflow int64");
  }
  PooledBuffer* buffer = PooledBuffer::Create(dtype, n, static_cast<size_t>(bytes), allocator);
  buffer_ = buffer;
  data_ = buffer->data();
}

Tensor Tensor::WrapExternal(DataType dtype, const TensorShape& shape, void* data, size_t size_bytes,
                            std::function<void()> release) {
  if (dtype == DT_STRING || !IsSupportedTensorType(dtype)) {
    InvalidArgument("Cannot wrap external memory as a tensor of type ", DataTypeString(dtype));
  }
  int64_t needed;
  if (!MultiplySizes(shape.num_elements(), static_cast<int64_t>(DataTypeSize(dtype)), &needed) ||
      size_bytes < static_cast<size_t>(needed)) {
    InvalidArgument("External buffer of ", size_bytes, " bytes is too small for ", DataTypeString(dtype), " ",
                    shape.DebugString());
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.buffer_ = new ExternalBuffer(data, size_bytes, std::move(release));
  t.data_ = data;
  return t;
}

Tensor::Tensor(const Tensor& other)
    : dtype_(other.dtype_), shape_(other.shape_), buffer_(other.buffer_), data_(other.data_) {
  if (buffer_ != nullptr) buffer_->Ref();
}

Tensor::Tensor(Tensor&& other) noexcept
    : dtype_(other.dtype_), shape_(std::move(other.shape_)), buffer_(other.buffer_), data_(other.data_) {
  other.buffer_ = nullptr;
  other.data_ = nullptr;
  other.dtype_ = DT_INVALID;
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this == &other) return *this;
  if (other.buffer_ != nullptr) other.buffer_->Ref();
  if (buffer_ != nullptr) buffer_->Unref();
  dtype_ = other.dtype_;
  shape_ = other.shape_;
  buffer_ = other.buffer_;
  data_ = other.data_;
  return *this;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this == &other) return *this;
  if (buffer_ != nullptr) buffer_->Unref();
  dtype_ = other.dtype_;
  shape_ = std::move(other.shape_);
  buffer_ = other.buffer_;
  data_ = other.data_;
  other.buffer_ = nullptr;
  other.data_ = nullptr;
  other.dtype_ = DT_INVALID;
  return *this;
}

Tensor::~Tensor() {
  if (buffer_ != nullptr) buffer_->Unref();
}

size_t Tensor::TotalBytes() const {
  if (dtype_ == DT_STRING) {
    size_t total = 0;
    for (const std::string& s : flat<std::string>()) total += s.size();
    return total;
  }
  return NumElements() * DataTypeSize(dtype_);
}

void Tensor::CheckType(DataType expected) const {
  if (dtype_ == DT_INVALID) {
    InvalidArgument(
        "Tensor is empty (default-constructed, or the result of a fetched Operation) "
        "and has no ",
        DataTypeString(expected), " values");
  }
  if (dtype_ != expected) {
    InvalidArgument("Tensor has type ", DataTypeString(dtype_), " but was accessed as ",
                    DataTypeString(expected));
  }
}

void Tensor::CheckOneElement() const {
  if (NumElements() != 1) {
    InvalidArgument("Expected a tensor with one element, got shape ", shape_.DebugString());
  }
}

Tensor Tensor::Reshaped(const TensorShape& shape) const {
  if (shape.num_elements() != NumElements()) {
    InvalidArgument("Cannot reshape a tensor with ", NumElements(), " elements to shape ",
                    shape.DebugString(), " (", shape.num_elements(), " elements)");
  }
  Tensor t(*this);
  t.shape_ = shape;
  return t;
}

Tensor Tensor::Slice(int64_t start, int64_t limit) const {
  if (dims() < 1) InvalidArgument("Cannot slice a scalar tensor");
  if (start < 0 || limit < start || limit > dim_size(0)) {
    InvalidArgument("Slice [", start, ", ", limit, ") out of range for shape ", shape_.DebugString());
  }
  Tensor t(*this);
  t.shape_.set_dim(0, limit - start);
  const int64_t row = dim_size(0) == 0 ? 0 : NumElements() / dim_size(0);
  if (data_ != nullptr) t.data_ = static_cast<char*>(data_) + start * row * ElementBytes(dtype_);
  return t;
}

Tensor Tensor::DeepCopy() const {
  if (!IsInitialized()) return Tensor();
  Tensor copy(dtype_, shape_);
  copy.CopyDataFrom(*this);
  return copy;
}

void Tensor::CopyDataFrom(const Tensor& other) {
  if (other.dtype_ != dtype_ || other.NumElements() != NumElements()) {
    InvalidArgument("CopyDataFrom: cannot copy ", DataTypeString(other.dtype_), " ",
                    other.shape_.DebugString(), " into ", DataTypeString(dtype_), " ", shape_.DebugString());
  }
  if (NumElements() == 0 || data_ == other.data_) return;
  const bool copied_objects = VisitObjectType(dtype_, [&]<typename T>() {
    auto src = other.flat<T>();
    auto dst = flat<T>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
  });
  if (!copied_objects) {
    std::memcpy(data_, other.data_, NumElements() * DataTypeSize(dtype_));
  }
}

std::string Tensor::SummarizeValue(int64_t max_entries) const {
  if (!IsInitialized()) return "<uninitialized>";
  const int64_t n = NumElements();
  const int64_t shown = std::min(n, max_entries);
  std::string out;
  if (dtype_ == DT_RESOURCE || dtype_ == DT_VARIANT) {
    for (int64_t i = 0; i < shown; ++i) {
      if (i > 0) out += " ";
      if (dtype_ == DT_RESOURCE) {
        StrAppend(&out, "<resource ", data<ResourceHandle>()[i].DebugString(), ">");
      } else {
        StrAppend(&out, "<variant ", data<std::any>()[i].type().name(), ">");
      }
    }
    if (shown < n) out += "...";
    return out;
  }
  DispatchDataType(dtype_, "SummarizeValue", [&]<typename T>() {
    const T* values = data<T>();
    for (int64_t i = 0; i < shown; ++i) {
      if (i > 0) out += " ";
      if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
        StrAppend(&out, static_cast<float>(values[i]));
      } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t> ||
                           std::is_same_v<T, bool>) {
        StrAppend(&out, static_cast<int>(values[i]));
      } else {
        StrAppend(&out, values[i]);
      }
    }
  });
  if (shown < n) out += "...";
  return out;
}

std::string Tensor::DebugString(int max_entries) const {
  return StrCat("Tensor<type: ", DataTypeString(dtype_), " shape: ", shape_.DebugString(),
                " values: ", SummarizeValue(max_entries), ">");
}

template <>
Tensor Tensor::FromVector<bool>(const std::vector<bool>& values, const TensorShape& shape) {
  if (static_cast<int64_t>(values.size()) != shape.num_elements()) {
    InvalidArgument("Tensor::FromVector: ", values.size(), " values do not fill shape ", shape.DebugString());
  }
  Tensor t(DT_BOOL, shape);
  bool* out = t.data<bool>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace flowtrain
