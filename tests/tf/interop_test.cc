// TF runs what flowtrain writes: each test trains or writes with flowtrain into a temporary
// directory, records what flowtrain computed (values, names, steps) in expected.json, and runs a
// checker under tests/tf/interop/ that loads the files with real TensorFlow or TensorBoard and
// compares; the checker exits non-zero naming the first mismatch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/tensor.h"
#include "flowtrain/graph/op_registry.h"
#include "flowtrain/proto/op_def.pb.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/io/record_writer.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/clip_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/ops/layers.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/proto/example.pb.h"
#include "flowtrain/ops/string_ops.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/summary/event_accumulator.h"
#include "flowtrain/summary/file_writer.h"
#include "flowtrain/summary/histogram_bins.h"
#include "flowtrain/summary/summary.h"
#include "flowtrain/train/adadelta.h"
#include "flowtrain/train/adagrad_da.h"
#include "flowtrain/train/adam.h"
#include "flowtrain/train/basic_session_run_hooks.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/ftrl.h"
#include "flowtrain/train/learning_rate_decay.h"
#include "flowtrain/train/meta_graph.h"
#include "flowtrain/train/moving_averages.h"
#include "flowtrain/train/monitored_training_session.h"
#include "flowtrain/train/input.h"
#include "flowtrain/ops/reader_ops.h"
#include "flowtrain/train/momentum.h"
#include "flowtrain/train/proximal_adagrad.h"
#include "flowtrain/train/proximal_gradient_descent.h"
#include "flowtrain/train/saver.h"
#include "flowtrain/train/scaffold.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain::testing {
namespace {

// ---- expected.json, written by hand: numbers exactly (%.17g of the double), strings as hex ----

std::string Hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string Quote(std::string_view s) {  // names and tags: plain ASCII
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string Number(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  std::ostringstream s;
  s << std::setprecision(17) << v;
  return s.str();
}

template <typename T>
std::string List(const std::vector<T>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ",";
    if constexpr (std::is_same_v<T, std::string>) {
      out += Quote(values[i]);
    } else if constexpr (std::is_integral_v<T>) {
      out += std::to_string(values[i]);
    } else {
      out += Number(static_cast<double>(values[i]));
    }
  }
  return out + "]";
}

// {"dtype": numpy name, "shape": [...], "values": [...] (strings as hex)}
std::string TensorJson(const Tensor& t) {
  std::vector<int64_t> shape;
  for (int d = 0; d < t.dims(); ++d) shape.push_back(t.dim_size(d));
  std::string dtype, values = "[";
  auto append = [&](const std::string& v) {
    if (values.size() > 1) values += ",";
    values += v;
  };
  switch (t.dtype()) {
#define FT_CASE(ENUM, TYPE, NAME, FORMAT)                   \
  case ENUM:                                                \
    dtype = NAME;                                           \
    for (const TYPE& v : t.flat<TYPE>()) append(FORMAT(v)); \
    break;
#define FT_FLOAT(v) Number(static_cast<double>(static_cast<float>(v)))
#define FT_INT(v) std::to_string(v)
    FT_CASE(DT_FLOAT, float, "float32", FT_FLOAT)
    FT_CASE(DT_DOUBLE, double, "float64", Number)
    FT_CASE(DT_HALF, half, "float16", FT_FLOAT)
    FT_CASE(DT_BFLOAT16, bfloat16, "bfloat16", FT_FLOAT)
    FT_CASE(DT_INT8, int8_t, "int8", FT_INT)
    FT_CASE(DT_INT16, int16_t, "int16", FT_INT)
    FT_CASE(DT_INT32, int32_t, "int32", FT_INT)
    FT_CASE(DT_INT64, int64_t, "int64", FT_INT)
    FT_CASE(DT_UINT8, uint8_t, "uint8", FT_INT)
    FT_CASE(DT_UINT16, uint16_t, "uint16", FT_INT)
    FT_CASE(DT_UINT32, uint32_t, "uint32", FT_INT)
    FT_CASE(DT_UINT64, uint64_t, "uint64", FT_INT)
    FT_CASE(DT_BOOL, bool, "bool", FT_INT)
#undef FT_CASE
#undef FT_FLOAT
#undef FT_INT
    case DT_STRING:
      dtype = "string";
      for (const std::string& v : t.flat<std::string>()) append("\"" + Hex(v) + "\"");
      break;
    default:
      ADD_FAILURE() << "no JSON for dtype " << t.dtype();
  }
  return "{\"dtype\":\"" + dtype + "\",\"shape\":" + List(shape) + ",\"values\":" + values + "]}";
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// Runs tests/tf/interop/<script> with `args`; the test fails with the checker's output unless
// it exits 0.
void RunChecker(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {TfScript("interop/" + script)};
  argv.insert(argv.end(), args.begin(), args.end());
  const PythonRun run = RunTfPython(argv);
  EXPECT_EQ(run.exit_code, 0) << script << " failed:\n" << run.output;
  if (run.exit_code == 0) std::cout << run.output;
}

// ---- A small regression model trained by flowtrain ----

// Deterministic inputs and targets of the regression model: y = sin-ish function of x.
struct Batch {
  Tensor x, y;
};
Batch MakeBatch(int n) {
  std::vector<float> xs, ys;
  for (int i = 0; i < n; ++i) {
    const float a = std::sin(1.7f * i), b = std::cos(0.9f * i), c = 0.1f * (i % 7) - 0.3f;
    xs.insert(xs.end(), {a, b, c});
    ys.push_back(0.8f * a - 0.5f * b * b + 1.5f * c + 0.2f);
  }
  return {Tensor::FromVector<float>(xs, TensorShape({n, 3})),
          Tensor::FromVector<float>(ys, TensorShape({n, 1}))};
}

std::string TensorListJson(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::string out = "{";
  for (size_t i = 0; i < named.size(); ++i) {
    if (i > 0) out += ",\n";
    out += Quote(named[i].first) + ":" + TensorJson(named[i].second);
  }
  return out + "}";
}

// x [-1,3] -> dense(4, relu) -> dense(1) -> mean squared error "loss"; trained by `optimizer`
// ("adam" or "momentum") with the global step.
struct Model {
  Graph graph;
  Output x, y, pred, loss;
  Operation train_op;
  Variable global_step;
  std::unique_ptr<train::Saver> saver;
};

// Builds the model with the train op `minimize(loss, global_step)`.
void BuildModelWith(Model& m, const std::function<Operation(Output, Variable)>& minimize, bool sharded) {
  auto as_default = m.graph.AsDefault();
  m.graph.set_seed(7);
  m.x = ops::Placeholder(DT_FLOAT, PartialTensorShape({-1, 3}), "x");
  m.y = ops::Placeholder(DT_FLOAT, PartialTensorShape({-1, 1}), "y");
  Output h = layers::Dense(m.x, 4, ops::Relu);
  Output pred = layers::Dense(h, 1);
  m.pred = ops::Identity(pred, "pred");
  m.loss = ops::Identity(ops::ReduceMean(ops::SquaredDifference(pred, m.y)), "loss");
  m.global_step = train::GetOrCreateGlobalStep();
  m.train_op = minimize(m.loss, m.global_step);
  // Minimize puts the train op into the "train_op" collection, as TF's apply_gradients does.
  m.graph.AddToCollection(GraphKeys::kLosses, m.loss);
  m.saver = std::make_unique<train::Saver>(train::SaverOptions{.sharded = sharded});
}

void BuildModel(Model& m, const std::string& optimizer, bool sharded) {
  BuildModelWith(
      m,
      [&](Output loss, Variable step) {
        if (optimizer == "adam") return train::AdamOptimizer(0.05).Minimize(loss, step);
        return train::MomentumOptimizer(0.05, 0.9).Minimize(loss, step);
      },
      sharded);
}

std::string TrainedCheckpointJson(Model& m, Session& sess) {
  std::vector<std::pair<std::string, Tensor>> named;
  for (const Variable& v : ops::GlobalVariables(&m.graph)) {
    named.emplace_back(v.op().name(), v.value().Eval(sess));
  }
  return TensorListJson(named);
}

// Initializes `m`'s variables in `sess`, trains 5 steps on `batch` and saves the checkpoint
// dir/model.ckpt-5; returns its prefix.
std::string TrainFiveStepsAndSave(Model& m, Session& sess, const Batch& batch, const std::string& dir) {
  sess.Run({}, {}, {ops::GlobalVariablesInitializer(&m.graph)});
  for (int i = 0; i < 5; ++i) sess.Run({{m.x, batch.x}, {m.y, batch.y}}, {}, {m.train_op});
  return m.saver->Save(sess, dir + "/model.ckpt", m.global_step);
}

// A model trained 5 steps by flowtrain, checkpointed; TF must list and restore the same values.
void CheckpointRoundTrip(const std::string& optimizer, bool sharded) {
  const std::string dir = MakeTempDir("interop_ckpt");
  Model m;
  BuildModel(m, optimizer, sharded);
  const Batch batch = MakeBatch(16);
  Session sess(m.graph);
  const std::string prefix = TrainFiveStepsAndSave(m, sess, batch, dir);
  ASSERT_EQ(prefix, dir + "/model.ckpt-5");
  WriteFile(dir + "/expected.json", TrainedCheckpointJson(m, sess));
  RunChecker("check_checkpoint.py",
             {"--prefix", prefix, "--expected", dir + "/expected.json", "--optimizer", optimizer});
}

TEST(InteropTest, AdamCheckpointLoadsAndRestoresInTensorFlow) { CheckpointRoundTrip("adam", false); }

// The same model trained by MonitoredTrainingSession on a shuffled dataset, with dropout: its
// default saver (exact_resume) also keeps the pipeline's and the random ops' positions. TF
// must list the two extra string tensors, and its Saver restore the variables beside them.
TEST(InteropTest, ExactResumeCheckpointLoadsAndRestoresInTensorFlow) {
  const std::string dir = MakeTempDir("interop_exact_resume");
  const Batch batch = MakeBatch(16);
  {
    Graph g;
    auto as_default = g.AsDefault();
    g.set_seed(7);
    data::Iterator it = data::Dataset::FromTensorSlices({batch.x, batch.y})
                            .Shuffle(16)
                            .Repeat()
                            .Batch(4)
                            .MakeInitializableIterator();
    std::vector<Output> next = it.GetNext();
    Output h = layers::Dropout(layers::Dense(next[0], 4, ops::Relu), 0.25, /*training=*/true);
    Output loss = ops::ReduceMean(ops::SquaredDifference(layers::Dense(h, 1), next[1]));
    Variable step = train::GetOrCreateGlobalStep();
    Operation train_op = train::AdamOptimizer(0.05).Minimize(loss, step);
    auto scaffold = std::make_shared<train::Scaffold>();
    scaffold->local_init_op = ops::Group({train::Scaffold::DefaultLocalInitOp(g), it.initializer()});
    train::MonitoredTrainingSessionOptions options;
    options.checkpoint_dir = dir;
    options.scaffold = scaffold;
    options.save_summaries_steps = std::nullopt;
    options.log_step_count_steps = std::nullopt;
    options.hooks = {std::make_shared<train::StopAtStepHook>(train::LastStep{5})};
    auto sess = train::MonitoredTrainingSession(options);
    while (!sess->ShouldStop()) sess->Run({train_op});
  }
  const std::string prefix = dir + "/model.ckpt-5";
  io::CheckpointReader reader(prefix);
  const std::vector<std::string> extra = {"Iterator:0-state", "RandomOpStates"};
  std::vector<std::pair<std::string, Tensor>> variables;
  for (const auto& [name, shape] : reader.GetVariableToShapeMap()) {
    if (std::find(extra.begin(), extra.end(), name) == extra.end())
      variables.emplace_back(name, reader.GetTensor(name));
  }
  ASSERT_EQ(variables.size() + extra.size(), reader.GetVariableToShapeMap().size());
  WriteFile(dir + "/expected.json", TensorListJson(variables));
  RunChecker("check_checkpoint.py", {"--prefix", prefix, "--expected", dir + "/expected.json", "--optimizer",
                                     "adam", "--extra", "Iterator:0-state,RandomOpStates"});
}

// ---- Resource variables (use_resource=True) ----

// The program check_resource_variables.py builds in TF: a 2-layer regression on constants,
// w1 and w2 resource variables, Adam(0.05).
struct ResourceModel {
  Graph graph;
  ScopeGuard as_default = graph.AsDefault();
  Output loss;
  Operation train_op;
  std::unique_ptr<train::Saver> saver;
  ResourceModel() {
    Output x = ops::Const(Tensor::FromVector<float>({0.5f, -1, 2, 0.25f, 1.5f, -0.5f}, TensorShape({3, 2})));
    Output y = ops::Const(Tensor::FromVector<float>({1, -1, 0.5f}, TensorShape({3, 1})));
    Variable w1(Tensor::FromVector<float>({0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f}, TensorShape({2, 3})),
                {.name = "w1", .use_resource = true});
    Variable w2(Tensor::FromVector<float>({0.2f, -0.1f, 0.3f}, TensorShape({3, 1})),
                {.name = "w2", .use_resource = true});
    Output h = ops::Tanh(ops::MatMul(x, w1));
    loss = ops::ReduceMean(ops::Square(ops::Sub(ops::MatMul(h, w2), y)));
    train_op = train::AdamOptimizer(0.05).Minimize(loss);
    saver = std::make_unique<train::Saver>();
  }
};

// flowtrain's resource-variable graph has TF's variable nodes; each side restores the other's
// checkpoint by TF's keys ("w1", "w1/Adam", "beta1_power", ...) and trains on identically.
TEST(InteropTest, ResourceVariablesMatchTensorFlowNodesAndCheckpointsBothWays) {
  const std::string dir = MakeTempDir("interop_resvar");
  std::filesystem::create_directories(dir + "/ft");
  std::filesystem::create_directories(dir + "/tf");
  std::string nodes;
  {
    ResourceModel m;
    for (const Operation& op : m.graph.operations()) {
      const std::string& name = op.name();
      const bool is_var_node = op.type() == "VarHandleOp" || op.type() == "VarIsInitializedOp" ||
                               op.type() == "ResourceApplyAdam" || name.ends_with("/Assign") ||
                               name.ends_with("/Read/ReadVariableOp") ||
                               name.find("/Initializer/") != std::string::npos;
      if (is_var_node) nodes += name + " " + op.type() + "\n";
    }
    WriteFile(dir + "/nodes.txt", nodes);
    Session sess(m.graph);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer(&m.graph)});
    for (int i = 0; i < 3; ++i) sess.Run({}, {}, {m.train_op});
    const std::string prefix = m.saver->Save(sess, dir + "/ft/model.ckpt");
    std::vector<std::pair<std::string, Tensor>> named;
    for (const Variable& v : ops::GlobalVariables(&m.graph)) {
      named.emplace_back("final/" + v.op().name(), v.value().Eval(sess));
    }
    std::vector<float> losses;
    for (int i = 0; i < 3; ++i) {
      losses.push_back(m.loss.Eval(sess).scalar<float>());
      sess.Run({}, {}, {m.train_op});
    }
    named.emplace_back("continued_losses", Tensor::FromVector<float>(losses));
    WriteFile(dir + "/expected.json", TensorListJson(named));
    RunChecker("check_resource_variables.py",
               {"--nodes", dir + "/nodes.txt", "--prefix", prefix, "--expected", dir + "/expected.json",
                "--tf_prefix", dir + "/tf/model.ckpt"});
  }
  // TF's checkpoint restores into flowtrain's graph: every variable holds TF's value exactly.
  ResourceModel m;
  Session sess(m.graph);
  m.saver->Restore(sess, dir + "/tf/model.ckpt");
  io::CheckpointReader reader(dir + "/tf/model.ckpt");
  const std::vector<Variable> vars = ops::GlobalVariables(&m.graph);
  EXPECT_EQ(vars.size(), 8u);  // w1, w2, their two Adam slots each, beta1_power, beta2_power
  for (const Variable& v : vars) {
    ASSERT_TRUE(reader.HasTensor(v.op().name())) << v.op().name();
    const Tensor want = reader.GetTensor(v.op().name());
    const Tensor got = v.value().Eval(sess);
    ASSERT_EQ(got.NumElements(), want.NumElements()) << v.op().name();
    for (int64_t i = 0; i < got.NumElements(); ++i) {
      EXPECT_EQ(got.flat<float>()[i], want.flat<float>()[i]) << v.op().name() << "[" << i << "]";
    }
  }
}

