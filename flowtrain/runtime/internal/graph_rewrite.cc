#include "flowtrain/runtime/internal/graph_rewrite.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "flowtrain/kernels/internal/fused_kernels.h"
#include "flowtrain/runtime/internal/control_flow_info.h"

namespace flowtrain {
namespace {

struct EndpointHash {
  size_t operator()(const Endpoint& e) const {
    return std::hash<const void*>()(e.node) * 31 + static_cast<size_t>(e.index);
  }
};

// Who uses what among the nodes of one run.
class RunUses {
 public:
  RunUses(const std::vector<const Node*>& nodes, const std::vector<Endpoint>& feeds,
          const std::vector<Endpoint>& fetches, const std::vector<const Node*>& targets)
      : nodes_(nodes.begin(), nodes.end()),
        fed_(feeds.begin(), feeds.end()),
        fetched_(fetches.begin(), fetches.end()),
        targets_(targets.begin(), targets.end()) {
    for (const Node* n : nodes) {
      for (const Endpoint& in : n->inputs()) {
        if (fed_.count(in) == 0) ++consumers_[in];
      }
      for (const Node* c : n->control_inputs()) control_consumers_[c].push_back(n);
    }
  }

  bool Runs(const Node* n) const { return nodes_.count(n) != 0; }

  // True when `e` is computed in the run and passed only to its one consumer: a group may
  // keep it inside, with no other node (and no fetch) missing it.
  bool OnlyPassedOn(const Endpoint& e) const {
    if (!Runs(e.node) || fed_.count(e) != 0 || fetched_.count(e) != 0 || targets_.count(e.node) != 0)
      return false;
    auto consumers = consumers_.find(e);
    if (consumers == consumers_.end() || consumers->second != 1) return false;
    return control_consumers_.count(e.node) == 0 && e.node->num_outputs() == 1;
  }

  // OnlyPassedOn, except that `gate` may wait for e's node too (see GateOf).
  bool OnlyPassedOnAndGated(const Endpoint& e, const Node* gate) const {
    auto control = control_consumers_.find(e.node);
    if (control == control_consumers_.end() || control->second.size() != 1 || control->second[0] != gate) {
      return false;
    }
    if (!Runs(e.node) || fed_.count(e) != 0 || fetched_.count(e) != 0 || targets_.count(e.node) != 0)
      return false;
    auto consumers = consumers_.find(e);
    return consumers != consumers_.end() && consumers->second == 1 && e.node->num_outputs() == 1;
  }

