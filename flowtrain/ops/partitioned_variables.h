// Partitioned variables (TF1's get_variable(..., partitioner=...)): one logical variable kept as
// several variables, each a slice of it along one axis, saved into checkpoints as slices of the
// one full tensor so that any partitioning — or none — restores from any other.
//
//   ops::PartitionedVariable w = ops::GetVariable("w", {10, 4}, DT_FLOAT, ops::ZerosInitializer(),
//                                                 {.partitioner = ops::FixedSizePartitioner(3)});
//   // parts "w/part_0" [4,4], "w/part_1" [3,4], "w/part_2" [3,4] (TF's row split: the first
//   // 10 % 3 parts get one row more)
//   Output y = ops::MatMul(x, w);            // the parts concatenated (TF's as_tensor)
//   std::vector<Variable> shards = w.parts(); // e.g. for an embedding lookup
//   train::Saver saver;                       // saves key "w" as three slices of [10,4]
//
// Each part is an ordinary Variable (in GLOBAL_VARIABLES, and TRAINABLE_VARIABLES when
// trainable, so optimizers give each part its own slots) carrying a SaveSliceInfo: where it
// sits in the full variable. The Saver saves a part under the full name with its slice spec;
// the MetaGraph's VariableDef keeps it (save_slice_info_def), as TF's do.
//
// Partitioners return the number of parts along each axis (one axis only may exceed 1), as TF's.
// Errors: InvalidArgument with TF's message for a shape of rank 0, a partition list of the
// wrong rank, zero parts or more than one partitioned axis, and for a name taken by an
// unpartitioned variable. The parts' initializers see the part's shape (see tf_behaviour.md).
#ifndef FLOWTRAIN_OPS_PARTITIONED_VARIABLES_H_
#define FLOWTRAIN_OPS_PARTITIONED_VARIABLES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/core/types.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/variable_scope.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/proto/variable.pb.h"

namespace flowtrain::ops {

// TF's Variable.SaveSliceInfo: the part of the full variable `full_name` that one variable
// holds (an offset and a shape within full_shape).
struct SaveSliceInfo {
  std::string full_name;
  std::vector<int64_t> full_shape;
  std::vector<int64_t> var_offset;
  std::vector<int64_t> var_shape;

  // The slice spec SaveV2 and RestoreV2 take, "10 4 0,4:0,4" (TF's SaveSliceInfo.spec).
  std::string Spec() const;
  tensorflow::SaveSliceInfoDef ToProto() const;
  // InvalidArgument naming `variable` when the lengths differ or the slice leaves the shape.
  static SaveSliceInfo FromProto(const tensorflow::SaveSliceInfoDef& def, std::string_view variable);
  bool operator==(const SaveSliceInfo&) const = default;
};

// Records that `variable` is the slice `info` of a full variable (TF's _set_save_slice_info),
// replacing any earlier record; kept in the variable's graph, so handles recreated from the
// graph (Variable::FromGraph) find it too.
void SetSaveSliceInfo(const Variable& variable, SaveSliceInfo info);
// The SaveSliceInfo of `variable`, or nullopt for an ordinary variable.
std::optional<SaveSliceInfo> GetSaveSliceInfo(const Variable& variable);

// Given the full variable's shape and dtype, the number of parts along each axis.
using Partitioner = std::function<std::vector<int>(const TensorShape& shape, DataType dtype)>;

// tf.compat.v1.fixed_size_partitioner: `num_shards` parts along `axis` (at most one per row).
Partitioner FixedSizePartitioner(int num_shards, int axis = 0);
// tf.compat.v1.min_max_variable_partitioner: parts of at least `min_slice_size` bytes each (at
// least one part), at most `max_partitions` and at most the axis's size. Strings count
// `bytes_per_string_element` bytes an element.
Partitioner MinMaxVariablePartitioner(int max_partitions = 1, int axis = 0,
                                      int64_t min_slice_size = 256 << 10,
                                      int64_t bytes_per_string_element = 16);
// tf.compat.v1.variable_axis_size_partitioner: as few parts along `axis` as keep each under
// `max_shard_bytes` (a part holds at least one slice of the axis), at most `max_shards`.
// InvalidArgument unless max_shard_bytes, bytes_per_string_element and max_shards are positive.
Partitioner VariableAxisSizePartitioner(int64_t max_shard_bytes, int axis = 0,
                                        int64_t bytes_per_string_element = 16,
                                        std::optional<int> max_shards = std::nullopt);

// TF's PartitionedVariable: the parts of one variable, in order along the partitioned axis.
// A value handle (copies share the graph's variables); thread-compatible.
class PartitionedVariable {
 public:
  PartitionedVariable() = default;
  // `parts` as GetVariable makes them: each with a SaveSliceInfo of full name `name`.
  PartitionedVariable(std::string name, TensorShape shape, DataType dtype, std::vector<Variable> parts,
                      std::vector<int> partitions);

  // The full variable's name with its variable scope ("dense/w"), its shape and dtype.
  const std::string& name() const { return name_; }
  const TensorShape& shape() const { return shape_; }
  DataType dtype() const { return dtype_; }
  // The parts ("<name>/part_0", ...).
  const std::vector<Variable>& parts() const { return parts_; }
  // Parts per axis, as the partitioner gave them (TF's _get_partitions).
  const std::vector<int>& partitions() const { return partitions_; }

  // The full value, TF's as_tensor/_concat: the parts' values concatenated along the
  // partitioned axis ("<name>/ConcatPartitions/concat"), then an Identity named `<name>` at
  // the root scope; one part is only the Identity. Built anew (in the current control
  // context) on every call.
  Output AsTensor() const;
  operator Output() const { return AsTensor(); }  // NOLINT: used as a tensor, as in TF

 private:
  std::string name_;
  TensorShape shape_;
  DataType dtype_ = DT_INVALID;
  std::vector<Variable> parts_;
  std::vector<int> partitions_;
};

struct PartitionedGetVariableOptions {
  Partitioner partitioner;
  // What each part is created with (trainable, collections, use_resource).
  GetVariableOptions variable = {};
};

// tf.get_variable with a partitioner: the parts "<scope>/<name>/part_<i>", each created (or,
// under reuse, found) by GetVariable with its slice of `shape` and `initializer`, sliced along
// the axis the partitioner picks with TF's split (the first dim % n parts one larger).
PartitionedVariable GetVariable(std::string_view name, const TensorShape& shape, DataType dtype,
                                Initializer initializer, const PartitionedGetVariableOptions& options);

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_PARTITIONED_VARIABLES_H_
