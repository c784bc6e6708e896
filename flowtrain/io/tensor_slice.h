// TensorSlice: a box inside a tensor (per dimension a start and a length), as TF's
// tensor_slice.h, with the text forms partitioned variables are saved and restored by.
//
//   io::ShapeAndSlice s = io::ParseShapeAndSlice("10 4 4,3:-");   // SaveV2's shape_and_slices
//   // s.full_shape == [10, 4]; s.slice covers rows [4, 7), every column
//   std::string key = io::EncodeTensorNameSlice("w", s.slice);      // the slice's bundle key
//
// A slice's extents are explicit (start, length) or full ("-": the whole dimension, however
// long). TF keeps the difference in checkpoints (in the slice key and the slice proto), so it
// is kept here too. Values; not thread-safe for writes, like any value.
#ifndef FLOWTRAIN_IO_TENSOR_SLICE_H_
#define FLOWTRAIN_IO_TENSOR_SLICE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/proto/tensor_bundle.pb.h"

namespace flowtrain::io {

class TensorSlice {
 public:
  // TF's kFullExtent: the length of an extent covering its whole dimension.
  static constexpr int64_t kFullExtent = -1;

  // The slice covering every element of a rank-`dims` tensor.
  explicit TensorSlice(int dims = 0);
  // InvalidArgument for a negative start or a length below -1.
  TensorSlice(std::vector<int64_t> starts, std::vector<int64_t> lengths);
  // From a checkpoint's TensorSliceProto (an extent without a length is full). DataLoss naming
  // `what` for negative starts or lengths.
  static TensorSlice FromProto(const tensorflow::TensorSliceProto& proto, std::string_view what);
  // TF's slice text: "-" or "start,length" per dimension, joined by ':'. InvalidArgument.
  static TensorSlice Parse(std::string_view text);

  int dims() const { return static_cast<int>(starts_.size()); }
  int64_t start(int d) const { return starts_[d]; }
  int64_t length(int d) const { return lengths_[d]; }
  bool IsFullAt(int d) const { return lengths_[d] == kFullExtent && starts_[d] == 0; }
  // The end of dimension d inside a tensor of `shape` (the dimension's size when full).
  int64_t end(int d, const TensorShape& shape) const {
    return IsFullAt(d) ? shape.dim_size(d) : starts_[d] + lengths_[d];
  }
  // Whether the slice lies inside `shape` (same rank, every extent within its dimension).
  bool FitsIn(const TensorShape& shape) const;
  // The slice's own shape inside a tensor of `shape` (which it must fit).
  TensorShape ShapeIn(const TensorShape& shape) const;
  // How many elements of a tensor of `shape` lie in both this slice and `other` (0 when they
  // are disjoint). Both must fit `shape`.
  int64_t IntersectionSize(const TensorSlice& other, const TensorShape& shape) const;
  // "0,4:-", TF's DebugString.
  std::string DebugString() const;
  // As TF's AsProto: full extents are left empty.
  tensorflow::TensorSliceProto ToProto() const;

 private:
  std::vector<int64_t> starts_;
  std::vector<int64_t> lengths_;
};

// One element of SaveV2/RestoreV2's shape_and_slices: the full tensor's shape and the slice.
struct ShapeAndSlice {
  TensorShape full_shape;
  TensorSlice slice;
};
// Parses "dim0 dim1 ... slice" (TF's ParseShapeAndSlice), e.g. "10 4 0,5:-". InvalidArgument
// naming the text when it is malformed, when ranks differ or when the slice does not fit.
ShapeAndSlice ParseShapeAndSlice(std::string_view text);

// What FindOverlap found among a tensor's slices.
struct SliceOverlap {
  enum Outcome {
    kDisjoint,   // no two slices share an element
    kOverlap,    // slices[first] and slices[second] share one
    kUndecided,  // the comparisons allowed ran out first
  };
  Outcome outcome = kDisjoint;
  size_t first = 0, second = 0;
  int64_t comparisons = 0;  // pairs of slices compared
};
// Looks for two of `slices` (each fitting `shape`) that share an element, comparing at most
// `max_comparisons` pairs. It sweeps along the dimension where the slices' starts differ most,
// comparing each slice only with those still open there: slices partitioning one axis (what
// TF's partitioners write) cost one comparison each after an O(n log n) sort. Layouts woven so
// that many slices are open together cost up to n^2 / 2, hence the bound.
SliceOverlap FindOverlap(const std::vector<TensorSlice>& slices, const TensorShape& shape,
                         int64_t max_comparisons);

// The bundle key TF stores a slice of the tensor `name` under (its EncodeTensorNameSlice: an
// OrderedCode of 0, the name, the rank and each extent's start and length). Begins with a 0
// byte, which no variable name does.
std::string EncodeTensorNameSlice(std::string_view name, const TensorSlice& slice);

// Copies the part of `src` (the slice `src_slice` of a tensor of `full_shape`) that lies in
// `dst_slice` into `dst` (that slice's values); returns the number of elements copied. dtypes
// must match; both slices must fit `full_shape`.
int64_t CopyIntersection(const Tensor& src, const TensorSlice& src_slice, const TensorShape& full_shape,
                         const TensorSlice& dst_slice, Tensor* dst);

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_TENSOR_SLICE_H_
