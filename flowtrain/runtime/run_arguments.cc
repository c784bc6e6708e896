#include "flowtrain/runtime/run_arguments.h"

#include <algorithm>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {
namespace {

std::string OperationRepr(const Operation& op) {
  return StrCat("name: \"", op.name(), "\" op: \"", op.type(), "\"");
}

int64_t EndpointKey(const Node* node, int index) { return (static_cast<int64_t>(node->id()) << 16) | index; }

void CheckTargetInGraph(const Graph& graph, const Operation& op) {
  if (!op || op.graph() != &graph) {
    InvalidArgument("Fetch argument ", op ? OperationRepr(op) : std::string("<empty>"),
                    " cannot be interpreted as a Tensor. (Operation ",
                    op ? OperationRepr(op) : std::string("<empty>"), " is not an element of this graph.)");
  }
}

}  // namespace

RunArguments CheckRunArguments(const Graph& graph, const FeedList& feeds, const FetchList& fetches,
                               const std::vector<Operation>& targets) {
  if (graph.num_nodes() == 0) {
    FailedPrecondition("The Session graph is empty.  Add operations to the graph before calling run().");
  }
  RunArguments args;
  args.feeds.reserve(feeds.size());
  args.feed_values.reserve(feeds.size());
  for (const auto& [output, value] : feeds) {
    // An index past the op's outputs (an op with none converted to an Output) would have the
    // executor read past the node's output list; reject it here, naming the op.
    if (output) output.CheckValid("Feed");
    if (!output || output.graph() != &graph) {
      InvalidArgument("Cannot interpret feed_dict key as Tensor: Tensor ",
                      output ? output.DebugString() : std::string("<empty>"),
                      " is not an element of this graph.");
    }
    if (!value.IsInitialized()) InvalidArgument("Feed for ", output.name(), " is an empty tensor");
    if (value.dtype() != output.dtype()) {
      InvalidArgument("Cannot feed value of type ", DataTypeString(value.dtype()), " for Tensor '",
                      output.name(), "', which has type ", DataTypeString(output.dtype()));
    }
    if (!output.shape().IsCompatibleWith(value.shape())) {
      InvalidArgument("Cannot feed value of shape ", value.shape().DebugString(), " for Tensor '",
                      output.name(), "', which has shape ", output.shape().DebugString());
    }
    args.feeds.push_back(Endpoint{output.node(), output.index()});
    args.feed_values.push_back(value);
  }
  args.fetches.reserve(fetches.size());
  args.fetch_is_operation.reserve(fetches.size());
  std::vector<const Node*> operation_fetches;
  for (const Fetch& fetch : fetches) {
    if (fetch.is_operation()) {
      const Operation op = fetch.op();
      CheckTargetInGraph(graph, op);
      operation_fetches.push_back(op.node());
      args.fetch_is_operation.push_back(true);
      continue;
    }
    const Output& output = fetch.output();
    if (output) output.CheckValid("Fetch");
    if (!output || output.graph() != &graph) {
      InvalidArgument("Fetch argument ", output ? output.DebugString() : std::string("<empty>"),
                      " cannot be interpreted as a Tensor. (Tensor ",
                      output ? output.DebugString() : std::string("<empty>"),
                      " is not an element of this graph.)");
    }
    args.fetches.push_back(Endpoint{output.node(), output.index()});
    args.fetch_is_operation.push_back(false);
  }
  args.targets.reserve(targets.size() + operation_fetches.size());
  for (const Operation& op : targets) {
    CheckTargetInGraph(graph, op);
    args.targets.push_back(op.node());
  }
  // An op both fetched and targeted (or fetched twice) runs once, and the plan's signature
  // stays that of running it once.
  for (const Node* node : operation_fetches) {
    if (std::find(args.targets.begin(), args.targets.end(), node) == args.targets.end()) {
      args.targets.push_back(node);
    }
  }
  return args;
}

std::vector<Tensor> PlaceFetchedValues(const RunArguments& args, std::vector<Tensor> tensor_values) {
  if (tensor_values.size() != args.fetches.size()) {
    Internal("The run returned ", tensor_values.size(), " values for ", args.fetches.size(),
             " fetched tensors");
  }
  if (tensor_values.size() == args.fetch_is_operation.size()) return tensor_values;
  std::vector<Tensor> results;
  results.reserve(args.fetch_is_operation.size());
  size_t next_value = 0;
  for (bool is_operation : args.fetch_is_operation) {
    results.push_back(is_operation ? Tensor() : std::move(tensor_values[next_value++]));
  }
  return results;
}

std::vector<int64_t> RunSignatureKey(const std::vector<Endpoint>& feeds, const std::vector<Endpoint>& fetches,
                                     const std::vector<const Node*>& targets) {
  std::vector<int64_t> key;
  key.reserve(feeds.size() + fetches.size() + targets.size() + 2);
  for (const Endpoint& e : feeds) key.push_back(EndpointKey(e.node, e.index));
  key.push_back(-1);
  for (const Endpoint& e : fetches) key.push_back(EndpointKey(e.node, e.index));
  key.push_back(-2);
  for (const Node* n : targets) key.push_back(EndpointKey(n, 0));
  return key;
}

int64_t RunTimeoutMs(const SessionOptions& options, const RunOptions* run_options) {
  if (run_options != nullptr && run_options->timeout_in_ms > 0) return run_options->timeout_in_ms;
  return options.config.operation_timeout_in_ms;
}

}  // namespace flowtrain
