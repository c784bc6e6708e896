// Issue #20's SavedModel targets, measured in one run:
//  - saved_model_run_cnn: `flowtrain saved-model run` of the example's CNN (examples/
//    fashion_mnist_model.h) on the 10,000 Fashion-MNIST test images, end to end (process start
//    to the output .npy written), against TF's `saved_model_cli run` on the same SavedModel and
//    input file. TF is tried in each of its configurations (oneDNN on/off, glibc or jemalloc)
//    and the fastest is the peer; flowtrain runs with its defaults. Target: >= 2x.
//  - saved_model_load_400mb: saved_model::Load of a SavedModel holding 400 MB of variables
//    against restoring the same variables from a checkpoint with a Saver into a session of the
//    same graph. Target: load within 1.2x of the restore.
// Each figure is the median of 3 runs after a warm-up (the files are in the page cache).
//
//   build/bench/saved_model_bench    # RESULT lines; the TF peer needs FLOWTRAIN_TF_PYTHON
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "../examples/fashion_mnist_model.h"
#include "flowtrain/flowtrain.h"
#include "flowtrain/io/npy_file.h"
#include "flowtrain/saved_model/builder.h"
#include "flowtrain/saved_model/loader.h"
#include "flowtrain/saved_model/signature_def_utils.h"
#include "flowtrain/saved_model/tag_constants.h"
#include "peer_bench_util.h"

namespace ft = flowtrain;

namespace {

double Seconds(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double MedianOf3(const std::function<void()>& fn) {
  fn();  // warm-up
  std::vector<double> s;
  for (int i = 0; i < 3; ++i) s.push_back(Seconds(fn));
  return bench::Median(s);
}

void Result(const std::string& workload, const std::string& system, const std::string& metric, double value) {
  std::printf("RESULT %s %s %s %.4g\n", workload.c_str(), system.c_str(), metric.c_str(), value);
  std::fflush(stdout);
}

// The CNN with freshly initialised weights, exported with a serving_default signature
// images [?, 28, 28, 1] -> probabilities [?, 10].
void ExportCnn(const std::string& dir) {
  ft::Graph g;
  auto as_default = g.AsDefault();
  ft::Output images = ft::ops::Placeholder(ft::DT_FLOAT, ft::PartialTensorShape({-1, 28, 28, 1}), "images");
  ft::Output probabilities = ft::ops::Softmax(fashion_mnist::Model(images));
  ft::Session sess(g);
  sess.Run({}, {}, {ft::ops::GlobalVariablesInitializer()});
  ft::saved_model::Builder builder(dir);
  builder.AddMetaGraphAndVariables(
      sess, {ft::saved_model::kServing},
      {{"serving_default",
        ft::saved_model::PredictSignatureDef({{"images", images}}, {{"probabilities", probabilities}})}});
  builder.Save();
}

void BenchRunCnn(const std::string& scratch) {
  const std::string model = scratch + "/cnn";
  ExportCnn(model);
  ft::Tensor images;
  if (std::filesystem::exists(fashion_mnist::kDefaultDataDir)) {
    images = fashion_mnist::Load(fashion_mnist::kDefaultDataDir, "t10k").first;
  } else {
    images = ft::Tensor(ft::DT_FLOAT, ft::TensorShape({10000, 28, 28, 1}));
    for (int64_t i = 0; i < images.NumElements(); ++i)
      images.flat<float>()[i] = static_cast<float>(i % 255) / 255;
  }
  const std::string input = scratch + "/images.npy";
  ft::io::WriteNpyFile(input, images);
  auto run = [&](const std::string& command) {
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "saved_model_bench: failed: %s\n", command.c_str());
      std::exit(1);
    }
  };
  const std::string args = " --dir " + bench::ShellQuote(model) +
                           " --tag_set serve --signature_def serving_default --inputs " +
                           bench::ShellQuote("images=" + input) + " --overwrite --outdir ";
  const double ours = MedianOf3([&] {
    run(std::string(FLOWTRAIN_BENCH_CLI) + " saved-model run" + args +
        bench::ShellQuote(scratch + "/ft_out") + " >/dev/null");
  });
  Result("saved_model_run_cnn", "flowtrain", "seconds", ours);
  Result("saved_model_run_cnn", "flowtrain", "images_per_s", 10000 / ours);
#ifdef FLOWTRAIN_SAVED_MODEL_BENCH_TF_PYTHON
  const std::string cli =
      std::filesystem::path(FLOWTRAIN_SAVED_MODEL_BENCH_TF_PYTHON).parent_path().string() +
      "/saved_model_cli";
  double best = 0;
  std::string best_label;
  for (const bench::PeerEnv& env : bench::TensorFlowEnvs()) {
    const double s = MedianOf3([&] {
      run(env.env + "TF_CPP_MIN_LOG_LEVEL=3 " + cli + " run" + args + bench::ShellQuote(scratch + "/tf_out") +
          " >/dev/null 2>&1");
    });
    std::fprintf(stderr, "saved_model_cli run (%s): %.3f s\n", env.label.c_str(), s);
    if (best == 0 || s < best) {
      best = s;
      best_label = env.label;
    }
  }
  std::fprintf(stderr, "TF's fastest configuration: %s\n", best_label.c_str());
  Result("saved_model_run_cnn", "tensorflow", "seconds", best);
  Result("saved_model_run_cnn", "flowtrain_vs_tensorflow", "speedup", best / ours);
  // The outputs agree (the same model and input in both systems).
  const ft::Tensor a = ft::io::ReadNpyFile(scratch + "/ft_out/probabilities.npy");
  const ft::Tensor b = ft::io::ReadNpyFile(scratch + "/tf_out/probabilities.npy");
  double max_diff = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i)
    max_diff = std::max(max_diff, static_cast<double>(std::abs(a.flat<float>()[i] - b.flat<float>()[i])));
  std::fprintf(stderr, "largest difference of the probabilities: %g\n", max_diff);
