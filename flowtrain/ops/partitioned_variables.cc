#include "flowtrain/ops/partitioned_variables.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/array_ops.h"

namespace flowtrain::ops {
namespace {

// Graph collection of the variables' SaveSliceInfos (not one TF has: TF keeps the info on the
// Python variable object, which flowtrain's value handles cannot hold).
constexpr std::string_view kSaveSliceInfosKey = "__save_slice_infos";

struct SliceInfoRecord {
  std::string variable;  // op name
  SaveSliceInfo info;
};

std::string ListString(const std::vector<int>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) StrAppend(&out, i > 0 ? ", " : "", values[i]);
  return out + "]";
}

void CheckAxis(int axis, const TensorShape& shape) {
  if (axis < 0 || axis >= shape.dims()) {
    InvalidArgument("Can not partition variable along axis ", axis, " when shape is only ",
                    shape.DebugString());
  }
}

int64_t BytesPerElement(DataType dtype, int64_t bytes_per_string_element) {
  return BaseType(dtype) == DT_STRING ? bytes_per_string_element : static_cast<int64_t>(DataTypeSize(dtype));
}

// TF's _call_partitioner checks.
std::vector<int> CallPartitioner(const Partitioner& partitioner, const std::string& name,
                                 const TensorShape& shape, DataType dtype) {
  if (shape.dims() < 1) {
    InvalidArgument("A partitioned Variable must have rank at least 1, shape: ", shape.DebugString(),
                    " (variable ", name, ")");
  }
  const std::vector<int> slicing = partitioner(shape, dtype);
  if (static_cast<int>(slicing.size()) != shape.dims()) {
    InvalidArgument("Partitioner returned a partition list that does not match the Variable's rank: ",
                    ListString(slicing), " vs. ", shape.DebugString(), " (variable ", name, ")");
  }
  if (std::any_of(slicing.begin(), slicing.end(), [](int p) { return p < 1; })) {
    InvalidArgument("Partitioner returned zero partitions for some axes: ", ListString(slicing),
                    " (variable ", name, ")");
  }
  if (std::count_if(slicing.begin(), slicing.end(), [](int p) { return p > 1; }) > 1) {
    InvalidArgument("Can only slice a variable along one dimension: shape: ", shape.DebugString(),
                    ", partitioning: ", ListString(slicing), " (variable ", name, ")");
  }
  return slicing;
}

}  // namespace

std::string SaveSliceInfo::Spec() const {
  std::string spec;
  for (int64_t d : full_shape) StrAppend(&spec, d, " ");
  for (size_t d = 0; d < var_offset.size(); ++d)
    StrAppend(&spec, d > 0 ? ":" : "", var_offset[d], ",", var_shape[d]);
  return spec;
}

tensorflow::SaveSliceInfoDef SaveSliceInfo::ToProto() const {
  tensorflow::SaveSliceInfoDef def;
  def.set_full_name(full_name);
  for (int64_t d : full_shape) def.add_full_shape(d);
  for (int64_t d : var_offset) def.add_var_offset(d);
  for (int64_t d : var_shape) def.add_var_shape(d);
  return def;
}

SaveSliceInfo SaveSliceInfo::FromProto(const tensorflow::SaveSliceInfoDef& def, std::string_view variable) {
  SaveSliceInfo info{.full_name = def.full_name(),
                     .full_shape = {def.full_shape().begin(), def.full_shape().end()},
                     .var_offset = {def.var_offset().begin(), def.var_offset().end()},
                     .var_shape = {def.var_shape().begin(), def.var_shape().end()}};
  const size_t rank = info.full_shape.size();
  if (info.full_name.empty() || info.var_offset.size() != rank || info.var_shape.size() != rank) {
    InvalidArgument("The save_slice_info_def of variable ", variable, " is malformed: full_name '",
                    info.full_name, "', ", rank, " full dimensions, ", info.var_offset.size(), " offsets, ",
                    info.var_shape.size(), " part dimensions");
  }
  for (size_t d = 0; d < rank; ++d) {
    if (info.var_offset[d] < 0 || info.var_shape[d] < 0 || info.var_offset[d] > info.full_shape[d] ||
        info.var_shape[d] > info.full_shape[d] - info.var_offset[d]) {
      InvalidArgument("The save_slice_info_def of variable ", variable, " puts the part outside ",
                      info.full_name, "'s shape in dimension ", d);
    }
  }
  return info;
}

