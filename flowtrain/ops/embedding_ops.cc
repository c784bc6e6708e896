#include "flowtrain/ops/embedding_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain::ops {
namespace {

// tf.clip_by_norm(t, max_norm, axes=[first_axis, rank)) as TF 1.15 builds it.
Output ClipByNorm(const Output& t, float max_norm, int64_t first_axis) {
  Graph& graph = *t.graph();
  OpNameScope scope(graph, "clip_by_norm");
  const int rank = t.shape().dims();
  if (rank < 0) InvalidArgument("embedding_lookup with max_norm needs embeddings of known rank");
  std::vector<int64_t> axes;
  for (int64_t a = first_axis; a < rank; ++a) axes.push_back(a);
  Output clip_norm = Cast(Const(max_norm, "clip_norm"), t.dtype());
  Output l2sum = ReduceSum(t * t, axes, /*keep_dims=*/true);
  Output pred = Greater(l2sum, Cast(Const(0.0f), t.dtype()));
  Output l2sum_safe = Select(pred, l2sum, OnesLike(l2sum));
  Output l2norm = Select(pred, Sqrt(l2sum_safe), l2sum);
  Output intermediate = t * clip_norm;
  Output clipped = intermediate / Maximum(l2norm, clip_norm);
  scope.Exit();
  return Identity(clipped, scope.op_name());
}

Output Clip(const Output& embeddings, const Output& ids, const std::optional<float>& max_norm) {
  if (!max_norm) return embeddings;
  if (ids.shape().unknown_rank()) InvalidArgument("embedding_lookup with max_norm needs ids of known rank");
  return ClipByNorm(embeddings, *max_norm, ids.shape().dims());
}

}  // namespace

EmbeddingParam::EmbeddingParam(const Variable& variable) : variable_(variable) {
  if (!variable) InvalidArgument("embedding_lookup: an empty Variable as params");
}

EmbeddingParam::EmbeddingParam(const Output& tensor) : tensor_(tensor) {
  if (!tensor) InvalidArgument("embedding_lookup: an empty Output as params");
}

Output EmbeddingParam::Gather(const Output& ids, std::string_view name, bool exact_name) const {
  const bool resource = variable_ && variable_->is_resource();
  NodeBuilder b(resource ? "ResourceGather" : "GatherV2", name);
  if (exact_name) b.ExactName();
  if (resource)
    return b.Input(variable_->ref()).Input(ids).Attr("dtype", variable_->dtype()).Finalize().output(0);
  Output axis = Const(int32_t{0}, "axis");
  return b.Input(variable_ ? variable_->value() : tensor_).Input(ids).Input(axis).Finalize().output(0);
}

const PartialTensorShape& EmbeddingParam::shape() const {
  return variable_ ? variable_->shape() : tensor_.shape();
}
DataType EmbeddingParam::dtype() const { return variable_ ? variable_->dtype() : tensor_.dtype(); }
Operation EmbeddingParam::op() const { return variable_ ? variable_->op() : tensor_.op(); }

Output EmbeddingLookup(const EmbeddingParam& params, const Output& ids,
                       const EmbeddingLookupOptions& options) {
  return EmbeddingLookup(std::vector<EmbeddingParam>{params}, ids, options);
}

