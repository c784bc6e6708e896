// One job, two systems (issue 16): a MonitoredTrainingSession job trains 100 steps in
// TensorFlow, continues from TF's model directory in flowtrain to step 200, then in TF again to
// step 300. The global step and the loss curve must continue across each hand-over, as if one
// system had trained 0 -> 300 (a TF reference job in another directory), and TensorBoard must
// show one run whose `loss` curve spans all three phases.
//
// The model, the data and the TF side are in handover/handover.py; flowtrain builds the same
// model here under the same variable names. TensorBoard's and TF's view of the result is
// checked by handover/check_handover.py. Two variants: Adam in an absolute model directory,
// Momentum in a relative one (the state file's paths are then relative to it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "flowtrain/flowtrain.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

// handover.py's constants.
constexpr int64_t kSteps = 300, kBatch = 32, kFeatures = 8, kHidden = 16;
constexpr double kLearningRate = 0.01;
constexpr double kMomentum = 0.9;
constexpr int64_t kSummarySteps = 10;
constexpr int64_t kCheckpointSteps = 30;
// flowtrain's phase runs on TF's weights with its own float32 kernels, which round
// differently from TF's (oneDNN); Adam carries the differences on. Measured on this model the
// losses stay within 2e-6 of the reference over all 300 steps.
constexpr double kRelativeTolerance = 1e-4;

// splitmix64 of (seed, index): a data set every platform writes with the same bits.
uint64_t Hash(uint64_t seed, uint64_t index) {
  uint64_t z = (seed << 32) | index;
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double Uniform(uint64_t seed, uint64_t index) {  // in [-1, 1)
  return static_cast<double>(Hash(seed, index) >> 11) * 0x1p-52 - 1.0;
}

// x [300, 32, 8] uniform in [-1, 1), y = sin(x . w) + small noise, [300, 32, 1]; batch s is
// what step s trains on.
struct DataSet {
  std::vector<float> x, y;
};

DataSet WriteDataSet(const std::string& dir) {
  DataSet data;
  data.x.resize(kSteps * kBatch * kFeatures);
  data.y.resize(kSteps * kBatch);
  for (size_t i = 0; i < data.x.size(); ++i) data.x[i] = static_cast<float>(Uniform(1, i));
  for (size_t row = 0; row < data.y.size(); ++row) {
    double dot = 0;
    for (int64_t j = 0; j < kFeatures; ++j) dot += data.x[row * kFeatures + j] * Uniform(2, j);
    data.y[row] = static_cast<float>(std::sin(dot) + 0.05 * Uniform(3, row));
  }
  auto write = [&](const std::string& name, const std::vector<float>& values) {
    std::ofstream out(dir + "/" + name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(float)));
    ASSERT_TRUE(out.good()) << name;
  };
  write("x.bin", data.x);
  write("y.bin", data.y);
  return data;
}

Tensor Batch(const std::vector<float>& values, int64_t step, int64_t width) {
  Tensor t(DT_FLOAT, TensorShape({kBatch, width}));
  std::copy_n(values.begin() + step * kBatch * width, kBatch * width, t.data<float>());
  return t;
}

using Losses = std::map<int64_t, double>;

Losses ReadLosses(const std::string& path) {
  Losses losses;
  std::ifstream in(path);
  int64_t step;
  double loss;
  while (in >> step >> loss) losses[step] = loss;
  return losses;
}

void WriteLosses(const std::string& path, const Losses& losses) {
  std::ofstream out(path);
  char line[64];
  for (const auto& [step, loss] : losses) {
    std::snprintf(line, sizeof line, "%lld %.9g\n", static_cast<long long>(step), loss);
    out << line;
  }
}

int64_t GlobalStepOfLatestCheckpoint(const std::string& dir) {
  std::optional<std::string> latest = train::LatestCheckpoint(dir);
  if (!latest) return -1;
  return io::CheckpointReader(*latest).GetTensor("global_step").scalar<int64_t>();
}

// Copies `<prefix>.*` into `dir` (each system re-saves the step it resumed from when its session
// starts, so the next phase overwrites the previous one's last checkpoint); returns the copy's
// prefix.
std::string CopyCheckpoint(const std::string& prefix, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path source(prefix);
  for (const auto& entry : std::filesystem::directory_iterator(source.parent_path())) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(source.filename().string() + ".")) {
      std::filesystem::copy_file(entry.path(), std::filesystem::path(dir) / name);
    }
  }
  return (std::filesystem::path(dir) / source.filename()).string();
}

