// One worker of a small between-graph replicated training, for the cluster fault tests
// (cluster_faults_test.sh): y = 3x + 2 learned on the ps tasks' variables through
// MonitoredTrainingSession, a short pause per step so that faults land mid-training, and one
// line per step on stdout, "step G", with the global step G after it (the script checks that
// G never goes back except to a checkpoint's step). The chief saves a checkpoint every
// --save-steps global steps; the last line is "done G".
//
//   cluster_trainer --cluster "ps=10.0.0.2:2222;worker=10.0.0.3:2222" --task 0
//                   --steps 300 --model-dir /tmp/run
#include <chrono>
#include <cstdio>
#include <thread>

#include <CLI/CLI.hpp>

#include "flowtrain/flowtrain.h"

namespace ft = flowtrain;
namespace ops = ft::ops;

int main(int argc, char** argv) {
  CLI::App app{"A worker of the cluster fault tests"};
  std::string cluster_spec, model_dir;
  int task = 0;
  int64_t steps = 300, save_steps = 50;
  int step_pause_ms = 20;
  app.add_option("--cluster", cluster_spec)->required();
  app.add_option("--task", task);
  app.add_option("--steps", steps);
  app.add_option("--save-steps", save_steps);
  app.add_option("--step-pause-ms", step_pause_ms);
  app.add_option("--model-dir", model_dir);
  CLI11_PARSE(app, argc, argv);
  try {
    const auto cluster = ft::distributed::ClusterSpec::Parse(cluster_spec);
    ft::distributed::Server server({.cluster = cluster, .job_name = "worker", .task_index = task});
    ft::Graph g;
    auto as_default = g.AsDefault();
    ft::Variable global_step;
    ft::Operation train_op;
    ft::Output x, y, step_after;
    {
      auto placement = g.Device(ft::train::ReplicaDeviceSetter(
          {.cluster = &cluster, .worker_device = "/job:worker/task:" + std::to_string(task)}));
      global_step = ft::train::GetOrCreateGlobalStep();
      ft::Variable w(ft::Tensor::Scalar<float>(0), {.name = "w"});
      ft::Variable b(ft::Tensor::Scalar<float>(0), {.name = "b"});
      x = ops::Placeholder(ft::DT_FLOAT, {-1}, "x");
      y = ops::Placeholder(ft::DT_FLOAT, {-1}, "y");
      ft::Output loss = ops::ReduceMean(ops::Square(ops::Sub(ops::Add(ops::Mul(w, x), b), y)));
      train_op = ft::train::GradientDescentOptimizer(0.05).Minimize(loss, global_step);
    }
    {
      // Read on the ps once this step's update is done (a read on the worker would take the
      // value the ps sent before the update).
      auto on_ps = g.Device(global_step.op().node()->requested_device());
      auto after_train = g.ControlDependencies({train_op});
      step_after = ops::Identity(global_step.ref(), "step_after");
    }
    const ft::FeedList batch = {{x, ft::Tensor::FromVector<float>({-1, 0, 1, 2}, ft::TensorShape({4}))},
                                {y, ft::Tensor::FromVector<float>({-1, 2, 5, 8}, ft::TensorShape({4}))}};
    ft::train::MonitoredTrainingSessionOptions options;
    options.master = server.target();
    options.is_chief = task == 0;
    options.checkpoint_dir = task == 0 ? model_dir : "";
    options.save_checkpoint_steps = save_steps;
    options.save_summaries_steps = std::nullopt;
    options.log_step_count_steps = std::nullopt;
    options.recovery.max_consecutive_failures = -1;  // the faults last seconds; outlast them
    options.recovery.max_backoff = std::chrono::milliseconds(1000);
    options.hooks = {std::make_shared<ft::train::StopAtStepHook>(ft::train::LastStep{steps})};
    auto sess = ft::train::MonitoredTrainingSession(options);
    int64_t last = 0;
    while (!sess->ShouldStop()) {
      std::vector<ft::Tensor> out = sess->Run(batch, {step_after}, {});
      if (!out.empty() && out[0].dtype() == ft::DT_INT64) {
        last = out[0].scalar<int64_t>();
        std::printf("step %lld\n", static_cast<long long>(last));
        std::fflush(stdout);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(step_pause_ms));
    }
    sess->Close();
    std::printf("done %lld\n", static_cast<long long>(last));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cluster_trainer: %s\n", e.what());
    return 1;
  }
}
