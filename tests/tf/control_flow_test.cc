// ops::Cond, ops::Case and ops::WhileLoop against TF 1.x's control flow v1: flowtrain builds
// each program, real TensorFlow builds the same one (interop/check_control_flow.py), and
// - the GraphDefs must hold the same nodes: names, ops, data inputs in order, control inputs;
// - TF running flowtrain's GraphDef must compute what TF's own graph computes (1e-5);
// - TF running flowtrain's gradient graph through a cond must give TF's own gradients (1e-5).
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/tensor.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/train/meta_graph.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain {
namespace {

using testing::MakeTempDir;
using testing::PythonRun;
using testing::RunTfPython;
using testing::TfScript;

// Writes `graph`'s GraphDef to DIR/NAME.pb and the names of the tensors to compare, one a
// line, to DIR/NAME.fetches ("grad " lines: gradients, compared by value only).
void Export(const Graph& graph, const std::string& dir, const std::string& name,
            const std::vector<Output>& fetches, const std::vector<Output>& grads = {}) {
  std::ofstream pb(dir + "/" + name + ".pb", std::ios::binary);
  ASSERT_TRUE(graph.ToGraphDef().SerializeToOstream(&pb));
  std::ofstream list(dir + "/" + name + ".fetches");
  for (const Output& t : fetches) list << "fetch " << t.name() << "\n";
  for (const Output& t : grads) list << "grad " << t.name() << "\n";
}

void Check(const std::string& dir, const std::string& program) {
  const PythonRun run =
      RunTfPython({TfScript("interop/check_control_flow.py"), "--dir", dir, "--program", program});
  EXPECT_EQ(run.exit_code, 0) << "check_control_flow.py " << program << " failed:\n" << run.output;
  if (run.exit_code == 0) std::cout << run.output;
}

TEST(ControlFlowTfTest, CondsMatchTensorFlowNodeForNodeAndCompute) {
  const std::string dir = MakeTempDir("cf_cond");
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output y = ops::Const(3.0f, "y");
  // A branch reading captured tensors; the other negating x.
  Output r = ops::Cond(
      ops::Greater(x, ops::Const(0.0f, "zero")), [&] { return ops::AddV2(ops::Square(x), y, "add"); },
      [&] { return ops::Neg(x); });
  // Two results per branch: constants (gated on the pivots) and x passed through as is.
  std::vector<Output> r2 = ops::Cond(
      ops::Less(x, y),
      [&] {
        return std::vector<Output>{ops::Mul(x, y, "mul"), ops::Const(1.0f, "one")};
      },
      [&] {
        return std::vector<Output>{x, ops::Const(0.0f, "z")};
      });
  Export(g, dir, "cond", {r, r2[0], r2[1]});
  Check(dir, "cond");
}

TEST(ControlFlowTfTest, WhileLoopsMatchTensorFlowNodeForNodeAndCompute) {
  const std::string dir = MakeTempDir("cf_while");
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output i0 = ops::Const(0, "i0");
  std::vector<Output> out = ops::WhileLoop(
      [](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(5, "five")); },
      [&](const std::vector<Output>& v) {
        return std::vector<Output>{ops::AddV2(v[0], ops::Const(1, "one"), "Add"), ops::Mul(v[1], x, "Mul")};
      },
      {i0, x});
  // maximum_iterations: the counter loop variable of TF.
  Output three = ops::Const(3, "three");
  std::vector<Output> out2 = ops::WhileLoop(
      [](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(100.0f, "hundred")); },
      [](const std::vector<Output>& v) {
        return std::vector<Output>{ops::Mul(v[0], ops::Const(2.0f, "two"), "Mul")};
      },
      {x}, {.maximum_iterations = three});
  Export(g, dir, "while", {out[0], out[1], out2[0]});
  Check(dir, "while");
}

TEST(ControlFlowTfTest, CaseMatchesTensorFlowNodeForNodeAndComputes) {
  const std::string dir = MakeTempDir("cf_case");
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output below0 = ops::Less(x, ops::Const(0.0f, "z0"), "Less");
  Output below1 = ops::Less(x, ops::Const(1.0f, "z1"), "Less");
  Output c = ops::Case(
      {{below0, [] { return ops::Const(-1.0f, "m1"); }}, {below1, [] { return ops::Const(0.5f, "h"); }}},
      [] { return ops::Const(1.0f, "d"); });
  Export(g, dir, "case", {c});
  Check(dir, "case");
}

// Contexts nested both ways: a cond in a loop body, a loop in a cond branch.
TEST(ControlFlowTfTest, NestedCondsAndLoopsMatchTensorFlowNodeForNodeAndCompute) {
  const std::string dir = MakeTempDir("cf_nested");
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  std::vector<Output> out =
      ops::WhileLoop([](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(4, "four")); },
                     [&](const std::vector<Output>& v) {
                       Output next_i = ops::AddV2(v[0], ops::Const(1, "one"), "Add");
                       Output s = v[1];
                       Output next_s = ops::Cond(
                           ops::Less(s, ops::Const(10.0f, "ten")), [&] { return ops::Mul(s, x, "Mul"); },
                           [&] { return ops::Sub(s, ops::Const(1.0f, "onef"), "Sub"); });
                       return std::vector<Output>{next_i, next_s};
                     },
                     {ops::Const(0, "i0"), x});
  Output r = ops::Cond(
      ops::Greater(x, ops::Const(0.0f, "zero")),
      [&] {
        return ops::WhileLoop(
                   [](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(50.0f, "fifty")); },
                   [&](const std::vector<Output>& v) {
                     return std::vector<Output>{ops::AddV2(v[0], x, "Add")};
                   },
                   {x})
            .front();
      },
      [&] { return ops::Neg(x); });
  Export(g, dir, "nested", {out[0], out[1], r});
  Check(dir, "nested");
}

