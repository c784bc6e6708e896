// The worker service against requests a stranger or a crashed client sends: malformed ones
// are error statuses naming what was wrong, and what orphaned ones hold is bounded and
// expires (ServerLimits). Also the session's side of those bounds (its graphs go when it
// closes, and come back after it idled) and its checks of what a task answers.
#include <chrono>
#include <future>
#include <thread>

#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include "flowtrain/distributed/grpc_session.h"
#include "flowtrain/distributed/internal/rpc_util.h"
#include "flowtrain/distributed/server.h"
#include "flowtrain/distributed/worker_service.grpc.pb.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/proto/tensor_proto_util.h"
#include "flowtrain/runtime/session_factory.h"
#include "tests/test_util.h"
#include "tests/worker_requests.h"

namespace flowtrain::distributed {
namespace {

using testing::FetchConstRequest;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// One stage that waits for the tensor pushed under `key`, feeds it to p and fetches y.
RegisterGraphRequest EchoPushRequest(const std::string& key = "x:0") {
  RegisterGraphRequest request;
  *request.mutable_graph_def() = testing::ConstAndEchoGraphDef();
  Stage* stage = request.add_stages();
  StageInput* input = stage->add_inputs();
  input->set_placeholder("p");
  input->set_transfer_key(key);
  stage->add_targets("y");
  StageOutput* output = stage->add_outputs();
  output->set_tensor("y:0");
  output->add_client_fetches(0);
  return request;
}

tensorflow::TensorProto FloatsProto(int64_t n) { return TensorToProto(Tensor(DT_FLOAT, TensorShape({n}))); }

// Raw calls to one server's worker service, as any client on the network can make them.
class WorkerServiceTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options = {}) {
    server_ = StartedServer(std::move(options));
    stub_ = NewWorkerStub(server_->bound_address());
  }

  static std::unique_ptr<Server> StartedServer(ServerOptions options) {
    options.cluster = ClusterSpec::Parse("ps=localhost:0");
    options.job_name = "ps";
    return std::make_unique<Server>(std::move(options));
  }

  grpc::Status Register(const RegisterGraphRequest& request, std::string* handle = nullptr) {
    grpc::ClientContext context;
    RegisterGraphResponse response;
    grpc::Status status = stub_->RegisterGraph(&context, request, &response);
    if (handle != nullptr) *handle = response.handle();
    return status;
  }

  grpc::Status Send(int64_t step_id, const std::string& key, const tensorflow::TensorProto& tensor) {
    SendTensorsRequest request;
    request.set_step_id(step_id);
    request.add_keys(key);
    *request.add_tensors() = tensor;
    grpc::ClientContext context;
    SendTensorsResponse response;
    return stub_->SendTensors(&context, request, &response);
  }

  grpc::Status Run(const std::string& handle, int64_t step_id, RunStepResponse* response,
                   const std::vector<tensorflow::TensorProto>& feeds = {}) {
    RunStepRequest request;
    request.set_handle(handle);
    request.set_step_id(step_id);
    request.set_timeout_in_ms(10000);
    for (size_t i = 0; i < feeds.size(); ++i) {
      request.add_feed_indices(static_cast<int>(i));
      *request.add_feeds() = feeds[i];
    }
    grpc::ClientContext context;
    return stub_->RunStep(&context, request, response);
  }

