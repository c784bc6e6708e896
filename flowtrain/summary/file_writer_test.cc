#include "flowtrain/summary/file_writer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/event_file_list.h"
#include "flowtrain/io/event_file_reader.h"
#include "flowtrain/io/record_reader.h"
#include "flowtrain/summary/file_writer_cache.h"
#include "tests/test_util.h"

namespace flowtrain::summary {
namespace {

using ::flowtrain::testing::MakeTempDir;
using namespace std::chrono_literals;

tensorflow::Summary Scalar(const std::string& tag, float value) {
  tensorflow::Summary summary;
  auto* v = summary.add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  return summary;
}

// A TF2-style scalar: a tensor value with plugin metadata.
tensorflow::Summary TensorScalar(const std::string& tag, float value) {
  tensorflow::Summary summary;
  auto* v = summary.add_value();
  v->set_tag(tag);
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("scalars");
  v->mutable_tensor()->set_dtype(tensorflow::DT_FLOAT);
  v->mutable_tensor()->add_float_val(value);
  return summary;
}

tensorflow::SessionLog Log(tensorflow::SessionLog::SessionStatus status, const std::string& path = "") {
  tensorflow::SessionLog log;
  log.set_status(status);
  log.set_checkpoint_path(path);
  return log;
}

std::string OnlyEventFile(const std::string& dir) {
  const std::vector<std::string> files = io::ListEventFiles(dir);
  EXPECT_EQ(files.size(), 1u) << dir;
  return files.empty() ? std::string() : files[0];
}

std::vector<tensorflow::Event> ReadOnlyFile(const std::string& dir) {
  return io::ReadEventFile(OnlyEventFile(dir));
}

// Events of `path` currently visible to a reader, the version record excluded.
size_t VisibleEvents(const std::string& path) {
  io::EventFileReader reader(path, /*follow=*/true);
  tensorflow::Event event;
  size_t n = 0;
  while (reader.ReadEvent(&event)) ++n;
  return n == 0 ? 0 : n - 1;
}

// The writer thread creates the event file soon after the writer starts; waits for it.
std::string WaitForEventFile(const std::string& logdir) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (io::ListEventFiles(logdir).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  return OnlyEventFile(logdir);
}

// Waits up to `limit` for `path` to show `n` events.
bool EventuallyVisible(const std::string& path, size_t n, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (VisibleEvents(path) >= n) return true;
    std::this_thread::sleep_for(5ms);
  }
  return VisibleEvents(path) >= n;
}

// Collects the log lines of one test.
class LogCapture {
 public:
  LogCapture() {
    SetLogSink([this](LogSeverity severity, const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      if (severity == LogSeverity::kError) errors_.push_back(line);
    });
  }
  ~LogCapture() { SetLogSink(nullptr); }
  std::vector<std::string> errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> errors_;
};

TEST(FileWriterTest, EverythingReadsBackInOrder) {
  const std::string logdir = JoinPath(MakeTempDir(), "run");
  tensorflow::GraphDef graph;
  graph.add_node()->set_name("x");
  graph.mutable_node(0)->set_op("Placeholder");
  graph.mutable_versions()->set_producer(38);

  const double before =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  {
    FileWriter writer(logdir, graph);
    EXPECT_EQ(writer.GetLogdir(), logdir);
    writer.AddSessionLog(Log(tensorflow::SessionLog::START), 1);
    writer.AddSummary(Scalar("loss", 0.5f).SerializeAsString(), 1);
    writer.AddSummary(Scalar("loss", 0.25f), 2);
    tensorflow::MetaGraphDef meta;
    meta.mutable_meta_info_def()->set_tensorflow_version("1.15.0");
    writer.AddMetaGraph(meta, 3);
    tensorflow::RunMetadata run_metadata;
    run_metadata.mutable_step_stats()->add_dev_stats()->set_device("/cpu:0");
    writer.AddRunMetadata(run_metadata, "step_3", 3);
    EXPECT_THROW(writer.AddRunMetadata(run_metadata, "step_3", 4), InvalidArgumentError);
    writer.AddSessionLog(Log(tensorflow::SessionLog::CHECKPOINT, "runs/model.ckpt"), 4);
    tensorflow::Event custom;
    custom.set_wall_time(42.0);
    custom.set_step(-7);
    *custom.mutable_summary() = Scalar("custom", 9);
    writer.AddEvent(custom);
    writer.AddSessionLog(Log(tensorflow::SessionLog::STOP), 5);
    writer.Flush();
    EXPECT_EQ(writer.written_event_count(), 9u);
    EXPECT_EQ(writer.error_count(), 0u);
    EXPECT_EQ(writer.dropped_event_count(), 0u);
  }
  const std::vector<tensorflow::Event> events = ReadOnlyFile(logdir);
  ASSERT_EQ(events.size(), 10u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  ASSERT_EQ(events[1].what_case(), tensorflow::Event::kGraphDef);
  tensorflow::GraphDef graph_back;
  ASSERT_TRUE(graph_back.ParseFromString(events[1].graph_def()));
  EXPECT_EQ(graph_back.node(0).op(), "Placeholder");
  EXPECT_EQ(events[1].step(), 0);
  EXPECT_EQ(events[2].session_log().status(), tensorflow::SessionLog::START);
  EXPECT_EQ(events[2].step(), 1);
  EXPECT_EQ(events[3].summary().value(0).tag(), "loss");
  EXPECT_EQ(events[3].summary().value(0).simple_value(), 0.5f);
  EXPECT_EQ(events[3].step(), 1);
  EXPECT_EQ(events[4].summary().value(0).simple_value(), 0.25f);
  EXPECT_EQ(events[4].step(), 2);
  tensorflow::MetaGraphDef meta_back;
  ASSERT_TRUE(meta_back.ParseFromString(events[5].meta_graph_def()));
  EXPECT_EQ(meta_back.meta_info_def().tensorflow_version(), "1.15.0");
  EXPECT_EQ(events[6].tagged_run_metadata().tag(), "step_3");
  tensorflow::RunMetadata run_back;
  ASSERT_TRUE(run_back.ParseFromString(events[6].tagged_run_metadata().run_metadata()));
  EXPECT_EQ(run_back.step_stats().dev_stats(0).device(), "/cpu:0");
  EXPECT_EQ(events[7].session_log().checkpoint_path(), "runs/model.ckpt");
  EXPECT_EQ(events[7].step(), 4);
  EXPECT_EQ(events[8].wall_time(), 42.0);
  EXPECT_EQ(events[8].step(), -7);
  EXPECT_EQ(events[8].summary().value(0).tag(), "custom");
  EXPECT_EQ(events[9].session_log().status(), tensorflow::SessionLog::STOP);
  for (size_t i = 1; i < events.size(); ++i) {
    if (i == 8) continue;
    EXPECT_GE(events[i].wall_time(), before - 1) << i;
    EXPECT_LT(events[i].wall_time(), before + 600) << i;
  }
}

// The writer frames summary events by hand; they must be the bytes protobuf would write.
TEST(FileWriterTest, SummaryEventsAreCanonicalProtobufBytes) {
  const std::string logdir = MakeTempDir();
  const std::vector<int64_t> steps = {0, 1, 127, 128, 1 << 20, -1, INT64_MAX, INT64_MIN};
  {
    FileWriter writer(logdir);
    for (int64_t step : steps) writer.AddSummary(Scalar("s", 1.5f), step);
    writer.AddSummary(tensorflow::Summary(), 9);  // empty summary
    std::string big_tag(300, 't');                // a length needing a two-byte varint
    writer.AddSummary(Scalar(big_tag, 2.0f), 10);
  }
  io::RecordReader reader(OnlyEventFile(logdir));
  std::string record;
  ASSERT_TRUE(reader.ReadRecord(&record));  // version
  size_t n = 0;
  while (reader.ReadRecord(&record)) {
    tensorflow::Event event;
    ASSERT_TRUE(event.ParseFromString(record));
    EXPECT_TRUE(event.has_summary());
    EXPECT_EQ(event.SerializeAsString(), record) << "event " << n;
    if (n < steps.size()) {
      EXPECT_EQ(event.step(), steps[n]);
    }
    ++n;
  }
  EXPECT_EQ(n, steps.size() + 2);
}

TEST(FileWriterTest, MetadataIsKeptOnlyTheFirstTimeATagIsSeen) {
  const std::string logdir = MakeTempDir();
  {
    FileWriter writer(logdir);
    writer.AddSummary(TensorScalar("a", 1), 1);
    writer.AddSummary(TensorScalar("a", 2).SerializeAsString(), 2);
    tensorflow::Summary both = TensorScalar("a", 3);
    both.MergeFrom(TensorScalar("b", 4));
    writer.AddSummary(both, 3);
    writer.AddSummary(Scalar("a", 5), 4);  // no metadata: untouched
  }
  const std::vector<tensorflow::Event> events = ReadOnlyFile(logdir);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_TRUE(events[1].summary().value(0).has_metadata());
  EXPECT_EQ(events[1].summary().value(0).metadata().plugin_data().plugin_name(), "scalars");
  EXPECT_FALSE(events[2].summary().value(0).has_metadata());
  EXPECT_EQ(events[2].summary().value(0).tensor().float_val(0), 2.0f);
  ASSERT_EQ(events[3].summary().value_size(), 2);
  EXPECT_FALSE(events[3].summary().value(0).has_metadata());
  EXPECT_TRUE(events[3].summary().value(1).has_metadata()) << "first value tagged b";
  EXPECT_EQ(events[4].summary().value(0).simple_value(), 5.0f);
}

TEST(FileWriterTest, BytesThatAreNotASummaryAreDroppedAndCounted) {
  const std::string logdir = MakeTempDir();
  LogCapture logs;
  {
    FileWriter writer(logdir);
    writer.AddSummary(std::string_view("\x0a\x05\x0a\x01", 4), 1);  // value longer than the data
    writer.AddSummary(std::string_view("\xff\xff\xff\xff", 4), 2);  // invalid tag
    writer.AddSummary(Scalar("ok", 1), 3);
    writer.Flush();
    EXPECT_EQ(writer.dropped_event_count(), 2u);
    EXPECT_EQ(writer.error_count(), 0u) << "not a disk error";
  }
  const std::vector<tensorflow::Event> events = ReadOnlyFile(logdir);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].step(), 3);
  ASSERT_EQ(logs.errors().size(), 1u);
  EXPECT_NE(logs.errors()[0].find("not a tensorflow.Summary"), std::string::npos);
}