Output EmbeddingLookup(const std::vector<EmbeddingParam>& params, const Output& ids,
                       const EmbeddingLookupOptions& options) {
  if (params.empty()) InvalidArgument("embedding_lookup: need at least one param");
  if (!ids || (ids.dtype() != DT_INT32 && ids.dtype() != DT_INT64)) {
    InvalidArgument("embedding_lookup: ids must be an int32 or int64 tensor, got ",
                    ids ? DataTypeString(ids.dtype()) : std::string("an empty Output"));
  }
  const int np = static_cast<int>(params.size());
  if (np > 1 && options.partition_strategy != "mod" && options.partition_strategy != "div") {
    InvalidArgument("Unrecognized partition strategy: ", options.partition_strategy);
  }
  for (const EmbeddingParam& p : params) {
    if (p.dtype() != params[0].dtype()) {
      InvalidArgument("embedding_lookup: the partitions hold different dtypes: ", DataTypeString(p.dtype()),
                      " and ", DataTypeString(params[0].dtype()));
    }
  }
  Graph& graph = *ids.graph();
  auto as_default = graph.AsDefault();
  OpNameScope scope(graph, options.name);
  if (np == 1) {
    Output result;
    {
      auto colocate = graph.ColocateWith(params[0].op());
      // The gather is named as the scope itself: "embedding_lookup".
      result = Clip(params[0].Gather(ids, scope.op_name(), /*exact_name=*/true), ids, options.max_norm);
    }
    return Identity(result, "Identity");
  }
  const DataType id_type = ids.dtype();
  auto id_const = [&](int64_t v, std::string_view name) {
    return id_type == DT_INT32 ? Const(static_cast<int32_t>(v), name) : Const(v, name);
  };
  Output flat_ids = Reshape(ids, {-1});
  Output original_indices = Range(Const(int32_t{0}), Size(flat_ids), Const(int32_t{1}));
  Output p_assignments, new_ids;
  if (options.partition_strategy == "mod") {
    p_assignments = FloorMod(flat_ids, id_const(np, "Const"));
    new_ids = FloorDiv(flat_ids, id_const(np, "Const"));
  } else {
    int64_t total = 0;
    bool known = true;
    for (const EmbeddingParam& p : params) {
      if (p.shape().unknown_rank() || p.shape().dims() < 1 || p.shape().dim_size(0) < 0) {
        known = false;
        break;
      }
      total += p.shape().dim_size(0);
    }
    if (!known)
      InvalidArgument("embedding_lookup with partition_strategy div needs partitions of known rows");
    Output num_total_ids = id_const(total, "Const");
    Output ids_per_partition = FloorDiv(num_total_ids, id_const(np, "Const"));
    Output extras = FloorMod(num_total_ids, id_const(np, "Const"));
    Output one = id_const(1, "Const");
    p_assignments =
        Maximum(FloorDiv(flat_ids, ids_per_partition + one), FloorDiv(flat_ids - extras, ids_per_partition));
    Output is_in_first_extras_partitions = Less(p_assignments, extras);
    Output new_ids_for_first = FloorMod(flat_ids, ids_per_partition + one);
    Output new_ids_for_rest = FloorMod(flat_ids - extras, ids_per_partition);
    new_ids = Select(is_in_first_extras_partitions, new_ids_for_first, new_ids_for_rest);
  }
  p_assignments = Cast(p_assignments, DT_INT32);
  std::vector<Output> gather_ids = DynamicPartition(new_ids, p_assignments, np);
  std::vector<Output> pindices = DynamicPartition(original_indices, p_assignments, np);
  std::vector<Output> partitioned;
  for (int p = 0; p < np; ++p) {
    auto colocate = graph.ColocateWith(params[p].op());
    partitioned.push_back(params[p].Gather(gather_ids[p], "GatherV2", /*exact_name=*/false));
  }
  Output stitched = NodeBuilder("ParallelDynamicStitch", scope.op_name())
                        .ExactName()
                        .Input(pindices)
                        .Input(partitioned)
                        .Finalize()
                        .output(0);
  // The row shape, which the partitions must have statically (TF falls back to the first
  // partition's dynamic shape; flowtrain's variables always know theirs).
  const PartialTensorShape& first = params[0].shape();
  std::vector<int32_t> row_dims;
  for (int d = 1; d < first.dims(); ++d) {
    if (first.dim_size(d) < 0) break;
    row_dims.push_back(static_cast<int32_t>(first.dim_size(d)));
  }
  if (first.unknown_rank() || static_cast<int>(row_dims.size()) != first.dims() - 1) {
    InvalidArgument("embedding_lookup over partitions needs partitions of known row shape, got ",
                    first.DebugString());
  }
  Output element_shape = Const(Tensor::FromVector<int32_t>(row_dims), "Const");
  Output ret = Reshape(stitched, Concat({Shape(ids), element_shape}, 0));
  return Clip(ret, ids, options.max_norm);
}

}  // namespace flowtrain::ops
