// flowtrain runs TensorFlow's corpus: for each model tests/tf/corpus/generate.py wrote with real
// TF (its GraphDef, MetaGraph, checkpoint and TF's own numbers), flowtrain
//   import     imports the binary and text GraphDef and the MetaGraphDef (binary and text);
//   restore    restores TF's checkpoint through the MetaGraph's SaverDef and reads back every
//              variable exactly as the checkpoint holds it;
//   forward    feeds TF's inputs and matches TF's outputs;
//   gradients  adds its OWN symbolic gradients (ops::Gradients) of the imported loss w.r.t. the
//              imported variables and matches TF's tf.gradients values (this checks
//              flowtrain's gradient functions, not TF's gradient graph);
//   train      runs the imported train op (TF's gradient graph and Apply ops) for TF's steps with
//              TF's per-step feeds, matching TF's loss at every step and the final variables.
// The seed program and the SavedModel have checks of their own (see their tests below).
//
// Comparison: floating-point tensors by the norm-wise relative error
//   max|a - b| / max(max|b|, 1e-6)        (a: flowtrain, b: TF)
// at most 1e-5 for float32 forward values, 1e-4 for float32 gradients and final variables,
// 1e-12 for float64 in every check, 1e-3 for half and 1e-2 for bfloat16 (whose one rounding
// may land on either side), and 1e-4 per step (|a - b| / max(|b|, 1e-6)) for losses. Integers, bools and
// strings must be equal; shapes and dtypes always.
//
// Checks that flowtrain cannot pass yet are listed in tests/tf/expected_failures.txt, one line
//   <model> <check> <feature> <needle> <reason...>
// <feature> is one of the features later issues bring (control-flow, rnn, sparse, batch-norm,
// saved-model, partitioned), <needle> must occur in flowtrain's error (usually the missing op
// type). The file is enforced strictly: a listed check that passes fails ("remove the entry"),
// an unlisted failure fails with flowtrain's error, and a check whose prerequisite failed
// (import -> restore -> forward/gradients/train) is not run and must not be listed.
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/core/tensor.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/graph/op_registry.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/proto/meta_graph.pb.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/saved_model/loader.h"
#include "flowtrain/train/meta_graph.h"
#include "flowtrain/train/monitored_training_session.h"
#include "flowtrain/train/saver.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain {
namespace {

namespace fs = std::filesystem;
using testing::TfCorpusDir;

// ---- files -------------------------------------------------------------------------------

std::string ReadFileOrFail(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    NotFound("cannot read ", path.string(), " (the TF corpus is written by ",
             "tests/tf/corpus/generate.py --out ", TfCorpusDir(),
             "; run the suite through ctest, whose tf_corpus fixture runs it)");
  }
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <typename Proto>
Proto ParseBinary(const fs::path& path) {
  Proto p;
  if (!p.ParseFromString(ReadFileOrFail(path))) DataLoss(path.string(), " does not parse");
  return p;
}

// Keeps the text parser's errors (for the failure message) and drops its warnings about the
// unknown fields it was told to skip.
class TextErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    errors += StrCat(line + 1, ":", column + 1, ": ", message, "\n");
  }
  void AddWarning(int, int, const std::string&) override {}
  std::string errors;
};

template <typename Proto>
Proto ParseText(const fs::path& path) {
  Proto p;
  // TF 2.x writes NodeDef.experimental_type (a FullTypeDef) that flowtrain's NodeDef does not
  // have; the binary parser skips unknown fields, the text parser is told to.
  google::protobuf::TextFormat::Parser parser;
  parser.AllowUnknownField(true);
  TextErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(ReadFileOrFail(path), &p)) {
    DataLoss(path.string(), " does not parse as text format: ", errors.errors);
  }
  return p;
}

