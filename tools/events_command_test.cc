// Runs the built `flowtrain events` command on TF-written fixtures and on a logdir written by
// FileWriter, checking what a user sees.
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/event_file_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/summary/file_writer.h"
#include "flowtrain/summary/summary.h"
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

int Count(const std::string& text, const std::string& piece) {
  int n = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++n;
  return n;
}

// A page that needs nothing but itself: no scripts, no links, every src a data: URI.
void ExpectSelfContained(const std::string& html) {
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("href=")));
  EXPECT_EQ(Count(html, "src="), Count(html, "src=\"data:"));
}

std::string OnlyEventFile(const std::string& dir) {
  const std::vector<std::string> names = ListDirectory(dir);
  EXPECT_EQ(names.size(), 1u) << dir;
  return names.empty() ? "" : JoinPath(dir, names[0]);
}

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
  EXPECT_THAT(html, HasSubstr("</span> train</h3>"));
  EXPECT_THAT(html, HasSubstr("<h4>loss (scalar, latest 6 at step 40)</h4>"));
  EXPECT_THAT(html, HasSubstr("<h4>weights (histogram, 5 steps)</h4>"));
  EXPECT_THAT(html, HasSubstr("<polyline"));
  // Round ticks: steps 0..40 by 10, loss 6..10 by 1.
  for (const char* tick :
       {">0</text>", ">10</text>", ">20</text>", ">40</text>", ">6</text>", ">7</text>", ">10</text>"}) {
    EXPECT_THAT(html, HasSubstr(tick));
  }
  ExpectSelfContained(html);
}

// A logdir as a train job and its evaluator leave it: runs train and eval, each with loss, a
// histogram of ReLU activations (half zeros) and an image summary, from the summary ops.
std::string WriteTrainAndEval() {
  const std::string logdir = MakeTempDir("train_eval");
  for (const std::string run : {"train", "eval"}) {
    Graph g;
    auto as_default = g.AsDefault();
    Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
    Scalar("loss", ops::Mul(x, ops::Const<float>(run == "train" ? 1.0f : 1.5f)));
    std::vector<float> pre;
    for (int i = 0; i < 200; ++i) pre.push_back(-1.0f + i / 100.0f);
    Histogram("activations", ops::Relu(ops::Mul(ops::Const<float>(pre, TensorShape({200})), x)));
    std::vector<uint8_t> pixels(3 * 4 * 1);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(20 * i);
    Image("digits", ops::Const<uint8_t>(pixels, TensorShape({1, 3, 4, 1})));
    Output merged = MergeAll();
    Session sess(g);
    FileWriter writer(logdir + "/" + run);
    for (int64_t step = 0; step <= 200; step += 50) {
      const float loss = 2.0f / (1.0f + step / 50.0f);
      writer.AddSummary(sess.Run({{x, Tensor::Scalar<float>(loss)}}, {merged})[0].scalar<std::string>(),
                        step);
    }
  }
  return logdir;
}

TEST_F(EventsCommandTest, HtmlOverlaysRunsWithALegendAndEmbedsImages) {
  const std::string logdir = WriteTrainAndEval();
  const std::string page = logdir + "/report.html";
  const CliResult r = RunEvents(logdir + " --html " + page);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string html = ReadFileToString(page);
  // One loss chart holding both runs, eval listed first as the runs are sorted, with a legend.
  EXPECT_THAT(html, HasSubstr("<h4>loss (scalar, latest eval 0.6 at step 200; train 0.4 at step 200)</h4>"
                              "<div class=\"legend\"><span><i style=\"background:#e8710a\"></i>eval</span>"
                              "<span><i style=\"background:#1967d2\"></i>train</span></div><svg"));
  EXPECT_EQ(Count(html, "(scalar,"), 1);
  EXPECT_EQ(Count(html, "<title>eval</title></polyline>"), 1);
  EXPECT_EQ(Count(html, "<title>train</title></polyline>"), 1);
  // Histograms and images per run, under one heading per tag kind.
  EXPECT_EQ(Count(html, "<h4>activations (histogram, 5 steps)</h4>"), 2);
  EXPECT_EQ(Count(html, "<h4>digits/image/0 (image, 5 steps)</h4>"), 2);
  // Every step's PNG as a data: URI, one button per step to pick it, the latest picked.
  EXPECT_EQ(Count(html, "src=\"data:image/png;base64,iVBORw0KGgo"), 10);
  EXPECT_EQ(Count(html, "<input type=\"radio\""), 10);
  EXPECT_EQ(Count(html, " checked>"), 2);
  EXPECT_THAT(html, HasSubstr("<input type=\"radio\" name=\"image0\" id=\"image0-4\" checked>"
                              "<label for=\"image0-4\">step 200</label><figure>"));
  EXPECT_THAT(html, HasSubstr("<label for=\"image1-0\">step 0</label>"));
  EXPECT_THAT(html, HasSubstr("<figcaption>step 200 (4x3)</figcaption></figure></div>"));
  EXPECT_THAT(html, HasSubstr(".steps input:nth-of-type(5):checked~figure:nth-of-type(5){display:block}"));
  ExpectSelfContained(html);
}

