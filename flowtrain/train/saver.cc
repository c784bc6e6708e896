#include "flowtrain/train/saver.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/io/tensor_bundle.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "flowtrain/io/tensor_slice.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/io_ops.h"
#include "flowtrain/ops/partitioned_variables.h"
#include "flowtrain/ops/state_ops.h"
#include "flowtrain/ops/resource_variable_ops.h"
#include "flowtrain/runtime/device_spec.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/meta_graph.h"

namespace flowtrain::train {
namespace {

constexpr char kMissingKeyHelp[] =
    "Restoring from checkpoint failed. This is most likely due to a Variable name or other graph "
    "key that is missing from the checkpoint. Please ensure that you have not altered the graph "
    "expected based on the checkpoint. Original error:\n\n";
constexpr char kMismatchHelp[] =
    "Restoring from checkpoint failed. This is most likely due to a mismatch between the current "
    "graph and the graph from the checkpoint. Please ensure that you have not altered the graph "
    "expected based on the checkpoint. Original error:\n\n";

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The device a shard's save ops run on: the variable's device with CPU:0 filled in (TF's
// saveable_object_util.set_cpu0), so a shard on a GPU worker still saves from its CPU.
std::string SaveDevice(const std::string& variable_device) {
  DeviceSpec spec = DeviceSpec::Parse(variable_device);
  spec.device_type = "CPU";
  spec.device_index = 0;
  return spec.ToString();
}

// Builds a node named exactly `scope.op_name()` after the helper nodes were built inside the
// scope.
NodeBuilder ExactlyNamed(std::string_view op_type, OpNameScope& scope) {
  scope.Exit();
  NodeBuilder builder(op_type, scope.op_name());
  builder.ExactName();
  return builder;
}

}  // namespace

int64_t GlobalStep::Resolve(SessionInterface& session) const {
  if (const int64_t* step = std::get_if<int64_t>(&value_)) return *step;
  const Output* tensor = std::get_if<Output>(&value_);
  FT_REQUIRE(tensor != nullptr && *tensor, "global_step is not set");
  Tensor value = session.Run({}, {*tensor}, {})[0];
  if (value.NumElements() != 1) {
    InvalidArgument("global_step must be a scalar, got ", value.shape().DebugString(), " from ",
                    tensor->name());
  }
  switch (value.dtype()) {
    case DT_INT64:
      return value.scalar<int64_t>();
    case DT_INT32:
      return value.scalar<int32_t>();
    default:
      InvalidArgument("global_step must be an integer tensor, got ", DataTypeString(value.dtype()), " from ",
                      tensor->name());
  }
}

// ---- Construction and graph building ----

Saver::Saver(SaverOptions options) : options_(std::move(options)) {
  if (options_.defer_build &&
      (!options_.var_list.empty() || !options_.var_map.empty() || !options_.saveable_objects.empty())) {
    InvalidArgument(
        "If `var_list` is provided then build cannot be deferred. Either set "
        "defer_build=False or var_list=None.");
  }
  if (options_.max_to_keep < 0) options_.max_to_keep = 0;
  graph_ = options_.graph;
  if (graph_ == nullptr && !options_.var_list.empty()) graph_ = options_.var_list.front().graph();
  if (graph_ == nullptr && !options_.var_map.empty()) graph_ = options_.var_map.begin()->second.graph();
  if (graph_ == nullptr && !options_.saveable_objects.empty() &&
      options_.saveable_objects.front() != nullptr) {
    graph_ = options_.saveable_objects.front()->op.graph();
  }
  if (graph_ == nullptr && !options_.optional_saveable_objects.empty() &&
      options_.optional_saveable_objects.front() != nullptr) {
    graph_ = options_.optional_saveable_objects.front()->op.graph();
  }
  if (graph_ == nullptr) graph_ = &GetDefaultGraph();
  next_checkpoint_time_ = NowSeconds() + options_.keep_checkpoint_every_n_hours * 3600;
  if (!options_.defer_build) Build();
}

Saver::Saver(Graph& graph, const tensorflow::SaverDef& saver_def)
    : graph_(&graph), saver_def_(saver_def), built_(true) {
  if (saver_def.version() != tensorflow::SaverDef::V2) {
    InvalidArgument("SaverDef version ", static_cast<int>(saver_def.version()),
                    " is not supported: flowtrain reads and writes only V2 checkpoints");
  }
  options_.max_to_keep = std::max(0, saver_def.max_to_keep());
  options_.keep_checkpoint_every_n_hours = saver_def.keep_checkpoint_every_n_hours();
  options_.sharded = saver_def.sharded();
  options_.graph = &graph;
  // Both names must exist (InvalidArgument naming the missing one otherwise).
  graph.GetTensorByName(saver_def.filename_tensor_name());
  graph.GetTensorByName(saver_def.save_tensor_name());
  graph.GetOperationByName(saver_def.restore_op_name());
  next_checkpoint_time_ = NowSeconds() + options_.keep_checkpoint_every_n_hours * 3600;
  AnalyzeRestoreGraph();
}

Saver::Saveable Saver::VariableSaveable(const std::string& key, const Variable& variable,
                                        const std::string& slice_spec) const {
  // A resource variable saves what its snapshot read returns (a ReadVariableOp runs anew each
  // step) under the same key a ref variable would, so checkpoints interchange.
  Output saved = variable.ref();
  if (variable.is_resource()) {
    saved = variable.snapshot();
    if (!saved || saved.node()->type() != "ReadVariableOp") {
      auto colocate = graph_->ColocateWith(variable.op());
      saved = ops::ReadVariableOp(variable.ref(), variable.dtype());
    }
  }
  Saveable s{.name = key,
             .specs = {{saved, key, slice_spec}},
             .dtypes = {variable.dtype()},
             .device = variable.op().device()};
  s.restore = [this, variable](const std::vector<Output>& restored) {
    auto colocate = graph_->ColocateWith(variable.op());
    if (variable.is_resource()) return ops::AssignVariableOp(variable.ref(), restored[0]);
    return ops::Assign(variable.ref(), restored[0], variable.shape().IsFullyDefined(), true, "Assign").op();
  };
  return s;
}

void Saver::CollectSaveables() {
  std::map<std::string, Variable> by_key = options_.var_map;
  std::vector<Variable> list = options_.var_list;
  std::vector<std::shared_ptr<SaveableObject>> objects = options_.saveable_objects;
  if (list.empty() && by_key.empty() && objects.empty()) {
    list = ops::GlobalVariables(graph_);
    for (const Variable& v : graph_->GetCollection<Variable>(GraphKeys::kSaveableObjects)) {
      if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
    }
    objects = graph_->GetCollection<std::shared_ptr<SaveableObject>>(GraphKeys::kSaveableObjects);
  }
  // Parts of partitioned variables, saved as slices of their full variable's key.
  std::vector<std::pair<Variable, ops::SaveSliceInfo>> parts;
  for (const Variable& v : list) {
    if (!v) InvalidArgument("Saver: var_list holds an empty Variable");
    if (std::optional<ops::SaveSliceInfo> info = ops::GetSaveSliceInfo(v)) {
      if (std::none_of(parts.begin(), parts.end(), [&](const auto& p) { return p.first == v; })) {
        parts.emplace_back(v, std::move(*info));
      }
      continue;
    }
    auto [it, inserted] = by_key.emplace(v.op().name(), v);
    if (!inserted && !(it->second == v)) {
      InvalidArgument("At least two variables have the same name: ", v.op().name());
    }
  }
  saveables_.clear();
  std::set<std::string> keys;         // key, or key and slice spec
  std::set<std::string> sliced_keys;  // keys saved as slices

  auto add = [&](Saveable s) {
    for (const SaveableObject::SaveSpec& spec : s.specs) {
      if (!keys.insert(StrCat(spec.name, spec.slice_spec.empty() ? "" : " ", spec.slice_spec)).second ||
          (spec.slice_spec.empty() ? sliced_keys.contains(spec.name) : keys.contains(spec.name))) {
        InvalidArgument("At least two variables have the same name: ", spec.name);
      }
      if (!spec.slice_spec.empty()) sliced_keys.insert(spec.name);
    }
    saveables_.push_back(std::move(s));
  };
  for (const auto& [key, v] : by_key) {
    if (v.graph() != graph_) {
      InvalidArgument("Saver: variable ", v.name(), " is not in the saver's graph");
    }
    add(VariableSaveable(key, v));
  }
  for (const auto& [v, info] : parts) {
    if (v.graph() != graph_) {
      InvalidArgument("Saver: variable ", v.name(), " is not in the saver's graph");
    }
    add(VariableSaveable(info.full_name, v, info.Spec()));
  }
  auto add_objects = [&](const std::vector<std::shared_ptr<SaveableObject>>& list, bool optional) {
    for (const std::shared_ptr<SaveableObject>& object : list) {
      if (object == nullptr || object->specs.empty() || !object->restore) {
        InvalidArgument("Saver: a SaveableObject needs at least one spec and a restore function");
      }
      Saveable s{.name = object->name,
                 .specs = object->specs,
                 .device = object->op.device(),
                 .restore = object->restore,
                 .optional = optional};
      for (const SaveableObject::SaveSpec& spec : object->specs) {
        if (spec.tensor.graph() != graph_) {
          InvalidArgument("Saver: saveable ", object->name, " is not in the saver's graph");
        }
        s.dtypes.push_back(BaseType(spec.tensor.dtype()));
      }
      add(std::move(s));
    }
  };
  add_objects(objects, /*optional=*/false);
  add_objects(options_.optional_saveable_objects, /*optional=*/true);
  // Sorted by name, as TF's op_list_to_dict orders them.
  std::stable_sort(saveables_.begin(), saveables_.end(),
                   [](const Saveable& a, const Saveable& b) { return a.name < b.name; });
}

void Saver::Build() {
  if (built_) return;
  CollectSaveables();
  if (saveables_.empty()) {
    if (!options_.allow_empty) InvalidArgument("No variables to save");
    FT_LOG(INFO) << "Saver is empty: there are no variables to save.";
    is_empty_ = true;
    built_ = true;
    return;
  }
  Graph& g = *graph_;
  auto as_default = g.AsDefault();
  auto scope = g.NameScope(options_.name);

  // The fed filename: save/Const (default save/filename, default "model").
  Output filename;
  {
    OpNameScope filename_scope(g, "filename");
    Output input = ops::Const(
        Tensor::Scalar<std::string>(options_.filename.empty() ? "model" : options_.filename), "input");
    filename = ExactlyNamed("PlaceholderWithDefault", filename_scope)
                   .Input(input)
                   .Attr("dtype", DT_STRING)
                   .Attr("shape", PartialTensorShape({}))
                   .Finalize();
  }
  Output filename_tensor = ops::PlaceholderWithDefault(filename, PartialTensorShape({}), "Const");

  Output save_tensor;
  Operation restore_op;
  if (options_.sharded) {
    // Shards in the order of their device names, as TF's _GroupByDevices.
    std::map<std::string, std::vector<Saveable>> by_device;
    for (const Saveable& s : saveables_) by_device[s.device].push_back(s);
    std::vector<std::pair<std::string, std::vector<Saveable>>> shards;
    for (auto& [device, list] : by_device) shards.emplace_back(SaveDevice(device), std::move(list));
    save_tensor = AddShardedSaveOps(filename_tensor, shards);
    std::vector<Operation> shard_restores;
    for (const auto& [device, list] : shards) {
      auto on_device = g.Device(device);
      shard_restores.push_back(AddRestoreOps(filename_tensor, list, "restore_shard"));
    }
    restore_op = ops::Group(shard_restores, "restore_all");
  } else {
    save_tensor = AddSaveOps(filename_tensor, saveables_);
    restore_op = AddRestoreOps(filename_tensor, saveables_, "restore_all");
  }
  BuildPartialRestores(filename_tensor);

  saver_def_.set_filename_tensor_name(filename_tensor.name());
  saver_def_.set_save_tensor_name(save_tensor.name());
  saver_def_.set_restore_op_name(restore_op.name());
  saver_def_.set_max_to_keep(options_.max_to_keep);
  saver_def_.set_sharded(options_.sharded);
  saver_def_.set_keep_checkpoint_every_n_hours(static_cast<float>(options_.keep_checkpoint_every_n_hours));
  saver_def_.set_version(tensorflow::SaverDef::V2);
  built_ = true;
  AnalyzeRestoreGraph();
}

Output Saver::AddSaveOps(Output filename, const std::vector<Saveable>& saveables) {
  std::vector<std::string> keys;
  std::vector<std::string> slices;
  std::vector<Output> tensors;
  for (const Saveable& s : saveables) {
    for (const SaveableObject::SaveSpec& spec : s.specs) {
      keys.push_back(spec.name);
      slices.push_back(spec.slice_spec);
      tensors.push_back(spec.tensor);
    }
  }
  Operation save = ops::SaveV2(filename, keys, slices, tensors);
  auto deps = graph_->ControlDependencies({save});
  return ops::Identity(filename, "control_dependency");
}

Output Saver::AddShardedSaveOps(Output filename,
                                const std::vector<std::pair<std::string, std::vector<Saveable>>>& shards) {
  Graph& g = *graph_;
  // Shards are written to a temporary directory beside the checkpoint, then merged into it.
  Output tmp_prefix;
  {
    OpNameScope join_scope(g, "StringJoin");
    Output suffix =
        ops::Const(Tensor::Scalar<std::string>(StrCat("_temp_", RandomHex(16), "/part")), "inputs_1");
    tmp_prefix = ExactlyNamed("StringJoin", join_scope)
                     .Input(std::vector<Output>{filename, suffix})
                     .Attr("separator", "")
                     .Finalize();
  }
  Output num_shards = ops::Const(static_cast<int32_t>(shards.size()), "num_shards");
  std::vector<Output> shard_prefixes;
  std::vector<Operation> shard_done;
  for (size_t i = 0; i < shards.size(); ++i) {
    auto on_device = g.Device(shards[i].first);
    Output shard_prefix;
    {
      OpNameScope shard_scope(g, "ShardedFilename");
      Output shard = ops::Const(static_cast<int32_t>(i), "shard");
      shard_prefix = ExactlyNamed("ShardedFilename", shard_scope)
                         .Input(tmp_prefix)
                         .Input(shard)
                         .Input(num_shards)
                         .Finalize();
    }
    Output done = AddSaveOps(shard_prefix, shards[i].second);
    shard_prefixes.push_back(shard_prefix);
    shard_done.push_back(done.op());
  }
  // The merge runs on the last shard's device once every shard is written.
  auto on_device = g.Device(shards.back().first);
  Operation merge;
  {
    OpNameScope merge_scope(g, "MergeV2Checkpoints");
    Output prefixes;
    {
      auto deps = g.ControlDependencies(shard_done);
      prefixes = ops::Pack(shard_prefixes, 0, "checkpoint_prefixes");
    }
    merge = ExactlyNamed("MergeV2Checkpoints", merge_scope)
                .Input(prefixes)
                .Input(filename)
                .Attr("delete_old_dirs", true)
                .Finalize();
  }
  std::vector<Operation> all_done = {merge};
  all_done.insert(all_done.end(), shard_done.begin(), shard_done.end());
  auto deps = g.ControlDependencies(all_done);
  return ops::Identity(filename, "Identity");
}

Operation Saver::AddRestoreOps(Output filename, const std::vector<Saveable>& saveables,
                               std::string_view name) {
  std::vector<std::string> keys;
  std::vector<std::string> slices;
  std::vector<DataType> dtypes;
  for (const Saveable& s : saveables) {
    for (const SaveableObject::SaveSpec& spec : s.specs) {
      keys.push_back(spec.name);
      slices.push_back(spec.slice_spec);
    }
    dtypes.insert(dtypes.end(), s.dtypes.begin(), s.dtypes.end());
  }
  std::vector<Output> restored = ops::RestoreV2(filename, keys, slices, dtypes);
  std::vector<Operation> assigns;
  size_t next = 0;
  for (const Saveable& s : saveables) {
    std::vector<Output> mine(restored.begin() + next, restored.begin() + next + s.specs.size());
    next += s.specs.size();
    assigns.push_back(s.restore(mine));
  }
  return ops::Group(assigns, name);
}

void Saver::BuildPartialRestores(Output filename) {
  std::vector<Saveable> required;
  std::vector<const Saveable*> optional;
  for (const Saveable& s : saveables_) {
    if (s.optional) {
      optional.push_back(&s);
    } else {
      required.push_back(s);
    }
  }
  if (optional.empty()) return;
  // Beside restore_all (TF's restore op, which needs every key): the same restores split so
  // that those of a checkpoint's keys can run alone, on the devices restore_all uses.
  Graph& g = *graph_;
  if (!required.empty()) {
    std::map<std::string, std::vector<Saveable>> by_device;
    for (const Saveable& s : required) by_device[options_.sharded ? SaveDevice(s.device) : ""].push_back(s);
    std::vector<Operation> parts;
    for (const auto& [device, list] : by_device) {
      auto on_device = g.Device(device);
      parts.push_back(AddRestoreOps(filename, list, "restore_required_shard"));
    }
    required_restore_op_ = ops::Group(parts, "restore_required").name();
  }
  for (const Saveable* s : optional) {
    auto on_device = g.Device(options_.sharded ? SaveDevice(s->device) : "");
    OptionalRestore restore{.name = s->name};
    for (const SaveableObject::SaveSpec& spec : s->specs) restore.keys.push_back(spec.name);
    restore.restore_op = AddRestoreOps(filename, {*s}, "restore_optional").name();
    optional_restores_.push_back(std::move(restore));
  }
}

// Walks restore_op's control inputs down to the Assign nodes fed by RestoreV2 outputs, and
// records which checkpoint key each variable is restored from.
void Saver::AnalyzeRestoreGraph() {
  restore_targets_.clear();
  std::set<const Node*> restore_ops;
  std::vector<const Node*> stack = {graph_->GetOperationByName(saver_def_.restore_op_name()).node()};
  std::set<const Node*> seen;
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (n->type() == "NoOp") {
      for (const Node* c : n->control_inputs()) stack.push_back(c);
      continue;
    }
    // An Assign of a RestoreV2 output to a variable, or another op restoring an object from
    // one (DeserializeIterator(handle, restored)): input 0 names what is restored.
    if (n->num_inputs() != 2) continue;
    const Endpoint& value = n->input(1);
    const Node* restore = value.node;
    if (restore->type() != "RestoreV2") continue;
    const Node* names_node = restore->input(1).node;
    if (names_node->type() != "Const") continue;
    const Tensor names = names_node->GetAttr<Tensor>("value");
    if (value.index >= names.NumElements()) continue;
    const Node* target = n->input(0).node;
    PartialTensorShape shape = PartialTensorShape::Unknown();
    if ((n->type() == "Assign" && target->type() == "VariableV2" && n->GetAttr<bool>("validate_shape")) ||
        (n->type() == "AssignVariableOp" && target->type() == "VarHandleOp")) {
      shape = target->GetAttr<PartialTensorShape>("shape");
    }
    // A part restored from a slice: the checkpoint holds the full variable, of the spec's shape.
    const Node* slices_node = restore->input(2).node;
    if (slices_node->type() == "Const") {
      const Tensor slices = slices_node->GetAttr<Tensor>("value");
      if (value.index < slices.NumElements() && !slices.flat<std::string>()[value.index].empty()) {
        shape =
            PartialTensorShape(io::ParseShapeAndSlice(slices.flat<std::string>()[value.index]).full_shape);
      }
    }
    restore_targets_.push_back({names.flat<std::string>()[value.index], target->name(),
                                BaseType(restore->output_type(value.index)), shape});
    restore_ops.insert(restore);
  }
  std::sort(restore_targets_.begin(), restore_targets_.end(),
            [](const RestoreTarget& a, const RestoreTarget& b) { return a.key < b.key; });
  num_restore_ops_ = static_cast<int>(restore_ops.size());
}

// ---- Saving ----

void Saver::BuildForSave() {
  if (built_) return;
  if (options_.defer_build) {
    FailedPrecondition("`build()` should be called before save if defer_build==True");
  }
  Build();
}

std::string Saver::CheckpointFile(SessionInterface& session, const std::string& save_path,
                                  const GlobalStep& global_step, const std::string& latest_filename) const {
  if (latest_filename.find('/') != std::string::npos) {
    InvalidArgument("'latest_filename' must not contain path components");
  }
  std::string checkpoint_file = save_path;
  if (global_step.has_value()) {
    const int64_t step = global_step.Resolve(session);
    if (options_.pad_step_number) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%08lld", static_cast<long long>(step));
      checkpoint_file = StrCat(save_path, "-", buf);
    } else {
      checkpoint_file = StrCat(save_path, "-", step);
    }
  } else if (Basename(save_path) == latest_filename && !saver_def_.sharded()) {
    InvalidArgument("'latest_filename' collides with 'save_path': '", latest_filename, "' and '", save_path,
                    "'");
  }
  if (!is_empty_) {
    const std::string save_dir = Dirname(save_path);
    std::error_code ec;
    if (!save_dir.empty() && !std::filesystem::is_directory(save_dir, ec)) {
      InvalidArgument("Parent directory of ", save_path, " doesn't exist, can't save.");
    }
  }
  return checkpoint_file;
}

