// flowtrain's readers on files a live TensorFlow wrote for this test run
// (tests/tf/files/write_tf_files.py, run by the `tf_files` ctest fixture): a TF1
// MonitoredTrainingSession model dir, SavedModel variables with string and integer tensors, a
// `checkpoint` file of absolute paths, graph event files, TF2 tensor scalars and tf.train.Example
// records, and a linear model's graph that flowtrain imports, runs and trains. Each check
// compares with what TF itself read back from the same files (expected/*.pb), so a clone
// without TF-written fixtures still checks these compatibilities.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/io/event_file_list.h"
#include "flowtrain/io/event_file_reader.h"
#include "flowtrain/io/record_reader.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/parsing_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/proto/event.pb.h"
#include "flowtrain/proto/example.pb.h"
#include "flowtrain/proto/graph.pb.h"
#include "flowtrain/proto/meta_graph.pb.h"
#include "flowtrain/proto/summary.pb.h"
#include "flowtrain/proto/tensor_proto_util.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/summary/event_accumulator.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/meta_graph.h"
#include "flowtrain/train/saver.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using ::flowtrain::testing::CliResult;
using ::flowtrain::testing::FlowtrainCliPath;
using ::flowtrain::testing::RunFlowtrainCli;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

// Where write_tf_files.py wrote this run's files.
std::string Dir(const std::string& relative = "") {
  return relative.empty() ? std::string(FLOWTRAIN_TF_FILES_DIR) : JoinPath(FLOWTRAIN_TF_FILES_DIR, relative);
}

// What TF read back from its own files: expected/<name>.pb, a Summary used as named tensors.
class Expected {
 public:
  explicit Expected(const std::string& name) {
    const std::string path = Dir("expected/" + name + ".pb");
    tensorflow::Summary summary;
    if (!summary.ParseFromString(ReadFileToString(path))) Internal("cannot parse ", path);
    for (const auto& value : summary.value()) tensors_[value.tag()] = value.tensor();
  }

  bool Has(const std::string& name) const { return tensors_.count(name) > 0; }

  Tensor Get(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) NotFound("TF wrote no expected value ", name);
    return TensorFromProto(it->second);
  }

  std::vector<std::string> Strings(const std::string& name) const {
    return testing::Values<std::string>(Get(name));
  }
  std::string String(const std::string& name) const { return Get(name).scalar<std::string>(); }
  template <typename T>
  std::vector<T> Vector(const std::string& name) const {
    return testing::Values<T>(Get(name));
  }
  template <typename T>
  T Scalar(const std::string& name) const {
    return Get(name).scalar<T>();
  }

 private:
  std::map<std::string, tensorflow::TensorProto> tensors_;
};

// Same dtype, shape and elements (compared through their TensorProtos, bit for bit).
void ExpectSameTensor(const Tensor& got, const Tensor& want, const std::string& what) {
  EXPECT_EQ(DataTypeEnumName(got.dtype()), DataTypeEnumName(want.dtype())) << what;
  EXPECT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(TensorToProto(got).SerializeAsString(), TensorToProto(want).SerializeAsString())
      << what << "\n  flowtrain: " << got.DebugString(20) << "\n  TF:        " << want.DebugString(20);
}

// Every tensor of the checkpoint at `prefix`, read by CheckpointReader and BundleReader, is
// the one TF read under `label/`: the same keys in the same order, dtypes, shapes and values.
void ExpectCheckpointAsTfReadIt(const std::string& prefix, const Expected& expected,
                                const std::string& label) {
  SCOPED_TRACE(prefix);
  const std::vector<std::string> keys = expected.Strings(label + "/keys");
  io::CheckpointReader reader(prefix);
  std::vector<std::string> listed;
  for (const auto& [name, dtype] : reader.GetVariableToDataTypeMap()) listed.push_back(name);
  EXPECT_EQ(listed, keys);
  EXPECT_EQ(reader.bundle().ListKeys(), keys);
  const auto shapes = reader.GetVariableToShapeMap();
  for (const std::string& key : keys) {
    const Tensor want = expected.Get(label + "/" + key);
    ASSERT_TRUE(reader.HasTensor(key)) << key;
    EXPECT_EQ(reader.GetVariableToDataTypeMap().at(key), want.dtype()) << key;
    EXPECT_EQ(shapes.at(key), want.shape()) << key;
    ExpectSameTensor(reader.GetTensor(key), want, key);
  }
  reader.bundle().VerifyAll();
}