TEST(InteropTest, MomentumShardedCheckpointLoadsAndRestoresInTensorFlow) {
  CheckpointRoundTrip("momentum", true);
}

// Variables of every dtype flowtrain has, with edge values, read back by TF bit for bit.
TEST(InteropTest, CheckpointOfEveryDtypeReadsExactlyInTensorFlow) {
  const std::string dir = MakeTempDir("interop_dtypes");
  Graph g;
  auto as_default = g.AsDefault();
  std::vector<std::pair<std::string, Tensor>> values = {
      {"f32", Tensor::FromVector<float>({0.0f, -0.0f, 1.5f, -3.25e-38f, 3.4028235e38f, 1.17549435e-38f,
                                         1e-45f, 0.1f, INFINITY, -INFINITY},
                                        TensorShape({2, 5}))},
      {"f64", Tensor::FromVector<double>({0.1, -2.5e-308, 1.7976931348623157e308, 4.9e-324, M_PI, -0.0})},
      {"f16", Tensor::FromVector<half>(
                  {half(0.0f), half(1.0f / 3), half(-65504.0f), half(6e-8f), half(0.099975586f)})},
      {"bf16",
       Tensor::FromVector<bfloat16>({bfloat16(0.1f), bfloat16(-3.0e38f), bfloat16(1e-30f), bfloat16(7.0f)})},
      {"i8", Tensor::FromVector<int8_t>({-128, -1, 0, 1, 127})},
      {"i16", Tensor::FromVector<int16_t>({-32768, -2, 0, 3, 32767})},
      {"i32", Tensor::FromVector<int32_t>({INT32_MIN, -5, 0, 6, INT32_MAX}, TensorShape({5, 1}))},
      {"i64", Tensor::FromVector<int64_t>({INT64_MIN, -7, 0, 9007199254740993LL, INT64_MAX})},
      {"u8", Tensor::FromVector<uint8_t>({0, 1, 128, 255})},
      {"u16", Tensor::FromVector<uint16_t>({0, 1, 40000, 65535})},
      {"u32", Tensor::FromVector<uint32_t>({0, 1, 3000000000u, 4294967295u})},
      {"u64", Tensor::FromVector<uint64_t>({0, 1, 18446744073709551615ull})},
      {"flag", Tensor::FromVector<bool>({true, false, true}, TensorShape({1, 3}))},
      {"words", Tensor::FromVector<std::string>(
                    {"", "hello", std::string("nul\0byte", 8), "\xc3\xa9t\xc3\xa9", std::string(300, 'z')},
                    TensorShape({5}))},
      {"scalar_f32", Tensor::Scalar<float>(-42.125f)},
      {"empty_f32", Tensor::FromVector<float>({}, TensorShape({0, 3}))},
  };
  for (const auto& [name, value] : values) Variable(value, {.name = name});
  train::Saver saver;
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer(&g)});
  std::vector<std::pair<std::string, Tensor>> stored;
  for (const Variable& v : ops::GlobalVariables(&g)) {
    stored.emplace_back(v.op().name(), v.value().Eval(sess));
  }
  const std::string prefix = saver.Save(sess, dir + "/dtypes.ckpt");
  WriteFile(dir + "/expected.json", TensorListJson(stored));
  RunChecker("check_dtypes.py", {"--prefix", prefix, "--expected", dir + "/expected.json"});
}

