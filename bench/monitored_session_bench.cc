// What MonitoredTrainingSession costs per training step, against a bare Session::Run of the
// same train op. The workload: an MLP 784-256-256-10 (ReLU), softmax cross-entropy, plain SGD
// (learning rate 0.1), batches of 64 float32 examples fed from one fixed in-memory batch.
//
//   bare          Session::Run({{x, X}, {y, Y}}, {}, {train_op}) on the session a monitored
//                 configuration wraps (each configuration is compared with its own)
//   default       MonitoredTrainingSession with its default hooks: checkpoints every 600 s,
//                 summaries (a loss scalar) every 100 steps, the step counter every 100 steps,
//                 into a temporary checkpoint_dir; the loop calls ShouldStop() every step
//   every_run     the same with HookScheduling::kEveryRun (TF's: every hook around every run)
//   all_hooks     every hook of flowtrain/train attached but not due (periods far beyond the
//                 run; StopAtStepHook's last step too): StopAtStep, CheckpointSaver,
//                 StepCounter, SummarySaver, LoggingTensor, Nan (checks the loss every run, by
//                 design), GlobalStepWaiter(0), FinalOps, FeedFn (feeds the batch instead of
//                 the caller, every run by design), Profiler, ProgressBar, EarlyStopping
//
// The configurations take turns of a few steps each (the order rotates, and bare and monitored
// alternate going first), so a machine that other work shares slows them alike; each figure
// is the median over turns of the per-turn ratio to the bare session of the same turn. Overheads are also
// given in microseconds per step, and measured a second time on a trivial step (the global step's increment
// alone), where the few microseconds they are stand out from the noise of a millisecond step.
//
// Prints:
//   RESULT mts_overhead bare_session steps_per_sec <v>
//   RESULT mts_overhead flowtrain default_hooks_steps_per_sec <v>
//   RESULT mts_overhead flowtrain default_hooks_overhead_pct <v>          (target <= 2)
//   RESULT mts_overhead flowtrain default_hooks_overhead_us_per_step <v>
//   ... the same three for every_run_default_hooks_* and all_hooks_not_due_* (target <= 3)
//   RESULT mts_overhead flowtrain trivial_step_<config>_overhead_us_per_step <v>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "flowtrain/flowtrain.h"

namespace ft = flowtrain;
namespace train = flowtrain::train;
using ft::Output;

