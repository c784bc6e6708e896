#include "flowtrain/ops/gradients.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/internal/control_flow_context.h"
#include "flowtrain/ops/internal/control_flow_grad.h"
#include "flowtrain/ops/internal/control_flow_state.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain {

GradientRegistry* GradientRegistry::Global() {
  static GradientRegistry* registry = new GradientRegistry();
  return registry;
}

void GradientRegistry::Register(std::string op_type, GradientFunction fn) {
  absl::MutexLock lock(&mu_);
  Entry& entry = entries_[op_type];
  if (entry.dense_registered || !entry.differentiable) {
    AlreadyExists("A gradient for op type '", op_type, "' is registered twice");
  }
  entry.dense_registered = true;
  entry.fn = std::move(fn);
}

void GradientRegistry::RegisterSparse(std::string op_type, SparseGradientFunction fn) {
  absl::MutexLock lock(&mu_);
  Entry& entry = entries_[op_type];
  if (entry.sparse_fn || !entry.differentiable) {
    AlreadyExists("A sparse gradient for op type '", op_type, "' is registered twice");
  }
  entry.sparse_fn = std::move(fn);
  if (!entry.dense_registered) {
    entry.fn = [sparse = entry.sparse_fn](const Operation& op, const std::vector<Output>& dy) {
      std::vector<ops::GradientValue> in_grads =
          sparse(op, std::vector<ops::GradientValue>(dy.begin(), dy.end()));
      std::vector<Output> dense;
      for (const ops::GradientValue& g : in_grads) dense.push_back(ops::ToDense(g));
      return dense;
    };
  }
}

void GradientRegistry::RegisterNoGradient(std::string op_type) {
  absl::MutexLock lock(&mu_);
  if (!entries_.emplace(op_type, Entry{.differentiable = false}).second) {
    AlreadyExists("A gradient for op type '", op_type, "' is registered twice");
  }
}

const GradientFunction* GradientRegistry::Lookup(const Operation& op) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(op.type());
  if (it == entries_.end()) {
    NotFound("No gradient defined for operation '", op.name(), "' (op type: ", op.type(), ")");
  }
  return it->second.differentiable ? &it->second.fn : nullptr;
}

const SparseGradientFunction* GradientRegistry::LookupSparse(const Operation& op) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(op.type());
  if (it == entries_.end() || !it->second.sparse_fn) return nullptr;
  return &it->second.sparse_fn;
}

namespace ops {
namespace {

bool IsDifferentiable(DataType dtype) { return IsFloatingType(BaseType(dtype)); }

// `grads` through ops::Tuple when more than one is set (dense ones and the values and indices
// of sparse ones), so that none is used before all are computed.
std::vector<GradientValue> GateGradients(const std::vector<GradientValue>& grads) {
  std::vector<Output> parts;
  for (const GradientValue& g : grads) {
    if (!g) continue;
    if (g.is_sparse()) {
      parts.push_back(g.slices().values);
      parts.push_back(g.slices().indices);
    } else {
      parts.push_back(g.dense());
    }
  }
  if (parts.size() < 2) return grads;
  std::vector<Output> gated = ops::Tuple(parts);
  std::vector<GradientValue> out;
  size_t k = 0;
  for (const GradientValue& g : grads) {
    if (!g) {
      out.emplace_back();
    } else if (g.is_sparse()) {
      out.emplace_back(IndexedSlices{gated[k], gated[k + 1], g.slices().dense_shape});
      k += 2;
    } else {
      out.emplace_back(gated[k++]);
    }
  }
  return out;
}

// The gradients of ys with respect to xs; with `to_dense`, sparse results are made dense in
// the gradients' name scope.
std::vector<GradientValue> ComputeGradients(const std::vector<Output>& ys, const std::vector<Output>& xs,
                                            const std::vector<Output>& grad_ys, std::string_view name,
                                            bool gate_gradients, bool to_dense) {
  if (ys.empty()) InvalidArgument("Gradients needs at least one y");
  if (!grad_ys.empty() && grad_ys.size() != ys.size()) {
    InvalidArgument("Passed ", grad_ys.size(), " grad_ys for ", ys.size(), " ys");
  }
  Graph& graph = *ys.front().graph();
  for (const Output& t : ys) FT_REQUIRE(t && t.graph() == &graph, "All ys must be in one graph");
  for (const Output& t : xs) FT_REQUIRE(t && t.graph() == &graph, "All xs must be in the graph of ys");
  auto as_default = graph.AsDefault();
  auto scope = graph.NameScope(name);

  // Consumers of every node, for the forward walk from xs.
  std::unordered_map<const Node*, std::vector<Node*>> consumers;
  for (const Operation& op : graph.operations()) {
    for (const Endpoint& in : op.node()->inputs()) consumers[in.node].push_back(op.node());
  }
  // Ops reachable from xs, then those of them that reach ys: the ops between.
  std::unordered_set<const Node*> reached;
  std::vector<const Node*> stack;
  for (const Output& x : xs) {
    if (reached.insert(x.node()).second) stack.push_back(x.node());
  }
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (Node* c : consumers[n]) {
      if (reached.insert(c).second) stack.push_back(c);
    }
  }
  // `between_list` keeps the walk's order (from ys backwards), which orders the loops'
  // gradient states as TF does: an outer loop's before the loops nested in it.
  std::unordered_set<const Node*> between;
  std::vector<const Node*> between_list;
  std::deque<const Node*> walk;
  for (const Output& y : ys) {
    if (reached.count(y.node()) && between.insert(y.node()).second) {
      walk.push_back(y.node());
      between_list.push_back(y.node());
    }
  }
  while (!walk.empty()) {
    const Node* n = walk.front();
    walk.pop_front();
    for (const Endpoint& in : n->inputs()) {
      if (reached.count(in.node) && between.insert(in.node).second) {
        walk.push_back(in.node);
        between_list.push_back(in.node);
      }
    }
  }