// The .meta flowtrain writes beside its checkpoint: TF imports it, restores, computes the same
// outputs, and its train op continues training exactly as flowtrain does from there.
TEST(InteropTest, MetaGraphImportsRunsAndTrainsInTensorFlow) {
  const std::string dir = MakeTempDir("interop_meta");
  Model m;
  BuildModel(m, "adam", false);
  const Batch batch = MakeBatch(16);
  Session sess(m.graph);
  const std::string prefix = TrainFiveStepsAndSave(m, sess, batch, dir);
  std::vector<std::pair<std::string, Tensor>> expected = {{"feed/x:0", batch.x}, {"feed/y:0", batch.y}};
  std::vector<Tensor> out = sess.Run({{m.x, batch.x}, {m.y, batch.y}}, {m.pred, m.loss});
  expected.emplace_back("fetch/pred:0", out[0]);
  expected.emplace_back("fetch/loss:0", out[1]);
  // flowtrain continues 10 steps from the checkpoint's state: the loss before each step.
  std::vector<float> losses;
  for (int i = 0; i < 10; ++i) {
    losses.push_back(sess.Run({{m.x, batch.x}, {m.y, batch.y}}, {m.loss})[0].scalar<float>());
    sess.Run({{m.x, batch.x}, {m.y, batch.y}}, {}, {m.train_op});
  }
  losses.push_back(sess.Run({{m.x, batch.x}, {m.y, batch.y}}, {m.loss})[0].scalar<float>());
  expected.emplace_back("continued_losses", Tensor::FromVector<float>(losses));
  for (const Variable& v : ops::GlobalVariables(&m.graph)) {
    expected.emplace_back("final/" + v.op().name(), v.value().Eval(sess));
  }
  expected.emplace_back("start_step", Tensor::Scalar<int64_t>(5));
  WriteFile(dir + "/expected.json", TensorListJson(expected));
  RunChecker("check_meta_graph.py",
             {"--meta", prefix + ".meta", "--prefix", prefix, "--expected", dir + "/expected.json"});
}

