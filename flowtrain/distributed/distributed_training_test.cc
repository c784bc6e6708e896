// Between-graph replicated training over real gRPC servers: ReplicaDeviceSetter placement,
// workers sharing a ps's variables, and a MonitoredTrainingSession whose checkpoint holds the
// ps's values.
#include <thread>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/distributed/server.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session_factory.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/device_setter.h"
#include "flowtrain/train/gradient_descent.h"
#include "flowtrain/train/momentum.h"
#include "flowtrain/train/monitored_training_session.h"
#include "tests/test_util.h"

namespace flowtrain::distributed {
namespace {

using testing::Values;

TEST(ReplicaDeviceSetterTest, VariablesRoundRobinOverPsTasksOthersOnTheWorker) {
  ClusterSpec cluster = ClusterSpec::Parse("ps=a:1,a:2;worker=b:1,b:2");
  Graph g;
  auto as_default = g.AsDefault();
  auto scope =
      g.Device(train::ReplicaDeviceSetter({.cluster = &cluster, .worker_device = "/job:worker/task:1"}));
  Variable w(Tensor::Scalar<float>(1), {.name = "w"});
  Variable b(Tensor::Scalar<float>(2), {.name = "b"});
  Variable c(Tensor::Scalar<float>(3), {.name = "c"});
  Output y = ops::Add(ops::Mul(w, b), c, "y");
  Output pinned;
  {
    auto explicit_device = g.Device("/job:ps/task:1");
    pinned = ops::Const(1.0f, "pinned");
  }
  EXPECT_EQ(w.op().node()->requested_device(), "/job:ps/task:0");
  EXPECT_EQ(b.op().node()->requested_device(), "/job:ps/task:1");
  EXPECT_EQ(c.op().node()->requested_device(), "/job:ps/task:0");
  EXPECT_EQ(y.node()->requested_device(), "/job:worker/task:1");
  // An enclosing explicit device wins field by field.
  EXPECT_EQ(pinned.node()->requested_device(), "/job:ps/task:1");

  // Slots are colocated with their variable.
  Output loss = ops::Square(y);
  train::MomentumOptimizer optimizer(0.1, 0.9);
  optimizer.Minimize(loss);
  EXPECT_EQ(optimizer.GetSlot(b, "momentum")->op().node()->requested_device(), "/job:ps/task:1");

  // Without ps tasks nothing is placed; with a count and no cluster, tasks 0..n-1.
  EXPECT_EQ(train::ReplicaDeviceSetter({})("VariableV2", "v", ""), "");
  auto by_count = train::ReplicaDeviceSetter({.ps_tasks = 3});
  EXPECT_EQ(by_count("VariableV2", "v", ""), "/job:ps/task:0");
  EXPECT_EQ(by_count("VarHandleOp", "v", ""), "/job:ps/task:1");
  EXPECT_EQ(by_count("MatMul", "m", "/device:CPU:0"), "/job:worker/device:CPU:0");
}

// y = 3x + 2 learned by gradient descent; the model as each worker builds it, on ref or
// resource variables.
struct LinearModel {
  LinearModel(const ClusterSpec& cluster, int worker, bool use_resource = false) {
    auto as_default = graph.AsDefault();
    auto scope = graph.Device(train::ReplicaDeviceSetter(
        {.cluster = &cluster, .worker_device = "/job:worker/task:" + std::to_string(worker)}));
    global_step = train::GetOrCreateGlobalStep();
    w = Variable(Tensor::Scalar<float>(0), {.name = "w", .use_resource = use_resource});
    b = Variable(Tensor::Scalar<float>(0), {.name = "b", .use_resource = use_resource});
    x = ops::Placeholder(DT_FLOAT, {-1}, "x");
    y = ops::Placeholder(DT_FLOAT, {-1}, "y");
    loss = ops::ReduceMean(ops::Square(ops::Sub(ops::Add(ops::Mul(w, x), b), y)));
    train_op = train::GradientDescentOptimizer(0.1).Minimize(loss, global_step);
  }
  FeedList Batch() const {
    return {{x, Tensor::FromVector<float>({-1, 0, 1, 2}, TensorShape({4}))},
            {y, Tensor::FromVector<float>({-1, 2, 5, 8}, TensorShape({4}))}};
  }

