#include "flowtrain/train/warm_starting.h"

#include <filesystem>
#include <optional>
#include <regex>
#include <set>
#include <string_view>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/runtime/device_spec.h"
#include "flowtrain/train/checkpoint_management.h"

namespace flowtrain::train {
namespace {

// TF's checkpoint_utils._get_checkpoint_filename: a directory stands for its latest checkpoint.
std::string CheckpointFilename(const std::string& ckpt_dir_or_file) {
  if (std::filesystem::is_directory(ckpt_dir_or_file)) {
    std::optional<std::string> latest = LatestCheckpoint(ckpt_dir_or_file);
    if (!latest)
      NotFound("Couldn't find 'checkpoint' file or checkpoints in given directory ", ckpt_dir_or_file);
    return *latest;
  }
  if (!CheckpointExists(ckpt_dir_or_file)) {
    NotFound("Unsuccessful TensorSliceReader constructor: Failed to find any matching files for ",
             ckpt_dir_or_file);
  }
  return ckpt_dir_or_file;
}

// A variable and the checkpoint tensor its initializer is to read.
struct Assignment {
  Variable variable;
  std::string tensor_name;
};

// The variables InitFromCheckpoint finds by name: global and local, by op name.
std::map<std::string, Variable> VariablesByName(Graph& graph) {
  std::map<std::string, Variable> by_name;
  for (const Variable& v : ops::GlobalVariables(&graph)) by_name.emplace(v.op().name(), v);
  for (const Variable& v : ops::LocalVariables(&graph)) by_name.emplace(v.op().name(), v);
  return by_name;
}

// TF's scope-to-scope expansion of one assignment_map entry whose value names no variable.
void ExpandScope(const std::string& tensor_name_in_ckpt, const std::string& current_name,
                 const std::map<std::string, Variable>& variables, const std::string& ckpt_dir_or_file,
                 const io::CheckpointReader& reader, std::vector<Assignment>& out) {
  const size_t slash = current_name.rfind('/');
  const std::string scope = slash == std::string::npos ? "" : current_name.substr(0, slash);
  if (tensor_name_in_ckpt.empty() || tensor_name_in_ckpt.back() != '/') {
    InvalidArgument("Assignment map with scope only name ", scope, " should map to scope only ",
                    tensor_name_in_ckpt, ". Should be 'scope/': 'other_scope/'. (No variable is named '",
                    current_name, "'.)");
  }
  for (const auto& [var_name, variable] : variables) {
    if (!scope.empty() && !var_name.starts_with(scope + "/")) continue;
    // The rest of the name after the scope; "/" as the graph side keeps the whole name, "/" as
    // the checkpoint side adds no prefix.
    std::string full_tensor_name = var_name.substr(scope.size());
    if (current_name != "/") full_tensor_name.erase(0, 1);
    if (tensor_name_in_ckpt != "/") full_tensor_name = tensor_name_in_ckpt + full_tensor_name;
    if (full_tensor_name.ends_with('/')) full_tensor_name.pop_back();
    if (!reader.HasTensor(full_tensor_name)) {
      NotFound("Tensor ", full_tensor_name, " (",
               var_name.substr(std::min(var_name.size(), scope.size() + 1)), " in ", tensor_name_in_ckpt,
               ") is not found in ", ckpt_dir_or_file, " checkpoint");
    }
    out.push_back({variable, full_tensor_name});
  }
}

// Refuses a tensor the checkpoint lacks or one whose shape or dtype is not the variable's.
void CheckAssignment(const Assignment& a, const std::map<std::string, TensorShape>& shapes,
                     const std::map<std::string, DataType>& dtypes, const std::string& ckpt_dir_or_file) {
  auto shape = shapes.find(a.tensor_name);
  if (shape == shapes.end()) {
    NotFound("Tensor ", a.tensor_name, " is not found in ", ckpt_dir_or_file, " checkpoint (to initialize ",
             a.variable.name(), ")");
  }
  if (!a.variable.shape().IsCompatibleWith(shape->second)) {
    InvalidArgument("Shape of variable ", a.variable.name(), " (", a.variable.shape().DebugString(),
                    ") doesn't match with shape of tensor ", a.tensor_name, " (", shape->second.DebugString(),
                    ") from checkpoint reader.");
  }
  const DataType dtype = BaseType(a.variable.dtype());
  // Beyond TF, which fails only when the init op runs.
  if (dtypes.at(a.tensor_name) != dtype) {
    InvalidArgument("Variable ", a.variable.name(), " is ", DataTypeString(dtype), " but tensor ",
                    a.tensor_name, " in checkpoint ", ckpt_dir_or_file, " is ",
                    DataTypeString(dtypes.at(a.tensor_name)));
  }
}

// TF's _set_checkpoint_initializer: the variable's initializer now assigns a RestoreV2 of
// `tensor_name` from `ckpt_file`, built on the variable's device with CPU:0 filled in (the
// restore op runs only on the CPU; it is not colocated with the variable, as in TF).
void SetCheckpointInitializer(const Variable& variable, const std::string& ckpt_file,
                              const std::string& tensor_name) {
  Graph& g = *variable.graph();
  auto no_controls = g.ClearControlDependencies();
  auto as_default = g.AsDefault();
  DeviceSpec device = DeviceSpec::Parse(variable.op().device());
  device.device_type = "CPU";
  device.device_index = 0;
  auto on_cpu = g.Device(device.ToString());
  OpNameScope scope(g, "checkpoint_initializer");
  Output prefix = ops::Const(Tensor::Scalar<std::string>(ckpt_file), "prefix");
  Output names = ops::Const(Tensor::FromVector<std::string>({tensor_name}), "tensor_names");
  Output slices = ops::Const(Tensor::FromVector<std::string>({""}), "shape_and_slices");
  scope.Exit();
  Operation restore = NodeBuilder("RestoreV2", scope.op_name())
                          .ExactName()
                          .Input(prefix)
                          .Input(names)
                          .Input(slices)
                          .Attr("dtypes", std::vector<DataType>{BaseType(variable.dtype())})
                          .Finalize();
  g.SetOutputShape(restore, 0, variable.shape());
  g.UpdateInput(variable.initializer(), 1, restore.output(0));
}

// Checks every assignment against the checkpoint, then rewires them all (so a bad entry
// changes nothing).
void Apply(const std::vector<Assignment>& assignments, const std::string& ckpt_dir_or_file,
           const std::string& ckpt_file, const io::CheckpointReader& reader) {
  const std::map<std::string, TensorShape> shapes = reader.GetVariableToShapeMap();
  const std::map<std::string, DataType> dtypes = reader.GetVariableToDataTypeMap();
  for (const Assignment& a : assignments) {
    if (!a.variable) InvalidArgument("InitFromCheckpoint: empty Variable for tensor ", a.tensor_name);
    if (!a.variable.initializer()) {
      InvalidArgument("InitFromCheckpoint: variable ", a.variable.name(), " has no initializer to replace");
    }
    CheckAssignment(a, shapes, dtypes, ckpt_dir_or_file);
  }
  for (const Assignment& a : assignments) SetCheckpointInitializer(a.variable, ckpt_file, a.tensor_name);
}

}  // namespace

void InitFromCheckpoint(const std::string& ckpt_dir_or_file,
                        const std::map<std::string, std::string>& assignment_map, Graph* graph) {
  const std::string ckpt_file = CheckpointFilename(ckpt_dir_or_file);
  const io::CheckpointReader reader(ckpt_file);
  const std::map<std::string, Variable> variables =
      VariablesByName(graph != nullptr ? *graph : GetDefaultGraph());
  std::vector<Assignment> assignments;
  for (const auto& [tensor_name_in_ckpt, current_name] : assignment_map) {
    if (auto it = variables.find(current_name); it != variables.end()) {
      assignments.push_back({it->second, tensor_name_in_ckpt});
    } else {
      ExpandScope(tensor_name_in_ckpt, current_name, variables, ckpt_dir_or_file, reader, assignments);
    }
  }
  Apply(assignments, ckpt_dir_or_file, ckpt_file, reader);
}

void InitFromCheckpoint(const std::string& ckpt_dir_or_file,
                        const std::map<std::string, Variable>& assignment_map) {
  const std::string ckpt_file = CheckpointFilename(ckpt_dir_or_file);
  const io::CheckpointReader reader(ckpt_file);
  std::vector<Assignment> assignments;
  for (const auto& [tensor_name, variable] : assignment_map) assignments.push_back({variable, tensor_name});
  Apply(assignments, ckpt_dir_or_file, ckpt_file, reader);
}

void WarmStart(const std::string& ckpt_to_initialize_from, const WarmStartOptions& options) {
  Graph& graph = options.graph != nullptr ? *options.graph : GetDefaultGraph();
  std::regex pattern;
  try {
    pattern = std::regex(options.vars_to_warm_start);
  } catch (const std::regex_error& e) {
    InvalidArgument("WarmStart: vars_to_warm_start '", options.vars_to_warm_start,
                    "' is not a regular expression: ", e.what());
  }
  std::map<std::string, Variable> warm_started;
  // TF's `if vars_to_warm_start:`: an empty pattern warm-starts no vocabulary-free variable.
  if (!options.vars_to_warm_start.empty()) {
    for (const Variable& v : ops::TrainableVariables(&graph)) {
      if (std::regex_search(v.name(), pattern, std::regex_constants::match_continuous)) {
        warm_started.emplace(v.op().name(), v);
      }
    }
  }
  std::vector<std::string> unused;
  for (const auto& [name, prev_name] : options.var_name_to_prev_var_name) {
    if (!warm_started.contains(name)) unused.push_back(name);
  }
  if (!unused.empty()) {
    std::vector<std::string> viable;
    for (const auto& [name, v] : warm_started) viable.push_back(name);
    InvalidArgument("You provided the following variables in var_name_to_prev_var_name that were not used: ",
                    StrJoin(unused, ", "),
                    ".  Perhaps you misspelled them?  Here is the list of viable variable names: ",
                    StrJoin(viable, ", "));
  }
  std::map<std::string, Variable> assignment_map;
  for (const auto& [name, v] : warm_started) {
    auto renamed = options.var_name_to_prev_var_name.find(name);
    assignment_map[renamed != options.var_name_to_prev_var_name.end() ? renamed->second : name] = v;
  }
  InitFromCheckpoint(ckpt_to_initialize_from, assignment_map);
}

}  // namespace flowtrain::train
