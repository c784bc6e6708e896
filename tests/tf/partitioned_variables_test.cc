// Partitioned variables between TF and flowtrain (interop/check_partitioned_variables.py):
// TF1's checkpoint of variables partitioned 3 ways (fixed_size_partitioner and
// min_max_variable_partitioner) restores into flowtrain's variables in 2 parts, in 1 and in 3
// with the values exact and the same slice keys; flowtrain's checkpoint of 2 parts restores
// into TF's 3 parts and into an unpartitioned TF variable, and list_variables shows the same
// keys and shapes for both.
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/ops/partitioned_variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/saver.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

// The values check_partitioned_variables.py puts in w [10, 4] and m [7, 5].
std::vector<float> WValues() {
  std::vector<float> v(40);
  for (int i = 0; i < 40; ++i) v[i] = 0.5f * static_cast<float>(i);
  return v;
}
std::vector<float> MValues() {
  std::vector<float> v(35);
  std::iota(v.begin(), v.end(), 100.0f);
  return v;
}

void RunScript(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {TfScript("interop/check_partitioned_variables.py")};
  argv.insert(argv.end(), args.begin(), args.end());
  const PythonRun run = RunTfPython(argv);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::cout << run.output;
}

// w and m in flowtrain, each in `parts` parts (0: unpartitioned); with parts == 3, m is
// partitioned as TF's test partitions it (min_max_variable_partitioner(4, min_slice_size=48)).
struct Model {
  explicit Model(int parts) {
    auto as_default = graph.AsDefault();
    if (parts == 0) {
      w = ops::GetVariable("w", {10, 4}, DT_FLOAT, ops::ZerosInitializer());
      m = ops::GetVariable("m", {7, 5}, DT_FLOAT, ops::ZerosInitializer());
    } else {
      w = ops::GetVariable("w", {10, 4}, DT_FLOAT, ops::ZerosInitializer(),
                           {.partitioner = ops::FixedSizePartitioner(parts)});
      m = ops::GetVariable("m", {7, 5}, DT_FLOAT, ops::ZerosInitializer(),
                           {.partitioner = parts == 3 ? ops::MinMaxVariablePartitioner(4, 0, 48)
                                                      : ops::FixedSizePartitioner(parts)});
    }
    saver = std::make_unique<train::Saver>(train::SaverOptions{.graph = &graph});
  }
  Graph graph;
  Output w, m;
  std::unique_ptr<train::Saver> saver;
};

TEST(PartitionedVariables, CheckpointsRestoreAcrossPartitionCountsBothWays) {
  const std::string dir = MakeTempDir("interop_partitioned");
  const std::string tf_prefix = dir + "/tf/model.ckpt";
  std::filesystem::create_directories(dir + "/ft3");
  std::filesystem::create_directories(dir + "/ft");
  RunScript({"--mode", "write", "--tf_prefix", tf_prefix});

  for (int parts : {2, 0, 3}) {
    SCOPED_TRACE(::testing::Message() << "flowtrain restores TF's checkpoint into " << parts << " parts");
    Model model(parts);
    Session sess(model.graph);
    model.saver->Restore(sess, tf_prefix);
    const std::vector<Tensor> got = sess.Run({}, {model.w, model.m}, {});
    EXPECT_EQ(Values<float>(got[0]), WValues());
    EXPECT_EQ(Values<float>(got[1]), MValues());
    if (parts == 3) {
      // Partitioned as TF's, flowtrain's checkpoint holds the very keys TF's does.
      const std::string prefix = model.saver->Save(sess, dir + "/ft3/model.ckpt");
      EXPECT_EQ(io::BundleReader(prefix).ListKeys(), io::BundleReader(tf_prefix).ListKeys());
    }
  }

  Model model(2);
  Session sess(model.graph);
  model.saver->Restore(sess, tf_prefix);
  const std::string prefix = model.saver->Save(sess, dir + "/ft/model.ckpt");
  RunScript({"--mode", "restore", "--prefix", prefix, "--tf_prefix", tf_prefix});
}

}  // namespace
}  // namespace flowtrain::testing
