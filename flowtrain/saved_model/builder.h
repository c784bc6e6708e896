// Builder: writes a SavedModel directory (TF's tf.compat.v1.saved_model.Builder): one or more
// MetaGraphs, each tagged with a set of tags and carrying its signatures, sharing one copy of
// the variables and the assets. TF and flowtrain's saved_model::Load read it.
//
//   saved_model::Builder builder("export/1");
//   builder.AddMetaGraphAndVariables(
//       sess, {saved_model::kServing},
//       {{saved_model::kDefaultServingSignatureDefKey, saved_model::PredictSignatureDef({{"x", x}}, {{"y",
//       y}})}},
//       {.assets = {vocab_path}, .main_op = ops::TablesInitializer()});
//   builder.AddMetaGraph({saved_model::kTraining}, {}, {});  // same variables, another graph view
//   std::string path = builder.Save();                       // "export/1/saved_model.pb"
//
// As in TF, building a MetaGraph adds to the graph: a "save/" subgraph (the default Saver),
// and the main op to the "saved_model_main_op" collection. `assets.extra/` beside `assets/` is
// left to the user (constants.h). A Builder is used from one thread.
#ifndef FLOWTRAIN_SAVED_MODEL_BUILDER_H_
#define FLOWTRAIN_SAVED_MODEL_BUILDER_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/operation.h"
#include "flowtrain/proto/meta_graph.pb.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/saved_model/signature_def_utils.h"
#include "flowtrain/train/saver.h"

namespace flowtrain::saved_model {

// TF's keyword arguments of add_meta_graph(_and_variables) besides tags and signatures.
struct MetaGraphOptions {
  // Asset filename tensors (TF's assets_collection): each a scalar string Const holding the path
  // of a file that is copied into `assets/` under its base name (a different file of the same
  // base name gets "name_1", as TF). The loader feeds each tensor the copy's path. TF's way,
  // the graph's ASSET_FILEPATHS collection, is `graph.GetCollection<Output>(GraphKeys::kAssetFilepaths)`.
  std::vector<Output> assets = {};
  // The op the loader runs after restoring the variables (collection "saved_model_main_op").
  Operation main_op = {};
  // TF's deprecated name for the same: used when main_op is null (TF 1.15 maps it to main_op).
  Operation legacy_init_op = {};
  // Leave devices out of the GraphDef, so the model loads on any machine.
  bool clear_devices = false;
  // Leave out attrs whose value is their OpDef's default (meta_info_def.stripped_default_attrs).
  bool strip_default_attrs = false;
  // The Saver whose SaverDef goes into the MetaGraph (and that saves the variables); default: a
  // new sharded Saver over every global variable and saveable object, allowed to be empty.
  std::shared_ptr<train::Saver> saver = nullptr;
  // The graph of AddMetaGraph (AddMetaGraphAndVariables takes the session's); default: that of
  // the preceding AddMetaGraphAndVariables.
  Graph* graph = nullptr;
};

class Builder {
 public:
  // A builder writing into `export_dir`, created (with its parents) if missing.
  // AlreadyExists if `export_dir` exists and is not empty.
  explicit Builder(std::string export_dir);
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  // Saves the variables of `session` to `variables/variables`, copies the assets, and adds the
  // graph's MetaGraph under `tags` with `signatures`. Once per builder, first:
  // FailedPrecondition if called again. InvalidArgument for a signature whose TensorInfo has no
  // name or dtype, a reserved signature key ("__saved_model_init_op"), a tag set already added,
  // an asset tensor that is not a scalar string Const, or a graph already holding a main op.
  void AddMetaGraphAndVariables(SessionInterface& session, const std::vector<std::string>& tags,
                                const SignatureDefMap& signatures = {}, const MetaGraphOptions& options = {});

  // Adds another MetaGraph (of options.graph, or the first one's graph) that uses the
  // variables already saved. FailedPrecondition before AddMetaGraphAndVariables; otherwise the
  // errors of AddMetaGraphAndVariables.
  void AddMetaGraph(const std::vector<std::string>& tags, const SignatureDefMap& signatures = {},
                    const MetaGraphOptions& options = {});

  // Writes saved_model.pb (or, with `as_text`, saved_model.pbtxt) atomically and returns its
  // path. May be called again after more MetaGraphs are added.
  std::string Save(bool as_text = false);

  // The SavedModel built so far.
  const tensorflow::SavedModel& saved_model() const { return saved_model_; }

 private:
  void AddMetaGraphOf(Graph& graph, const std::vector<std::string>& tags, const SignatureDefMap& signatures,
                      const MetaGraphOptions& options, SessionInterface* session);
  // Copies the asset files and returns their AssetFileDefs.
  std::vector<tensorflow::AssetFileDef> SaveAssets(const std::vector<Output>& assets);

  std::string export_dir_;
  tensorflow::SavedModel saved_model_;
  Graph* graph_ = nullptr;  // the graph of AddMetaGraphAndVariables; null until then
  std::map<std::string, std::string> asset_sources_;  // asset file name -> the file copied there
  // The AssetFileDefs added for each graph so far: every later MetaGraph of the graph lists them
  // too, as TF1's builder keeps them in a collection of the graph.
  std::map<const Graph*, std::vector<tensorflow::AssetFileDef>> asset_file_defs_;
  std::vector<std::set<std::string>> tag_sets_;
};

}  // namespace flowtrain::saved_model

#endif  // FLOWTRAIN_SAVED_MODEL_BUILDER_H_
