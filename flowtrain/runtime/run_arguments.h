// The feeds, fetches and targets of one Session::Run, checked against the session's graph
// with TF's messages and resolved to graph endpoints. Shared by every session kind (the
// in-process Session and the distributed runtime's "grpc://" session).
//
//   RunArguments args = CheckRunArguments(graph, feeds, fetches, targets);
//   executor.Run(run_args, args.feed_values);
#ifndef FLOWTRAIN_RUNTIME_RUN_ARGUMENTS_H_
#define FLOWTRAIN_RUNTIME_RUN_ARGUMENTS_H_

#include <vector>

#include "flowtrain/runtime/session.h"

namespace flowtrain {

struct RunArguments {
  std::vector<Endpoint> feeds;
  std::vector<Tensor> feed_values;  // in the order of `feeds`
  std::vector<Endpoint> fetches;
  std::vector<const Node*> targets;
};

// Throws InvalidArgument for an element of another graph, an empty feed, or a feed whose
// dtype or shape the fed tensor cannot have.
RunArguments CheckRunArguments(const Graph& graph, const FeedList& feeds,
                               const std::vector<Output>& fetches,
                               const std::vector<Operation>& targets);

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_RUN_ARGUMENTS_H_
