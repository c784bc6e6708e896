// Random ops with TF's seed semantics. The raw ops (RandomUniform, RandomStandardNormal,
// TruncatedNormal, RandomUniformInt, RandomShuffle) carry attrs `seed` and `seed2`; the
// tf.random.* style functions in `ops::random` build them under TF's name scopes
// ("random_uniform/RandomUniform", "random_uniform/mul", "random_uniform") and turn an optional
// op seed into the (seed, seed2) pair as tf.compat.v1.get_seed does:
//
//   graph seed  op seed   →  (seed, seed2)
//   unset       unset        (0, 0): fresh numbers in every session
//   set         unset        (graph seed, 0, 1, 2... per op of the graph asking)
//   unset       set          (87654321, op seed)
//   set         set          (graph seed, op seed)
//
// With a pair fixed, every session produces the same sequence; each kernel keeps its own
// generator, so successive runs of one node give new numbers.
//
//   g.set_seed(1);
//   Output w = ops::random::Uniform({784, 10}, -0.1, 0.1);           // "random_uniform"
//   Output n = ops::random::Normal({3}, 0.0, 1.0, DT_FLOAT, /*seed=*/7);
#ifndef FLOWTRAIN_OPS_RANDOM_OPS_H_
#define FLOWTRAIN_OPS_RANDOM_OPS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/saveable_object.h"

namespace flowtrain::ops {

// TF's DEFAULT_GRAPH_SEED, used when only an op seed is given.
inline constexpr int64_t kDefaultGraphSeed = 87654321;

// The (seed, seed2) attrs for an op about to be built in `graph` (see the table above).
struct SeedPair {
  int64_t seed = 0;
  int64_t seed2 = 0;
};
SeedPair GetSeed(Graph& graph, std::optional<int64_t> op_seed);

// ---- Raw ops. `shape` is a 1-D int32/int64 tensor. ----
Output RandomUniform(Output shape, DataType dtype, SeedPair seeds = {},
                     std::string_view name = "RandomUniform");
Output RandomStandardNormal(Output shape, DataType dtype, SeedPair seeds = {},
                            std::string_view name = "RandomStandardNormal");
// Normal samples with those beyond two standard deviations redrawn.
Output TruncatedNormal(Output shape, DataType dtype, SeedPair seeds = {},
                       std::string_view name = "TruncatedNormal");
// Integers uniform in [minval, maxval) (scalars of the output's type, int32 or int64).
Output RandomUniformInt(Output shape, Output minval, Output maxval, SeedPair seeds = {},
                        std::string_view name = "RandomUniformInt");
// `value` with its first dimension randomly permuted.
Output RandomShuffle(Output value, SeedPair seeds = {}, std::string_view name = "RandomShuffle");

namespace random {

// tf.random.uniform: values in [minval, maxval). Integer dtypes use RandomUniformInt.
Output Uniform(const std::vector<int64_t>& shape, double minval = 0.0, double maxval = 1.0,
               DataType dtype = DT_FLOAT, std::optional<int64_t> seed = std::nullopt,
               std::string_view name = "random_uniform");
Output Uniform(Output shape, double minval = 0.0, double maxval = 1.0, DataType dtype = DT_FLOAT,
               std::optional<int64_t> seed = std::nullopt, std::string_view name = "random_uniform");
// tf.random.normal.
Output Normal(const std::vector<int64_t>& shape, double mean = 0.0, double stddev = 1.0,
              DataType dtype = DT_FLOAT, std::optional<int64_t> seed = std::nullopt,
              std::string_view name = "random_normal");
Output Normal(Output shape, double mean = 0.0, double stddev = 1.0, DataType dtype = DT_FLOAT,
              std::optional<int64_t> seed = std::nullopt, std::string_view name = "random_normal");
// tf.random.truncated_normal: normal values, redrawn beyond two stddevs of the mean.
Output TruncatedNormal(const std::vector<int64_t>& shape, double mean = 0.0, double stddev = 1.0,
                       DataType dtype = DT_FLOAT, std::optional<int64_t> seed = std::nullopt,
                       std::string_view name = "truncated_normal");
// tf.random.shuffle.
Output Shuffle(Output value, std::optional<int64_t> seed = std::nullopt,
               std::string_view name = "RandomShuffle");

}  // namespace random

// Beyond TF: the positions of the session's random generators in checkpoints. With this in the
// SAVEABLE_OBJECTS collection, a Saver (and so a monitored session) saves how far every random
// op of the session has drawn, under the key "RandomOpStates", and a restore puts them back:
// a resumed run then draws the dropout masks an uninterrupted run would have drawn (TF 1.x
// restarts every op from its seeds). Ops RandomOpStates (a string scalar) and
// RestoreRandomOpStates; on a cluster, the states of the task that runs the save.
//
//   graph.AddToCollection(GraphKeys::kSaveableObjects, ops::MakeSaveableRandomOpStates());
std::shared_ptr<SaveableObject> MakeSaveableRandomOpStates(Graph* graph = nullptr);

// Beyond TF: whether `graph` has a random op whose position RandomOpStates keeps outside the
// variables' initializers, i.e. one that draws anew in training steps (dropout). Only those
// make a resumed run differ without MakeSaveableRandomOpStates: initializers run once, and a
// resumed run restores their results instead. MonitoredTrainingSession's default saver adds
// the random ops' positions only then, so that graphs without such ops keep TF's ops.
//
//   if (ops::DrawsRandomNumbersInSteps(graph)) saveables.push_back(ops::MakeSaveableRandomOpStates(&graph));
bool DrawsRandomNumbersInSteps(Graph& graph);

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_RANDOM_OPS_H_
