#include "flowtrain/ops/clip_ops.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain::ops {
namespace {

Graph& GraphOfList(const std::vector<Output>& tensors, std::string_view op) {
  for (const Output& t : tensors) {
    if (t) return *t.graph();
  }
  InvalidArgument(op, ": needs at least one tensor");
}

}  // namespace

Output GlobalNorm(const std::vector<Output>& tensors, std::string_view name) {
  Graph& graph = GraphOfList(tensors, "global_norm");
  auto as_default = graph.AsDefault();
  OpNameScope scope(graph, name);
  std::vector<Output> squared_sums;
  DataType dtype = DT_INVALID;
  for (const Output& t : tensors) {
    if (!t) continue;
    if (dtype == DT_INVALID) dtype = t.dtype();
    if (t.dtype() != dtype) {
      InvalidArgument("global_norm: all tensors need one dtype, got ", DataTypeString(dtype), " and ",
                      DataTypeString(t.dtype()));
    }
    squared_sums.push_back(ReduceSum(Square(t)));
  }
  Output total = squared_sums.size() == 1 ? squared_sums[0] : AddN(squared_sums);
  scope.Exit();
  return NodeBuilder("Sqrt", scope.op_name()).ExactName().Input(total).Finalize();
}

std::pair<std::vector<Output>, Output> ClipByGlobalNorm(const std::vector<Output>& tensors, Output clip_norm,
                                                        std::string_view name) {
  Graph& graph = GraphOfList(tensors, "clip_by_global_norm");
  auto as_default = graph.AsDefault();
  auto scope = graph.NameScope(name);
  const std::string prefix = graph.CurrentNameScope();
  Output norm = GlobalNorm(tensors);
  const DataType dtype = norm.dtype();
  clip_norm = clip_norm.dtype() == dtype ? clip_norm : Cast(clip_norm, dtype);
  auto one = [&] {
    return DispatchNumericType(dtype, "clip_by_global_norm",
                               [&]<typename T>() { return Const(Tensor::Scalar<T>(T(1))); });
  };
  // clip_norm * min(1 / norm, 1 / clip_norm); adding (norm - norm) turns an infinite or NaN
  // norm into NaN everywhere instead of silently zeroing the values.
  Output scale = clip_norm * Minimum(one() / norm, one() / clip_norm) + (norm - norm);
  std::vector<Output> clipped;
  const std::string base = prefix.substr(0, prefix.size() - 1);
  const std::string short_name = base.substr(base.rfind('/') + 1);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i]) {
      clipped.emplace_back();
      continue;
    }
    clipped.push_back(Identity(tensors[i] * scale, StrCat(short_name, "_", i)));
  }
  return {clipped, norm};
}

std::pair<std::vector<Output>, Output> ClipByGlobalNorm(const std::vector<Output>& tensors, float clip_norm,
                                                        std::string_view name) {
  Graph& graph = GraphOfList(tensors, "clip_by_global_norm");
  auto as_default = graph.AsDefault();
  return ClipByGlobalNorm(tensors, Const(clip_norm, "clip_norm"), name);
}

namespace {

// `grads` as the tensors clip_by_global_norm works on: the values of the sparse ones.
std::vector<Output> ValuesOf(const std::vector<GradientValue>& grads) {
  std::vector<Output> values;
  for (const GradientValue& g : grads) values.push_back(g.is_sparse() ? g.slices().values : g.dense());
  return values;
}

std::vector<GradientValue> WithValues(const std::vector<GradientValue>& grads,
                                      const std::vector<Output>& values) {
  std::vector<GradientValue> out;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].is_sparse()) {
      out.emplace_back(IndexedSlices{values[i], grads[i].slices().indices, grads[i].slices().dense_shape});
    } else {
      out.emplace_back(values[i]);
    }
  }
  return out;
}

}  // namespace

std::pair<std::vector<Output>, Output> ClipByGlobalNorm(std::initializer_list<Output> tensors,
                                                        Output clip_norm, std::string_view name) {
  return ClipByGlobalNorm(std::vector<Output>(tensors), std::move(clip_norm), name);
}

std::pair<std::vector<Output>, Output> ClipByGlobalNorm(std::initializer_list<Output> tensors,
                                                        float clip_norm, std::string_view name) {
  return ClipByGlobalNorm(std::vector<Output>(tensors), clip_norm, name);
}

std::pair<std::vector<GradientValue>, Output> ClipByGlobalNorm(const std::vector<GradientValue>& grads,
                                                               Output clip_norm, std::string_view name) {
  auto [clipped, norm] = ClipByGlobalNorm(ValuesOf(grads), std::move(clip_norm), name);
  return {WithValues(grads, clipped), norm};
}

std::pair<std::vector<GradientValue>, Output> ClipByGlobalNorm(const std::vector<GradientValue>& grads,
                                                               float clip_norm, std::string_view name) {
  auto [clipped, norm] = ClipByGlobalNorm(ValuesOf(grads), clip_norm, name);
  return {WithValues(grads, clipped), norm};
}

}  // namespace flowtrain::ops
