#include "flowtrain/distributed/grpc_session.h"

#include <chrono>
#include <future>
#include <set>
#include <thread>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/distributed/server.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/data_flow_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/stack_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session_factory.h"
#include "tests/test_util.h"

namespace flowtrain::distributed {
namespace {

using testing::Values;
using Clock = std::chrono::steady_clock;

// Fails with InvalidArgument.
FT_REGISTER_OP("DistributedTestFail")
    .Input("x: float")
    .Output("y: float")
    .SetShapeFn(shape_fns::UnchangedShape);
class FailKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    InvalidArgument("kernel ", name(), " refuses ", ctx->input(0).NumElements(), " elements");
  }
};
FT_REGISTER_KERNEL("DistributedTestFail", FailKernel);

// A dequeue from a queue on `device` that nobody fills: blocks until its step is cancelled or
// times out.
Output BlockingDequeueOn(Graph& g, const std::string& device) {
  auto scope = g.Device(device);
  ops::FIFOQueue queue(1, {DT_FLOAT}, {.shapes = {PartialTensorShape({})}});
  return queue.Dequeue()[0];
}

class GrpcSessionTest : public ::testing::Test {
 protected:
  std::unique_ptr<SessionInterface> NewWorkerSession(Graph& g, int64_t timeout_ms = 0) {
    SessionOptions options{.target = local_.workers[0]->target()};
    options.config.operation_timeout_in_ms = timeout_ms;
    return NewSession(g, options);
  }

  // Variable v = 4 on the ps, y = 2v on the worker, initialised and checked through `sess`.
  struct PsVariable {
    Variable v;
    Output y;
  };
  PsVariable InitialisedPsVariable(Graph& g, SessionInterface& sess) {
    PsVariable model;
    {
      auto ps = g.Device("/job:ps/task:0");
      model.v = Variable(Tensor::Scalar<float>(4), {.name = "v"});
    }
    model.y = ops::Mul(model.v, ops::Const(2.0f));
    sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
    EXPECT_EQ(sess.Run({}, {model.y}, {})[0].scalar<float>(), 8);
    return model;
  }

  LocalCluster local_ = CreateLocalCluster(1, 1);
};

TEST_F(GrpcSessionTest, VariablesOnPsAreAssignedAndReadFromTheWorker) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable v, s;
  {
    auto ps = g.Device("/job:ps/task:0");
    v = Variable(Tensor::FromVector<float>({1, 2, 3}, TensorShape({3})), {.name = "v"});
    s = Variable(Tensor::Scalar<std::string>("hello"), {.name = "s"});
  }
  Output x = ops::Placeholder(DT_FLOAT, {3}, "x");
  Output text = ops::Placeholder(DT_STRING, {}, "text");
  Output doubled = ops::Mul(v, ops::Const(2.0f), "doubled");  // on the worker
  Output assign_v = v.Assign(ops::Add(x, ops::Const(1.0f)));  // Add on the worker, Assign on ps
  Output assign_s = s.Assign(text);
  auto sess = NewWorkerSession(g);
  sess->Run({}, {}, {ops::GlobalVariablesInitializer()});

  std::vector<Tensor> out = sess->Run({}, {doubled, s.value()}, {});
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(out[1].scalar<std::string>(), "hello");

  sess->Run({{x, Tensor::FromVector<float>({5, 6, 7}, TensorShape({3}))},
             {text, Tensor::Scalar<std::string>("world")}},
            {}, {assign_v.op(), assign_s.op()});
  out = sess->Run({}, {v.value(), s.value()}, {});
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{6, 7, 8}));
  EXPECT_EQ(out[1].scalar<std::string>(), "world");
  EXPECT_EQ(local_.ps[0]->resource_manager()->All<Var>().size(), 2u);
  EXPECT_TRUE(local_.workers[0]->resource_manager()->All<Var>().empty());

  // A fed tensor comes back as fed; partitions are registered once per signature.
  Tensor fed = Tensor::FromVector<float>({0, 0, 1}, TensorShape({3}));
  for (int i = 0; i < 3; ++i) out = sess->Run({{x, fed}}, {x, doubled}, {});
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{0, 0, 1}));
  EXPECT_EQ(dynamic_cast<GrpcSession&>(*sess).num_registered_plans(), 5);

  // A traced step returns the timings of both tasks.
  RunOptions traced{.trace_level = RunOptions::kFullTrace};
  RunMetadata metadata;
  sess->Run({}, {doubled}, {}, &traced, &metadata);
  std::set<std::string> devices;
  for (const auto& dev : metadata.step_stats().dev_stats()) devices.insert(dev.device());
  EXPECT_EQ(devices, (std::set<std::string>{"/job:ps/replica:0/task:0/device:CPU:0",
                                            "/job:worker/replica:0/task:0/device:CPU:0"}));

  // The ps keeps its variables when the worker's session ends: a new session finds them.
  sess->Close();
  auto again = NewWorkerSession(g);
  EXPECT_EQ(Values<float>(again->Run({}, {v.value()}, {})[0]), (std::vector<float>{6, 7, 8}));
}

