#include "flowtrain/train/scaffold.h"

#include <algorithm>

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/ops/random_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/summary/summary.h"
#include "flowtrain/train/saver.h"

namespace flowtrain::train {
namespace {

// TF's Scaffold.get_or_default: the collection's single item, else build and add it.
template <typename T>
T GetOrDefault(Graph& graph, std::string_view arg_name, std::string_view key,
               const std::function<T()>& make) {
  std::vector<T> items = graph.GetCollection<T>(key);
  if (items.size() > 1) {
    FailedPrecondition("More than one item in the collection \"", key,
                       "\". Please indicate which one to use by passing it to the constructor as ", arg_name);
  }
  if (items.size() == 1) return items[0];
  T value = make();
  if (value) graph.AddToCollection(key, value);
  return value;
}

// What exact_resume adds to the default saver: the iterators and random op states that
// SAVEABLE_OBJECTS does not already hold.
std::vector<std::shared_ptr<SaveableObject>> InputAndRandomStates(Graph& graph) {
  const std::vector<std::shared_ptr<SaveableObject>> registered =
      graph.GetCollection<std::shared_ptr<SaveableObject>>(GraphKeys::kSaveableObjects);
  auto is_registered = [&](const std::function<bool(const SaveableObject&)>& matches) {
    return std::any_of(registered.begin(), registered.end(),
                       [&](const std::shared_ptr<SaveableObject>& s) { return s != nullptr && matches(*s); });
  };
  std::vector<std::shared_ptr<SaveableObject>> states;
  for (const Output& handle : graph.GetCollection<Output>(data::kGlobalIterators)) {
    if (!is_registered([&](const SaveableObject& s) { return s.op == handle.op(); })) {
      states.push_back(data::MakeSaveableFromIterator(data::Iterator::FromHandle(handle)));
    }
  }
  if (ops::DrawsRandomNumbersInSteps(graph) && !is_registered([](const SaveableObject& s) {
        return s.op && s.op.node()->type() == "RandomOpStates";
      })) {
    states.push_back(ops::MakeSaveableRandomOpStates(&graph));
  }
  return states;
}

}  // namespace

Operation Scaffold::DefaultLocalInitOp(Graph& graph) {
  std::vector<Operation> inits = {ops::LocalVariablesInitializer(&graph)};
  for (const Operation& op : graph.GetCollection<Operation>(GraphKeys::kTableInitializers)) {
    inits.push_back(op);
  }
  return ops::Group(inits, "group_deps");
}

void Scaffold::Finalize(Graph& graph) {
  if (finalized_) {
    graph.Finalize();
    return;
  }
  auto as_default = graph.AsDefault();
  if (!init_op) {
    init_op = GetOrDefault<Operation>(graph, "init_op", GraphKeys::kInitOp, [&] {
      return ops::Group({ops::GlobalVariablesInitializer(&graph)}, "group_deps");
    });
  }
  if (!ready_op) {
    ready_op = GetOrDefault<Output>(graph, "ready_op", GraphKeys::kReadyOp, [&] {
      return ops::ReportUninitializedVariables(std::nullopt, "report_uninitialized_variables", &graph);
    });
  }
  if (!ready_for_local_init_op) {
    ready_for_local_init_op =
        GetOrDefault<Output>(graph, "ready_for_local_init_op", GraphKeys::kReadyForLocalInitOp, [&] {
          return ops::ReportUninitializedVariables(ops::GlobalVariables(&graph),
                                                   "report_uninitialized_variables_1", &graph);
        });
  }
  if (!local_init_op) {
    local_init_op = GetOrDefault<Operation>(graph, "local_init_op", GraphKeys::kLocalInitOp,
                                            [&] { return DefaultLocalInitOp(graph); });
  }
  if (!summary_op) {
    summary_op = GetOrDefault<Output>(graph, "summary_op", GraphKeys::kSummaryOp,
                                      [&] { return summary::MergeAll(GraphKeys::kSummaries, &graph); });
  }
  if (saver == nullptr) {
    saver = exact_resume ? GetSaverOrDefault(graph, [&] { return InputAndRandomStates(graph); })
                         : GetSaverOrDefault(graph);
  }
  graph.Finalize();
  FT_LOG(INFO) << "Graph was finalized.";
  finalized_ = true;
}

}  // namespace flowtrain::train