 private:
  std::unordered_set<const Node*> nodes_;
  std::unordered_set<Endpoint, EndpointHash> fed_, fetched_;
  std::unordered_set<const Node*> targets_;
  std::unordered_map<Endpoint, int, EndpointHash> consumers_;
  std::unordered_map<const Node*, std::vector<const Node*>> control_consumers_;
};

// The gate of a gated gradient (ops::Tuple, as optimizers gate gradients like TF's GATE_OP):
// `n` is Identity(x) waiting only for a NoOp with no inputs. Null if `n` is no such identity.
// The gate matters to TF, whose variable reads alias the variable; in our runtime an update
// never changes a value read before it (see "AnSgdStepAppliesTheGradientsOfTheWeightsBeforeIt"),
// so a group may take the identity in and stop waiting for the gate.
const Node* GateOf(const Node* n) {
  if (n->type() != "Identity" || n->num_inputs() != 1 || n->control_inputs().size() != 1) return nullptr;
  const Node* gate = n->control_inputs()[0];
  return gate->type() == "NoOp" && gate->num_inputs() == 0 ? gate : nullptr;
}

bool IsGemmType(const Node& n) {
  const DataType t = n.GetAttr<DataType>("T");
  return t == DT_FLOAT || t == DT_DOUBLE;
}

// A BiasAdd adding along the last dimension, as the fused kernel does.
bool IsNhwc(const Node& bias_add) {
  const AttrValue* format = bias_add.FindAttr("data_format");
  return format == nullptr || AttrValueAs<std::string>(*format, "data_format") == "NHWC";
}

// A weight gradient known to have at least one GEMM tile's width of columns. Narrower ones
// stay a MatMul and an ApplyGradientDescent: the fused product accumulating into the
// variable was slower there (W3's 2048x10 gradient: 0.26-0.28 ms against 0.14 ms plus a few
// microseconds), as the rows of such a variable share cache lines and each tile's loads of
// it wait for the stores of the tile before.
constexpr int64_t kMinAccumulatedColumns = 32;

bool WideEnoughToAccumulate(const Node& matmul) {
  const PartialTensorShape& shape = matmul.output_shape(0);
  return shape.dims() == 2 && shape.dim_size(1) >= kMinAccumulatedColumns;
}

// A group's nodes ask for one device (a group never spans devices or tasks).
bool SameDevice(std::initializer_list<const Node*> group) {
  for (const Node* n : group) {
    if (n != nullptr && n->requested_device() != (*group.begin())->requested_device()) return false;
  }
  return true;
}

ExecNode AsIs(const Node* n) {
  ExecNode e;
  e.node = n;
  e.type = n->type();
  e.inputs = n->inputs();
  for (int i = 0; i < n->num_inputs(); ++i) e.ref_inputs.push_back(IsRefType(n->input_type(i)));
  e.control_inputs.assign(n->control_inputs().begin(), n->control_inputs().end());
  return e;
}

// `last` (the group's last node) with the given outside inputs, waiting for every node of
// the group's control inputs.
ExecNode Fused(const Node* last, std::string type, std::vector<Endpoint> inputs, std::vector<bool> ref_inputs,
               std::vector<const Node*> others) {
  ExecNode e;
  e.node = last;
  e.type = std::move(type);
  e.inputs = std::move(inputs);
  e.ref_inputs = std::move(ref_inputs);
  e.fused = std::move(others);
  std::unordered_set<const Node*> seen;
  for (const Node* n : e.fused) {
    for (const Node* c : n->control_inputs()) {
      if (seen.insert(c).second) e.control_inputs.push_back(c);
    }
  }
  for (const Node* c : last->control_inputs()) {
    if (seen.insert(c).second) e.control_inputs.push_back(c);
  }
  return e;
}

// Whether running `n` may matter beyond the outputs it gives. CheckNumerics is run for the
// error it raises (TF's dependency optimizer keeps it too), a placeholder for the one it
// raises when not fed.
bool MayHaveEffects(const Node& n) {
  static const auto* const kRunForTheirErrors = new std::unordered_set<std::string>{
      "CheckNumerics", "CheckNumericsV2", "Assert", "Placeholder", "PlaceholderV2"};
  if (n.is_stateful() || n.num_outputs() == 0 || IsControlFlowOp(n) ||
      kRunForTheirErrors->count(n.type()) != 0) {
    return true;
  }
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (IsRefType(n.input_type(i)) || n.input_type(i) == DT_RESOURCE) return true;
  }
  for (int i = 0; i < n.num_outputs(); ++i) {
    if (IsRefType(n.output_type(i)) || n.output_type(i) == DT_RESOURCE) return true;
  }
  return false;
}

// The kernel of a node SkipKernelsNothingReads skips.
class SkippedKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  KernelCost cost() const override { return KernelCost::kCheap; }
};

}  // namespace