// manifest.txt: "<directive> <words...>" lines (format in generate.py's docstring).
class Manifest {
 public:
  explicit Manifest(const fs::path& dir) {
    std::istringstream in(ReadFileOrFail(dir / "manifest.txt"));
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const size_t space = line.find(' ');
      const std::string key = line.substr(0, space);
      lines_[key].push_back(space == std::string::npos ? "" : line.substr(space + 1));
    }
  }
  const std::vector<std::string>& All(const std::string& key) const {
    static const std::vector<std::string> kNone;
    auto it = lines_.find(key);
    return it == lines_.end() ? kNone : it->second;
  }
  bool Has(const std::string& key) const { return lines_.contains(key); }
  const std::string& One(const std::string& key) const {
    const auto& all = All(key);
    if (all.size() != 1) {
      InvalidArgument("manifest: expected one '", key, "' line, found ", all.size());
    }
    return all[0];
  }

 private:
  std::map<std::string, std::vector<std::string>> lines_;
};

// ---- comparison --------------------------------------------------------------------------

bool IsFloating(DataType t) { return t == DT_FLOAT || t == DT_DOUBLE || t == DT_HALF || t == DT_BFLOAT16; }

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> out;
  out.reserve(t.NumElements());
  auto add = [&](auto tag) {
    using T = decltype(tag);
    for (const T& v : t.flat<T>()) out.push_back(static_cast<double>(static_cast<float>(v)));
  };
  switch (t.dtype()) {
    case DT_FLOAT:
      for (float v : t.flat<float>()) out.push_back(v);
      break;
    case DT_DOUBLE:
      for (double v : t.flat<double>()) out.push_back(v);
      break;
    case DT_HALF:
      add(half{});
      break;
    case DT_BFLOAT16:
      add(bfloat16{});
      break;
    default:
      Internal("AsDoubles: ", DataTypeString(t.dtype()));
  }
  return out;
}

// Empty when `a` (flowtrain) equals `b` (TF) as described at the top of this file.
template <typename T>
bool ExactlyEqual(const Tensor& a, const Tensor& b) {
  auto fa = a.flat<T>();
  auto fb = b.flat<T>();
  return std::equal(fa.begin(), fa.end(), fb.begin(), fb.end());
}

std::string Compare(const std::string& what, const Tensor& a, const Tensor& b, double float32_tolerance) {
  if (a.dtype() != b.dtype()) {
    return StrCat(what, ": dtype ", DataTypeString(a.dtype()), ", TF's is ", DataTypeString(b.dtype()));
  }
  if (a.shape() != b.shape()) {
    return StrCat(what, ": shape ", a.shape().DebugString(), ", TF's is ", b.shape().DebugString());
  }
  if (IsFloating(a.dtype())) {
    double tolerance = float32_tolerance;
    if (a.dtype() == DT_DOUBLE) tolerance = std::min(tolerance, 1e-12);
    if (a.dtype() == DT_HALF) tolerance = std::max(tolerance, 1e-3);
    if (a.dtype() == DT_BFLOAT16) tolerance = std::max(tolerance, 1e-2);
    const std::vector<double> va = AsDoubles(a), vb = AsDoubles(b);
    double diff = 0, scale = 1e-6;
    for (size_t i = 0; i < va.size(); ++i) {
      const double d = std::abs(va[i] - vb[i]);
      diff = std::isnan(d) ? INFINITY : std::max(diff, d);
      scale = std::max(scale, std::abs(vb[i]));
    }
    if (diff / scale <= tolerance) return "";
    return StrCat(what, ": relative error ", diff / scale, " > ", tolerance,
                  "\n  flowtrain: ", a.SummarizeValue(12), "\n  TF:        ", b.SummarizeValue(12));
  }
  bool equal = false;
  switch (a.dtype()) {
    case DT_STRING:
      equal = ExactlyEqual<std::string>(a, b);
      break;
    case DT_BOOL:
      equal = ExactlyEqual<bool>(a, b);
      break;
    case DT_INT8:
      equal = ExactlyEqual<int8_t>(a, b);
      break;
    case DT_INT16:
      equal = ExactlyEqual<int16_t>(a, b);
      break;
    case DT_INT32:
      equal = ExactlyEqual<int32_t>(a, b);
      break;
    case DT_INT64:
      equal = ExactlyEqual<int64_t>(a, b);
      break;
    case DT_UINT8:
      equal = ExactlyEqual<uint8_t>(a, b);
      break;
    case DT_UINT16:
      equal = ExactlyEqual<uint16_t>(a, b);
      break;
    case DT_UINT32:
      equal = ExactlyEqual<uint32_t>(a, b);
      break;
    case DT_UINT64:
      equal = ExactlyEqual<uint64_t>(a, b);
      break;
    default:
      return StrCat(what, ": cannot compare dtype ", DataTypeString(a.dtype()));
  }
  if (equal) return "";
  return StrCat(what, ": differs\n  flowtrain: ", a.SummarizeValue(12),
                "\n  TF:        ", b.SummarizeValue(12));
}