void Saver::CommitCheckpoint(const std::string& save_path, const std::string& checkpoint,
                             const std::string& latest_filename, const std::string& meta_graph_suffix) {
  absl::MutexLock lock(&mu_);
  RecordLastCheckpoint(checkpoint);
  UpdateCheckpointStateInternal(Dirname(save_path), checkpoint, last_checkpoints_paths(), latest_filename,
                                options_.save_relative_paths);
  MaybeDeleteOldCheckpoints(meta_graph_suffix);
}

std::string Saver::Save(SessionInterface& session, const std::string& save_path,
                        const GlobalStep& global_step, const std::string& latest_filename_arg,
                        const std::string& meta_graph_suffix, bool write_meta_graph, bool write_state) {
  BuildForSave();
  const std::string latest_filename = latest_filename_arg.empty() ? "checkpoint" : latest_filename_arg;
  const std::string checkpoint_file = CheckpointFile(session, save_path, global_step, latest_filename);
  std::string model_checkpoint_path;
  if (!is_empty_) {
    RemoveStaleSaveTemporaries(save_path, latest_filename);
    Output filename = graph_->GetTensorByName(saver_def_.filename_tensor_name());
    Output save_tensor = graph_->GetTensorByName(saver_def_.save_tensor_name());
    Tensor result =
        session.Run({{filename, Tensor::Scalar<std::string>(checkpoint_file)}}, {save_tensor}, {})[0];
    model_checkpoint_path = result.scalar<std::string>();
    if (write_state) CommitCheckpoint(save_path, model_checkpoint_path, latest_filename, meta_graph_suffix);
  }
  if (write_meta_graph) ExportMetaGraph(MetaGraphFilename(checkpoint_file, meta_graph_suffix));
  return model_checkpoint_path;
}

