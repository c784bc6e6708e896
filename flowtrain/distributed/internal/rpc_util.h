// Conversions between flowtrain's errors and gRPC statuses, and the channel settings every
// stub of the distributed runtime uses. Internal to flowtrain/distributed.
//
//   return ToRpcStatus([&] { ... code that may throw flowtrain::Error ... });
//   if (!status.ok()) ThrowRpcError(status, TaskPeer(task_name, address));
#ifndef FLOWTRAIN_DISTRIBUTED_INTERNAL_RPC_UTIL_H_
#define FLOWTRAIN_DISTRIBUTED_INTERNAL_RPC_UTIL_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "flowtrain/distributed/transport_security.h"
#include "flowtrain/distributed/worker_service.grpc.pb.h"

namespace flowtrain::distributed {

// Runs `body`; an exception becomes a status carrying its TF code and message, marked as
// raised by the service itself (not by the transport). Never throws.
grpc::Status ToRpcStatus(const std::function<void()>& body);

// Throws the flowtrain error for a failed call to `peer` (TaskPeer's text): errors the remote
// service raised keep their code and message; transport failures (connection refused, the
// task stopped mid-call) become Unavailable naming the peer, so a monitored session recovers
// from them; a call deadline becomes DeadlineExceeded.
[[noreturn]] void ThrowRpcError(const grpc::Status& status, std::string_view peer);

// "Task /job:ps/replica:0/task:0 at host:port", how errors name the other side of a call.
std::string TaskPeer(std::string_view task_name, std::string_view address);

// How often a client pings a task during a call; servers accept pings this often.
inline constexpr int kKeepalivePingMs = 30000;

// The "host:port" of a "grpc://host:port" target; InvalidArgument naming `who` and the target
// otherwise.
std::string TargetAddress(const std::string& target, std::string_view who);

// What the task at `address` answers to GetStatus within `timeout` (its cluster, job and
// index), through `stub`; a failure throws as ThrowRpcError, naming the server of `target`.
GetStatusResponse GetTaskStatus(WorkerService::Stub& stub, const std::string& target,
                                std::chrono::milliseconds timeout);

// A stub for the worker service at `address` ("host:port"), with no message size limit,
// connecting and calling with `security` (throws as NewSecureChannel).
std::unique_ptr<WorkerService::Stub> NewWorkerStub(const std::string& address,
                                                   const TransportSecurity& security = {});

}  // namespace flowtrain::distributed

#endif  // FLOWTRAIN_DISTRIBUTED_INTERNAL_RPC_UTIL_H_