TEST(FileWriterTest, TwoWritersInOneSecondGetDistinctFiles) {
  const std::string logdir = MakeTempDir();
  FileWriter first(logdir);
  FileWriter second(logdir);
  first.AddSummary(Scalar("w", 1), 1);
  second.AddSummary(Scalar("w", 2), 1);
  first.Close();
  second.Close();
  const std::vector<std::string> files = io::ListEventFiles(logdir);
  ASSERT_EQ(files.size(), 2u);
  std::set<float> values;
  for (const std::string& file : files) {
    const std::vector<tensorflow::Event> events = io::ReadEventFile(file);
    ASSERT_EQ(events.size(), 2u);
    values.insert(events[1].summary().value(0).simple_value());
  }
  EXPECT_EQ(values, (std::set<float>{1, 2}));
}

TEST(FileWriterTest, UnwritableLogdirKeepsTheCallerAliveAndCountsErrors) {
  const std::string dir = MakeTempDir();
  const std::string blocker = JoinPath(dir, "plain_file");
  std::ofstream(blocker) << "x";
  LogCapture logs;
  FileWriter writer(JoinPath(blocker, "logs"), {.max_queue = 4});
  for (int step = 0; step < 100; ++step) writer.AddSummary(Scalar("loss", 1.0f), step);
  writer.Flush();
  writer.AddSummary(Scalar("loss", 1.0f), 100);
  EXPECT_NO_THROW(writer.Close());
  EXPECT_GE(writer.error_count(), 2u) << "the first file and at least one retry failed";
  EXPECT_EQ(writer.dropped_event_count(), 101u);
  EXPECT_EQ(writer.written_event_count(), 0u);
  ASSERT_EQ(logs.errors().size(), 1u) << "logged once, then only counted";
  EXPECT_NE(logs.errors()[0].find(blocker), std::string::npos) << logs.errors()[0];
}