namespace {

constexpr int kBatch = 64;
constexpr int kTurns = 240;
constexpr int kStepsPerTurn = 5;
constexpr int kTrivialTurns = 60;
constexpr int kTrivialStepsPerTurn = 500;
constexpr int64_t kFar = int64_t{1} << 40;  // a period or step no run reaches

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void Report(const char* system, const std::string& metric, double value) {
  std::printf("RESULT mts_overhead %s %s %.6g\n", system, metric.c_str(), value);
  std::fflush(stdout);
}

// A temporary directory removed at exit.
struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/mts_bench_XXXXXX";
    path = ::mkdtemp(pattern);
  }
  ~TempDir() {
    ft::summary::FileWriterCache::Clear();  // the hooks' event writers, before their files go
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string Sub(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

// The W2 MLP with its train op, global step and loss summary, in its own graph.
struct Mlp {
  Mlp() {
    auto as_default = graph.AsDefault();
    graph.set_seed(1);
    x = ft::ops::Placeholder(ft::DT_FLOAT, {kBatch, 784}, "x");
    y = ft::ops::Placeholder(ft::DT_INT64, {kBatch}, "y");
    Output h = ft::layers::Dense(x, 256, ft::ops::Relu);
    h = ft::layers::Dense(h, 256, ft::ops::Relu);
    Output logits = ft::layers::Dense(h, 10);
    loss = ft::ops::ReduceMean(ft::ops::SparseSoftmaxCrossEntropyWithLogits(y, logits));
    ft::summary::Scalar("loss", loss);
    step = train::GetOrCreateGlobalStep();
    train_op = train::GradientDescentOptimizer(0.1).Minimize(loss, step);
    std::mt19937 rng(7);
    std::normal_distribution<float> pixel(0.0f, 1.0f);
    images = ft::Tensor(ft::DT_FLOAT, ft::TensorShape({kBatch, 784}));
    for (float& v : images.flat<float>()) v = pixel(rng);
    labels = ft::Tensor(ft::DT_INT64, ft::TensorShape({kBatch}));
    for (int64_t& v : labels.flat<int64_t>()) v = static_cast<int64_t>(rng() % 10);
  }
  ft::FeedList Feeds() const { return {{x, images}, {y, labels}}; }

  ft::Graph graph;
  Output x, y, loss;
  ft::Variable step;
  ft::Operation train_op;
  ft::Tensor images, labels;
};

// The global step and its increment: a step that costs next to nothing.
struct Trivial {
  Trivial() {
    auto as_default = graph.AsDefault();
    step = train::GetOrCreateGlobalStep();
    loss = ft::ops::Cast(step.value(), ft::DT_FLOAT);
    ft::summary::Scalar("loss", loss);
    train_op = step.AssignAdd(ft::ops::Const(int64_t{1})).op();
  }
  ft::FeedList Feeds() const { return {}; }

  ft::Graph graph;
  Output loss;
  ft::Variable step;
  ft::Operation train_op;
};

train::MonitoredTrainingSessionOptions DefaultOptions(ft::Graph& graph, const std::string& dir) {
  train::MonitoredTrainingSessionOptions options;
  options.graph = &graph;
  options.checkpoint_dir = dir;
  return options;
}

// Every hook of flowtrain/train, none due during the measurement. `feeds`, when not empty,
// go through a FeedFnHook (the caller then feeds nothing).
train::HookList AllHooksNotDue(Output loss, const ft::FeedList& feeds, const std::string& dir,
                               std::FILE* devnull) {
  train::HookList hooks = {
      std::make_shared<train::StopAtStepHook>(train::LastStep{kFar}),
      std::make_shared<train::LoggingTensorHook>(train::LoggingTensorHook::Tensors{{"loss", loss}},
                                                 train::LoggingTensorHook::Every{.every_n_steps = kFar}),
      std::make_shared<train::NanTensorHook>(loss),
      std::make_shared<train::GlobalStepWaiterHook>(0),
      std::make_shared<train::FinalOpsHook>(std::vector<Output>{loss}, feeds),
      std::make_shared<train::ProfilerHook>(
          train::ProfilerHook::Options{.every_n_steps = kFar, .output_dir = dir}),
      std::make_shared<train::ProgressBarHook>(
          train::ProgressBarHook::Options{.last_step = kFar,
                                          .tensors = {{"loss", loss}},
                                          .plain_interval = std::chrono::hours(1),
                                          .stream = devnull,
                                          .force_tty = false}),
      std::make_shared<train::EarlyStoppingHook>(train::EarlyStoppingHook::Options{
          .metric = [](ft::SessionInterface&) { return 0.0; }, .every_n_steps = kFar})};
  if (!feeds.empty()) {
    hooks.push_back(std::make_shared<train::FeedFnHook>([feeds] { return feeds; }));
  }
  return hooks;
}

// One monitored configuration and its reference: bare Session::Run on the very session the
// monitored one wraps, so both use the same variables, buffers and thread pools and differ only
// in the monitored layers (separate sessions differ by a few percent on their own).
struct Pair {
  std::string name;
  std::unique_ptr<train::MonitoredSession> sess;
  ft::SessionInterface* raw = nullptr;
  bool caller_feeds = true;                       // false: a FeedFnHook feeds the batch
  std::vector<double> bare_secs, monitored_secs;  // per turn
};

// Runs each pair's bare and monitored steps `turns` times, `steps` at a time. The pairs take
// turns in an order that rotates; within a pair, bare and monitored alternate going first,
// since the second runs with the session's weights already in cache.
template <typename Model>
void Measure(Model& m, std::vector<Pair>& pairs, int turns, int steps) {
  const ft::FeedList feeds = m.Feeds();
  const ft::FeedList none;
  auto bare = [&](Pair& p, int n) {
    for (int i = 0; i < n; ++i) p.raw->Run(feeds, {}, {m.train_op});
  };
  auto monitored = [&](Pair& p, int n) {
    for (int i = 0; i < n && !p.sess->ShouldStop(); ++i) {
      p.sess->Run(p.caller_feeds ? feeds : none, {}, {m.train_op});
    }
  };
  auto timed = [](auto&& run, std::vector<double>* secs) {
    const auto start = std::chrono::steady_clock::now();
    run();
    secs->push_back(Seconds(std::chrono::steady_clock::now() - start));
  };
  for (Pair& p : pairs) {  // warm up plans, buffers and first-run hooks
    bare(p, 20);
    monitored(p, 20);
  }
  for (int r = 0; r < turns; ++r) {
    for (size_t k = 0; k < pairs.size(); ++k) {
      Pair& p = pairs[(k + r) % pairs.size()];
      const bool bare_first = (r / pairs.size()) % 2 == 0;
      for (int half = 0; half < 2; ++half) {
        if ((half == 0) == bare_first) {
          timed([&] { bare(p, steps); }, &p.bare_secs);
        } else {
          timed([&] { monitored(p, steps); }, &p.monitored_secs);
        }
      }
    }
  }
}

// The three monitored configurations on one model, measured against their bare sessions.
template <typename Model>
std::vector<Pair> RunWorkload(Model& m, const TempDir& tmp, const std::string& tag, int turns, int steps) {
  std::FILE* devnull = std::fopen("/dev/null", "w");
  std::vector<Pair> pairs(3);
  pairs[0].name = "default_hooks";
  pairs[0].sess = train::MonitoredTrainingSession(DefaultOptions(m.graph, tmp.Sub(tag + "_default")));
  auto every_run = DefaultOptions(m.graph, tmp.Sub(tag + "_every_run"));
  every_run.hook_scheduling = train::HookScheduling::kEveryRun;
  pairs[1].name = "every_run_default_hooks";
  pairs[1].sess = train::MonitoredTrainingSession(every_run);
  auto all = DefaultOptions(m.graph, tmp.Sub(tag + "_all"));
  all.save_summaries_steps = kFar;
  all.log_step_count_steps = kFar;
  all.hooks = AllHooksNotDue(m.loss, m.Feeds(), tmp.Sub(tag + "_all"), devnull);
  pairs[2].name = "all_hooks_not_due";
  pairs[2].sess = train::MonitoredTrainingSession(all);
  pairs[2].caller_feeds = m.Feeds().empty();
  for (Pair& p : pairs) {
    p.raw = p.sess->RunStepFn([](train::StepContext& ctx) { return &ctx.session(); });
  }
  Measure(m, pairs, turns, steps);
  for (Pair& p : pairs) p.sess->Close();
  std::fclose(devnull);
  return pairs;
}

// Median over turns of the per-turn overhead, in percent and in microseconds per step.
std::pair<double, double> Overhead(const Pair& p, int steps) {
  std::vector<double> pct, micros;
  for (size_t r = 0; r < p.bare_secs.size(); ++r) {
    pct.push_back(100.0 * (p.monitored_secs[r] / p.bare_secs[r] - 1.0));
    micros.push_back(1e6 * (p.monitored_secs[r] - p.bare_secs[r]) / steps);
  }
  return {Median(pct), Median(micros)};
}

double StepsPerSec(const std::vector<double>& secs, int steps) {
  std::vector<double> rates;
  for (double s : secs) rates.push_back(steps / s);
  return Median(rates);
}

}  // namespace

int main() {
  ft::SetLogSink([](ft::LogSeverity severity, const std::string& line) {
    // With two inter-op threads the hooks' stale step reads sometimes follow the update, so
    // TF's every-run StepCounterHook warns that the step "has not been increased"; expected.
    if (severity < ft::LogSeverity::kWarning || line.find("has not been increased") != std::string::npos) {
      return;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  });
  TempDir tmp;
  {
    Mlp m;
    const std::vector<Pair> pairs = RunWorkload(m, tmp, "mlp", kTurns, kStepsPerTurn);
    std::vector<double> bare;
    for (const Pair& p : pairs) bare.insert(bare.end(), p.bare_secs.begin(), p.bare_secs.end());
    Report("bare_session", "steps_per_sec", StepsPerSec(bare, kStepsPerTurn));
    for (const Pair& p : pairs) {
      const auto [pct, micros] = Overhead(p, kStepsPerTurn);
      Report("flowtrain", p.name + "_steps_per_sec", StepsPerSec(p.monitored_secs, kStepsPerTurn));
      Report("flowtrain", p.name + "_overhead_pct", pct);
      Report("flowtrain", p.name + "_overhead_us_per_step", micros);
    }
  }
  {
    Trivial m;
    const std::vector<Pair> pairs = RunWorkload(m, tmp, "trivial", kTrivialTurns, kTrivialStepsPerTurn);
    std::vector<double> bare;
    for (const Pair& p : pairs) bare.insert(bare.end(), p.bare_secs.begin(), p.bare_secs.end());
    Report("bare_session", "trivial_step_us", 1e6 / StepsPerSec(bare, kTrivialStepsPerTurn));
    for (const Pair& p : pairs) {
      Report("flowtrain", "trivial_step_" + p.name + "_overhead_us_per_step",
             Overhead(p, kTrivialStepsPerTurn).second);
    }
  }
  return 0;
}
