#include "flowtrain/distributed/internal/rpc_util.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/distributed/internal/transport_credentials.h"

namespace flowtrain::distributed {
namespace {

// The error_details of statuses the service raised itself; transport failures carry none.
constexpr char kServiceErrorTag[] = "flowtrain";

}  // namespace

grpc::Status ToRpcStatus(const std::function<void()>& body) {
  try {
    body();
    return grpc::Status::OK;
  } catch (const Error& e) {
    return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(e.code())), e.what(),
                        kServiceErrorTag);
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INTERNAL, e.what(), kServiceErrorTag);
  } catch (...) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "unknown exception", kServiceErrorTag);
  }
}

void ThrowRpcError(const grpc::Status& status, std::string_view peer) {
  if (status.error_details() == kServiceErrorTag) {
    ThrowError(static_cast<Code>(static_cast<int>(status.error_code())), status.error_message());
  }
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    DeadlineExceeded(peer, " did not answer in time: ", status.error_message());
  }
  Unavailable(peer, " is unavailable: ", status.error_message(), " (gRPC code ",
              static_cast<int>(status.error_code()), ")");
}

std::string TaskPeer(std::string_view task_name, std::string_view address) {
  return StrCat("Task ", task_name, " at ", address);
}

std::string TargetAddress(const std::string& target, std::string_view who) {
  constexpr std::string_view kScheme = "grpc://";
  if (!target.starts_with(kScheme)) InvalidArgument(who, " target '", target, "' is not grpc://host:port");
  return target.substr(kScheme.size());
}

GetStatusResponse GetTaskStatus(WorkerService::Stub& stub, const std::string& target,
                                std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  GetStatusResponse response;
  const grpc::Status status = stub.GetStatus(&context, GetStatusRequest(), &response);
  if (!status.ok()) ThrowRpcError(status, StrCat("The server of target ", target));
  return response;
}

std::unique_ptr<WorkerService::Stub> NewWorkerStub(const std::string& address,
                                                   const TransportSecurity& security) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // Reconnect quickly after a task restarts (the default backoff grows to two minutes).
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  // A call waiting on a task whose machine vanished (no connection reset) fails within about
  // 40 s instead of hanging: pings during calls, and a peer that stops answering is dead.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepalivePingMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  return WorkerService::NewStub(NewSecureChannel(address, security, std::move(args)));
}

}  // namespace flowtrain::distributed