  struct EndpointHash {
    size_t operator()(const Endpoint& e) const {
      return std::hash<const void*>()(e.node) * 31 + static_cast<size_t>(e.index);
    }
  };
  std::unordered_map<Endpoint, std::vector<GradientValue>, EndpointHash> grads;
  for (size_t i = 0; i < ys.size(); ++i) {
    const Output& y = ys[i];
    Output g;
    if (!grad_ys.empty() && grad_ys[i]) {
      g = grad_ys[i];
    } else {
      if (!IsDifferentiable(y.dtype())) {
        InvalidArgument("Gradients of ", y.name(), " of type ", DataTypeString(y.dtype()),
                        " are not defined; pass grad_ys");
      }
      Output one = ops::Const(Tensor::Scalar<float>(1.0f), StrCat("grad_ys_", i));
      if (y.dtype() != DT_FLOAT) one = ops::Cast(one, y.dtype());
      g = ops::Fill(ops::Shape(y), one);
    }
    grads[Endpoint{y.node(), y.index()}].push_back(g);
  }

  // A gradient loop for every while loop between xs and ys (after grad_ys, as TF).
  control_flow_internal::ControlFlowState loop_state(graph);
  for (size_t i = 0; i < between_list.size(); ++i) {
    Operation op(const_cast<Node*>(between_list[i]));
    if (control_flow_internal::IsLoopExit(op)) loop_state.AddWhileContext(op, between, between_list);
  }

  // Pending count: consumers (edges) inside `between` still to deliver their gradient.
  std::unordered_map<const Node*, int> pending;
  for (const Node* n : between) {
    for (const Endpoint& in : n->inputs()) {
      if (between.count(in.node)) ++pending[in.node];
    }
  }
  auto has_grads = [&](const Node* n) {
    for (int i = 0; i < n->num_outputs(); ++i) {
      auto it = grads.find(Endpoint{const_cast<Node*>(n), i});
      if (it != grads.end() && !it->second.empty()) return true;
    }
    return false;
  };

