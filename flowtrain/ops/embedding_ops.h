// tf.nn.embedding_lookup: the rows `ids` of an embedding table held whole or split into
// partitions (a list of variables or tensors whose rows together make the table), built as TF
// 1.15 builds it, so that node names ("embedding_lookup", "embedding_lookup/...") and results
// match and the gradient into each partition is sparse (IndexedSlices naming the rows read,
// see ops/indexed_slices.h), which optimizers apply to those rows only.
//
//   Variable table(ops::RandomNormal({1000, 16}), {.name = "embedding"});
//   Output rows = ops::EmbeddingLookup(table, ids);                       // [ids..., 16]
//   Output split = ops::EmbeddingLookup({part0, part1}, ids, {.partition_strategy = "div"});
//
// One table: a Gather of its rows (a ResourceGather for a resource variable), then an
// Identity. Several: the ids are assigned to partitions by `partition_strategy` ("mod": id p
// lives in partition p % n as row p / n; "div": partitions hold consecutive ranges, the first
// (rows % n) one row longer), split with DynamicPartition, gathered per partition and put back
// in order with ParallelDynamicStitch. With max_norm, each embedding longer than it (L2) is
// scaled down to it (tf.clip_by_norm along the embedding's axes).
//
// An id outside the table fails the run with InvalidArgument naming the id ("indices[3] =
// 1005 is not in [0, 1000)") and the gather ("embedding_lookup"); nothing is read out of bounds.
// A PartitionedVariable's list of Variables converts: {parts.begin(), parts.end()}.
#ifndef FLOWTRAIN_OPS_EMBEDDING_OPS_H_
#define FLOWTRAIN_OPS_EMBEDDING_OPS_H_

#include <optional>
#include <string>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/variables.h"

namespace flowtrain::ops {

// One table or partition: a variable (read as TF reads it: through its snapshot, or with
// ResourceGather when it is a resource variable) or any tensor of rank >= 1.
class EmbeddingParam {
 public:
  EmbeddingParam(const Variable& variable);  // NOLINT(google-explicit-constructor)
  EmbeddingParam(const Output& tensor);      // NOLINT(google-explicit-constructor)

  // The rows `ids` of this table, by an op named `name` (exactly `name`, a full name, when
  // `exact_name`; else made unique in the current scope).
  Output Gather(const Output& ids, std::string_view name, bool exact_name) const;
  const PartialTensorShape& shape() const;
  DataType dtype() const;
  Operation op() const;  // what the gather is colocated with

 private:
  std::optional<Variable> variable_;
  Output tensor_;
};

struct EmbeddingLookupOptions {
  // "mod" or "div" (InvalidArgument otherwise); unused with one table.
  std::string partition_strategy = "mod";
  // Clip each embedding to this L2 norm when set.
  std::optional<float> max_norm;
  std::string name = "embedding_lookup";
};

// The embeddings of `ids` (int32 or int64, any shape): shape ids.shape + the row shape.
// InvalidArgument for an empty `params`, a strategy other than mod/div, or ids not integers.
Output EmbeddingLookup(const std::vector<EmbeddingParam>& params, const Output& ids,
                       const EmbeddingLookupOptions& options = {});
Output EmbeddingLookup(const EmbeddingParam& params, const Output& ids,
                       const EmbeddingLookupOptions& options = {});

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_EMBEDDING_OPS_H_
