// The feeds, fetches and targets of one Session::Run, checked against the session's graph
// with TF's messages and resolved to graph endpoints, and what every session kind (the
// in-process Session and the distributed runtime's "grpc://" session) derives from them the
// same way: the key of the run's signature and its timeout.
//
//   RunArguments args = CheckRunArguments(graph, feeds, fetches, targets);
//   auto plan = plans[RunSignatureKey(args.feeds, args.fetches, args.targets)];
//   int64_t timeout_ms = RunTimeoutMs(options, run_options);
//   return PlaceFetchedValues(args, plan.Run(args.feed_values));
#ifndef FLOWTRAIN_RUNTIME_RUN_ARGUMENTS_H_
#define FLOWTRAIN_RUNTIME_RUN_ARGUMENTS_H_

#include <cstdint>
#include <vector>

#include "flowtrain/runtime/session.h"

namespace flowtrain {

struct RunArguments {
  std::vector<Endpoint> feeds;
  std::vector<Tensor> feed_values;  // in the order of `feeds`
  // The tensors to fetch, in the caller's order, without its Operation fetches.
  std::vector<Endpoint> fetches;
  // The caller's targets, then its Operation fetches not already among them.
  std::vector<const Node*> targets;
  // One per fetch the caller gave: true where it was an Operation (its result slot is empty).
  std::vector<bool> fetch_is_operation;
};

// Throws FailedPrecondition for an empty graph; InvalidArgument for an element of another
// graph, a null or out-of-range fetch, feed or target, an empty feed, or a feed whose dtype or
// shape the fed tensor cannot have.
RunArguments CheckRunArguments(const Graph& graph, const FeedList& feeds, const FetchList& fetches,
                               const std::vector<Operation>& targets);

// The results of the run in the caller's fetch order: `tensor_values` (the values of
// args.fetches, in order) with an empty Tensor inserted at each Operation fetch's slot.
std::vector<Tensor> PlaceFetchedValues(const RunArguments& args, std::vector<Tensor> tensor_values);

// Identifies a run's signature (which endpoints are fed and fetched, which nodes run), the key
// under which a session caches what it compiled for it.
std::vector<int64_t> RunSignatureKey(const std::vector<Endpoint>& feeds, const std::vector<Endpoint>& fetches,
                                     const std::vector<const Node*>& targets);

// The run's timeout in milliseconds (RunOptions' if set, else the session's
// operation_timeout_in_ms); 0 or less means none.
int64_t RunTimeoutMs(const SessionOptions& options, const RunOptions* run_options);

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_RUN_ARGUMENTS_H_