// A logdir that breaks while the writer runs: its file is deleted and the directory replaced
// by a plain file, so the writer can neither find its file nor create a new one.
TEST(FileWriterTest, LogdirBrokenWhileWritingIsCountedNotThrown) {
  const std::string logdir = JoinPath(MakeTempDir(), "vanishing");
  LogCapture logs;
  FileWriter writer(logdir, {.flush_secs = 1h});
  writer.AddSummary(Scalar("a", 1), 1);
  writer.Flush();
  std::filesystem::remove_all(logdir);
  std::ofstream(logdir) << "now a file";
  writer.AddSummary(Scalar("a", 2), 2);
  EXPECT_NO_THROW(writer.Flush());
  EXPECT_NO_THROW(writer.Close());
  EXPECT_GE(writer.error_count(), 1u);
  EXPECT_EQ(logs.errors().size(), 1u);
}

TEST(FileWriterTest, EventsWaitInMemoryUntilFlushed) {
  const std::string logdir = MakeTempDir();
  FileWriter writer(logdir, {.max_queue = 1000, .flush_secs = 1h});
  const std::string path = WaitForEventFile(logdir);
  writer.AddSummary(Scalar("a", 1), 1);  // the first event is flushed at once, as in TF
  ASSERT_TRUE(EventuallyVisible(path, 1, 5000ms));
  for (int i = 2; i <= 6; ++i) writer.AddSummary(Scalar("a", 1), i);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(VisibleEvents(path), 1u) << "flush_secs has not passed";
  writer.Flush();
  EXPECT_EQ(VisibleEvents(path), 6u);
}

