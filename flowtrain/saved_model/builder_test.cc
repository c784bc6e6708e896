// Builder: the directory layout and SavedModel proto TF's builder writes, and its errors.
#include "flowtrain/saved_model/builder.h"

#include <filesystem>
#include <string>

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/saved_model/constants.h"
#include "flowtrain/saved_model/loader.h"
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
using testing::TestModel;

class BuilderTest : public ::testing::Test {
 protected:
  BuilderTest()
      : tmp_(MakeTempDir("builder")), model_(graph_, testing::WriteOffsetAsset(tmp_)), sess_(graph_) {
    model_.Init(sess_);
  }
  std::string ExportDir(const std::string& name = "export") const { return JoinPath(tmp_, name); }

  std::string tmp_;
  Graph graph_;
  TestModel model_;
  Session sess_;
};

TEST_F(BuilderTest, WritesTheLayoutAndProtoTfWrites) {
  Builder builder(ExportDir());
  builder.AddMetaGraphAndVariables(sess_, {kServing}, model_.Signatures(),
                                   {.assets = {model_.asset}, .main_op = model_.main_op});
  const std::string path = builder.Save();
  EXPECT_EQ(path, JoinPath(ExportDir(), "saved_model.pb"));
  EXPECT_TRUE(FileExists(JoinPath(ExportDir(), "variables/variables.index")));
  EXPECT_TRUE(FileExists(JoinPath(ExportDir(), "variables/variables.data-00000-of-00001")));
  EXPECT_FALSE(FileExists(JoinPath(ExportDir(), "variables/checkpoint")));  // no state file, as TF
  EXPECT_EQ(ReadFileToString(JoinPath(ExportDir(), "assets/offset.tfrecord")),
            ReadFileToString(JoinPath(tmp_, "offset.tfrecord")));
  EXPECT_FALSE(fs::exists(JoinPath(ExportDir(), kSavedModelAssetsExtraDirectory)));

  const tensorflow::SavedModel saved = ReadSavedModel(ExportDir());
  EXPECT_EQ(saved.saved_model_schema_version(), 1);
  ASSERT_EQ(saved.meta_graphs_size(), 1);
  const tensorflow::MetaGraphDef& meta = saved.meta_graphs(0);
  ASSERT_EQ(meta.meta_info_def().tags_size(), 1);
  EXPECT_EQ(meta.meta_info_def().tags(0), "serve");
  EXPECT_EQ(meta.signature_def().size(), 3u);
  EXPECT_EQ(meta.signature_def().at("serving_default").outputs().at("y").name(), "y:0");
  // The default saver: sharded, under "save/".
  EXPECT_TRUE(meta.saver_def().sharded());
  EXPECT_EQ(meta.saver_def().filename_tensor_name(), "save/Const:0");
  EXPECT_EQ(meta.collection_def().at(kSavedModelMainOpKey).node_list().value(0), "main_op");
  const auto& assets = meta.collection_def().at(kSavedModelAssetsKey).any_list();
  ASSERT_EQ(assets.value_size(), 1);
  tensorflow::AssetFileDef asset;
  ASSERT_TRUE(assets.value(0).UnpackTo(&asset));
  EXPECT_EQ(asset.filename(), "offset.tfrecord");
  EXPECT_EQ(asset.tensor_info().name(), "asset_path:0");
}

TEST_F(BuilderTest, ExistingDirectoryMustBeEmpty) {
  CreateDirectories(ExportDir("empty"));
  Builder fine(ExportDir("empty"));  // an empty directory is taken, as TF
  CreateDirectories(ExportDir("full"));
  WriteFileAtomically(JoinPath(ExportDir("full"), "x"), "x");
  ExpectError<AlreadyExistsError>([&] { Builder builder(ExportDir("full")); },
                                  {ExportDir("full"), "already exists, and isn't empty"});
}

TEST_F(BuilderTest, AddMetaGraphComesAfterTheVariables) {
  Builder builder(ExportDir());
  ExpectError<FailedPreconditionError>([&] { builder.AddMetaGraph({kTraining}); },
                                       {"has not been saved yet", "AddMetaGraphAndVariables"});
  builder.AddMetaGraphAndVariables(sess_, {kServing});
  ExpectError<FailedPreconditionError>([&] { builder.AddMetaGraphAndVariables(sess_, {kTraining}); },
                                       {"already been saved", "AddMetaGraph()"});
  builder.AddMetaGraph({kTraining, kGpu});
  // Tag sets are compared as sets.
  ExpectInvalidArgument(
      [&] {
        builder.AddMetaGraph({kGpu, kTraining});
      },
      {"tags {'gpu', 'train'}", "already added"});
  EXPECT_EQ(builder.saved_model().meta_graphs_size(), 2);
}

TEST_F(BuilderTest, SignaturesAreValidated) {
  Builder builder(ExportDir());
  tensorflow::SignatureDef no_dtype;
  (*no_dtype.mutable_inputs())["x"].set_name("x:0");
  ExpectInvalidArgument(
      [&] {
        builder.AddMetaGraphAndVariables(sess_, {kServing}, {{"sig", no_dtype}});
      },
      {"'x' of signature 'sig'", "must have the dtype field set"});
  tensorflow::SignatureDef no_name;
  (*no_name.mutable_outputs())["y"].set_dtype(tensorflow::DT_FLOAT);
  ExpectInvalidArgument(
      [&] {
        builder.AddMetaGraphAndVariables(sess_, {kServing}, {{"sig", no_name}});
      },
      "must have one of the 'encoding' fields");
  ExpectInvalidArgument(
      [&] {
        builder.AddMetaGraphAndVariables(sess_, {kServing}, {{kSavedModelInitOpSignatureKey, {}}});
      },
      {"\"__saved_model_init_op\" is reserved for initialization"});
  EXPECT_FALSE(FileExists(JoinPath(ExportDir(), "variables/variables.index")));  // nothing written
}