  // The server still serves after whatever the test sent it.
  void ExpectServing() {
    grpc::ClientContext context;
    GetStatusResponse response;
    EXPECT_TRUE(stub_->GetStatus(&context, GetStatusRequest(), &response).ok());
    EXPECT_EQ(response.job_name(), "ps");
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<WorkerService::Stub> stub_;
};

void ExpectStatus(const grpc::Status& status, grpc::StatusCode code,
                  std::initializer_list<std::string> parts) {
  EXPECT_EQ(status.error_code(), code) << status.error_message();
  for (const std::string& part : parts) {
    EXPECT_NE(status.error_message().find(part), std::string::npos)
        << status.error_message() << "\n  lacks: " << part;
  }
}

TEST_F(WorkerServiceTest, BadTensorNamesInARegistrationAreInvalidArgumentNamingThem) {
  StartServer();
  std::string handle;
  ASSERT_TRUE(Register(FetchConstRequest(), &handle).ok());
  RunStepResponse response;
  ASSERT_TRUE(Run(handle, 1, &response).ok());
  EXPECT_EQ(TensorFromProto(response.fetches(0)).scalar<float>(), 3);

  // Before: "stoi" (INTERNAL) for the unparsable indices, a crash for the out-of-range one.
  for (const std::string name :
       {"c:abc", "c:99999999999", ":0", "", "c", "c:-1", "c:+0", "c:1", "nosuch:0"}) {
    SCOPED_TRACE(name);
    ExpectStatus(Register(FetchConstRequest(name)), grpc::StatusCode::INVALID_ARGUMENT, {"'" + name + "'"});
  }
  for (const std::string key : {"x:abc", "x:99999999999", ":0", "", "^", "x"}) {
    SCOPED_TRACE(key);
    ExpectStatus(Register(EchoPushRequest(key)), grpc::StatusCode::INVALID_ARGUMENT, {"'" + key + "'"});
    RegisterGraphRequest push_to = FetchConstRequest();
    PushTarget* push = push_to.mutable_stages(0)->mutable_outputs(0)->add_pushes();
    push->set_job("ps");
    push->set_key(key);
    ExpectStatus(Register(push_to), grpc::StatusCode::INVALID_ARGUMENT, {"'" + key + "'"});
  }
  RegisterGraphRequest elsewhere = FetchConstRequest();
  PushTarget* push = elsewhere.mutable_stages(0)->mutable_outputs(0)->add_pushes();
  push->set_job("ps");
  push->set_task(7);
  push->set_key("c:0");
  ExpectStatus(Register(elsewhere), grpc::StatusCode::INVALID_ARGUMENT, {"Task 7 of job 'ps'"});
  ExpectServing();
}

TEST_F(WorkerServiceTest, BadKeysAndTensorsInSendTensorsAreInvalidArgumentNamingThem) {
  StartServer();
  for (const std::string key : {"x:abc", "x:99999999999", ":0", "", "^", "x"}) {
    SCOPED_TRACE(key);
    ExpectStatus(Send(1, key, FloatsProto(2)), grpc::StatusCode::INVALID_ARGUMENT, {"'" + key + "'"});
  }
  tensorflow::TensorProto short_content = FloatsProto(4);
  short_content.mutable_tensor_content()->resize(5);
  ExpectStatus(Send(2, "x:0", short_content), grpc::StatusCode::INVALID_ARGUMENT, {"'x:0'", "5 bytes"});
  // 2^62 floats claimed by one value: the byte count wraps to 0 unless checked.
  tensorflow::TensorProto huge;
  huge.set_dtype(tensorflow::DT_FLOAT);
  huge.mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 31);
  huge.mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 31);
  huge.add_float_val(1);
  ExpectStatus(Send(3, "x:0", huge), grpc::StatusCode::INVALID_ARGUMENT,
               {"'x:0'", "[2147483648,2147483648]"});
  tensorflow::TensorProto negative = FloatsProto(1);
  negative.mutable_tensor_shape()->mutable_dim(0)->set_size(-5);
  ExpectStatus(Send(4, "x:0", negative), grpc::StatusCode::INVALID_ARGUMENT, {"'x:0'", "-5"});
  tensorflow::TensorProto bad_dtype = FloatsProto(1);
  bad_dtype.set_dtype(static_cast<tensorflow::DataType>(1234));
  ExpectStatus(Send(5, "x:0", bad_dtype), grpc::StatusCode::INVALID_ARGUMENT, {"'x:0'", "dtype"});

  // The same tensors as RunStep feeds.
  std::string handle;
  RegisterGraphRequest fed = EchoPushRequest();
  fed.mutable_stages(0)->mutable_inputs(0)->set_client_feed(0);
  ASSERT_TRUE(Register(fed, &handle).ok());
  RunStepResponse response;
  ExpectStatus(Run(handle, 6, &response, {huge}), grpc::StatusCode::INVALID_ARGUMENT,
               {"feed 0", "[2147483648,2147483648]"});
  ExpectStatus(Run(handle, 7, &response, {short_content}), grpc::StatusCode::INVALID_ARGUMENT,
               {"feed 0", "5 bytes"});
  ExpectServing();
}