// A conv net (conv2d, max pooling, flatten, dense, sparse softmax cross entropy, a decayed
// learning rate, gradients clipped by global norm, Nesterov momentum, summaries) trained by
// MonitoredTrainingSession, whose CheckpointSaverHook writes the checkpoint and .meta. flowtrain
// imports that .meta into a new graph and trains 10 more steps; TF must do the same with the
// same losses, and run the imported summary op.
TEST(InteropTest, MonitoredTrainingSessionMetaGraphTrainsOnInTensorFlow) {
  const std::string dir = MakeTempDir("interop_mts");
  const int n = 12;
  std::vector<float> pixels;
  std::vector<int64_t> classes;
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 36; ++k) pixels.push_back(std::sin(0.3f * k * (1 + i % 3) + i));
    classes.push_back(i % 3);
  }
  const Tensor images_value = Tensor::FromVector<float>(pixels, TensorShape({n, 6, 6, 1}));
  const Tensor labels_value = Tensor::FromVector<int64_t>(classes);
  {
    Graph g;
    auto as_default = g.AsDefault();
    g.set_seed(3);
    Output images = ops::Placeholder(DT_FLOAT, PartialTensorShape({-1, 6, 6, 1}), "images");
    Output labels = ops::Placeholder(DT_INT64, PartialTensorShape({-1}), "labels");
    Output h = layers::Conv2D(images, 4, {3, 3}, {1, 1}, "same", ops::Relu);
    h = layers::MaxPooling2D(h, {2, 2}, {2, 2});
    Output logits = layers::Dense(layers::Flatten(h), 3);
    Output loss =
        ops::Identity(ops::ReduceMean(ops::SparseSoftmaxCrossEntropyWithLogits(labels, logits)), "loss");
    summary::Scalar("xent", loss);
    summary::Histogram("logits", logits);
    Variable step = train::GetOrCreateGlobalStep();
    Output lr = train::ExponentialDecay(0.2, step.value(), 4, 0.8);
    train::MomentumOptimizer opt(lr, 0.9, {.use_nesterov = true});
    std::vector<train::GradAndVar> grads_and_vars = opt.ComputeGradients(loss);
    std::vector<Output> grads;
    for (const auto& [grad, var] : grads_and_vars) grads.push_back(grad);
    auto [clipped, norm] = ops::ClipByGlobalNorm(grads, 1.0f);
    for (size_t i = 0; i < grads_and_vars.size(); ++i) grads_and_vars[i].first = clipped[i];
    Operation train_op = opt.ApplyGradients(grads_and_vars, step);
    train::MonitoredTrainingSessionOptions options;
    options.checkpoint_dir = dir;
    options.save_checkpoint_steps = int64_t{8};
    options.save_checkpoint_secs = std::nullopt;
    options.save_summaries_steps = int64_t{4};
    options.hooks = {std::make_shared<train::StopAtStepHook>(train::LastStep{8})};
    auto sess = train::MonitoredTrainingSession(options);
    while (!sess->ShouldStop()) sess->Run({train_op}, {{images, images_value}, {labels, labels_value}});
  }
  const std::optional<std::string> prefix = train::LatestCheckpoint(dir);
  ASSERT_TRUE(prefix.has_value());
  ASSERT_EQ(*prefix, dir + "/model.ckpt-8");

  // flowtrain continues from its own .meta and checkpoint.
  Graph g;
  std::shared_ptr<train::Saver> saver = train::ImportMetaGraph(*prefix + ".meta", &g);
  ASSERT_NE(saver, nullptr);
  Session sess(g);
  saver->Restore(sess, *prefix);
  const Output loss = g.GetTensorByName("loss:0");
  const Output logits = g.GetTensorByName("dense/BiasAdd:0");
  const std::vector<Operation> train_ops = g.GetCollection<Operation>(GraphKeys::kTrainOp);
  ASSERT_EQ(train_ops.size(), 1u);
  const FeedList feeds = {{g.GetTensorByName("images:0"), images_value},
                          {g.GetTensorByName("labels:0"), labels_value}};
  std::vector<std::pair<std::string, Tensor>> expected = {{"feed/images:0", images_value},
                                                          {"feed/labels:0", labels_value}};
  std::vector<Tensor> out = sess.Run(feeds, {logits, loss});
  expected.emplace_back("fetch/dense/BiasAdd:0", out[0]);
  expected.emplace_back("fetch/loss:0", out[1]);
  std::vector<float> losses;
  for (int i = 0; i < 10; ++i) {
    losses.push_back(sess.Run(feeds, {loss})[0].scalar<float>());
    sess.Run(feeds, {}, {train_ops[0]});
  }
  losses.push_back(sess.Run(feeds, {loss})[0].scalar<float>());
  expected.emplace_back("continued_losses", Tensor::FromVector<float>(losses));
  for (const Variable& v : ops::GlobalVariables(&g)) {
    expected.emplace_back("final/" + v.op().name(), v.value().Eval(sess));
  }
  expected.emplace_back("start_step", Tensor::Scalar<int64_t>(8));
  expected.emplace_back("summary_op_count", Tensor::Scalar<int64_t>(1));
  expected.emplace_back("summary_loss_tag", Tensor::Scalar<std::string>("xent"));
  WriteFile(dir + "/expected.json", TensorListJson(expected));
  RunChecker("check_meta_graph.py",
             {"--meta", *prefix + ".meta", "--prefix", *prefix, "--expected", dir + "/expected.json"});
}

// ---- Optimizers against TF's own ----