uint64_t CheckpointSnapshot::bytes() const {
  uint64_t total = 0;
  for (const Tensor& t : tensors) total += t.TotalBytes();
  return total;
}

CheckpointSnapshot Saver::TakeSnapshot(SessionInterface& session, const std::string& save_path,
                                       const GlobalStep& global_step, const std::string& latest_filename_arg,
                                       bool write_meta_graph) {
  BuildForSave();
  const std::string latest_filename = latest_filename_arg.empty() ? "checkpoint" : latest_filename_arg;
  CheckpointSnapshot snapshot;
  snapshot.save_path = save_path;
  snapshot.checkpoint_file = CheckpointFile(session, save_path, global_step, latest_filename);
  snapshot.empty_saver = is_empty_;
  if (write_meta_graph) snapshot.meta_graph = ExportMetaGraph();
  if (is_empty_) return snapshot;
  // What the save subgraph's SaveV2 ops (one per device when sharded) would write: their key
  // lists and tensors, fetched in one run. Walking the subgraph works for savers built from an
  // imported SaverDef (TF's or ours) too.
  std::vector<Output> fetches;
  std::vector<int64_t> tensors_per_op;
  std::vector<Node*> stack = {graph_->GetTensorByName(saver_def_.save_tensor_name()).node()};
  std::set<Node*> seen(stack.begin(), stack.end());
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (node->type() == "SaveV2") {
      fetches.emplace_back(node->input(1).node, node->input(1).index);
      for (int i = 3; i < node->num_inputs(); ++i)
        fetches.emplace_back(node->input(i).node, node->input(i).index);
      tensors_per_op.push_back(node->num_inputs() - 3);
    }
    auto visit = [&](Node* n) {
      if (seen.insert(n).second) stack.push_back(n);
    };
    for (const Endpoint& in : node->inputs()) visit(in.node);
    for (Node* control : node->control_inputs()) visit(control);
  }
  if (fetches.empty()) {
    FailedPrecondition("The save subgraph of ", saver_def_.save_tensor_name(),
                       " has no SaveV2 op to snapshot");
  }
  const std::vector<Tensor> values = session.Run({}, fetches, {});
  size_t next = 0;
  for (int64_t n : tensors_per_op) {
    const Tensor& names = values[next++];
    if (names.NumElements() != n) {
      InvalidArgument("SaveV2: got ", names.NumElements(), " tensor names but ", n, " tensors");
    }
    for (int64_t i = 0; i < n; ++i) {
      snapshot.keys.push_back(names.flat<std::string>()[i]);
      // A fetched variable shares its buffer with the variable, without a copy: every kernel
      // that updates a variable in place first copies a buffer someone else holds
      // (Var::PrepareForInPlaceUpdate), so the next steps never change what was fetched. The
      // copy is thus paid by the first update of each variable while the snapshot is alive.
      snapshot.tensors.push_back(values[next++]);
    }
  }
  return snapshot;
}