TEST_F(EventsCommandTest, HistogramsAreDrawnOnUniformBinsNotAsDensity) {
  const std::string logdir = WriteTrainAndEval();
  const std::string page = logdir + "/report.html";
  ASSERT_EQ(RunEvents(logdir + " --html " + page).exit_code, 0);
  const std::string html = ReadFileToString(page);
  // Count per bin: the y axis of the ReLU histograms reaches about the number of zeros (100 of
  // 200 values, plus the few small positive ones in the first bin), not the 1e14 that count /
  // width of TF's 1e-12-wide zero bucket gives.
  const size_t chart = html.find("<h4>activations (histogram");
  ASSERT_NE(chart, std::string::npos);
  const std::string svg = html.substr(chart, html.find("</svg>", chart) - chart);
  EXPECT_THAT(svg, HasSubstr(">120</text>"));
  EXPECT_THAT(svg, Not(HasSubstr("e+")));
  // 30 bins: each step's line has 30 points.
  const size_t points = svg.find("points=\"");
  ASSERT_NE(points, std::string::npos);
  const std::string line = svg.substr(points + 8, svg.find('"', points + 8) - points - 8);
  EXPECT_EQ(Count(line, ","), 30);

  // The text form: the latest step on the same bins, its first bin (the zeros) the tallest.
  const CliResult r = RunEvents(logdir + " --tag activations");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("step 200 on 30 bins over [0, 1.98]: █▂"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("  \\(tallest 11[0-9.]+\\)"));
}

TEST_F(EventsCommandTest, CorruptRecordIsReportedAndEverythingElseShown) {
  const std::string logdir = WriteTrainAndEval();
  const std::string eval = OnlyEventFile(logdir + "/eval");
  // Flip a byte inside the payload of the third record (after file_version and step 0: step
  // 50's summary).
  std::string bytes = ReadFileToString(eval);
  const std::vector<uint64_t> offsets = ::flowtrain::testing::RecordOffsets(eval);
  ASSERT_EQ(offsets.size(), 6u);
  bytes[offsets[2] + 20] ^= 0x01;
  WriteFileAtomically(eval, bytes);

  CliResult r = RunEvents(logdir);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(StrCat("run eval: Corrupted record in '", eval, "' at offset ", offsets[2],
                                         ": payload checksum mismatch")));
  EXPECT_THAT(r.output, HasSubstr("the events before it are shown, the rest of that file is not"));
  // eval's step 0 and train's whole run are still there.
  EXPECT_THAT(r.output, ::testing::ContainsRegex("Run eval .*\n(.*\n)*    loss +1  0 +3 "));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("Run train .*\n(.*\n)*    loss +5  0..200 +0.4 "));
  EXPECT_THAT(r.output, HasSubstr("DataLoss: 1 event file has an unreadable record (see above)"));

  const std::string page = logdir + "/report.html";
  r = RunEvents(logdir + " --html " + page);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string html = ReadFileToString(page);
  EXPECT_THAT(html, HasSubstr(StrCat("<li class=\"error\">Corrupted record in '", eval, "' at offset ",
                                     offsets[2], ": payload checksum mismatch")));
  EXPECT_THAT(html, HasSubstr("<title>train</title></polyline>"));
}

TEST_F(EventsCommandTest, UnfinishedLastRecordIsANoteNotAnError) {
  const std::string logdir = WriteTrainAndEval();
  const std::string train = OnlyEventFile(logdir + "/train");
  const std::string bytes = ReadFileToString(train);
  const std::vector<uint64_t> offsets = ::flowtrain::testing::RecordOffsets(train);
  WriteFileAtomically(train, bytes.substr(0, offsets.back() + 30));  // killed mid-record

  const CliResult r = RunEvents(logdir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(StrCat("run train: ", train,
                                         " ends in an unfinished record (30 bytes at offset ", offsets.back(),
                                         "): its writer is still running or was stopped while writing")));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("Run train .*\n(.*\n)*    loss +4  0..150 "));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("Run eval .*\n(.*\n)*    loss +5  0..200 "));
}

}  // namespace
}  // namespace flowtrain::summary
