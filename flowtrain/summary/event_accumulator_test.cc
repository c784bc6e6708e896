#include "flowtrain/summary/event_accumulator.h"

#include <cfloat>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/allocator.h"
#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/event_file_reader.h"
#include "flowtrain/io/record_writer.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/summary/file_writer.h"
#include "flowtrain/summary/summary.h"
#include "tests/test_util.h"

namespace flowtrain::summary {
namespace {

using ::flowtrain::testing::FixturePath;
using ::flowtrain::testing::MakeTempDir;

std::vector<int64_t> Steps(const std::vector<ScalarEvent>& series) {
  std::vector<int64_t> steps;
  for (const auto& e : series) steps.push_back(e.step);
  return steps;
}

TEST(EventAccumulator, Tf1EstimatorRunAcrossTwoFiles) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  EventAccumulator run(FixturePath("tf1_estimator_model_dir"));
  run.Reload();
  EXPECT_EQ(run.files().size(), 2u);
  EXPECT_EQ(run.file_version(), 2.0);
  EXPECT_EQ(run.first_event_timestamp(), 1567052931.0);
  const RunTags tags = run.GetTags();
  EXPECT_EQ(tags.scalars, (std::vector<std::string>{"global_step/sec", "loss"}));
  EXPECT_TRUE(tags.histograms.empty());
  EXPECT_TRUE(tags.graph);
  EXPECT_TRUE(tags.meta_graph);

  const auto& loss = run.Scalars("loss");
  ASSERT_EQ(loss.size(), 20u);
  std::vector<int64_t> expected_steps;
  for (int64_t s = 1; s <= 1901; s += 100) expected_steps.push_back(s);
  EXPECT_EQ(Steps(loss), expected_steps);
  EXPECT_FLOAT_EQ(loss.front().value, 208.614227f);
  EXPECT_DOUBLE_EQ(loss.front().wall_time, 1567052932.4690526);
  EXPECT_FLOAT_EQ(loss[10].value, 133.184296f);  // step 1001, first of the second file
  EXPECT_FLOAT_EQ(loss.back().value, 8.27594704e-08f);
  const auto& rate = run.Scalars("global_step/sec");
  ASSERT_EQ(rate.size(), 18u);
  EXPECT_EQ(rate.front().step, 101);
  EXPECT_EQ(rate.back().step, 1901);
  EXPECT_FLOAT_EQ(rate.back().value, 592.024475f);

  // CHECKPOINT, START, CHECKPOINT in each file; the restart at 1001 orphaned nothing.
  const auto& logs = run.SessionLogs();
  ASSERT_EQ(logs.size(), 6u);
  EXPECT_EQ(logs[0].log.status(), tensorflow::SessionLog::CHECKPOINT);
  EXPECT_EQ(logs[0].log.checkpoint_path(), "model/model.ckpt");
  EXPECT_EQ(logs[1].log.status(), tensorflow::SessionLog::START);
  EXPECT_EQ(logs[1].step, 1);
  EXPECT_EQ(logs[4].log.status(), tensorflow::SessionLog::START);
  EXPECT_EQ(logs[4].step, 1001);
  EXPECT_EQ(logs[5].step, 2000);
  EXPECT_EQ(run.purged_count(), 0);