// The scalar series `tag` of `run` is the one TF read under events/scalar/<tag>/: the same
// steps, values (as float) and wall times, point for point. A different length is a fatal
// failure: call it in ASSERT_NO_FATAL_FAILURE.
void ExpectScalarsAsTfReadThem(const summary::EventAccumulator& run, const std::string& tag,
                               const Expected& expected) {
  const std::string label = "events/scalar/" + tag;
  const std::vector<int64_t> steps = expected.Vector<int64_t>(label + "/steps");
  const std::vector<float> values = expected.Vector<float>(label + "/values");
  const std::vector<double> walls = expected.Vector<double>(label + "/wall_times");
  const auto& series = run.Scalars(tag);
  ASSERT_EQ(series.size(), steps.size());
  for (size_t i = 0; i < series.size(); ++i) {
    EXPECT_EQ(series[i].step, steps[i]) << i;
    EXPECT_EQ(static_cast<float>(series[i].value), values[i]) << i;
    EXPECT_EQ(series[i].wall_time, walls[i]) << i;
  }
}

// Reads `dir`'s `checkpoint` file into `state` with GetCheckpointState, expecting the paths
// TF read (state/model_checkpoint_path, state/all_model_checkpoint_paths). No state is a fatal
// failure: call it in ASSERT_NO_FATAL_FAILURE.
void ReadCheckpointStateAsTfReadIt(const std::string& dir, const Expected& expected,
                                   std::optional<tensorflow::CheckpointState>& state) {
  state = train::GetCheckpointState(dir);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->model_checkpoint_path(), expected.String("state/model_checkpoint_path"));
  EXPECT_EQ(std::vector<std::string>(state->all_model_checkpoint_paths().begin(),
                                     state->all_model_checkpoint_paths().end()),
            expected.Strings("state/all_model_checkpoint_paths"));
}

std::string Quoted(const std::string& path) { return "'" + path + "'"; }

// ---- The MonitoredTrainingSession model dir ------------------------------------------------

TEST(TfFilesModelDir, EveryCheckpointReadsAsTfReadsIt) {
  const Expected expected("model_dir");
  const std::vector<std::string> checkpoints = expected.Strings("checkpoints");
  ASSERT_EQ(checkpoints,
            (std::vector<std::string>{"model.ckpt-0", "model.ckpt-100", "model.ckpt-200", "model.ckpt-300"}));
  for (const std::string& checkpoint : checkpoints) {
    ExpectCheckpointAsTfReadIt(Dir("model_dir/" + checkpoint), expected, checkpoint);
  }
  io::CheckpointReader last(Dir("model_dir/model.ckpt-300"));
  EXPECT_EQ(last.GetTensor("global_step").scalar<int64_t>(), 300);
  EXPECT_EQ(last.GetVariableToDataTypeMap().at("global_step"), DT_INT64);
  EXPECT_EQ(last.GetVariableToShapeMap().at("dense/kernel"), TensorShape({2, 4}));
}

TEST(TfFilesModelDir, CheckpointStateAsTfReadsIt) {
  const Expected expected("model_dir");
  const std::string dir = Dir("model_dir");
  std::optional<tensorflow::CheckpointState> state;
  ASSERT_NO_FATAL_FAILURE(ReadCheckpointStateAsTfReadIt(dir, expected, state));
  EXPECT_EQ(train::LatestCheckpoint(dir), expected.String("state/latest_checkpoint"));
  EXPECT_EQ(train::LatestCheckpoint(dir), JoinPath(dir, "model.ckpt-300"));
  // flowtrain writes the same state as TF's file, byte for byte.
  EXPECT_EQ(train::CheckpointStateToText(*state), ReadFileToString(JoinPath(dir, "checkpoint")));
}

