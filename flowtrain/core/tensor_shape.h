// TensorShape is the fully known shape of a tensor; PartialTensorShape is what shape inference
// knows at graph-build time: an unknown rank, or a rank with some dimensions unknown (-1).
//
//   TensorShape s({2, 3});                  // s.num_elements() == 6, s.DebugString() == "[2,3]"
//   PartialTensorShape p({-1, 64});          // p.DebugString() == "[?,64]"
//   PartialTensorShape::Unknown()            // "<unknown>"; PartialTensorShape({}) is a scalar
//   p.IsCompatibleWith(TensorShape({8, 64})) // true
#ifndef FLOWTRAIN_CORE_TENSOR_SHAPE_H_
#define FLOWTRAIN_CORE_TENSOR_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "absl/container/inlined_vector.h"

namespace flowtrain {

using DimVector = absl::InlinedVector<int64_t, 4>;

// Checked size arithmetic, for every size computed from tensor values (Tile's multiples,
// Fill's dims, Reshape's -1, ...): a wrapped int64 would give a wrong shape (Tile of [4,4] by
// [2^62, 4] was [0,16]) or a tiny allocation written past. TF's MultiplyWithoutOverflow.
//
//   int64_t n;
//   if (!MultiplySizes(a, b, &n)) ...;                       // false on overflow
//   int64_t n = CheckedMultiplySizes(a, b, "Tile", "dimension 0");
//   // InvalidArgument "Tile: dimension 0: 4 * 4611686018427387904 overflows int64"
inline bool MultiplySizes(int64_t a, int64_t b, int64_t* product) {
  return !__builtin_mul_overflow(a, b, product);
}
inline bool AddSizes(int64_t a, int64_t b, int64_t* sum) { return !__builtin_add_overflow(a, b, sum); }
int64_t CheckedMultiplySizes(int64_t a, int64_t b, std::string_view op, std::string_view what);
int64_t CheckedAddSizes(int64_t a, int64_t b, std::string_view op, std::string_view what);
// The product of `dims` (non-negative); InvalidArgument naming `op` (when not empty) and the
// dims if it overflows int64.
int64_t CheckedNumElements(std::span<const int64_t> dims, std::string_view op = {});

// InvalidArgument: dimension `d` of `shape` (a `kind`) does not exist.
[[noreturn]] void ThrowDimOutOfRange(std::string_view kind, int d, const std::string& shape);

// A fully defined shape: every dimension is known and non-negative.
class TensorShape {
 public:
  TensorShape() = default;  // scalar
  TensorShape(std::initializer_list<int64_t> dims);
  explicit TensorShape(std::span<const int64_t> dims);
  explicit TensorShape(DimVector dims);

  int dims() const { return static_cast<int>(dims_.size()); }
  // Throws InvalidArgument unless 0 <= d < dims().
  int64_t dim_size(int d) const {
    if (d < 0 || d >= dims()) [[unlikely]]
      ThrowDimOutOfRange("TensorShape", d, DebugString());
    return dims_[d];
  }
  const DimVector& dim_sizes() const { return dims_; }
  int64_t num_elements() const { return num_elements_; }

  void AddDim(int64_t size);
  void InsertDim(int d, int64_t size);
  void RemoveDim(int d);
  void set_dim(int d, int64_t size);

  bool operator==(const TensorShape& other) const { return dims_ == other.dims_; }
  bool operator!=(const TensorShape& other) const { return !(*this == other); }

  // "[2,3]", "[]" for a scalar.
  std::string DebugString() const;

 private:
  void Recount();
  DimVector dims_;
  int64_t num_elements_ = 1;
};

// A shape that may have unknown rank or unknown (-1) dimensions. There is deliberately no
// default constructor: `PartialTensorShape({})` must mean a scalar (TF's `shape=[]`), and an
// unknown shape is spelled PartialTensorShape::Unknown() (TF's `shape=None`).
class PartialTensorShape {
 public:
  PartialTensorShape(std::initializer_list<int64_t> dims);
  explicit PartialTensorShape(std::span<const int64_t> dims);
  PartialTensorShape(const TensorShape& shape);  // NOLINT: a known shape is a partial one

  static PartialTensorShape Unknown() { return PartialTensorShape(UnknownRankTag()); }
  static PartialTensorShape UnknownOfRank(int rank);

  bool unknown_rank() const { return unknown_rank_; }
  // -1 when the rank is unknown.
  int dims() const { return unknown_rank_ ? -1 : static_cast<int>(dims_.size()); }
  // -1 when that dimension is unknown. Throws InvalidArgument unless 0 <= d < dims() (so
  // always when the rank is unknown).
  int64_t dim_size(int d) const {
    if (d < 0 || d >= dims()) [[unlikely]]
      ThrowDimOutOfRange("PartialTensorShape", d, DebugString());
    return dims_[d];
  }
  const DimVector& dim_sizes() const { return dims_; }
  bool IsFullyDefined() const;
  // -1 unless fully defined.
  int64_t num_elements() const;
  // Requires IsFullyDefined().
  TensorShape AsTensorShape() const;

  bool IsCompatibleWith(const PartialTensorShape& other) const;
  // The most specific shape compatible with both; throws InvalidArgument if incompatible.
  PartialTensorShape MergeWith(const PartialTensorShape& other) const;
  // The most specific shape that both shapes are compatible with (TF's
  // most_specific_compatible_shape): dimensions that differ become unknown, ranks that differ
  // an unknown rank. What a Merge of the two yields.
  PartialTensorShape MostSpecificCompatibleShape(const PartialTensorShape& other) const;
  bool IsIdenticalTo(const PartialTensorShape& other) const {
    return unknown_rank_ == other.unknown_rank_ && dims_ == other.dims_;
  }

  void AddDim(int64_t size);
  // "<unknown>", "[?,64]".
  std::string DebugString() const;

 private:
  struct UnknownRankTag {};
  explicit PartialTensorShape(UnknownRankTag) {}
  bool unknown_rank_ = true;
  DimVector dims_;
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_CORE_TENSOR_SHAPE_H_
