// Loading a SavedModel into a Session (TF's LoadSavedModel in cc/saved_model/loader.h): the
// MetaGraph of the requested tags is imported into a new Graph, its variables are restored by
// running the SaverDef's restore op on `variables/variables`, and its init op (TF2's
// "__saved_model_init_op" signature, else the "saved_model_main_op" collection, else
// "legacy_init_op") runs with every asset tensor fed the path of its file in `assets/`.
// Works for SavedModels TF1's Builder and TF2's tf.saved_model.save write, and flowtrain's.
//
//   saved_model::SavedModelBundle bundle = saved_model::Load({}, {saved_model::kServing}, "export/1");
//   std::map<std::string, Tensor> out =
//       bundle.RunSignature(saved_model::kDefaultServingSignatureDefKey, {{"x", batch}});
//   Tensor y = out.at("y");
//   // or by hand: bundle.session().Run({{signature.inputs().at("x").name(), batch}}, {...}, {});
#ifndef FLOWTRAIN_SAVED_MODEL_LOADER_H_
#define FLOWTRAIN_SAVED_MODEL_LOADER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/proto/meta_graph.pb.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/runtime/session_options.h"

namespace flowtrain::saved_model {

// A loaded SavedModel: owns the Graph, the Session on it (closed and destroyed before the
// graph) and the MetaGraphDef it came from. Movable, not copyable. Its session may be run from
// several threads, as any Session.
class SavedModelBundle {
 public:
  SavedModelBundle(std::unique_ptr<Graph> graph, std::unique_ptr<Session> session,
                   tensorflow::MetaGraphDef meta_graph_def);
  SavedModelBundle(SavedModelBundle&&) = default;
  // Releases this bundle's session, then its graph, before taking `other`'s.
  SavedModelBundle& operator=(SavedModelBundle&& other) noexcept;
  ~SavedModelBundle();

  Graph& graph() const { return *graph_; }
  Session& session() const { return *session_; }
  const tensorflow::MetaGraphDef& meta_graph_def() const { return meta_graph_def_; }
  // Signature key -> SignatureDef.
  const google::protobuf::Map<std::string, tensorflow::SignatureDef>& signatures() const {
    return meta_graph_def_.signature_def();
  }

  // Runs signature `key`: feeds each of `inputs` (keyed by the signature's input keys) to its
  // tensor and returns every output of the signature by its key. NotFound for an unknown
  // signature (listing those present) or input key; InvalidArgument for a missing input, or a
  // fed tensor whose dtype differs from the signature's; errors of the run propagate.
  std::map<std::string, Tensor> RunSignature(const std::string& key,
                                             const std::map<std::string, Tensor>& inputs) const;

 private:
  // Closes and destroys the session, then the graph.
  void Release();

  // Declared in this order so the session goes before the graph it runs.
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<Session> session_;
  tensorflow::MetaGraphDef meta_graph_def_;
};

// Loads the MetaGraph of `export_dir` tagged `tags` into a new session with `options`.
// Errors: those of ReadSavedModel and FindMetaGraphDef; NotFound naming the op for a graph
// using an op flowtrain lacks; NotFound naming variables/variables.index when the MetaGraph
// has a SaverDef but the variables were not saved; the restore op's errors (a missing data
// file, a variable missing from the checkpoint) and the init op's, each prefixed by the step
// and the directory; InvalidArgument for a signature naming a tensor the graph lacks.
SavedModelBundle Load(const SessionOptions& options, const std::vector<std::string>& tags,
                      const std::string& export_dir);

}  // namespace flowtrain::saved_model

#endif  // FLOWTRAIN_SAVED_MODEL_LOADER_H_