// The checkpoint's variables, made in a flowtrain graph under TF's names, restored by the Saver.
TEST(TfFilesModelDir, SaverRestoresTheTfCheckpointIntoAFlowtrainGraph) {
  const Expected expected("model_dir");
  for (const std::string checkpoint : {"model.ckpt-100", "model.ckpt-300"}) {
    SCOPED_TRACE(checkpoint);
    Graph g;
    auto as_default = g.AsDefault();
    std::vector<std::pair<std::string, Variable>> vars;
    for (const std::string& key : expected.Strings(checkpoint + "/keys")) {
      const Tensor want = expected.Get(checkpoint + "/" + key);
      vars.emplace_back(key, Variable(Tensor(want.dtype(), want.shape()),
                                      {.name = key, .trainable = key != "global_step"}));
    }
    train::Saver saver({.graph = &g});
    Session sess(g);
    saver.Restore(sess, Dir("model_dir/" + checkpoint));
    for (const auto& [key, var] : vars) {
      ExpectSameTensor(sess.Run({}, {var.value()}, {})[0], expected.Get(checkpoint + "/" + key), key);
    }
  }
}

// TF's own .meta and graph.pbtxt: the SaverDef and the node counts TF reads.
TEST(TfFilesModelDir, MetaGraphAndGraphPbtxt) {
  const Expected expected("model_dir");
  const std::string prefix = Dir("model_dir/model.ckpt-300");
  tensorflow::MetaGraphDef meta;
  ASSERT_TRUE(meta.ParseFromString(ReadFileToString(prefix + ".meta")));
  EXPECT_EQ(meta.saver_def().filename_tensor_name(), expected.String("saver_def/filename_tensor_name"));
  EXPECT_EQ(meta.saver_def().save_tensor_name(), expected.String("saver_def/save_tensor_name"));
  EXPECT_EQ(meta.saver_def().restore_op_name(), expected.String("saver_def/restore_op_name"));
  EXPECT_EQ(meta.saver_def().sharded(), expected.Scalar<bool>("saver_def/sharded"));
  EXPECT_EQ(meta.graph_def().node_size(), expected.Scalar<int32_t>("meta_graph_nodes"));
  EXPECT_EQ(meta.meta_info_def().tensorflow_version(), expected.String("meta_tensorflow_version"));

  tensorflow::GraphDef graph;
  ASSERT_TRUE(
      google::protobuf::TextFormat::ParseFromString(ReadFileToString(Dir("model_dir/graph.pbtxt")), &graph));
  EXPECT_EQ(graph.node_size(), expected.Scalar<int32_t>("graph_pbtxt_nodes"));
}

TEST(TfFilesModelDir, EventAccumulatorReadsTfScalarsGraphAndSessionLogs) {
  const Expected expected("model_dir");
  summary::EventAccumulator run(Dir("model_dir"));
  run.Reload();
  std::vector<std::string> files;
  for (const std::string& file : run.files()) files.push_back(Basename(file));
  EXPECT_EQ(files, expected.Strings("events/files"));
  EXPECT_EQ(files.size(), 2u);  // one per training run
  const summary::RunTags tags = run.GetTags();
  EXPECT_EQ(tags.scalars, expected.Strings("events/scalar_tags"));
  EXPECT_EQ(tags.scalars, (std::vector<std::string>{"global_step/sec", "loss"}));
  EXPECT_TRUE(tags.graph);
  EXPECT_TRUE(tags.meta_graph);
  for (const std::string& tag : tags.scalars) {
    SCOPED_TRACE(tag);
    ASSERT_NO_FATAL_FAILURE(ExpectScalarsAsTfReadThem(run, tag, expected));
  }
  EXPECT_EQ(run.Scalars("loss").front().step, 1);  // TF's first summary, before step 1's update

  const std::vector<int32_t> statuses = expected.Vector<int32_t>("events/session_log_statuses");
  const std::vector<int64_t> log_steps = expected.Vector<int64_t>("events/session_log_steps");
  const auto& logs = run.SessionLogs();
  ASSERT_EQ(logs.size(), statuses.size());
  for (size_t i = 0; i < logs.size(); ++i) {
    EXPECT_EQ(static_cast<int32_t>(logs[i].log.status()), statuses[i]) << i;
    EXPECT_EQ(logs[i].step, log_steps[i]) << i;
  }
  EXPECT_EQ(run.purged_count(), 0);
  const std::vector<int32_t> graph_nodes = expected.Vector<int32_t>("events/graph_nodes");
  ASSERT_FALSE(graph_nodes.empty());
  ASSERT_TRUE(run.Graph().has_value());
  EXPECT_EQ(run.Graph()->node_size(), graph_nodes.back());
}