// The corpus's control_flow model's cond: c = cond(s > 0, square(s), -s), s = sum(x * w).
TEST(ControlFlowTfTest, GradientsThroughCondGiveTensorFlowsGradients) {
  const std::string dir = MakeTempDir("cf_grad");
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({4}), "x");
  Variable w(Tensor::FromVector<float>({0.5f, -0.2f, 0.1f, 0.3f}), {.name = "w"});
  Output s = ops::Sum(ops::Mul(x, w, "mul"), ops::Const({0}, "Const"), false, "Sum");
  Output c = ops::Cond(
      ops::Greater(s, ops::Const(0.0f, "zero")), [&] { return ops::Square(s); }, [&] { return ops::Neg(s); });
  std::vector<Output> grads = ops::Gradients({c}, {w, x});
  ASSERT_TRUE(grads[0].valid());
  ASSERT_TRUE(grads[1].valid());
  Export(g, dir, "cond_grad", {c}, grads);
  Check(dir, "cond_grad");
}

// Gradients through while loops (a loop invariant accumulated over iterations, repeated
// squaring, a cond and a captured tensor in the body, maximum_iterations, a loop in a
// loop): TF running
// flowtrain's gradient loops must give TF's own gradients, and the gradient loops' nodes
// (counters, stacks, b_exit/b_switch/b_acc) must carry TF's names and ops (all but a loop's
// f_sync trigger, named after whichever gradient op first needs it).
TEST(ControlFlowTfTest, GradientsThroughWhileLoopsGiveTensorFlowsGradients) {
  const std::string dir = MakeTempDir("cf_while_grad");
  Graph g;
  auto as_default = g.AsDefault();
  using Vars = std::vector<Output>;
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output i0 = ops::Const(0, "i0");
  auto next_i = [](const Output& i) { return ops::AddV2(i, ops::Const(1, "one"), "Add"); };
  Vars a = ops::WhileLoop(
      [](const Vars& v) { return ops::Less(v[0], ops::Const(3, "three")); },
      [&](const Vars& v) {
        return Vars{next_i(v[0]), ops::AddV2(ops::Mul(v[1], ops::Const(0.9f, "decay"), "Mul"), x, "Add_1")};
      },
      {i0, ops::Const(1.0f, "acc0")});
  Vars b = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(3, "three")); },
                          [&](const Vars& v) {
                            return Vars{next_i(v[0]), ops::Mul(v[1], v[1], "Mul")};
                          },
                          {i0, x});
  Output e = ops::Exp(x, "Exp");
  Vars c =
      ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(4, "four")); },
                     [&](const Vars& v) {
                       Output r = ops::Cond(
                           ops::Less(v[0], ops::Const(2, "two")), [&] { return ops::Mul(v[1], e, "Mul"); },
                           [&] { return ops::AddV2(ops::Sin(v[1], "Sin"), x, "Add"); });
                       return Vars{next_i(v[0]), r};
                     },
                     {i0, x});
  Vars m = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(1000.0f, "big")); },
                          [&](const Vars& v) { return Vars{ops::Mul(v[0], x, "Mul")}; },
                          {ops::Const(1.5f, "m0")}, {.maximum_iterations = ops::Const(4, "limit")});
  // A loop in a loop: the inner loop's count and values kept per outer iteration.
  Vars n = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(2, "two")); },
                          [&](const Vars& v) {
                            Vars inner = ops::WhileLoop(
                                [](const Vars& u) { return ops::Less(u[0], ops::Const(3, "three")); },
                                [&](const Vars& u) {
                                  return Vars{next_i(u[0]), ops::Mul(u[1], x, "Mul")};
                                },
                                {ops::Const(0, "j0"), v[1]});
                            return Vars{next_i(v[0]), ops::Sin(inner[1], "Sin")};
                          },
                          {i0, x});
  const Vars ys{a[1], b[1], c[1], m[0], n[1]};
  Vars grads;
  for (const Output& y : ys) grads.push_back(ops::Gradients({y}, {x})[0]);
  for (const Output& grad : grads) ASSERT_TRUE(grad.valid());
  Export(g, dir, "while_grad", ys, grads);
  Check(dir, "while_grad");
}

// The cond_context and while_context collections of the MetaGraphDef, which TF needs to
// differentiate through an imported graph's control flow.
TEST(ControlFlowTfTest, MetaGraphContextsAreTensorFlowsAndLetItDifferentiate) {
  const std::string dir = MakeTempDir("cf_contexts");
  Graph g;
  auto as_default = g.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "x");
  Output y = ops::Const(3.0f, "y");
  ops::Cond(
      ops::Greater(x, ops::Const(0.0f, "zero")), [&] { return ops::AddV2(ops::Square(x), y, "add"); },
      [&] { return ops::Neg(x); });
  Output three = ops::Const(3, "three");
  ops::WhileLoop([](const std::vector<Output>& v) { return ops::Less(v[0], ops::Const(100.0f, "hundred")); },
                 [&](const std::vector<Output>& v) { return std::vector<Output>{ops::Mul(v[0], x, "Mul")}; },
                 {x}, {.maximum_iterations = three});
  train::ExportMetaGraph(g, nullptr, dir + "/contexts.meta");
  Check(dir, "contexts");
}

}  // namespace
}  // namespace flowtrain
