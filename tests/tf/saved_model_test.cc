// SavedModels between flowtrain and TF, both ways, with one TF process
// (interop/saved_models.py): TF's tf.compat.v1.saved_model.load runs the signatures of the
// SavedModel flowtrain's Builder writes and `saved_model_cli show --all` lists them; flowtrain's
// saved_model::Load runs those of TF1's Builder, of TF2's tf.saved_model.save and of the
// TF-written fixture SavedModels. Every signature is fed the same inputs on both sides and the
// outputs compared.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_split.h"

#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/saved_model/builder.h"
#include "flowtrain/saved_model/loader.h"
#include "flowtrain/saved_model/reader.h"
#include "flowtrain/saved_model/saved_model_test_model.h"
#include "flowtrain/saved_model/tag_constants.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

// One line of models.txt: a SavedModel TF ran, and the signatures it ran.
struct RunModel {
  std::string dir;
  std::vector<std::string> tags;
  std::vector<std::string> signatures;
};

class SavedModelInteropTest : public ::testing::Test {
 protected:
  // flowtrain writes its SavedModel, then TF runs once for every test here.
  static void SetUpTestSuite() {
    tmp_ = new std::string(MakeTempDir("saved_model_interop"));
    flowtrain_dir_ = new std::string(JoinPath(*tmp_, "flowtrain"));
    {
      Graph graph;
      saved_model::testing::TestModel model(graph, saved_model::testing::WriteOffsetAsset(*tmp_));
      Session sess(graph);
      model.Init(sess);
      saved_model::Builder builder(*flowtrain_dir_);
      builder.AddMetaGraphAndVariables(sess, {saved_model::kServing}, model.Signatures(),
                                       {.assets = {model.asset}, .main_op = model.main_op});
      builder.Save();
    }
    std::filesystem::remove(JoinPath(*tmp_, "offset.tfrecord"));
    python_ = new PythonRun(RunTfPython({TfScript("interop/saved_models.py"), "--flowtrain", *flowtrain_dir_,
                                         "--out", JoinPath(*tmp_, "tf"), "--fixtures", FixturesDir()}));
    models_ = new std::map<std::string, RunModel>();
    std::ifstream lines(JoinPath(*tmp_, "tf/models.txt"));
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::string name, tags;
      RunModel model;
      words >> name >> model.dir >> tags;
      model.tags = absl::StrSplit(tags, ',');
      for (std::string sig; words >> sig;) model.signatures.push_back(sig);
      (*models_)[name] = model;
    }
  }

  // Loads `name` with flowtrain, feeds every signature TF's inputs and compares with TF's outputs.
  static void ExpectSameOutputsAsTf(const std::string& name) {
    ASSERT_EQ(python_->exit_code, 0) << python_->output;
    auto found = models_->find(name);
    ASSERT_NE(found, models_->end()) << "TF did not run " << name << ":\n" << python_->output;
    const RunModel& model = found->second;
    const io::CheckpointReader results(JoinPath(*tmp_, "tf/results"));
    const std::map<std::string, DataType> keys = results.GetVariableToDataTypeMap();
    saved_model::SavedModelBundle bundle = saved_model::Load({}, model.tags, model.dir);
    std::set<std::string> ours;
    for (const auto& [key, sig] : bundle.signatures()) {
      if (!key.starts_with("__")) ours.insert(key);
    }
    EXPECT_EQ(ours, std::set<std::string>(model.signatures.begin(), model.signatures.end())) << name;
    ASSERT_FALSE(model.signatures.empty()) << name;
    for (const std::string& sig : model.signatures) {
      const std::string in_prefix = StrCat(name, "/", sig, "/in/"),
                        out_prefix = StrCat(name, "/", sig, "/out/");
      std::map<std::string, Tensor> inputs;
      std::vector<std::string> tf_outputs;
      for (const auto& [key, dtype] : keys) {
        if (key.starts_with(in_prefix)) inputs[key.substr(in_prefix.size())] = results.GetTensor(key);
        if (key.starts_with(out_prefix)) tf_outputs.push_back(key.substr(out_prefix.size()));
      }
      const std::map<std::string, Tensor> outputs = bundle.RunSignature(sig, inputs);
      ASSERT_EQ(outputs.size(), tf_outputs.size()) << name << " " << sig;
      for (const std::string& key : tf_outputs) {
        const Tensor want = results.GetTensor(out_prefix + key);
        const Tensor& got = outputs.at(key);
        const std::string what = StrCat(name, " signature ", sig, " output ", key);
        ASSERT_EQ(got.dtype(), want.dtype()) << what;
        ASSERT_EQ(got.shape().DebugString(), want.shape().DebugString()) << what;
        if (want.dtype() == DT_STRING) {
          EXPECT_EQ(Values<std::string>(got), Values<std::string>(want)) << what;
          continue;
        }
        ASSERT_EQ(want.dtype(), DT_FLOAT) << what;
        const std::vector<float> g = Values<float>(got), w = Values<float>(want);
        for (size_t i = 0; i < w.size(); ++i)
          EXPECT_NEAR(g[i], w[i], 1e-5 * (1 + std::abs(w[i]))) << what << "[" << i << "]";
      }
    }
  }

  static std::string* tmp_;
  static std::string* flowtrain_dir_;
  static PythonRun* python_;
  static std::map<std::string, RunModel>* models_;
};

