#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/event_file_list.h"
#include "flowtrain/io/event_file_reader.h"
#include "flowtrain/io/event_file_writer.h"
#include "flowtrain/io/record_writer.h"
#include "flowtrain/proto/graph.pb.h"
#include "flowtrain/proto/meta_graph.pb.h"
#include "tests/test_util.h"

namespace flowtrain::io {
namespace {

using ::flowtrain::testing::FixturePath;
using ::flowtrain::testing::MakeTempDir;

tensorflow::Event ScalarEvent(const std::string& tag, float value, int64_t step) {
  tensorflow::Event event;
  event.set_wall_time(1234.5);
  event.set_step(step);
  auto* summary_value = event.mutable_summary()->add_value();
  summary_value->set_tag(tag);
  summary_value->set_simple_value(value);
  return event;
}

std::string OnlyEventFile(const std::string& dir) {
  const std::vector<std::string> files = ListEventFiles(dir);
  EXPECT_EQ(files.size(), 1u);
  return files.empty() ? std::string() : files[0];
}

// ---- EventFileWriter ------------------------------------------------------------------------

TEST(EventFileWriterTest, NamesTheFileAsTensorFlowDoesAndStartsWithTheVersion) {
  const std::string logdir = JoinPath(MakeTempDir(), "new/run");  // created by the writer
  EventFileWriter writer(logdir);
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const std::regex pattern(StrCat(R"(events\.out\.tfevents\.(\d{10})\.)",
                                  std::regex_replace(std::string(host), std::regex(R"(\.)"), R"(\.)"),
                                  R"(\.)", ::getpid(), R"(\.\d+)"));
  std::smatch match;
  const std::string name = Basename(writer.path());
  ASSERT_TRUE(std::regex_match(name, match, pattern)) << name;
  EXPECT_EQ(Dirname(writer.path()), logdir);

  // The version record is on disk before anything else is written or flushed.
  const std::vector<tensorflow::Event> events = ReadEventFile(writer.path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].wall_time(), std::stod(match[1].str()));
  EXPECT_EQ(events[0].step(), 0);
}

TEST(EventFileWriterTest, SuffixGetsALeadingDot) {
  const std::string logdir = MakeTempDir();
  EventFileWriter dotted(logdir, ".v2");
  EventFileWriter bare(logdir, "v2");
  EXPECT_TRUE(dotted.path().ends_with(".v2")) << dotted.path();
  EXPECT_TRUE(bare.path().ends_with(".v2")) << bare.path();
  EXPECT_FALSE(bare.path().ends_with("..v2")) << bare.path();
}

TEST(EventFileWriterTest, WritersOpenedInTheSameSecondGetDistinctFiles) {
  const std::string logdir = MakeTempDir();
  std::vector<std::unique_ptr<EventFileWriter>> writers;
  std::set<std::string> paths;
  for (int i = 0; i < 20; ++i) {
    writers.push_back(std::make_unique<EventFileWriter>(logdir));
    paths.insert(writers.back()->path());
  }
  EXPECT_EQ(paths.size(), 20u);
  EXPECT_EQ(ListEventFiles(logdir).size(), 20u);
}

TEST(EventFileWriterTest, EventsReadBackInOrderAndFlushMakesThemVisible) {
  const std::string logdir = MakeTempDir();
  EventFileWriter writer(logdir);
  EventFileReader live(writer.path(), /*follow=*/true);
  tensorflow::Event event;
  ASSERT_TRUE(live.ReadEvent(&event));
  EXPECT_EQ(event.file_version(), "brain.Event:2");

  writer.WriteEvent(ScalarEvent("loss", 0.5f, 1));
  writer.WriteEvent(ScalarEvent("loss", 0.25f, 2));
  writer.Flush();
  ASSERT_TRUE(live.ReadEvent(&event));
  EXPECT_EQ(event.step(), 1);
  ASSERT_TRUE(live.ReadEvent(&event));
  EXPECT_EQ(event.step(), 2);
  EXPECT_EQ(event.summary().value(0).simple_value(), 0.25f);
  EXPECT_FALSE(live.ReadEvent(&event));

  writer.WriteSerializedEvent(ScalarEvent("acc", 0.9f, 3).SerializeAsString());
  EXPECT_EQ(writer.num_events(), 4u);
  writer.Close();
  ASSERT_TRUE(live.ReadEvent(&event));
  EXPECT_EQ(event.summary().value(0).tag(), "acc");
  EXPECT_FALSE(live.ReadEvent(&event));
  EXPECT_THROW(writer.WriteEvent(event), FailedPreconditionError);
  EXPECT_THROW(writer.Flush(), FailedPreconditionError);
}

TEST(EventFileWriterTest, DeletedFileIsReplacedByTheNextEvent) {
  const std::string logdir = MakeTempDir();
  EventFileWriter writer(logdir);
  const std::string first = writer.path();
  ASSERT_EQ(::unlink(first.c_str()), 0);
  writer.Flush();
  EXPECT_TRUE(std::filesystem::is_empty(logdir)) << "no file until there is an event for it";
  writer.Flush();
  writer.WriteEvent(ScalarEvent("loss", 1.0f, 7));
  EXPECT_NE(writer.path(), first);
  writer.Close();
  const std::vector<tensorflow::Event> events = ReadEventFile(OnlyEventFile(logdir));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[1].step(), 7);
}

