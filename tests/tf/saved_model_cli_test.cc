// `flowtrain saved-model` against TF's saved_model_cli, and flowtrain's .npy files against
// numpy's, with one TF process writing TF's side (interop/saved_model_cli.py): a SavedModel TF1's
// Builder wrote is shown by `flowtrain saved-model show --all` as saved_model_cli shows it, and
// `flowtrain saved-model run` writes the .npy outputs saved_model_cli writes.
#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/io/npy_file.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

constexpr char kOpsLine[] = "The MetaGraph with tag set ['serve'] contains the following ops: ";

// The text without its ops line, and the ops that line names (Python prints a set, in its
// hash order).
struct Shown {
  std::string text;
  std::set<std::string> ops;
};

Shown SplitOps(const std::string& output) {
  Shown shown;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(kOpsLine, 0) != 0) {
      shown.text += line + "\n";
      continue;
    }
    std::string ops = line.substr(sizeof(kOpsLine) - 1);
    for (size_t at = ops.find('\''); at != std::string::npos; at = ops.find('\'', at + 1)) {
      const size_t end = ops.find('\'', at + 1);
      shown.ops.insert(ops.substr(at + 1, end - at - 1));
      at = end;
    }
  }
  return shown;
}

class SavedModelCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    out_ = new std::string(MakeTempDir("saved_model_cli"));
    python_ = new PythonRun(
        RunTfPython({TfScript("interop/saved_model_cli.py"), "--mode", "write", "--out", *out_}));
  }

  void SetUp() override {
    if (!FileExists(FlowtrainCliPath())) GTEST_SKIP() << "tools/flowtrain is not built";
    ASSERT_EQ(python_->exit_code, 0) << python_->output;
  }

  static std::string Out(const std::string& name) { return JoinPath(*out_, name); }

  static std::string* out_;
  static PythonRun* python_;
};

std::string* SavedModelCliTest::out_ = nullptr;
PythonRun* SavedModelCliTest::python_ = nullptr;

TEST_F(SavedModelCliTest, ShowAllPrintsWhatSavedModelCliPrints) {
  CliResult ours = RunFlowtrainCli("saved-model show --all --dir " + Out("model"));
  ASSERT_EQ(ours.exit_code, 0) << ours.output;
  const Shown flowtrain = SplitOps(ours.output);
  const Shown tf = SplitOps(ReadFileToString(Out("tf_show.txt")));
  // The same signature keys, tensor names, dtypes, shapes and method names, line for line.
  EXPECT_EQ(flowtrain.text, tf.text);
  EXPECT_THAT(tf.text, ::testing::HasSubstr(
                           "inputs['k'] tensor_info:\n        dtype: DT_INT64\n        shape: (-1)\n"));
  EXPECT_FALSE(tf.ops.empty()) << tf.text;
  EXPECT_EQ(flowtrain.ops, tf.ops);
}

TEST_F(SavedModelCliTest, RunWritesTheOutputsSavedModelCliWrites) {
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"serving_default", "x=" + Out("x.npy")}, {"two", "x=" + Out("x.npy") + ";k=" + Out("k.npy")}};
  for (const auto& [signature, inputs] : runs) {
    CliResult r = RunFlowtrainCli("saved-model run --dir " + Out("model") +
                                  " --tag_set serve --signature_def " + signature + " --inputs '" + inputs +
                                  "' --outdir " + JoinPath(Out("ft_run"), signature));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  PythonRun compared = RunTfPython({TfScript("interop/saved_model_cli.py"), "--mode", "compare", "--a",
                                    Out("tf_run"), "--b", Out("ft_run")});
  EXPECT_EQ(compared.exit_code, 0) << compared.output;
  EXPECT_THAT(compared.output, ::testing::HasSubstr("two/total.npy: int64 () same"));
  EXPECT_THAT(compared.output, ::testing::HasSubstr("serving_default/positive.npy: bool (2, 2) same"));
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.flat<T>().begin(), t.flat<T>().end());
}