std::string Saver::WriteSnapshot(const CheckpointSnapshot& snapshot, const std::string& latest_filename_arg,
                                 const std::string& meta_graph_suffix, bool write_state) {
  const std::string latest_filename = latest_filename_arg.empty() ? "checkpoint" : latest_filename_arg;
  std::string model_checkpoint_path;
  if (!snapshot.empty_saver) {
    RemoveStaleSaveTemporaries(snapshot.save_path, latest_filename);
    io::BundleWriter writer(snapshot.checkpoint_file);
    for (size_t i = 0; i < snapshot.keys.size(); ++i) writer.Add(snapshot.keys[i], snapshot.tensors[i]);
    writer.Finish();
    model_checkpoint_path = snapshot.checkpoint_file;
    if (write_state)
      CommitCheckpoint(snapshot.save_path, model_checkpoint_path, latest_filename, meta_graph_suffix);
  }
  if (snapshot.meta_graph) {
    WriteFileAtomically(MetaGraphFilename(snapshot.checkpoint_file, meta_graph_suffix),
                        snapshot.meta_graph->SerializeAsString());
  }
  return model_checkpoint_path;
}

tensorflow::MetaGraphDef Saver::ExportMetaGraph(const std::string& filename) const {
  return train::ExportMetaGraph(*graph_, is_empty_ ? nullptr : &saver_def_, filename);
}

