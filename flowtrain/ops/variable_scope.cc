#include "flowtrain/ops/variable_scope.h"

#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::ops {
namespace {

constexpr const char* kVariableStoreKey = "__variable_store";

struct ScopeFrame {
  std::string name;
  Reuse reuse;  // resolved: kInherit here means "do not reuse"
  Initializer initializer;
  bool use_resource = false;
};

// Per-graph state: the variables made by GetVariable and the stack of variable scopes.
struct VariableStore {
  absl::Mutex mu;
  std::map<std::string, Variable, std::less<>> variables ABSL_GUARDED_BY(mu);
  std::vector<ScopeFrame> scopes ABSL_GUARDED_BY(mu);
};

std::shared_ptr<VariableStore> StoreOf(Graph& graph) {
  // Makes find-or-create atomic (the collection itself is guarded by the graph).
  static absl::Mutex create_mu(absl::kConstInit);
  absl::MutexLock lock(&create_mu);
  for (const std::any& item : graph.GetCollectionItems(kVariableStoreKey)) {
    if (auto* store = std::any_cast<std::shared_ptr<VariableStore>>(&item)) return *store;
  }
  auto store = std::make_shared<VariableStore>();
  graph.AddToCollection(kVariableStoreKey, store);
  return store;
}

}  // namespace

VariableScope::VariableScope(std::string_view name, VariableScopeOptions options, Graph* graph)
    : graph_(graph != nullptr ? *graph : GetDefaultGraph()) {
  if (name.empty()) InvalidArgument("VariableScope: the name must not be empty");
  auto store = StoreOf(graph_);
  {
    absl::MutexLock lock(&store->mu);
    const ScopeFrame* outer = store->scopes.empty() ? nullptr : &store->scopes.back();
    name_ = outer != nullptr ? StrCat(outer->name, "/", name) : std::string(name);
    reuse_ = options.reuse;
    if (reuse_ == Reuse::kInherit && outer != nullptr) reuse_ = outer->reuse;
    // AUTO_REUSE is sticky, as in TF: inner scopes cannot turn it back into plain reuse.
    if (outer != nullptr && outer->reuse == Reuse::kAutoReuse) reuse_ = Reuse::kAutoReuse;
    Initializer initializer = options.initializer;
    if (!initializer && outer != nullptr) initializer = outer->initializer;
    const bool use_resource = options.use_resource.value_or(outer != nullptr && outer->use_resource);
    store->scopes.push_back({name_, reuse_, initializer, use_resource});
  }
  if (options.auxiliary_name_scope) {
    name_scope_ = graph_.NameScope(name);
    original_name_scope_ = graph_.CurrentNameScope();
  }
}

VariableScope::~VariableScope() {
  name_scope_.Exit();
  auto store = StoreOf(graph_);
  absl::MutexLock lock(&store->mu);
  if (!store->scopes.empty()) store->scopes.pop_back();
}

std::string CurrentVariableScopeName(Graph* graph) {
  auto store = StoreOf(graph != nullptr ? *graph : GetDefaultGraph());
  absl::MutexLock lock(&store->mu);
  return store->scopes.empty() ? std::string() : store->scopes.back().name;
}

Variable GetVariable(std::string_view name, const TensorShape& shape, DataType dtype, Initializer initializer,
                     const GetVariableOptions& options) {
  Graph& graph = GetDefaultGraph();
  auto store = StoreOf(graph);
  std::string full_name;
  Reuse reuse = Reuse::kInherit;
  bool use_resource = false;
  {
    absl::MutexLock lock(&store->mu);
    if (!store->scopes.empty()) {
      const ScopeFrame& scope = store->scopes.back();
      full_name = StrCat(scope.name, "/", name);
      reuse = scope.reuse;
      if (!initializer) initializer = scope.initializer;
      use_resource = scope.use_resource;
    } else {
      full_name = std::string(name);
    }
    auto it = store->variables.find(full_name);
    if (it != store->variables.end()) {
      if (reuse == Reuse::kInherit) {
        InvalidArgument("Variable ", full_name,
                        " already exists, disallowed. Did you mean to set reuse=True or "
                        "reuse=tf.AUTO_REUSE in VarScope?");
      }
      const Variable& found = it->second;
      if (!found.shape().IsCompatibleWith(PartialTensorShape(shape))) {
        InvalidArgument("Trying to share variable ", full_name, ", but specified shape ", shape.DebugString(),
                        " and found shape ", found.shape().DebugString(), ".");
      }
      if (found.dtype() != dtype) {
        InvalidArgument("Trying to share variable ", full_name, ", but specified dtype ",
                        DataTypeString(dtype), " and found dtype ", DataTypeString(found.dtype()), ".");
      }
      return found;
    }
    if (reuse == Reuse::kReuse) {
      InvalidArgument("Variable ", full_name,
                      " does not exist, or was not created with tf.get_variable(). Did you mean "
                      "to set reuse=tf.AUTO_REUSE in VarScope?");
    }
  }
  if (!initializer) {
    if (IsFloatingType(dtype)) {
      initializer = GlorotUniformInitializer();
    } else if (dtype == DT_BOOL || IsIntegerType(dtype)) {
      initializer = ZerosInitializer();
    } else {
      InvalidArgument("An initializer for variable ", full_name, " of ", DataTypeString(dtype),
                      " is required");
    }
  }
  // Variable names depend only on variable scopes, so build at the root name scope.
  auto as_default = graph.AsDefault();
  auto root = graph.NameScope("");
  Variable v([&] { return initializer(shape, dtype); },
             VariableOptions{.name = full_name,
                             .trainable = options.trainable,
                             .collections = options.collections,
                             .use_resource = options.use_resource.value_or(use_resource)});
  if (v.dtype() != dtype) {
    InvalidArgument("GetVariable ", full_name, ": the initializer made ", DataTypeString(v.dtype()),
                    ", expected ", DataTypeString(dtype));
  }
  absl::MutexLock lock(&store->mu);
  store->variables.emplace(full_name, v);
  return v;
}

}  // namespace flowtrain::ops
