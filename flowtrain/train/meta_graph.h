// MetaGraphDef export and import: the `.meta` file written beside every checkpoint (TF's
// tf.train.export_meta_graph / import_meta_graph). A MetaGraphDef holds the GraphDef (with
// shapes), the ops it uses (stripped_op_list), the SaverDef and the graph's collections, so a
// program can rebuild the training graph from it and resume from a checkpoint.
//
//   train::ExportMetaGraph(g, &saver.saver_def(), "runs/x/model.ckpt-1200.meta");
//
//   Graph g2;
//   std::shared_ptr<train::Saver> saver = train::ImportMetaGraph("runs/x/model.ckpt-1200.meta", &g2);
//   Session sess(g2);
//   saver->Restore(sess, "runs/x/model.ckpt-1200");
//
// Collections are written as TF writes them: variable collections ("variables",
// "trainable_variables", "global_step", ...) as bytes_list of VariableDef protos, "savers" as
// SaverDefs, QueueRunners ("queue_runners") as QueueRunnerDefs, collections of
// Operations/Outputs as node_list of names ("train", "loss:0");
// items of other types are skipped with a warning, as TF does. Import rebuilds the same
// collections (unknown bytes_list kinds, e.g. TF's cond_context, are skipped with a warning).
#ifndef FLOWTRAIN_TRAIN_META_GRAPH_H_
#define FLOWTRAIN_TRAIN_META_GRAPH_H_

#include <memory>
#include <string>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/proto/meta_graph.pb.h"
#include "flowtrain/proto/saver.pb.h"
#include "flowtrain/proto/variable.pb.h"

namespace flowtrain::train {

class Saver;

// What tensorflow_version says in the MetaGraphDefs flowtrain writes: TF's version whose
// formats flowtrain follows, so TF's loaders accept the file.
inline constexpr char kMetaGraphTensorflowVersion[] = "1.15.0";
// tensorflow_git_version of our files: marks them as written by flowtrain.
inline constexpr char kMetaGraphGitVersion[] = "flowtrain-0.1.0";

struct ExportMetaGraphOptions {
  // Keep requested devices in the GraphDef (TF's clear_devices=False).
  bool clear_devices = false;
  // Add `_output_shapes` to every node (TF's savers do).
  bool add_shapes = true;
};

// The MetaGraphDef of `graph` with `saver_def` (if given); written in binary, atomically, to
// `filename` when it is not empty.
tensorflow::MetaGraphDef ExportMetaGraph(const Graph& graph, const tensorflow::SaverDef* saver_def = nullptr,
                                         const std::string& filename = "",
                                         const ExportMetaGraphOptions& options = {});

// The VariableDef TF writes for `variable` into the variable collections.
tensorflow::VariableDef ToVariableDef(const Variable& variable);

// Imports the MetaGraphDef's graph into `graph` (which should be empty: names are kept as they
// are), rebuilds its collections and returns a Saver for its SaverDef (nullptr if it has none).
// NotFound naming the op if the graph uses an op flowtrain does not have.
std::shared_ptr<Saver> ImportMetaGraph(const tensorflow::MetaGraphDef& meta_graph, Graph* graph);
// Reads a `.meta` file (binary MetaGraphDef) first. NotFound if missing, DataLoss if it does
// not parse.
std::shared_ptr<Saver> ImportMetaGraph(const std::string& filename, Graph* graph);

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_META_GRAPH_H_