void SkipKernelsNothingReads(std::vector<ExecNode>& exec, const std::vector<Endpoint>& feeds,
                             const std::vector<Endpoint>& fetches, const std::vector<const Node*>& targets) {
  std::unordered_map<const Node*, int> index_of;
  for (size_t i = 0; i < exec.size(); ++i) index_of[exec[i].node] = static_cast<int>(i);
  const std::unordered_set<Endpoint, EndpointHash> fed(feeds.begin(), feeds.end());
  std::vector<bool> runs(exec.size(), false);
  std::vector<int> stack;
  auto run = [&](const Node* n) {
    auto it = index_of.find(n);
    if (it != index_of.end() && !runs[it->second]) {
      runs[it->second] = true;
      stack.push_back(it->second);
    }
  };
  for (const Endpoint& e : fetches) run(e.node);
  for (const Node* n : targets) run(n);
  for (const ExecNode& e : exec) {
    bool effects = MayHaveEffects(*e.node);
    for (const Node* f : e.fused) effects = effects || MayHaveEffects(*f);
    // A value from control flow may be dead; such consumers keep their edges as they are.
    for (const Endpoint& in : e.inputs) effects = effects || IsControlFlowOp(*in.node);
    if (effects) run(e.node);
  }
  while (!stack.empty()) {
    const ExecNode& e = exec[stack.back()];
    stack.pop_back();
    for (const Endpoint& in : e.inputs) {
      if (fed.count(in) == 0) run(in.node);
    }
  }
  // A skipped node waits for its inputs' producers but takes no values from them (they may be
  // skipped too), so that it holds no tensor alive either.
  for (size_t i = 0; i < exec.size(); ++i) {
    if (runs[i]) continue;
    ExecNode& e = exec[i];
    OpKernelConstruction construction(*e.node);
    e.kernel = std::make_unique<SkippedKernel>(construction);
    e.type = "NoOp";
    for (const Endpoint& in : e.inputs) {
      if (fed.count(in) == 0 && index_of.count(in.node) != 0 &&
          std::find(e.control_inputs.begin(), e.control_inputs.end(), in.node) == e.control_inputs.end()) {
        e.control_inputs.push_back(in.node);
      }
    }
    e.inputs.clear();
    e.ref_inputs.clear();
  }
}

