// `flowtrain server --cluster SPEC --job NAME --task INDEX`: runs one task of a cluster (TF's
// tf.train.Server as a program), typically a parameter server that holds the variables the
// workers train. It serves until SIGINT or SIGTERM, or until the job ends (the chief's
// MonitoredTrainingSession finished: distributed::EndJob) and the grace period the chief gave
// has passed, then stops cleanly and exits with 0: in-flight steps are cancelled and the port
// is released.
//
//   $ flowtrain server --cluster "ps=localhost:2222;worker=localhost:2223" --job ps --task 0
//   Started server for /job:ps/task:0 at grpc://localhost:2222
//
// TF's flag style works too: --ps-hosts localhost:2222 --worker-hosts localhost:2223
// --job-name ps --task-index 0. Without a cluster flag the cluster and the task come from the
// environment (distributed::ResolveClusterFromEnvironment): TF_CONFIG, else Slurm's variables,
// whose tasks are all workers unless --slurm-jobs says otherwise ("ps=1,worker=3"), on ports
// from --slurm-port-base (8888). The bounds on what clients can make the server hold
// (distributed::ServerLimits) have a flag each: --max-registered-graphs,
// --max-registered-graph-bytes, --graph-idle-timeout, --max-pending-step-bytes,
// --max-pending-bytes and --orphan-step-timeout (timeouts in seconds, 0 = never).
// distributed::TransportSecurity: --tls-cert, --tls-key and --tls-ca (PEM files),
// --tls-require-client-cert for mutual TLS, --token-file for the token every call must carry
// (read from a file so that it does not show in the process list).
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/distributed/cluster_resolver.h"
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
  int task = -1;
  std::string slurm_jobs;
  int slurm_port_base = distributed::SlurmOptions{}.port_base;
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

// "ps=1,worker=3".
std::map<std::string, int> ParseSlurmJobs(const std::string& text) {
  std::map<std::string, int> jobs;
  if (text.empty()) return jobs;
  for (const std::string& entry : std::vector<std::string>(absl::StrSplit(text, ','))) {
    const size_t eq = entry.find('=');
    int count = 0;
    const std::string job = entry.substr(0, eq);
    if (eq == std::string::npos || job.empty() || !absl::SimpleAtoi(entry.substr(eq + 1), &count) ||
        count <= 0 || !jobs.emplace(job, count).second) {
      InvalidArgument("flowtrain server: --slurm-jobs '", text, "': '", entry,
                      "' is not job=count (each job once, count > 0)");
    }
  }
  return jobs;
}

// The cluster and this task, from the flags or else from the environment.
distributed::ResolvedCluster ResolveFromFlags(const ServerFlags& flags) {
  if (flags.cluster.empty() && flags.ps_hosts.empty() && flags.worker_hosts.empty()) {
    std::optional<distributed::ResolvedCluster> resolved = distributed::ResolveClusterFromEnvironment(
        {.jobs = ParseSlurmJobs(flags.slurm_jobs), .port_base = flags.slurm_port_base});
    if (!resolved) {
      InvalidArgument("flowtrain server: no cluster given (--cluster or --ps-hosts/--worker-hosts) and none ",
                      "in the environment (TF_CONFIG, Slurm's SLURM_PROCID)");
    }
    // Flags given beside the environment's cluster choose the task in it.
    if (!flags.job.empty()) resolved->job_name = flags.job;
    if (flags.task >= 0) resolved->task_index = flags.task;
    return *resolved;
  }
  if (flags.job.empty()) InvalidArgument("flowtrain server: --job is required with a cluster flag");
  distributed::ResolvedCluster resolved{.job_name = flags.job, .task_index = std::max(flags.task, 0)};
  if (!flags.cluster.empty()) {
    if (!flags.ps_hosts.empty() || !flags.worker_hosts.empty()) {
      InvalidArgument("flowtrain server: give either --cluster or --ps-hosts/--worker-hosts, not both");
    }
    resolved.cluster = distributed::ClusterSpec::Parse(flags.cluster);
    return resolved;
  }
  std::string spec;
  if (!flags.ps_hosts.empty()) spec = StrCat("ps=", flags.ps_hosts);
  if (!flags.worker_hosts.empty()) {
    spec =
        spec.empty() ? StrCat("worker=", flags.worker_hosts) : StrCat(spec, ";worker=", flags.worker_hosts);
  }
  resolved.cluster = distributed::ClusterSpec::Parse(spec);
  return resolved;
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
  cmd->add_option("--job,--job-name", flags->job,
                  "This task's job, e.g. ps (required with a cluster flag; else from the environment)");
  cmd->add_option("--task,--task-index", flags->task, "This task's index in its job (default 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--slurm-jobs", flags->slurm_jobs,
                  "Under Slurm without a cluster flag: the jobs and their task counts, e.g. ps=1,worker=3 "
                  "(default: every task a worker)");
  cmd->add_option("--slurm-port-base", flags->slurm_port_base,
                  "Under Slurm: the port of each node's first task")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
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
    const distributed::ResolvedCluster resolved = ResolveFromFlags(*flags);
    if (!flags->token_file.empty()) flags->security.token = distributed::ReadTokenFile(flags->token_file);
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    distributed::Server server({.cluster = resolved.cluster,
                                .job_name = resolved.job_name,
                                .task_index = resolved.task_index,
                                .limits = flags->Limits(),
                                .security = flags->security});
    const std::string from = resolved.source.empty() ? "" : " (cluster from " + resolved.source + ")";
    std::printf("Started server for /job:%s/task:%d at %s%s\n", resolved.job_name.c_str(),
                resolved.task_index, server.target().c_str(), from.c_str());
    std::fflush(stdout);
    // Serve until a signal, or until the job ends (the chief's session said so).
    std::atomic<int> signal{0};
    std::thread signal_waiter([&] {
      signal = WaitForStopSignal(signals);
      server.Stop();
    });
    server.Join();
    if (signal == 0) {
      std::printf("The job ended (%s): stopping server for /job:%s/task:%d\n",
                  server.job_end_reason().value_or("").c_str(), resolved.job_name.c_str(),
                  resolved.task_index);
      std::fflush(stdout);
      pthread_kill(signal_waiter.native_handle(), SIGTERM);
    }
    signal_waiter.join();
    if (signal != 0 && !server.job_end_reason()) {
      std::printf("Stopping server for /job:%s/task:%d (%s)\n", resolved.job_name.c_str(),
                  resolved.task_index, signal == SIGINT ? "SIGINT" : "SIGTERM");
      std::fflush(stdout);
    }
    server.Stop();
  });
}

}  // namespace flowtrain::tools
