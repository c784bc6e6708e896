// Gradient clipping (tf.clip_by_global_norm): scales a list of tensors so that the L2 norm of
// all of them together is at most `clip_norm`.
//
//   auto grads_and_vars = optimizer.ComputeGradients(loss);
//   std::vector<Output> grads = ...;                       // the gradients
//   auto [clipped, norm] = ops::ClipByGlobalNorm(grads, 5.0f);
#ifndef FLOWTRAIN_OPS_CLIP_OPS_H_
#define FLOWTRAIN_OPS_CLIP_OPS_H_

#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/indexed_slices.h"

namespace flowtrain::ops {

// sqrt(sum of squares of every element of every tensor) (tf.linalg.global_norm); empty
// Outputs are skipped.
Output GlobalNorm(const std::vector<Output>& tensors, std::string_view name = "global_norm");

// Returns (t_i * clip_norm / max(global_norm, clip_norm) for every t_i, global_norm). Empty
// Outputs stay empty. A non-finite norm makes every value NaN, as in TF.
std::pair<std::vector<Output>, Output> ClipByGlobalNorm(const std::vector<Output>& tensors, Output clip_norm,
                                                        std::string_view name = "clip_by_global_norm");
std::pair<std::vector<Output>, Output> ClipByGlobalNorm(const std::vector<Output>& tensors, float clip_norm,
                                                        std::string_view name = "clip_by_global_norm");
// A braced list of Outputs (`ClipByGlobalNorm({a, b}, 5.0f)`) would otherwise fit the
// GradientValue overloads below as well as the Output ones.
std::pair<std::vector<Output>, Output> ClipByGlobalNorm(std::initializer_list<Output> tensors,
                                                        Output clip_norm,
                                                        std::string_view name = "clip_by_global_norm");
std::pair<std::vector<Output>, Output> ClipByGlobalNorm(std::initializer_list<Output> tensors,
                                                        float clip_norm,
                                                        std::string_view name = "clip_by_global_norm");
// The same over gradients as ComputeGradients gives them: a sparse one counts with its values
// (repeated indices are not summed first, as in TF) and comes back as IndexedSlices of the
// scaled values.
//
//   std::vector<ops::GradientValue> grads;                // the .first of each GradAndVar
//   auto [clipped, norm] = ops::ClipByGlobalNorm(grads, 5.0f);
std::pair<std::vector<GradientValue>, Output> ClipByGlobalNorm(const std::vector<GradientValue>& grads,
                                                               Output clip_norm,
                                                               std::string_view name = "clip_by_global_norm");
std::pair<std::vector<GradientValue>, Output> ClipByGlobalNorm(const std::vector<GradientValue>& grads,
                                                               float clip_norm,
                                                               std::string_view name = "clip_by_global_norm");

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_CLIP_OPS_H_