TEST_F(GrpcSessionTest, TasksFuseTheirPlansUnlessRemappingIsOff) {
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Const(Tensor::FromVector<float>({1, -2, 3, -4}, TensorShape({2, 2})), "x");
  Output w = ops::Const(Tensor::FromVector<float>({1, 0, 0, 1}, TensorShape({2, 2})), "w");
  Output b = ops::Const(Tensor::FromVector<float>({1, 1}), "b");
  Output y = ops::Relu(ops::BiasAdd(ops::MatMul(x, w), b), "y");
  for (bool remapping : {true, false}) {
    SessionOptions options{.target = local_.workers[0]->target()};
    options.config.remapping = remapping;
    auto sess = NewSession(g, options);
    RunOptions traced{.trace_level = RunOptions::kFullTrace};
    RunMetadata metadata;
    EXPECT_EQ(Values<float>(sess->Run({}, {y}, {}, &traced, &metadata)[0]), (std::vector<float>{2, 0, 4, 0}));
    bool fused = false;
    for (const auto& dev : metadata.step_stats().dev_stats()) {
      for (const auto& node : dev.node_stats())
        fused = fused || node.timeline_label().find("_FusedMatMul") != std::string::npos;
    }
    EXPECT_EQ(fused, remapping);
  }
}

TEST_F(GrpcSessionTest, AQueueOnThePsIsSharedBySessionsAndItsOpsRunThere) {
  Graph g;
  auto as_default = g.AsDefault();
  std::optional<ops::FIFOQueue> queue;
  {
    auto ps = g.Device("/job:ps/task:0");
    queue.emplace(10, std::vector<DataType>{DT_FLOAT},
                  ops::QueueOptions{.shapes = {PartialTensorShape({2})}});
  }
  Output x = ops::Placeholder(DT_FLOAT, {2}, "x");
  // The enqueue and dequeue take the queue's handle, so they run on the ps.
  Operation enqueue = queue->Enqueue({ops::Mul(x, ops::Const(10.0f))});
  Output dequeued = ops::Add(queue->Dequeue()[0], ops::Const(1.0f));
  auto consumer = NewWorkerSession(g);
  auto producer = NewWorkerSession(g);
  // The dequeue blocks on the ps until another session enqueues.
  auto result = std::async(std::launch::async, [&] { return consumer->Run({}, {dequeued}, {})[0]; });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  producer->Run({{x, Tensor::FromVector<float>({1, 2}, TensorShape({2}))}}, {}, {enqueue});
  EXPECT_EQ(Values<float>(result.get()), (std::vector<float>{11, 21}));
  EXPECT_EQ(local_.ps[0]->resource_manager()->All<ResourceBase>().size(), 1u);
  EXPECT_TRUE(local_.workers[0]->resource_manager()->All<ResourceBase>().empty());
}

// The ps runs its partition in two stages (the pop waits for the worker's product), and
// both see one step container: the stack pushed in the first is popped in the second. The
// container goes when the step ends, also when the step fails.
TEST_F(GrpcSessionTest, AStepsStagesShareOneStepContainerDroppedWithTheStep) {
  Graph g;
  auto as_default = g.AsDefault();
  Output stack, pushed;
  {
    auto ps = g.Device("/job:ps/task:0");
    stack = ops::StackV2(DT_FLOAT, -1, "stack");
    pushed = ops::StackPushV2(stack, ops::Const(3.0f));
  }
  Output product = ops::Mul(pushed, ops::Const(2.0f), "product");  // on the worker
  Output failed = NodeBuilder("DistributedTestFail", "fail").Input(product).Finalize();
  Output popped, popped_after_failure;
  {
    auto after = g.ControlDependencies({product.op()});
    popped = ops::StackPopV2(stack, DT_FLOAT, "pop");
  }
  {
    auto after = g.ControlDependencies({failed.op()});
    popped_after_failure = ops::StackPopV2(stack, DT_FLOAT, "pop_after_failure");
  }
  auto sess = NewWorkerSession(g);
  ResourceMgr* ps_resources = local_.ps[0]->resource_manager();
  for (int step = 0; step < 2; ++step) {
    std::vector<Tensor> out = sess->Run({}, {popped, product}, {});
    EXPECT_EQ(out[0].scalar<float>(), 3);
    EXPECT_EQ(out[1].scalar<float>(), 6);
    EXPECT_TRUE(ps_resources->All<ResourceBase>().empty());
  }
  EXPECT_THROW(sess->Run({}, {popped_after_failure}, {}), InvalidArgumentError);
  // The ps's RunStep may end after the client has the worker's error.
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(10);
  while (!ps_resources->All<ResourceBase>().empty() && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(ps_resources->All<ResourceBase>().empty());
}

TEST_F(GrpcSessionTest, KernelErrorsOnThePsReachTheClient) {
  Graph g;
  auto as_default = g.AsDefault();
  Output failing;
  Variable never_initialized;
  {
    auto ps = g.Device("/job:ps/task:0");
    failing = NodeBuilder("DistributedTestFail", "fail").Input(ops::Const({1.0f, 2.0f})).Finalize();
    never_initialized = Variable(Tensor::Scalar<float>(1), {.name = "never_initialized"});
  }
  auto sess = NewWorkerSession(g);
  try {
    sess->Run({}, {ops::Identity(failing)}, {});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel fail refuses 2 elements"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[[node fail"), std::string::npos) << e.what();
  }
  try {
    sess->Run({}, {ops::Mul(never_initialized, ops::Const(2.0f))}, {});
    FAIL() << "expected FailedPrecondition";
  } catch (const FailedPreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("uninitialized value never_initialized"), std::string::npos)
        << e.what();
  }
}