TEST_F(WorkerServiceTest, GraphDefsThatDoNotImportOrParseAreErrors) {
  StartServer();
  RegisterGraphRequest unknown_op = FetchConstRequest();
  unknown_op.mutable_graph_def()->mutable_node(0)->set_op("NoSuchOp");
  ExpectStatus(Register(unknown_op), grpc::StatusCode::NOT_FOUND, {"NoSuchOp"});
  RegisterGraphRequest bad_input = FetchConstRequest();
  bad_input.mutable_graph_def()->mutable_node(2)->set_input(0, "nowhere:3");
  ExpectStatus(Register(bad_input), grpc::StatusCode::INVALID_ARGUMENT, {"nowhere"});

  // Bytes that are no RegisterGraphRequest at all: gRPC refuses them before the service.
  grpc::GenericStub generic(
      grpc::CreateChannel(server_->bound_address(), grpc::InsecureChannelCredentials()));
  const std::string garbage = "\x0a\xff\xff\xff\xff\x0f garbage";
  grpc::Slice slice(garbage);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer reply;
  grpc::ClientContext context;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&context, "/flowtrain.distributed.WorkerService/RegisterGraph", grpc::StubOptions(),
                    &request, &reply, [&](grpc::Status status) { done.set_value(std::move(status)); });
  const grpc::Status status = done.get_future().get();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  ExpectServing();
}

// Polls `condition` until it holds or `limit` passes; how long that took.
template <typename Condition>
Clock::duration WaitFor(Condition condition, Clock::duration limit) {
  const auto start = Clock::now();
  while (!condition() && Clock::now() - start < limit) std::this_thread::sleep_for(milliseconds(5));
  return Clock::now() - start;
}

TEST_F(WorkerServiceTest, RegisteredGraphsAreBoundedInNumberAndBytes) {
  const RegisterGraphRequest request = FetchConstRequest();
  const int64_t size = static_cast<int64_t>(request.ByteSizeLong());
  StartServer({.limits = {.max_registered_graphs = 20, .max_registered_graph_bytes = 100 * size}});
  // Before: every one of them kept for the server's life (2,000 grew a ps from 33 to 673 MB).
  int refused = 0;
  for (int i = 0; i < 2000; ++i) {
    const grpc::Status status = Register(request);
    if (status.ok()) continue;
    ++refused;
    if (refused == 1) {
      EXPECT_EQ(i, 20);
      ExpectStatus(status, grpc::StatusCode::RESOURCE_EXHAUSTED,
                   {"20 graphs are registered", "ServerLimits::max_registered_graphs", "graph_idle_timeout"});
    }
  }
  EXPECT_EQ(refused, 1980);
  testing::ExpectInvalidArgument([] { StartedServer({.limits = {.max_pending_bytes = -1}}); },
                                 "ServerLimits of /job:ps/replica:0/task:0");
  EXPECT_EQ(server_->GetStats().registered_graphs, 20);
  EXPECT_EQ(server_->GetStats().registered_graph_bytes, 20 * size);

  StartServer({.limits = {.max_registered_graph_bytes = 3 * size - 1}});
  ASSERT_TRUE(Register(request).ok());
  std::string handle;
  ASSERT_TRUE(Register(request, &handle).ok());
  ExpectStatus(Register(request), grpc::StatusCode::RESOURCE_EXHAUSTED,
               {StrCat("a graph of ", size, " bytes"), "ServerLimits::max_registered_graph_bytes"});
  // A deregistered graph frees its place.
  DeregisterGraphRequest deregister;
  deregister.add_handles(handle);
  grpc::ClientContext context;
  DeregisterGraphResponse response;
  ASSERT_TRUE(stub_->DeregisterGraph(&context, deregister, &response).ok());
  EXPECT_EQ(server_->GetStats().registered_graph_bytes, size);
  EXPECT_TRUE(Register(request).ok());
}