std::vector<ExecNode> RewriteForExecution(const std::vector<const Node*>& nodes,
                                          const std::vector<Endpoint>& feeds,
                                          const std::vector<Endpoint>& fetches,
                                          const std::vector<const Node*>& targets, bool remapping) {
  std::vector<ExecNode> result;
  result.reserve(nodes.size());
  if (!remapping) {
    for (const Node* n : nodes) result.push_back(AsIs(n));
    return result;
  }
  const RunUses uses(nodes, feeds, fetches, targets);
  std::unordered_set<const Node*> claimed;  // nodes already inside a group
  auto free = [&](const Node* n) { return claimed.count(n) == 0; };

  // The MatMul whose only use is `consumer`'s input `index` (directly or through a gated
  // gradient's identity), or null.
  struct MatMulInput {
    const Node* matmul = nullptr;
    const Node* passthrough = nullptr;  // the gated identity between, if any
    const Node* gate = nullptr;
    explicit operator bool() const { return matmul != nullptr; }
  };
  auto sole_matmul_input = [&](const Node* consumer, int index) -> MatMulInput {
    const Endpoint& in = consumer->input(index);
    MatMulInput found;
    if (const Node* gate = GateOf(in.node); gate != nullptr && free(in.node) && uses.OnlyPassedOn(in)) {
      const Endpoint& gated = in.node->input(0);
      if (gated.node->type() != "MatMul" || !free(gated.node) || !uses.OnlyPassedOnAndGated(gated, gate) ||
          !IsGemmType(*gated.node)) {
        return {};
      }
      return {gated.node, in.node, gate};
    }
    if (in.node->type() != "MatMul" || !free(in.node) || !uses.OnlyPassedOn(in) || !IsGemmType(*in.node)) {
      return {};
    }
    found.matmul = in.node;
    return found;
  };
  // The group's inner nodes ({matmul} or {matmul, identity}); the group no longer waits for
  // the gate, which waits for the group instead.
  auto inner_nodes = [](const MatMulInput& m) {
    std::vector<const Node*> nodes = {m.matmul};
    if (m.passthrough != nullptr) nodes.push_back(m.passthrough);
    return nodes;
  };
  auto drop_gate = [](ExecNode& e, const MatMulInput& m) {
    if (m.gate == nullptr) return;
    e.control_inputs.erase(std::remove(e.control_inputs.begin(), e.control_inputs.end(), m.gate),
                           e.control_inputs.end());
  };

  // Groups by their last node, found from it: Relu or BiasAdd (_FusedMatMul), ReluGrad, then
  // ApplyGradientDescent. A Relu's group is claimed before its BiasAdd is tried alone.
  std::unordered_map<const Node*, ExecNode> groups;
  for (const Node* n : nodes) {
    if (n->type() != "Relu" || !IsGemmType(*n)) continue;
    const Endpoint& in = n->input(0);
    if (in.node->type() != "BiasAdd" || !IsNhwc(*in.node) || !uses.OnlyPassedOn(in)) continue;
    const Node* bias_add = in.node;
    const MatMulInput m = sole_matmul_input(bias_add, 0);
    if (!m || !SameDevice({n, bias_add, m.matmul})) continue;
    const Node* matmul = m.matmul;
    std::vector<const Node*> inner = inner_nodes(m);
    inner.push_back(bias_add);
    ExecNode e = Fused(n, "_FusedMatMul", {matmul->input(0), matmul->input(1), bias_add->input(1)},
                       {false, false, false}, inner);
    drop_gate(e, m);
    e.kernel = CreateFusedMatMulKernel(*matmul, *bias_add, n);
    claimed.insert(inner.begin(), inner.end());
    claimed.insert(n);
    groups.emplace(n, std::move(e));
  }
  for (const Node* n : nodes) {
    if (n->type() != "BiasAdd" || !IsNhwc(*n) || !free(n)) continue;
    const MatMulInput m = sole_matmul_input(n, 0);
    if (!m || !SameDevice({n, m.matmul})) continue;
    const Node* matmul = m.matmul;
    const std::vector<const Node*> inner = inner_nodes(m);
    ExecNode e = Fused(n, "_FusedMatMul", {matmul->input(0), matmul->input(1), n->input(1)},
                       {false, false, false}, inner);
    drop_gate(e, m);
    e.kernel = CreateFusedMatMulKernel(*matmul, *n, nullptr);
    claimed.insert(inner.begin(), inner.end());
    claimed.insert(n);
    groups.emplace(n, std::move(e));
  }
  for (const Node* n : nodes) {
    if (n->type() != "ReluGrad" || !IsGemmType(*n)) continue;
    const MatMulInput m = sole_matmul_input(n, 0);
    if (!m || !SameDevice({n, m.matmul})) continue;
    const Node* matmul = m.matmul;
    const std::vector<const Node*> inner = inner_nodes(m);
    ExecNode e = Fused(n, "_FusedMatMulReluGrad", {matmul->input(0), matmul->input(1), n->input(1)},
                       {false, false, false}, inner);
    drop_gate(e, m);
    e.kernel = CreateMatMulReluGradKernel(*matmul, *n);
    claimed.insert(inner.begin(), inner.end());
    claimed.insert(n);
    groups.emplace(n, std::move(e));
  }
  for (const Node* n : nodes) {
    if (n->type() != "ApplyGradientDescent") continue;
    const MatMulInput m = sole_matmul_input(n, 2);
    if (!m || !SameDevice({n, m.matmul}) || !WideEnoughToAccumulate(*m.matmul)) continue;
    const Node* matmul = m.matmul;
    const std::vector<const Node*> inner = inner_nodes(m);
    ExecNode e = Fused(n, "_FusedMatMulApplyGradientDescent",
                       {n->input(0), n->input(1), matmul->input(0), matmul->input(1)},
                       {true, false, false, false}, inner);
    drop_gate(e, m);
    e.kernel = CreateMatMulApplyGradientDescentKernel(*matmul, *n);
    claimed.insert(inner.begin(), inner.end());
    claimed.insert(n);
    groups.emplace(n, std::move(e));
  }

  for (const Node* n : nodes) {
    auto group = groups.find(n);
    if (group != groups.end()) {
      result.push_back(std::move(group->second));
    } else if (free(n)) {
      result.push_back(AsIs(n));
    }
  }
  return result;
}

}  // namespace flowtrain
