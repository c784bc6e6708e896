// TextLineDataset and FixedLengthRecordDatasetV2 run in a session: plain and ZLIB/GZIP files,
// TF's line endings, the body-length error, and a save/restore of each iterator mid-file.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/io/compression.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain::data {
namespace {

// Writes `bytes` to `dir`/`name`, compressed as `compression` ("", "ZLIB", "GZIP").
std::string WriteFile(const std::string& dir, const std::string& name, const std::string& bytes,
                      const std::string& compression = "") {
  std::string contents = bytes;
  const io::CompressionType type = io::ParseCompressionType(compression);
  if (type != io::CompressionType::kNone) {
    contents.clear();
    io::StreamCompressor compressor(type);
    compressor.Compress(bytes, &contents);
    compressor.Finish(&contents);
  }
  const std::string path = JoinPath(dir, name);
  WriteFileAtomically(path, contents);
  return path;
}

std::vector<std::string> Drain(Session& sess, const std::vector<Output>& next) {
  std::vector<std::string> out;
  try {
    for (;;) out.push_back(sess.Run({}, next)[0].scalar<std::string>());
  } catch (const OutOfRangeError&) {
  }
  return out;
}

std::vector<std::string> ReadAll(const std::function<Dataset()>& build) {
  Graph g;
  auto as_default = g.AsDefault();
  Iterator it = build().MakeInitializableIterator();
  auto next = it.GetNext();
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  return Drain(sess, next);
}

// Saves after `taken` elements and restores into a fresh graph and session: the rest must be
// what an uninterrupted run gives.
void ExpectRestoreContinues(const std::function<Dataset()>& build, int taken) {
  const std::vector<std::string> all = ReadAll(build);
  ASSERT_GT(static_cast<int>(all.size()), taken);
  std::vector<std::string> seen;
  Tensor state;
  {
    Graph g;
    auto as_default = g.AsDefault();
    Iterator it = build().MakeInitializableIterator();
    auto next = it.GetNext();
    Output save = it.Serialize();
    Session sess(g);
    sess.Run({}, {}, {it.initializer()});
    for (int i = 0; i < taken; ++i) seen.push_back(sess.Run({}, next)[0].scalar<std::string>());
    state = sess.Run({}, {save})[0];
  }
  Graph g;
  auto as_default = g.AsDefault();
  Iterator it = build().MakeInitializableIterator();
  auto next = it.GetNext();
  Output state_in = ops::Placeholder(DT_STRING, PartialTensorShape({}), "state");
  Operation restore = it.Deserialize(state_in);
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  sess.Run({{state_in, state}}, {}, {restore});
  const std::vector<std::string> rest = Drain(sess, next);
  seen.insert(seen.end(), rest.begin(), rest.end());
  EXPECT_EQ(seen, all);
}

using Strings = std::vector<std::string>;

TEST(TextLineDataset, ReadsLinesAsTfDoes) {
  const std::string dir = testing::MakeTempDir("text_line");
  const std::string a = WriteFile(dir, "a.txt", "one\ntwo\r\nth\rree\n\nlast");
  const std::string b = WriteFile(dir, "b.txt", "x\n");
  const std::string empty = WriteFile(dir, "empty.txt", "");
  EXPECT_EQ(ReadAll([&] {
              return Dataset::TextLine({a, b, empty});
            }),
            (Strings{"one", "two", "three", "", "last", "x"}));
  // A buffer smaller than a line: lines span reads.
  EXPECT_EQ(ReadAll([&] { return Dataset::TextLine({a}, "", 2); }),
            (Strings{"one", "two", "three", "", "last"}));
  const std::string gz = WriteFile(dir, "a.gz", "g1\ng2\n", "GZIP");
  const std::string z = WriteFile(dir, "a.z", "z1\r\nz2", "ZLIB");
  EXPECT_EQ(ReadAll([&] { return Dataset::TextLine({gz}, "GZIP"); }), (Strings{"g1", "g2"}));
  EXPECT_EQ(ReadAll([&] { return Dataset::TextLine({z}, "ZLIB", 3); }), (Strings{"z1", "z2"}));
  EXPECT_THROW(ReadAll([&] { return Dataset::TextLine({JoinPath(dir, "absent.txt")}); }), NotFoundError);
}

TEST(TextLineDataset, RestoresItsPositionMidFile) {
  const std::string dir = testing::MakeTempDir("text_line_restore");
  std::string text;
  for (int i = 0; i < 50; ++i) text += "line " + std::to_string(i) + "\r\n";
  const Strings plain = {WriteFile(dir, "a.txt", text), WriteFile(dir, "b.txt", text)};
  const Strings gzip = {WriteFile(dir, "a.gz", text, "GZIP"), WriteFile(dir, "b.gz", text, "GZIP")};
  for (int taken : {0, 7, 50, 73}) {
    SCOPED_TRACE(taken);
    ExpectRestoreContinues([&] { return Dataset::TextLine(plain, "", 16); }, taken);
    ExpectRestoreContinues([&] { return Dataset::TextLine(gzip, "GZIP", 16); }, taken);
  }
}

TEST(FixedLengthRecordDataset, ReadsRecordsBetweenHeaderAndFooter) {
  const std::string dir = testing::MakeTempDir("fixed_length");
  const std::string f = WriteFile(dir, "f.bin", "HHabcdefFF");
  const std::string g = WriteFile(dir, "g.bin", "HHxyzFF");
  EXPECT_EQ(ReadAll([&] {
              return Dataset::FixedLengthRecord({f, g}, 3, {.header_bytes = 2, .footer_bytes = 2});
            }),
            (Strings{"abc", "def", "xyz"}));
  const std::string gz = WriteFile(dir, "f.gz", "HHabcdefFF", "GZIP");
  EXPECT_EQ(ReadAll([&] {
              return Dataset::FixedLengthRecord(
                  {gz}, 3,
                  {.header_bytes = 2, .footer_bytes = 2, .buffer_size = 1, .compression_type = "GZIP"});
            }),
            (Strings{"abc", "def"}));
  const std::string z = WriteFile(dir, "f.z", "abcdef", "ZLIB");
  EXPECT_EQ(ReadAll([&] { return Dataset::FixedLengthRecord({z}, 2, {.compression_type = "ZLIB"}); }),
            (Strings{"ab", "cd", "ef"}));
}

TEST(FixedLengthRecordDataset, BodyNotWholeRecordsIsTfsError) {
  const std::string dir = testing::MakeTempDir("fixed_length_errors");
  const std::string f = WriteFile(dir, "f.bin", "HHabcdefFF");
  auto message = [&](const std::function<Dataset()>& build) -> std::string {
    try {
      ReadAll(build);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string want =
      "Excluding the header (2 bytes) and footer (2 bytes), input file \"" + f +
      "\" has body length 6 bytes, which is not an exact multiple of the record length (4 "
      "bytes).";
  EXPECT_THROW(
      ReadAll([&] { return Dataset::FixedLengthRecord({f}, 4, {.header_bytes = 2, .footer_bytes = 2}); }),
      InvalidArgumentError);
  EXPECT_NE(message([&] {
              return Dataset::FixedLengthRecord({f}, 4, {.header_bytes = 2, .footer_bytes = 2});
            }).find(want),
            std::string::npos);
  const std::string gz = WriteFile(dir, "f.gz", "HHabcdefgFF", "GZIP");
  auto compressed = [&] {
    return Dataset::FixedLengthRecord({gz}, 3,
                                      {.header_bytes = 2, .footer_bytes = 2, .compression_type = "GZIP"});
  };
  EXPECT_THROW(ReadAll(compressed), DataLossError);
  EXPECT_NE(message(compressed).find("has body length 7 bytes"), std::string::npos) << message(compressed);
}

TEST(FixedLengthRecordDataset, RestoresItsPositionMidFile) {
  const std::string dir = testing::MakeTempDir("fixed_length_restore");
  std::string body = "HEAD";
  for (int i = 0; i < 30; ++i) body += "r" + std::to_string(100 + i);
  body += "FOOT";
  const Strings plain = {WriteFile(dir, "a.bin", body), WriteFile(dir, "b.bin", body)};
  const Strings zlib = {WriteFile(dir, "a.z", body, "ZLIB"), WriteFile(dir, "b.z", body, "ZLIB")};
  for (int taken : {0, 5, 30, 41}) {
    SCOPED_TRACE(taken);
    ExpectRestoreContinues(
        [&] { return Dataset::FixedLengthRecord(plain, 4, {.header_bytes = 4, .footer_bytes = 4}); }, taken);
    ExpectRestoreContinues(
        [&] {
          return Dataset::FixedLengthRecord(
              zlib, 4, {.header_bytes = 4, .footer_bytes = 4, .buffer_size = 7, .compression_type = "ZLIB"});
        },
        taken);
  }
}

// TF 2.x writes `metadata` on every dataset op: accepted on import, and at its default left out
// of the GraphDefs flowtrain writes (TF 1.15 has no such attr).
TEST(TextLineDataset, TakesTf2sMetadataAttr) {
  const std::string file = WriteFile(testing::MakeTempDir("text_line_metadata"), "a.txt", "p\nq\n");
  Graph g;
  std::string init, next;
  {
    auto as_default = g.AsDefault();
    Iterator it = Dataset::TextLine({file}).MakeInitializableIterator();
    init = it.initializer().name();
    next = it.GetNext()[0].op().name();
  }
  tensorflow::GraphDef def = g.ToGraphDef();
  int found = 0;
  for (tensorflow::NodeDef& node : *def.mutable_node()) {
    if (node.op() != "TextLineDataset") continue;
    ++found;
    EXPECT_EQ(node.attr().count("metadata"), 0u);
    (*node.mutable_attr())["metadata"].set_s("\n\x0etf2_dataset");
  }
  ASSERT_EQ(found, 1);
  Graph imported;
  ImportGraphDef(def, &imported);
  Session sess(imported);
  sess.Run(std::vector<std::pair<std::string, Tensor>>{}, {}, {init});
  EXPECT_EQ(sess.Run({}, {next + ":0"}, {})[0].scalar<std::string>(), "p");
}

}  // namespace
}  // namespace flowtrain::data
