#include "flowtrain/distributed/server.h"

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/distributed/internal/rpc_util.h"
#include "flowtrain/distributed/internal/transport_credentials.h"
#include "flowtrain/distributed/internal/worker.h"

namespace flowtrain::distributed {

struct Server::Impl {
  ServerOptions options;
  std::string address;  // bound once started
  std::unique_ptr<Worker> worker;
  std::unique_ptr<grpc::Server> server;

  mutable absl::Mutex mu;
  absl::CondVar stopped_cv;  // signalled when stop_done becomes true
  bool started ABSL_GUARDED_BY(mu) = false;
  bool stopped ABSL_GUARDED_BY(mu) = false;    // Stop() began
  bool stop_done ABSL_GUARDED_BY(mu) = false;  // Stop() finished
  // Set by an EndJob request: why, and when Join() returns.
  std::optional<std::string> job_end_reason ABSL_GUARDED_BY(mu);
  absl::Time join_deadline ABSL_GUARDED_BY(mu) = absl::InfiniteFuture();
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->address = options.cluster.task_address(options.job_name, options.task_index);
  ValidateTransportSecurity(options.security, /*for_server=*/true);
  impl_->worker =
      std::make_unique<Worker>(options.cluster, options.job_name, options.task_index,
                               options.intra_op_parallelism_threads, options.limits, options.security);
  impl_->worker->SetJobEndedCallback(
      [impl = impl_.get()](const std::string& reason, std::chrono::milliseconds grace) {
        absl::MutexLock lock(&impl->mu);
        impl->job_end_reason = reason;
        impl->join_deadline = absl::Now() + absl::FromChrono(grace);
        impl->stopped_cv.SignalAll();
      });
  impl_->options = std::move(options);
  if (impl_->options.start) Start();
}

Server::~Server() { Stop(); }

void Server::Start() {
  absl::MutexLock lock(&impl_->mu);
  if (impl_->stopped) FailedPrecondition("Server of ", TaskName(job_name(), task_index()), " was stopped");
  if (impl_->started) return;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(impl_->address, ServerCredentialsFor(impl_->options.security), &port);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  // Accept the keepalive pings of calls that wait long (a step blocked in a queue) instead
  // of closing the connection as for a misbehaving client.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, kKeepalivePingMs / 2);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.RegisterService(impl_->worker.get());
  impl_->server = builder.BuildAndStart();
  if (impl_->server == nullptr || port == 0) {
    impl_->server.reset();
    Unavailable("Could not start the server of ", TaskName(job_name(), task_index()), " on ", impl_->address,
                " (is the port in use?)");
  }
  impl_->address = StrCat(impl_->address.substr(0, impl_->address.rfind(':')), ":", port);
  ClusterSpec cluster = impl_->worker->cluster();
  cluster.set_task_address(job_name(), task_index(), impl_->address);
  impl_->worker->UpdateCluster(cluster);
  SetClientSecurity(impl_->address, impl_->options.security);
  impl_->started = true;
}

void Server::Stop() {
  {
    absl::MutexLock lock(&impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
    if (impl_->started && ClientSecurityFor(impl_->address) == impl_->options.security) {
      ClearClientSecurity(impl_->address);
    }
  }
  // Steps first: a handler blocked in a kernel returns once its step is cancelled, and the
  // gRPC server's shutdown waits for the handlers.
  impl_->worker->Shutdown();
  if (impl_->server != nullptr) {
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    impl_->server->Wait();
  }
  absl::MutexLock lock(&impl_->mu);
  impl_->stop_done = true;
  impl_->stopped_cv.SignalAll();
}

void Server::Join() {
  absl::MutexLock lock(&impl_->mu);
  while (!impl_->stop_done && absl::Now() < impl_->join_deadline) {
    impl_->stopped_cv.WaitWithDeadline(&impl_->mu, impl_->join_deadline);
  }
}

std::optional<std::string> Server::job_end_reason() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->job_end_reason;
}

std::string Server::target() const { return StrCat("grpc://", bound_address()); }

std::string Server::bound_address() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->address;
}

ClusterSpec Server::cluster() const { return impl_->worker->cluster(); }

void Server::UpdateCluster(const ClusterSpec& cluster) {
  ClusterSpec updated = cluster;
  updated.set_task_address(job_name(), task_index(), bound_address());
  impl_->worker->UpdateCluster(updated);
}

const std::string& Server::job_name() const { return impl_->options.job_name; }
int Server::task_index() const { return impl_->options.task_index; }
ResourceMgr* Server::resource_manager() { return impl_->worker->resource_manager(); }
ServerStats Server::GetStats() const { return impl_->worker->GetStats(); }

LocalCluster CreateLocalCluster(int num_workers, int num_ps, const ServerLimits& limits,
                                const TransportSecurity& security) {
  if (num_workers < 0 || num_ps < 0 || num_workers + num_ps == 0) {
    InvalidArgument("CreateLocalCluster needs tasks, got ", num_workers, " workers and ", num_ps, " ps");
  }
  std::map<std::string, std::vector<std::string>> jobs;
  if (num_workers > 0) jobs["worker"].assign(num_workers, "localhost:0");
  if (num_ps > 0) jobs["ps"].assign(num_ps, "localhost:0");
  const ClusterSpec unbound(jobs);
  LocalCluster local;
  for (int i = 0; i < num_workers; ++i) {
    local.workers.push_back(std::make_unique<Server>(ServerOptions{
        .cluster = unbound, .job_name = "worker", .task_index = i, .limits = limits, .security = security}));
    jobs["worker"][i] = local.workers.back()->bound_address();
  }
  for (int i = 0; i < num_ps; ++i) {
    local.ps.push_back(std::make_unique<Server>(ServerOptions{
        .cluster = unbound, .job_name = "ps", .task_index = i, .limits = limits, .security = security}));
    jobs["ps"][i] = local.ps.back()->bound_address();
  }
  local.cluster = ClusterSpec(jobs);
  for (auto& server : local.workers) server->UpdateCluster(local.cluster);
  for (auto& server : local.ps) server->UpdateCluster(local.cluster);
  return local;
}

}  // namespace flowtrain::distributed
