#include "flowtrain/ops/random_ops.h"

#include <set>
#include <string_view>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"

namespace flowtrain {
namespace {

void RandomShape(InferenceContext& c) {
  c.WithRank(c.input(0), 1);
  c.set_output(0, c.InputAsShape(0));
}

void RandomUniformIntShape(InferenceContext& c) {
  c.WithRank(c.input(0), 1);
  c.WithRank(c.input(1), 0);
  c.WithRank(c.input(2), 0);
  c.set_output(0, c.InputAsShape(0));
}

// TF's _truncate_seed: seeds live in [0, 2^31 - 1).
int64_t TruncateSeed(int64_t seed) {
  constexpr int64_t kMaxInt32 = (int64_t{1} << 31) - 1;
  int64_t r = seed % kMaxInt32;
  return r < 0 ? r + kMaxInt32 : r;
}

Graph& GraphOf(const Output& o) { return *o.graph(); }

Output ShapeConst(const std::vector<int64_t>& shape, std::string_view name) {
  std::vector<int32_t> dims;
  for (int64_t d : shape) {
    if (d < 0) InvalidArgument("A random tensor's shape must be fully defined, got dimension ", d);
    dims.push_back(static_cast<int32_t>(d));
  }
  return ops::Const(Tensor::FromVector<int32_t>(dims), name);
}

Tensor ScalarOfType(DataType dtype, double value) {
  return DispatchNumericType(dtype, "random op scalar",
                             [&]<typename T>() { return Tensor::Scalar<T>(static_cast<T>(value)); });
}

}  // namespace

#define FT_RANDOM_FLOAT_OP(Name)                      \
  FT_REGISTER_OP(Name)                                \
      .Input("shape: T")                              \
      .Output("output: dtype")                        \
      .Attr("seed: int = 0")                          \
      .Attr("seed2: int = 0")                         \
      .Attr("dtype: {half, bfloat16, float, double}") \
      .Attr("T: {int32, int64}")                      \
      .SetIsStateful()                                \
      .SetShapeFn(RandomShape)
FT_RANDOM_FLOAT_OP("RandomUniform");
FT_RANDOM_FLOAT_OP("RandomStandardNormal");
FT_RANDOM_FLOAT_OP("TruncatedNormal");
#undef FT_RANDOM_FLOAT_OP

FT_REGISTER_OP("RandomUniformInt")
    .Input("shape: T")
    .Input("minval: Tout")
    .Input("maxval: Tout")
    .Output("output: Tout")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("Tout: {int32, int64}")
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn(RandomUniformIntShape);

FT_REGISTER_OP("RandomShuffle")
    .Input("value: T")
    .Output("output: T")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("T: type")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnchangedShape);

FT_REGISTER_OP("RandomOpStates").Output("states: string").SetIsStateful().SetShapeFn(shape_fns::ScalarShape);
FT_REGISTER_OP("RestoreRandomOpStates").Input("states: string").SetIsStateful();

FT_REGISTER_NO_GRADIENT("RandomUniform");
FT_REGISTER_NO_GRADIENT("RandomStandardNormal");
FT_REGISTER_NO_GRADIENT("TruncatedNormal");
FT_REGISTER_NO_GRADIENT("RandomUniformInt");
FT_REGISTER_NO_GRADIENT("RandomShuffle");