// Each of Adadelta, ProximalGradientDescent, ProximalAdagrad, Ftrl, Ftrl with l2 shrinkage
// (FtrlV2) and AdagradDA, with non-default hyper-parameters, trains the model 5 steps in
// flowtrain from a saved initial state, then saves checkpoint and .meta and trains 3 more.
// check_optimizers.py: TF's own tf.compat.v1.train optimizer of the same settings, from the
// same initial checkpoint (which restores only if TF names the slots as flowtrain does), gives
// the same losses and final variables and slots (1e-5); and flowtrain's exported graph imported
// into TF continues from the checkpoint with flowtrain's losses.
TEST(InteropTest, NewOptimizersTrainAsTensorFlowsOwn) {
  struct Case {
    std::string name;
    std::string tf_class;
    std::string tf_kwargs;  // JSON object; AdagradDA also gets the global step
    std::function<std::unique_ptr<train::Optimizer>(Variable step)> make;
  };
  const std::vector<Case> cases = {
      {"adadelta", "AdadeltaOptimizer", R"({"learning_rate": 1.0, "rho": 0.9, "epsilon": 1e-6})",
       [](Variable) {
         return std::make_unique<train::AdadeltaOptimizer>(
             1.0, train::AdadeltaOptions{.rho = 0.9, .epsilon = 1e-6});
       }},
      {"proximal_gd", "ProximalGradientDescentOptimizer",
       R"({"learning_rate": 0.05, "l1_regularization_strength": 0.01, "l2_regularization_strength": 0.02})",
       [](Variable) {
         return std::make_unique<train::ProximalGradientDescentOptimizer>(
             0.05, train::ProximalGradientDescentOptions{.l1_regularization_strength = 0.01,
                                                         .l2_regularization_strength = 0.02});
       }},
      {"proximal_adagrad", "ProximalAdagradOptimizer",
       R"({"learning_rate": 0.1, "initial_accumulator_value": 0.2, "l1_regularization_strength": 0.01,
           "l2_regularization_strength": 0.02})",
       [](Variable) {
         return std::make_unique<train::ProximalAdagradOptimizer>(
             0.1, train::ProximalAdagradOptions{.initial_accumulator_value = 0.2,
                                                .l1_regularization_strength = 0.01,
                                                .l2_regularization_strength = 0.02});
       }},
      {"ftrl", "FtrlOptimizer",
       R"({"learning_rate": 0.1, "l1_regularization_strength": 0.001, "l2_regularization_strength": 0.01})",
       [](Variable) {
         return std::make_unique<train::FtrlOptimizer>(
             0.1,
             train::FtrlOptions{.l1_regularization_strength = 0.001, .l2_regularization_strength = 0.01});
       }},
      {"ftrl_v2", "FtrlOptimizer",
       R"({"learning_rate": 0.1, "learning_rate_power": -0.6, "initial_accumulator_value": 0.2,
           "l1_regularization_strength": 0.001, "l2_regularization_strength": 0.01,
           "l2_shrinkage_regularization_strength": 0.05})",
       [](Variable) {
         return std::make_unique<train::FtrlOptimizer>(
             0.1, train::FtrlOptions{.learning_rate_power = -0.6,
                                     .initial_accumulator_value = 0.2,
                                     .l1_regularization_strength = 0.001,
                                     .l2_regularization_strength = 0.01,
                                     .l2_shrinkage_regularization_strength = 0.05});
       }},
      {"adagrad_da", "AdagradDAOptimizer",
       R"({"learning_rate": 0.1, "initial_gradient_squared_accumulator_value": 0.2,
           "l1_regularization_strength": 0.001, "l2_regularization_strength": 0.01})",
       [](Variable step) {
         return std::make_unique<train::AdagradDAOptimizer>(
             0.1, step,
             train::AdagradDAOptions{.initial_gradient_squared_accumulator_value = 0.2,
                                     .l1_regularization_strength = 0.001,
                                     .l2_regularization_strength = 0.01});
       }},
  };
  const std::string dir = MakeTempDir("interop_optimizers");
  const Batch batch = MakeBatch(16);
  std::string configs = "[";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string case_dir = dir + "/" + c.name;
    std::filesystem::create_directories(case_dir);
    Model m;
    std::unique_ptr<train::Optimizer> optimizer;
    BuildModelWith(
        m,
        [&](Output loss, Variable step) {
          optimizer = c.make(step);
          return optimizer->Minimize(loss, step);
        },
        false);
    Session sess(m.graph);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer(&m.graph)});
    const std::string init = m.saver->Save(sess, case_dir + "/init.ckpt");
    const FeedList feed = {{m.x, batch.x}, {m.y, batch.y}};
    auto losses_of_steps = [&](int steps) {
      std::vector<float> losses;
      for (int i = 0; i < steps; ++i) {
        losses.push_back(sess.Run(feed, {m.loss})[0].scalar<float>());
        sess.Run(feed, {}, {m.train_op});
      }
      losses.push_back(sess.Run(feed, {m.loss})[0].scalar<float>());
      return losses;
    };
    std::vector<std::pair<std::string, Tensor>> expected = {{"feed/x:0", batch.x}, {"feed/y:0", batch.y}};
    const std::vector<float> losses = losses_of_steps(5);
    EXPECT_LT(losses.back(), losses.front());
    expected.emplace_back("losses", Tensor::FromVector<float>(losses));
    for (const Variable& v : ops::GlobalVariables(&m.graph)) {
      expected.emplace_back("final/" + v.op().name(), v.value().Eval(sess));
    }
    const std::string prefix = m.saver->Save(sess, case_dir + "/model.ckpt", m.global_step);
    expected.emplace_back("continued_losses", Tensor::FromVector<float>(losses_of_steps(3)));
    WriteFile(case_dir + "/expected.json", TensorListJson(expected));
    if (configs.size() > 1) configs += ",\n";
    configs += "{\"name\":" + Quote(c.name) + ",\"class\":" + Quote(c.tf_class) +
               ",\"kwargs\":" + c.tf_kwargs + ",\"init\":" + Quote(init) + ",\"prefix\":" + Quote(prefix) +
               ",\"expected\":" + Quote(case_dir + "/expected.json") + "}";
  }
  WriteFile(dir + "/configs.json", configs + "]");
  RunChecker("check_optimizers.py", {"--configs", dir + "/configs.json"});
}

// ---- Op definitions ----

// Every op flowtrain registers (and so may write into a GraphDef or a MetaGraph's
// stripped_op_list) must be TF's op with TF's signature: the same inputs and outputs, attrs
// TF knows with the same types, no attr TF requires that flowtrain lacks, and defaults TF
// would fill in the same way. Otherwise TF rejects, or silently reinterprets, what we write.
TEST(InteropTest, EveryRegisteredOpHasTensorFlowsSignature) {
  const std::string dir = MakeTempDir("interop_ops");
  tensorflow::OpList ops;
  for (const std::string& name : OpRegistry::Global()->ListOps()) {
    *ops.add_op() = OpRegistry::Global()->Get(name).def;
  }
  ASSERT_GT(ops.op_size(), 100);
  std::ofstream out(dir + "/ops.pb", std::ios::binary);
  ASSERT_TRUE(ops.SerializeToOstream(&out));
  out.close();
  RunChecker("check_op_defs.py", {"--ops", dir + "/ops.pb"});
}