void SetSaveSliceInfo(const Variable& variable, SaveSliceInfo info) {
  variable.graph()->AddToCollection(
      kSaveSliceInfosKey, SliceInfoRecord{.variable = variable.op().name(), .info = std::move(info)});
}

std::optional<SaveSliceInfo> GetSaveSliceInfo(const Variable& variable) {
  if (!variable) return std::nullopt;
  const std::vector<SliceInfoRecord> records =
      variable.graph()->GetCollection<SliceInfoRecord>(kSaveSliceInfosKey);
  const std::string name = variable.op().name();
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    if (it->variable == name) return it->info;
  }
  return std::nullopt;
}

Partitioner FixedSizePartitioner(int num_shards, int axis) {
  FT_REQUIRE(num_shards >= 1, "FixedSizePartitioner: num_shards must be positive, got ", num_shards);
  return [num_shards, axis](const TensorShape& shape, DataType) {
    CheckAxis(axis, shape);
    std::vector<int> partitions(shape.dims(), 1);
    partitions[axis] = static_cast<int>(std::min<int64_t>(num_shards, shape.dim_size(axis)));
    return partitions;
  };
}

Partitioner MinMaxVariablePartitioner(int max_partitions, int axis, int64_t min_slice_size,
                                      int64_t bytes_per_string_element) {
  FT_REQUIRE(max_partitions >= 1, "max_partitions must be >= 1, not ", max_partitions);
  FT_REQUIRE(min_slice_size > 0, "MinMaxVariablePartitioner: min_slice_size must be positive, got ",
             min_slice_size);
  return [=](const TensorShape& shape, DataType dtype) {
    CheckAxis(axis, shape);
    const double total_bytes = static_cast<double>(shape.num_elements()) *
                               static_cast<double>(BytesPerElement(dtype, bytes_per_string_element));
    const double wanted = std::ceil(total_bytes / static_cast<double>(min_slice_size));
    std::vector<int> partitions(shape.dims(), 1);
    partitions[axis] = static_cast<int>(std::max<double>(
        1,
        std::min({static_cast<double>(shape.dim_size(axis)), static_cast<double>(max_partitions), wanted})));
    return partitions;
  };
}

Partitioner VariableAxisSizePartitioner(int64_t max_shard_bytes, int axis, int64_t bytes_per_string_element,
                                        std::optional<int> max_shards) {
  if (max_shard_bytes < 1 || bytes_per_string_element < 1) {
    InvalidArgument(
        "Both max_shard_bytes and bytes_per_string_element must be positive. Currently, "
        "max_shard_bytes is ",
        max_shard_bytes, " and bytes_per_string_element is ", bytes_per_string_element);
  }
  if (max_shards && *max_shards < 1) InvalidArgument("max_shards must be positive.");
  return [=](const TensorShape& shape, DataType dtype) {
    CheckAxis(axis, shape);
    std::vector<int> partitions(shape.dims(), 1);
    const int64_t rows = shape.dim_size(axis);
    const double bytes_per_slice =
        rows == 0 ? 0.0
                  : static_cast<double>(shape.num_elements()) / static_cast<double>(rows) *
                        static_cast<double>(BytesPerElement(dtype, bytes_per_string_element));
    // An empty slice fits any number of times: one shard (TF divides by zero here).
    const double slices_per_shard =
        bytes_per_slice == 0.0
            ? std::max<double>(1, static_cast<double>(rows))
            : std::max(1.0, std::floor(static_cast<double>(max_shard_bytes) / bytes_per_slice));
    int64_t shards = static_cast<int64_t>(std::ceil(static_cast<double>(rows) / slices_per_shard));
    if (max_shards) shards = std::min<int64_t>(*max_shards, shards);
    partitions[axis] = static_cast<int>(std::max<int64_t>(1, shards));
    return partitions;
  };
}