TEST_F(BuilderTest, AssetsMustBeStringConstantsOfExistingFiles) {
  Builder builder(ExportDir());
  ExpectInvalidArgument(
      [&] { builder.AddMetaGraphAndVariables(sess_, {kServing}, {}, {.assets = {model_.x}}); },
      {"Asset path tensor x:0 must be of type constant", "Placeholder"});
  Output number, missing;
  {
    auto as_default = graph_.AsDefault();
    number = ops::Const(3.0f, "number");
    missing = ops::Const(JoinPath(tmp_, "nope.txt").c_str(), "missing");
  }
  ExpectInvalidArgument(
      [&] { builder.AddMetaGraphAndVariables(sess_, {kServing}, {}, {.assets = {number}}); },
      "must be of dtype string");
  ExpectError<NotFoundError>(
      [&] { builder.AddMetaGraphAndVariables(sess_, {kServing}, {}, {.assets = {missing}}); },
      {"nope.txt", "missing:0"});
}

TEST_F(BuilderTest, AssetsOfTheSameBaseNameGetSuffixesUnlessIdentical) {
  const std::string a = JoinPath(tmp_, "a/vocab.txt"), b = JoinPath(tmp_, "b/vocab.txt"),
                    c = JoinPath(tmp_, "c/vocab.txt");
  for (const char* dir : {"a", "b", "c"}) CreateDirectories(JoinPath(tmp_, dir));
  WriteFileAtomically(a, "apple\n");
  WriteFileAtomically(b, "banana\n");
  WriteFileAtomically(c, "apple\n");
  Output ta, tb, tc;
  {
    auto as_default = graph_.AsDefault();
    ta = ops::Const(a.c_str(), "vocab_a");
    tb = ops::Const(b.c_str(), "vocab_b");
    tc = ops::Const(c.c_str(), "vocab_c");
  }
  Builder builder(ExportDir());
  builder.AddMetaGraphAndVariables(sess_, {kServing}, {}, {.assets = {ta, tb, tc}});
  const auto& any = builder.saved_model().meta_graphs(0).collection_def().at(kSavedModelAssetsKey).any_list();
  ASSERT_EQ(any.value_size(), 3);
  std::vector<std::string> names;
  for (const auto& value : any.value()) {
    tensorflow::AssetFileDef def;
    ASSERT_TRUE(value.UnpackTo(&def));
    names.push_back(def.filename());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"vocab.txt", "vocab.txt_1", "vocab.txt"}));
  EXPECT_EQ(ReadFileToString(JoinPath(ExportDir(), "assets/vocab.txt")), "apple\n");
  EXPECT_EQ(ReadFileToString(JoinPath(ExportDir(), "assets/vocab.txt_1")), "banana\n");
  // A later MetaGraph of the graph still lists them (TF keeps them in a graph collection).
  builder.AddMetaGraph({kTraining});
  EXPECT_EQ(
      builder.saved_model().meta_graphs(1).collection_def().at(kSavedModelAssetsKey).any_list().value_size(),
      3);
}

TEST_F(BuilderTest, OneMainOpPerGraph) {
  Builder builder(ExportDir());
  builder.AddMetaGraphAndVariables(sess_, {kServing}, {}, {.legacy_init_op = model_.main_op});
  // TF 1.15 records legacy_init_op as the main op.
  EXPECT_EQ(
      builder.saved_model().meta_graphs(0).collection_def().at(kSavedModelMainOpKey).node_list().value(0),
      "main_op");
  EXPECT_FALSE(builder.saved_model().meta_graphs(0).collection_def().contains(kSavedModelLegacyInitOpKey));
  ExpectInvalidArgument(
      [&] { builder.AddMetaGraph({kTraining}, {}, {.main_op = model_.main_op}); },
      "Graph already contains one or more main ops under the collection saved_model_main_op.");
}

TEST_F(BuilderTest, TextFormatHoldsTheSameProto) {
  Builder builder(ExportDir());
  builder.AddMetaGraphAndVariables(sess_, {kServing}, model_.Signatures());
  const std::string text_path = builder.Save(/*as_text=*/true);
  EXPECT_EQ(text_path, JoinPath(ExportDir(), "saved_model.pbtxt"));
  EXPECT_FALSE(FileExists(JoinPath(ExportDir(), "saved_model.pb")));
  EXPECT_TRUE(MaybeSavedModelDirectory(ExportDir()));
  // Compared as messages: a map field (the collections) serializes in no fixed order.
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(ReadSavedModel(ExportDir()), builder.saved_model()));
}

TEST_F(BuilderTest, StripsDefaultAttrsAndClearsDevices) {
  Builder builder(ExportDir());
  builder.AddMetaGraphAndVariables(sess_, {kServing}, model_.Signatures(),
                                   {.clear_devices = true, .strip_default_attrs = true});
  const tensorflow::MetaGraphDef& meta = builder.saved_model().meta_graphs(0);
  EXPECT_TRUE(meta.meta_info_def().stripped_default_attrs());
  bool saw_matmul = false;
  for (const tensorflow::NodeDef& node : meta.graph_def().node()) {
    EXPECT_TRUE(node.device().empty()) << node.name();
    if (node.op() == "MatMul") {
      saw_matmul = true;
      EXPECT_FALSE(node.attr().contains("transpose_a")) << node.name();  // false is its default
      EXPECT_TRUE(node.attr().contains("T"));                            // no default: kept
    }
  }
  EXPECT_TRUE(saw_matmul);
}

}  // namespace
}  // namespace flowtrain::saved_model