  const auto graph = run.Graph();
  ASSERT_TRUE(graph.has_value());
  EXPECT_EQ(graph->node_size(), 293);
  EXPECT_EQ(graph->versions().producer(), 38);
  EXPECT_THROW(run.Scalars("accuracy"), NotFoundError);
  EXPECT_THROW(run.Histograms("loss"), NotFoundError);
}

TEST(EventAccumulator, Tf2TensorScalars) {
  FLOWTRAIN_REQUIRE_FIXTURES("events_tf2_scalar");
  EventAccumulator run(FixturePath("events_tf2_scalar"));
  run.Reload();
  const RunTags tags = run.GetTags();
  EXPECT_EQ(tags.scalars, std::vector<std::string>{"my_metric"});
  EXPECT_TRUE(tags.tensors.empty());
  EXPECT_FALSE(tags.graph);
  const auto& series = run.Scalars("my_metric");
  ASSERT_EQ(series.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(series[i].step, i);
    EXPECT_DOUBLE_EQ(series[i].value, 0.5 * i);
  }
  ASSERT_NE(run.SummaryMetadata("my_metric"), nullptr);
  EXPECT_EQ(run.SummaryMetadata("my_metric")->plugin_data().plugin_name(), "scalars");
}

TEST(EventAccumulator, Tf1GraphRunsOfALogdir) {
  FLOWTRAIN_REQUIRE_FIXTURES("events_tf1_graph");
  auto runs = LoadRuns(FixturePath("events_tf1_graph"));
  ASSERT_EQ(runs.size(), 4u);
  const std::vector<std::pair<std::string, int>> expected = {
      {"ex", 10}, {"fahrenheit_converter", 78}, {"multiple", 6}, {"power", 10}};
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].first, expected[i].first);
    const RunTags tags = runs[i].second.GetTags();
    EXPECT_TRUE(tags.graph);
    EXPECT_TRUE(tags.meta_graph);
    EXPECT_TRUE(tags.scalars.empty());
    EXPECT_EQ(runs[i].second.Graph()->node_size(), expected[i].second) << expected[i].first;
  }
}

TEST(EventAccumulator, MissingLogdirIsNotFound) {
  EXPECT_THROW(LoadRuns(MakeTempDir("logdir") + "/no_such_logdir"), NotFoundError);
}