TEST(TfFilesModelDir, EventFilesReadEventByEventAsTfReadsThem) {
  const Expected expected("model_dir");
  int graphs = 0, meta_graphs = 0;
  std::vector<int32_t> graph_nodes;
  std::vector<int64_t> loss_steps;
  for (const std::string& file : io::ListEventFiles(Dir("model_dir"))) {
    SCOPED_TRACE(file);
    const std::vector<tensorflow::Event> events = io::ReadEventFile(file);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events[0].file_version(), "brain.Event:2");
    for (const tensorflow::Event& event : events) {
      if (event.has_graph_def()) {
        ++graphs;
        tensorflow::GraphDef graph;
        ASSERT_TRUE(graph.ParseFromString(event.graph_def()));
        graph_nodes.push_back(graph.node_size());
      } else if (event.has_meta_graph_def()) {
        ++meta_graphs;
        tensorflow::MetaGraphDef meta;
        EXPECT_TRUE(meta.ParseFromString(event.meta_graph_def()));
      } else if (event.has_summary()) {
        for (const auto& value : event.summary().value()) {
          if (value.tag() == "loss") {
            EXPECT_EQ(value.value_case(), tensorflow::Summary::Value::kSimpleValue);
            loss_steps.push_back(event.step());
          }
        }
      }
    }
  }
  EXPECT_EQ(graph_nodes, expected.Vector<int32_t>("events/graph_nodes"));
  EXPECT_EQ(graphs, static_cast<int>(graph_nodes.size()));
  EXPECT_EQ(meta_graphs, expected.Scalar<int32_t>("events/meta_graphs"));
  EXPECT_EQ(loss_steps, expected.Vector<int64_t>("events/scalar/loss/steps"));
}

TEST(TfFilesModelDir, CommandLineReadsTheModelDir) {
  if (!FileExists(FlowtrainCliPath())) GTEST_SKIP() << "tools/flowtrain is not built";
  const Expected expected("model_dir");
  const CliResult events = RunFlowtrainCli("events " + Quoted(Dir("model_dir")));
  ASSERT_EQ(events.exit_code, 0) << events.output;
  EXPECT_THAT(events.output, HasSubstr("Run .  (2 event files)"));
  EXPECT_THAT(events.output,
              HasSubstr(StrCat("graph: ", expected.Vector<int32_t>("events/graph_nodes").back(), " nodes")));
  // (Whether TF's last loss summary is at step 300 or earlier depends on its timing.)
  const std::vector<int64_t> loss_steps = expected.Vector<int64_t>("events/scalar/loss/steps");
  EXPECT_THAT(events.output, ContainsRegex(StrCat("loss +", loss_steps.size(), "  ", loss_steps.front(),
                                                  "\\.\\.", loss_steps.back(), " ")));
  // The session logs' counts and step ranges per status, as TF wrote them.
  const std::vector<int32_t> statuses = expected.Vector<int32_t>("events/session_log_statuses");
  const std::vector<int64_t> log_steps = expected.Vector<int64_t>("events/session_log_steps");
  for (const auto& [status, name] : {std::pair{tensorflow::SessionLog::START, "start"},
                                     std::pair{tensorflow::SessionLog::CHECKPOINT, "checkpoint"}}) {
    int count = 0;
    int64_t first = -1, last = -1;
    for (size_t i = 0; i < statuses.size(); ++i) {
      if (statuses[i] != status) continue;
      if (count++ == 0) first = log_steps[i];
      last = log_steps[i];
    }
    ASSERT_GT(count, 0) << name;
    EXPECT_THAT(events.output, ContainsRegex(StrCat(name, " +", count, "  steps ", first, "\\.\\.", last)));
  }

  const std::string prefix = Dir("model_dir/model.ckpt-300");
  const CliResult listing = RunFlowtrainCli("inspect-checkpoint " + Quoted(prefix));
  ASSERT_EQ(listing.exit_code, 0) << listing.output;
  std::string want;
  for (const std::string& key : expected.Strings("model.ckpt-300/keys")) {
    const Tensor t = expected.Get("model.ckpt-300/" + key);
    want += key + " (" + DataTypeEnumName(t.dtype()) + ") " + t.shape().DebugString() + "\n";
  }
  EXPECT_EQ(listing.output, want);
  const CliResult step = RunFlowtrainCli("inspect-checkpoint " + Quoted(prefix) + " --tensor global_step");
  EXPECT_EQ(step.exit_code, 0) << step.output;
  EXPECT_EQ(step.output, "tensor_name:  global_step\n300\n");
}