// AsString over float, double, int32, int64, uint8, bool and string constants with each
// formatting option: TF runs flowtrain's GraphDef to the same strings.
TEST(InteropTest, AsStringFormatsAsTensorFlowDoes) {
  const std::string dir = MakeTempDir("interop_as_string");
  Graph g;
  auto as_default = g.AsDefault();
  const Tensor floats = Tensor::FromVector<float>({1.5f, -2.25f, 1e10f, 1e-7f, 0.1f, 123456.789f, -0.0f});
  const Tensor doubles = Tensor::FromVector<double>({0.1, -1e300, 3.25, 1e-300});
  const Tensor ints = Tensor::FromVector<int32_t>({7, -3, 0, 2147483647, -2147483647 - 1});
  const Tensor longs = Tensor::FromVector<int64_t>({9000000000000000000, -12, 5});
  std::vector<std::pair<std::string, Output>> cases = {
      {"f_default", ops::AsString(ops::Const(floats), {.name = "f_default"})},
      {"f_shortest", ops::AsString(ops::Const(floats), {.shortest = true, .name = "f_shortest"})},
      {"f_scientific", ops::AsString(ops::Const(floats), {.scientific = true, .name = "f_scientific"})},
      {"f_p2_w10_zero", ops::AsString(ops::Const(floats),
                                      {.precision = 2, .width = 10, .fill = "0", .name = "f_p2_w10_zero"})},
      {"f_p0_plus", ops::AsString(ops::Const(floats), {.precision = 0, .fill = "+", .name = "f_p0_plus"})},
      {"f_w12_left", ops::AsString(ops::Const(floats), {.width = 12, .fill = "-", .name = "f_w12_left"})},
      {"d_shortest_p3",
       ops::AsString(ops::Const(doubles), {.precision = 3, .shortest = true, .name = "d_shortest_p3"})},
      {"d_default", ops::AsString(ops::Const(doubles), {.name = "d_default"})},
      {"i_w6_zero", ops::AsString(ops::Const(ints), {.width = 6, .fill = "0", .name = "i_w6_zero"})},
      {"i_space", ops::AsString(ops::Const(ints), {.fill = " ", .name = "i_space"})},
      {"l_default", ops::AsString(ops::Const(longs), {.name = "l_default"})},
      {"u8", ops::AsString(ops::Const(Tensor::FromVector<uint8_t>({0, 255})), {.width = 4, .name = "u8"})},
      {"b", ops::AsString(ops::Const(Tensor::FromVector<bool>({true, false})), {.name = "b"})},
      {"s", ops::AsString(ops::Const(Tensor::FromVector<std::string>({"a b", ""})), {.name = "s"})},
  };
  std::vector<Output> fetches;
  for (const auto& [name, out] : cases) fetches.push_back(out);
  Session sess(g);
  const std::vector<Tensor> values = sess.Run({}, fetches);
  std::string json = "{";
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<std::string> hex;
    for (const std::string& v : testing::Values<std::string>(values[i])) hex.push_back(Hex(v));
    json += (i > 0 ? "," : "") + Quote(cases[i].second.op().name()) + ":" + List(hex);
  }
  WriteFile(dir + "/expected.json", json + "}");
  WriteFile(dir + "/as_string.pb", g.ToGraphDef().SerializeAsString());
  RunChecker("check_as_string.py", {"--dir", dir});
}

// A TF1 queue-based input pipeline (StringInputProducer, TFRecordReader, Batch) exported by
// flowtrain: TF imports it, its queue runners come from the MetaGraph's "queue_runners"
// collection, and it reads every record of its epochs, then ends with OutOfRange.
TEST(InteropTest, QueueInputPipelineRunsInTensorFlow) {
  const std::string dir = MakeTempDir("interop_queues");
  std::vector<std::string> paths, records;
  for (int f = 0; f < 3; ++f) {
    paths.push_back(dir + "/part-" + std::to_string(f) + ".tfrecord");
    io::RecordWriter writer(paths.back());
    for (int r = 0; r < 4; ++r) {
      records.push_back("file " + std::to_string(f) + " record " + std::to_string(r));
      writer.WriteRecord(records.back());
    }
    writer.Close();
  }
  Graph g;
  auto as_default = g.AsDefault();
  ops::FIFOQueue files = train::StringInputProducer(paths, {.num_epochs = 2, .seed = 5});
  ops::TFRecordReader reader;
  auto [key, value] = reader.Read(files);
  std::vector<Output> batch = train::Batch({key, value}, 5, {.allow_smaller_final_batch = true});
  train::ExportMetaGraph(g, nullptr, dir + "/pipeline.meta");
  std::vector<std::string> twice = records;
  twice.insert(twice.end(), records.begin(), records.end());
  std::vector<std::string> hex;
  for (const std::string& r : twice) hex.push_back(Hex(r));
  WriteFile(dir + "/expected.json", "{\"meta\":" + Quote(dir + "/pipeline.meta") + ",\"values\":" +
                                        Quote(batch[1].name()) + ",\"records\":" + List(hex) + "}");
  RunChecker("check_queue_pipeline.py", {"--expected", dir + "/expected.json"});
}

// ---- TFRecords of tf.train.Example ----

void AddFloats(tensorflow::Example& e, const std::string& key, const std::vector<float>& v) {
  auto* list = (*e.mutable_features()->mutable_feature())[key].mutable_float_list();
  for (float f : v) list->add_value(f);
}
void AddInts(tensorflow::Example& e, const std::string& key, const std::vector<int64_t>& v) {
  auto* list = (*e.mutable_features()->mutable_feature())[key].mutable_int64_list();
  for (int64_t i : v) list->add_value(i);
}
void AddBytes(tensorflow::Example& e, const std::string& key, const std::vector<std::string>& v) {
  auto* list = (*e.mutable_features()->mutable_feature())[key].mutable_bytes_list();
  for (const std::string& b : v) list->add_value(b);
}

TEST(InteropTest, TfRecordsOfExamplesParseInTensorFlow) {
  const std::string dir = MakeTempDir("interop_records");
  const int n = 7;
  std::string records = "[";
  std::vector<std::string> serialized;
  std::string examples = "[";
  for (int i = 0; i < n; ++i) {
    tensorflow::Example e;
    const int64_t label = (i % 2 == 0 ? 1 : -1) * (int64_t{1} << (10 * (i % 7)));
    const std::vector<float> weights = {0.5f * i, -1.25f, std::ldexp(1.0f, -20 - i)};
    const std::string name = "ex" + std::to_string(i) + std::string(1, '\0') + "\xff";
    std::vector<int64_t> tokens;
    for (int k = 0; k < i; ++k) tokens.push_back(k * 1000003LL - 7);
    std::vector<float> scores;
    for (int k = 0; k < (i * 3) % 5; ++k) scores.push_back(std::sin(1.0f + i + k));
    std::vector<std::string> blobs;
    for (int k = 0; k < i % 3; ++k) blobs.push_back(std::string(k + 1, static_cast<char>('a' + i)));
    AddInts(e, "label", {label});
    AddFloats(e, "weights", weights);
    AddBytes(e, "name", {name});
    AddInts(e, "tokens", tokens);
    AddFloats(e, "scores", scores);
    AddBytes(e, "blobs", blobs);
    serialized.push_back(e.SerializeAsString());
    std::vector<std::string> blob_hex;
    for (const std::string& b : blobs) blob_hex.push_back(Hex(b));
    if (i > 0) examples += ",\n";
    examples += "{\"label\":" + List(std::vector<int64_t>{label}) + ",\"weights\":" + List(weights) +
                ",\"name\":" + List(std::vector<std::string>{Hex(name)}) + ",\"tokens\":" + List(tokens) +
                ",\"scores\":" + List(scores) + ",\"blobs\":" + List(blob_hex) + ",\"serialized\":\"" +
                Hex(serialized.back()) + "\"}";
  }
  examples += "]";
  for (const std::string compression : {"", "ZLIB", "GZIP"}) {
    const std::string path = dir + "/data" + (compression.empty() ? "" : "." + compression) + ".tfrecord";
    io::RecordWriter writer(path, {.compression_type = compression});
    for (const std::string& s : serialized) writer.WriteRecord(s);
    writer.Close();
    if (records.size() > 1) records += ",";
    records += "{\"path\":" + Quote(path) + ",\"compression\":" + Quote(compression) + "}";
  }
  records += "]";
  WriteFile(dir + "/expected.json", "{\"files\":" + records + ",\n\"examples\":" + examples + "}");
  RunChecker("check_tfrecords.py", {"--expected", dir + "/expected.json"});
}

