// Sparse gradients: IndexedSlices and GradientValue, TF's ops.IndexedSlices and the "Tensor or
// IndexedSlices" that tf.gradients hands around.
//
// Design. The gradient of a gather (GatherV2 along axis 0, ResourceGather) with respect to its
// params names only the rows it read: IndexedSlices{values, indices, dense_shape}, the dense
// gradient being zeros with values[i] added into row indices[i]. ops::Gradients keeps such
// gradients sparse while they flow back through ops whose gradient functions are registered
// sparse-aware (FT_REGISTER_SPARSE_GRADIENT: Identity, ReadVariableOp, Cast, the gathers), and
// converts them to dense (ToDense: UnsortedSegmentSum, TF's convert_to_tensor) before any other
// gradient function sees them, as TF's ops do implicitly. Several gradients reaching one tensor
// add up with AddN when all are dense, and are concatenated into one IndexedSlices when any is
// sparse (TF's _AggregateIndexedSlicesGradients; dense ones become slices of every row).
// Optimizers (train/optimizer.h) receive a GradientValue per variable and run the
// SparseApply* kernels on the rows named, so a step touches only those rows.
//
// The dense API stays as it was: ops::Gradients returns dense Outputs; a GradientValue converts
// implicitly to `const Output&` when it is dense and refuses (InvalidArgument) when it is
// sparse, so code written for dense gradients keeps working and a sparse one never turns into
// a dense tensor behind the user's back; ToDense() is the explicit conversion.
//
//   std::vector<ops::GradientValue> g = ops::GradientsWithIndexedSlices({loss}, {table.ref()});
//   if (g[0].is_sparse()) { Output rows = g[0].slices().indices; }
//   Output dense = ops::ToDense(g[0]);
#ifndef FLOWTRAIN_OPS_INDEXED_SLICES_H_
#define FLOWTRAIN_OPS_INDEXED_SLICES_H_

#include <optional>
#include <string_view>
#include <vector>

#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

// A sparse slice of a tensor of shape `dense_shape`: row indices[i] of it is values[i]
// (repeated indices add up). values: [n, d1, ...]; indices: int32 or int64 [n]; dense_shape:
// int32 or int64 [rank], (rows, d1, ...).
struct IndexedSlices {
  Output values;
  Output indices;
  Output dense_shape;

  DataType dtype() const { return values.dtype(); }
};

// A gradient: empty (no gradient), a dense Output, or IndexedSlices. Cheap to copy.
class GradientValue {
 public:
  GradientValue() = default;
  GradientValue(Output dense);          // NOLINT(google-explicit-constructor): the dense API
  GradientValue(IndexedSlices slices);  // NOLINT(google-explicit-constructor)

  explicit operator bool() const { return sparse_.has_value() || static_cast<bool>(dense_); }
  bool is_sparse() const { return sparse_.has_value(); }
  // The dense gradient (empty when there is none). InvalidArgument when it is IndexedSlices:
  // call ToDense() to convert it.
  const Output& dense() const;
  operator const Output&() const { return dense(); }  // NOLINT(google-explicit-constructor)
  // The slices; Internal error when the gradient is dense or empty.
  const IndexedSlices& slices() const;
  DataType dtype() const { return sparse_ ? sparse_->dtype() : dense_.dtype(); }

 private:
  Output dense_;
  std::optional<IndexedSlices> sparse_;
};

// The dense tensor of `slices`: UnsortedSegmentSum(values, indices, dense_shape[0]) (TF's
// _IndexedSlicesToTensor); duplicate indices add up.
Output IndexedSlicesToDense(const IndexedSlices& slices, std::string_view name = "UnsortedSegmentSum");
// `g` as a dense Output: itself when dense (or empty), IndexedSlicesToDense when sparse.
Output ToDense(const GradientValue& g);
// A dense tensor as slices of every row (TF's _as_indexed_slices): indices Range(rows).
IndexedSlices AsIndexedSlices(const Output& dense);
// The same slices with each index once, its values summed in the order they appear (TF's
// Optimizer._deduplicate_indexed_slices: Unique + UnsortedSegmentSum). The indices come out in
// order of first appearance.
IndexedSlices DeduplicateIndexedSlices(const IndexedSlices& slices);
// The sum of several gradients of one tensor: AddN when all are dense, else one IndexedSlices
// of the concatenated values and indices (TF's aggregation). Empty entries are skipped; an
// empty result when none is left.
GradientValue AggregateGradients(const std::vector<GradientValue>& grads);

// For gradient functions: the gradient of gathering the rows `indices` of a tensor of shape
// `params_shape` (an int32 vector) along axis 0, `dy` being the gradient of the gathered
// rows: IndexedSlices of dy's rows, one per index (TF's _GatherV2Grad and _GatherGrad).
IndexedSlices GatherRowsGradient(const Output& params_shape, const Output& indices, const Output& dy);

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_INDEXED_SLICES_H_