tensorflow::Event ScalarEventProto(int64_t step, const std::string& tag, float value) {
  tensorflow::Event e;
  e.set_step(step);
  e.set_wall_time(1000.0 + step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  return e;
}

TEST(EventAccumulator, SessionStartPurgesOrphanedSteps) {
  EventAccumulator run("unused");
  tensorflow::Event version;
  version.set_file_version("brain.Event:2");
  run.ProcessEvent(version);
  for (int64_t s = 0; s < 10; ++s) {
    run.ProcessEvent(ScalarEventProto(s, "loss", static_cast<float>(s)));
    run.ProcessEvent(ScalarEventProto(s, "acc", 1.0f));
  }
  // The job crashed after step 9 and restarts from a checkpoint at step 6.
  tensorflow::Event start;
  start.set_step(6);
  start.mutable_session_log()->set_status(tensorflow::SessionLog::START);
  run.ProcessEvent(start);
  EXPECT_EQ(run.purged_count(), 8);  // steps 6..9 of both tags
  run.ProcessEvent(ScalarEventProto(6, "loss", 60.0f));
  EXPECT_EQ(Steps(run.Scalars("loss")), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(run.Scalars("loss").back().value, 60.0);
  EXPECT_EQ(Steps(run.Scalars("acc")), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(EventAccumulator, WithoutFileVersionOutOfOrderStepsPurgeTheirTags) {
  EventAccumulator run("unused");
  for (int64_t s = 0; s < 5; ++s) {
    run.ProcessEvent(ScalarEventProto(s, "loss", 1.0f));
    run.ProcessEvent(ScalarEventProto(s, "acc", 1.0f));
  }
  run.ProcessEvent(ScalarEventProto(2, "loss", 7.0f));
  EXPECT_EQ(Steps(run.Scalars("loss")), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(run.Scalars("loss").back().value, 7.0);
  EXPECT_EQ(Steps(run.Scalars("acc")), (std::vector<int64_t>{0, 1, 2, 3, 4}));

  EventAccumulator keep("unused", /*purge_orphaned_data=*/false);
  keep.ProcessEvent(ScalarEventProto(5, "loss", 1.0f));
  keep.ProcessEvent(ScalarEventProto(2, "loss", 1.0f));
  EXPECT_EQ(Steps(keep.Scalars("loss")), (std::vector<int64_t>{5, 2}));
}

TEST(EventAccumulator, ReadsWhatFileWriterWroteFromSummaryOps) {
  const std::string logdir = MakeTempDir("acc");
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Scalar("loss", x);
  Histogram("weights", ops::Const<float>({-1.0f, 0.5f, 0.5f, 2.0f}));
  Image("digits", ops::Const<uint8_t>(std::vector<uint8_t>(2 * 4 * 5, 200), TensorShape({2, 4, 5, 1})),
        {.max_outputs = 1});
  Audio("beep", ops::Const<float>({0.1f, 0.2f, 0.3f}, TensorShape({1, 3})), 8000.0f);
  Text("notes", ops::Const("hello"));
  Output merged = MergeAll();
  {
    Session sess(g);
    FileWriter writer(logdir, g.ToGraphDef());
    for (int64_t step = 0; step < 3; ++step) {
      const Tensor s = sess.Run({{x, Tensor::Scalar<float>(1.5f * step)}}, {merged})[0];
      writer.AddSummary(s.scalar<std::string>(), step);
    }
    writer.Close();
  }
  auto runs = LoadRuns(logdir);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].first, ".");
  const EventAccumulator& run = runs[0].second;
  const RunTags tags = run.GetTags();
  EXPECT_TRUE(tags.graph);
  EXPECT_EQ(tags.scalars, std::vector<std::string>{"loss"});
  EXPECT_EQ(tags.histograms, std::vector<std::string>{"weights"});
  EXPECT_EQ(tags.images, std::vector<std::string>{"digits/image"});
  EXPECT_EQ(tags.audio, std::vector<std::string>{"beep/audio/0"});
  EXPECT_EQ(tags.tensors, std::vector<std::string>{"notes"});
  EXPECT_EQ(run.Scalars("loss").back().value, 3.0);
  EXPECT_EQ(run.Graph()->node_size(), static_cast<int>(g.ToGraphDef().node_size()));

  // TensorBoard's histogram form: edges min and max outside, TF's limits inside.
  const HistogramEvent& h = run.Histograms("weights").back();
  EXPECT_EQ(h.num, 4.0);
  EXPECT_EQ(h.sum, 2.0);
  // -1, (empty run), 0.5 twice, (empty run), 2: inner empty runs stay, as in TensorBoard.
  ASSERT_EQ(h.buckets.size(), 5u);
  EXPECT_EQ(h.buckets.front().left, -1.0);
  EXPECT_EQ(h.buckets.front().count, 1.0);
  EXPECT_EQ(h.buckets[1].count, 0.0);
  EXPECT_EQ(h.buckets[2].count, 2.0);
  EXPECT_LT(h.buckets[2].left, 0.5);
  EXPECT_GT(h.buckets[2].right, 0.5);
  EXPECT_EQ(h.buckets.back().right, 2.0);
  for (size_t i = 1; i < h.buckets.size(); ++i) EXPECT_EQ(h.buckets[i].left, h.buckets[i - 1].right);

  const ImageEvent& image = run.Images("digits/image").back();
  EXPECT_EQ(image.width, 5);
  EXPECT_EQ(image.height, 4);
  EXPECT_EQ(image.encoded_image.substr(1, 3), "PNG");
  EXPECT_EQ(run.Audio("beep/audio/0").back().length_frames, 3);
  EXPECT_EQ(run.Tensors("notes").back().tensor.string_val(0), "hello");
  // FileWriter keeps metadata only the first time; the first one is what counts.
  ASSERT_NE(run.SummaryMetadata("notes"), nullptr);
  EXPECT_EQ(run.SummaryMetadata("notes")->plugin_data().plugin_name(), "text");
}

TEST(EventAccumulator, ReloadReadsOnlyNewEvents) {
  const std::string logdir = MakeTempDir("reload");
  FileWriter writer(logdir);
  EventAccumulator run(logdir);
  tensorflow::Summary s;
  auto* v = s.add_value();
  v->set_tag("loss");
  v->set_simple_value(1.0f);
  writer.AddSummary(s, 1);
  writer.Flush();
  run.Reload();
  EXPECT_EQ(run.Scalars("loss").size(), 1u);
  writer.AddSummary(s, 2);
  writer.AddSummary(s, 3);
  writer.Flush();
  run.Reload();
  EXPECT_EQ(Steps(run.Scalars("loss")), (std::vector<int64_t>{1, 2, 3}));
  run.Reload();
  EXPECT_EQ(run.Scalars("loss").size(), 3u);
}

// Writes a "loss" scalar for steps [first, first + count) into a new event file of `dir` and
// returns the file's path.
std::string WriteLossFile(const std::string& dir, int64_t first, int64_t count, const std::string& suffix) {
  FileWriter writer(dir, {.filename_suffix = suffix});
  for (int64_t step = first; step < first + count; ++step) {
    tensorflow::Summary s;
    auto* v = s.add_value();
    v->set_tag("loss");
    v->set_simple_value(static_cast<float>(step));
    writer.AddSummary(s, step);
  }
  writer.Close();
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().string().ends_with(suffix)) return entry.path().string();
  }
  ADD_FAILURE() << "FileWriter wrote no file ending in " << suffix;
  return "";
}

void FlipByte(const std::string& file, uint64_t offset) {
  std::string bytes = ReadFileToString(file);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x40);
  WriteFileAtomically(file, bytes);
}