// ---- expected failures -------------------------------------------------------------------

struct ExpectedFailure {
  std::string feature, needle, reason;
  int line = 0;
};

const std::set<std::string>& AllowedFeatures() {
  static const std::set<std::string> kAllowed = {"control-flow", "rnn",         "sparse",
                                                 "batch-norm",   "saved-model", "partitioned"};
  return kAllowed;
}

using ExpectedFailures = std::map<std::pair<std::string, std::string>, ExpectedFailure>;

const ExpectedFailures& LoadExpectedFailures() {
  static const ExpectedFailures kEntries = [] {
    ExpectedFailures entries;
    const std::string path = testing::TfScript("expected_failures.txt");
    std::istringstream in(ReadFileOrFail(path));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream words(line);
      std::string model, check;
      ExpectedFailure e;
      e.line = n;
      words >> model >> check >> e.feature >> e.needle;
      std::getline(words, e.reason);
      if (e.needle.empty()) {
        InvalidArgument(path, ":", n, ": want '<model> <check> <feature> <needle> <reason>'");
      }
      if (!AllowedFeatures().contains(e.feature)) {
        InvalidArgument(path, ":", n, ": feature '", e.feature, "' may not be an expected ",
                        "failure (allowed: control-flow, rnn, sparse, batch-norm, saved-model, ",
                        "partitioned); implement what is missing instead");
      }
      if (!entries.emplace(std::pair(model, check), e).second) {
        InvalidArgument(path, ":", n, ": ", model, " ", check, " is listed twice");
      }
    }
    return entries;
  }();
  return kEntries;
}

// Runs the checks of one model in order, each after the ones it needs, and holds their results
// against the expected-failures file.
class CheckRunner {
 public:
  explicit CheckRunner(std::string model) : model_(std::move(model)) {}

  // `fn` returns "" on success or a mismatch; a thrown flowtrain Error is its failure too.
  void Run(const std::string& check, const std::vector<std::string>& needs,
           const std::function<std::string()>& fn) {
    seen_.insert(check);
    const auto& expected = LoadExpectedFailures();
    auto entry = expected.find({model_, check});
    for (const std::string& n : needs) {
      if (!passed_.contains(n)) {
        if (entry != expected.end()) {
          ADD_FAILURE() << model_ << " " << check << " is not run (it needs '" << n
                        << "', which failed), so it must not be listed (expected_failures.txt:"
                        << entry->second.line << ")";
        }
        std::cout << "[ SKIPPED  ] " << model_ << " " << check << ": needs " << n << "\n";
        return;
      }
    }
    std::string failure;
    try {
      failure = fn();
    } catch (const Error& e) {
      failure = StrCat(CodeName(e.code()), ": ", e.what());
    } catch (const std::exception& e) {
      failure = StrCat("exception: ", e.what());
    }
    if (failure.empty()) {
      passed_.insert(check);
      if (entry != expected.end()) {
        ADD_FAILURE() << model_ << " " << check << " passes now: remove the entry at "
                      << "expected_failures.txt:" << entry->second.line;
      }
      return;
    }
    if (entry == expected.end()) {
      ADD_FAILURE() << model_ << " " << check << " fails: " << failure;
    } else if (failure.find(entry->second.needle) == std::string::npos) {
      ADD_FAILURE() << model_ << " " << check << " is listed as failing for '" << entry->second.needle
                    << "' (expected_failures.txt:" << entry->second.line
                    << ") but fails for another reason: " << failure;
    } else {
      std::cout << "[ EXPECTED ] " << model_ << " " << check << " (" << entry->second.feature
                << "): " << failure.substr(0, 300) << "\n";
    }
  }

