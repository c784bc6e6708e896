// Graph: a dataflow graph of Nodes, built with op functions and run by a Session. As in TF1,
// a graph carries the building context — name scopes, control dependencies, device scopes —
// and named collections (variables, summaries, queue runners, savers...).
//
//   Graph g;
//   auto as_default = g.AsDefault();              // `with g.as_default():`
//   {
//     auto scope = g.NameScope("dense");          // `with tf.name_scope("dense"):`
//     Output w = ops::Const(1.0f);                // named "dense/Const"
//   }
//   g.AddToCollection(GraphKeys::kSummaries, summary_op);
//   g.Finalize();                                 // further changes throw
//
// The default graph is process-wide, with a per-thread stack of graphs made default by
// AsDefault() guards; op functions build into the graph of their inputs, or the default.
// Building from several threads at once is safe; scopes are per graph, not per thread.
#ifndef FLOWTRAIN_GRAPH_GRAPH_H_
#define FLOWTRAIN_GRAPH_GRAPH_H_

#include <any>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/graph/function_library.h"
#include "flowtrain/graph/node.h"
#include "flowtrain/graph/operation.h"
#include "flowtrain/proto/graph.pb.h"

namespace flowtrain {

// TF's `tf.GraphKeys` collection names, with the same string values.
struct GraphKeys {
  static constexpr const char* kGlobalVariables = "variables";
  static constexpr const char* kLocalVariables = "local_variables";
  static constexpr const char* kModelVariables = "model_variables";
  static constexpr const char* kTrainableVariables = "trainable_variables";
  static constexpr const char* kSummaries = "summaries";
  static constexpr const char* kQueueRunners = "queue_runners";
  static constexpr const char* kTableInitializers = "table_initializer";
  static constexpr const char* kAssetFilepaths = "asset_filepaths";
  static constexpr const char* kMovingAverageVariables = "moving_average_variables";
  static constexpr const char* kRegularizationLosses = "regularization_losses";
  static constexpr const char* kConcatenatedVariables = "concatenated_variables";
  static constexpr const char* kSavers = "savers";
  static constexpr const char* kSaveableObjects = "saveable_objects";
  static constexpr const char* kResources = "resources";
  static constexpr const char* kLocalResources = "local_resources";
  static constexpr const char* kTrainableResourceVariables = "trainable_resource_variables";
  static constexpr const char* kInitOp = "init_op";
  static constexpr const char* kLocalInitOp = "local_init_op";
  static constexpr const char* kReadyOp = "ready_op";
  static constexpr const char* kReadyForLocalInitOp = "ready_for_local_init_op";
  static constexpr const char* kSummaryOp = "summary_op";
  static constexpr const char* kGlobalStep = "global_step";
  static constexpr const char* kEvalStep = "eval_step";
  static constexpr const char* kTrainOp = "train_op";
  static constexpr const char* kUpdateOps = "update_ops";
  static constexpr const char* kLosses = "losses";
  static constexpr const char* kCondContext = "cond_context";
  static constexpr const char* kWhileContext = "while_context";
};

// Undoes a building-context change when it goes out of scope. Move-only.
class [[nodiscard]] ScopeGuard {
 public:
  ScopeGuard() = default;
  explicit ScopeGuard(std::function<void()> on_exit) : on_exit_(std::move(on_exit)) {}
  ScopeGuard(ScopeGuard&& other) noexcept : on_exit_(std::move(other.on_exit_)) { other.on_exit_ = nullptr; }
  ScopeGuard& operator=(ScopeGuard&& other) noexcept;
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  ~ScopeGuard();
  // Undoes the change now instead of at scope exit.
  void Exit();

 private:
  std::function<void()> on_exit_;
};

// Chooses a device for a node being built (TF's device functions, e.g. replica_device_setter).
// Receives the node's op type, name and the device requested so far.
using DeviceFunction = std::function<std::string(std::string_view op_type, std::string_view node_name,
                                                 std::string_view requested_device)>;

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Makes this the default graph of the calling thread until the guard is destroyed.
  ScopeGuard AsDefault();

