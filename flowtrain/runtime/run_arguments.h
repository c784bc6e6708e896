// The feeds, fetches and targets of one Session::Run, checked against the session's graph
// with TF's messages and resolved to graph endpoints, and what every session kind (the
// in-process Session and the distributed runtime's "grpc://" session) derives from them the
// same way: the key of the run's signature and its timeout.
//
//   RunArguments args = CheckRunArguments(graph, feeds, fetches, targets);
//   auto plan = plans[RunSignatureKey(args.feeds, args.fetches, args.targets)];
//   int64_t timeout_ms = RunTimeoutMs(options, run_options);
#ifndef FLOWTRAIN_RUNTIME_RUN_ARGUMENTS_H_
#define FLOWTRAIN_RUNTIME_RUN_ARGUMENTS_H_

#include <cstdint>
#include <vector>

#include "flowtrain/runtime/session.h"

namespace flowtrain {

struct RunArguments {
  std::vector<Endpoint> feeds;
  std::vector<Tensor> feed_values;  // in the order of `feeds`
  std::vector<Endpoint> fetches;
  std::vector<const Node*> targets;
};

// Throws FailedPrecondition for an empty graph; InvalidArgument for an element of another
// graph, an empty feed, or a feed whose dtype or shape the fed tensor cannot have.
RunArguments CheckRunArguments(const Graph& graph, const FeedList& feeds,
                               const std::vector<Output>& fetches,
                               const std::vector<Operation>& targets);

// Identifies a run's signature (which endpoints are fed and fetched, which nodes run), the key
// under which a session caches what it compiled for it.
std::vector<int64_t> RunSignatureKey(const std::vector<Endpoint>& feeds, const std::vector<Endpoint>& fetches,
                                     const std::vector<const Node*>& targets);

// The run's timeout in milliseconds (RunOptions' if set, else the session's
// operation_timeout_in_ms); 0 or less means none.
int64_t RunTimeoutMs(const SessionOptions& options, const RunOptions* run_options);

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_RUN_ARGUMENTS_H_