TEST_F(WorkerServiceTest, GraphsNoStepRanForTheIdleTimeoutAreDropped) {
  StartServer({.limits = {.graph_idle_timeout = milliseconds(300)}});
  std::string idle, used;
  ASSERT_TRUE(Register(FetchConstRequest(), &idle).ok());
  ASSERT_TRUE(Register(FetchConstRequest(), &used).ok());
  EXPECT_EQ(server_->GetStats().registered_graphs, 2);
  RunStepResponse response;
  int64_t step_id = 0;
  const Clock::duration dropped = WaitFor(
      [&] {
        EXPECT_TRUE(Run(used, ++step_id, &response).ok());
        std::this_thread::sleep_for(milliseconds(50));
        return server_->GetStats().registered_graphs == 1;
      },
      std::chrono::seconds(5));
  // Run all along, `used` stays; the other goes at 300 ms (the scan runs every 30 ms).
  EXPECT_GE(dropped, milliseconds(300));
  EXPECT_LT(dropped, std::chrono::seconds(2));
  EXPECT_TRUE(Run(used, ++step_id, &response).ok());
  ExpectStatus(Run(idle, ++step_id, &response), grpc::StatusCode::ABORTED,
               {idle, "not registered", "ServerLimits::graph_idle_timeout"});
  EXPECT_LT(WaitFor([&] { return server_->GetStats().registered_graphs == 0; }, std::chrono::seconds(5)),
            std::chrono::seconds(2));
}

TEST_F(WorkerServiceTest, PushesToStepsThatHaveNotStartedAreBoundedPerStepAndInTotal) {
  constexpr int64_t kMiB = 1 << 20;
  StartServer({.limits = {.max_pending_step_bytes = 3 * kMiB, .max_pending_bytes = 8 * kMiB}});
  const tensorflow::TensorProto mib = FloatsProto(kMiB / 4);
  // Before: 111 pushes of 32 MiB to steps that never ran held 4.5 GB until the OOM killer came.
  ExpectStatus(Send(7, "x:0", FloatsProto(kMiB)), grpc::StatusCode::RESOURCE_EXHAUSTED,
               {"step 7", "ServerLimits::max_pending_step_bytes", "has not started here"});
  ASSERT_TRUE(Send(7, "x:0", mib).ok());
  ASSERT_TRUE(Send(7, "y:0", mib).ok());
  ExpectStatus(Send(7, "z:0", mib), grpc::StatusCode::RESOURCE_EXHAUSTED,
               {"step 7", "ServerLimits::max_pending_step_bytes"});
  int accepted = 2;
  grpc::Status refused;
  for (int64_t step = 100; step < 120 && refused.ok(); ++step) {
    refused = Send(step, "x:0", mib);
    if (refused.ok()) ++accepted;
  }
  EXPECT_EQ(accepted, 7);  // 8 MiB, less the keys' and steps' share
  ExpectStatus(refused, grpc::StatusCode::RESOURCE_EXHAUSTED,
               {"step 105", "ServerLimits::max_pending_bytes"});
  EXPECT_EQ(server_->GetStats().pending_steps, 6);
  EXPECT_LE(server_->GetStats().pending_bytes, 8 * kMiB);
  EXPECT_GE(server_->GetStats().pending_bytes, 7 * kMiB);
  // One value may not claim more than the total, even for a step that runs.
  tensorflow::TensorProto claims_a_gib;
  claims_a_gib.set_dtype(tensorflow::DT_FLOAT);
  claims_a_gib.mutable_tensor_shape()->add_dim()->set_size(kMiB * 256);
  claims_a_gib.add_float_val(1);
  ExpectStatus(Send(200, "x:0", claims_a_gib), grpc::StatusCode::RESOURCE_EXHAUSTED,
               {"'x:0' of step 200", "1073741824 bytes", "ServerLimits::max_pending_bytes"});
  // A step that starts takes its tensors out of the pending ones.
  std::string handle;
  ASSERT_TRUE(Register(EchoPushRequest(), &handle).ok());
  RunStepResponse response;
  ASSERT_TRUE(Run(handle, 100, &response).ok());
  EXPECT_EQ(server_->GetStats().pending_steps, 5);
  EXPECT_TRUE(Send(300, "x:0", mib).ok());
}