  // Entries for this model naming a check it does not have are mistakes too.
  void CheckNoStrayEntries() const {
    for (const auto& [key, e] : LoadExpectedFailures()) {
      if (key.first == model_ && !seen_.contains(key.second)) {
        ADD_FAILURE() << "expected_failures.txt:" << e.line << " names check '" << key.second
                      << "', which model " << model_ << " does not have";
      }
    }
  }

 private:
  std::string model_;
  std::set<std::string> passed_;
  std::set<std::string> seen_;
};

fs::path ModelDir(const std::string& model) {
  const fs::path dir = fs::path(TfCorpusDir()) / model;
  if (!fs::is_directory(dir)) {
    NotFound("no corpus for model '", model, "' in ", TfCorpusDir(),
             " (written by tests/tf/corpus/generate.py; run the suite through ctest, whose ",
             "tf_corpus fixture runs it first)");
  }
  return dir;
}

// ---- the standard models -----------------------------------------------------------------

struct Loaded {
  fs::path dir;
  std::unique_ptr<Manifest> manifest;
  std::unique_ptr<io::CheckpointReader> data;
  Graph graph;
  std::shared_ptr<train::Saver> saver;
  std::unique_ptr<Session> session;
};

// Every op type of `def` that flowtrain does not register and every attr its op def lacks, so
// that an unrunnable model names all it needs at once (the first missing op comes first, as
// ImportGraphDef's NotFound would name it). Empty when the registry has everything.
std::string MissingOpsAndAttrs(const tensorflow::GraphDef& def) {
  std::vector<std::string> ops, attrs;
  for (const auto& node : def.node()) {
    const OpRegistration* reg = OpRegistry::Global()->LookUp(node.op());
    if (reg == nullptr) {
      if (std::find(ops.begin(), ops.end(), node.op()) == ops.end()) ops.push_back(node.op());
      continue;
    }
    for (const auto& [name, value] : node.attr()) {
      if (name.starts_with("_")) continue;
      const auto& defs = reg->def.attr();
      const bool known =
          std::any_of(defs.begin(), defs.end(), [&](const auto& a) { return a.name() == name; });
      const std::string attr = StrCat(node.op(), ".", name);
      if (!known && std::find(attrs.begin(), attrs.end(), attr) == attrs.end()) {
        attrs.push_back(attr);
      }
    }
  }
  std::string out;
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!ops.empty()) out += StrCat("Op type not registered '", ops[0], "'; all missing ops: ", join(ops));
  if (!attrs.empty()) out += StrCat(out.empty() ? "" : "; ", "unknown attrs: ", join(attrs));
  return out;
}

std::string ImportCheck(Loaded& m) {
  // The binary and the text GraphDef, each into a graph of its own.
  Graph from_binary, from_text;
  const auto binary = ParseBinary<tensorflow::GraphDef>(m.dir / m.manifest->One("graph"));
  if (std::string missing = MissingOpsAndAttrs(binary); !missing.empty()) return missing;
  ImportGraphDef(binary, &from_binary);
  std::string text = m.manifest->One("graph");
  text.replace(text.size() - 3, 3, ".pbtxt");
  ImportGraphDef(ParseText<tensorflow::GraphDef>(m.dir / text), &from_text);
  if (from_binary.num_nodes() != from_text.num_nodes()) {
    return StrCat("the text GraphDef has ", from_text.num_nodes(), " nodes, the binary ",
                  from_binary.num_nodes());
  }
  // The text MetaGraphDef must import too; the binary one is the graph the checks run.
  if (fs::exists(m.dir / "model.pbtxt")) {
    Graph from_meta_text;
    train::ImportMetaGraph(ParseText<tensorflow::MetaGraphDef>(m.dir / "model.pbtxt"), &from_meta_text);
  }
  m.saver = train::ImportMetaGraph((m.dir / m.manifest->One("meta")).string(), &m.graph);
  if (m.graph.num_nodes() != from_binary.num_nodes()) {
    return StrCat("the MetaGraph's graph has ", m.graph.num_nodes(), " nodes, the GraphDef ",
                  from_binary.num_nodes());
  }
  return "";
}

