// Runs the built `flowtrain events` command on TF-written fixtures and on a logdir written by
// FileWriter, checking what a user sees.
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/summary/file_writer.h"
#include "tests/test_util.h"

namespace flowtrain::summary {
namespace {

using ::flowtrain::testing::CliResult;
using ::flowtrain::testing::FixturePath;
using ::flowtrain::testing::FlowtrainCliPath;
using ::flowtrain::testing::MakeTempDir;
using ::flowtrain::testing::RunFlowtrainCli;
using ::testing::HasSubstr;
using ::testing::Not;

// `flowtrain events ARGS`.
CliResult RunEvents(const std::string& args) { return RunFlowtrainCli("events " + args); }

class EventsCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(FlowtrainCliPath())) {
      GTEST_SKIP() << FlowtrainCliPath() << " was not built (configure with -DFLOWTRAIN_BUILD_EXAMPLES=ON)";
    }
  }
};

TEST_F(EventsCommandTest, OverviewOfATf1EstimatorRun) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const CliResult r = RunEvents("'" + FixturePath("tf1_estimator_model_dir") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("1 run"));
  EXPECT_THAT(r.output, HasSubstr("Run .  (2 event files)"));
  EXPECT_THAT(r.output, HasSubstr("graph: 293 nodes (graph_def + meta_graph_def)"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("checkpoint +4  steps 0..2000  last: model/model.ckpt"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("start +2  steps 1..1001"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("loss +20  1..1901 +8.27595e-08"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("global_step/sec +18  101..1901 +592.024"));
}

TEST_F(EventsCommandTest, TagPrintsTableAndSparkline) {
  FLOWTRAIN_REQUIRE_FIXTURES("events_tf2_scalar");
  const CliResult r = RunEvents("'" + FixturePath("events_tf2_scalar") + "' --tag my_metric");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("scalar my_metric (100 points)"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("\n +99  2020-03-29 [0-9:.]+  49.5\n"));
  // A straight line from 0 to 49.5: the sparkline climbs from the lowest to the highest block.
  EXPECT_THAT(r.output, HasSubstr("▁▁"));
  EXPECT_THAT(r.output, HasSubstr("██"));
  EXPECT_THAT(r.output, HasSubstr("min 0 at step 0, max 49.5 at step 99"));
}

TEST_F(EventsCommandTest, ClearErrors) {
  CliResult r = RunEvents("/nonexistent/logdir");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("Logdir /nonexistent/logdir does not exist"));

  const std::string empty = MakeTempDir("noevents");
  r = RunEvents(empty);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("No event files"));
}

TEST_F(EventsCommandTest, UnknownTagListsTheKnownTags) {
  FLOWTRAIN_REQUIRE_FIXTURES("tf1_estimator_model_dir");
  const CliResult r = RunEvents("'" + FixturePath("tf1_estimator_model_dir") + "' --tag accuracy");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("No scalar or histogram tag 'accuracy'"));
  EXPECT_THAT(r.output, HasSubstr("known tags: global_step/sec, loss"));
}

TEST_F(EventsCommandTest, GraphOnlyRuns) {
  FLOWTRAIN_REQUIRE_FIXTURES("events_tf1_graph");
  const CliResult r = RunEvents("'" + FixturePath("events_tf1_graph") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("4 runs"));
  EXPECT_THAT(r.output, HasSubstr("Run fahrenheit_converter  (1 event file)\n  graph: 78 nodes"));
}

TEST_F(EventsCommandTest, FileWriterLogdirAndHtml) {
  const std::string logdir = MakeTempDir("events_cmd");
  {
    FileWriter writer(logdir + "/train");
    for (int step = 0; step < 5; ++step) {
      tensorflow::Summary s;
      auto* loss = s.add_value();
      loss->set_tag("loss");
      loss->set_simple_value(10.0f - step);
      auto* h = s.add_value();
      h->set_tag("weights");
      auto* histo = h->mutable_histo();
      histo->set_min(-1);
      histo->set_max(1);
      histo->set_num(4);
      histo->set_sum(step);
      histo->set_sum_squares(4);
      for (double limit : {-0.5, 0.5, 1.5}) histo->add_bucket_limit(limit);
      for (double count : {1.0, 2.0, 1.0}) histo->add_bucket(count);
      writer.AddSummary(s, step * 10);
    }
  }
  CliResult r = RunEvents(logdir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Run train  (1 event file)"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("loss +5  0..40 +6  6 .. 10"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("weights +5  0..40 +4, 1, -1 .. 1"));

  r = RunEvents(logdir + " --tag weights");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("histogram weights (5 points)"));

  const std::string page = logdir + "/report.html";
  r = RunEvents(logdir + " --html " + page);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string html = ReadFileToString(page);
  EXPECT_THAT(html, HasSubstr("<h2>Run train</h2>"));
  EXPECT_THAT(html, HasSubstr("<h4>loss (scalar, latest 6 at step 40)</h4><svg"));
  EXPECT_THAT(html, HasSubstr("<h4>weights (histogram, 5 steps)</h4><svg"));
  EXPECT_THAT(html, HasSubstr("<polyline"));
  // Self-contained: no scripts, no fetched resources.
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("href=")));
}

}  // namespace
}  // namespace flowtrain::summary