// ---- Restoring ----

void Saver::Restore(SessionInterface& session, const std::string& save_path, const RestoreOptions& options) {
  absl::MutexLock lock(&mu_);
  RestoreLocked(session, save_path, options);
}

void Saver::RestoreLocked(SessionInterface& session, const std::string& save_path,
                          const RestoreOptions& options) {
  if (!built_) Build();
  if (is_empty_) return;
  if (save_path.empty()) InvalidArgument("Can't load save_path when it is None.");
  if (!CheckpointExists(save_path)) {
    InvalidArgument("The passed save_path is not a valid checkpoint: ", save_path);
  }
  FT_LOG(INFO) << "Restoring parameters from " << save_path;
  RunRestore(session, save_path, options);
}

void Saver::CheckAgainstIndex(const std::string& save_path, const std::set<std::string>& skipped) const {
  io::BundleReader reader(save_path);
  for (const RestoreTarget& t : restore_targets_) {
    if (skipped.contains(t.key)) continue;
    if (!reader.Contains(t.key)) {
      NotFound(kMissingKeyHelp, "Key ", t.key, " not found in checkpoint '", save_path,
               "' (needed to restore variable '", t.variable, "')");
    }
    const io::BundleReader::DtypeAndShape stored = reader.LookupDtypeAndShape(t.key);
    if (stored.dtype != t.dtype) {
      InvalidArgument(kMismatchHelp, "tensor_name = ", t.key, "; expected dtype ", DataTypeString(t.dtype),
                      " does not equal original dtype ", DataTypeString(stored.dtype), " (variable '",
                      t.variable, "', checkpoint '", save_path, "')");
    }
    if (!t.shape.unknown_rank() && !t.shape.IsCompatibleWith(PartialTensorShape(stored.shape))) {
      InvalidArgument(kMismatchHelp,
                      "Assign requires shapes of both tensors to match. lhs shape= ", t.shape.DebugString(),
                      " rhs shape= ", stored.shape.DebugString(), " (variable '", t.variable, "', key '",
                      t.key, "' in checkpoint '", save_path, "')");
    }
  }
  // Every data file must be there before any variable changes.
  for (int shard = 0; shard < reader.num_shards(); ++shard) {
    const std::string data = io::DataFilename(save_path, shard, reader.num_shards());
    if (!FileExists(data)) DataLoss("Data file '", data, "' of checkpoint '", save_path, "' is missing");
  }
}