// A writer left idle (as FileWriterCache keeps them) whose run directory is deleted does not
// bring it back when it is flushed or closed, as TF's does not.
TEST(EventFileWriterTest, IdleWriterLeavesADeletedLogdirDeleted) {
  const std::string logdir = JoinPath(MakeTempDir(), "run");
  EventFileWriter writer(logdir);
  writer.WriteEvent(ScalarEvent("loss", 1.0f, 1));
  writer.Flush();
  std::filesystem::remove_all(logdir);
  writer.Flush();
  writer.Flush();
  writer.Close();
  EXPECT_FALSE(std::filesystem::exists(logdir));
}

TEST(EventFileWriterTest, EventsWrittenToADeletedFileAreDataLoss) {
  const std::string logdir = MakeTempDir();
  EventFileWriter writer(logdir);
  writer.WriteEvent(ScalarEvent("loss", 1.0f, 1));
  ASSERT_EQ(::unlink(writer.path().c_str()), 0);
  writer.WriteEvent(ScalarEvent("loss", 2.0f, 2));
  try {
    writer.Flush();
    FAIL() << "expected DataLoss";
  } catch (const DataLossError& e) {
    EXPECT_NE(std::string(e.what()).find("2 events"), std::string::npos) << e.what();
  }
  writer.WriteEvent(ScalarEvent("loss", 3.0f, 3));
  writer.Close();
  const std::vector<tensorflow::Event> events = ReadEventFile(OnlyEventFile(logdir));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].step(), 3);
}

TEST(EventFileWriterTest, UnusableLogdirIsAFlowtrainErrorNamingIt) {
  const std::string dir = MakeTempDir();
  const std::string blocker = JoinPath(dir, "a_file");
  std::ofstream(blocker) << "not a directory";
  const std::string logdir = JoinPath(blocker, "logs");
  try {
    EventFileWriter writer(logdir);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(blocker), std::string::npos) << e.what();
  }
}

// ---- EventFileReader ------------------------------------------------------------------------

TEST(EventFileReaderTest, RecordThatIsNotAnEventIsDataLoss) {
  const std::string path = JoinPath(MakeTempDir(), "events.out.tfevents.1.bad");
  {
    RecordWriter writer(path);
    writer.WriteRecord(ScalarEvent("ok", 1, 1).SerializeAsString());
    writer.WriteRecord("\xff\xff\xff");  // an invalid field tag
  }
  EventFileReader reader(path);
  tensorflow::Event event;
  ASSERT_TRUE(reader.ReadEvent(&event));
  try {
    reader.ReadEvent(&event);
    FAIL() << "expected DataLossError";
  } catch (const DataLossError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    const size_t bad_record_offset = 12 + ScalarEvent("ok", 1, 1).ByteSizeLong() + 4;
    EXPECT_NE(message.find(StrCat("offset ", bad_record_offset)), std::string::npos) << message;
  }
}