TEST(EventAccumulator, CorruptRecordKeepsWhatCameBeforeAndTheOtherFiles) {
  const std::string logdir = MakeTempDir("corrupt");
  const std::string first = WriteLossFile(logdir, 0, 10, ".a");
  const std::string second = WriteLossFile(logdir, 10, 5, ".b");
  const std::vector<uint64_t> offsets = ::flowtrain::testing::RecordOffsets(first);
  ASSERT_EQ(offsets.size(), 11u);  // file_version + steps 0..9
  // A byte inside the payload of step 4's record (its 12-byte header is intact).
  FlipByte(first, offsets[5] + 14);

  EventAccumulator run(logdir);
  ASSERT_NO_THROW(run.Reload());
  EXPECT_EQ(Steps(run.Scalars("loss")), (std::vector<int64_t>{0, 1, 2, 3, 10, 11, 12, 13, 14}));
  ASSERT_EQ(run.corrupt_records().size(), 1u);
  const CorruptRecord& bad = run.corrupt_records()[0];
  EXPECT_EQ(bad.file, first);
  EXPECT_EQ(bad.offset, offsets[5]);
  EXPECT_THAT(bad.message, ::testing::HasSubstr(first));
  EXPECT_THAT(bad.message, ::testing::HasSubstr(StrCat("offset ", offsets[5])));
  EXPECT_THAT(bad.message, ::testing::HasSubstr("checksum mismatch"));
  EXPECT_TRUE(run.partial_records().empty());

  // Reloading neither re-reads the file past the corruption nor reports it twice.
  run.Reload();
  EXPECT_EQ(run.Scalars("loss").size(), 9u);
  EXPECT_EQ(run.corrupt_records().size(), 1u);
}

// A 60-byte event whose scalar-plugin tensor is [3e7] floats from one float_val was expanded
// (120 MB) before it was found not to be a scalar; [2^31, 2^31] is not expanded either, nor a
// histogram-plugin tensor of 10^8 rows.
TEST(EventAccumulator, TensorsThatAreNotScalarsAreNotExpanded) {
  const std::string file = MakeTempDir("hostile") + "/events.out.tfevents.1.host";
  {
    io::RecordWriter writer(file);
    auto write = [&](const std::string& tag, const std::string& plugin, std::vector<int64_t> dims) {
      tensorflow::Event event;
      event.set_step(dims[0]);
      auto* value = event.mutable_summary()->add_value();
      value->set_tag(tag);
      value->mutable_metadata()->mutable_plugin_data()->set_plugin_name(plugin);
      auto* tensor = value->mutable_tensor();
      tensor->set_dtype(tensorflow::DT_FLOAT);
      for (const int64_t size : dims) tensor->mutable_tensor_shape()->add_dim()->set_size(size);
      tensor->add_float_val(1.0f);
      writer.WriteRecord(event.SerializeAsString());
    };
    write("x", "scalars", {30'000'000});
    write("x", "scalars", {int64_t{1} << 31, int64_t{1} << 31});
    // A histogram of 10^8 buckets (2.4 GB of buckets) from one float_val.
    write("h", "histograms", {100'000'000, 3});
    writer.Close();
  }
  ReleaseCachedMemory();
  const AllocatorStats before = DefaultAllocatorStats();
  EventAccumulator run(file);
  run.Reload();
  const AllocatorStats after = DefaultAllocatorStats();
  EXPECT_LT(after.bytes_cached + after.bytes_in_use - before.bytes_cached - before.bytes_in_use, 16 << 20);
  EXPECT_TRUE(run.GetTags().scalars.empty());
  ASSERT_EQ(run.Tensors("x").size(), 2u);  // kept as tensors, as TensorBoard keeps them
  EXPECT_TRUE(run.GetTags().histograms.empty());
  ASSERT_EQ(run.Tensors("h").size(), 1u);
  EXPECT_TRUE(run.corrupt_records().empty());
}