void Saver::RunRestore(SessionInterface& session, const std::string& save_path,
                       const RestoreOptions& options) {
  // restore_all, or, when the checkpoint lacks the keys of optional saveables, the restores of
  // everything else.
  std::vector<Operation> restore_ops;
  std::set<std::string> skipped;
  if (!optional_restores_.empty()) {
    io::BundleReader reader(save_path);
    std::vector<Operation> present;
    for (const OptionalRestore& r : optional_restores_) {
      const bool complete = std::all_of(r.keys.begin(), r.keys.end(),
                                        [&](const std::string& key) { return reader.Contains(key); });
      if (complete) {
        present.push_back(graph_->GetOperationByName(r.restore_op));
        continue;
      }
      skipped.insert(r.keys.begin(), r.keys.end());
      FT_LOG(INFO) << "Checkpoint " << save_path << " has no " << StrJoin(r.keys, ", ") << ": " << r.name
                   << " is not restored and starts fresh";
    }
    if (!skipped.empty()) {
      if (!required_restore_op_.empty())
        restore_ops.push_back(graph_->GetOperationByName(required_restore_op_));
      restore_ops.insert(restore_ops.end(), present.begin(), present.end());
    }
  }
  CheckAgainstIndex(save_path, skipped);
  // One RestoreV2 reads and checks every tensor before its Assigns run; several (shards, or
  // the split restores) would assign one by one, so they are verified up front.
  if (options.verify_checksums && (num_restore_ops_ > 1 || !skipped.empty())) {
    io::BundleReader(save_path).VerifyAll();
  }
  Output filename = graph_->GetTensorByName(saver_def_.filename_tensor_name());
  if (skipped.empty()) restore_ops = {graph_->GetOperationByName(saver_def_.restore_op_name())};
  try {
    if (!restore_ops.empty())
      session.Run({{filename, Tensor::Scalar<std::string>(save_path)}}, {}, restore_ops);
  } catch (const NotFoundError& e) {
    RethrowWithContext(e, kMissingKeyHelp);
  } catch (const InvalidArgumentError& e) {
    RethrowWithContext(e, kMismatchHelp);
  }
}

