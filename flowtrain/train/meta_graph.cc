#include "flowtrain/train/meta_graph.h"

#include <optional>
#include <set>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/graph/op_registry.h"
#include "flowtrain/ops/internal/control_flow_context.h"
#include "flowtrain/ops/partitioned_variables.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/proto/queue_runner.pb.h"
#include "flowtrain/train/queue_runner.h"
#include "flowtrain/train/saver.h"

namespace flowtrain::train {
namespace {

// Collections whose items are Variables, written as VariableDefs (TF registers these keys
// with variable_pb2.VariableDef).
bool IsVariableCollection(std::string_view key) {
  static const std::set<std::string, std::less<>> kKeys = {GraphKeys::kGlobalVariables,
                                                           GraphKeys::kLocalVariables,
                                                           GraphKeys::kModelVariables,
                                                           GraphKeys::kTrainableVariables,
                                                           GraphKeys::kMovingAverageVariables,
                                                           GraphKeys::kConcatenatedVariables,
                                                           GraphKeys::kGlobalStep,
                                                           GraphKeys::kTrainableResourceVariables};
  return kKeys.contains(key);
}

// TF's QueueRunner.to_proto.
tensorflow::QueueRunnerDef ToQueueRunnerDef(const QueueRunner& runner) {
  tensorflow::QueueRunnerDef def;
  def.set_queue_name(runner.queue().name());
  for (const Operation& op : runner.enqueue_ops()) def.add_enqueue_op_name(op.name());
  def.set_close_op_name(runner.close_op().name());
  def.set_cancel_op_name(runner.cancel_op().name());
  for (Code code : runner.queue_closed_codes()) def.add_queue_closed_exception_types(static_cast<int>(code));
  return def;
}

// TF's QueueRunner.from_proto: the runner of ops already in `graph`.
QueueRunner FromQueueRunnerDef(const tensorflow::QueueRunnerDef& def, Graph& graph) {
  std::vector<Operation> enqueue_ops;
  for (const std::string& name : def.enqueue_op_name()) enqueue_ops.push_back(graph.GetOperationByName(name));
  QueueRunnerOptions options;
  options.close_op = graph.GetOperationByName(def.close_op_name());
  options.cancel_op = graph.GetOperationByName(def.cancel_op_name());
  if (def.queue_closed_exception_types_size() > 0) {
    options.queue_closed_codes.clear();
    for (int code : def.queue_closed_exception_types())
      options.queue_closed_codes.push_back(static_cast<Code>(code));
  }
  return QueueRunner(ops::QueueBase::FromHandle(graph.GetOperationByName(def.queue_name()).output(0)),
                     std::move(enqueue_ops), std::move(options));
}

// Fills `def` from the collection's items if they all have one supported type; false if not.
bool ToCollectionDef(const std::vector<std::any>& items, tensorflow::CollectionDef* def) {
  if (items.empty()) return false;
  const std::type_info& type = items.front().type();
  for (const std::any& item : items) {
    if (item.type() != type) return false;
  }
  if (type == typeid(Variable)) {
    for (const std::any& item : items) {
      def->mutable_bytes_list()->add_value(
          ToVariableDef(std::any_cast<const Variable&>(item)).SerializeAsString());
    }
  } else if (type == typeid(std::shared_ptr<Saver>)) {
    for (const std::any& item : items) {
      const auto& saver = std::any_cast<const std::shared_ptr<Saver>&>(item);
      if (saver == nullptr || saver->empty() || !saver->built()) return false;
      def->mutable_bytes_list()->add_value(saver->saver_def().SerializeAsString());
    }
  } else if (type == typeid(QueueRunner)) {
    for (const std::any& item : items) {
      def->mutable_bytes_list()->add_value(
          ToQueueRunnerDef(std::any_cast<const QueueRunner&>(item)).SerializeAsString());
    }
  } else if (type == typeid(ops::control_flow_internal::ControlFlowContextPtr)) {
    for (const std::any& item : items) {
      def->mutable_bytes_list()->add_value(ops::control_flow_internal::ContextDefBytes(
          *std::any_cast<ops::control_flow_internal::ControlFlowContextPtr>(item)));
    }
  } else if (type == typeid(Operation)) {
    for (const std::any& item : items) {
      def->mutable_node_list()->add_value(std::any_cast<const Operation&>(item).name());
    }
  } else if (type == typeid(Output)) {
    for (const std::any& item : items) {
      def->mutable_node_list()->add_value(std::any_cast<const Output&>(item).name());
    }
  } else {
    return false;
  }
  return true;
}

std::string_view OpNameOf(std::string_view tensor_name) {
  return tensor_name.substr(0, tensor_name.rfind(':'));
}

void ImportCollection(const std::string& key, const tensorflow::CollectionDef& def, Graph* graph) {
  if (def.has_node_list()) {
    for (const std::string& name : def.node_list().value()) {
      if (name.find(':') != std::string::npos) {
        graph->AddToCollection(key, graph->GetTensorByName(name));
      } else {
        graph->AddToCollection(key, graph->GetOperationByName(name));
      }
    }
    return;
  }
  if (def.has_bytes_list() && IsVariableCollection(key)) {
    for (const std::string& bytes : def.bytes_list().value()) {
      tensorflow::VariableDef vdef;
      if (!vdef.ParseFromString(bytes)) DataLoss("Collection '", key, "' holds a damaged VariableDef");
      Variable variable = Variable::FromGraph(*graph, OpNameOf(vdef.variable_name()));
      // A part of a partitioned variable (listed again in trainable_variables: recorded once).
      if (vdef.has_save_slice_info_def() && !vdef.save_slice_info_def().full_name().empty()) {
        ops::SaveSliceInfo info =
            ops::SaveSliceInfo::FromProto(vdef.save_slice_info_def(), vdef.variable_name());
        if (ops::GetSaveSliceInfo(variable) != info) ops::SetSaveSliceInfo(variable, std::move(info));
      }
      graph->AddToCollection(key, variable);
    }
    return;
  }
  if (def.has_bytes_list() && key == GraphKeys::kSavers) {
    for (const std::string& bytes : def.bytes_list().value()) {
      tensorflow::SaverDef sdef;
      if (!sdef.ParseFromString(bytes)) DataLoss("Collection '", key, "' holds a damaged SaverDef");
      graph->AddToCollection(key, std::make_shared<Saver>(*graph, sdef));
    }
    return;
  }
  if (def.has_bytes_list() && key == GraphKeys::kQueueRunners) {
    for (const std::string& bytes : def.bytes_list().value()) {
      tensorflow::QueueRunnerDef qdef;
      if (!qdef.ParseFromString(bytes)) DataLoss("Collection '", key, "' holds a damaged QueueRunnerDef");
      graph->AddToCollection(key, FromQueueRunnerDef(qdef, *graph));
    }
    return;
  }
  if (def.has_bytes_list() && (key == GraphKeys::kCondContext || key == GraphKeys::kWhileContext)) {
    // The contexts let ops::Gradients differentiate through the imported conds and loops.
    for (const std::string& bytes : def.bytes_list().value()) {
      tensorflow::ControlFlowContextDef context;
      const bool parsed = key == GraphKeys::kCondContext
                              ? context.mutable_cond_ctxt()->ParseFromString(bytes)
                              : context.mutable_while_ctxt()->ParseFromString(bytes);
      if (!parsed) DataLoss("Collection '", key, "' holds a damaged control flow context");
      ops::control_flow_internal::ImportControlFlowContext(*graph, nullptr, context);
    }
    return;
  }
  FT_LOG(WARNING) << "Cannot import collection '" << key
                  << "': flowtrain does not rebuild this kind of collection; skipped";
}

}  // namespace

tensorflow::VariableDef ToVariableDef(const Variable& variable) {
  tensorflow::VariableDef def;
  def.set_variable_name(variable.name());
  if (variable.initializer()) def.set_initializer_name(variable.initializer().name());
  if (variable.snapshot()) def.set_snapshot_name(variable.snapshot().name());
  if (variable.initial_value()) def.set_initial_value_name(variable.initial_value().name());
  def.set_trainable(variable.trainable());
  if (variable.is_resource()) def.set_is_resource(true);
  if (std::optional<ops::SaveSliceInfo> info = ops::GetSaveSliceInfo(variable)) {
    *def.mutable_save_slice_info_def() = info->ToProto();
  }
  return def;
}

tensorflow::MetaGraphDef ExportMetaGraph(const Graph& graph, const tensorflow::SaverDef* saver_def,
                                         const std::string& filename, const ExportMetaGraphOptions& options) {
  tensorflow::MetaGraphDef meta;
  *meta.mutable_graph_def() = graph.ToGraphDef(options.add_shapes);
  if (options.clear_devices) {
    for (tensorflow::NodeDef& node : *meta.mutable_graph_def()->mutable_node()) node.clear_device();
  }
  auto* info = meta.mutable_meta_info_def();
  std::set<std::string> op_types;
  for (const tensorflow::NodeDef& node : meta.graph_def().node()) op_types.insert(node.op());
  for (const std::string& type : op_types) {
    if (const OpRegistration* reg = OpRegistry::Global()->LookUp(type)) {
      *info->mutable_stripped_op_list()->add_op() = reg->def;
    }
  }
  info->set_tensorflow_version(kMetaGraphTensorflowVersion);
  info->set_tensorflow_git_version(kMetaGraphGitVersion);
  if (saver_def != nullptr) *meta.mutable_saver_def() = *saver_def;
  for (const std::string& key : graph.CollectionKeys()) {
    tensorflow::CollectionDef def;
    if (ToCollectionDef(graph.GetCollectionItems(key), &def)) {
      (*meta.mutable_collection_def())[key] = std::move(def);
    } else if (!graph.GetCollectionItems(key).empty() && !key.starts_with("__")) {
      // Collections named "__..." are private bookkeeping (layer name counters, the variable
      // store), never meant for the file: skipped silently.
      FT_LOG(WARNING) << "Issue encountered when serializing: " << key
                      << ". Type is unsupported, or the types of the items don't match field "
                         "type in CollectionDef.";
    }
  }
  if (!filename.empty()) {
    std::string bytes;
    if (!meta.SerializeToString(&bytes)) {
      InvalidArgument("MetaGraphDef for ", filename, " cannot be serialized (over 2 GB?)");
    }
    WriteFileAtomically(filename, bytes);
  }
  return meta;
}

std::shared_ptr<Saver> ImportMetaGraph(const tensorflow::MetaGraphDef& meta_graph, Graph* graph) {
  // A newer TF's default-valued new attrs (MatMul's grad_a) go, as in TF's import_meta_graph.
  tensorflow::GraphDef graph_def = meta_graph.graph_def();
  RemoveNewDefaultAttrs(meta_graph.meta_info_def().stripped_op_list(), &graph_def);
  ImportGraphDef(graph_def, graph);
  for (const auto& [key, def] : meta_graph.collection_def()) {
    try {
      ImportCollection(key, def, graph);
    } catch (const Error& e) {
      FT_LOG(WARNING) << "Cannot import collection '" << key << "': " << e.what();
    }
  }
  if (!meta_graph.has_saver_def()) return nullptr;
  return std::make_shared<Saver>(*graph, meta_graph.saver_def());
}

std::shared_ptr<Saver> ImportMetaGraph(const std::string& filename, Graph* graph) {
  tensorflow::MetaGraphDef meta;
  if (!meta.ParseFromString(ReadFileToString(filename))) {
    DataLoss("Cannot parse MetaGraphDef file ", filename);
  }
  return ImportMetaGraph(meta, graph);
}

}  // namespace flowtrain::train
