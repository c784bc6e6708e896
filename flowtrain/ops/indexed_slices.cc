#include "flowtrain/ops/indexed_slices.h"

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain::ops {

GradientValue::GradientValue(Output dense) : dense_(std::move(dense)) {}

GradientValue::GradientValue(IndexedSlices slices) {
  if (!slices.values || !slices.indices || !slices.dense_shape) {
    InvalidArgument("IndexedSlices need values, indices and dense_shape");
  }
  sparse_ = std::move(slices);
}

const Output& GradientValue::dense() const {
  if (sparse_) {
    InvalidArgument("The gradient ", sparse_->values.name(),
                    " is IndexedSlices (sparse); convert it with ops::ToDense() or use its slices()");
  }
  return dense_;
}

const IndexedSlices& GradientValue::slices() const {
  if (!sparse_) Internal("GradientValue::slices() called on a dense gradient");
  return *sparse_;
}

Output IndexedSlicesToDense(const IndexedSlices& slices, std::string_view name) {
  Output rows = StridedSlice(slices.dense_shape, {0}, {1}, {1}, {.shrink_axis_mask = 1});
  return UnsortedSegmentSum(slices.values, slices.indices, rows, name);
}

Output ToDense(const GradientValue& g) {
  return g.is_sparse() ? IndexedSlicesToDense(g.slices()) : g.dense();
}

IndexedSlices AsIndexedSlices(const Output& dense) {
  Output shape = Shape(dense);
  Output rows = StridedSlice(shape, {0}, {1}, {1}, {.shrink_axis_mask = 1});
  return {dense, Range(Const(int32_t{0}), rows, Const(int32_t{1})), shape};
}

IndexedSlices DeduplicateIndexedSlices(const IndexedSlices& slices) {
  auto [unique_indices, positions] = Unique(slices.indices);
  Output count = StridedSlice(Shape(unique_indices), {0}, {1}, {1}, {.shrink_axis_mask = 1});
  return {UnsortedSegmentSum(slices.values, positions, count), unique_indices, slices.dense_shape};
}

GradientValue AggregateGradients(const std::vector<GradientValue>& grads) {
  std::vector<GradientValue> present;
  bool any_sparse = false;
  for (const GradientValue& g : grads) {
    if (!g) continue;
    present.push_back(g);
    any_sparse = any_sparse || g.is_sparse();
  }
  if (present.empty()) return {};
  if (present.size() == 1) return present[0];
  if (!any_sparse) {
    std::vector<Output> dense;
    for (const GradientValue& g : present) dense.push_back(g.dense());
    return AddN(dense);
  }
  std::vector<IndexedSlices> slices;
  for (const GradientValue& g : present)
    slices.push_back(g.is_sparse() ? g.slices() : AsIndexedSlices(g.dense()));
  // One index type for the concatenation: int64 if any is (TF casts the same way).
  bool any_int64 = false;
  for (const IndexedSlices& s : slices) any_int64 = any_int64 || s.indices.dtype() == DT_INT64;
  std::vector<Output> values, indices;
  for (const IndexedSlices& s : slices) {
    values.push_back(s.values);
    indices.push_back(any_int64 && s.indices.dtype() != DT_INT64 ? Cast(s.indices, DT_INT64) : s.indices);
  }
  return IndexedSlices{Concat(values, 0), Concat(indices, 0), slices.front().dense_shape};
}

IndexedSlices GatherRowsGradient(const Output& params_shape, const Output& indices, const Output& dy) {
  Output size = ExpandDims(Size(indices), 0);
  Output inner = StridedSlice(params_shape, {1}, {0}, {1}, {.end_mask = 1});
  Output values = Reshape(dy, ConcatV2({size, inner}, Const(int32_t{0})));
  return {values, Reshape(indices, size), params_shape};
}

}  // namespace flowtrain::ops