std::optional<std::string> Saver::RestoreLatest(SessionInterface& session, const std::string& checkpoint_dir,
                                                const RestoreLatestOptions& options) {
  absl::MutexLock lock(&mu_);
  if (!options.fall_back_to_intact) {
    std::optional<std::string> latest = LatestCheckpoint(checkpoint_dir, options.latest_filename);
    if (latest) RestoreLocked(session, *latest, options.restore);
    return latest;
  }
  const std::string state_path = JoinPath(
      checkpoint_dir, options.latest_filename.empty() ? kDefaultLatestFilename : options.latest_filename);
  // No state file is no checkpoint, as in TF (deleting it is how a user starts afresh).
  if (!FileExists(state_path)) return std::nullopt;
  std::optional<tensorflow::CheckpointState> state;
  try {
    state = GetCheckpointState(checkpoint_dir, options.latest_filename);
  } catch (const InvalidArgumentError& e) {
    FT_LOG(WARNING) << e.what();
  }
  std::vector<std::string> candidates;
  if (state) {
    candidates.push_back(state->model_checkpoint_path());
    for (int i = state->all_model_checkpoint_paths_size() - 1; i >= 0; --i) {
      candidates.push_back(state->all_model_checkpoint_paths(i));
    }
  }
  // Then whatever else the directory holds, for a state file that is garbage or names only
  // checkpoints that are gone.
  const bool state_usable = state.has_value();
  for (std::string& found : FindCheckpointsInDirectory(checkpoint_dir))
    candidates.push_back(std::move(found));
  std::vector<std::string> unique;
  for (std::string& c : candidates) {
    if (std::find(unique.begin(), unique.end(), c) == unique.end()) unique.push_back(std::move(c));
  }
  candidates = std::move(unique);
  if (candidates.empty()) {
    FT_LOG(WARNING) << "The checkpoint state file " << state_path
                    << " is unusable and the directory holds no checkpoint: starting without one";
    return std::nullopt;
  }
  // Falling back is safe only if a failed attempt changed nothing.
  RestoreOptions restore_options = options.restore;
  restore_options.verify_checksums = true;
  std::vector<std::string> skipped;
  for (const std::string& candidate : candidates) {
    if (!CheckpointExists(candidate)) {
      skipped.push_back(StrCat(candidate, " (its index file is missing)"));
      FT_LOG(WARNING) << "Skipping checkpoint " << candidate << ": its index file is missing";
      continue;
    }
    try {
      RestoreLocked(session, candidate, restore_options);
    } catch (const DataLossError& e) {
      skipped.push_back(StrCat(candidate, " (", e.what(), ")"));
      FT_LOG(WARNING) << "Skipping damaged checkpoint " << candidate << ": " << e.what();
      continue;
    }
    if (!state_usable) {
      FT_LOG(WARNING) << "The checkpoint state file " << state_path << " is unusable; restored " << candidate
                      << ", the newest intact checkpoint found in " << checkpoint_dir
                      << (skipped.empty() ? "" : "; skipped: ") << StrJoin(skipped, "; ");
    } else if (!skipped.empty()) {
      FT_LOG(WARNING) << "Restored " << candidate << ", the newest intact checkpoint in " << checkpoint_dir
                      << " (the state file " << state_path << " names " << candidates.front()
                      << "); skipped: " << StrJoin(skipped, "; ");
    }
    return candidate;
  }
  DataLoss("No intact checkpoint in ", checkpoint_dir, ": skipped ", StrJoin(skipped, "; "));
}