  // ---- Building context ----
  // Enters name scope `name` (made unique: "dense", then "dense_1"); a name ending in "/" is
  // re-entered as is, "" returns to the root scope.
  ScopeGuard NameScope(std::string_view name);
  // The current scope, e.g. "dense/" (empty at the root).
  std::string CurrentNameScope() const;
  // Every op built inside gets control inputs on `ops` (nested scopes accumulate).
  ScopeGuard ControlDependencies(const std::vector<Operation>& ops);
  // Ops built inside get no control dependencies from enclosing scopes.
  ScopeGuard ClearControlDependencies();
  // Ops built inside request `device` unless they name one themselves.
  ScopeGuard Device(std::string device);
  // Ops built inside get their device from `fn` (innermost function wins).
  ScopeGuard Device(DeviceFunction fn);
  // Ops built inside are colocated with `op` (attr `_class: loc:@op`, and op's device).
  ScopeGuard ColocateWith(Operation op);
  // Returns a name unique in this graph: `name` if free, else name_1, name_2, ...
  std::string UniqueName(std::string_view name);

  // ---- Nodes ----
  int num_nodes() const;
  Node* node(int id) const;
  Node* FindNode(std::string_view name) const;
  // Throws InvalidArgument if there is no such operation (TF: KeyError).
  Operation GetOperationByName(std::string_view name) const;
  // "name:index"; throws InvalidArgument if missing or the index is out of range.
  Output GetTensorByName(std::string_view name) const;
  std::vector<Operation> operations() const;
  // Increases with every node added and every input updated; sessions use it to notice a
  // graph that changed.
  int64_t version() const;
  // Replaces data input `index` of `op` with `new_input`, as TF's `op._update_input`: how a
  // while loop closes its cycle (a Merge's second input becomes the NextIteration made after
  // it). The dtype must match the input's; the op's output shapes are inferred again and
  // relaxed to cover both the old and new inputs. Throws InvalidArgument on a bad index, a
  // dtype mismatch or an input from another graph, FailedPrecondition once finalized.
  void UpdateInput(Operation op, int index, Output new_input);
  // Adds a control input on `control` to `op` (TF's `op._add_control_input`): how a cond
  // branch or loop body gates the constants built inside it. No-op if already there.
  // Throws InvalidArgument for an op of another graph, FailedPrecondition once finalized.
  void AddControlInput(Operation op, Operation control);
  // Replaces the inferred shape of output `index` of `op` with `shape`, which must be
  // compatible with it (a while loop's shape invariants relax the shape its Enters infer).
  // Ops built later see the new shape. Throws InvalidArgument on a bad index or an
  // incompatible shape.
  void SetOutputShape(Operation op, int index, const PartialTensorShape& shape);
  // Calls `fn` with every node added until the guard exits (the innermost callback only),
  // once the node is in the graph: how the ops layer's control-flow contexts learn which
  // nodes a cond branch or loop body builds (TF's ControlFlowContext.AddOp). `fn` may add
  // nodes itself (they are passed to `fn` too). Guards must exit in reverse order.
  ScopeGuard OnNodeAdded(std::function<void(Operation)> fn);

  // ---- Collections ----
  void AddToCollection(std::string_view key, std::any value);
  // A copy of the collection's items (empty if none).
  std::vector<std::any> GetCollectionItems(std::string_view key) const;
  // The items of type T, in insertion order.
  template <typename T>
  std::vector<T> GetCollection(std::string_view key) const;
  void ClearCollection(std::string_view key);
  std::vector<std::string> CollectionKeys() const;

  // ---- Lifecycle ----
  // After Finalize, adding a node throws FailedPrecondition (TF's RuntimeError message).
  void Finalize();
  bool finalized() const;
  // TF's `_unsafe_unfinalize`, used by MonitoredSession::Close.
  void Unfinalize();