namespace ops {

SeedPair GetSeed(Graph& graph, std::optional<int64_t> op_seed) {
  SeedPair seeds;
  std::optional<int64_t> graph_seed = graph.seed();
  if (graph_seed.has_value()) {
    seeds.seed = TruncateSeed(*graph_seed);
    seeds.seed2 = TruncateSeed(op_seed.has_value() ? *op_seed : graph.NextOpSeed());
  } else if (op_seed.has_value()) {
    seeds.seed = kDefaultGraphSeed;
    seeds.seed2 = TruncateSeed(*op_seed);
  } else {
    return seeds;  // (0, 0): the kernel seeds itself nondeterministically
  }
  // (0, 0) means "unseeded" to the kernels; TF moves a deliberate (0, 0) elsewhere.
  if (seeds.seed == 0 && seeds.seed2 == 0) seeds.seed2 = (int64_t{1} << 31) - 1;
  return seeds;
}

static Output RandomFloatOp(std::string_view op, Output shape, DataType dtype, SeedPair seeds,
                            std::string_view name) {
  if (!IsFloatingType(dtype)) {
    InvalidArgument(op, " '", name, "': dtype must be a floating point type, got ", DataTypeString(dtype));
  }
  return NodeBuilder(op, name)
      .Input(shape)
      .Attr("dtype", dtype)
      .Attr("seed", seeds.seed)
      .Attr("seed2", seeds.seed2)
      .Finalize();
}

Output RandomUniform(Output shape, DataType dtype, SeedPair seeds, std::string_view name) {
  return RandomFloatOp("RandomUniform", shape, dtype, seeds, name);
}
Output RandomStandardNormal(Output shape, DataType dtype, SeedPair seeds, std::string_view name) {
  return RandomFloatOp("RandomStandardNormal", shape, dtype, seeds, name);
}
Output TruncatedNormal(Output shape, DataType dtype, SeedPair seeds, std::string_view name) {
  return RandomFloatOp("TruncatedNormal", shape, dtype, seeds, name);
}

Output RandomUniformInt(Output shape, Output minval, Output maxval, SeedPair seeds, std::string_view name) {
  return NodeBuilder("RandomUniformInt", name)
      .Input(shape)
      .Input(minval)
      .Input(maxval)
      .Attr("seed", seeds.seed)
      .Attr("seed2", seeds.seed2)
      .Finalize();
}

Output RandomShuffle(Output value, SeedPair seeds, std::string_view name) {
  return NodeBuilder("RandomShuffle", name)
      .Input(value)
      .Attr("seed", seeds.seed)
      .Attr("seed2", seeds.seed2)
      .Finalize();
}

namespace random {
namespace {

// The shared body of the tf.random.* float functions: under scope `name`, the shape and the two
// parameters as constants, the raw op, then `raw * scale + offset` with the final Add named
// `name` itself (TF's `math_ops.add(rnd * ..., ..., name=name)`).
enum class Kind { kUniform, kNormal, kTruncated };

Output ScaledRandom(Kind kind, Graph& graph, const std::function<Output()>& make_shape, double a, double b,
                    DataType dtype, std::optional<int64_t> seed, std::string_view name) {
  auto as_default = graph.AsDefault();
  OpNameScope scope(graph, name);
  Output shape = make_shape();
  const bool uniform = kind == Kind::kUniform;
  if (uniform && (dtype == DT_INT32 || dtype == DT_INT64)) {
    Output lo = Const(ScalarOfType(dtype, a), "min");
    Output hi = Const(ScalarOfType(dtype, b), "max");
    const SeedPair seeds = GetSeed(graph, seed);
    scope.Exit();
    return NodeBuilder("RandomUniformInt", scope.op_name())
        .ExactName()
        .Input(shape)
        .Input(lo)
        .Input(hi)
        .Attr("seed", seeds.seed)
        .Attr("seed2", seeds.seed2)
        .Finalize();
  }
  Output first = Const(ScalarOfType(dtype, a), uniform ? "min" : "mean");
  Output second = Const(ScalarOfType(dtype, b), uniform ? "max" : "stddev");
  const SeedPair seeds = GetSeed(graph, seed);
  Output raw;
  switch (kind) {
    case Kind::kUniform:
      raw = RandomUniform(shape, dtype, seeds);
      break;
    case Kind::kNormal:
      raw = RandomStandardNormal(shape, dtype, seeds);
      break;
    case Kind::kTruncated:
      raw = ops::TruncatedNormal(shape, dtype, seeds);
      break;
  }
  Output scaled = uniform ? raw * (second - first) : raw * second;
  scope.Exit();
  return NodeBuilder("Add", scope.op_name()).ExactName().Input(scaled).Input(first).Finalize();
}

}  // namespace

Output Uniform(const std::vector<int64_t>& shape, double minval, double maxval, DataType dtype,
               std::optional<int64_t> seed, std::string_view name) {
  return ScaledRandom(
      Kind::kUniform, GetDefaultGraph(), [&] { return ShapeConst(shape, "shape"); }, minval, maxval, dtype,
      seed, name);
}
Output Uniform(Output shape, double minval, double maxval, DataType dtype, std::optional<int64_t> seed,
               std::string_view name) {
  return ScaledRandom(
      Kind::kUniform, GraphOf(shape), [&] { return shape; }, minval, maxval, dtype, seed, name);
}
Output Normal(const std::vector<int64_t>& shape, double mean, double stddev, DataType dtype,
              std::optional<int64_t> seed, std::string_view name) {
  return ScaledRandom(
      Kind::kNormal, GetDefaultGraph(), [&] { return ShapeConst(shape, "shape"); }, mean, stddev, dtype, seed,
      name);
}
Output Normal(Output shape, double mean, double stddev, DataType dtype, std::optional<int64_t> seed,
              std::string_view name) {
  return ScaledRandom(
      Kind::kNormal, GraphOf(shape), [&] { return shape; }, mean, stddev, dtype, seed, name);
}
Output TruncatedNormal(const std::vector<int64_t>& shape, double mean, double stddev, DataType dtype,
                       std::optional<int64_t> seed, std::string_view name) {
  return ScaledRandom(
      Kind::kTruncated, GetDefaultGraph(), [&] { return ShapeConst(shape, "shape"); }, mean, stddev, dtype,
      seed, name);
}

Output Shuffle(Output value, std::optional<int64_t> seed, std::string_view name) {
  return RandomShuffle(value, GetSeed(GraphOf(value), seed), name);
}

}  // namespace random

std::shared_ptr<SaveableObject> MakeSaveableRandomOpStates(Graph* graph) {
  Graph& g = graph != nullptr ? *graph : GetDefaultGraph();
  auto as_default = g.AsDefault();
  auto saveable = std::make_shared<SaveableObject>();
  saveable->op = NodeBuilder("RandomOpStates", "RandomOpStates").Finalize();
  saveable->name = saveable->op.name();
  saveable->specs = {{Output(saveable->op), saveable->name}};
  saveable->restore = [](const std::vector<Output>& restored) {
    return NodeBuilder("RestoreRandomOpStates", "RestoreRandomOpStates").Input(restored[0]).Finalize();
  };
  return saveable;
}

bool DrawsRandomNumbersInSteps(Graph& graph) {
  // The kernels whose generators live in the session's RandomOpStates.
  static const std::set<std::string_view> kRandomOps = {
      "RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt", "RandomShuffle"};
  std::set<const Node*> in_initializers;
  std::vector<const Node*> stack;
  std::vector<Variable> variables = GlobalVariables(&graph);
  for (const Variable& v : LocalVariables(&graph)) variables.push_back(v);
  for (const Variable& v : variables) {
    if (v.initializer()) stack.push_back(v.initializer().node());
  }
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!in_initializers.insert(n).second) continue;
    for (const Endpoint& in : n->inputs()) stack.push_back(in.node);
    for (const Node* c : n->control_inputs()) stack.push_back(c);
  }
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node* n = graph.node(id);
    if (n != nullptr && kRandomOps.contains(n->type()) && !in_initializers.contains(n)) return true;
  }
  return false;
}

}  // namespace ops
}  // namespace flowtrain