TEST_F(SavedModelCliTest, NpyFilesGoBothWaysBetweenNumpyAndFlowtrain) {
  // numpy.save -> ReadNpyFile (NPY_CASES of the script).
  const Tensor f32 = io::ReadNpyFile(Out("np/f32.npy"));
  EXPECT_EQ(f32.shape(), TensorShape({2, 3}));
  EXPECT_EQ(Values<float>(f32), (std::vector<float>{-0.5f, -0.25f, 0, 0.25f, 0.5f, 0.75f}));
  const Tensor i64 = io::ReadNpyFile(Out("np/i64.npy"));
  EXPECT_EQ(Values<int64_t>(i64), (std::vector<int64_t>{-3, 0, int64_t{1} << 40}));
  const Tensor flags = io::ReadNpyFile(Out("np/bool.npy"));
  EXPECT_EQ(flags.shape(), TensorShape({2, 2}));
  EXPECT_EQ(Values<bool>(flags), (std::vector<bool>{true, false, false, true}));
  const Tensor scalar = io::ReadNpyFile(Out("np/scalar.npy"));
  EXPECT_EQ(scalar.dims(), 0);
  EXPECT_EQ(scalar.scalar<double>(), 2.5);
  const Tensor fortran = io::ReadNpyFile(Out("np/fortran.npy"));
  EXPECT_EQ(fortran.shape(), TensorShape({2, 3}));
  EXPECT_EQ(Values<int32_t>(fortran), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));  // C order

  // WriteNpyFile -> numpy.load: the same values back (np.array_equal, dtype and shape).
  const std::string dir = Out("ft_np");
  CreateDirectories(dir);
  io::WriteNpyFile(JoinPath(dir, "f32.npy"), f32);
  io::WriteNpyFile(JoinPath(dir, "i64.npy"), Tensor::FromVector<int64_t>({-3, 0, int64_t{1} << 40}));
  io::WriteNpyFile(JoinPath(dir, "bool.npy"),
                   Tensor::FromVector<bool>({true, false, false, true}, TensorShape({2, 2})));
  io::WriteNpyFile(JoinPath(dir, "scalar.npy"), Tensor::Scalar<double>(2.5));
  io::WriteNpyFile(JoinPath(dir, "fortran.npy"),
                   Tensor::FromVector<int32_t>({0, 1, 2, 3, 4, 5}, TensorShape({2, 3})));
  PythonRun checked =
      RunTfPython({TfScript("interop/saved_model_cli.py"), "--mode", "check_npy", "--dir", dir});
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
}

// inspect-checkpoint prints values as numpy's str() prints the arrays TF reads: float alignment,
// scientific form, nan and inf, line wrapping, "..." past 1000 values, bools, bytes, scalars.
TEST_F(SavedModelCliTest, InspectCheckpointPrintsValuesAsNumpyDoes) {
  const std::string prefix = Out("numpy_print/ckpt");
  io::BundleWriter writer(prefix);
  std::vector<float> sevenths(100);
  for (int i = 0; i < 100; ++i) sevenths[i] = static_cast<float>(i) / 7;
  writer.Add("sevenths", Tensor::FromVector<float>(sevenths));
  writer.Add("scientific", Tensor::FromVector<float>({1e-5f, 1, std::nanf(""), -INFINITY}));
  writer.Add("wide", Tensor::FromVector<double>({1e10, 1.5e-5, -3}));
  std::vector<int64_t> counts(2 * 3 * 400);
  for (size_t i = 0; i < counts.size(); ++i) counts[i] = static_cast<int64_t>(i) - 7;
  writer.Add("summarized", Tensor::FromVector<int64_t>(counts, TensorShape({2, 3, 400})));
  writer.Add("flags", Tensor::FromVector<bool>({true, false, true}));
  writer.Add("words", Tensor::FromVector<std::string>({"a", "it's", "b\n"}));
  writer.Add("step", Tensor::Scalar<int64_t>(42));
  writer.Add("rate", Tensor::Scalar<float>(0.1f));
  writer.Add("grid", Tensor::FromVector<float>({0.5f, -2, 3.25f, 100, 0, 1}, TensorShape({3, 2})));
  writer.Finish();
  CliResult ours = RunFlowtrainCli("inspect-checkpoint " + prefix + " --all_tensors");
  ASSERT_EQ(ours.exit_code, 0) << ours.output;
  PythonRun numpy = RunTfPython({TfScript("interop/saved_model_cli.py"), "--mode", "print_checkpoint",
                                 "--prefix", prefix, "--out", Out("numpy_print/numpy.txt")});
  ASSERT_EQ(numpy.exit_code, 0) << numpy.output;
  EXPECT_EQ(ours.output, ReadFileToString(Out("numpy_print/numpy.txt")));
}

}  // namespace
}  // namespace flowtrain::testing