PartitionedVariable::PartitionedVariable(std::string name, TensorShape shape, DataType dtype,
                                         std::vector<Variable> parts, std::vector<int> partitions)
    : name_(std::move(name)),
      shape_(std::move(shape)),
      dtype_(dtype),
      parts_(std::move(parts)),
      partitions_(std::move(partitions)) {
  FT_REQUIRE(!parts_.empty(), "PartitionedVariable ", name_, " needs at least one part");
}

Output PartitionedVariable::AsTensor() const {
  Graph& graph = *parts_.front().graph();
  auto as_default = graph.AsDefault();
  if (parts_.size() == 1) {
    auto root = graph.NameScope("");
    return Identity(parts_.front().value(), name_);
  }
  const int axis =
      static_cast<int>(std::find_if(partitions_.begin(), partitions_.end(), [](int p) { return p > 1; }) -
                       partitions_.begin());
  Output concatenated;
  {
    auto scope = graph.NameScope(StrCat(name_, "/ConcatPartitions/"));
    std::vector<Output> values;
    for (const Variable& part : parts_) values.push_back(part.value());
    concatenated = Concat(values, axis);
  }
  auto root = graph.NameScope("");
  return Identity(concatenated, name_);
}

PartitionedVariable GetVariable(std::string_view name, const TensorShape& shape, DataType dtype,
                                Initializer initializer, const PartitionedGetVariableOptions& options) {
  Graph& graph = GetDefaultGraph();
  const std::string scope = CurrentVariableScopeName(&graph);
  const std::string full_name = scope.empty() ? std::string(name) : StrCat(scope, "/", name);
  if (!options.partitioner) InvalidArgument("GetVariable ", full_name, ": the partitioner is empty");
  if (const Node* existing = graph.FindNode(full_name);
      existing != nullptr && (existing->type() == "VariableV2" || existing->type() == "VarHandleOp")) {
    InvalidArgument(
        "A partitioner was provided, but an unpartitioned version of the variable was found: ", full_name,
        ".  Perhaps a variable of the same name was already created without partitioning?");
  }
  const std::vector<int> partitions = CallPartitioner(options.partitioner, full_name, shape, dtype);
  int axis = 0;
  for (int d = 0; d < shape.dims(); ++d) {
    if (partitions[d] > 1) axis = d;
  }
  const int64_t num_slices = partitions[axis];
  // TF's _iter_slices: the first `excess` parts get one more row than the others.
  const int64_t excess = shape.dim_size(axis) % num_slices;
  const int64_t min_rows = shape.dim_size(axis) / num_slices;
  std::vector<Variable> parts;
  std::vector<int64_t> offset(shape.dims(), 0);
  for (int64_t i = 0; i < num_slices; ++i) {
    TensorShape part_shape = shape;
    part_shape.set_dim(axis, min_rows + (i < excess ? 1 : 0));
    Variable part = GetVariable(StrCat(name, "/part_", i), part_shape, dtype, initializer, options.variable);
    SaveSliceInfo info{.full_name = full_name,
                       .full_shape = {shape.dim_sizes().begin(), shape.dim_sizes().end()},
                       .var_offset = offset,
                       .var_shape = {part_shape.dim_sizes().begin(), part_shape.dim_sizes().end()}};
    // A part found under reuse already carries its info.
    if (GetSaveSliceInfo(part) != info) SetSaveSliceInfo(part, std::move(info));
    parts.push_back(std::move(part));
    offset[axis] += part_shape.dim_size(axis);
  }
  return PartitionedVariable(full_name, shape, dtype, std::move(parts), partitions);
}

}  // namespace flowtrain::ops
