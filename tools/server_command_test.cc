// `flowtrain server` with its limit and security flags: runs the built command-line binary as a ps task and
// talks to it as any client on the network can.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/distributed/internal/rpc_util.h"
#include "flowtrain/distributed/worker_service.grpc.pb.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/distributed/server.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/device_setter.h"
#include "flowtrain/train/gradient_descent.h"
#include "flowtrain/train/monitored_training_session.h"
#include "tests/test_util.h"
#include "tests/worker_requests.h"

namespace flowtrain {
namespace {

using ::testing::HasSubstr;

// The cluster flags of a ps task on an ephemeral port.
constexpr char kPsFlags[] = "--cluster ps=localhost:0 --job ps";
// The command's environment without the cluster managers' variables of the test's own.
constexpr char kCleanEnvironment[] =
    "env -u TF_CONFIG -u SLURM_PROCID -u SLURM_STEP_NODELIST -u SLURM_JOB_NODELIST -u "
    "SLURM_STEP_TASKS_PER_NODE "
    "-u SLURM_TASKS_PER_NODE -u SLURM_STEP_NUM_TASKS -u SLURM_NTASKS";

// `flowtrain server` with `args` in `environment`; its exit code and output.
testing::CliResult RunServerCommand(const std::string& environment, const std::string& args) {
  return testing::RunShellCommand(std::string(kCleanEnvironment) + " " + environment + " '" +
                                  testing::FlowtrainCliPath() + "' server " + args);
}

// A port p of localhost where p and p + 1 are free just now (the Slurm layout needs
// consecutive ports), or 0.
int TwoFreePorts() {
  for (int attempt = 0; attempt < 50; ++attempt) {
    int first = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (bind(first, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        getsockname(first, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      close(first);
      continue;
    }
    const int port = ntohs(address.sin_port);
    int second = socket(AF_INET, SOCK_STREAM, 0);
    address.sin_port = htons(port + 1);
    const bool free =
        port < 65535 && bind(second, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    close(first);
    close(second);
    if (free) return port;
  }
  return 0;
}

// A `flowtrain server` process started in the background with `flags` (after the
// subcommand) and `environment` (shell assignments before the command); SIGTERM'd when
// destroyed.
class ServerProcess {
 public:
  explicit ServerProcess(const std::string& flags, const std::string& environment = "")
      : log_(testing::MakeTempDir("server") + "/server.out") {
    const std::string command = std::string(kCleanEnvironment) + " " + environment + " '" +
                                testing::FlowtrainCliPath() + "' server " + flags + " > '" + log_ +
                                "' 2>&1 & echo $!";
    // The shell stays to wait for the server and write its exit code.
    pipe_ = popen((command + "; wait $!; echo $? > '" + log_ + ".code'").c_str(), "r");
    if (pipe_ != nullptr && std::fscanf(pipe_, "%d", &pid_) != 1) pid_ = -1;
  }
  ~ServerProcess() {
    if (pid_ > 0) Stop();
    if (pipe_ != nullptr) pclose(pipe_);
  }

  // The "host:port" the server reports it serves at, or "" when it does not start within 30 s.
  std::string WaitForAddress() {
    for (int i = 0; i < 3000; ++i) {
      const std::string out = Output();
      const size_t at = out.find(" at grpc://");
      const size_t end = out.find_first_of(" \n", at + 11);
      if (at != std::string::npos && end != std::string::npos) {
        return out.substr(at + 11, end - at - 11);
      }
      if (FileExists(log_ + ".code")) return "";  // it exited
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "";
  }

  // SIGTERM, then waits up to 30 s for it to exit.
  void Stop() {
    kill(pid_, SIGTERM);
    if (pid_ > 0 && WaitForExit(std::chrono::seconds(30)) == -1) {
      kill(pid_, SIGKILL);
      WaitForExit(std::chrono::seconds(30));
    }
  }

  // Waits up to `timeout` for the server to exit; its exit code, or -1 when it did not.
  int WaitForExit(std::chrono::seconds timeout) {
    const std::string code_file = log_ + ".code";
    for (auto end = std::chrono::steady_clock::now() + timeout; std::chrono::steady_clock::now() < end;) {
      if (FileExists(code_file) && !ReadFileToString(code_file).empty()) {
        pid_ = -1;
        return std::stoi(ReadFileToString(code_file));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  std::string Output() const { return FileExists(log_) ? ReadFileToString(log_) : std::string(); }

 private:
  std::string log_;
  FILE* pipe_ = nullptr;
  int pid_ = -1;
};

class ServerCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!FileExists(testing::FlowtrainCliPath())) {
      GTEST_SKIP() << "tools/flowtrain is not built (FLOWTRAIN_BUILD_EXAMPLES=OFF)";
    }
  }
};

TEST_F(ServerCommandTest, LimitFlagsBoundWhatClientsRegister) {
  ServerProcess server(std::string(kPsFlags) + " --max-registered-graphs 1 --graph-idle-timeout 0");
  const std::string address = server.WaitForAddress();
  ASSERT_FALSE(address.empty()) << server.Output();
  auto stub = distributed::NewWorkerStub(address);
  auto register_graph = [&] {
    grpc::ClientContext context;
    distributed::RegisterGraphResponse response;
    return stub->RegisterGraph(&context, testing::FetchConstRequest(), &response);
  };
  ASSERT_TRUE(register_graph().ok());
  const grpc::Status refused = register_graph();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("1 graphs are registered"));
  EXPECT_THAT(refused.error_message(), HasSubstr("max_registered_graphs"));
  // --graph-idle-timeout 0: never dropped, so the message offers no expiry.
  EXPECT_THAT(refused.error_message(), ::testing::Not(HasSubstr("graph_idle_timeout")));
  server.Stop();
  EXPECT_THAT(server.Output(), HasSubstr("Stopping server for /job:ps/task:0 (SIGTERM)"));
}

TEST_F(ServerCommandTest, TokenFileAndTlsFlagsSecureTheServer) {
  std::string why_not;
  const testing::TlsTestFiles tls = testing::MakeTlsTestFiles(&why_not);
  if (tls.ca.empty()) GTEST_SKIP() << "TLS not tested: " << why_not;
  const std::string token_file = testing::MakeTempDir("token") + "/token";
  std::ofstream(token_file) << "cli-token\n";
  ServerProcess server(std::string(kPsFlags) + " --token-file '" + token_file + "' --tls-cert '" + tls.cert +
                       "' --tls-key '" + tls.key + "' --tls-ca '" + tls.ca + "' --tls-require-client-cert");
  const std::string address = server.WaitForAddress();
  ASSERT_FALSE(address.empty()) << server.Output();
  auto register_graph = [&](const distributed::TransportSecurity& security) {
    auto stub = distributed::NewWorkerStub(address, security);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    distributed::RegisterGraphResponse response;
    return stub->RegisterGraph(&context, testing::FetchConstRequest(), &response).error_code();
  };
  distributed::TransportSecurity client{
      .certificate_file = tls.cert, .private_key_file = tls.key, .ca_file = tls.ca};
  EXPECT_EQ(register_graph({}), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(register_graph({.ca_file = tls.ca, .token = "cli-token"}), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(register_graph(client), grpc::StatusCode::UNAUTHENTICATED);
  client.token = "cli-token";
  EXPECT_EQ(register_graph(client), grpc::StatusCode::OK);
}

TEST_F(ServerCommandTest, ClusterAndTaskComeFromTfConfigOrSlurmWithoutFlags) {
  ServerProcess from_tf_config(
      "",
      R"(TF_CONFIG='{"cluster": {"ps": ["localhost:0"], "worker": ["localhost:1"]}, "task": {"type": "ps"}}')");
  ASSERT_FALSE(from_tf_config.WaitForAddress().empty()) << from_tf_config.Output();
  EXPECT_THAT(from_tf_config.Output(), HasSubstr("/job:ps/task:0 at grpc://localhost:"));
  EXPECT_THAT(from_tf_config.Output(), HasSubstr("(cluster from TF_CONFIG)"));
  from_tf_config.Stop();

  // Rank 1 of two Slurm tasks on one node, the first a ps: worker 0 on the node's second port.
  const int port = TwoFreePorts();
  ASSERT_NE(port, 0);
  ServerProcess from_slurm("--slurm-jobs ps=1,worker=1 --slurm-port-base " + std::to_string(port),
                           "SLURM_PROCID=1 SLURM_STEP_NODELIST=localhost SLURM_STEP_TASKS_PER_NODE=2 "
                           "SLURM_STEP_NUM_TASKS=2");
  EXPECT_EQ(from_slurm.WaitForAddress(), "localhost:" + std::to_string(port + 1)) << from_slurm.Output();
  EXPECT_THAT(from_slurm.Output(), HasSubstr("/job:worker/task:0 at"));
  EXPECT_THAT(from_slurm.Output(), HasSubstr("(cluster from Slurm)"));
  from_slurm.Stop();

  auto expect_refused = [](const std::string& environment, const std::string& args, const std::string& why) {
    const testing::CliResult refused = RunServerCommand(environment, args);
    EXPECT_NE(refused.exit_code, 0) << args;
    EXPECT_THAT(refused.output, HasSubstr(why));
  };
  expect_refused("", "", "none in the environment");
  expect_refused("SLURM_PROCID=0", "--slurm-jobs ps=0", "is not job=count");
  expect_refused("TF_CONFIG='{\"cluster\": 3}'", "", "TF_CONFIG: cluster is not an object");
  expect_refused("", "--cluster ps=localhost:0", "--job is required");
}

TEST_F(ServerCommandTest, PsExitsByItselfWhenTheChiefFinishes) {
  const int port = TwoFreePorts();
  ASSERT_NE(port, 0);
  const std::string cluster_text =
      "ps=localhost:" + std::to_string(port) + ";worker=localhost:" + std::to_string(port + 1);
  ServerProcess ps("--cluster '" + cluster_text + "' --job ps");
  ASSERT_FALSE(ps.WaitForAddress().empty()) << ps.Output();
  const distributed::ClusterSpec cluster = distributed::ClusterSpec::Parse(cluster_text);
  distributed::Server worker({.cluster = cluster, .job_name = "worker"});

  Graph g;
  auto as_default = g.AsDefault();
  Operation train_op;
  {
    auto scope = g.Device(train::ReplicaDeviceSetter({.cluster = &cluster}));
    Variable step = train::GetOrCreateGlobalStep();
    Variable w(Tensor::Scalar<float>(5), {.name = "w"});
    train_op = train::GradientDescentOptimizer(0.1).Minimize(ops::Square(w), step);
  }
  train::MonitoredTrainingSessionOptions options;
  options.master = worker.target();
  options.hooks = {std::make_shared<train::StopAtStepHook>(train::LastStep{20})};
  options.end_job_at_close = true;
  options.end_job_grace_period = std::chrono::milliseconds(200);
  auto sess = train::MonitoredTrainingSession(options);
  while (!sess->ShouldStop()) sess->Run({}, {}, {train_op});
  sess->Close();

  EXPECT_EQ(ps.WaitForExit(std::chrono::seconds(30)), 0) << ps.Output();
  EXPECT_THAT(ps.Output(),
              HasSubstr("The job ended (its chief finished training): stopping server for /job:ps/task:0"));
}

TEST_F(ServerCommandTest, DefaultLimitsAreShownAndBadOnesRefused) {
  const testing::CliResult help = testing::RunFlowtrainCli("server --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_THAT(help.output, HasSubstr("--max-registered-graphs"));
  EXPECT_THAT(help.output, HasSubstr("4096"));
  EXPECT_THAT(help.output, HasSubstr("--orphan-step-timeout"));
  const testing::CliResult bad =
      testing::RunFlowtrainCli("server --cluster ps=localhost:0 --job ps --max-pending-bytes -5");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("--max-pending-bytes"));
}

}  // namespace
}  // namespace flowtrain
