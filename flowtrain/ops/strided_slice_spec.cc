#include "flowtrain/ops/strided_slice_spec.h"

#include <algorithm>

#include "flowtrain/core/error.h"

namespace flowtrain {
namespace {

constexpr int64_t kNewAxis = -1;
constexpr int64_t kShrinkAxis = -2;

bool Bit(int64_t mask, int i) { return (mask >> i) & 1; }

// The specification expanded to one entry per input dimension: the ellipsis becomes full
// ranges, new axes are remembered only for the final shape.
struct DenseSpec {
  std::vector<int64_t> begin, end, stride;
  std::vector<bool> begin_masked, end_masked, shrink;
  // Per output dimension of the processing shape: the dense index, kNewAxis or kShrinkAxis.
  std::vector<int64_t> final_shape_gather;
};

DenseSpec BuildDenseSpec(int rank, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                         const std::vector<int64_t>& strides, StridedSliceMasks masks) {
  int sparse_dims = static_cast<int>(begin.size());
  // Without an ellipsis, an implicit one at the end keeps the trailing dimensions whole.
  bool ellipsis_seen = false;
  int new_axes_after_ellipsis = 0;
  for (int i = 0; i < sparse_dims; ++i) {
    if (ellipsis_seen && Bit(masks.new_axis_mask, i)) ++new_axes_after_ellipsis;
    if (Bit(masks.ellipsis_mask, i)) {
      if (ellipsis_seen) InvalidArgument("Multiple ellipses in slice spec not allowed");
      ellipsis_seen = true;
    }
  }
  if (!ellipsis_seen) {
    masks.ellipsis_mask |= int64_t{1} << sparse_dims;
    ++sparse_dims;
  }
  DenseSpec dense;
  dense.begin.assign(rank, 0);
  dense.end.assign(rank, 0);
  dense.stride.assign(rank, 1);
  dense.begin_masked.assign(rank, false);
  dense.end_masked.assign(rank, false);
  dense.shrink.assign(rank, false);
  int full = 0;
  for (int i = 0; i < sparse_dims; ++i) {
    if (Bit(masks.ellipsis_mask, i)) {
      const int next = std::min(rank - (sparse_dims - i) + 1 + new_axes_after_ellipsis, rank);
      for (; full < next; ++full) {
        dense.begin_masked[full] = dense.end_masked[full] = true;
        dense.final_shape_gather.push_back(full);
      }
    } else if (Bit(masks.new_axis_mask, i)) {
      dense.final_shape_gather.push_back(kNewAxis);
    } else {
      if (full >= rank) {
        InvalidArgument("Index out of range using input dim ", full, "; input has only ", rank, " dims");
      }
      dense.begin[full] = begin[i];
      dense.end[full] = end[i];
      dense.stride[full] = strides[i];
      dense.begin_masked[full] = Bit(masks.begin_mask, i);
      dense.end_masked[full] = Bit(masks.end_mask, i);
      if (Bit(masks.shrink_axis_mask, i)) {
        dense.shrink[full] = true;
        dense.final_shape_gather.push_back(kShrinkAxis);
      } else {
        dense.final_shape_gather.push_back(full);
      }
      ++full;
    }
  }
  return dense;
}

}  // namespace

StridedSliceSpec ResolveStridedSlice(const PartialTensorShape& input, const std::vector<int64_t>& begin,
                                     const std::vector<int64_t>& end, const std::vector<int64_t>& strides,
                                     const StridedSliceMasks& masks) {
  if (begin.size() != end.size() || begin.size() != strides.size()) {
    InvalidArgument(
        "Expected begin, end, and strides to be 1D equal size tensors, but got "
        "shapes [",
        begin.size(), "], [", end.size(), "], and [", strides.size(), "] instead.");
  }
  if (begin.size() > 32) InvalidArgument("StridedSlice supports at most 32 indices, got ", begin.size());
  const int rank = input.dims();
  const DenseSpec dense = BuildDenseSpec(rank, begin, end, strides, masks);
  StridedSliceSpec spec;
  spec.begin.resize(rank);
  spec.stride.resize(rank);
  spec.size.resize(rank);
  spec.is_identity = true;
  for (int d = 0; d < rank; ++d) {
    int64_t b = dense.begin[d];
    int64_t e = dense.end[d];
    int64_t s = dense.stride[d];
    const int64_t dim = input.dim_size(d);
    if (s == 0) InvalidArgument("strides[", d, "] must be non-zero");
    if (dense.shrink[d]) {
      // x[i] takes one element; the stride does not matter.
      s = 1;
      if (dim >= 0) {
        const int64_t forward = b < 0 ? dim + b : b;
        if (forward < 0 || forward >= dim) {
          InvalidArgument("slice index ", b, " of dimension ", d, " out of bounds.");
        }
        b = forward;
      }
      spec.begin[d] = b;
      spec.stride[d] = 1;
      spec.size[d] = 1;
      spec.is_identity = spec.is_identity && dim == 1;
      continue;
    }
    if (dim < 0) {
      spec.begin[d] = b;
      spec.stride[d] = s;
      spec.size[d] = -1;
      spec.is_identity = false;
      continue;
    }
    // Canonical bounds: masks take the whole range in the stride's direction; negative
    // indices count from the end; everything is clamped into range.
    const int64_t lo = s > 0 ? 0 : -1;
    const int64_t hi = s > 0 ? dim : dim - 1;
    auto canonical = [&](int64_t x, bool masked, bool is_begin) {
      if (masked) return (s > 0) == is_begin ? lo : hi;
      const int64_t forward = x < 0 ? dim + x : x;
      return std::clamp(forward, lo, hi);
    };
    b = canonical(b, dense.begin_masked[d], true);
    e = canonical(e, dense.end_masked[d], false);
    const int64_t length = e - b;
    int64_t size = 0;
    if (length != 0 && (length < 0) == (s < 0)) size = length / s + (length % s != 0 ? 1 : 0);
    spec.begin[d] = b;
    spec.stride[d] = s;
    spec.size[d] = size;
    spec.is_identity = spec.is_identity && b == 0 && s == 1 && size == dim;
  }
  DimVector final_dims;
  for (int64_t g : dense.final_shape_gather) {
    if (g == kNewAxis) {
      final_dims.push_back(1);
    } else if (g >= 0) {
      final_dims.push_back(spec.size[g]);
    }
  }
  spec.final_shape = PartialTensorShape(std::span<const int64_t>(final_dims.data(), final_dims.size()));
  return spec;
}

}  // namespace flowtrain