TEST(EventAccumulator, CorruptLengthAndNonEventRecordsAreReportedToo) {
  const std::string logdir = MakeTempDir("corrupt_header");
  const std::string file = WriteLossFile(logdir, 0, 3, ".a");
  const std::vector<uint64_t> offsets = ::flowtrain::testing::RecordOffsets(file);
  FlipByte(file, offsets[2]);  // step 1's length field
  EventAccumulator run(file);
  run.Reload();
  EXPECT_EQ(Steps(run.Scalars("loss")), (std::vector<int64_t>{0}));
  ASSERT_EQ(run.corrupt_records().size(), 1u);
  EXPECT_EQ(run.corrupt_records()[0].offset, offsets[2]);
  EXPECT_THAT(run.corrupt_records()[0].message, ::testing::HasSubstr("length checksum mismatch"));

  // Intact records whose second one is not an Event (field 1 with the invalid wire type 7).
  const std::string odd = logdir + "/events.out.tfevents.1.host.odd";
  uint64_t second_record = 0;
  {
    io::RecordWriter writer(odd);
    tensorflow::Event version;
    version.set_file_version("brain.Event:2");
    writer.WriteRecord(version.SerializeAsString());
    second_record = 12 + version.ByteSizeLong() + 4;  // header, payload, footer
    writer.WriteRecord("\x0f\x0f\x0f");
    writer.Close();
  }
  EventAccumulator odd_run(odd);
  odd_run.Reload();
  EXPECT_EQ(odd_run.file_version(), 2.0);
  ASSERT_EQ(odd_run.corrupt_records().size(), 1u);
  EXPECT_EQ(odd_run.corrupt_records()[0].offset, second_record);
  EXPECT_THAT(odd_run.corrupt_records()[0].message, ::testing::HasSubstr("is not a tensorflow.Event"));
}

TEST(EventAccumulator, UnfinishedLastRecordIsPartialNotCorrupt) {
  const std::string logdir = MakeTempDir("partial");
  const std::string file = WriteLossFile(logdir, 0, 4, ".a");
  const std::string whole = ReadFileToString(file);
  const std::vector<uint64_t> offsets = ::flowtrain::testing::RecordOffsets(file);
  // A writer killed 7 bytes into step 3's record.
  WriteFileAtomically(file, whole.substr(0, offsets[4] + 7));

  EventAccumulator run(logdir);
  run.Reload();
  EXPECT_EQ(Steps(run.Scalars("loss")), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(run.corrupt_records().empty());
  ASSERT_EQ(run.partial_records().size(), 1u);
  EXPECT_EQ(run.partial_records()[0].file, file);
  EXPECT_EQ(run.partial_records()[0].offset, offsets[4]);
  EXPECT_EQ(run.partial_records()[0].bytes, 7u);

  // The writer was only slow: once the rest arrives the record is read.
  {
    std::ofstream out(file, std::ios::binary | std::ios::app);
    out << whole.substr(offsets[4] + 7);
  }
  run.Reload();
  EXPECT_EQ(Steps(run.Scalars("loss")), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_TRUE(run.partial_records().empty());
}

TEST(EventAccumulator, CorruptRunDoesNotHideTheOtherRuns) {
  const std::string logdir = MakeTempDir("corrupt_runs");
  std::filesystem::create_directories(logdir + "/train");
  std::filesystem::create_directories(logdir + "/eval");
  WriteLossFile(logdir + "/train", 0, 5, ".a");
  const std::string eval = WriteLossFile(logdir + "/eval", 0, 5, ".a");
  FlipByte(eval, ::flowtrain::testing::RecordOffsets(eval)[1] + 13);
  auto runs = LoadRuns(logdir);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].first, "eval");
  EXPECT_EQ(runs[0].second.corrupt_records().size(), 1u);
  EXPECT_TRUE(runs[0].second.GetTags().scalars.empty());
  EXPECT_EQ(runs[1].first, "train");
  EXPECT_TRUE(runs[1].second.corrupt_records().empty());
  EXPECT_EQ(runs[1].second.Scalars("loss").size(), 5u);
}

}  // namespace
}  // namespace flowtrain::summary