#else
  std::fprintf(stderr, "saved_model_bench: built without FLOWTRAIN_TF_PYTHON: no TensorFlow peer\n");
#endif
}

// Four variables of 100 MB each, a Saver and a SavedModel of them.
void BenchLoad400Mb(const std::string& scratch) {
  const std::string model = scratch + "/big", checkpoint = scratch + "/ckpt/model";
  auto build = [](ft::Graph& g) {
    auto as_default = g.AsDefault();
    for (int i = 0; i < 4; ++i) {
      ft::Variable(
          ft::ops::RandomUniform(ft::ops::Const(ft::Tensor::FromVector<int64_t>({25'000'000})), ft::DT_FLOAT),
          {.name = "w" + std::to_string(i)});
    }
  };
  {
    ft::Graph g;
    build(g);
    auto as_default = g.AsDefault();
    ft::train::Saver saver;
    ft::Session sess(g);
    sess.Run({}, {}, {ft::ops::GlobalVariablesInitializer()});
    std::filesystem::create_directories(scratch + "/ckpt");
    saver.Save(sess, checkpoint);
    ft::saved_model::Builder builder(model);
    builder.AddMetaGraphAndVariables(sess, {ft::saved_model::kServing}, {});
    builder.Save();
  }
  const double load = MedianOf3([&] { ft::saved_model::Load({}, {ft::saved_model::kServing}, model); });
  ft::Graph g;
  build(g);
  auto as_default = g.AsDefault();
  ft::train::Saver saver;
  const double restore = MedianOf3([&] {
    ft::Session sess(g);
    saver.Restore(sess, checkpoint);
  });
  Result("saved_model_load_400mb", "flowtrain_load", "seconds", load);
  Result("saved_model_load_400mb", "flowtrain_checkpoint_restore", "seconds", restore);
  Result("saved_model_load_400mb", "load_vs_restore", "ratio", load / restore);
}

}  // namespace

int main() {
  const std::string scratch =
      bench::MakeScratchDir(std::filesystem::temp_directory_path(), "saved_model_bench");
  if (scratch.empty()) return 1;
  BenchRunCnn(scratch);
  BenchLoad400Mb(scratch);
  std::filesystem::remove_all(scratch);
  return 0;
}
