// Batch normalisation as tf.layers builds it (TF 1.x's tf.compat.v1.layers.BatchNormalization
// and tf.compat.v1.layers.batch_normalization): the layer's variables gamma, beta,
// moving_mean and moving_variance under a per-graph unique layer name ("batch_normalization",
// "batch_normalization_1", ...), the normalisation with the batch's statistics in training and
// the moving ones in inference, and the moving-average updates put in the graph's UPDATE_OPS
// collection, which the training op must run, as TF1 code does:
//
//   Output training = ops::Placeholder(DT_BOOL, {}, "training");
//   Output h = layers::Conv2D(x, 32, {3, 3});
//   h = layers::BatchNormalizationLayer(h, training);                   // batch_normalization/...
//   Output loss = ...;
//   Operation train_op;
//   {
//     auto deps = g.ControlDependencies(g.GetCollection<Operation>(GraphKeys::kUpdateOps));
//     train_op = train::MomentumOptimizer(0.1, 0.9).Minimize(loss, step);
//   }
//
// The fused kernel (FusedBatchNormV3) is used where TF1 uses it: 4-D float inputs normalised
// over axis 1 or 3, unless the options say fused = false; elsewhere the op-by-op form
// ("moments", "batchnorm"). As in TF, the two forms give the same outputs and gradients but
// update the moving variance differently: the fused kernel's batch variance is the unbiased
// one (n / (n - 1) times the biased variance the op-by-op form uses).
#ifndef FLOWTRAIN_OPS_BATCH_NORMALIZATION_H_
#define FLOWTRAIN_OPS_BATCH_NORMALIZATION_H_

#include <optional>
#include <string>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/variables.h"

namespace flowtrain::layers {

// tf.layers.BatchNormalization's arguments, with TF's defaults.
struct BatchNormalizationOptions {
  // The axis normalised over (the channels); negative counts from the end.
  int axis = -1;
  // The moving statistics move by (1 - momentum) towards each batch's statistics.
  double momentum = 0.99;
  // Added to the variance before its square root.
  double epsilon = 1e-3;
  // Whether to add the learnt offset beta / multiply by the learnt scale gamma.
  bool center = true;
  bool scale = true;
  // Defaults: zeros for beta and moving_mean, ones for gamma and moving_variance.
  ops::Initializer beta_initializer;
  ops::Initializer gamma_initializer;
  ops::Initializer moving_mean_initializer;
  ops::Initializer moving_variance_initializer;
  // Whether gamma and beta join TRAINABLE_VARIABLES (the moving statistics never do).
  bool trainable = true;
  // nullopt or true: the fused kernel where TF1 can use it (see above); false: never.
  std::optional<bool> fused;
  // The layer's (variable and name) scope; default a unique "batch_normalization".
  std::string name;
};

// Whether the layer normalises with the batch's statistics (and updates the moving ones):
// either fixed when building, or a scalar bool tensor (e.g. a placeholder) chosen per run, for
// which the layer builds both paths under a cond, as TF's smart_cond does.
class Training {
 public:
  Training(bool value) : value_(value) {}                  // NOLINT: TF takes a Python bool
  Training(Output tensor) : tensor_(std::move(tensor)) {}  // NOLINT: or a bool tensor
  // The fixed value, nullopt for a tensor.
  std::optional<bool> value() const { return value_; }
  const Output& tensor() const { return tensor_; }

 private:
  std::optional<bool> value_;
  Output tensor_;
};

// The layer object: created with its options, it builds its variables the first time it is
// applied (in the inputs' graph) and reuses them when applied again, as a Keras layer does.
// Not thread safe; build a graph from one thread.
//
//   layers::BatchNormalization bn({.momentum = 0.9});
//   Output y = bn(x, /*training=*/true);
//   Variable mean = bn.moving_mean();                    // batch_normalization/moving_mean
class BatchNormalization {
 public:
  explicit BatchNormalization(BatchNormalizationOptions options = {});

  // Normalises `inputs` (float or double, of known rank and a known size on the axis) and
  // returns the result. Throws InvalidArgument naming the problem for an axis outside the
  // inputs' rank, an unknown channel count, another dtype, or inputs unlike those the layer
  // was built for.
  Output operator()(Output inputs, Training training = false);

  // The layer's name ("batch_normalization"); empty before it is first applied.
  const std::string& name() const { return name_; }
  // The variables, once built (gamma and beta are empty without scale and center).
  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }
  const Variable& moving_mean() const { return moving_mean_; }
  const Variable& moving_variance() const { return moving_variance_; }
  // The moving-average updates built so far (also in the graph's UPDATE_OPS); none when
  // applied with training = false.
  const std::vector<Operation>& updates() const { return updates_; }

 private:
  void Build(const Output& inputs, int axis);
  Output Fused(const Output& inputs, const Training& training, int axis);
  Output NonFused(const Output& inputs, const Training& training, int axis);
  // assign_moving_average: variable -= (variable - value) * (1 - momentum), in UPDATE_OPS;
  // `momentum` a tensor (the fused path's), or nullopt for the options' constant.
  void AddMovingAverageUpdate(const Variable& variable, const Output& value,
                              const std::optional<Output>& momentum);

  BatchNormalizationOptions options_;
  std::string name_;
  Graph* graph_ = nullptr;
  int rank_ = 0;
  int64_t channels_ = 0;
  Variable gamma_, beta_, moving_mean_, moving_variance_;
  std::vector<Operation> updates_;
};

// tf.layers.batch_normalization: a new BatchNormalization layer applied once to `inputs`.
Output BatchNormalizationLayer(Output inputs, Training training = false,
                               const BatchNormalizationOptions& options = {});

}  // namespace flowtrain::layers

#endif  // FLOWTRAIN_OPS_BATCH_NORMALIZATION_H_
