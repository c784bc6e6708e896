// tf.data between flowtrain and TF, both ways (interop/check_datasets.py holds TF's side):
// file caches written by one system are replayed by the other, TF's feedable-iterator MetaGraph
// runs in flowtrain to TF's values, flowtrain's GraphDef of a ShuffleAndRepeat pipeline behind a
// feedable iterator runs in TF to flowtrain's order, and shuffles give TF's order in flowtrain.
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/ops/parsing_ops.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/meta_graph.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The next element's first component as text, or "end" at OutOfRange.
std::string NextOrEnd(const std::function<Tensor()>& run) {
  try {
    return std::to_string(run().scalar<int64_t>());
  } catch (const OutOfRangeError&) {
    return "end";
  }
}

TEST(DatasetInterop, FlowtrainReplaysTfsCacheAndRunsTfsFeedableIterator) {
  const std::string dir = MakeTempDir("datasets_tf");
  PythonRun r = RunTfPython({TfScript("interop/check_datasets.py"), "--mode", "write_tf", "--dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  {
    // A pipeline over other data with TF's cache file replays TF's elements.
    Graph g;
    auto as_default = g.AsDefault();
    data::Dataset other = data::Dataset::FromTensorSlices(
        std::vector<Tensor>{Tensor::FromVector<int64_t>({7}), Tensor::FromVector<std::string>({"other"})});
    data::Iterator it = other.Cache(dir + "/tf_cache").MakeInitializableIterator();
    auto next = it.GetNext();
    Session sess(g);
    sess.Run({}, {}, {it.initializer()});
    for (int64_t x = 0; x < 5; ++x) {
      const std::vector<Tensor> e = sess.Run({}, next);
      EXPECT_EQ(e[0].scalar<int64_t>(), x * 10);
      EXPECT_EQ(e[1].scalar<std::string>(), "tf-" + std::to_string(x));
    }
    EXPECT_THROW(sess.Run({}, next), OutOfRangeError);
  }
  std::ifstream in(dir + "/feedable.txt");
  std::vector<std::vector<std::string>> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(Words(line));
  ASSERT_EQ(lines.size(), 5u) << r.output;
  Graph g;
  train::ImportMetaGraph(dir + "/feedable.meta", &g);
  Session sess(g);
  sess.Run({}, {}, lines[0]);
  const std::vector<Tensor> handles = sess.Run({}, lines[1], {});
  std::vector<std::string> got;
  for (const std::string& which : lines[3]) {
    const Tensor& h = handles[which == "a" ? 0 : 1];
    got.push_back(NextOrEnd([&] { return sess.Run({{lines[2][0], h}}, {lines[2][1]}, {})[0]; }));
  }
  EXPECT_EQ(got, lines[4]);

  // TF's map_and_batch (MapAndBatchDataset over a library function capturing a tensor).
  std::ifstream batches_in(dir + "/map_and_batch.txt");
  std::string header;
  ASSERT_TRUE(std::getline(batches_in, header)) << r.output;
  const std::vector<std::string> names = Words(header);
  ASSERT_EQ(names.size(), 3u);
  Graph mb;
  train::ImportMetaGraph(dir + "/map_and_batch.meta", &mb);
  Session mb_sess(mb);
  mb_sess.Run({}, {}, {names[0]});
  int batches = 0;
  for (std::string want; std::getline(batches_in, want); ++batches) {
    const std::vector<Tensor> batch = mb_sess.Run({}, {names[1], names[2]}, {});
    std::string line;
    for (int64_t v : Values<int64_t>(batch[0])) line += std::to_string(v) + " ";
    line += "|";
    for (float v : Values<float>(batch[1])) {
      char text[32];
      std::snprintf(text, sizeof text, " %g", v);
      line += text;
    }
    EXPECT_EQ(line, want);
  }
  EXPECT_EQ(batches, 3);
  EXPECT_THROW(mb_sess.Run({}, {names[1]}, {}), OutOfRangeError);
}

TEST(DatasetInterop, TfReplaysFlowtrainsCacheAndRunsItsShuffleAndRepeatBehindAFeedableIterator) {
  const std::string dir = MakeTempDir("datasets_ft");
  std::string cache_json;
  {
    Graph g;
    auto as_default = g.AsDefault();
    data::Dataset ds = data::Dataset::FromTensorSlices(std::vector<Tensor>{
        Tensor::FromVector<int64_t>({3, 1, 4}), Tensor::FromVector<std::string>({"ft-a", "ft-b", "ft-c"})});
    data::Iterator it = ds.Cache(dir + "/ft_cache").MakeInitializableIterator();
    auto next = it.GetNext();
    Session sess(g);
    sess.Run({}, {}, {it.initializer()});
    for (;;) {
      try {
        const std::vector<Tensor> e = sess.Run({}, next);
        cache_json += StrCat(cache_json.empty() ? "" : ",", "[", e[0].scalar<int64_t>(), ",\"",
                             e[1].scalar<std::string>(), "\"]");
      } catch (const OutOfRangeError&) {
        break;
      }
    }
  }
  ASSERT_TRUE(FileExists(dir + "/ft_cache.index"));

  Graph g;
  auto as_default = g.AsDefault();
  data::Dataset shuffled = data::Dataset::Range(0, 6).ShuffleAndRepeat(4, 3, 5);
  data::Dataset plain = data::Dataset::Range(100, 102);
  data::Iterator a = shuffled.MakeInitializableIterator();
  data::Iterator b = plain.MakeInitializableIterator();
  Output ha = a.StringHandle(), hb = b.StringHandle();
  Output handle = ops::Placeholder(DT_STRING, PartialTensorShape({}), "handle");
  auto next =
      data::Iterator::FromStringHandle(handle, shuffled.output_types(), shuffled.output_shapes()).GetNext();
  // All 18 shuffled elements and the end, with the second iterator's in between.
  std::vector<std::string> order = {"a", "a", "a", "a", "a", "b", "a", "a", "a", "a", "a", "b"};
  for (int i = 0; i < 9; ++i) order.push_back("a");
  order.push_back("b");
  Session sess(g);
  sess.Run({}, {}, {a.initializer(), b.initializer()});
  const std::vector<Tensor> handles = sess.Run({}, {ha, hb});
  std::vector<std::string> values;
  for (const std::string& which : order) {
    values.push_back(NextOrEnd([&] { return sess.Run({{handle, handles[which == "a" ? 0 : 1]}}, next)[0]; }));
  }
  EXPECT_EQ(values.back(), "end");
  std::ofstream(dir + "/ft_graph.pb", std::ios::binary) << g.ToGraphDef().SerializeAsString();
  auto quoted = [](const std::vector<std::string>& v, bool as_numbers) {
    std::string out;
    for (const std::string& s : v) {
      out += out.empty() ? "" : ",";
      out += as_numbers ? (s == "end" ? "null" : s) : "\"" + s + "\"";
    }
    return "[" + out + "]";
  };
  std::ofstream(dir + "/ft_expected.json")
      << "{\"cache\":[" << cache_json
      << "],\"initializers\":" << quoted({a.initializer().name(), b.initializer().name()}, false)
      << ",\"handles\":" << quoted({ha.name(), hb.name()}, false) << ",\"placeholder\":\"" << handle.name()
      << "\",\"next\":\"" << next[0].name() << "\",\"order\":" << quoted(order, false)
      << ",\"values\":" << quoted(values, true) << "}";
  PythonRun r = RunTfPython({TfScript("interop/check_datasets.py"), "--mode", "check", "--dir", dir});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// DecodeCSV's values and errors are TF's: 400 records drawn from fields that hit each rule
// (spaces, signs, quotes, doubled quotes, the na_value, overflow, inf, bad quoting, too few or
// too many fields), decoded by flowtrain and, from flowtrain's GraphDef, by TF.
TEST(DatasetInterop, TfRunsFlowtrainsDecodeCsvGraphToTheSameValuesAndErrors) {
  Graph g;
  auto as_default = g.AsDefault();
  Output records = ops::Placeholder(DT_STRING, PartialTensorShape({-1}), "records");
  std::vector<Output> columns = ops::DecodeCSV(
      records,
      {ops::Const(Tensor(DT_INT32, TensorShape({0}))), ops::Const(-1.5f), ops::Const(std::string("dflt"))},
      {.na_value = "NA"});
  const std::vector<std::string> pool = {
      "1",   " 2 ",   "-3", "+4",  "x",   "1.5",    "",     "\"7\"",       "\"q,1\"", "\"a\"\"b\"",
      "inf", "1e400", "NA", "nan", "a b", "\"open", "a\"b", "99999999999", "3\r"};
  const std::vector<std::vector<std::string>> valid = {
      {"1", " 2 ", "-3", "+4", "\"7\"", "0"},
      {"1.5", "inf", "nan", "1e400", "", "NA", " 2 ", "-0.25"},
      {"a b", "", "\"q,1\"", "\"a\"\"b\"", "x", "NA"}};
  std::mt19937 rng(20);
  Session sess(g);
  std::string records_text, results_text;
  int decoded = 0, refused = 0;
  for (int i = 0; i < 400; ++i) {
    // Mostly three fields, each mostly from its column's valid values.
    const int roll = std::uniform_int_distribution<int>(0, 9)(rng);
    const int n = roll == 0 ? 2 : roll == 1 ? 4 : 3;
    std::string record;
    for (int f = 0; f < n; ++f) {
      if (f > 0) record += ",";
      const auto& from = f < 3 && std::uniform_int_distribution<int>(0, 3)(rng) > 0 ? valid[f] : pool;
      record += from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
    }
    std::string result;
    try {
      const std::vector<Tensor> out =
          sess.Run({{records, Tensor::FromVector<std::string>({record})}}, columns);
      char value[64];
      std::snprintf(value, sizeof value, "%.9g", static_cast<double>(out[1].flat<float>()[0]));
      result = StrCat("ok ", out[0].flat<int32_t>()[0], " ", value, " ", Hex(out[2].flat<std::string>()[0]));
    } catch (const InvalidArgumentError& e) {
      // TF's text is flowtrain's up to where flowtrain adds the record and field.
      std::string message = e.what();
      message = message.substr(0, message.find('\n'));
      message = message.substr(message.find(": ") == std::string::npos ? 0 : message.find(": ") + 2);
      result = "error " + message.substr(0, message.find(" (record"));
    }
    ++(result.starts_with("ok") ? decoded : refused);
    records_text += Hex(record) + "\n";
    results_text += result + "\n";
  }
  EXPECT_GE(decoded, 40);  // both kinds are well represented
  EXPECT_GE(refused, 40);
  std::printf("%d records decoded, %d refused\n", decoded, refused);
  const std::string dir = MakeTempDir("csv_tf");
  WriteFileAtomically(dir + "/csv_records.txt", records_text);
  WriteFileAtomically(dir + "/csv_results.txt", results_text);
  WriteFileAtomically(dir + "/csv_graph.pb", g.ToGraphDef().SerializeAsString());
  PythonRun r = RunTfPython({TfScript("interop/check_datasets.py"), "--mode", "check_csv", "--dir", dir});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// One line of shuffles.txt (see check_datasets.py --mode write_shuffles).
struct ShuffleCase {
  std::vector<std::string> fields;  // name .. next
  std::vector<std::string> passes[2];
  std::optional<int64_t> Seed(int i) const {
    return fields[i] == "none" ? std::nullopt : std::optional<int64_t>(std::stoll(fields[i]));
  }
  int64_t Int(int i) const { return std::stoll(fields[i]); }
};

// Runs the initializer and then `next` to the end, twice: the elements of each pass.
void RunTwice(Session& sess, const std::string& initializer, const std::string& next,
              std::vector<std::string> (&passes)[2]) {
  for (auto& pass : passes) {
    sess.Run({}, {}, {initializer});
    for (std::string v; (v = NextOrEnd([&] { return sess.Run({}, {next}, {})[0]; })) != "end";) {
      pass.push_back(v);
    }
  }
}

// Issue #20's proof for shuffles: for each case TF's element order is flowtrain's, both from
// flowtrain's builder given the same graph and op seeds and from TF's GraphDef; and running the
// initializer again restarts the same sequence of orders in both.
TEST(DatasetInterop, ShuffleYieldsTfsOrderFromOurBuilderAndFromTfsGraphDef) {
  const std::string dir = MakeTempDir("datasets_shuffle");
  PythonRun r =
      RunTfPython({TfScript("interop/check_datasets.py"), "--mode", "write_shuffles", "--dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(dir + "/shuffles.txt");
  std::vector<ShuffleCase> cases;
  for (std::string line; std::getline(in, line);) {
    ShuffleCase c;
    int part = -1;
    for (const std::string& w : Words(line)) {
      if (w == "|") {
        ++part;
      } else {
        (part < 0 ? c.fields : c.passes[part]).push_back(w);
      }
    }
    ASSERT_EQ(c.fields.size(), 11u) << line;
    cases.push_back(std::move(c));
  }
  ASSERT_EQ(cases.size(), 13u) << r.output;
  for (const ShuffleCase& c : cases) {
    const std::string& name = c.fields[0];
    ASSERT_FALSE(c.passes[0].empty()) << name;
    EXPECT_EQ(c.passes[0], c.passes[1]) << name << ": TF restarted elsewhere";
    {
      Graph g;
      auto as_default = g.AsDefault();
      if (const auto graph_seed = c.Seed(1)) g.set_seed(*graph_seed);
      data::Dataset ds = data::Dataset::Range(0, c.Int(4));
      if (c.fields[3] == "shuffle") {
        ds = ds.Shuffle(c.Int(5), c.Seed(2), c.Int(6) != 0).Repeat(c.Int(7));
      } else {
        ds = ds.ShuffleAndRepeat(c.Int(5), c.Int(7), c.Seed(2), c.Int(6) != 0);
      }
      if (c.Int(8) != -1) ds = ds.Take(c.Int(8));
      data::Iterator it = ds.MakeInitializableIterator();
      const Output next = it.GetNext()[0];
      Session sess(g);
      std::vector<std::string> ours[2];
      RunTwice(sess, it.initializer().name(), next.name(), ours);
      EXPECT_EQ(ours[0], c.passes[0]) << name << " from flowtrain's builder";
      EXPECT_EQ(ours[1], c.passes[1]) << name << " from flowtrain's builder, again";
    }
    Graph g;
    tensorflow::GraphDef graph_def;
    ASSERT_TRUE(graph_def.ParseFromString(ReadFileToString(dir + "/shuffle_" + name + ".pb"))) << name;
    ImportGraphDef(graph_def, &g);
    Session sess(g);
    std::vector<std::string> ours[2];
    RunTwice(sess, c.fields[9], c.fields[10], ours);
    EXPECT_EQ(ours[0], c.passes[0]) << name << " from TF's GraphDef";
    EXPECT_EQ(ours[1], c.passes[1]) << name << " from TF's GraphDef, again";
  }
}

}  // namespace
}  // namespace flowtrain::testing