// ---- Retention ----

std::vector<std::string> Saver::last_checkpoints() const {
  absl::MutexLock lock(&mu_);
  return last_checkpoints_paths();
}

std::vector<std::string> Saver::last_checkpoints_paths() const {
  std::vector<std::string> out;
  for (const auto& [path, time] : last_checkpoints_) out.push_back(path);
  return out;
}

void Saver::RecordLastCheckpoint(const std::string& path) {
  if (saver_def_.max_to_keep() <= 0) return;
  std::erase_if(last_checkpoints_, [&](const auto& entry) { return entry.first == path; });
  last_checkpoints_.emplace_back(path, NowSeconds());
  if (static_cast<int>(last_checkpoints_.size()) > saver_def_.max_to_keep()) {
    to_delete_.push_back(last_checkpoints_.front());
    last_checkpoints_.erase(last_checkpoints_.begin());
  }
}

void Saver::MaybeDeleteOldCheckpoints(const std::string& meta_graph_suffix) {
  if (to_delete_.empty()) return;
  const auto [path, saved_at] = to_delete_.front();
  to_delete_.pop_front();
  const double hours = saver_def_.keep_checkpoint_every_n_hours();
  if (hours > 0 && saved_at > next_checkpoint_time_) {
    // Kept for good: no longer tracked nor listed in the state file.
    next_checkpoint_time_ += hours * 3600;
    return;
  }
  try {
    RemoveCheckpoint(path, meta_graph_suffix);
  } catch (const Error& e) {
    FT_LOG(WARNING) << "Ignoring: " << e.what();
  }
}

void Saver::RecoverLastCheckpoints(const std::vector<std::string>& checkpoint_paths) {
  std::vector<std::pair<std::string, double>> with_time;
  for (const CheckpointWithMtime& c : ExistingCheckpoints(checkpoint_paths)) {
    with_time.emplace_back(c.prefix, c.mtime);
  }
  SetLastCheckpointsWithTime(with_time);
}

void Saver::SetLastCheckpointsWithTime(const std::vector<std::pair<std::string, double>>& checkpoints) {
  absl::MutexLock lock(&mu_);
  last_checkpoints_ = checkpoints;
}

std::shared_ptr<Saver> GetSaverOrDefault(
    Graph& graph, const std::function<std::vector<std::shared_ptr<SaveableObject>>()>& make_optional) {
  std::vector<std::shared_ptr<Saver>> savers =
      graph.GetCollection<std::shared_ptr<Saver>>(GraphKeys::kSavers);
  if (savers.size() > 1) {
    FailedPrecondition("More than one item in collection ", GraphKeys::kSavers,
                       ". Please indicate which one to use by passing it to the constructor.");
  }
  if (savers.size() == 1) return savers.front();
  auto saver = std::make_shared<Saver>(
      SaverOptions{.optional_saveable_objects =
                       make_optional ? make_optional() : std::vector<std::shared_ptr<SaveableObject>>{},
                   .sharded = true,
                   .allow_empty = true,
                   .graph = &graph});
  graph.AddToCollection(GraphKeys::kSavers, saver);
  return saver;
}

}  // namespace flowtrain::train