// ---- Event files for TensorBoard ----

// Scalars, histograms, images, audio, text and the graph, written by flowtrain's summary ops
// and FileWriter over 4 steps; TensorBoard (EventAccumulator and a real server) must see them.
TEST(InteropTest, EventFilesReadInTensorBoard) {
  const std::string dir = MakeTempDir("interop_events");
  const std::string logdir = dir + "/logs";
  Graph g;
  auto as_default = g.AsDefault();
  Output loss = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "loss_value");
  Output weights = ops::Placeholder(DT_FLOAT, PartialTensorShape({-1}), "weights_in");
  Output pixels = ops::Placeholder(DT_UINT8, PartialTensorShape({2, 4, 5, 3}), "pixels_in");
  Output sound = ops::Placeholder(DT_FLOAT, PartialTensorShape({2, 400}), "sound_in");
  Output note = ops::Placeholder(DT_STRING, PartialTensorShape({}), "note_in");
  Output doubled = ops::Mul(loss, ops::Const(2.0f));
  summary::Scalar("loss", doubled);
  summary::Histogram("weights", weights);
  summary::Image("pixels", pixels, {.max_outputs = 2});
  summary::Audio("sound", sound, 8000.0f, {.max_outputs = 2});
  summary::Text("note", note);
  Output merged = summary::MergeAll();
  Session sess(g);
  const tensorflow::GraphDef graph_def = g.ToGraphDef();
  std::string nodes = "[";
  for (const auto& node : graph_def.node()) {
    if (nodes.size() > 1) nodes += ",";
    nodes += "[" + Quote(node.name()) + "," + Quote(node.op()) + "]";
  }
  nodes += "]";

  std::string steps_json = "[";
  {
    summary::FileWriter writer(logdir, graph_def);
    for (int64_t step : {0, 3, 7, 10}) {
      std::vector<float> w;
      for (int k = 0; k < 40 + step; ++k) w.push_back(std::sin(0.37f * k + step) * (1.0f + step));
      std::vector<uint8_t> px;
      for (int k = 0; k < 2 * 4 * 5 * 3; ++k) px.push_back(static_cast<uint8_t>((k * 37 + step * 11) % 256));
      std::vector<float> clip;
      for (int k = 0; k < 800; ++k) clip.push_back(0.9f * std::sin(0.05f * k * (1 + step % 3)));
      const std::string text = "step **" + std::to_string(step) + "** of flowtrain";
      const float loss_value = 1.0f / (1.0f + step);
      std::vector<Tensor> out =
          sess.Run({{loss, Tensor::Scalar<float>(loss_value)},
                    {weights, Tensor::FromVector<float>(w)},
                    {pixels, Tensor::FromVector<uint8_t>(px, TensorShape({2, 4, 5, 3}))},
                    {sound, Tensor::FromVector<float>(clip, TensorShape({2, 400}))},
                    {note, Tensor::Scalar<std::string>(text)}},
                   {merged, doubled});
      writer.AddSummary(out[0].scalar<std::string>(), step);
      if (steps_json.size() > 1) steps_json += ",\n";
      steps_json += "{\"step\":" + std::to_string(step) + ",\"loss\":" + TensorJson(out[1]) +
                    ",\"weights\":" + TensorJson(Tensor::FromVector<float>(w)) +
                    ",\"pixels\":" + TensorJson(Tensor::FromVector<uint8_t>(px, TensorShape({2, 4, 5, 3}))) +
                    ",\"sound\":" + TensorJson(Tensor::FromVector<float>(clip, TensorShape({2, 400}))) +
                    ",\"note\":" + Quote(text) + "}";
    }
    writer.Close();
  }
  steps_json += "]";
  WriteFile(dir + "/expected.json", "{\"logdir\":" + Quote(logdir) + ",\"sample_rate\":8000," +
                                        "\"graph_nodes\":" + nodes + ",\n\"steps\":" + steps_json + "}");
  RunChecker("check_events.py", {"--expected", dir + "/expected.json"});
}

// flowtrain's uniform histogram bins (what `flowtrain events --html` draws) equal those of
// TensorBoard's histogram dashboard on the same event file: ReLU activations, a third to a half
// of them zero, over 3 steps.
// Every learning-rate schedule, built by flowtrain into one GraphDef over a step placeholder.
// TF imports it and evaluates each schedule at the same steps, and builds the schedule with its
// own tf.compat.v1.train function: flowtrain's values, TF's run of flowtrain's graph and TF's
// own schedule must agree (check_learning_rate_decay.py holds the same configurations by name).
TEST(InteropTest, LearningRateSchedulesEvaluateAsTensorFlowsOwn) {
  const std::string dir = MakeTempDir("interop_lr");
  Graph g;
  auto as_default = g.AsDefault();
  Output step = ops::Placeholder(DT_INT64, PartialTensorShape({}), "step");
  const std::vector<std::pair<std::string, Output>> schedules = {
      {"exponential", train::ExponentialDecay(0.1, step, 10, 0.5, false, "exponential")},
      {"exponential_stairs", train::ExponentialDecay(0.1, step, 10, 0.5, true, "exponential_stairs")},
      {"natural", train::NaturalExpDecay(0.1, step, 10, 0.5, false, "natural")},
      {"natural_stairs", train::NaturalExpDecay(0.1, step, 10, 0.5, true, "natural_stairs")},
      {"inverse", train::InverseTimeDecay(0.1, step, 10, 0.5, false, "inverse")},
      {"inverse_stairs", train::InverseTimeDecay(0.1, step, 10, 0.5, true, "inverse_stairs")},
      {"polynomial", train::PolynomialDecay(0.1, step, 100, 0.0001, 1.0, false, "polynomial")},
      {"polynomial_power", train::PolynomialDecay(0.1, step, 100, 0.01, 2.0, false, "polynomial_power")},
      {"polynomial_cycle", train::PolynomialDecay(0.1, step, 100, 0.01, 0.5, true, "polynomial_cycle")},
      {"cosine", train::CosineDecay(0.1, step, 100, 0.1, "cosine")},
      {"restarts", train::CosineDecayRestarts(0.1, step, 10, 2.0, 1.0, 0.0, "restarts")},
      {"restarts_equal", train::CosineDecayRestarts(0.2, step, 10, 1.0, 0.5, 0.1, "restarts_equal")},
      {"restarts_tmul3", train::CosineDecayRestarts(0.1, step, 7, 3.0, 0.9, 0.05, "restarts_tmul3")},
      {"linear_cosine", train::LinearCosineDecay(0.1, step, 100, 0.5, 0.0, 0.001, "linear_cosine")},
      {"linear_cosine_periods",
       train::LinearCosineDecay(0.1, step, 100, 2.0, 0.1, 0.01, "linear_cosine_periods")},
      {"noisy_quiet",
       train::NoisyLinearCosineDecay(0.1, step, 100, 0.0, 0.55, 0.5, 0.0, 0.001, "noisy_quiet")},
      {"piecewise", train::PiecewiseConstant(step, {10, 50}, {0.1, 0.05, 0.01}, "piecewise")},
  };
  const std::vector<int64_t> steps = {0,  1,  5,  9,   10,  11,  29,  30,  31,
                                      50, 51, 99, 100, 101, 150, 200, 201, 1000};
  Session sess(g);
  std::vector<std::pair<std::string, Tensor>> expected;
  for (const auto& [name, lr] : schedules) {
    // TF leaves cosine_decay's last multiply unnamed (check_learning_rate_decay.py knows).
    EXPECT_EQ(lr.name(), name == "cosine" ? "cosine/Mul_3:0" : name + ":0");
    std::vector<float> values;
    for (int64_t at : steps)
      values.push_back(sess.Run({{step, Tensor::Scalar<int64_t>(at)}}, {lr})[0].scalar<float>());
    expected.emplace_back(name, Tensor::FromVector<float>(values));
  }
  expected.emplace_back("steps", Tensor::FromVector<int64_t>(steps));
  std::string graph_bytes;
  ASSERT_TRUE(g.ToGraphDef().SerializeToString(&graph_bytes));
  WriteFile(dir + "/schedules.pb", graph_bytes);
  WriteFile(dir + "/expected.json", TensorListJson(expected));
  RunChecker("check_learning_rate_decay.py",
             {"--graph", dir + "/schedules.pb", "--expected", dir + "/expected.json"});
}