// ---- A TF graph imported, restored, run and trained in flowtrain ----------------------------

// TF's linear model from its .meta: TF's SaverDef restores TF's checkpoint, the prediction is
// TF's, and one step of TF's own train op (its gradient graph: Mean's uses FloorMod; its MatMul
// nodes carry TF 2.12's grad_a and grad_b) leaves the variables TF had after that step.
TEST(TfFilesLinearModel, ImportedMetaGraphRestoresRunsAndTrainsAsTfDid) {
  const Expected expected("linear_model");
  const std::string prefix = expected.String("prefix");
  EXPECT_EQ(prefix, Dir("linear_model/model.ckpt-1"));
  ExpectCheckpointAsTfReadIt(prefix, expected, "checkpoint");
  Graph g;
  std::shared_ptr<train::Saver> saver = train::ImportMetaGraph(prefix + ".meta", &g);
  ASSERT_NE(saver, nullptr);
  Session sess(g);
  saver->Restore(sess, prefix);
  const Output x = g.GetTensorByName("x:0");
  const Output t = g.GetTensorByName("t:0");
  const Tensor batch = expected.Get("batch");
  const Tensor prediction = sess.Run({{x, batch}}, {g.GetTensorByName("y:0")}, {})[0];
  const Tensor want = expected.Get("prediction");
  ASSERT_EQ(prediction.shape(), want.shape());
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    EXPECT_NEAR(prediction.flat<float>()[i], want.flat<float>()[i], 1e-6) << i;
  }
  const Operation train_op = g.GetOperationByName("train");
  const std::vector<Operation> train_ops = g.GetCollection<Operation>(GraphKeys::kTrainOp);
  ASSERT_FALSE(train_ops.empty());
  EXPECT_EQ(train_ops[0].name(), "train");
  sess.Run({{x, batch}, {t, expected.Get("target")}}, {}, {train_op});
  for (const char* name : {"w", "b"}) {
    const Tensor got = sess.Run({}, {g.GetTensorByName(std::string(name) + ":0")}, {})[0];
    const Tensor after = expected.Get(std::string(name) + "_after_step");
    ASSERT_EQ(got.shape(), after.shape()) << name;
    for (int64_t i = 0; i < after.NumElements(); ++i) {
      EXPECT_NEAR(got.flat<float>()[i], after.flat<float>()[i], 1e-6) << name << " " << i;
    }
  }
}

// ---- SavedModel variables --------------------------------------------------------------------

TEST(TfFilesSavedModel, Tf1BuilderVariablesWithStringsAndIntegers) {
  const Expected expected("saved_model_tf1");
  const std::string prefix = Dir("saved_model_tf1/variables/variables");
  ExpectCheckpointAsTfReadIt(prefix, expected, "variables");
  io::CheckpointReader reader(prefix);
  EXPECT_EQ(reader.GetVariableToDataTypeMap().at("words"), DT_STRING);
  const std::vector<std::string> words = testing::Values<std::string>(reader.GetTensor("words"));
  ASSERT_EQ(words.size(), 5u);
  EXPECT_EQ(words[2], std::string("b\0c", 3));
  EXPECT_EQ(words[4], std::string(300, 'x'));
  EXPECT_EQ(reader.GetTensor("title").scalar<std::string>(), "a scalar string");
}

TEST(TfFilesSavedModel, Tf1BuilderVariablesRestoreIntoFlowtrainVariables) {
  const Expected expected("saved_model_tf1");
  Graph g;
  auto as_default = g.AsDefault();
  std::vector<std::pair<std::string, Variable>> vars;
  for (const std::string& key : expected.Strings("variables/keys")) {
    const Tensor want = expected.Get("variables/" + key);
    vars.emplace_back(key, Variable(Tensor(want.dtype(), want.shape()), {.name = key}));
  }
  train::Saver saver({.graph = &g});
  Session sess(g);
  saver.Restore(sess, Dir("saved_model_tf1/variables/variables"));
  for (const auto& [key, var] : vars) {
    ExpectSameTensor(sess.Run({}, {var.value()}, {})[0], expected.Get("variables/" + key), key);
  }
}