// The tensor holding variable `name`'s value: its output, or for a resource variable (whose
// output is its handle) what its snapshot reads.
std::string VariableValueName(const Loaded& m, const std::string& name) {
  const Node* var = m.graph.FindNode(name);
  return var != nullptr && var->type() == "VarHandleOp" ? name + "/Read/ReadVariableOp:0" : name + ":0";
}

std::string RestoreCheck(Loaded& m) {
  if (m.saver == nullptr) return "the MetaGraphDef has no SaverDef";
  m.session = std::make_unique<Session>(m.graph);
  const std::string prefix = (m.dir / m.manifest->One("checkpoint")).string();
  m.saver->Restore(*m.session, prefix);
  io::CheckpointReader ckpt(prefix);
  std::string failures;
  for (const auto& [name, dtype] : ckpt.GetVariableToDataTypeMap()) {
    const Tensor value = m.session->Run({}, {VariableValueName(m, name)}, {}).at(0);
    const std::string f = Compare("restored " + name, value, ckpt.GetTensor(name), 0);
    if (!f.empty()) failures += f + "\n";
  }
  return failures;
}

std::vector<std::pair<std::string, Tensor>> Feeds(const Loaded& m, const std::string& directive,
                                                  const std::string& key_prefix) {
  std::vector<std::pair<std::string, Tensor>> feeds;
  const auto& names = m.manifest->All(directive);
  for (size_t i = 0; i < names.size(); ++i) {
    feeds.emplace_back(names[i], m.data->GetTensor(StrCat(key_prefix, i)));
  }
  return feeds;
}

std::string ForwardCheck(Loaded& m) {
  const auto& fetches = m.manifest->All("fetch");
  const std::vector<Tensor> outs = m.session->Run(Feeds(m, "feed", "input/"), fetches, {});
  std::string failures;
  for (size_t i = 0; i < fetches.size(); ++i) {
    const std::string f = Compare(fetches[i], outs[i], m.data->GetTensor(StrCat("output/", i)), 1e-5);
    if (!f.empty()) failures += f + "\n";
  }
  return failures;
}

std::string GradientsCheck(Loaded& m) {
  auto as_default = m.graph.AsDefault();
  const auto& vars = m.manifest->All("var");
  std::vector<Output> xs;
  for (const std::string& v : vars) xs.push_back(m.graph.GetTensorByName(v + ":0"));
  const std::vector<Output> grads =
      ops::Gradients({m.graph.GetTensorByName(m.manifest->One("loss"))}, xs, {}, "gradients_flowtrain");
  std::vector<std::string> fetch_names;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].node()) return StrCat("flowtrain finds no gradient for ", vars[i]);
    fetch_names.push_back(grads[i].name());
  }
  const std::vector<Tensor> values = m.session->Run(Feeds(m, "feed", "input/"), fetch_names, {});
  std::string failures;
  for (size_t i = 0; i < vars.size(); ++i) {
    const std::string f =
        Compare("d loss / d " + vars[i], values[i], m.data->GetTensor(StrCat("grad/", i)), 1e-4);
    if (!f.empty()) failures += f + "\n";
  }
  return failures;
}