// flowtrain's ExponentialMovingAverage is TF's: the model of check_moving_averages.py (a ref
// and a resource variable averaged with num_updates, a loss tensor averaged with zero debias)
// trained 4 steps gives TF's variables, names and values, TF runs flowtrain's graph to the same
// values, both VariablesToRestore maps are TF's, and TF's evaluation graph restores the
// averages from flowtrain's checkpoint.
TEST(InteropTest, ExponentialMovingAverageIsTensorFlows) {
  const std::string dir = MakeTempDir("interop_ema");
  constexpr int kSteps = 4;
  auto restore_map_json = [](const std::map<std::string, Variable>& map) {
    std::string out = "{";
    for (const auto& [key, v] : map)
      out += (out.size() > 1 ? ", " : "") + Quote(key) + ": " + Quote(v.op().name());
    return out + "}";
  };
  std::string train_map, eval_map;
  {
    Graph g;
    auto as_default = g.AsDefault();
    Variable w(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})), {.name = "w"});
    Variable b(Tensor::FromVector<float>({0.5f, -0.5f, 2}), {.name = "b", .use_resource = true});
    Variable step(Tensor::Scalar<int64_t>(0), {.name = "global_step", .trainable = false});
    Output loss = ops::Identity(ops::ReduceSum(w.value() * w.value()) + ops::ReduceSum(b.value()), "loss");
    Operation move;
    {
      auto after_loss = g.ControlDependencies({loss.op()});  // as check_moving_averages.py
      move = ops::Group({w.AssignAdd(ops::Fill(ops::Const<int32_t>({2, 3}), ops::Const(0.5f))).op(),
                         b.AssignSub(ops::Const<float>({0.25f, 1.0f, -0.5f})).op(),
                         step.AssignAdd(ops::Const<int64_t>(1)).op()},
                        "move");
    }
    train::ExponentialMovingAverage ema(0.99, {.num_updates = step.value()});
    train::ExponentialMovingAverage loss_ema(0.9, {.zero_debias = true, .name = "LossAverage"});
    Operation averages, loss_average;
    {
      auto deps = g.ControlDependencies({move});
      averages = ema.Apply({w, b});
      loss_average = loss_ema.ApplyToTensors({loss});
    }
    Operation train_op = ops::Group({averages, loss_average}, "train");
    train::Saver saver;
    Session sess(g);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
    for (int i = 0; i < kSteps; ++i) sess.Run({}, {}, {train_op});
    std::vector<std::pair<std::string, Tensor>> state;
    for (const Variable& v : ops::GlobalVariables(&g))
      state.emplace_back(v.op().name(), v.value().Eval(sess));
    WriteFile(dir + "/state.json", TensorListJson(state));
    saver.Save(sess, dir + "/model.ckpt");
    train_map = restore_map_json(ema.VariablesToRestore());
  }
  {
    Graph g;
    auto as_default = g.AsDefault();
    Variable w(Tensor(DT_FLOAT, TensorShape({2, 3})), {.name = "w"});
    Variable b(Tensor(DT_FLOAT, TensorShape({3})), {.name = "b", .use_resource = true});
    Variable step(Tensor::Scalar<int64_t>(0), {.name = "global_step", .trainable = false});
    eval_map = restore_map_json(train::ExponentialMovingAverage(0.99).VariablesToRestore());
  }
  WriteFile(dir + "/restore.json", "{\"train\": " + train_map + ",\n\"eval\": " + eval_map + "}");
  RunChecker("check_moving_averages.py", {"--dir", dir, "--steps", std::to_string(kSteps)});
}

TEST(InteropTest, HistogramBinsMatchTensorBoardsDashboard) {
  const std::string dir = MakeTempDir("interop_histogram_bins");
  const std::string logdir = dir + "/logs";
  Graph g;
  auto as_default = g.AsDefault();
  Output scale = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "scale");
  std::vector<float> pre;
  for (int k = 0; k < 500; ++k) pre.push_back(std::sin(0.37f * k) - 0.2f);
  summary::Histogram("activations", ops::Relu(ops::Mul(ops::Const<float>(pre, TensorShape({500})), scale)));
  Output merged = summary::MergeAll();
  {
    Session sess(g);
    summary::FileWriter writer(logdir);
    for (int64_t step : {0, 1, 2}) {
      const Tensor s = sess.Run({{scale, Tensor::Scalar<float>(1.0f + step)}}, {merged})[0];
      writer.AddSummary(s.scalar<std::string>(), step);
    }
  }
  summary::EventAccumulator run(logdir);
  run.Reload();
  std::string histograms = "[";
  for (const summary::UniformHistogram& h : summary::RebinSeries(run.Histograms("activations"))) {
    if (histograms.size() > 1) histograms += ",\n";
    histograms += "{\"step\":" + std::to_string(h.step) + ",\"bins\":[";
    for (size_t i = 0; i < h.bins.size(); ++i) {
      histograms += StrCat(i > 0 ? "," : "", "{\"left\":", h.bins[i].left, ",\"width\":", h.bins[i].width,
                           ",\"count\":", h.bins[i].count, "}");
    }
    histograms += "]}";
  }
  histograms += "]";
  WriteFile(dir + "/expected.json",
            "{\"logdir\":" + Quote(logdir) + ",\"tag\":\"activations\",\n\"histograms\":" + histograms + "}");
  RunChecker("check_histogram_bins.py", {"--expected", dir + "/expected.json"});
}

}  // namespace
}  // namespace flowtrain::testing