TEST(TfFilesSavedModel, Tf2ObjectBasedVariablesWithTheObjectGraph) {
  const Expected expected("saved_model_tf2");
  const std::string prefix = Dir("saved_model_tf2/variables/variables");
  ExpectCheckpointAsTfReadIt(prefix, expected, "variables");
  io::CheckpointReader reader(prefix);
  const Tensor graph = reader.GetTensor("_CHECKPOINTABLE_OBJECT_GRAPH");
  EXPECT_EQ(graph.dtype(), DT_STRING);
  EXPECT_EQ(graph.shape(), TensorShape({}));
  EXPECT_NE(graph.scalar<std::string>().find("VARIABLE_VALUE"), std::string::npos);
  EXPECT_FLOAT_EQ(reader.GetTensor("a/.ATTRIBUTES/VARIABLE_VALUE").scalar<float>(), 0.5f);
}

TEST(TfFilesSavedModel, CommandLinePrintsTfStringTensors) {
  if (!FileExists(FlowtrainCliPath())) GTEST_SKIP() << "tools/flowtrain is not built";
  const std::string prefix = Dir("saved_model_tf1/variables/variables");
  const CliResult listing = RunFlowtrainCli("inspect-checkpoint " + Quoted(prefix));
  ASSERT_EQ(listing.exit_code, 0) << listing.output;
  EXPECT_THAT(listing.output, HasSubstr("words (DT_STRING) [5]\n"));
  EXPECT_THAT(listing.output, HasSubstr("counts (DT_INT32) [2,3]\n"));
  EXPECT_THAT(listing.output, HasSubstr("empty (DT_FLOAT) [0,3]\n"));
  const CliResult title = RunFlowtrainCli("inspect-checkpoint " + Quoted(prefix) + " --tensor title");
  EXPECT_EQ(title.exit_code, 0) << title.output;
  EXPECT_THAT(title.output, HasSubstr("a scalar string"));
}

// ---- A `checkpoint` state file of absolute paths ----------------------------------------------

TEST(TfFilesCheckpointState, AbsolutePathsAsTfReadsThem) {
  const Expected expected("abs_state");
  const std::string dir = Dir("abs_state");
  const std::string text = ReadFileToString(JoinPath(dir, "checkpoint"));
  EXPECT_THAT(text, HasSubstr("model_checkpoint_path: \"" + JoinPath(dir, "ckpt-3") + "\"\n"));
  std::optional<tensorflow::CheckpointState> state = train::GetCheckpointState(dir);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->model_checkpoint_path(), expected.String("state/model_checkpoint_path"));
  const std::vector<std::string> paths(state->all_model_checkpoint_paths().begin(),
                                       state->all_model_checkpoint_paths().end());
  EXPECT_EQ(paths, expected.Strings("state/all_model_checkpoint_paths"));
  EXPECT_EQ(train::LatestCheckpoint(dir), expected.String("state/latest_checkpoint"));
  EXPECT_EQ(train::CheckpointStateToText(*state), text);
  // Written again by flowtrain, the same bytes.
  const std::string again = testing::MakeTempDir("tf_files_state");
  train::UpdateCheckpointStateInternal(again, state->model_checkpoint_path(), paths);
  EXPECT_EQ(ReadFileToString(JoinPath(again, "checkpoint")), text);
  ExpectCheckpointAsTfReadIt(*train::LatestCheckpoint(dir), expected, "latest");
}