  // Graph-level random seed (tf.set_random_seed); nullopt when unset.
  std::optional<int64_t> seed() const;
  void set_seed(int64_t seed);
  // Per-op seeds made as TF 2.x's get_seed does when only the graph seed is set: 0, 1, 2, ...
  // in the order ops ask for them.
  int64_t NextOpSeed();

  // ---- Functions ----
  // The functions the graph carries (GraphDef.library): filled by ImportGraphDef, written by
  // ToGraphDef. Ops that call them (PartitionedCall, If, While...) name them in func attrs.
  FunctionLibrary& library() { return library_; }
  const FunctionLibrary& library() const { return library_; }

  // ---- Serialization ----
  // A GraphDef with TF's op and attr names and the function library; `add_shapes` adds
  // `_output_shapes` attrs.
  tensorflow::GraphDef ToGraphDef(bool add_shapes = false) const;

  // ---- Used by NodeBuilder ----
  struct BuildContext {
    std::vector<Node*> control_dependencies;
    std::string device;
    std::vector<std::string> colocation;  // "loc:@name" entries
  };
  BuildContext CurrentBuildContext(std::string_view op_type, std::string_view node_name) const;
  Node* AddNode(std::unique_ptr<Node> node);
  // Passes a node NodeBuilder has just added to the innermost OnNodeAdded callback.
  void NotifyNodeAdded(Node* node);
  void CheckNotFinalized() const;

 private:
  struct ControlFrame {
    bool clears = false;
    std::vector<Node*> ops;
  };

  // Guards everything below, so sessions and builders on other threads see a consistent graph.
  mutable absl::Mutex mu_;
  std::deque<std::unique_ptr<Node>> nodes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Node*, std::less<>> nodes_by_name_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int, std::less<>> names_in_use_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::any>, std::less<>> collections_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> name_stack_ ABSL_GUARDED_BY(mu_);
  std::vector<ControlFrame> control_frames_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> device_stack_ ABSL_GUARDED_BY(mu_);
  std::vector<DeviceFunction> device_functions_ ABSL_GUARDED_BY(mu_);
  std::vector<Node*> colocation_stack_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<std::function<void(Operation)>>> node_added_callbacks_ ABSL_GUARDED_BY(mu_);
  bool finalized_ ABSL_GUARDED_BY(mu_) = false;
  int64_t input_updates_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<int64_t> seed_ ABSL_GUARDED_BY(mu_);
  int64_t next_op_seed_ ABSL_GUARDED_BY(mu_) = 0;
  FunctionLibrary library_;  // synchronises itself
};

// Names an op that builds helper nodes (shape constants, initial values) under its own name,
// as TF's `with tf.name_scope(name) as scope: ...; op(name=scope)`: helpers become
// "Reshape/shape" and the op itself "Reshape" (both unique in the graph).
//
//   OpNameScope scope(graph, "Reshape");
//   Output shape = ops::Const(dims, "shape");                       // "Reshape/shape"
//   scope.Exit();
//   NodeBuilder("Reshape", scope.op_name()).ExactName()...          // "Reshape"
class OpNameScope {
 public:
  OpNameScope(Graph& graph, std::string_view name);
  // The op's full name, e.g. "dense/Reshape".
  const std::string& op_name() const { return op_name_; }
  void Exit() { guard_.Exit(); }

 private:
  std::string op_name_;
  ScopeGuard guard_;
};

// The calling thread's default graph: the innermost AsDefault() graph, else the process-wide
// default graph.
Graph& GetDefaultGraph();
// Replaces the process-wide default graph with a new empty one (tf.reset_default_graph).
// Throws FailedPrecondition while any thread has a graph made default with AsDefault().
void ResetDefaultGraph();

template <typename T>
std::vector<T> Graph::GetCollection(std::string_view key) const {
  std::vector<T> out;
  for (const std::any& item : GetCollectionItems(key)) {
    if (const T* value = std::any_cast<T>(&item)) out.push_back(*value);
  }
  return out;
}

}  // namespace flowtrain

#endif  // FLOWTRAIN_GRAPH_GRAPH_H_
