#include "flowtrain/saved_model/loader.h"

#include <set>
#include <string>
#include <utility>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/saved_model/constants.h"
#include "flowtrain/saved_model/reader.h"
#include "flowtrain/train/meta_graph.h"

namespace flowtrain::saved_model {
namespace {

using NamedFeeds = std::vector<std::pair<std::string, Tensor>>;

std::string OpNameOf(const std::string& name) { return ParseTensorName(name).first; }

// Whether `graph` has the tensor `name` ("op:1", or "op" for output 0).
bool HasTensor(const Graph& graph, const std::string& name) {
  const auto [op, index] = ParseTensorName(name);
  const Node* node = graph.FindNode(op);
  return node != nullptr && index >= 0 && index < node->num_outputs();
}

// Every tensor a signature names must be in the graph, so that a broken signature fails the
// load with its name rather than a later request.
void CheckSignatures(const tensorflow::MetaGraphDef& meta, const Graph& graph,
                     const std::string& export_dir) {
  for (const auto& [key, signature] : meta.signature_def()) {
    if (key == kSavedModelInitOpSignatureKey || key == kSavedModelTrainOpSignatureKey) continue;
    for (const auto* side : {&signature.inputs(), &signature.outputs()}) {
      const char* role = side == &signature.inputs() ? "input" : "output";
      for (const auto& [tensor_key, info] : *side) {
        std::vector<std::string> names = {info.name()};
        if (info.has_coo_sparse()) {
          names = {info.coo_sparse().values_tensor_name(), info.coo_sparse().indices_tensor_name(),
                   info.coo_sparse().dense_shape_tensor_name()};
        }
        for (const std::string& name : names) {
          if (!HasTensor(graph, name)) {
            InvalidArgument("SavedModel ", export_dir, ": signature '", key, "' ", role, " '", tensor_key,
                            "' names tensor '", name, "', which the graph does not have");
          }
        }
      }
    }
  }
}

// The AssetFileDefs: the MetaGraph's field (TF2, TF's C++ builder), else TF1's collection.
std::vector<tensorflow::AssetFileDef> GetAssetFileDefs(const tensorflow::MetaGraphDef& meta,
                                                       const std::string& export_dir) {
  std::vector<tensorflow::AssetFileDef> defs(meta.asset_file_def().begin(), meta.asset_file_def().end());
  if (!defs.empty()) return defs;
  auto it = meta.collection_def().find(kSavedModelAssetsKey);
  if (it == meta.collection_def().end()) return defs;
  for (const google::protobuf::Any& any : it->second.any_list().value()) {
    tensorflow::AssetFileDef def;
    if (!any.UnpackTo(&def)) {
      DataLoss("SavedModel ", export_dir, ": collection '", kSavedModelAssetsKey,
               "' holds a damaged AssetFileDef");
    }
    defs.push_back(std::move(def));
  }
  return defs;
}

// Each asset tensor fed the path of its file in `assets/`, as TF's loader feeds them.
NamedFeeds AssetFeeds(const std::vector<tensorflow::AssetFileDef>& defs, const Graph& graph,
                      const std::string& export_dir) {
  NamedFeeds feeds;
  const std::string assets_dir = JoinPath(export_dir, kSavedModelAssetsDirectory);
  for (const tensorflow::AssetFileDef& def : defs) {
    if (!HasTensor(graph, def.tensor_info().name())) {
      InvalidArgument("SavedModel ", export_dir, ": asset '", def.filename(), "' names tensor '",
                      def.tensor_info().name(), "', which the graph does not have");
    }
    feeds.emplace_back(def.tensor_info().name(),
                       Tensor::Scalar<std::string>(JoinPath(assets_dir, def.filename())));
  }
  return feeds;
}

// The op to run after the restore (TF's GetInitOp): TF2's init signature, else the main op, else
// the legacy init op; "" if there is none.
std::string GetInitOpName(const tensorflow::MetaGraphDef& meta, const std::string& export_dir) {
  auto signature = meta.signature_def().find(kSavedModelInitOpSignatureKey);
  if (signature != meta.signature_def().end()) {
    auto output = signature->second.outputs().find(kSavedModelInitOpSignatureKey);
    if (output != signature->second.outputs().end()) return OpNameOf(output->second.name());
  }
  for (const char* key : {kSavedModelMainOpKey, kSavedModelLegacyInitOpKey}) {
    auto collection = meta.collection_def().find(key);
    if (collection == meta.collection_def().end()) continue;
    const auto& names = collection->second.node_list().value();
    if (names.size() != 1) {
      FailedPrecondition("Expected exactly one main op in : ", export_dir, " (collection '", key, "' holds ",
                         names.size(), ")");
    }
    return OpNameOf(names[0]);
  }
  return "";
}

void RunRestore(Session& session, const tensorflow::MetaGraphDef& meta, NamedFeeds feeds,
                const std::string& export_dir) {
  const tensorflow::SaverDef& saver = meta.saver_def();
  if (!meta.has_saver_def() || saver.restore_op_name().empty()) {
    FT_LOG(INFO) << "The specified SavedModel " << export_dir
                 << " has no SaverDef; no variables were restored.";
    return;
  }
  const std::string prefix =
      JoinPath(JoinPath(export_dir, kSavedModelVariablesDirectory), kSavedModelVariablesFilename);
  if (!FileExists(prefix + ".index")) {
    NotFound("SavedModel ", export_dir, " has a SaverDef but no variables: ", prefix,
             ".index does not exist");
  }
  feeds.emplace_back(saver.filename_tensor_name(), Tensor::Scalar<std::string>(prefix));
  try {
    session.Run(feeds, {}, {OpNameOf(saver.restore_op_name())});
  } catch (const Error& e) {
    RethrowWithContext(e,
                       StrCat("Restoring the variables of SavedModel ", export_dir, " from ", prefix, ": "));
  }
}

}  // namespace

SavedModelBundle::SavedModelBundle(std::unique_ptr<Graph> graph, std::unique_ptr<Session> session,
                                   tensorflow::MetaGraphDef meta_graph_def)
    : graph_(std::move(graph)), session_(std::move(session)), meta_graph_def_(std::move(meta_graph_def)) {}

SavedModelBundle& SavedModelBundle::operator=(SavedModelBundle&& other) noexcept {
  if (this != &other) {
    Release();
    graph_ = std::move(other.graph_);
    session_ = std::move(other.session_);
    meta_graph_def_ = std::move(other.meta_graph_def_);
  }
  return *this;
}

SavedModelBundle::~SavedModelBundle() { Release(); }

void SavedModelBundle::Release() {
  if (session_ != nullptr) session_->Close();
  session_.reset();
  graph_.reset();
}

std::map<std::string, Tensor> SavedModelBundle::RunSignature(
    const std::string& key, const std::map<std::string, Tensor>& inputs) const {
  auto found = signatures().find(key);
  if (found == signatures().end()) {
    // Sorted: the proto's map has no order of its own.
    std::set<std::string> keys;
    for (const auto& [name, signature] : signatures()) keys.insert(name);
    std::string present;
    for (const std::string& name : keys) present += StrCat(present.empty() ? "" : ", ", "'", name, "'");
    NotFound("The SavedModel has no signature '", key,
             "'; its signatures: ", present.empty() ? "none" : present);
  }
  const tensorflow::SignatureDef& signature = found->second;
  NamedFeeds feeds;
  for (const auto& [input_key, tensor] : inputs) {
    auto info = signature.inputs().find(input_key);
    if (info == signature.inputs().end()) {
      NotFound("Signature '", key, "' has no input '", input_key, "'");
    }
    if (info->second.has_coo_sparse()) {
      InvalidArgument("Signature '", key, "' input '", input_key,
                      "' is a sparse tensor: feed its component tensors through session()");
    }
    const auto dtype = static_cast<DataType>(info->second.dtype());
    if (tensor.dtype() != dtype) {
      InvalidArgument("Signature '", key, "' input '", input_key, "' (", info->second.name(), ") is ",
                      DataTypeString(dtype), ", but the tensor fed is ", DataTypeString(tensor.dtype()));
    }
    feeds.emplace_back(info->second.name(), tensor);
  }
  for (const auto& [input_key, info] : signature.inputs()) {
    if (!inputs.contains(input_key)) InvalidArgument("Signature '", key, "' needs input '", input_key, "'");
  }
  std::vector<std::string> keys, fetches;
  for (const auto& [output_key, info] : signature.outputs()) {
    if (info.has_coo_sparse()) {
      InvalidArgument("Signature '", key, "' output '", output_key,
                      "' is a sparse tensor: fetch its component tensors through session()");
    }
    keys.push_back(output_key);
    fetches.push_back(info.name());
  }
  std::vector<Tensor> values = session_->Run(feeds, fetches, {});
  std::map<std::string, Tensor> outputs;
  for (size_t i = 0; i < keys.size(); ++i) outputs.emplace(keys[i], std::move(values[i]));
  return outputs;
}

SavedModelBundle Load(const SessionOptions& options, const std::vector<std::string>& tags,
                      const std::string& export_dir) {
  const tensorflow::SavedModel saved_model = ReadSavedModel(export_dir);
  tensorflow::MetaGraphDef meta = FindMetaGraphDef(saved_model, tags, export_dir);

  auto graph = std::make_unique<Graph>();
  {
    // The asset collection holds AssetFileDefs for the loader, not graph items: not imported.
    tensorflow::MetaGraphDef to_import = meta;
    to_import.mutable_collection_def()->erase(kSavedModelAssetsKey);
    try {
      train::ImportMetaGraph(to_import, graph.get());
    } catch (const Error& e) {
      RethrowWithContext(e, StrCat("Importing the MetaGraph of SavedModel ", export_dir, ": "));
    }
  }
  CheckSignatures(meta, *graph, export_dir);
  const NamedFeeds asset_feeds = AssetFeeds(GetAssetFileDefs(meta, export_dir), *graph, export_dir);
  const std::string init_op = GetInitOpName(meta, export_dir);
  if (!init_op.empty() && graph->FindNode(init_op) == nullptr) {
    InvalidArgument("SavedModel ", export_dir, ": the init op '", init_op, "' is not in the graph");
  }

  auto session = std::make_unique<Session>(*graph, options);
  RunRestore(*session, meta, asset_feeds, export_dir);
  if (!init_op.empty()) {
    try {
      session->Run(asset_feeds, {}, {init_op});
    } catch (const Error& e) {
      RethrowWithContext(e, StrCat("Running the init op '", init_op, "' of SavedModel ", export_dir, ": "));
    }
  }
  return SavedModelBundle(std::move(graph), std::move(session), std::move(meta));
}

}  // namespace flowtrain::saved_model