// A TF2 CheckpointManager's state: relative paths and Python-repr timestamps, byte for byte.
TEST(TfFilesCheckpointState, Tf2CheckpointManagerStateWithTimestamps) {
  const Expected expected("tf2_manager");
  const std::string dir = Dir("tf2_manager");
  const std::string text = ReadFileToString(JoinPath(dir, "checkpoint"));
  EXPECT_THAT(text, HasSubstr("model_checkpoint_path: \"ckpt-3\"\n"));
  EXPECT_THAT(text, HasSubstr("all_model_checkpoint_timestamps: "));
  tensorflow::CheckpointState raw;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &raw));
  EXPECT_EQ(train::CheckpointStateToText(raw), text);
  std::optional<tensorflow::CheckpointState> state;
  ASSERT_NO_FATAL_FAILURE(ReadCheckpointStateAsTfReadIt(dir, expected, state));
  EXPECT_EQ(std::vector<double>(state->all_model_checkpoint_timestamps().begin(),
                                state->all_model_checkpoint_timestamps().end()),
            expected.Vector<double>("state/all_model_checkpoint_timestamps"));
  EXPECT_EQ(state->last_preserved_timestamp(), expected.Scalar<double>("state/last_preserved_timestamp"));
  EXPECT_EQ(train::LatestCheckpoint(dir), expected.String("state/latest_checkpoint"));
  EXPECT_EQ(train::LatestCheckpoint(dir), JoinPath(dir, "ckpt-3"));
  // flowtrain writes the same state, relative paths and timestamps, as TF's bytes.
  const std::string again = testing::MakeTempDir("tf_files_manager");
  std::vector<std::string> paths;
  for (const std::string& path : state->all_model_checkpoint_paths()) {
    paths.push_back(JoinPath(again, Basename(path)));
  }
  train::UpdateCheckpointStateInternal(
      again, JoinPath(again, "ckpt-3"), paths, "checkpoint", /*save_relative_paths=*/true,
      {state->all_model_checkpoint_timestamps().begin(), state->all_model_checkpoint_timestamps().end()},
      state->last_preserved_timestamp());
  EXPECT_EQ(ReadFileToString(JoinPath(again, "checkpoint")), text);
  ExpectCheckpointAsTfReadIt(*train::LatestCheckpoint(dir), expected, "latest");
}

// ---- Graphs in event files ---------------------------------------------------------------

TEST(TfFilesGraphEvents, EveryRunHasTfsGraphAndMetaGraph) {
  const Expected expected("events_tf1_graph");
  const auto runs = summary::LoadRuns(Dir("events_tf1_graph"));
  std::vector<std::string> names;
  for (const auto& [name, run] : runs) names.push_back(name);
  EXPECT_EQ(names, expected.Strings("runs"));
  for (const auto& [name, run] : runs) {
    SCOPED_TRACE(name);
    const summary::RunTags tags = run.GetTags();
    EXPECT_TRUE(tags.graph);
    EXPECT_EQ(tags.meta_graph, expected.Scalar<int32_t>(name + "/meta_graphs") > 0);
    EXPECT_TRUE(tags.scalars.empty());
    ASSERT_TRUE(run.Graph().has_value());
    EXPECT_EQ(run.Graph()->node_size(), expected.Vector<int32_t>(name + "/graph_nodes").back());
  }
  int meta_graphs = 0;
  for (const std::string& file : io::ListEventFiles(Dir("events_tf1_graph/converter"))) {
    for (const tensorflow::Event& event : io::ReadEventFile(file)) {
      if (!event.has_meta_graph_def()) continue;
      ++meta_graphs;
      tensorflow::MetaGraphDef meta;
      ASSERT_TRUE(meta.ParseFromString(event.meta_graph_def()));
      std::set<std::string> ops;
      for (const auto& node : meta.graph_def().node()) ops.insert(node.op());
      EXPECT_TRUE(ops.count("VariableV2") || ops.count("VarHandleOp"));
      EXPECT_TRUE(ops.count("Placeholder"));
    }
  }
  EXPECT_EQ(meta_graphs, expected.Scalar<int32_t>("converter/meta_graphs"));
}

// ---- TF2 tensor scalars --------------------------------------------------------------------

TEST(TfFilesTf2Scalars, EventAccumulatorReadsTensorScalars) {
  const Expected expected("events_tf2_scalar");
  summary::EventAccumulator run(Dir("events_tf2_scalar"));
  run.Reload();
  const summary::RunTags tags = run.GetTags();
  EXPECT_EQ(tags.scalars, expected.Strings("events/scalar_tags"));
  EXPECT_EQ(tags.scalars, (std::vector<std::string>{"my_metric", "other/ratio"}));
  EXPECT_TRUE(tags.tensors.empty());
  for (const std::string& tag : tags.scalars) {
    SCOPED_TRACE(tag);
    ASSERT_NO_FATAL_FAILURE(ExpectScalarsAsTfReadThem(run, tag, expected));
    ASSERT_NE(run.SummaryMetadata(tag), nullptr);
    EXPECT_EQ(run.SummaryMetadata(tag)->plugin_data().plugin_name(), "scalars");
  }
  ASSERT_EQ(run.Scalars("my_metric").size(), 60u);
  EXPECT_EQ(run.Scalars("my_metric")[59].value, 29.5);
}