std::string* SavedModelInteropTest::tmp_ = nullptr;
std::string* SavedModelInteropTest::flowtrain_dir_ = nullptr;
PythonRun* SavedModelInteropTest::python_ = nullptr;
std::map<std::string, RunModel>* SavedModelInteropTest::models_ = nullptr;

// TF loads flowtrain's SavedModel (restore, main op on the asset) and its signatures give what
// flowtrain's loader gives, which is the model's formula.
TEST_F(SavedModelInteropTest, TfRunsFlowtrainsSavedModel) {
  ExpectSameOutputsAsTf("flowtrain");
  const io::CheckpointReader results(JoinPath(*tmp_, "tf/results"));
  const Tensor x = results.GetTensor("flowtrain/serving_default/in/x");
  const std::vector<float> xs = Values<float>(x);
  std::vector<std::vector<float>> rows;
  for (size_t i = 0; i + 1 < xs.size(); i += 2) rows.push_back({xs[i], xs[i + 1]});
  const std::vector<float> want = saved_model::testing::TestModel::ExpectedY(rows);
  const std::vector<float> got = Values<float>(results.GetTensor("flowtrain/serving_default/out/y"));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

// saved_model_cli lists the tag set and every signature our reader sees, with their tensors.
TEST_F(SavedModelInteropTest, SavedModelCliShowsTheSignaturesOurLoaderSees) {
  ASSERT_EQ(python_->exit_code, 0) << python_->output;
  const std::string shown = ReadFileToString(JoinPath(*tmp_, "tf/cli_flowtrain.txt"));
  EXPECT_NE(shown.find("MetaGraphDef with tag-set: 'serve' contains the following SignatureDefs:"),
            std::string::npos)
      << shown;
  const tensorflow::MetaGraphDef meta =
      saved_model::ReadMetaGraphDefFromSavedModel(*flowtrain_dir_, {"serve"});
  size_t listed = 0;
  for (size_t at = shown.find("signature_def['"); at != std::string::npos;
       at = shown.find("signature_def['", at + 1)) {
    ++listed;
  }
  EXPECT_EQ(listed, meta.signature_def().size()) << shown;
  for (const auto& [key, sig] : meta.signature_def()) {
    EXPECT_NE(shown.find(StrCat("signature_def['", key, "']:")), std::string::npos) << key << "\n" << shown;
    EXPECT_NE(shown.find(StrCat("Method name is: ", sig.method_name())), std::string::npos) << key;
    for (const auto* side : {&sig.inputs(), &sig.outputs()}) {
      for (const auto& [tensor_key, info] : *side) {
        EXPECT_NE(shown.find(StrCat("name: ", info.name())), std::string::npos) << key << " " << tensor_key;
      }
    }
  }
}

// TF 2.21's tf.saved_model.save of a tf.Module: its signatures are tf.functions called through
// StatefulPartitionedCall, and its restore function runs DisableCopyOnRead on each variable.
TEST_F(SavedModelInteropTest, FlowtrainRunsTfTwosSavedModelOfAModule) { ExpectSameOutputsAsTf("tf2"); }

// TF 2.21's TF1 Builder: a predict and a regress signature, the latter through parse_example,
// which TF 2.x writes as ParseExampleV2; its main op reads the asset through TF 2.x's
// TFRecordDataset, a FlatMapDataset over the file names calling a graph function.
TEST_F(SavedModelInteropTest, FlowtrainRunsTfOnesBuilderSavedModel) { ExpectSameOutputsAsTf("tf1"); }

TEST_F(SavedModelInteropTest, FlowtrainRunsTheTf1FixtureSavedModel) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_half_plus_two_cpu");
  ExpectSameOutputsAsTf("fixture_tf1_half_plus_two_cpu");
}

TEST_F(SavedModelInteropTest, FlowtrainRunsTheTf2FixtureSavedModel) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf2_half_plus_two_cpu");
  if (!saved_model::MaybeSavedModelDirectory(FixturePath("tf2_half_plus_two_cpu"))) {
    GTEST_SKIP() << "fixture tf2_half_plus_two_cpu holds only variables/, no saved_model.pb: nothing to load";
  }
  ExpectSameOutputsAsTf("fixture_tf2_half_plus_two_cpu");
}

}  // namespace
}  // namespace flowtrain::testing