TEST_F(WorkerServiceTest, PushesToAStepThatDoesNotStartExpire) {
  StartServer({.limits = {.orphan_step_timeout = milliseconds(300)}});
  ASSERT_TRUE(Send(7, "x:0", FloatsProto(1000)).ok());
  ASSERT_TRUE(Send(8, "^token", tensorflow::TensorProto()).ok());
  EXPECT_EQ(server_->GetStats().pending_steps, 2);
  // Before: kept for 10 minutes, and only once 256 other steps were pending.
  const Clock::duration expired =
      WaitFor([&] { return server_->GetStats().pending_steps == 0; }, std::chrono::seconds(5));
  EXPECT_GE(expired, milliseconds(250));  // the steps were created a little before the clock started
  EXPECT_LT(expired, std::chrono::seconds(2));
  EXPECT_EQ(server_->GetStats().pending_bytes, 0);
  // The step's RunStep, coming after all, fails instead of waiting for them forever; late
  // pushes to it are dropped.
  std::string handle;
  ASSERT_TRUE(Register(EchoPushRequest(), &handle).ok());
  RunStepResponse response;
  ExpectStatus(Run(handle, 7, &response), grpc::StatusCode::ABORTED,
               {"Step 7", "dropped", "ServerLimits::orphan_step_timeout"});
  ASSERT_TRUE(Send(7, "x:0", FloatsProto(1000)).ok());
  EXPECT_EQ(server_->GetStats().pending_steps, 0);
}

TEST_F(WorkerServiceTest, APushToARunningStepIsNotBoundByThePendingLimits) {
  constexpr int64_t kMiB = 1 << 20;
  StartServer({.limits = {.max_pending_step_bytes = kMiB, .max_pending_bytes = 4 * kMiB}});
  std::string handle;
  ASSERT_TRUE(Register(EchoPushRequest("x:0"), &handle).ok());
  RunStepResponse response;
  std::future<grpc::Status> run = std::async(std::launch::async, [&] { return Run(handle, 9, &response); });
  // A control token first, so that the step shows up as pending until the RunStep claims it.
  ASSERT_TRUE(Send(9, "^early", tensorflow::TensorProto()).ok());
  WaitFor([&] { return server_->GetStats().pending_steps == 0; }, std::chrono::seconds(5));
  ASSERT_EQ(server_->GetStats().pending_steps, 0);
  const grpc::Status sent = Send(9, "x:0", FloatsProto(kMiB / 2));  // 2 MiB
  EXPECT_TRUE(sent.ok()) << sent.error_message();
  ASSERT_TRUE(run.get().ok());
  EXPECT_EQ(TensorFromProto(response.fetches(0)).NumElements(), kMiB / 2);
  EXPECT_EQ(server_->GetStats().pending_bytes, 0);
}

// A session's graphs on every task of a cluster whose servers drop idle graphs after 300 ms.
class SessionGraphsTest : public ::testing::Test {
 protected:
  int64_t RegisteredGraphs() {
    return local_.workers[0]->GetStats().registered_graphs + local_.ps[0]->GetStats().registered_graphs;
  }

  LocalCluster local_ = CreateLocalCluster(1, 1, {.graph_idle_timeout = milliseconds(300)});
};

TEST_F(SessionGraphsTest, ClosingTheSessionDeregistersItsGraphs) {
  Graph g;
  auto as_default = g.AsDefault();
  Output v;
  {
    auto ps = g.Device("/job:ps/task:0");
    v = ops::Const(Tensor::Scalar<float>(2), "v");
  }
  Output y = ops::Mul(v, ops::Const(3.0f));
  auto sess = NewSession(g, {.target = local_.workers[0]->target()});
  EXPECT_EQ(sess->Run({}, {y}, {})[0].scalar<float>(), 6);
  EXPECT_EQ(sess->Run({}, {v}, {})[0].scalar<float>(), 2);
  EXPECT_EQ(RegisteredGraphs(), 3);  // y's on both tasks, v's on the ps
  sess->Close();
  EXPECT_EQ(RegisteredGraphs(), 0);
}

