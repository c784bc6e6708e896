// EndJob: tells every task of a cluster that the job is over, so that parameter servers exit
// on their own instead of serving until someone kills them (TF's ps tasks never learn that
// training ended). Each task then refuses new graphs and steps with OutOfRange naming the
// reason — a worker still training sees the end of its input and its monitored session stops
// cleanly — and its Server::Join() returns after the grace period (`flowtrain server` exits).
// The chief's MonitoredTrainingSession calls it when it finishes
// (MonitoredTrainingSessionOptions::end_job_at_close).
//
//   std::vector<std::string> missed = distributed::EndJob(server.target(), "reached step 2000");
//
// Thread-safe; uses the security ClientSecurityFor(target) gives.
#ifndef FLOWTRAIN_DISTRIBUTED_END_JOB_H_
#define FLOWTRAIN_DISTRIBUTED_END_JOB_H_

#include <chrono>
#include <string>
#include <vector>

namespace flowtrain::distributed {

struct EndJobOptions {
  // How long a told task keeps answering (with OutOfRange) before its Join() returns: time for
  // the workers to finish the step they are in and hear of the end.
  std::chrono::milliseconds grace_period = std::chrono::seconds(10);
  // How long to wait for each task's answer.
  std::chrono::milliseconds call_timeout = std::chrono::seconds(5);
};

// Tells every task of the cluster of `target` ("grpc://host:port", a task of it), the target
// last. Returns the tasks that could not be told, each with why (a task already gone is not
// an error: its job is over too). Throws what contacting `target` throws (Unavailable,
// Unauthenticated) when it cannot report its cluster, InvalidArgument for a negative period.
std::vector<std::string> EndJob(const std::string& target, const std::string& reason,
                                const EndJobOptions& options = {});

}  // namespace flowtrain::distributed

#endif  // FLOWTRAIN_DISTRIBUTED_END_JOB_H_