TEST(FileWriterTest, FlushesEveryFlushSecs) {
  const std::string logdir = MakeTempDir();
  FileWriter writer(logdir, {.max_queue = 3, .flush_secs = 50ms});
  const std::string path = WaitForEventFile(logdir);
  for (int i = 0; i < 20; ++i) writer.AddSummary(Scalar("a", 1), i);
  EXPECT_TRUE(EventuallyVisible(path, 20, 5000ms));
  writer.AddSummary(Scalar("a", 1), 20);
  EXPECT_TRUE(EventuallyVisible(path, 21, 5000ms));
}

TEST(FileWriterTest, CloseDropsLaterEventsAndReopenStartsANewFile) {
  const std::string logdir = MakeTempDir();
  FileWriter writer(logdir);
  writer.AddSummary(Scalar("a", 1), 1);
  writer.Close();
  writer.Close();
  writer.AddSummary(Scalar("a", 2), 2);
  writer.Flush();  // nothing to wait for on a closed writer
  EXPECT_EQ(writer.dropped_event_count(), 1u);
  writer.Reopen();
  writer.Reopen();  // already open: nothing happens
  writer.AddSummary(Scalar("a", 3), 3);
  writer.Close();
  const std::vector<std::string> files = io::ListEventFiles(logdir);
  ASSERT_EQ(files.size(), 2u);
  std::vector<int64_t> steps;
  for (const std::string& file : files) {
    const std::vector<tensorflow::Event> events = io::ReadEventFile(file);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].file_version(), "brain.Event:2");
    steps.push_back(events[1].step());
  }
  std::sort(steps.begin(), steps.end());
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 3}));
}