  Graph graph;
  Variable global_step, w, b;
  Output x, y, loss;
  Operation train_op;
};

void TrainTwoWorkersOnOnePs(bool use_resource) {
  LocalCluster local = CreateLocalCluster(2, 1);
  LinearModel chief(local.cluster, 0, use_resource), other(local.cluster, 1, use_resource);
  EXPECT_EQ(chief.w.op().type(), use_resource ? "VarHandleOp" : "VariableV2");
  EXPECT_EQ(chief.w.op().node()->requested_device(), "/job:ps/task:0");
  auto chief_sess = NewSession(chief.graph, {.target = local.workers[0]->target()});
  auto other_sess = NewSession(other.graph, {.target = local.workers[1]->target()});
  chief_sess->Run({}, {}, {ops::GlobalVariablesInitializer(&chief.graph)});
  // The other worker's graph sees the chief's initialisation: the variables live on the ps.
  EXPECT_EQ(other_sess
                ->Run({},
                      {ops::ReportUninitializedVariables(std::nullopt, "report_uninitialized_variables",
                                                         &other.graph)},
                      {})[0]
                .NumElements(),
            0);
  const float initial_loss = chief_sess->Run(chief.Batch(), {chief.loss}, {})[0].scalar<float>();

  constexpr int kSteps = 60;
  auto train = [](SessionInterface* sess, const LinearModel* model) {
    for (int i = 0; i < kSteps; ++i) sess->Run(model->Batch(), {}, {model->train_op});
  };
  std::thread t0(train, chief_sess.get(), &chief);
  std::thread t1(train, other_sess.get(), &other);
  t0.join();
  t1.join();

  std::vector<Tensor> out =
      other_sess->Run(other.Batch(), {other.global_step, other.w, other.b, other.loss}, {});
  EXPECT_EQ(out[0].scalar<int64_t>(), 2 * kSteps);  // both workers advanced one global step
  EXPECT_NEAR(out[1].scalar<float>(), 3.0f, 0.1f);
  EXPECT_NEAR(out[2].scalar<float>(), 2.0f, 0.1f);
  EXPECT_LT(out[3].scalar<float>(), initial_loss / 100);
}

TEST(DistributedTrainingTest, TwoWorkersTrainSharedVariablesOnOnePs) { TrainTwoWorkersOnOnePs(false); }

// Resource variables live on the ps as ref ones do: the handle, its reads and the
// ResourceApply updates run there, and both workers update the same variables.
TEST(DistributedTrainingTest, TwoWorkersTrainSharedResourceVariablesOnOnePs) { TrainTwoWorkersOnOnePs(true); }

TEST(DistributedTrainingTest, MonitoredTrainingSessionOnAWorkerSavesTheCheckpoint) {
  LocalCluster local = CreateLocalCluster(1, 1);
  LinearModel model(local.cluster, 0);
  auto as_default = model.graph.AsDefault();
  const std::string dir = testing::MakeTempDir("distributed_mts");
  float w = 0, b = 0;
  {
    train::MonitoredTrainingSessionOptions options;
    options.master = local.workers[0]->target();
    options.is_chief = true;
    options.checkpoint_dir = dir;
    options.hooks = {std::make_shared<train::StopAtStepHook>(train::LastStep{25})};
    options.graph = &model.graph;
    auto sess = train::MonitoredTrainingSession(options);
    while (!sess->ShouldStop()) sess->Run(model.Batch(), {}, {model.train_op});
    sess->Close();
  }
  // The trained values outlive the monitored session on the ps.
  std::vector<Tensor> out =
      NewSession(model.graph, {.target = local.workers[0]->target()})->Run({}, {model.w, model.b}, {});
  w = out[0].scalar<float>();
  b = out[1].scalar<float>();
  std::optional<std::string> latest = train::LatestCheckpoint(dir);
  ASSERT_TRUE(latest.has_value());
  io::CheckpointReader reader(*latest);
  EXPECT_EQ(reader.GetTensor("global_step").scalar<int64_t>(), 25);
  EXPECT_EQ(reader.GetTensor("w").scalar<float>(), w);
  EXPECT_EQ(reader.GetTensor("b").scalar<float>(), b);
  EXPECT_GT(w, 1.0f);
}

class PsRestartTest : public ::testing::TestWithParam<bool> {};

// Synchronous checkpoints, then asynchronous ones (written from a snapshot of the ps's values).
TEST_P(PsRestartTest, MonitoredTrainingSessionRecoversFromAPsRestart) {
  const bool async = GetParam();
  LocalCluster local = CreateLocalCluster(1, 1);
  LinearModel model(local.cluster, 0);
  auto as_default = model.graph.AsDefault();
  const std::string dir = testing::MakeTempDir("distributed_recovery");
  train::MonitoredTrainingSessionOptions options;
  options.master = local.workers[0]->target();
  options.checkpoint_dir = dir;
  options.save_checkpoint_steps = 5;
  options.async_checkpoint = async;
  options.hooks = {std::make_shared<train::StopAtStepHook>(train::LastStep{30})};
  options.graph = &model.graph;
  auto sess = train::MonitoredTrainingSession(options);
  for (int i = 0; i < 12; ++i) sess->Run(model.Batch(), {}, {model.train_op});
  // The ps loses every variable; the next run fails with Aborted or Unavailable, and the
  // monitored session makes a new session, which restores the step-10 checkpoint on the ps.
  local.ps[0].reset();
  local.ps[0] = std::make_unique<Server>(ServerOptions{.cluster = local.cluster, .job_name = "ps"});
  int runs = 0;
  while (!sess->ShouldStop()) {
    sess->Run(model.Batch(), {}, {model.train_op});
    ASSERT_LT(++runs, 100);
  }
  sess->Close();
  if (async) {
    // Steps 10 -> 30, or 5 -> 30 if the step-10 checkpoint was still being written.
    EXPECT_TRUE(runs == 20 || runs == 25) << runs;
  } else {
    EXPECT_EQ(runs, 20);  // steps 10 -> 30 after the restore
  }
  io::CheckpointReader reader(*train::LatestCheckpoint(dir));
  EXPECT_EQ(reader.GetTensor("global_step").scalar<int64_t>(), 30);
  EXPECT_NEAR(reader.GetTensor("w").scalar<float>(), 3.0f, 0.5f);
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, PsRestartTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Async" : "Sync";
                         });

}  // namespace
}  // namespace flowtrain::distributed