// `dir`'s state file lists exactly the checkpoints of `steps` (-1: any step), in order, with
// absolute paths, the last one as the latest; and the checkpoint files in `dir` are exactly
// theirs (no system left another's deleted checkpoint behind).
void ExpectCheckpointsInState(const std::string& dir, const std::vector<int64_t>& steps) {
  SCOPED_TRACE(dir);
  const std::optional<tensorflow::CheckpointState> state = train::GetCheckpointState(dir);
  ASSERT_TRUE(state.has_value());
  const std::vector<std::string> paths(state->all_model_checkpoint_paths().begin(),
                                       state->all_model_checkpoint_paths().end());
  ASSERT_EQ(paths.size(), steps.size()) << ::testing::PrintToString(paths);
  const std::string prefix = dir + "/model.ckpt-";
  std::set<std::string> listed;
  for (size_t i = 0; i < paths.size(); ++i) {
    ASSERT_TRUE(paths[i].starts_with(prefix)) << paths[i];
    if (steps[i] >= 0) {
      EXPECT_EQ(paths[i], prefix + std::to_string(steps[i]));
    }
    listed.insert(std::filesystem::path(paths[i]).filename().string());
  }
  EXPECT_EQ(state->model_checkpoint_path(), paths.back());
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("model.ckpt-")) continue;
    for (const char* suffix : {".index", ".meta", ".data-00000-of-00001"}) {
      if (name.ends_with(suffix)) on_disk.insert(name.substr(0, name.size() - std::strlen(suffix)));
    }
    EXPECT_TRUE(name.ends_with(".index") || name.ends_with(".meta") || name.ends_with(".data-00000-of-00001"))
        << name;
  }
  EXPECT_EQ(on_disk, listed);
}

// The two ways the job is trained: Adam (slots <var>/Adam and <var>/Adam_1, beta1_power and
// beta2_power) in an absolute model directory, or Momentum (slots <var>/Momentum) in a
// relative one, where TF writes the state file's paths relative to the directory.
struct Variant {
  std::string optimizer;  // handover.py's --optimizer
  bool relative_model_dir;
  std::vector<std::string> expected_keys;  // some of the checkpoint's keys
  size_t key_count;                        // all of them
};

std::ostream& operator<<(std::ostream& os, const Variant& v) {
  return os << v.optimizer << (v.relative_model_dir ? ", relative model directory" : "");
}

const Variant kAdam{"adam",
                    false,
                    {"global_step", "beta1_power", "beta2_power", "dense/kernel/Adam", "dense_1/bias/Adam_1"},
                    15};
const Variant kMomentumInRelativeDir{
    "momentum", true, {"global_step", "dense/kernel/Momentum", "dense_1/bias/Momentum"}, 9};

// Both checkpoints hold the same variables with the same dtypes, shapes and bits: the model's
// 4 weights, their slots, the optimizer's other variables and global_step.
void ExpectSameCheckpoint(const Variant& variant, const std::string& a, const std::string& b) {
  SCOPED_TRACE(a + " vs " + b);
  io::CheckpointReader reader_a(a), reader_b(b);
  const auto shapes = reader_a.GetVariableToShapeMap();
  EXPECT_EQ(shapes.size(), variant.key_count);
  EXPECT_EQ(reader_b.GetVariableToShapeMap().size(), shapes.size());
  for (const std::string& name : variant.expected_keys) EXPECT_TRUE(shapes.contains(name)) << name;
  for (const auto& [name, shape] : shapes) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(reader_b.HasTensor(name));
    const Tensor ta = reader_a.GetTensor(name), tb = reader_b.GetTensor(name);
    ASSERT_EQ(ta.dtype(), tb.dtype());
    ASSERT_EQ(ta.shape(), tb.shape());
    EXPECT_EQ(std::memcmp(ta.raw_data(), tb.raw_data(), ta.TotalBytes()), 0);
  }
  EXPECT_EQ(reader_a.GetTensor("global_step").dtype(), DT_INT64);
}

// TF's side: handover.py trains in `model_dir` until `last_step`.
PythonRun RunTf(const Variant& variant, const std::string& data_dir, const std::string& model_dir,
                int64_t last_step, const std::string& losses) {
  return RunTfPython({TfScript("handover/handover.py"), "--optimizer", variant.optimizer, "--data", data_dir,
                      "--model-dir", model_dir, "--last-step", std::to_string(last_step), "--losses",
                      losses});
}

