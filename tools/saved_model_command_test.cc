// `flowtrain saved-model show|run` on a SavedModel flowtrain's Builder writes (the test model of
// flowtrain/saved_model/saved_model_test_model.h): runs the built command-line binary.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/io/npy_file.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/saved_model/builder.h"
#include "flowtrain/saved_model/saved_model_test_model.h"
#include "flowtrain/saved_model/tag_constants.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

namespace fs = std::filesystem;
using ::flowtrain::testing::CliResult;
using ::flowtrain::testing::RunFlowtrainCli;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class SavedModelCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!FileExists(testing::FlowtrainCliPath())) GTEST_SKIP() << "tools/flowtrain is not built";
    tmp_ = testing::MakeTempDir("saved_model_cli");
    dir_ = JoinPath(tmp_, "export");
    Graph graph;
    saved_model::testing::TestModel model(graph, saved_model::testing::WriteOffsetAsset(tmp_));
    Session sess(graph);
    model.Init(sess);
    saved_model::Builder builder(dir_);
    builder.AddMetaGraphAndVariables(sess, {saved_model::kServing}, model.Signatures(),
                                     {.assets = {model.asset}, .main_op = model.main_op});
    builder.Save();
    x_ = JoinPath(tmp_, "x.npy");
    io::WriteNpyFile(x_, Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})));
  }

  CliResult Run(const std::string& args) {
    return RunFlowtrainCli("saved-model run --dir " + dir_ + " --tag_set serve " + args);
  }

  // A failure: exit code 1 and one line, "flowtrain: <Code>: <message>".
  static void ExpectOneLineError(const CliResult& r, const std::string& code, const std::string& part) {
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_THAT(r.output, AllOf(HasSubstr("flowtrain: " + code + ": "), HasSubstr(part)));
  }

  std::string tmp_, dir_, x_;
};

TEST_F(SavedModelCommandTest, ShowListsTagSetsThenKeysThenTensors) {
  CliResult sets = RunFlowtrainCli("saved-model show --dir " + dir_);
  EXPECT_EQ(sets.exit_code, 0) << sets.output;
  EXPECT_EQ(sets.output, "The given SavedModel contains the following tag-sets:\n'serve'\n");
  CliResult keys = RunFlowtrainCli("saved-model show --dir " + dir_ + " --tag_set serve");
  EXPECT_EQ(keys.exit_code, 0) << keys.output;
  EXPECT_EQ(keys.output,
            "The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:\n"
            "SignatureDef key: \"classify\"\n"
            "SignatureDef key: \"regress\"\n"
            "SignatureDef key: \"serving_default\"\n");
  CliResult one =
      RunFlowtrainCli("saved-model show --dir " + dir_ + " --tag_set serve --signature_def serving_default");
  EXPECT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(one.output,
            "The given SavedModel SignatureDef contains the following input(s):\n"
            "  inputs['x'] tensor_info:\n"
            "      dtype: DT_FLOAT\n"
            "      shape: (-1, 2)\n"
            "      name: x:0\n"
            "The given SavedModel SignatureDef contains the following output(s):\n"
            "  outputs['y'] tensor_info:\n"
            "      dtype: DT_FLOAT\n"
            "      shape: (-1, 2)\n"
            "      name: y:0\n"
            "Method name is: tensorflow/serving/predict\n");
}

TEST_F(SavedModelCommandTest, ShowAllListsEverySignatureAndTheOps) {
  CliResult all = RunFlowtrainCli("saved-model show --dir " + dir_ + " --all");
  EXPECT_EQ(all.exit_code, 0) << all.output;
  EXPECT_THAT(all.output,
              HasSubstr("\nMetaGraphDef with tag-set: 'serve' contains the following SignatureDefs:\n"));
  EXPECT_THAT(all.output, HasSubstr("\nsignature_def['classify']:\n"
                                    "  The given SavedModel SignatureDef contains the following input(s):\n"
                                    "    inputs['inputs'] tensor_info:\n"
                                    "        dtype: DT_STRING\n"
                                    "        shape: (-1)\n"));
  EXPECT_THAT(all.output, HasSubstr("    outputs['classes'] tensor_info:\n        dtype: DT_STRING\n"));
  EXPECT_THAT(all.output, HasSubstr("  Method name is: tensorflow/serving/regress\n"));
  EXPECT_THAT(all.output, HasSubstr("The MetaGraph with tag set ['serve'] contains the following ops: {"));
  EXPECT_THAT(all.output,
              AllOf(HasSubstr("'MatMul'"), HasSubstr("'ParseExample"), HasSubstr("'VarHandleOp'")));
}

