#include "flowtrain/ops/control_flow.h"

#include <string>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/internal/control_flow_context.h"
#include "flowtrain/ops/math_ops.h"

namespace flowtrain::ops {

using control_flow_internal::CondContext;
using control_flow_internal::ContextScope;
using control_flow_internal::WhileContext;

namespace {

// "cond/" -> "cond": how errors name the cond or loop.
std::string ScopeName(const Graph& graph) {
  std::string scope = graph.CurrentNameScope();
  if (!scope.empty() && scope.back() == '/') scope.pop_back();
  return scope;
}

void CheckPredicate(const Output& pred, std::string_view what, std::string_view name) {
  if (!pred.valid()) InvalidArgument(what, " '", name, "': the predicate is empty");
  if (BaseType(pred.dtype()) != DT_BOOL) {
    InvalidArgument(what, " '", name, "': the predicate ", pred.name(), " must be a bool tensor, not ",
                    DataTypeString(pred.dtype()));
  }
  if (pred.shape().dims() > 0) {
    InvalidArgument(what, " '", name, "': the predicate ", pred.name(), " must be a scalar, not of shape ",
                    pred.shape().DebugString());
  }
}

void CheckResult(const Output& t, const Graph& graph, std::string_view what, std::string_view name) {
  if (!t.valid()) InvalidArgument(what, " '", name, "' returned an empty tensor");
  if (t.graph() != &graph) InvalidArgument(what, " '", name, "' returned ", t.name(), " from another graph");
}

// TF's _ShapeLessThanOrEqual: `shape` is as or more specific than `invariant`.
bool WithinInvariant(const PartialTensorShape& shape, const PartialTensorShape& invariant) {
  if (invariant.unknown_rank()) return true;
  if (shape.dims() != invariant.dims()) return false;
  for (int d = 0; d < invariant.dims(); ++d) {
    if (invariant.dim_size(d) != -1 && shape.dim_size(d) != invariant.dim_size(d)) return false;
  }
  return true;
}

std::vector<Output> BuildBranch(Graph& graph, const BranchFn& fn, const Output& pred, const Output& pivot,
                                int branch, std::string_view name) {
  CondContext* context = control_flow_internal::NewCondContext(graph, pred, pivot, branch);
  std::vector<Output> results;
  {
    ContextScope enter(graph, context);
    const std::vector<Output> returned = fn();
    const char* which = branch == 1 ? "true_fn of cond" : "false_fn of cond";
    if (returned.empty()) InvalidArgument(which, " '", name, "' must return at least one tensor");
    for (const Output& t : returned) {
      CheckResult(t, graph, which, name);
      results.push_back(context->ProcessOutputTensor(t));
    }
  }
  context->ExitResult(results);
  return results;
}

BranchFn Wrap(const SingleBranchFn& fn) {
  if (!fn) return nullptr;
  return [fn] { return std::vector<Output>{fn()}; };
}

}  // namespace

std::vector<Output> Cond(Output pred, const BranchFn& true_fn, const BranchFn& false_fn,
                         std::string_view name) {
  if (!pred.valid()) InvalidArgument("cond '", name, "': the predicate is empty");
  Graph& graph = *pred.graph();
  auto as_default = graph.AsDefault();
  auto scope = graph.NameScope(name);
  const std::string cond_name = ScopeName(graph);
  CheckPredicate(pred, "cond", cond_name);
  if (!true_fn || !false_fn) InvalidArgument("cond '", cond_name, "' needs both true_fn and false_fn");

  SwitchOutputs p = ops::Switch(pred, pred, "Switch");
  Output pivot_t = ops::Identity(p.output_true, "switch_t");
  Output pivot_f = ops::Identity(p.output_false, "switch_f");
  Output pred_id = ops::Identity(pred, "pred_id");

  const std::vector<Output> res_t = BuildBranch(graph, true_fn, pred_id, pivot_t, 1, cond_name);
  const std::vector<Output> res_f = BuildBranch(graph, false_fn, pred_id, pivot_f, 0, cond_name);
  if (res_t.size() != res_f.size()) {
    InvalidArgument("cond '", cond_name, "': true_fn returned ", res_t.size(), " tensors but false_fn ",
                    res_f.size(), "; both must return the same number of the same types");
  }
  for (size_t i = 0; i < res_t.size(); ++i) {
    if (BaseType(res_t[i].dtype()) != BaseType(res_f[i].dtype())) {
      InvalidArgument(
          "cond '", cond_name, "': output ", i,
          " of true_fn and false_fn must have the same type: ", DataTypeString(BaseType(res_t[i].dtype())),
          ", ", DataTypeString(BaseType(res_f[i].dtype())));
    }
  }
  std::vector<Output> merges;
  for (size_t i = 0; i < res_t.size(); ++i)
    merges.push_back(ops::Merge({res_f[i], res_t[i]}, "Merge").output);
  return merges;
}

Output Cond(Output pred, const SingleBranchFn& true_fn, const SingleBranchFn& false_fn,
            std::string_view name) {
  return Cond(pred, Wrap(true_fn), Wrap(false_fn), name).front();
}

std::vector<Output> Case(const std::vector<std::pair<Output, BranchFn>>& pred_fn_pairs,
                         const BranchFn& default_fn, std::string_view name) {
  for (const auto& [pred, fn] : pred_fn_pairs) {
    CheckPredicate(pred, "case", name);
    if (!fn) InvalidArgument("case '", name, "': the branch of ", pred.name(), " is empty");
  }
  if (!default_fn) InvalidArgument("case '", name, "' needs a default branch");
  Graph& graph = pred_fn_pairs.empty() ? GetDefaultGraph() : *pred_fn_pairs.front().first.graph();
  auto as_default = graph.AsDefault();
  auto scope = graph.NameScope(name);
  // The first predicate is tested first: the conds nest from the last pair outwards.
  BranchFn fn = default_fn;
  for (auto it = pred_fn_pairs.rbegin(); it != pred_fn_pairs.rend(); ++it) {
    fn = [pred = it->first, action = it->second, otherwise = fn] {
      return Cond(pred, action, otherwise, "cond");
    };
  }
  return fn();
}

Output Case(const std::vector<std::pair<Output, SingleBranchFn>>& pred_fn_pairs,
            const SingleBranchFn& default_fn, std::string_view name) {
  std::vector<std::pair<Output, BranchFn>> pairs;
  for (const auto& [pred, fn] : pred_fn_pairs) pairs.emplace_back(pred, Wrap(fn));
  return Case(pairs, Wrap(default_fn), name).front();
}

std::vector<Output> WhileLoop(const LoopCondFn& cond, const LoopBodyFn& body,
                              const std::vector<Output>& loop_vars, const WhileLoopOptions& options) {
  if (loop_vars.empty()) InvalidArgument("while loop '", options.name, "': no loop variables provided");
  for (const Output& v : loop_vars) {
    if (!v.valid()) InvalidArgument("while loop '", options.name, "': a loop variable is empty");
  }
  Graph& graph = *loop_vars.front().graph();
  auto as_default = graph.AsDefault();
  auto scope = graph.NameScope(options.name);
  const std::string loop_name = ScopeName(graph);
  if (!cond || !body) InvalidArgument("while loop '", loop_name, "' needs both cond and body");
  if (options.parallel_iterations <= 0) {
    InvalidArgument("while loop '", loop_name, "': parallel_iterations must be a positive integer, not ",
                    options.parallel_iterations);
  }
  std::vector<PartialTensorShape> invariants = options.shape_invariants;
  if (!invariants.empty() && invariants.size() != loop_vars.size()) {
    InvalidArgument("while loop '", loop_name, "': ", invariants.size(), " shape invariants for ",
                    loop_vars.size(), " loop variables");
  }

  std::vector<Output> vars = loop_vars;
  LoopCondFn cond_fn = cond;
  LoopBodyFn body_fn = body;
  const bool counted = options.maximum_iterations.has_value();
  if (counted) {
    // As TF: an extra first loop variable counts the iterations.
    const Output limit = *options.maximum_iterations;
    if (!limit.valid() || limit.graph() != &graph) {
      InvalidArgument("while loop '", loop_name,
                      "': maximum_iterations must be a tensor of the loop's graph");
    }
    if (limit.dtype() != DT_INT32 && limit.dtype() != DT_INT64) {
      InvalidArgument("while loop '", loop_name, "': maximum_iterations must be int32 or int64, not ",
                      DataTypeString(limit.dtype()));
    }
    if (limit.shape().dims() != 0) {
      InvalidArgument("while loop '", loop_name,
                      "': maximum_iterations must be a scalar, saw shape: ", limit.shape().DebugString());
    }
    const DataType dtype = limit.dtype();
    auto scalar = [dtype](int64_t v) {
      return dtype == DT_INT32 ? Tensor::Scalar<int32_t>(static_cast<int32_t>(v))
                               : Tensor::Scalar<int64_t>(v);
    };
    vars.insert(vars.begin(), ops::Const(scalar(0), "iteration_counter"));
    if (!invariants.empty()) invariants.insert(invariants.begin(), PartialTensorShape({}));
    cond_fn = [cond, limit](const std::vector<Output>& v) {
      Output below = ops::Less(v[0], limit, "Less");
      Output inner = cond(std::vector<Output>(v.begin() + 1, v.end()));
      return ops::LogicalAnd(below, inner, "LogicalAnd");
    };
    body_fn = [body, scalar](const std::vector<Output>& v) {
      Graph& g = *v[0].graph();
      OpNameScope add(g, "add");
      Output one = ops::Const(scalar(1), "y");
      add.Exit();
      std::vector<Output> next{
          NodeBuilder("AddV2", add.op_name()).ExactName().Input(v[0]).Input(one).Finalize()};
      std::vector<Output> rest = body(std::vector<Output>(v.begin() + 1, v.end()));
      next.insert(next.end(), rest.begin(), rest.end());
      return next;
    };
  }

  const std::string frame_name = graph.UniqueName(StrCat(graph.CurrentNameScope(), "while_context"));
  WhileContext* context = control_flow_internal::NewWhileContext(
      graph, frame_name, options.parallel_iterations, options.back_prop);
  if (counted) context->set_maximum_iterations(*options.maximum_iterations);
  std::vector<Output> exits;
  {
    ContextScope enter(graph, context);
    context->InitializeValues(vars);
    std::vector<Output> real_vars = vars;
    if (context->outer() != nullptr) {
      // In a cond branch, the initial values come in through the branch's Switches, which
      // are then known inside the loop too (their Enters must not be entered again).
      for (Output& v : real_vars) v = context->outer()->AddValue(v);
      std::vector<Output> known = vars;
      known.insert(known.end(), real_vars.begin(), real_vars.end());
      context->InitializeValues(known);
    }
    std::vector<Output> enters;
    {
      auto no_controls = graph.ClearControlDependencies();
      for (const Output& v : real_vars) {
        enters.push_back(ops::Enter(
            v, frame_name, {.is_constant = false, .parallel_iterations = options.parallel_iterations}));
      }
    }
    // A loop inside a cond branch: invariants entering it wait for the branch's pivot.
    Output control_pivot;
    for (auto* c = context->outer(); c != nullptr && !control_pivot; c = c->outer())
      control_pivot = c->ControlPivot();
    if (control_pivot) {
      for (const Output& e : enters) {
        if (control_flow_internal::IsLoopConstantEnter(e.op().input(0).op())) {
          graph.AddControlInput(e.op(), control_pivot.op());
        }
      }
    }
    for (size_t i = 0; i < invariants.size(); ++i) {
      if (!WithinInvariant(real_vars[i].shape(), invariants[i])) {
        InvalidArgument(
            "while loop '", loop_name, "': the shape invariant specified for ", vars[i].name(),
            " is not compatible with the initial shape of the loop variable. It enters the loop with "
            "shape ",
            real_vars[i].shape().DebugString(), ", but the specified shape invariant is ",
            invariants[i].DebugString());
      }
      graph.SetOutputShape(enters[i].op(), 0, invariants[i]);
    }
    context->InitializeValues(enters);
    context->set_loop_enters(enters);

    std::vector<Output> merges;
    for (const Output& e : enters) merges.push_back(ops::Merge({e, e}, "Merge").output);
    context->set_pivot_for_pred(merges.front());

    Output keep_going = cond_fn(merges);
    if (!keep_going.valid() || keep_going.graph() != &graph) {
      InvalidArgument("while loop '", loop_name, "': cond must return a tensor of the loop's graph");
    }
    if (keep_going.dtype() != DT_BOOL || keep_going.shape().dims() > 0) {
      InvalidArgument("while loop '", loop_name, "': cond must return a scalar bool, not ",
                      DataTypeString(keep_going.dtype()), " of shape ", keep_going.shape().DebugString(),
                      " (", keep_going.name(), ")");
    }
    Output pivot = ops::LoopCond(keep_going, "LoopCond");
    context->set_pivot(pivot);
    std::vector<SwitchOutputs> switches;
    for (const Output& m : merges) {
      auto colocate = graph.ColocateWith(m.op());
      switches.push_back(ops::Switch(m, pivot, "Switch"));
    }
    std::vector<Output> body_vars;
    for (const SwitchOutputs& s : switches) body_vars.push_back(ops::Identity(s.output_true, "Identity"));
    context->set_pivot_for_body(body_vars.front());

    const std::vector<Output> result = body_fn(body_vars);
    if (result.size() != merges.size()) {
      InvalidArgument("while loop '", loop_name, "': the body returned ", result.size(), " tensors for ",
                      merges.size(), " loop variables");
    }
    for (size_t i = 0; i < result.size(); ++i) {
      CheckResult(result[i], graph, "the body of while loop", loop_name);
      const Output& m = merges[i];
      if (BaseType(result[i].dtype()) != BaseType(m.dtype())) {
        InvalidArgument("while loop '", loop_name, "': loop variable ", i, " (", vars[i].name(), ") is ",
                        DataTypeString(BaseType(m.dtype())), " but the body returned ",
                        DataTypeString(BaseType(result[i].dtype())), " (", result[i].name(), ")");
      }
      if (!WithinInvariant(result[i].shape(), m.shape())) {
        InvalidArgument("while loop '", loop_name, "': input tensor '", vars[i].name(),
                        "' enters the loop with shape ", m.shape().DebugString(), ", but has shape ",
                        result[i].shape().DebugString(),
                        " after one iteration. To allow the shape to vary across iterations, pass "
                        "shape_invariants.");
      }
      Output next = ops::NextIteration(result[i], "NextIteration");
      graph.UpdateInput(m.op(), 1, next);
    }
    for (const SwitchOutputs& s : switches) exits.push_back(ops::Exit(s.output_false, "Exit"));
    context->set_loop_exits(exits);
  }
  context->ExitResult(exits);
  if (counted) exits.erase(exits.begin());
  return exits;
}

}  // namespace flowtrain::ops