// flowtrain's side: handover.py's model, trained with MonitoredTrainingSession on `model_dir`
// to `last_step` with TF's defaults but for save_summaries_steps and save_checkpoint_steps, as
// TF's side.
Losses RunFlowtrain(const Variant& variant, const DataSet& data, const std::string& model_dir,
                    int64_t last_step) {
  Graph graph;
  Output x, y, loss;
  Variable global_step;
  Operation train_op;
  {
    auto as_default = graph.AsDefault();
    x = ops::Placeholder(DT_FLOAT, {kBatch, kFeatures}, "x");
    y = ops::Placeholder(DT_FLOAT, {kBatch, 1}, "y");
    // The initializers never run: the weights come from TF's checkpoint.
    Output h = layers::Dense(x, kHidden, layers::Activation(ops::Tanh));
    Output prediction = layers::Dense(h, 1);
    loss = ops::ReduceMean(ops::Square(ops::Sub(prediction, y)), {}, false, "mean_squared_error");
    summary::Scalar("loss", loss);
    global_step = train::GetOrCreateGlobalStep();
    if (variant.optimizer == "adam") {
      train_op = train::AdamOptimizer(kLearningRate).Minimize(loss, global_step);
    } else {
      train_op = train::MomentumOptimizer(kLearningRate, kMomentum).Minimize(loss, global_step);
    }
  }
  train::MonitoredTrainingSessionOptions options;
  options.graph = &graph;
  options.checkpoint_dir = model_dir;
  options.save_summaries_steps = kSummarySteps;
  options.save_checkpoint_steps = kCheckpointSteps;
  options.hooks = {std::make_shared<train::StopAtStepHook>(train::LastStep{last_step})};
  Losses losses;
  auto sess = train::MonitoredTrainingSession(options);
  while (!sess->ShouldStop()) {
    sess->RunStepFn([&](train::StepContext& context) {
      const int64_t step = context.session().Run({}, {global_step.value()}, {})[0].scalar<int64_t>();
      if (step >= kSteps) Internal("global step ", step, " is past the data set");
      const std::vector<Tensor> out = context.RunWithHooks(
          {{x, Batch(data.x, step, kFeatures)}, {y, Batch(data.y, step, 1)}}, {loss}, {train_op});
      losses[step] = out[0].scalar<float>();
    });
  }
  sess->Close();
  // The flowtrain job ends here, as its process would: the cached event writer, which still
  // holds the end's CheckpointSaverHook event, is closed (TF's SummaryWriterCache.clear()).
  summary::FileWriterCache::Clear();
  return losses;
}

// The losses of `phase` at steps [first, last) are the reference's.
void ExpectLossesOfReference(const Losses& phase, const Losses& reference, int64_t first, int64_t last) {
  ASSERT_EQ(phase.size(), static_cast<size_t>(last - first));
  ASSERT_EQ(phase.begin()->first, first);
  ASSERT_EQ(phase.rbegin()->first, last - 1);
  double worst = 0;
  for (const auto& [step, loss] : phase) {
    ASSERT_TRUE(reference.contains(step)) << step;
    const double ref = reference.at(step);
    const double relative = std::abs(loss - ref) / std::max(std::abs(loss), std::abs(ref));
    worst = std::max(worst, relative);
    EXPECT_LE(relative, kRelativeTolerance) << "step " << step << ": loss " << loss << ", reference " << ref;
  }
  std::printf("steps %lld..%lld: largest relative difference from the reference %.3g\n",
              static_cast<long long>(first), static_cast<long long>(last - 1), worst);
}

// The state file's first line, as written: TF writes absolute paths for an absolute model
// directory, paths relative to it for a relative one (Saver's save_relative_paths is False).
std::string LatestLineOfStateFile(const std::string& dir) {
  std::ifstream in(dir + "/checkpoint");
  std::string line;
  std::getline(in, line);
  return line;
}

// Runs the phases in a fresh folder (FLOWTRAIN_HANDOVER_DIR keeps them there to look at; by
// default a temporary folder removed at exit), the current directory while the test runs, so
// that the relative variant's model directory is relative to it for TF's processes too.
class Handover : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    const char* keep = std::getenv("FLOWTRAIN_HANDOVER_DIR");
    root_ = keep != nullptr ? std::string(keep) + "/" + GetParam().optimizer : MakeTempDir("handover");
    if (keep != nullptr) {
      std::filesystem::remove_all(root_);
      std::filesystem::create_directories(root_);
    }
    previous_dir_ = std::filesystem::current_path();
    std::filesystem::current_path(root_);
  }
  void TearDown() override { std::filesystem::current_path(previous_dir_); }

  std::string root_;
  std::filesystem::path previous_dir_;
};