TEST_F(SavedModelCommandTest, RunPrintsAndWritesTheOutputs) {
  CliResult printed = Run("--signature_def serving_default --inputs x=" + x_);
  EXPECT_EQ(printed.exit_code, 0) << printed.output;
  // y = x·w + b + offset with the asset's offset: the main op ran.
  EXPECT_EQ(printed.output, "Result for output key y (float [2,2]):\n[[ 7.75  7.75]\n [15.75 19.75]]\n");
  const std::vector<float> expected = saved_model::testing::TestModel::ExpectedY({{1, 2}, {3, 4}});
  ASSERT_EQ(expected, (std::vector<float>{7.75f, 7.75f, 15.75f, 19.75f}));

  const std::string out = JoinPath(tmp_, "out");
  CliResult saved = Run("--signature_def serving_default --inputs 'x=" + x_ + "' --outdir " + out);
  EXPECT_EQ(saved.exit_code, 0) << saved.output;
  EXPECT_THAT(saved.output, HasSubstr("Output y is saved to " + JoinPath(out, "y.npy") + "\n"));
  const Tensor y = io::ReadNpyFile(JoinPath(out, "y.npy"));
  EXPECT_EQ(y.shape(), TensorShape({2, 2}));
  EXPECT_EQ(std::vector<float>(y.flat<float>().begin(), y.flat<float>().end()), expected);

  // An existing output is kept unless --overwrite, and the error names it.
  io::WriteNpyFile(JoinPath(out, "y.npy"), Tensor::FromVector<float>({0}));
  ExpectOneLineError(Run("--signature_def serving_default --inputs x=" + x_ + " --outdir " + out),
                     "AlreadyExists",
                     "Output file " + JoinPath(out, "y.npy") + " already exists. Add \"--overwrite\"");
  EXPECT_EQ(io::ReadNpyFile(JoinPath(out, "y.npy")).NumElements(), 1);
  CliResult again =
      Run("--signature_def serving_default --inputs x=" + x_ + " --outdir " + out + " --overwrite");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(io::ReadNpyFile(JoinPath(out, "y.npy")).NumElements(), 4);
}

