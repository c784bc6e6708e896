// Load and the reader: a SavedModel written by Builder loads with its variables restored and
// its main op run on the assets; text format, two MetaGraphs, the init op's precedence, and
// every kind of bad directory.
#include "flowtrain/saved_model/loader.h"

#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/saved_model/builder.h"
#include "flowtrain/saved_model/constants.h"
#include "flowtrain/saved_model/reader.h"
#include "flowtrain/saved_model/saved_model_test_model.h"
#include "flowtrain/saved_model/tag_constants.h"
#include "tests/test_util.h"

namespace flowtrain::saved_model {
namespace {

namespace fs = std::filesystem;
using flowtrain::testing::ExpectError;
using flowtrain::testing::ExpectInvalidArgument;
using flowtrain::testing::MakeTempDir;
using flowtrain::testing::Values;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;
using testing::TestModel;

const std::vector<std::vector<float>> kRows = {{1, 2}, {-0.5f, 3}};

Tensor Rows() { return Tensor::FromVector<float>({1, 2, -0.5f, 3}, TensorShape({2, 2})); }

class LoaderTest : public ::testing::Test {
 protected:
  LoaderTest() : tmp_(MakeTempDir("loader")), dir_(JoinPath(tmp_, "export")) {}

  // Exports the test model: serving MetaGraph (and a training one, with `two_meta_graphs`), with
  // assets and main op. `edit` may change the graph before export.
  void Export(bool as_text = false, bool two_meta_graphs = false) {
    Graph graph;
    TestModel model(graph, testing::WriteOffsetAsset(tmp_));
    Session sess(graph);
    model.Init(sess);
    Builder builder(dir_);
    builder.AddMetaGraphAndVariables(sess, {kServing}, model.Signatures(),
                                     {.assets = {model.asset}, .main_op = model.main_op});
    if (two_meta_graphs) {
      builder.AddMetaGraph({kTraining},
                           {{"train_y", PredictSignatureDef({{"x", model.x}}, {{"y", model.y}})}});
    }
    builder.Save(as_text);
  }

  // Rewrites saved_model.pb after `edit` changes the proto.
  template <typename Fn>
  void EditSavedModel(const Fn& edit) {
    tensorflow::SavedModel saved = ReadSavedModel(dir_);
    edit(saved);
    WriteFileAtomically(JoinPath(dir_, kSavedModelFilenamePb), saved.SerializeAsString());
  }

  void ExpectServes(const SavedModelBundle& bundle) {
    const std::map<std::string, Tensor> out =
        bundle.RunSignature(kDefaultServingSignatureDefKey, {{"x", Rows()}});
    EXPECT_THAT(Values<float>(out.at("y")), Pointwise(FloatNear(1e-6f), TestModel::ExpectedY(kRows)));
  }

