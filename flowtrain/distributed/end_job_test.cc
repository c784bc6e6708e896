// Ending a job: the chief's MonitoredTrainingSession tells the cluster when it finishes, a
// worker still training stops cleanly, the ps's Join() returns; a worker that finishes early
// or a chief that fails ends nothing.
#include "flowtrain/distributed/end_job.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gmock/gmock.h>
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
#include "flowtrain/train/monitored_training_session.h"
#include "tests/test_util.h"

namespace flowtrain::distributed {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// w -> 3 by gradient descent, the variables on the ps; as worker `worker` builds it.
struct Model {
  Model(const ClusterSpec& cluster, int worker) {
    auto as_default = graph.AsDefault();
    auto scope = graph.Device(train::ReplicaDeviceSetter(
        {.cluster = &cluster, .worker_device = "/job:worker/task:" + std::to_string(worker)}));
    global_step = train::GetOrCreateGlobalStep();
    w = Variable(Tensor::Scalar<float>(0), {.name = "w"});
    train_op = train::GradientDescentOptimizer(0.01).Minimize(ops::Square(ops::Sub(w, ops::Const(3.0f))),
                                                              global_step);
  }
  train::MonitoredTrainingSessionOptions Options(const Server& server, bool is_chief) {
    train::MonitoredTrainingSessionOptions options;
    options.master = server.target();
    options.is_chief = is_chief;
    options.graph = &graph;
    options.end_job_at_close = true;
    options.end_job_grace_period = milliseconds(300);
    return options;
  }

  Graph graph;
  Variable global_step, w;
  Operation train_op;
};

TEST(EndJobTest, ChiefFinishingEndsTheJobAndStopsAWorkerStillTraining) {
  LocalCluster local = CreateLocalCluster(2, 1);
  Model chief_model(local.cluster, 0), worker_model(local.cluster, 1);
  const std::string dir = testing::MakeTempDir("end_job");
  train::MonitoredTrainingSessionOptions chief_options = chief_model.Options(*local.workers[0], true);
  chief_options.checkpoint_dir = dir;
  chief_options.hooks = {std::make_shared<train::StopAtStepHook>(train::LastStep{300})};
  auto chief = train::MonitoredTrainingSession(chief_options);

  // The other worker trains with no stop condition of its own: only the job's end stops it.
  std::atomic<int> worker_runs{0};
  std::atomic<bool> worker_done{false};
  std::string worker_error;  // written before worker_done
  std::thread worker([&] {
    try {
      auto sess = train::MonitoredTrainingSession(worker_model.Options(*local.workers[1], false));
      while (!sess->ShouldStop()) {
        sess->Run({}, {}, {worker_model.train_op});
        ++worker_runs;
      }
      sess->Close();
    } catch (const std::exception& e) {
      worker_error = e.what();
    }
    worker_done = true;
  });
  // The chief finishes only once the worker trains (it would otherwise be refused its session).
  for (int i = 0; i < 6000 && worker_runs == 0 && !worker_done; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  while (!chief->ShouldStop()) chief->Run({}, {}, {chief_model.train_op});
  EXPECT_FALSE(local.ps[0]->job_end_reason().has_value());
  chief->Close();
  const Clock::time_point closed = Clock::now();

  worker.join();
  EXPECT_EQ(worker_error, "");
  EXPECT_GT(worker_runs, 0);
  local.ps[0]->Join();  // returns once the grace period passed
  const auto waited = Clock::now() - closed;
  EXPECT_LT(waited, std::chrono::seconds(10));
  ASSERT_TRUE(local.ps[0]->job_end_reason().has_value());
  EXPECT_THAT(*local.ps[0]->job_end_reason(), HasSubstr("its chief finished training"));
  EXPECT_TRUE(local.workers[1]->job_end_reason().has_value());

  // The final checkpoint was saved before the end, from the ps's values.
  std::optional<std::string> latest = train::LatestCheckpoint(dir);
  ASSERT_TRUE(latest.has_value());
  EXPECT_GE(io::CheckpointReader(*latest).GetTensor("global_step").scalar<int64_t>(), 300);

  // The ps answers, refusing new steps with the reason.
  try {
    NewSession(worker_model.graph, {.target = local.workers[1]->target()})->Run({}, {worker_model.w}, {});
    ADD_FAILURE() << "a step ran after the job ended";
  } catch (const OutOfRangeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("The job ended (its chief finished training)"));
  }
}

TEST(EndJobTest, AWorkerFinishingEarlyOrAChiefFailingEndsNothing) {
  LocalCluster local = CreateLocalCluster(2, 1);
  Model chief_model(local.cluster, 0), worker_model(local.cluster, 1);
  train::MonitoredTrainingSessionOptions chief_options = chief_model.Options(*local.workers[0], true);
  chief_options.hooks = {std::make_shared<train::StopAtStepHook>(train::LastStep{60})};
  {
    auto chief = train::MonitoredTrainingSession(chief_options);
    chief->Run({}, {}, {chief_model.train_op});
    {
      auto early = train::MonitoredTrainingSession(worker_model.Options(*local.workers[1], false));
      for (int i = 0; i < 5; ++i) early->Run({}, {}, {worker_model.train_op});
      early->Close();  // it finishes early: the chief trains on
    }
    // The chief leaves before its last step (as when its loop throws): nothing ends.
    chief->Close();
  }
  EXPECT_FALSE(local.ps[0]->job_end_reason().has_value());

  auto chief = train::MonitoredTrainingSession(chief_options);
  while (!chief->ShouldStop()) chief->Run({}, {}, {chief_model.train_op});
  chief->Close();
  EXPECT_TRUE(local.ps[0]->job_end_reason().has_value());
}

TEST(EndJobTest, EndJobTellsEveryTaskAndReportsThoseItCannotReach) {
  LocalCluster local = CreateLocalCluster(1, 2);
  local.ps[1]->Stop();
  const std::vector<std::string> missed =
      EndJob(local.workers[0]->target(), "testing", {.grace_period = milliseconds(0)});
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_THAT(missed[0], HasSubstr("/job:ps/replica:0/task:1"));
  EXPECT_EQ(local.ps[0]->job_end_reason(), "testing");
  EXPECT_EQ(local.workers[0]->job_end_reason(), "testing");
  local.ps[0]->Join();  // grace 0: at once
  // Told twice: the first reason stays.
  EXPECT_TRUE(EndJob(local.workers[0]->target(), "again").size() == 1);
  EXPECT_EQ(local.ps[0]->job_end_reason(), "testing");
  testing::ExpectInvalidArgument([&] { EndJob("localhost:1", "x"); }, {"is not grpc://host:port"});
  testing::ExpectInvalidArgument(
      [&] { EndJob(local.workers[0]->target(), "x", {.grace_period = milliseconds(-1)}); }, {"grace period"});
}

}  // namespace
}  // namespace flowtrain::distributed