TEST_P(Handover, TfThenFlowtrainThenTfContinuesOneJob) {
  const Variant& variant = GetParam();
  const std::string root = root_;
  const std::string data_dir = root + "/data", reference_dir = root + "/reference";
  const std::string model_dir = variant.relative_model_dir ? "model" : root + "/model";
  std::filesystem::create_directories(data_dir);
  const DataSet data = WriteDataSet(data_dir);
  // How a state file written in the model directory names step `step`.
  auto state_line = [&](int64_t step) {
    const std::string dir = variant.relative_model_dir ? "" : model_dir + "/";
    return "model_checkpoint_path: \"" + dir + "model.ckpt-" + std::to_string(step) + "\"";
  };

  // The reference job and phase 1 are independent: run them side by side.
  auto reference_run = std::async(std::launch::async, [&] {
    return RunTf(variant, data_dir, reference_dir, 300, root + "/reference.losses");
  });
  const PythonRun phase1 = RunTf(variant, data_dir, model_dir, 100, root + "/phase1.losses");
  const PythonRun reference = reference_run.get();
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  ASSERT_EQ(phase1.exit_code, 0) << phase1.output;
  ASSERT_EQ(GlobalStepOfLatestCheckpoint(model_dir), 100);
  ASSERT_EQ(GlobalStepOfLatestCheckpoint(reference_dir), 300);
  EXPECT_EQ(LatestLineOfStateFile(model_dir), state_line(100));
  const Losses reference_losses = ReadLosses(root + "/reference.losses");
  ASSERT_EQ(reference_losses.size(), 300u);
  ExpectLossesOfReference(ReadLosses(root + "/phase1.losses"), reference_losses, 0, 100);

  const std::string tf_checkpoint = CopyCheckpoint(model_dir + "/model.ckpt-100", root + "/tf_checkpoint");

  const Losses phase2 = RunFlowtrain(variant, data, model_dir, 200);
  WriteLosses(root + "/phase2.losses", phase2);
  ASSERT_EQ(GlobalStepOfLatestCheckpoint(model_dir), 200);
  ExpectLossesOfReference(phase2, reference_losses, 100, 200);
  // The state file as TF's Saver would leave it (paths as TF writes them, the 5 newest):
  // flowtrain took over TF's list, re-saved step 100 at its start (moving it to the end) and
  // deleted TF's older checkpoints as its own came.
  EXPECT_EQ(LatestLineOfStateFile(model_dir), state_line(200));
  ExpectCheckpointsInState(model_dir, {100, 130, 160, 190, 200});
  // What flowtrain restored is what TF saved: its session re-saved step 100 before training.
  ExpectSameCheckpoint(variant, tf_checkpoint, model_dir + "/model.ckpt-100");
  const std::string flowtrain_checkpoint =
      CopyCheckpoint(model_dir + "/model.ckpt-200", root + "/flowtrain_checkpoint");

  const PythonRun phase3 = RunTf(variant, data_dir, model_dir, 300, root + "/phase3.losses");
  ASSERT_EQ(phase3.exit_code, 0) << phase3.output;
  ASSERT_EQ(GlobalStepOfLatestCheckpoint(model_dir), 300);
  EXPECT_EQ(LatestLineOfStateFile(model_dir), state_line(300));
  // TF took over flowtrain's list and deleted flowtrain's checkpoints as its own came. Where
  // TF's periodic saves fall moves a step earlier now and then (its hook estimates the step
  // from the global step fetched with the train op, a read that races the step's increment),
  // so only their count is fixed: every 30 steps, 3 fit between the start's and the end's.
  ExpectCheckpointsInState(model_dir, {200, -1, -1, -1, 300});
  // What TF restored is what flowtrain saved: TF's session re-saved step 200 before training.
  ExpectSameCheckpoint(variant, flowtrain_checkpoint, model_dir + "/model.ckpt-200");
  ExpectLossesOfReference(ReadLosses(root + "/phase3.losses"), reference_losses, 200, 300);

  const PythonRun check =
      RunTfPython({TfScript("handover/check_handover.py"), "--model-dir", model_dir, "--reference-dir",
                   reference_dir, "--reference-losses", root + "/reference.losses", "--data", data_dir,
                   "--tf-checkpoint", tf_checkpoint, "--flowtrain-checkpoint", flowtrain_checkpoint});
  EXPECT_EQ(check.exit_code, 0) << check.output;
}

INSTANTIATE_TEST_SUITE_P(Variants, Handover, ::testing::Values(kAdam, kMomentumInRelativeDir),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return info.param.relative_model_dir ? "MomentumRelativeModelDir" : "Adam";
                         });

}  // namespace
}  // namespace flowtrain::testing