// ---- Listing --------------------------------------------------------------------------------

TEST(EventFileListTest, RunsAreDirectoriesHoldingEventFiles) {
  const std::string logdir = MakeTempDir();
  auto touch = [&](const std::string& relative) {
    const std::string path = JoinPath(logdir, relative);
    CreateDirectories(Dirname(path));
    std::ofstream(path) << "";
  };
  touch("events.out.tfevents.2.host");
  touch("events.out.tfevents.1.host");
  touch("train/events.out.tfevents.5.host.v2");
  touch("train/eval/x.tfevents.y");
  touch("notes/readme.txt");
  CreateDirectories(JoinPath(logdir, "empty"));

  EXPECT_TRUE(IsEventFileName("a/b/events.out.tfevents.1.h"));
  EXPECT_FALSE(IsEventFileName("tfevents/readme.txt"));

  const std::vector<EventRun> runs = ListEventRuns(logdir);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].name, ".");
  EXPECT_EQ(runs[0].files, (std::vector<std::string>{JoinPath(logdir, "events.out.tfevents.1.host"),
                                                     JoinPath(logdir, "events.out.tfevents.2.host")}));
  EXPECT_EQ(runs[1].name, "train");
  EXPECT_EQ(runs[1].files.size(), 1u);
  EXPECT_EQ(runs[2].name, "train/eval");
  EXPECT_EQ(runs[2].dir, JoinPath(logdir, "train/eval"));
  EXPECT_TRUE(ListEventRuns(JoinPath(logdir, "not_yet")).empty());
  EXPECT_THROW(ListEventFiles(JoinPath(logdir, "not_yet")), NotFoundError);
}

// ---- TF-written fixtures (docs/tf_behaviour.md §4.5) ---------------------------------------

// What a test asserts about one file: how many events of each kind, scalar tags and steps.
struct EventCensus {
  int file_versions = 0, graphs = 0, meta_graphs = 0, summaries = 0;
  std::vector<std::pair<tensorflow::SessionLog::SessionStatus, int64_t>> session_logs;
  std::map<std::string, std::vector<int64_t>> steps_by_tag;
  std::vector<int> graph_nodes;
  std::vector<size_t> graph_bytes, meta_graph_bytes;
  int graph_producer = -1;
};

EventCensus TakeCensus(const std::vector<tensorflow::Event>& events) {
  EventCensus census;
  for (const tensorflow::Event& event : events) {
    switch (event.what_case()) {
      case tensorflow::Event::kFileVersion:
        ++census.file_versions;
        break;
      case tensorflow::Event::kGraphDef: {
        ++census.graphs;
        tensorflow::GraphDef graph;
        EXPECT_TRUE(graph.ParseFromString(event.graph_def()));
        census.graph_nodes.push_back(graph.node_size());
        census.graph_bytes.push_back(event.graph_def().size());
        census.graph_producer = graph.versions().producer();
        break;
      }
      case tensorflow::Event::kMetaGraphDef: {
        ++census.meta_graphs;
        tensorflow::MetaGraphDef meta_graph;
        EXPECT_TRUE(meta_graph.ParseFromString(event.meta_graph_def()));
        census.meta_graph_bytes.push_back(event.meta_graph_def().size());
        break;
      }
      case tensorflow::Event::kSummary:
        ++census.summaries;
        for (const auto& value : event.summary().value()) {
          census.steps_by_tag[value.tag()].push_back(event.step());
        }
        break;
      case tensorflow::Event::kSessionLog:
        census.session_logs.emplace_back(event.session_log().status(), event.step());
        break;
      default:
        break;
    }
  }
  return census;
}