// A MapDataset whose function is a FunctionDef of the graph's library (as TF writes tf.data
// functions) runs on the ps: the partition carries the library and the ps's worker gives its
// kernels a function runtime.
TEST_F(GrpcSessionTest, DatasetFunctionsOfTheLibraryRunOnTheTaskThatHoldsTheDataset) {
  Graph g;
  auto as_default = g.AsDefault();
  tensorflow::FunctionDefLibrary library;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
                                                              function {
                                                                signature {
                                                                  name: "times_three"
                                                                  input_arg { name: "x" type: DT_INT64 }
                                                                  output_arg { name: "y" type: DT_INT64 }
                                                                }
                                                                node_def {
                                                                  name: "three"
                                                                  op: "Const"
                                                                  attr {
                                                                    key: "dtype"
                                                                    value { type: DT_INT64 }
                                                                  }
                                                                  attr {
                                                                    key: "value"
                                                                    value {
                                                                      tensor {
                                                                        dtype: DT_INT64
                                                                        tensor_shape {}
                                                                        int64_val: 3
                                                                      }
                                                                    }
                                                                  }
                                                                }
                                                                node_def {
                                                                  name: "m"
                                                                  op: "Mul"
                                                                  input: "x"
                                                                  input: "three:output:0"
                                                                  attr {
                                                                    key: "T"
                                                                    value { type: DT_INT64 }
                                                                  }
                                                                }
                                                                ret { key: "y" value: "m:z:0" }
                                                              })pb",
                                                            &library));
  g.library().AddLibrary(library);
  std::vector<Output> next;
  Operation init;
  {
    auto ps = g.Device("/job:ps/task:0");
    AttrValue f;
    f.mutable_func()->set_name("times_three");
    const std::vector<PartialTensorShape> scalar = {PartialTensorShape({})};
    Output mapped = NodeBuilder("MapDataset", "MapDataset")
                        .Input(data::Dataset::Range(0, 4).variant())
                        .Input(std::vector<Output>{})
                        .SetAttr("f", f)
                        .Attr("Targuments", std::vector<DataType>{})
                        .Attr("output_types", std::vector<DataType>{DT_INT64})
                        .Attr("output_shapes", scalar)
                        .Finalize();
    data::Iterator it = data::Dataset::FromVariant(mapped, {DT_INT64}, scalar).MakeInitializableIterator();
    next = it.GetNext();
    init = it.initializer();
  }
  auto sess = NewWorkerSession(g);
  sess->Run({}, {}, {init});
  std::vector<int64_t> got;
  for (int i = 0; i < 4; ++i) got.push_back(sess->Run({}, {ops::Identity(next[0])}, {})[0].scalar<int64_t>());
  EXPECT_EQ(got, (std::vector<int64_t>{0, 3, 6, 9}));
}

TEST_F(GrpcSessionTest, DevicesOutsideTheClusterAreRejected) {
  Graph g;
  auto as_default = g.AsDefault();
  Output c;
  {
    auto device = g.Device("/job:ps/task:3");
    c = ops::Const(1.0f, "on_missing_task");
  }
  auto sess = NewWorkerSession(g);
  testing::ExpectInvalidArgument(
      [&] { sess->Run({}, {c}, {}); },
      {"Cannot assign a device for operation on_missing_task", "/job:ps/replica:0/task:3"});
}