  std::string tmp_, dir_;
};

TEST_F(LoaderTest, RestoresVariablesAndRunsTheMainOpOnItsAssets) {
  Export();
  // The asset's source may go: the SavedModel has its own copy.
  fs::remove(JoinPath(tmp_, "offset.tfrecord"));
  SavedModelBundle bundle = Load({}, {kServing}, dir_);
  EXPECT_EQ(bundle.signatures().size(), 3u);
  ExpectServes(bundle);
  const std::vector<float> y = TestModel::ExpectedY(kRows);

  const Tensor examples = testing::SerializedExamples(kRows);
  std::map<std::string, Tensor> classified = bundle.RunSignature("classify", {{kClassifyInputs, examples}});
  EXPECT_THAT(Values<std::string>(classified.at(kClassifyOutputClasses)), ElementsAre("neg", "pos"));
  const std::vector<float> scores = Values<float>(classified.at(kClassifyOutputScores));
  ASSERT_EQ(scores.size(), 4u);
  EXPECT_NEAR(scores[0], 1 / (1 + std::exp(y[1] - y[0])), 1e-6);
  EXPECT_NEAR(scores[0] + scores[1], 1, 1e-6);

  std::map<std::string, Tensor> regressed = bundle.RunSignature("regress", {{kRegressInputs, examples}});
  EXPECT_THAT(Values<float>(regressed.at(kRegressOutputs)),
              Pointwise(FloatNear(1e-5f), std::vector<float>{y[0] + y[1], y[2] + y[3]}));
}

TEST_F(LoaderTest, TextFormatLoads) {
  Export(/*as_text=*/true);
  ExpectServes(Load({}, {kServing}, dir_));
}

TEST_F(LoaderTest, TwoMetaGraphsShareTheVariables) {
  Export(false, /*two_meta_graphs=*/true);
  const tensorflow::SavedModel saved = ReadSavedModel(dir_);
  ASSERT_EQ(GetTagSets(saved).size(), 2u);
  EXPECT_EQ(GetTagSets(saved)[1], (std::set<std::string>{"train"}));
  // The second MetaGraph has its own saver ("save_1/"), restoring the same checkpoint.
  EXPECT_EQ(saved.meta_graphs(1).saver_def().filename_tensor_name(), "save_1/Const:0");
  ExpectServes(Load({}, {kServing}, dir_));
  SavedModelBundle train = Load({}, {kTraining}, dir_);
  const std::map<std::string, Tensor> out = train.RunSignature("train_y", {{"x", Rows()}});
  EXPECT_THAT(Values<float>(out.at("y")), Pointwise(FloatNear(1e-6f), TestModel::ExpectedY(kRows)));
  EXPECT_EQ(FindMetaGraphDef(saved, {kTraining}).signature_def().count("train_y"), 1u);
}

TEST_F(LoaderTest, InitOpPrecedenceIsTfs) {
  Export();
  // A legacy init op that would set another offset: the main op comes first.
  EditSavedModel([](tensorflow::SavedModel& saved) {
    auto& collections = *saved.mutable_meta_graphs(0)->mutable_collection_def();
    collections[kSavedModelLegacyInitOpKey].mutable_node_list()->add_value("no_such_op_is_run");
  });
  ExpectServes(Load({}, {kServing}, dir_));
  // Without the main op the legacy init op runs (and here names no op: a clear error).
  EditSavedModel([](tensorflow::SavedModel& saved) {
    saved.mutable_meta_graphs(0)->mutable_collection_def()->erase(kSavedModelMainOpKey);
  });
  ExpectInvalidArgument([&] { Load({}, {kServing}, dir_); }, {"init op 'no_such_op_is_run'", dir_});
  // TF2's init signature comes before both.
  EditSavedModel([](tensorflow::SavedModel& saved) {
    auto& init = (*saved.mutable_meta_graphs(0)->mutable_signature_def())[kSavedModelInitOpSignatureKey];
    (*init.mutable_outputs())[kSavedModelInitOpSignatureKey].set_name("main_op");
  });
  ExpectServes(Load({}, {kServing}, dir_));
  // Two main ops are TF's FailedPrecondition.
  EditSavedModel([](tensorflow::SavedModel& saved) {
    auto& meta = *saved.mutable_meta_graphs(0);
    meta.mutable_signature_def()->erase(kSavedModelInitOpSignatureKey);
    auto& main = (*meta.mutable_collection_def())[kSavedModelMainOpKey];
    main.mutable_node_list()->add_value("main_op");
    main.mutable_node_list()->add_value("main_op");
  });
  ExpectError<FailedPreconditionError>([&] { Load({}, {kServing}, dir_); },
                                       {"Expected exactly one main op", dir_});
}

TEST_F(LoaderTest, MissingDirectoryOrFileIsNotFound) {
  ExpectError<NotFoundError>([&] { Load({}, {kServing}, dir_); }, {dir_, "does not exist"});
  CreateDirectories(dir_);
  EXPECT_FALSE(MaybeSavedModelDirectory(dir_));
  ExpectError<NotFoundError>([&] { ReadSavedModel(dir_); },
                             {"SavedModel file does not exist at: ", "saved_model.pbtxt|saved_model.pb"});
}

TEST_F(LoaderTest, CorruptSavedModelFileIsNamed) {
  Export();
  const std::string pb = JoinPath(dir_, kSavedModelFilenamePb);
  const std::string bytes = ReadFileToString(pb);
  WriteFileAtomically(pb, bytes.substr(0, bytes.size() / 2));
  ExpectError<DataLossError>([&] { Load({}, {kServing}, dir_); }, {"Could not parse SavedModel file", pb});
  fs::remove(pb);
  const std::string pbtxt = JoinPath(dir_, kSavedModelFilenamePbTxt);
  WriteFileAtomically(pbtxt, "saved_model_schema_version: 1\nmeta_graphs { no_such_field: 3 }\n");
  ExpectInvalidArgument([&] { Load({}, {kServing}, dir_); },
                        {"Could not parse SavedModel text file", pbtxt, "line 2"});
}

TEST_F(LoaderTest, UnknownTagsListTheTagSetsPresent) {
  Export(false, /*two_meta_graphs=*/true);
  ExpectError<NotFoundError>(
      [&] {
        Load({}, {kServing, kGpu}, dir_);
      },
      {"MetaGraphDef associated with tags 'serve', 'gpu' could not be found in SavedModel", dir_,
       "available tags '[['serve'], ['train']]'", "saved_model_cli"});
}

TEST_F(LoaderTest, MissingVariablesAreNamed) {
  Export();
  const std::string data = JoinPath(dir_, "variables/variables.data-00000-of-00001");
  const std::string saved_data = ReadFileToString(data);
  fs::remove(data);
  ExpectError<Error>([&] { Load({}, {kServing}, dir_); },
                     {"Restoring the variables of SavedModel", "variables.data-00000-of-00001"});
  WriteFileAtomically(data, saved_data);
  fs::remove(JoinPath(dir_, "variables/variables.index"));
  ExpectError<NotFoundError>([&] { Load({}, {kServing}, dir_); },
                             {"has a SaverDef but no variables", "variables.index"});
}

TEST_F(LoaderTest, SignatureNamingAMissingTensorFailsTheLoad) {
  Export();
  EditSavedModel([](tensorflow::SavedModel& saved) {
    auto& sig = (*saved.mutable_meta_graphs(0)->mutable_signature_def())["regress"];
    (*sig.mutable_outputs())["outputs"].set_name("predictionz:0");
  });
  ExpectInvalidArgument([&] { Load({}, {kServing}, dir_); },
                        {"signature 'regress' output 'outputs' names tensor 'predictionz:0'", dir_});
}

TEST_F(LoaderTest, RunSignatureChecksItsInputs) {
  Export();
  SavedModelBundle bundle = Load({}, {kServing}, dir_);
  ExpectError<NotFoundError>([&] { bundle.RunSignature("predict", {}); },
                             {"no signature 'predict'", "'classify', 'regress', 'serving_default'"});
  ExpectError<NotFoundError>([&] { bundle.RunSignature("regress", {{"x", Rows()}}); }, {"has no input 'x'"});
  ExpectInvalidArgument([&] { bundle.RunSignature("regress", {}); }, "needs input 'inputs'");
  ExpectInvalidArgument(
      [&] {
        bundle.RunSignature(kDefaultServingSignatureDefKey, {{"x", Tensor::Scalar<int>(1)}});
      },
      {"'x' (x:0) is float", "int32"});
  // A bundle moved from keeps nothing; the new owner serves.
  SavedModelBundle moved = std::move(bundle);
  ExpectServes(moved);
}

}  // namespace
}  // namespace flowtrain::saved_model