  std::deque<const Node*> ready;
  std::unordered_set<const Node*> ys_ops;
  for (const Node* n : between) {
    if (pending[n] != 0) continue;
    const bool is_y = std::any_of(ys.begin(), ys.end(), [n](const Output& y) { return y.node() == n; });
    if (is_y) ys_ops.insert(n);
    // Exits nobody consumes wait until their loop has seen all its Exits.
    if (is_y || !control_flow_internal::IsLoopExit(Operation(const_cast<Node*>(n)))) ready.push_back(n);
  }
  for (const Output& y : loop_state.ProcessUnusedLoopExits(pending, ys_ops)) {
    if (IsDifferentiable(y.dtype()))
      grads[Endpoint{y.node(), y.index()}].push_back(loop_state.ZerosLikeForExit(y));
    ready.push_back(y.node());
  }
  // Deterministic order: process ready ops by decreasing id (reverse creation order).
  auto pop_ready = [&] {
    auto it = std::max_element(ready.begin(), ready.end(),
                               [](const Node* a, const Node* b) { return a->id() < b->id(); });
    const Node* n = *it;
    ready.erase(it);
    return n;
  };
  // An Exit whose gradient is complete: once all its loop's Exits are, they go ahead (with
  // zeros for the unused ones, if any has a gradient).
  auto exit_ready = [&](const Node* exit) {
    control_flow_internal::GradLoopState* state =
        loop_state.GetGradState(Operation(const_cast<Node*>(exit)), /*before=*/false);
    state->deferred_exits().push_back(Output(const_cast<Node*>(exit), 0));
    if (--state->pending_exits_count() != 0) return;
    bool any_grad = false;
    for (const Output& y : state->deferred_exits()) {
      if (has_grads(y.node())) {
        any_grad = true;
        ready.push_back(y.node());
      } else {
        state->unused_exits().push_back(y);
      }
    }
    for (const Output& y : state->unused_exits()) {
      if (any_grad && IsDifferentiable(y.dtype()))
        grads[Endpoint{y.node(), y.index()}].push_back(loop_state.ZerosLikeForExit(y));
      ready.push_back(y.node());
    }
  };
  while (!ready.empty()) {
    const Node* node = pop_ready();
    Operation op(const_cast<Node*>(node));
    std::vector<GradientValue> out_values(node->num_outputs());
    bool any = false;
    control_flow_internal::GradLoopState* in_state = loop_state.GetGradState(op, /*before=*/true);
    {
      // Gradients of an op in a loop add up inside the gradient loop (an Exit's outside it).
      std::optional<control_flow_internal::ContextScope> in_loop;
      if (in_state != nullptr) in_loop.emplace(graph, in_state->grad_context());
      for (int i = 0; i < node->num_outputs(); ++i) {
        auto it = grads.find(Endpoint{const_cast<Node*>(node), i});
        // A resource handle's gradient is its variable's (ReadVariableOp's gradient): it
        // passes through the Enters and Switches that bring the handle into loops and conds.
        if (it != grads.end() &&
            (IsDifferentiable(node->output_type(i)) || BaseType(node->output_type(i)) == DT_RESOURCE)) {
          out_values[i] = AggregateGradients(it->second);
          // Inside loops gradients stay dense (TF's loops handle IndexedSlices specially).
          if (in_state != nullptr && out_values[i].is_sparse()) out_values[i] = ToDense(out_values[i]);
          // A loop Switch is visited twice: the second visit reuses the sum.
          if (out_values[i]) it->second = {out_values[i]};
          any = any || static_cast<bool>(out_values[i]);
        }
      }
    }
    bool inputs_between = false;
    for (const Endpoint& in : node->inputs()) inputs_between = inputs_between || between.count(in.node);
    if (any && inputs_between) {
      const GradientFunction* fn = GradientRegistry::Global()->Lookup(op);
      const SparseGradientFunction* sparse_fn = GradientRegistry::Global()->LookupSparse(op);
      if (fn != nullptr) {
        control_flow_internal::GradLoopState* state = loop_state.GetGradState(op, /*before=*/false);
        if (state != nullptr || in_state != nullptr) sparse_fn = nullptr;
        std::optional<control_flow_internal::ContextScope> in_loop;
        // Every gradient function but the sparse-aware ones sees dense gradients (TF's ops
        // convert IndexedSlices they are given).
        std::vector<Output> out_grads;
        if (sparse_fn == nullptr) {
          for (const GradientValue& g : out_values) out_grads.push_back(ToDense(g));
          if (state != nullptr) {
            in_loop.emplace(graph, state->grad_context());
            for (int i = 0; i < node->num_outputs(); ++i) {
              if (!out_grads[i] && IsDifferentiable(node->output_type(i)) &&
                  (op.type() == "Switch" || op.type() == "RefSwitch"))
                out_grads[i] = loop_state.ZerosLike(op, i);
            }
          } else {
            control_flow_internal::FillMissingCondSwitchGradients(op, out_grads);
          }
        }
        std::vector<GradientValue> in_grads;
        {
          auto op_scope = graph.NameScope(StrCat(node->name(), "_grad"));
          if (sparse_fn != nullptr) {
            in_grads = (*sparse_fn)(op, out_values);
          } else {
            std::vector<Output> dense = (*fn)(op, out_grads);
            in_grads.assign(dense.begin(), dense.end());
          }
          if (gate_gradients && in_grads.size() == static_cast<size_t>(node->num_inputs())) {
            // Unlike TF, only the gradients that are used are gated, so that the gate does not
            // make a run compute one nobody needs (a first layer's gradient of its input).
            std::vector<GradientValue> used(in_grads.size());
            for (size_t i = 0; i < in_grads.size(); ++i) {
              if (between.count(node->input(static_cast<int>(i)).node)) used[i] = in_grads[i];
            }
            if (std::count_if(used.begin(), used.end(),
                              [](const GradientValue& g) { return static_cast<bool>(g); }) > 1) {
              in_grads = GateGradients(used);
            }
          }
        }
        if (in_grads.size() != static_cast<size_t>(node->num_inputs())) {
          Internal("Gradient function of ", node->DebugName(), " returned ", in_grads.size(),
                   " gradients for ", node->num_inputs(), " inputs");
        }
        for (int i = 0; i < node->num_inputs(); ++i) {
          const Endpoint& in = node->input(i);
          if (in_grads[i] && between.count(in.node)) grads[in].push_back(in_grads[i]);
        }
      }
    }
    for (const Endpoint& in : node->inputs()) {
      if (!between.count(in.node)) continue;
      const int left = --pending[in.node];
      Operation input(in.node);
      // A loop Switch goes once its Exit's gradient is in, and again once its body's is.
      if (left == 0 || (left > 0 && control_flow_internal::IsLoopSwitch(input))) {
        if (control_flow_internal::IsLoopExit(input)) {
          exit_ready(in.node);
        } else {
          ready.push_back(in.node);
        }
      }
    }
  }
  loop_state.PostProcessing();