TEST(EventFixturesTest, EveryFixtureEventFileLoads) {
  FLOWTRAIN_REQUIRE_FIXTURES("events_tf1_graph", "events_tf2_scalar", "tf1_estimator_model_dir");
  std::vector<std::string> run_names;
  int files = 0;
  for (const EventRun& run : ListEventRuns(FixturePath(""))) {
    run_names.push_back(run.name);
    for (const std::string& file : run.files) {
      SCOPED_TRACE(file);
      const std::vector<tensorflow::Event> events = ReadEventFile(file);
      ASSERT_FALSE(events.empty());
      EXPECT_EQ(events[0].file_version(), "brain.Event:2");
      // TF writes the whole seconds of the file name as the first wall_time.
      EXPECT_NE(file.find(StrCat("tfevents.", static_cast<int64_t>(events[0].wall_time()), ".")),
                std::string::npos);
      ++files;
    }
  }
  EXPECT_EQ(run_names,
            (std::vector<std::string>{"events_tf1_graph/ex", "events_tf1_graph/fahrenheit_converter",
                                      "events_tf1_graph/multiple", "events_tf1_graph/power",
                                      "events_tf2_scalar", "tf1_estimator_model_dir"}));
  EXPECT_EQ(files, 7);
}

TEST(EventFixturesTest, Tf1EstimatorFirstRun) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const std::string path =
      FixturePath("tf1_estimator_model_dir/events.out.tfevents.1567052931.leimao-evolvx");
  const std::vector<tensorflow::Event> events = ReadEventFile(path);
  ASSERT_EQ(events.size(), 27u);
  EXPECT_EQ(events[0].wall_time(), 1567052931.0);
  EXPECT_EQ(events[1].what_case(), tensorflow::Event::kGraphDef);
  EXPECT_EQ(events[2].what_case(), tensorflow::Event::kMetaGraphDef);
  EXPECT_EQ(events[3].what_case(), tensorflow::Event::kGraphDef);
  EXPECT_EQ(events[4].what_case(), tensorflow::Event::kMetaGraphDef);
  EXPECT_EQ(events[5].session_log().status(), tensorflow::SessionLog::CHECKPOINT);
  EXPECT_EQ(events[5].session_log().checkpoint_path(), "model/model.ckpt");
  EXPECT_EQ(events[5].step(), 0);
  EXPECT_EQ(events[6].session_log().status(), tensorflow::SessionLog::START);
  EXPECT_EQ(events[6].step(), 1);
  ASSERT_TRUE(events[7].has_summary());
  EXPECT_EQ(events[7].summary().value(0).tag(), "loss");
  EXPECT_EQ(events[7].step(), 1);
  EXPECT_EQ(events[8].summary().value(0).tag(), "global_step/sec");
  EXPECT_EQ(events[8].step(), 101);
  EXPECT_EQ(events[9].summary().value(0).tag(), "loss");
  EXPECT_EQ(events[9].step(), 101);
  EXPECT_EQ(events[26].session_log().status(), tensorflow::SessionLog::CHECKPOINT);
  EXPECT_EQ(events[26].step(), 1000);

  const EventCensus census = TakeCensus(events);
  EXPECT_EQ(census.graphs, 2);
  EXPECT_EQ(census.meta_graphs, 2);
  EXPECT_EQ(census.graph_bytes, (std::vector<size_t>{27367, 55018}));
  EXPECT_EQ(census.meta_graph_bytes, (std::vector<size_t>{34193, 63702}));
  EXPECT_EQ(census.graph_nodes.back(), 293);
  EXPECT_EQ(census.graph_producer, 38);
  EXPECT_EQ(census.steps_by_tag.at("loss").size(), 10u);
  EXPECT_EQ(census.steps_by_tag.at("global_step/sec").size(), 9u);
  const std::vector<int64_t> loss_steps = {1, 101, 201, 301, 401, 501, 601, 701, 801, 901};
  EXPECT_EQ(census.steps_by_tag.at("loss"), loss_steps);
  for (const auto& value : events[7].summary().value()) {
    EXPECT_EQ(value.value_case(), tensorflow::Summary::Value::kSimpleValue);
  }
}

