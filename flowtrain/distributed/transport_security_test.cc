// TransportSecurity on real servers over loopback: a token every call must carry, TLS with
// certificates the openssl command makes, mutual TLS, and a cluster that trains across tasks
// with both (the tasks' pushes to each other authenticate as their clients do).
#include "flowtrain/distributed/transport_security.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/distributed/internal/rpc_util.h"
#include "flowtrain/distributed/server.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session_factory.h"
#include "tests/test_util.h"
#include "tests/worker_requests.h"

namespace flowtrain::distributed {
namespace {

using ::testing::HasSubstr;

constexpr char kToken[] = "s3cr3t-t0ken";

grpc::Status RegisterThrough(const std::string& address, const TransportSecurity& security) {
  auto stub = NewWorkerStub(address, security);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  RegisterGraphResponse response;
  return stub->RegisterGraph(&context, testing::FetchConstRequest(), &response);
}

// Trains v (on the ps) by 1 per step from the worker and reads it back: tensors cross the
// tasks both ways. Returns v after `steps` steps.
float TrainAcrossTasks(const std::string& target, int steps) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable v;
  {
    auto ps = g.Device("/job:ps/task:0");
    v = Variable(Tensor::Scalar<float>(0), {.name = "v"});
  }
  Output step = v.AssignAdd(ops::Const(1.0f));
  Output doubled = ops::Mul(v, ops::Const(2.0f));
  auto sess = NewSession(g, {.target = target});
  sess->Run({}, {}, {ops::GlobalVariablesInitializer()});
  for (int i = 0; i < steps; ++i) sess->Run({}, {}, {step.op()});
  return sess->Run({}, {doubled}, {})[0].scalar<float>() / 2;
}

class TransportSecurityTest : public ::testing::Test {
 protected:
  // Skips the test when no certificates can be made.
  void RequireTls() {
    std::string why_not;
    tls_ = testing::MakeTlsTestFiles(&why_not);
    if (tls_.ca.empty()) GTEST_SKIP() << "TLS not tested: " << why_not;
  }
  TransportSecurity ServerTls() const {
    return {.certificate_file = tls_.cert, .private_key_file = tls_.key, .ca_file = tls_.ca};
  }