TEST(TfFilesTf2Scalars, RawEventsAreFloatTensorScalars) {
  const std::vector<std::string> files = io::ListEventFiles(Dir("events_tf2_scalar"));
  ASSERT_EQ(files.size(), 1u);
  const std::vector<tensorflow::Event> events = io::ReadEventFile(files[0]);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  int scalars = 0;
  for (const tensorflow::Event& event : events) {
    if (!event.has_summary()) continue;
    for (const auto& value : event.summary().value()) {
      ASSERT_EQ(value.value_case(), tensorflow::Summary::Value::kTensor) << value.tag();
      const Tensor t = TensorFromProto(value.tensor());
      EXPECT_EQ(t.dtype(), DT_FLOAT);
      EXPECT_EQ(t.shape(), TensorShape({}));
      if (value.tag() == "my_metric") {
        EXPECT_EQ(t.scalar<float>(), 0.5f * static_cast<float>(event.step()));
        ++scalars;
      }
    }
  }
  EXPECT_EQ(scalars, 60);
}

TEST(TfFilesTf2Scalars, CommandLinePrintsTheSeries) {
  if (!FileExists(FlowtrainCliPath())) GTEST_SKIP() << "tools/flowtrain is not built";
  const CliResult r = RunFlowtrainCli("events " + Quoted(Dir("events_tf2_scalar")) + " --tag my_metric");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("scalar my_metric (60 points)"));
  EXPECT_THAT(r.output, HasSubstr("min 0 at step 0, max 29.5 at step 59"));
}

// ---- tf.train.Example records --------------------------------------------------------------

TEST(TfFilesExamples, ParseExampleGivesWhatTfParsed) {
  const Expected expected("tfrecord");
  const std::string path = Dir("tfrecord/examples.tfrecord");
  io::RecordReader reader(path);
  std::vector<std::string> records;
  std::string record;
  while (reader.ReadRecord(&record)) records.push_back(record);
  ASSERT_EQ(static_cast<int64_t>(records.size()), expected.Scalar<int64_t>("count"));
  for (const std::string& r : records) {
    tensorflow::Example example;
    EXPECT_TRUE(example.ParseFromString(r));
    EXPECT_EQ(example.features().feature().at("feature2").bytes_list().value_size(), 1);
  }

  const std::map<std::string, ops::FeatureSpec> features = {
      {"feature0", ops::FixedLenFeature{DT_INT64, TensorShape({})}},
      {"feature1", ops::FixedLenFeature{DT_INT64, TensorShape({})}},
      {"feature2", ops::FixedLenFeature{DT_STRING, TensorShape({})}},
      {"feature3", ops::FixedLenFeature{DT_FLOAT, TensorShape({})}},
      {"pair", ops::FixedLenFeature{DT_FLOAT, TensorShape({2})}},
      {"missing", ops::FixedLenFeature{DT_FLOAT, TensorShape({3}), Tensor::FromVector<float>({7, 8, 9})}},
      {"tags", ops::VarLenFeature{DT_STRING}},
      {"ids", ops::VarLenFeature{DT_INT64}}};
  Graph g;
  auto as_default = g.AsDefault();
  ops::ParsedExample parsed =
      ops::ParseExample(ops::Const(Tensor::FromVector<std::string>(records)), features);
  std::vector<std::string> names;
  std::vector<Output> fetches;
  for (const auto& [name, spec] : features) {
    if (std::holds_alternative<ops::VarLenFeature>(spec)) {
      const ops::SparseTensor& sparse = parsed.sparse.at(name);
      for (const auto& [part, output] :
           {std::pair{"indices", sparse.indices}, std::pair{"values", sparse.values},
            std::pair{"dense_shape", sparse.dense_shape}}) {
        names.push_back(name + "/" + part);
        fetches.push_back(output);
      }
    } else {
      names.push_back(name);
      fetches.push_back(parsed.dense.at(name));
    }
  }
  Session sess(g);
  const std::vector<Tensor> out = sess.Run({}, fetches);
  for (size_t i = 0; i < names.size(); ++i) ExpectSameTensor(out[i], expected.Get(names[i]), names[i]);
}

}  // namespace
}  // namespace flowtrain