TEST_F(GrpcSessionTest, StoppedPsMakesRunsUnavailable) {
  Graph g;
  auto as_default = g.AsDefault();
  auto sess = NewWorkerSession(g);
  const Output y = InitialisedPsVariable(g, *sess).y;
  const std::string ps_address = local_.ps[0]->bound_address();
  local_.ps[0]->Stop();
  const auto start = Clock::now();
  try {
    sess->Run({}, {y}, {});
    FAIL() << "expected Unavailable";
  } catch (const UnavailableError& e) {
    EXPECT_NE(std::string(e.what()).find("/job:ps/replica:0/task:0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(ps_address), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST_F(GrpcSessionTest, RestartedPsLosesItsVariablesAndNewSessionsInitialiseThemAgain) {
  Graph g;
  auto as_default = g.AsDefault();
  auto sess = NewWorkerSession(g);
  const Output y = InitialisedPsVariable(g, *sess).y;
  Output uninitialized = ops::ReportUninitializedVariables();

  local_.ps[0].reset();  // stops it
  local_.ps[0] = std::make_unique<Server>(ServerOptions{.cluster = local_.cluster, .job_name = "ps"});
  // The old session's partition died with the old ps: Aborted or Unavailable, the codes a
  // monitored session recovers from by creating a new session.
  try {
    sess->Run({}, {y}, {});
    FAIL() << "expected Aborted or Unavailable";
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == Code::kAborted || e.code() == Code::kUnavailable) << e.what();
  }
  auto fresh = NewWorkerSession(g);
  Tensor names;
  for (int attempt = 0; !names.IsInitialized(); ++attempt) {
    try {
      names = fresh->Run({}, {uninitialized}, {})[0];
    } catch (const UnavailableError&) {
      ASSERT_LT(attempt, 100) << "the restarted ps never became reachable";
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  EXPECT_EQ(Values<std::string>(names), (std::vector<std::string>{"v"}));
  fresh->Run({}, {}, {ops::GlobalVariablesInitializer()});
  EXPECT_EQ(fresh->Run({}, {y}, {})[0].scalar<float>(), 8);
}

TEST_F(GrpcSessionTest, StopDuringABlockingStepReturnsPromptly) {
  Graph g;
  auto as_default = g.AsDefault();
  Output blocked = BlockingDequeueOn(g, "/job:ps/task:0");
  auto sess = NewWorkerSession(g);
  auto run = std::async(std::launch::async, [&] { sess->Run({}, {ops::Identity(blocked)}, {}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = Clock::now();
  local_.ps[0]->Stop();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  EXPECT_THROW(run.get(), UnavailableError);
  local_.ps[0]->Stop();  // idempotent
}

TEST_F(GrpcSessionTest, CloseCancelsAStepInFlightAndTimeoutsBoundSteps) {
  Graph g;
  auto as_default = g.AsDefault();
  Output blocked = BlockingDequeueOn(g, "/job:ps/task:0");
  Output on_worker = ops::Add(blocked, ops::Const(1.0f));
  {
    auto sess = NewWorkerSession(g, /*timeout_ms=*/200);
    EXPECT_THROW(sess->Run({}, {on_worker}, {}), DeadlineExceededError);
  }
  auto sess = NewWorkerSession(g);
  auto run = std::async(std::launch::async, [&] { sess->Run({}, {on_worker}, {}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = Clock::now();
  sess->Close();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  EXPECT_THROW(run.get(), CancelledError);
  EXPECT_THROW(sess->Run({}, {on_worker}, {}), FailedPreconditionError);
  // The servers still serve other sessions.
  Graph other;
  auto other_default = other.AsDefault();
  Output two = ops::Add(ops::Const(1.0f), ops::Const(1.0f));
  EXPECT_EQ(NewWorkerSession(other)->Run({}, {two}, {})[0].scalar<float>(), 2);
}

TEST(ServerTest, UnreachableTargetIsUnavailableAndPortZeroIsBound) {
  Server server({.cluster = ClusterSpec::Parse("worker=localhost:0"), .job_name = "worker"});
  EXPECT_NE(server.bound_address(), "localhost:0");
  EXPECT_EQ(server.target(), "grpc://" + server.bound_address());
  EXPECT_EQ(server.cluster().task_address("worker", 0), server.bound_address());
  const std::string target = server.target();
  auto join = std::async(std::launch::async, [&] { server.Join(); });
  server.Stop();
  join.get();
  Graph g;
  auto as_default = g.AsDefault();
  ops::Const(1.0f);
  try {
    NewSession(g, {.target = target});
    FAIL() << "expected Unavailable";
  } catch (const UnavailableError& e) {
    EXPECT_NE(std::string(e.what()).find("The server of target " + target + " is unavailable"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Server({.cluster = ClusterSpec::Parse("worker=a:1"), .job_name = "ps"}), InvalidArgumentError);
}

}  // namespace
}  // namespace flowtrain::distributed
