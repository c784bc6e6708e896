#include "flowtrain/runtime/run_arguments.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {
namespace {

std::string OperationRepr(const Operation& op) {
  return StrCat("name: \"", op.name(), "\" op: \"", op.type(), "\"");
}

}  // namespace

RunArguments CheckRunArguments(const Graph& graph, const FeedList& feeds,
                               const std::vector<Output>& fetches,
                               const std::vector<Operation>& targets) {
  RunArguments args;
  args.feeds.reserve(feeds.size());
  args.feed_values.reserve(feeds.size());
  for (const auto& [output, value] : feeds) {
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
  for (const Output& fetch : fetches) {
    if (!fetch || fetch.graph() != &graph) {
      InvalidArgument("Fetch argument ", fetch ? fetch.DebugString() : std::string("<empty>"),
                      " cannot be interpreted as a Tensor. (Tensor ",
                      fetch ? fetch.DebugString() : std::string("<empty>"),
                      " is not an element of this graph.)");
    }
    args.fetches.push_back(Endpoint{fetch.node(), fetch.index()});
  }
  args.targets.reserve(targets.size());
  for (const Operation& op : targets) {
    if (!op || op.graph() != &graph) {
      InvalidArgument("Fetch argument ", op ? OperationRepr(op) : std::string("<empty>"),
                      " cannot be interpreted as a Tensor. (Operation ",
                      op ? OperationRepr(op) : std::string("<empty>"),
                      " is not an element of this graph.)");
    }
    args.targets.push_back(op.node());
  }
  return args;
}

}  // namespace flowtrain
