// The files TF 2.21's tf.data.TextLineDataset and tf.data.FixedLengthRecordDataset read (plain,
// GZIP and ZLIB; "\r\n" and stray '\r' in lines; headers and footers) read by flowtrain's
// TextLineDataset and FixedLengthRecordDatasetV2 to the same elements, and a body that is not
// whole records failing with TF's message (interop/file_datasets.py).
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

// One line of cases.txt, and the dataset it describes.
struct Case {
  std::string name, kind, compression;
  int64_t header = 0, record = 0, footer = 0;
  std::vector<std::string> files;

  static Case Parse(const std::string& line) {
    std::istringstream words(line);
    Case c;
    words >> c.name >> c.kind >> c.compression >> c.header >> c.record >> c.footer;
    if (c.compression == "-") c.compression.clear();
    for (std::string file; words >> file;) c.files.push_back(file);
    return c;
  }
  data::Dataset Make() const {
    if (kind == "text") return data::Dataset::TextLine(files, compression);
    return data::Dataset::FixedLengthRecord(
        files, record, {.header_bytes = header, .footer_bytes = footer, .compression_type = compression});
  }
};

std::vector<std::string> ReadAll(const Case& c) {
  Graph g;
  auto as_default = g.AsDefault();
  data::Iterator it = c.Make().MakeInitializableIterator();
  auto next = it.GetNext();
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  std::vector<std::string> out;
  try {
    for (;;) out.push_back(sess.Run({}, next)[0].scalar<std::string>());
  } catch (const OutOfRangeError&) {
  }
  return out;
}

class FileDatasetsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir("file_datasets"));
    python_ = new PythonRun(RunTfPython({TfScript("interop/file_datasets.py"), "--out", *dir_}));
  }
  static std::string* dir_;
  static PythonRun* python_;
};

std::string* FileDatasetsTest::dir_ = nullptr;
PythonRun* FileDatasetsTest::python_ = nullptr;

TEST_F(FileDatasetsTest, FlowtrainReadsTheElementsTfReads) {
  ASSERT_EQ(python_->exit_code, 0) << python_->output;
  const io::CheckpointReader results(JoinPath(*dir_, "results"));
  std::istringstream lines(ReadFileToString(JoinPath(*dir_, "cases.txt")));
  int checked = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const Case c = Case::Parse(line);
    const std::vector<std::string> want = Values<std::string>(results.GetTensor(c.name));
    EXPECT_FALSE(want.empty()) << c.name;
    EXPECT_EQ(ReadAll(c), want) << c.name;
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

TEST_F(FileDatasetsTest, BodyNotWholeRecordsIsTfsError) {
  ASSERT_EQ(python_->exit_code, 0) << python_->output;
  std::istringstream lines(ReadFileToString(JoinPath(*dir_, "errors.txt")));
  std::string line, tf_message;
  ASSERT_TRUE(std::getline(lines, line) && std::getline(lines, tf_message));
  std::string message = "no error";
  try {
    ReadAll(Case::Parse(line));
  } catch (const InvalidArgumentError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(tf_message), std::string::npos)
      << "TF: " << tf_message << "\nflowtrain: " << message;
}

}  // namespace
}  // namespace flowtrain::testing