TEST_F(SessionGraphsTest, ASessionThatIdledLongerThanTheTimeoutRegistersAgain) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable v;
  {
    auto ps = g.Device("/job:ps/task:0");
    v = Variable(Tensor::Scalar<float>(1), {.name = "v"});
  }
  Output add = v.AssignAdd(ops::Const(1.0f));
  auto sess = NewSession(g, {.target = local_.workers[0]->target()});
  sess->Run({}, {}, {ops::GlobalVariablesInitializer()});
  EXPECT_EQ(sess->Run({}, {add}, {})[0].scalar<float>(), 2);
  // Idle past the timeout: the tasks dropped the graphs, the session registers them again
  // (the variable lives on in the ps's resource manager).
  EXPECT_LT(WaitFor([&] { return RegisteredGraphs() == 0; }, std::chrono::seconds(5)),
            std::chrono::seconds(2));
  EXPECT_EQ(sess->Run({}, {add}, {})[0].scalar<float>(), 3);
  // Idle for more than half the timeout, but not yet dropped: registered again all the same,
  // as the task may drop the graphs while the step is on its way.
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(sess->Run({}, {add}, {})[0].scalar<float>(), 4);
  EXPECT_EQ(dynamic_cast<GrpcSession&>(*sess).num_registered_plans(), 2);
  // Steps closer together than that reuse the graphs.
  const int64_t graphs = RegisteredGraphs();
  for (int i = 0; i < 5; ++i) sess->Run({}, {add}, {});
  EXPECT_EQ(RegisteredGraphs(), graphs);
}

// A task gone wrong: it answers every RunStep with `response`.
class MisbehavingWorker final : public WorkerService::Service {
 public:
  explicit MisbehavingWorker(RunStepResponse response) : response_(std::move(response)) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("localhost:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    address_ = StrCat("localhost:", port);
  }
  ~MisbehavingWorker() override { server_->Shutdown(); }

  std::string target() const { return "grpc://" + address_; }

  grpc::Status GetStatus(grpc::ServerContext*, const GetStatusRequest*,
                         GetStatusResponse* response) override {
    response->set_cluster("worker=" + address_);
    response->set_job_name("worker");
    return grpc::Status::OK;
  }
  grpc::Status RegisterGraph(grpc::ServerContext*, const RegisterGraphRequest*,
                             RegisterGraphResponse* response) override {
    response->set_handle("handle");
    return grpc::Status::OK;
  }
  grpc::Status RunStep(grpc::ServerContext*, const RunStepRequest*, RunStepResponse* response) override {
    *response = response_;
    return grpc::Status::OK;
  }

 private:
  const RunStepResponse response_;
  std::string address_;
  std::unique_ptr<grpc::Server> server_;
};

// Runs a fetch of one Const through a session on `response`'s worker; the error it raises.
Error RunAgainst(RunStepResponse response) {
  MisbehavingWorker worker(std::move(response));
  Graph g;
  auto as_default = g.AsDefault();
  Output c = ops::Const(1.0f);
  auto sess = NewSession(g, {.target = worker.target()});
  try {
    sess->Run({}, {c}, {});
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "the run succeeded";
  return Error(Code::kOk, "");
}

TEST(GrpcSessionResponsesTest, AMalformedRunStepResponseIsAnErrorNamingTheTask) {
  // Before: std::out_of_range from vector::at, and a SIGSEGV of the client for the 2^62 floats.
  RunStepResponse out_of_range;
  out_of_range.add_fetch_indices(5);
  *out_of_range.add_fetches() = TensorToProto(Tensor::Scalar<float>(1));
  Error e = RunAgainst(out_of_range);
  EXPECT_EQ(e.code(), Code::kInternal);
  EXPECT_NE(std::string(e.what()).find("/job:worker/replica:0/task:0"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("fetch index 5 of a step with 1 fetches"), std::string::npos)
      << e.what();

  RunStepResponse mismatched;
  mismatched.add_fetch_indices(0);
  e = RunAgainst(mismatched);
  EXPECT_EQ(e.code(), Code::kInternal);
  EXPECT_NE(std::string(e.what()).find("1 fetch indices for 0 fetches"), std::string::npos) << e.what();

  RunStepResponse huge;
  huge.add_fetch_indices(0);
  tensorflow::TensorProto* proto = huge.add_fetches();
  proto->set_dtype(tensorflow::DT_FLOAT);
  proto->mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 31);
  proto->mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 31);
  proto->add_float_val(1);
  e = RunAgainst(huge);
  EXPECT_EQ(e.code(), Code::kInvalidArgument);
  EXPECT_NE(std::string(e.what()).find("fetch 0"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("[2147483648,2147483648]"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace flowtrain::distributed
