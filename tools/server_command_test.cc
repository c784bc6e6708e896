// `flowtrain server` with its limit and security flags: runs the built command-line binary as a ps task and
// talks to it as any client on the network can.
#include <signal.h>

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
#include "flowtrain/ops/array_ops.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using ::testing::HasSubstr;

// A registration of a graph of one Const whose value the step fetches.
distributed::RegisterGraphRequest FetchConstRequest() {
  Graph g;
  {
    auto as_default = g.AsDefault();
    ops::Const(Tensor::Scalar<float>(3), "c");
  }
  distributed::RegisterGraphRequest request;
  *request.mutable_graph_def() = g.ToGraphDef();
  distributed::Stage* stage = request.add_stages();
  stage->add_targets("c");
  distributed::StageOutput* output = stage->add_outputs();
  output->set_tensor("c:0");
  output->add_client_fetches(0);
  return request;
}

// A `flowtrain server` process started in the background; SIGTERM'd when destroyed.
class ServerProcess {
 public:
  explicit ServerProcess(const std::string& flags) : log_(testing::MakeTempDir("server") + "/server.out") {
    const std::string command = "'" + testing::FlowtrainCliPath() +
                                "' server --cluster ps=localhost:0 --job ps " + flags + " > '" + log_ +
                                "' 2>&1 & echo $!";
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe != nullptr) {
      if (std::fscanf(pipe, "%d", &pid_) != 1) pid_ = -1;
      pclose(pipe);
    }
  }
  ~ServerProcess() {
    if (pid_ > 0) Stop();
  }

  // The "host:port" the server reports it serves at, or "" when it does not start within 30 s.
  std::string WaitForAddress() {
    for (int i = 0; i < 3000; ++i) {
      const std::string out = Output();
      const size_t at = out.find(" at grpc://");
      const size_t end = out.find('\n', at);
      if (at != std::string::npos && end != std::string::npos) {
        return out.substr(at + 11, end - at - 11);
      }
      if (kill(pid_, 0) != 0) return "";  // it exited
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "";
  }

  // SIGTERM, then waits up to 30 s for it to exit.
  void Stop() {
    kill(pid_, SIGTERM);
    for (int i = 0; i < 3000 && kill(pid_, 0) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
  }

  std::string Output() const { return FileExists(log_) ? ReadFileToString(log_) : std::string(); }

 private:
  std::string log_;
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
  ServerProcess server("--max-registered-graphs 1 --graph-idle-timeout 0");
  const std::string address = server.WaitForAddress();
  ASSERT_FALSE(address.empty()) << server.Output();
  auto stub = distributed::NewWorkerStub(address);
  auto register_graph = [&] {
    grpc::ClientContext context;
    distributed::RegisterGraphResponse response;
    return stub->RegisterGraph(&context, FetchConstRequest(), &response);
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
  ServerProcess server("--token-file '" + token_file + "' --tls-cert '" + tls.cert + "' --tls-key '" +
                       tls.key + "' --tls-ca '" + tls.ca + "' --tls-require-client-cert");
  const std::string address = server.WaitForAddress();
  ASSERT_FALSE(address.empty()) << server.Output();
  auto register_graph = [&](const distributed::TransportSecurity& security) {
    auto stub = distributed::NewWorkerStub(address, security);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    distributed::RegisterGraphResponse response;
    return stub->RegisterGraph(&context, FetchConstRequest(), &response).error_code();
  };
  distributed::TransportSecurity client{
      .certificate_file = tls.cert, .private_key_file = tls.key, .ca_file = tls.ca};
  EXPECT_EQ(register_graph({}), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(register_graph({.ca_file = tls.ca, .token = "cli-token"}), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(register_graph(client), grpc::StatusCode::UNAUTHENTICATED);
  client.token = "cli-token";
  EXPECT_EQ(register_graph(client), grpc::StatusCode::OK);
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