TEST_F(SavedModelCommandTest, RunTakesStringInputsAndGivesStringOutputs) {
  const std::string examples = JoinPath(tmp_, "examples.npy");
  io::WriteNpyFile(examples, saved_model::testing::SerializedExamples({{1, 2}}));
  const std::string out = JoinPath(tmp_, "classify");
  CliResult r = Run("--signature_def classify --inputs inputs=" + examples + " --outdir " + out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Result for output key classes (string [2]):\n[b'neg' b'pos']\n"));
  const Tensor classes = io::ReadNpyFile(JoinPath(out, "classes.npy"));
  EXPECT_EQ(classes.flat<std::string>()[1], "pos");
  EXPECT_EQ(io::ReadNpyFile(JoinPath(out, "scores.npy")).shape(), TensorShape({1, 2}));
}

TEST_F(SavedModelCommandTest, UnknownTagSetAndSignatureListWhatThereIs) {
  ExpectOneLineError(RunFlowtrainCli("saved-model run --dir " + dir_ +
                                     " --tag_set train --signature_def serving_default "
                                     "--inputs x=" +
                                     x_),
                     "NotFound", "'[['serve']]'");
  ExpectOneLineError(RunFlowtrainCli("saved-model show --dir " + dir_ + " --tag_set serve,gpu"), "NotFound",
                     "'[['serve']]'");
  ExpectOneLineError(Run("--signature_def predict --inputs x=" + x_), "NotFound",
                     "no SignatureDef 'predict'; its keys: \"classify\", \"regress\", \"serving_default\"");
  ExpectOneLineError(
      RunFlowtrainCli("saved-model show --dir " + dir_ + " --tag_set serve --signature_def nope"), "NotFound",
      "no SignatureDef 'nope'");
}

TEST_F(SavedModelCommandTest, InputsAreCheckedAgainstTheSignature) {
  ExpectOneLineError(Run("--signature_def serving_default --inputs 'x=" + x_ + ";z=" + x_ + "'"),
                     "InvalidArgument",
                     "\"z\" is not a valid input key of signature 'serving_default'; its inputs: \"x\"");
  ExpectOneLineError(Run("--signature_def serving_default"), "InvalidArgument",
                     "Signature 'serving_default' needs input 'x'");
  ExpectOneLineError(Run("--signature_def serving_default --inputs x"), "InvalidArgument",
                     "--inputs \"x\" is not of the form <input_key>=<filename.npy>");
  ExpectOneLineError(Run("--signature_def serving_default --inputs 'x=a.npz[x]'"), "InvalidArgument",
                     "flowtrain reads whole .npy files only");

  const std::string ints = JoinPath(tmp_, "ints.npy");
  io::WriteNpyFile(ints, Tensor::FromVector<int64_t>({1, 2, 3, 4}, TensorShape({2, 2})));
  ExpectOneLineError(
      Run("--signature_def serving_default --inputs x=" + ints), "InvalidArgument",
      "Input 'x' from " + ints + " is int64 [2,2], but signature 'serving_default' takes float [?,2]");
  const std::string wide = JoinPath(tmp_, "wide.npy");
  io::WriteNpyFile(wide, Tensor::FromVector<float>({1, 2, 3}, TensorShape({1, 3})));
  ExpectOneLineError(Run("--signature_def serving_default --inputs x=" + wide), "InvalidArgument",
                     "is float [1,3], but signature 'serving_default' takes float [?,2]");
  ExpectOneLineError(Run("--signature_def serving_default --inputs x=" + JoinPath(tmp_, "absent.npy")),
                     "NotFound", "absent.npy");
  const std::string junk = JoinPath(tmp_, "junk.npy");
  WriteFileAtomically(junk, "not numpy");
  ExpectOneLineError(Run("--signature_def serving_default --inputs x=" + junk), "DataLoss", "junk.npy");
}

TEST_F(SavedModelCommandTest, DamagedSavedModelsAreReported) {
  const std::string pb = JoinPath(dir_, "saved_model.pb");
  const std::string index = JoinPath(dir_, "variables/variables.index");
  const std::string data = JoinPath(dir_, "variables/variables.data-00000-of-00001");
  fs::rename(index, index + ".away");
  ExpectOneLineError(Run("--signature_def serving_default --inputs x=" + x_), "NotFound", "variables.index");
  fs::rename(index + ".away", index);
  fs::rename(data, data + ".away");
  CliResult no_data = Run("--signature_def serving_default --inputs x=" + x_);
  EXPECT_EQ(no_data.exit_code, 1) << no_data.output;
  EXPECT_EQ(std::count(no_data.output.begin(), no_data.output.end(), '\n'), 1) << no_data.output;
  EXPECT_THAT(no_data.output, HasSubstr("variables.data-00000-of-00001"));
  fs::rename(data + ".away", data);

  WriteFileAtomically(pb, "\xff\xff\xff garbage");
  ExpectOneLineError(RunFlowtrainCli("saved-model show --dir " + dir_), "DataLoss", "saved_model.pb");
  ExpectOneLineError(Run("--signature_def serving_default --inputs x=" + x_), "DataLoss", "saved_model.pb");
  fs::remove(pb);
  ExpectOneLineError(RunFlowtrainCli("saved-model show --dir " + dir_ + " --all"), "NotFound", dir_);
  ExpectOneLineError(RunFlowtrainCli("saved-model show --dir " + JoinPath(tmp_, "nowhere")), "NotFound",
                     "nowhere");
  // Nothing printed as a result once something failed.
  EXPECT_THAT(Run("--signature_def serving_default --inputs x=" + x_).output, Not(HasSubstr("Result")));
}

}  // namespace
}  // namespace flowtrain