  std::vector<GradientValue> result;
  for (const Output& x : xs) {
    auto it = grads.find(Endpoint{x.node(), x.index()});
    result.push_back(it == grads.end() ? GradientValue() : AggregateGradients(it->second));
    if (to_dense && result.back().is_sparse()) result.back() = ToDense(result.back());
  }
  return result;
}

}  // namespace

std::vector<Output> Gradients(const std::vector<Output>& ys, const std::vector<Output>& xs,
                              const std::vector<Output>& grad_ys, std::string_view name,
                              bool gate_gradients) {
  std::vector<Output> result;
  for (const GradientValue& g : ComputeGradients(ys, xs, grad_ys, name, gate_gradients, /*to_dense=*/true)) {
    result.push_back(g.dense());
  }
  return result;
}

std::vector<GradientValue> GradientsWithIndexedSlices(const std::vector<Output>& ys,
                                                      const std::vector<Output>& xs,
                                                      const std::vector<Output>& grad_ys,
                                                      std::string_view name, bool gate_gradients) {
  return ComputeGradients(ys, xs, grad_ys, name, gate_gradients, /*to_dense=*/false);
}

std::pair<Output, Output> ReduceBroadcastGradients(const Output& x, const Output& y, const Output& grad_x,
                                                   const Output& grad_y) {
  // When both shapes are known and equal, nothing was broadcast.
  if (x.shape().IsFullyDefined() && y.shape().IsFullyDefined() && x.shape().IsIdenticalTo(y.shape())) {
    return {grad_x, grad_y};
  }
  Output sx = ops::Shape(x);
  Output sy = ops::Shape(y);
  Operation args = ops::BroadcastGradientArgs(sx, sy);
  Output gx, gy;
  if (grad_x) gx = ops::Reshape(ops::Sum(grad_x, args.output(0)), sx);
  if (grad_y) gy = ops::Reshape(ops::Sum(grad_y, args.output(1)), sy);
  return {gx, gy};
}

}  // namespace ops
}  // namespace flowtrain