TEST(EventFixturesTest, Tf1EstimatorSecondRunContinuesAtStep1001) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const std::vector<tensorflow::Event> events =
      ReadEventFile(FixturePath("tf1_estimator_model_dir/events.out.tfevents.1567057356.leimao-evolvx"));
  ASSERT_EQ(events.size(), 27u);
  EXPECT_EQ(events[0].wall_time(), 1567057356.0);
  const EventCensus census = TakeCensus(events);
  ASSERT_GE(census.session_logs.size(), 2u);
  EXPECT_EQ(census.session_logs[0], std::make_pair(tensorflow::SessionLog::CHECKPOINT, int64_t{1000}));
  EXPECT_EQ(census.session_logs[1], std::make_pair(tensorflow::SessionLog::START, int64_t{1001}));
  EXPECT_EQ(census.steps_by_tag.at("loss").size(), 10u);
  EXPECT_EQ(census.steps_by_tag.at("global_step/sec").size(), 9u);
  for (const auto& [tag, steps] : census.steps_by_tag) {
    for (int64_t step : steps) {
      EXPECT_GE(step, 1001) << tag;
      EXPECT_LE(step, 2000) << tag;
    }
  }
}

TEST(EventFixturesTest, Tf1GraphFiles) {
  FLOWTRAIN_REQUIRE_FIXTURES("events_tf1_graph");
  const std::vector<std::pair<std::string, int>> nodes = {
      {"ex", 10}, {"power", 10}, {"multiple", 6}, {"fahrenheit_converter", 78}};
  for (const auto& [run, node_count] : nodes) {
    SCOPED_TRACE(run);
    const std::string dir = FixturePath(StrCat("events_tf1_graph/", run));
    const std::vector<tensorflow::Event> events = ReadEventFile(OnlyEventFile(dir));
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[0].file_version(), "brain.Event:2");
    EXPECT_EQ(events[1].what_case(), tensorflow::Event::kGraphDef);
    EXPECT_EQ(events[2].what_case(), tensorflow::Event::kMetaGraphDef);
    const EventCensus census = TakeCensus(events);
    EXPECT_EQ(census.graph_nodes, std::vector<int>{node_count});
    EXPECT_EQ(census.graph_producer, 24);
  }
  tensorflow::GraphDef converter;
  const std::vector<tensorflow::Event> events =
      ReadEventFile(OnlyEventFile(FixturePath("events_tf1_graph/fahrenheit_converter")));
  ASSERT_TRUE(converter.ParseFromString(events[1].graph_def()));
  std::set<std::string> ops;
  for (const auto& node : converter.node()) ops.insert(node.op());
  EXPECT_TRUE(ops.count("VariableV2")) << "fahrenheit_converter trains variables";
  EXPECT_TRUE(ops.count("Placeholder"));
}

TEST(EventFixturesTest, Tf2ScalarFile) {
  FLOWTRAIN_REQUIRE_FIXTURES("events_tf2_scalar");
  const std::vector<tensorflow::Event> events = ReadEventFile(
      FixturePath("events_tf2_scalar/events.out.tfevents.1585499054.Jaakkos-Mac-mini.local.11684.5.v2"));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].wall_time(), 1585499054.0);
  std::vector<int64_t> steps;
  for (const tensorflow::Event& event : events) {
    if (!event.has_summary()) continue;
    ASSERT_EQ(event.summary().value_size(), 1);
    const auto& value = event.summary().value(0);
    EXPECT_EQ(value.tag(), "my_metric");
    EXPECT_EQ(value.metadata().plugin_data().plugin_name(), "scalars");
    ASSERT_EQ(value.value_case(), tensorflow::Summary::Value::kTensor);
    EXPECT_EQ(value.tensor().dtype(), tensorflow::DT_FLOAT);
    EXPECT_EQ(value.tensor().tensor_shape().dim_size(), 0);
    ASSERT_EQ(value.tensor().tensor_content().size(), sizeof(float));
    float scalar;
    std::memcpy(&scalar, value.tensor().tensor_content().data(), sizeof(float));
    EXPECT_EQ(scalar, 0.5f * static_cast<float>(event.step()));
    steps.push_back(event.step());
  }
  ASSERT_EQ(steps.size(), 100u);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(steps[i], i);
}

}  // namespace
}  // namespace flowtrain::io
