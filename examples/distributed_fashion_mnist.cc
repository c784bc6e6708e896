// Distributed training as TF1 does it (between-graph replication): parameter servers hold the
// variables, and every worker runs this program with the same cluster and its own --task. Each
// worker builds the whole model with ReplicaDeviceSetter, which puts the variables on the ps
// tasks, starts a server for its own task and trains through MonitoredTrainingSession on it.
// The chief (task 0) initialises or restores the variables and writes checkpoints and
// summaries; the other workers wait until the model is ready, then all advance one global step.
// The ps tasks are `flowtrain server`:
//
//   cluster="ps=localhost:2222;worker=localhost:2223,localhost:2224"
//   flowtrain server --cluster "$cluster" --job ps --task 0 &
//   distributed_fashion_mnist --cluster "$cluster" --task 1 &
//   distributed_fashion_mnist --cluster "$cluster" --task 0 --model-dir runs/distributed --end-job
//
// With --end-job the chief, once it has trained and evaluated, tells every task that the job
// ended (distributed::EndJob): the ps tasks' `flowtrain server` exits by itself.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>

#include "fashion_mnist_model.h"
#include "report_errors.h"

namespace ft = flowtrain;
namespace ops = ft::ops;
using ft::Output;

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"One worker of a distributed Fashion-MNIST training (run one per worker task)"};
  std::string cluster_spec, model_dir = "runs/distributed", data_dir = fashion_mnist::kDefaultDataDir;
  int task = 0;
  int64_t steps = 400, batch_size = 64;
  bool end_job = false;
  app.add_option("--cluster", cluster_spec, "e.g. \"ps=localhost:2222;worker=localhost:2223,localhost:2224\"")
      ->required();
  app.add_option("--task", task, "This worker's index in the worker job; 0 is the chief");
  app.add_option("--steps", steps, "Global steps to train to, over all workers");
  app.add_option("--batch-size", batch_size, "Examples per step");
  app.add_option("--model-dir", model_dir, "The chief's checkpoints and TensorBoard logs");
  app.add_option("--data-dir", data_dir, "Where the Fashion-MNIST .gz files are");
  app.add_flag("--end-job", end_job,
               "The chief, when done: tell every task that the job ended (ps tasks exit)");
  CLI11_PARSE(app, argc, argv);

  const auto cluster = ft::distributed::ClusterSpec::Parse(cluster_spec);
  const int num_workers = cluster.num_tasks("worker");
  const bool is_chief = task == 0;
  ft::distributed::Server server({.cluster = cluster, .job_name = "worker", .task_index = task});

  ft::Graph g;
  auto as_default = g.AsDefault();
  g.set_seed(42);
  Output images, labels, loss, correct;
  ft::Variable global_step;
  ft::Operation train_op;
  {
    // Variables go to the ps tasks (round robin), everything else stays on this worker.
    const std::string worker_device = "/job:worker/task:" + std::to_string(task);
    auto placement =
        g.Device(ft::train::ReplicaDeviceSetter({.cluster = &cluster, .worker_device = worker_device}));
    images = ops::Placeholder(ft::DT_FLOAT, {-1, 28, 28, 1}, "images");
    labels = ops::Placeholder(ft::DT_INT64, {-1}, "labels");
    Output logits = fashion_mnist::Model(images);
    loss = ops::ReduceMean(ops::SparseSoftmaxCrossEntropyWithLogits(labels, logits));
    correct = fashion_mnist::CountCorrect(logits, labels);
    ft::summary::Scalar("loss", loss);
    global_step = ft::train::GetOrCreateGlobalStep();
    train_op = ft::train::AdamOptimizer(1e-3).Minimize(loss, global_step);
  }

  // Each worker trains on its own shard of the training set, in its own order.
  auto [train_images, train_labels] = fashion_mnist::Load(data_dir, "train");
  std::vector<int64_t> shard;
  for (int64_t i = task; i < train_images.dim_size(0); i += num_workers) shard.push_back(i);
  std::mt19937_64 rng(1234 + task);
  std::shuffle(shard.begin(), shard.end(), rng);
  size_t cursor = 0;
  auto next_batch = [&] {
    ft::Tensor x(ft::DT_FLOAT, ft::TensorShape({batch_size, 28, 28, 1}));
    ft::Tensor y(ft::DT_INT64, ft::TensorShape({batch_size}));
    for (int64_t b = 0; b < batch_size; ++b, ++cursor) {
      if (cursor == shard.size()) cursor = 0;
      std::memcpy(x.data<float>() + b * 784, train_images.data<float>() + shard[cursor] * 784,
                  784 * sizeof(float));
      y.flat<int64_t>()[b] = train_labels.flat<int64_t>()[shard[cursor]];
    }
    return ft::FeedList{{images, x}, {labels, y}};
  };

  ft::train::MonitoredTrainingSessionOptions opts;
  opts.master = server.target();
  opts.is_chief = is_chief;
  opts.checkpoint_dir = model_dir;
  opts.save_checkpoint_steps = int64_t{200};
  opts.hooks = {std::make_shared<ft::train::StopAtStepHook>(ft::train::LastStep{steps})};
  int64_t local_steps = 0;
  {
    auto sess = ft::train::MonitoredTrainingSession(opts);
    while (!sess->ShouldStop()) {
      sess->Run(next_batch(), {}, {train_op});
      ++local_steps;
    }
    sess->Close();  // the chief's final checkpoint; throws if it cannot be saved
  }
  std::printf("Worker %d ran %lld of the %lld global steps\n", task, static_cast<long long>(local_steps),
              static_cast<long long>(steps));

  if (is_chief) {
    // The trained variables still live on the ps tasks: a plain session on this worker's
    // server reads them there.
    auto [test_images, test_labels] = fashion_mnist::Load(data_dir, "t10k");
    auto sess = ft::NewSession(g, {.target = server.target()});
    double right = 0;
    const int64_t n = test_images.dim_size(0);
    for (int64_t i = 0; i < n; i += 1000) {
      const int64_t end = std::min(n, i + 1000);
      right += sess->Run({{images, test_images.Slice(i, end)}, {labels, test_labels.Slice(i, end)}},
                         {correct}, {})[0]
                   .scalar<float>();
    }
    const int64_t step = sess->Run({}, {global_step.value()}, {})[0].scalar<int64_t>();
    std::printf("Test accuracy at global step %lld: %.2f%%\n", static_cast<long long>(step),
                100.0 * right / n);
    if (end_job) {
      // The evaluation above read the ps's variables: only now may the ps go.
      // The workers stopped at the last step already: a short grace period is enough.
      for (const std::string& missed :
           ft::distributed::EndJob(server.target(), "the chief trained and evaluated",
                                   {.grace_period = std::chrono::seconds(2)})) {
        std::printf("Could not tell %s\n", missed.c_str());
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::ReportErrors(Main, argc, argv); }