std::string TrainCheck(Loaded& m) {
  const int steps = std::stoi(m.manifest->One("steps"));
  const Tensor tf_losses = m.data->GetTensor("losses");
  if (tf_losses.NumElements() != steps) return "data 'losses' does not have 'steps' values";
  const std::string loss = m.manifest->One("loss");
  const std::string train_op = m.manifest->One("train_op");
  std::string failures;
  for (int s = 0; s < steps; ++s) {
    const Tensor l =
        m.session->Run(Feeds(m, "train_feed", StrCat("step/", s, "/")), {loss}, {train_op}).at(0);
    const double a = AsDoubles(l).at(0), b = tf_losses.flat<float>()[s];
    const double err = std::abs(a - b) / std::max(std::abs(b), 1e-6);
    if (!(err <= 1e-4)) {
      failures += StrCat("step ", s, ": loss ", a, ", TF's ", b, " (relative error ", err, ")\n");
    }
  }
  const auto& vars = m.manifest->All("var");
  for (size_t i = 0; i < vars.size(); ++i) {
    const Tensor value = m.session->Run({}, {VariableValueName(m, vars[i])}, {}).at(0);
    const std::string f = Compare("final " + vars[i], value, m.data->GetTensor(StrCat("final/", i)), 1e-4);
    if (!f.empty()) failures += f + "\n";
  }
  return failures;
}

void RunStandardModel(const std::string& model) {
  Loaded m;
  m.dir = ModelDir(model);
  m.manifest = std::make_unique<Manifest>(m.dir);
  m.data = std::make_unique<io::CheckpointReader>((m.dir / "data").string());
  CheckRunner checks(model);
  checks.Run("import", {}, [&] { return ImportCheck(m); });
  checks.Run("restore", {"import"}, [&] { return RestoreCheck(m); });
  checks.Run("forward", {"restore"}, [&] { return ForwardCheck(m); });
  checks.Run("gradients", {"restore"}, [&] { return GradientsCheck(m); });
  checks.Run("train", {"restore"}, [&] { return TrainCheck(m); });
  checks.CheckNoStrayEntries();
}

class StandardModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StandardModelTest, MatchesTensorFlow) { RunStandardModel(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Corpus, StandardModelTest,
                         ::testing::Values("logistic_regression", "mlp_adam", "cnn", "control_flow", "lstm",
                                           "embedding_adagrad", "monitored_training", "dtypes", "partitioned",
                                           "resource_variables", "optimizers", "control_flow_v2"),
                         [](const auto& info) { return info.param; });

// ---- 1. the seed's program ---------------------------------------------------------------

TEST(SeedProgramTest, MonitoredSessionOverG1AndSessionOverG2) {
  const fs::path dir = ModelDir("seed_program");
  const Manifest manifest(dir);
  const io::CheckpointReader data((dir / "data").string());
  CheckRunner checks("seed_program");
  Graph g1, g2;
  checks.Run("import", {}, [&] {
    ImportGraphDef(ParseBinary<tensorflow::GraphDef>(dir / manifest.One("graph")), &g1);
    ImportGraphDef(ParseBinary<tensorflow::GraphDef>(dir / manifest.One("graph2")), &g2);
    Graph from_meta;
    train::ImportMetaGraph((dir / manifest.One("meta")).string(), &from_meta);
    return std::string();
  });
  std::unique_ptr<train::MonitoredSession> mts;
  checks.Run("monitored_session", {"import"}, [&] {
    train::MonitoredTrainingSessionOptions opts;
    opts.graph = &g1;
    mts = train::MonitoredTrainingSession(opts);
    const Tensor c1 = mts->Run({}, {g1.GetTensorByName(manifest.One("fetch"))}, {}).at(0);
    return Compare("c1", c1, data.GetTensor("output/0"), 0);
  });
  checks.Run("cross_graph_error", {"monitored_session"}, [&] {
    // TF: ValueError "... is not an element of this graph"; flowtrain must refuse too.
    const Output c2 = g2.GetTensorByName(manifest.One("fetch2"));
    try {
      mts->Run({}, {c2}, {});
    } catch (const InvalidArgumentError& e) {
      if (std::string(e.what()).find("graph") != std::string::npos) return std::string();
      return StrCat("InvalidArgument without naming the graph: ", e.what());
    }
    return StrCat("running g2's c2 in the monitored session over g1 was not an error (TF: ",
                  manifest.One("cross_graph_error"), ")");
  });
  if (mts) mts->Close();
  checks.Run("session", {"import"}, [&] {
    Session s2(g2);
    const Tensor c2 = s2.Run({}, {manifest.One("fetch2")}, {}).at(0);
    return Compare("c2", c2, data.GetTensor("output/1"), 0);
  });
  checks.CheckNoStrayEntries();
}

// ---- 9. SavedModel -----------------------------------------------------------------------

// saved_model::Load of the model's SavedModel (restore, init ops, signatures), then its
// signature fed TF's inputs against TF's outputs.
void ServeSavedModel(const std::string& model) {
  const fs::path dir = ModelDir(model);
  const Manifest manifest(dir);
  const io::CheckpointReader data((dir / "data").string());
  CheckRunner checks(model);
  std::optional<saved_model::SavedModelBundle> bundle;
  checks.Run("load", {}, [&] {
    bundle.emplace(
        saved_model::Load({}, {manifest.One("tag")}, (dir / manifest.One("saved_model")).string()));
    return std::string();
  });
  checks.Run("serve", {"load"}, [&] {
    const std::string key = manifest.One("signature");
    if (!bundle->signatures().contains(key)) return StrCat("no signature ", key);
    std::map<std::string, Tensor> inputs;
    const auto& input_lines = manifest.All("sig_input");
    for (size_t i = 0; i < input_lines.size(); ++i) {
      inputs[input_lines[i].substr(0, input_lines[i].find(' '))] = data.GetTensor(StrCat("input/", i));
    }
    const std::map<std::string, Tensor> outputs = bundle->RunSignature(key, inputs);
    std::string failures;
    const auto& output_lines = manifest.All("sig_output");
    for (size_t i = 0; i < output_lines.size(); ++i) {
      const std::string out_key = output_lines[i].substr(0, output_lines[i].find(' '));
      auto found = outputs.find(out_key);
      if (found == outputs.end()) return StrCat("signature ", key, " gave no output ", out_key);
      failures += Compare(out_key, found->second, data.GetTensor(StrCat("output/", i)), 1e-5);
    }
    return failures;
  });
  checks.CheckNoStrayEntries();
}

// TF1's tf.compat.v1.saved_model.Builder.
TEST(SavedModelTest, ServesTheSignatureFromTheRestoredVariables) { ServeSavedModel("saved_model"); }

// TF2's tf.saved_model.save of a tf.Module: a tf.function signature (StatefulPartitionedCall)
// and the object-graph restore.
TEST(SavedModelTest, ServesTfTwosModuleSignature) { ServeSavedModel("saved_model_tf2"); }

// ---- the expected-failures file itself ---------------------------------------------------

TEST(ExpectedFailuresTest, NamesKnownModelsAndAllowedFeaturesOnly) {
  const std::set<std::string> models = {
      "seed_program", "logistic_regression", "mlp_adam",           "cnn",         "control_flow",
      "lstm",         "embedding_adagrad",   "monitored_training", "saved_model", "saved_model_tf2",
      "dtypes",       "partitioned",         "resource_variables", "optimizers",  "control_flow_v2"};
  // Models 1, 2, 3, 10 and 11 (partitioned), the resource-variable MLP and the optimizers must
  // pass fully, whatever the file says.
  const std::set<std::string> must_pass = {"seed_program", "logistic_regression", "mlp_adam",  "dtypes",
                                           "partitioned",  "resource_variables",  "optimizers"};
  for (const auto& [key, e] : LoadExpectedFailures()) {
    EXPECT_TRUE(models.contains(key.first))
        << "expected_failures.txt:" << e.line << ": unknown model " << key.first;
    EXPECT_FALSE(must_pass.contains(key.first))
        << "expected_failures.txt:" << e.line << ": " << key.first << " must pass fully";
  }
}

TEST(CorpusTest, MissingModelIsAClearError) {
  try {
    ModelDir("no_such_model");
    ADD_FAILURE() << "expected NotFound";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("generate.py"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flowtrain
