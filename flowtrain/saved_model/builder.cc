#include "flowtrain/saved_model/builder.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/op_registry.h"
#include "flowtrain/saved_model/constants.h"
#include "flowtrain/train/meta_graph.h"

namespace flowtrain::saved_model {
namespace {

namespace fs = std::filesystem;

std::string TagsString(const std::set<std::string>& tags) {
  std::string out = "{";
  for (const std::string& tag : tags) out += StrCat(out.size() > 1 ? ", " : "", "'", tag, "'");
  return out + "}";
}

void ValidateTensorInfo(const std::string& signature_key, const std::string& tensor_key,
                        const tensorflow::TensorInfo& info) {
  if (info.encoding_case() == tensorflow::TensorInfo::ENCODING_NOT_SET) {
    InvalidArgument("Invalid `tensor_info` '", tensor_key, "' of signature '", signature_key,
                    "': All TensorInfo protos used in the SignatureDefs must have one of the 'encoding' "
                    "fields (e.g., name or coo_sparse) set.");
  }
  if (info.dtype() == tensorflow::DT_INVALID) {
    InvalidArgument("Invalid `tensor_info` '", tensor_key, "' of signature '", signature_key,
                    "': All TensorInfo protos used in the SignatureDefs must have the dtype field set.");
  }
}

// TF's _validate_signature_def_map (its AssertionError and KeyError become InvalidArgument).
void ValidateSignatures(const SignatureDefMap& signatures) {
  for (const auto& [key, signature] : signatures) {
    for (const auto& [input_key, info] : signature.inputs()) ValidateTensorInfo(key, input_key, info);
    for (const auto& [output_key, info] : signature.outputs()) ValidateTensorInfo(key, output_key, info);
  }
  for (const char* reserved : {kSavedModelInitOpSignatureKey, kSavedModelTrainOpSignatureKey}) {
    if (signatures.contains(reserved)) {
      InvalidArgument(
          "SignatureDef map key \"", reserved, "\" is reserved for ",
          reserved == std::string(kSavedModelInitOpSignatureKey) ? "initialization" : "the train op",
          ". Please use a different key.");
    }
  }
}

// The file path an asset tensor holds: it must be a scalar string Const (TF's
// _asset_path_from_tensor).
std::string AssetPathFromTensor(const Output& tensor) {
  tensor.CheckValid("Asset path tensor");
  if (tensor.op().type() != "Const") {
    InvalidArgument("Asset path tensor ", tensor.name(), " must be of type constant. Has type ",
                    tensor.op().type(), " instead.");
  }
  if (tensor.dtype() != DT_STRING) {
    InvalidArgument("Asset path tensor ", tensor.name(), " must be of dtype string. Has type ",
                    DataTypeString(tensor.dtype()), " instead.");
  }
  const Tensor value = tensor.op().GetAttr<Tensor>("value");
  if (value.NumElements() != 1) InvalidArgument("Asset path tensor ", tensor.name(), " must be a scalar.");
  const std::string path = value.data<std::string>()[0];
  if (path.empty())
    InvalidArgument("Asset filepath tensor ", tensor.name(), " is invalid: it holds an empty path.");
  return path;
}

bool SameContents(const std::string& a, const std::string& b) {
  return ReadFileToString(a) == ReadFileToString(b);
}

// Removes the attrs of `node` equal to its op's default (TF's strip_default_attrs).
void StripDefaultAttrs(tensorflow::NodeDef* node) {
  const OpRegistration* reg = OpRegistry::Global()->LookUp(node->op());
  if (reg == nullptr) return;  // a function call: its attrs have no defaults
  for (const tensorflow::OpDef::AttrDef& attr : reg->def.attr()) {
    if (!attr.has_default_value()) continue;
    auto it = node->attr().find(attr.name());
    if (it != node->attr().end() &&
        google::protobuf::util::MessageDifferencer::Equals(it->second, attr.default_value())) {
      node->mutable_attr()->erase(attr.name());
    }
  }
}

}  // namespace

Builder::Builder(std::string export_dir) : export_dir_(std::move(export_dir)) {
  saved_model_.set_saved_model_schema_version(kSavedModelSchemaVersion);
  std::error_code ec;
  if (fs::exists(export_dir_, ec)) {
    if (!fs::is_directory(export_dir_, ec) || !fs::is_empty(export_dir_, ec)) {
      AlreadyExists("Export directory ", export_dir_,
                    " already exists, and isn't empty. Please choose a different export directory, or delete "
                    "all the contents of the specified directory.");
    }
  } else {
    CreateDirectories(export_dir_);
  }
}

void Builder::AddMetaGraphAndVariables(SessionInterface& session, const std::vector<std::string>& tags,
                                       const SignatureDefMap& signatures, const MetaGraphOptions& options) {
  if (graph_ != nullptr) {
    FailedPrecondition("Graph state including variables and assets has already been saved to ", export_dir_,
                       ". Please invoke `AddMetaGraph()` instead.");
  }
  AddMetaGraphOf(session.graph(), tags, signatures, options, &session);
  graph_ = &session.graph();
}

void Builder::AddMetaGraph(const std::vector<std::string>& tags, const SignatureDefMap& signatures,
                           const MetaGraphOptions& options) {
  if (graph_ == nullptr) {
    FailedPrecondition("Graph state including variables and assets has not been saved yet to ", export_dir_,
                       ". Please invoke `AddMetaGraphAndVariables()` first.");
  }
  AddMetaGraphOf(options.graph != nullptr ? *options.graph : *graph_, tags, signatures, options, nullptr);
}

void Builder::AddMetaGraphOf(Graph& graph, const std::vector<std::string>& tags,
                             const SignatureDefMap& signatures, const MetaGraphOptions& options,
                             SessionInterface* session) {
  const std::set<std::string> tag_set(tags.begin(), tags.end());
  for (const std::set<std::string>& present : tag_sets_) {
    if (present == tag_set) {
      InvalidArgument("A MetaGraph with tags ", TagsString(tag_set), " was already added to the SavedModel ",
                      export_dir_, ": each MetaGraph needs its own tag set");
    }
  }
  ValidateSignatures(signatures);

  // Assets and the main op first, so that nothing is written for a call that fails.
  std::vector<tensorflow::AssetFileDef>& asset_defs = asset_file_defs_[&graph];
  for (const Output& tensor : options.assets) AssetPathFromTensor(tensor);
  const Operation main_op = options.main_op ? options.main_op : options.legacy_init_op;
  if (main_op) {
    if (main_op.graph() != &graph) {
      InvalidArgument("main_op '", main_op.name(), "' is not an operation of the graph being saved");
    }
    for (const char* key : {kSavedModelMainOpKey, kSavedModelLegacyInitOpKey}) {
      if (!graph.GetCollectionItems(key).empty()) {
        InvalidArgument("Graph already contains one or more main ops under the collection ", key, ".");
      }
    }
  }
  std::vector<tensorflow::AssetFileDef> added = SaveAssets(options.assets);
  asset_defs.insert(asset_defs.end(), added.begin(), added.end());
  if (main_op) graph.AddToCollection(kSavedModelMainOpKey, main_op);

  std::shared_ptr<train::Saver> saver = options.saver;
  if (saver == nullptr) {
    saver = std::make_shared<train::Saver>(
        train::SaverOptions{.sharded = true, .allow_empty = true, .graph = &graph});
  }
  if (session != nullptr) {
    const std::string variables_dir = JoinPath(export_dir_, kSavedModelVariablesDirectory);
    CreateDirectories(variables_dir);
    // No state file: a SavedModel may be moved, and the loader does not read one.
    saver->Save(*session, JoinPath(variables_dir, kSavedModelVariablesFilename), {}, "checkpoint", "meta",
                /*write_meta_graph=*/false, /*write_state=*/false);
  } else {
    saver->Build();
  }

  tensorflow::MetaGraphDef meta = train::ExportMetaGraph(
      graph, saver->empty() ? nullptr : &saver->saver_def(), "", {.clear_devices = options.clear_devices});
  if (options.strip_default_attrs) {
    for (tensorflow::NodeDef& node : *meta.mutable_graph_def()->mutable_node()) StripDefaultAttrs(&node);
    for (tensorflow::FunctionDef& function :
         *meta.mutable_graph_def()->mutable_library()->mutable_function()) {
      for (tensorflow::NodeDef& node : *function.mutable_node_def()) StripDefaultAttrs(&node);
    }
    meta.mutable_meta_info_def()->set_stripped_default_attrs(true);
  }
  if (!asset_defs.empty()) {
    // TF1's builder keeps them in a collection of the graph, so every later MetaGraph has them too.
    tensorflow::CollectionDef& collection = (*meta.mutable_collection_def())[kSavedModelAssetsKey];
    for (const tensorflow::AssetFileDef& def : asset_defs)
      collection.mutable_any_list()->add_value()->PackFrom(def);
  }
  for (const std::string& tag : tags) meta.mutable_meta_info_def()->add_tags(tag);
  for (const auto& [key, signature] : signatures) (*meta.mutable_signature_def())[key] = signature;
  *saved_model_.add_meta_graphs() = std::move(meta);
  tag_sets_.push_back(tag_set);
}

std::vector<tensorflow::AssetFileDef> Builder::SaveAssets(const std::vector<Output>& assets) {
  std::vector<tensorflow::AssetFileDef> defs;
  std::map<std::string, std::string> to_copy;  // asset file name -> source path
  for (const Output& tensor : assets) {
    const std::string source = AssetPathFromTensor(tensor);
    if (!FileExists(source))
      NotFound("Asset file ", source, " (asset tensor ", tensor.name(), ") does not exist");
    // A base name already taken by a different file gets a suffix: "vocab.txt_1" (TF's rule).
    std::string filename = Basename(source);
    for (int i = 1;; ++i) {
      auto taken = asset_sources_.find(filename);
      if (taken == asset_sources_.end() || taken->second == source || SameContents(taken->second, source))
        break;
      filename = StrCat(Basename(source), "_", i);
    }
    asset_sources_.emplace(filename, source);
    to_copy.emplace(filename, source);
    tensorflow::AssetFileDef def;
    def.set_filename(filename);
    def.mutable_tensor_info()->set_name(tensor.name());
    defs.push_back(std::move(def));
  }
  if (to_copy.empty()) return defs;
  const std::string assets_dir = JoinPath(export_dir_, kSavedModelAssetsDirectory);
  CreateDirectories(assets_dir);
  for (const auto& [filename, source] : to_copy) {
    const std::string destination = JoinPath(assets_dir, filename);
    if (FileExists(destination)) continue;  // copied by an earlier MetaGraph
    WriteFileAtomically(destination, ReadFileToString(source));
  }
  return defs;
}

std::string Builder::Save(bool as_text) {
  CreateDirectories(export_dir_);
  std::string contents;
  std::string path;
  if (as_text) {
    path = JoinPath(export_dir_, kSavedModelFilenamePbTxt);
    if (!google::protobuf::TextFormat::PrintToString(saved_model_, &contents)) {
      Internal("The SavedModel of ", export_dir_, " cannot be printed as text");
    }
  } else {
    path = JoinPath(export_dir_, kSavedModelFilenamePb);
    // Deterministic, as TF writes it: the same model gives the same bytes.
    bool serialized = false;
    {
      google::protobuf::io::StringOutputStream stream(&contents);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      serialized = saved_model_.SerializeToCodedStream(&coded);
    }
    if (!serialized) InvalidArgument("The SavedModel of ", export_dir_, " cannot be serialized (over 2 GB?)");
  }
  WriteFileAtomically(path, contents);
  FT_LOG(INFO) << "SavedModel written to: " << path;
  return path;
}

}  // namespace flowtrain::saved_model
