// `flowtrain server --cluster SPEC --job NAME --task INDEX`: runs one task of a cluster (TF's
// tf.train.Server as a program), typically a parameter server that holds the variables the
// workers train. It serves until SIGINT or SIGTERM, then stops cleanly: in-flight steps are
// cancelled and the port is released.
//
//   $ flowtrain server --cluster "ps=localhost:2222;worker=localhost:2223" --job ps --task 0
//   Started server for /job:ps/task:0 at grpc://localhost:2222
//
// TF's flag style works too: --ps-hosts localhost:2222 --worker-hosts localhost:2223
// --job-name ps --task-index 0. The bounds on what clients can make the server hold
// (distributed::ServerLimits) have a flag each: --max-registered-graphs,
// --max-registered-graph-bytes, --graph-idle-timeout, --max-pending-step-bytes,
// --max-pending-bytes and --orphan-step-timeout (timeouts in seconds, 0 = never).
// distributed::TransportSecurity: --tls-cert, --tls-key and --tls-ca (PEM files),
// --tls-require-client-cert for mutual TLS, --token-file for the token every call must carry
// (read from a file so that it does not show in the process list).
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/distributed/cluster_spec.h"
#include "flowtrain/distributed/server.h"
#include "tools/commands.h"

namespace flowtrain::tools {
namespace {

struct ServerFlags {
  std::string cluster;
  std::string ps_hosts;
  std::string worker_hosts;
  std::string job;
  int task = 0;
  distributed::ServerLimits limits;
  distributed::TransportSecurity security;
  std::string token_file;
  double graph_idle_timeout_seconds = ToSeconds(limits.graph_idle_timeout);
  double orphan_step_timeout_seconds = ToSeconds(limits.orphan_step_timeout);

  static double ToSeconds(std::chrono::milliseconds duration) { return duration.count() / 1000.0; }
  static std::chrono::milliseconds FromSeconds(double seconds) {
    return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
  }
  distributed::ServerLimits Limits() const {
    distributed::ServerLimits out = limits;
    out.graph_idle_timeout = FromSeconds(graph_idle_timeout_seconds);
    out.orphan_step_timeout = FromSeconds(orphan_step_timeout_seconds);
    return out;
  }
};

distributed::ClusterSpec ClusterFromFlags(const ServerFlags& flags) {
  if (!flags.cluster.empty()) {
    if (!flags.ps_hosts.empty() || !flags.worker_hosts.empty()) {
      InvalidArgument("flowtrain server: give either --cluster or --ps-hosts/--worker-hosts, not both");
    }
    return distributed::ClusterSpec::Parse(flags.cluster);
  }
  std::string spec;
  if (!flags.ps_hosts.empty()) spec = StrCat("ps=", flags.ps_hosts);
  if (!flags.worker_hosts.empty()) {
    spec =
        spec.empty() ? StrCat("worker=", flags.worker_hosts) : StrCat(spec, ";worker=", flags.worker_hosts);
  }
  if (spec.empty())
    InvalidArgument("flowtrain server: no cluster given (--cluster or --ps-hosts/--worker-hosts)");
  return distributed::ClusterSpec::Parse(spec);
}

// Waits for SIGINT or SIGTERM. The signals are blocked in every thread (the server's threads
// inherit the mask from this one), so the wait here is the only place they are delivered.
int WaitForStopSignal(const sigset_t& signals) {
  int received = 0;
  while (sigwait(&signals, &received) != 0) {
  }
  return received;
}

}  // namespace

void AddServerCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "server", "Run one task of a cluster (a parameter server or a worker's server) until SIGINT/SIGTERM");
  auto flags = std::make_shared<ServerFlags>();
  cmd->add_option("--cluster", flags->cluster,
                  "The cluster: jobs and their task addresses, e.g. "
                  "\"ps=localhost:2222;worker=localhost:2223,localhost:2224\"");
  cmd->add_option("--ps-hosts", flags->ps_hosts, "Comma-separated ps addresses (TF's flag style)");
  cmd->add_option("--worker-hosts", flags->worker_hosts,
                  "Comma-separated worker addresses (TF's flag style)");
  cmd->add_option("--job,--job-name", flags->job, "This task's job, e.g. ps")->required();
  cmd->add_option("--task,--task-index", flags->task, "This task's index in its job")
      ->check(CLI::NonNegativeNumber);
  distributed::ServerLimits& limits = flags->limits;
  cmd->add_option("--max-registered-graphs", limits.max_registered_graphs,
                  "Graph partitions clients may register at once")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-registered-graph-bytes", limits.max_registered_graph_bytes,
                  "Serialized bytes of the registered graphs, in all")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--graph-idle-timeout", flags->graph_idle_timeout_seconds,
                  "Seconds after which a graph no step ran is dropped (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--max-pending-step-bytes", limits.max_pending_step_bytes,
                  "Bytes of tensors sent ahead to one step that has not started here")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-pending-bytes", limits.max_pending_bytes,
                  "Bytes of tensors sent ahead to steps that have not started here, in all")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--orphan-step-timeout", flags->orphan_step_timeout_seconds,
                  "Seconds after which tensors sent to a step that never started are dropped")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  distributed::TransportSecurity& security = flags->security;
  cmd->add_option("--tls-cert", security.certificate_file,
                  "PEM certificate chain the server presents (with --tls-key: serve TLS only)");
  cmd->add_option("--tls-key", security.private_key_file, "PEM private key of --tls-cert");
  cmd->add_option("--tls-ca", security.ca_file,
                  "PEM CA bundle the certificates of clients and of the other tasks chain to");
  cmd->add_flag("--tls-require-client-cert", security.require_client_certificate,
                "Mutual TLS: refuse clients without a certificate chaining to --tls-ca");
  cmd->add_option("--token-file", flags->token_file,
                  "File holding the token every call must carry (others are refused as Unauthenticated)");
  cmd->callback([flags] {
    const distributed::ClusterSpec cluster = ClusterFromFlags(*flags);
    if (!flags->token_file.empty()) flags->security.token = distributed::ReadTokenFile(flags->token_file);
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    distributed::Server server({.cluster = cluster,
                                .job_name = flags->job,
                                .task_index = flags->task,
                                .limits = flags->Limits(),
                                .security = flags->security});
    std::printf("Started server for /job:%s/task:%d at %s\n", flags->job.c_str(), flags->task,
                server.target().c_str());
    std::fflush(stdout);
    const int signal = WaitForStopSignal(signals);
    std::printf("Stopping server for /job:%s/task:%d (%s)\n", flags->job.c_str(), flags->task,
                signal == SIGINT ? "SIGINT" : "SIGTERM");
    std::fflush(stdout);
    server.Stop();
  });
}

}  // namespace flowtrain::tools