TEST(FileWriterTest, ManyThreadsAddConcurrently) {
  const std::string logdir = MakeTempDir();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  {
    FileWriter writer(logdir);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&writer, t] {
        const std::string tag = StrCat("thread", t);
        for (int i = 0; i < kPerThread; ++i) {
          writer.AddSummary(Scalar(tag, static_cast<float>(i)), i);
          if (i % 5000 == 0) writer.Flush();
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    writer.Close();
    EXPECT_EQ(writer.written_event_count(), uint64_t{kThreads} * kPerThread);
  }
  std::map<std::string, int64_t> next_step;
  size_t summaries = 0;
  for (const tensorflow::Event& event : ReadOnlyFile(logdir)) {
    if (!event.has_summary()) continue;
    ++summaries;
    const std::string& tag = event.summary().value(0).tag();
    EXPECT_EQ(event.step(), next_step[tag]) << tag;  // each thread's events stay in order
    next_step[tag] = event.step() + 1;
  }
  EXPECT_EQ(summaries, size_t{kThreads} * kPerThread);
}

TEST(FileWriterTest, PendingMemoryIsBounded) {
  const std::string logdir = MakeTempDir();
  constexpr int kEvents = 50000;
  FileWriter writer(logdir, {.max_queue = 1000000, .flush_secs = 1h, .max_pending_bytes = 4096});
  LogCapture logs;
  for (int i = 0; i < kEvents; ++i) writer.AddSummary(Scalar("a", 1), i);
  writer.Close();
  EXPECT_GT(writer.dropped_event_count(), 0u);
  EXPECT_EQ(writer.written_event_count() + writer.dropped_event_count(), uint64_t{kEvents});
  EXPECT_EQ(logs.errors().size(), 1u);
}

TEST(FileWriterTest, HugeFlushIntervalMeansFlushOnlyWhenAsked) {
  const std::string logdir = MakeTempDir();
  FileWriter writer(logdir, {.flush_secs = std::chrono::duration<double>(1e300)});
  writer.AddSummary(Scalar("a", 1), 1);
  writer.AddSummary(Scalar("a", 2), 2);
  writer.Flush();
  EXPECT_EQ(VisibleEvents(OnlyEventFile(logdir)), 2u);
}

TEST(FileWriterTest, RejectsBadOptions) {
  const std::string logdir = MakeTempDir();
  EXPECT_THROW(FileWriter(logdir, {.max_queue = 0}), InvalidArgumentError);
  EXPECT_THROW(FileWriter(""), InvalidArgumentError);
}

TEST(FileWriterCacheTest, OneWriterPerLogdir) {
  const std::string a = MakeTempDir();
  const std::string b = MakeTempDir();
  std::shared_ptr<FileWriter> writer = FileWriterCache::Get(a);
  EXPECT_EQ(FileWriterCache::Get(a), writer);
  EXPECT_NE(FileWriterCache::Get(b), writer);
  writer->AddSummary(Scalar("a", 1), 1);
  FileWriterCache::Clear();
  // Cleared writers are closed: what they had is on disk, what comes later is dropped.
  EXPECT_EQ(io::ReadEventFile(OnlyEventFile(a)).size(), 2u);
  writer->AddSummary(Scalar("a", 2), 2);
  EXPECT_EQ(writer->dropped_event_count(), 1u);
  std::shared_ptr<FileWriter> fresh = FileWriterCache::Get(a);
  EXPECT_NE(fresh, writer);
  EXPECT_EQ(fresh->GetLogdir(), a);
  FileWriterCache::Clear();
}

}  // namespace
}  // namespace flowtrain::summary
