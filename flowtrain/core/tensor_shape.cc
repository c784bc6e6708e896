#include "flowtrain/core/tensor_shape.h"

#include "flowtrain/core/str_util.h"
#include "flowtrain/core/error.h"

namespace flowtrain {
namespace {

void CheckKnownDim(int64_t size) {
  if (size < 0) InvalidArgument("Dimension ", size, " must be >= 0");
}

}  // namespace

void ThrowDimOutOfRange(std::string_view kind, int d, const std::string& shape) {
  InvalidArgument(kind, "::dim_size: dimension ", d, " is out of range for shape ", shape);
}

int64_t CheckedMultiplySizes(int64_t a, int64_t b, std::string_view op, std::string_view what) {
  int64_t product;
  if (!MultiplySizes(a, b, &product)) InvalidArgument(op, ": ", what, ": ", a, " * ", b, " overflows int64");
  return product;
}

int64_t CheckedAddSizes(int64_t a, int64_t b, std::string_view op, std::string_view what) {
  int64_t sum;
  if (!AddSizes(a, b, &sum)) InvalidArgument(op, ": ", what, ": ", a, " + ", b, " overflows int64");
  return sum;
}

int64_t CheckedNumElements(std::span<const int64_t> dims, std::string_view op) {
  int64_t n = 1;
  for (int64_t d : dims) {
    // As TF's TensorShape, a later 0 does not excuse an overflowing prefix.
    if (!MultiplySizes(n, d, &n)) {
      const std::string shape = StrCat("[", StrJoin(dims, ","), "]");
      if (op.empty()) InvalidArgument("Shape ", shape, " has too many elements (more than 2^63-1)");
      InvalidArgument(op, ": shape ", shape, " has too many elements (more than 2^63-1)");
    }
  }
  return n;
}

TensorShape::TensorShape(std::initializer_list<int64_t> dims) : dims_(dims) { Recount(); }
TensorShape::TensorShape(std::span<const int64_t> dims) : dims_(dims.begin(), dims.end()) { Recount(); }
TensorShape::TensorShape(DimVector dims) : dims_(std::move(dims)) { Recount(); }

void TensorShape::Recount() {
  for (int64_t d : dims_) CheckKnownDim(d);
  num_elements_ = CheckedNumElements(dims_);
}

void TensorShape::AddDim(int64_t size) {
  dims_.push_back(size);
  Recount();
}

void TensorShape::InsertDim(int d, int64_t size) {
  FT_REQUIRE(d >= 0 && d <= dims(), "InsertDim: index ", d, " out of range for ", DebugString());
  dims_.insert(dims_.begin() + d, size);
  Recount();
}

void TensorShape::RemoveDim(int d) {
  FT_REQUIRE(d >= 0 && d < dims(), "RemoveDim: index ", d, " out of range for ", DebugString());
  dims_.erase(dims_.begin() + d);
  Recount();
}

void TensorShape::set_dim(int d, int64_t size) {
  FT_REQUIRE(d >= 0 && d < dims(), "set_dim: index ", d, " out of range for ", DebugString());
  dims_[d] = size;
  Recount();
}

std::string TensorShape::DebugString() const { return StrCat("[", StrJoin(dims_, ","), "]"); }

PartialTensorShape::PartialTensorShape(std::initializer_list<int64_t> dims)
    : PartialTensorShape(std::span<const int64_t>(dims.begin(), dims.size())) {}

PartialTensorShape::PartialTensorShape(std::span<const int64_t> dims)
    : unknown_rank_(false), dims_(dims.begin(), dims.end()) {
  for (int64_t& d : dims_) {
    if (d < -1) InvalidArgument("Dimension ", d, " must be >= -1");
  }
}

PartialTensorShape::PartialTensorShape(const TensorShape& shape)
    : unknown_rank_(false), dims_(shape.dim_sizes()) {}

PartialTensorShape PartialTensorShape::UnknownOfRank(int rank) {
  PartialTensorShape shape = Unknown();
  shape.unknown_rank_ = false;
  shape.dims_.assign(rank, -1);
  return shape;
}

bool PartialTensorShape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

int64_t PartialTensorShape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  return CheckedNumElements(dims_);
}

TensorShape PartialTensorShape::AsTensorShape() const {
  if (!IsFullyDefined()) InvalidArgument("Shape ", DebugString(), " is not fully defined");
  return TensorShape(dims_);
}

bool PartialTensorShape::IsCompatibleWith(const PartialTensorShape& other) const {
  if (unknown_rank_ || other.unknown_rank_) return true;
  if (dims_.size() != other.dims_.size()) return false;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i] >= 0 && other.dims_[i] >= 0 && dims_[i] != other.dims_[i]) return false;
  }
  return true;
}

PartialTensorShape PartialTensorShape::MergeWith(const PartialTensorShape& other) const {
  if (unknown_rank_) return other;
  if (other.unknown_rank_) return *this;
  if (!IsCompatibleWith(other)) {
    InvalidArgument("Shapes ", DebugString(), " and ", other.DebugString(), " are incompatible");
  }
  PartialTensorShape merged = *this;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (merged.dims_[i] < 0) merged.dims_[i] = other.dims_[i];
  }
  return merged;
}

PartialTensorShape PartialTensorShape::MostSpecificCompatibleShape(const PartialTensorShape& other) const {
  if (unknown_rank_ || other.unknown_rank_ || dims_.size() != other.dims_.size()) return Unknown();
  PartialTensorShape relaxed = *this;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (relaxed.dims_[i] != other.dims_[i]) relaxed.dims_[i] = -1;
  }
  return relaxed;
}

void PartialTensorShape::AddDim(int64_t size) {
  FT_REQUIRE(size >= -1, "Dimension ", size, " must be >= -1");
  if (unknown_rank_) return;  // Appending to an unknown rank keeps it unknown.
  dims_.push_back(size);
}

std::string PartialTensorShape::DebugString() const {
  if (unknown_rank_) return "<unknown>";
  std::string out = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i > 0) out += ",";
    if (dims_[i] < 0) {
      out += "?";
    } else {
      StrAppend(&out, dims_[i]);
    }
  }
  out += "]";
  return out;
}

}  // namespace flowtrain