  testing::TlsTestFiles tls_;
};

TEST_F(TransportSecurityTest, TokenIsRequiredOnEveryCallAndWrongOnesDoNothing) {
  LocalCluster local = CreateLocalCluster(1, 0, {}, {.token = kToken});
  const std::string address = local.workers[0]->bound_address();

  const grpc::Status missing = RegisterThrough(address, {});
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(missing.error_message(), HasSubstr("carries no token"));
  const grpc::Status wrong = RegisterThrough(address, {.token = "s3cr3t-t0keN"});
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(wrong.error_message(), HasSubstr("not this server's"));
  const grpc::Status prefix = RegisterThrough(address, {.token = "s3cr3t"});
  EXPECT_EQ(prefix.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(local.workers[0]->GetStats().registered_graphs, 0);

  EXPECT_TRUE(RegisterThrough(address, {.token = kToken}).ok());
  EXPECT_EQ(local.workers[0]->GetStats().registered_graphs, 1);
}

TEST_F(TransportSecurityTest, ClusterWithTokenTrainsAndRefusesASessionWithout) {
  LocalCluster local = CreateLocalCluster(1, 1, {}, {.token = kToken});
  // The worker's own sessions inherit its token; so do its pushes to the ps and the ps's to it.
  EXPECT_EQ(TrainAcrossTasks(local.workers[0]->target(), 3), 3);

  // A client of another process: what the server registered for its target is not there.
  ClearClientSecurity(local.workers[0]->target());
  Graph g;
  auto as_default = g.AsDefault();
  ops::Const(1.0f);
  try {
    NewSession(g, {.target = local.workers[0]->target()});
    ADD_FAILURE() << "a session without the token was served";
  } catch (const UnauthenticatedError& e) {
    EXPECT_THAT(e.what(), HasSubstr("carries no token"));
  }
  SetClientSecurity(local.workers[0]->target(), {.token = kToken});
  EXPECT_EQ(TrainAcrossTasks(local.workers[0]->target(), 1), 1);
}

TEST_F(TransportSecurityTest, TlsServesOnlyClientsThatTrustItsCertificate) {
  RequireTls();
  if (IsSkipped()) return;
  LocalCluster local = CreateLocalCluster(1, 1, {}, ServerTls());
  EXPECT_EQ(TrainAcrossTasks(local.workers[0]->target(), 2), 2);
  const std::string address = local.workers[0]->bound_address();

  EXPECT_TRUE(RegisterThrough(address, {.ca_file = tls_.ca}).ok());
  // Plaintext to a TLS port, and TLS trusting another CA: no connection.
  EXPECT_EQ(RegisterThrough(address, {}).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(RegisterThrough(address, {.ca_file = tls_.rogue_ca}).error_code(), grpc::StatusCode::UNAVAILABLE);
  // The certificate names localhost, not this name.
  EXPECT_EQ(
      RegisterThrough(address, {.ca_file = tls_.ca, .server_name_override = "ps.example.com"}).error_code(),
      grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(local.workers[0]->GetStats().registered_graphs, 1);  // the one that connected
}

TEST_F(TransportSecurityTest, MutualTlsAndTokenRefuseStrangersAndTrain) {
  RequireTls();
  if (IsSkipped()) return;
  TransportSecurity security = ServerTls();
  security.require_client_certificate = true;
  security.token = kToken;
  LocalCluster local = CreateLocalCluster(1, 1, {}, security);
  EXPECT_EQ(TrainAcrossTasks(local.workers[0]->target(), 3), 3);
  const std::string address = local.workers[0]->bound_address();

  // No client certificate; one from another CA; the right certificate without the token.
  EXPECT_EQ(RegisterThrough(address, {.ca_file = tls_.ca, .token = kToken}).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(RegisterThrough(address, {.certificate_file = tls_.rogue_cert,
                                      .private_key_file = tls_.rogue_key,
                                      .ca_file = tls_.ca,
                                      .token = kToken})
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);
  TransportSecurity client = security;
  client.require_client_certificate = false;
  client.token.clear();
  EXPECT_EQ(RegisterThrough(address, client).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(local.workers[0]->GetStats().registered_graphs, 0);
  client.token = kToken;
  EXPECT_TRUE(RegisterThrough(address, client).ok());
}

TEST_F(TransportSecurityTest, InconsistentSettingsAndMissingFilesAreNamed) {
  const ClusterSpec cluster = ClusterSpec::Parse("worker=localhost:0");
  auto server_with = [&](const TransportSecurity& security) {
    Server server({.cluster = cluster, .job_name = "worker", .security = security});
  };
  testing::ExpectInvalidArgument([&] { server_with({.certificate_file = "c.pem"}); },
                                 {"certificate_file and private_key_file go together"});
  testing::ExpectInvalidArgument([&] { server_with({.ca_file = "ca.pem"}); },
                                 {"a server with TLS needs certificate_file"});
  testing::ExpectInvalidArgument([&] { server_with({.require_client_certificate = true}); },
                                 {"require_client_certificate needs TLS"});
  testing::ExpectInvalidArgument([&] { server_with({.token = "two words"}); },
                                 {"printable ASCII without spaces", "32"});
  testing::ExpectInvalidArgument([&] { SetClientSecurity("grpc://localhost:1", {.private_key_file = "k"}); },
                                 {"go together"});
  try {
    server_with({.certificate_file = "/nonexistent/task.pem", .private_key_file = "/nonexistent/task.key"});
    ADD_FAILURE() << "a server started without its certificate";
  } catch (const NotFoundError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/task."));
  }
}

TEST_F(TransportSecurityTest, TokenFilesAreTrimmedAndMustHoldAToken) {
  const std::string dir = testing::MakeTempDir("token");
  std::ofstream(dir + "/token") << "  " << kToken << "\n";
  EXPECT_EQ(ReadTokenFile(dir + "/token"), kToken);
  std::ofstream(dir + "/empty") << " \n";
  testing::ExpectInvalidArgument([&] { ReadTokenFile(dir + "/empty"); }, {"holds no token"});
  EXPECT_THROW(ReadTokenFile(dir + "/missing"), NotFoundError);
}

TEST_F(TransportSecurityTest, ClientSecurityIsKeptPerTargetWithOrWithoutScheme) {
  SetClientSecurity("grpc://example.com:5000", {.token = "a"});
  EXPECT_EQ(ClientSecurityFor("example.com:5000").token, "a");
  EXPECT_EQ(ClientSecurityFor("grpc://example.com:5001").token, "");
  ClearClientSecurity("example.com:5000");
  EXPECT_EQ(ClientSecurityFor("grpc://example.com:5000").token, "");
}

}  // namespace
}  // namespace flowtrain::distributed
