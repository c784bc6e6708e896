// The executor running TF1 control flow built by hand from the primitives: conds, dead
// tensors, loops (invariants, nesting, conds inside, parallel_iterations), reference
// variables through RefSwitch/RefEnter, malformed loops rejected at compile time, and runs
// after failed or beside concurrent ones (run states are pooled).
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/state_ops.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;

SessionOptions Threads(int inter_op) {
  SessionOptions options;
  options.config.inter_op_parallelism_threads = inter_op;
  return options;
}

// One loop variable's plumbing: Enter -> Merge -> Switch(cond) -> body -> NextIteration.
struct LoopVar {
  ops::MergeOutputs merge;
  Output enter;
};
LoopVar EnterLoopVar(Output init, const std::string& frame, int64_t parallel, const std::string& name) {
  LoopVar v;
  v.enter = ops::Enter(init, frame, {.parallel_iterations = parallel}, name + "/Enter");
  v.merge = ops::Merge({v.enter, v.enter}, name + "/Merge");
  return v;
}
struct Branches {
  Output body;  // the value in the body (Identity of the Switch's true side)
  Output exit;
};
Branches SwitchLoopVar(const LoopVar& v, Output cond, const std::string& name) {
  ops::SwitchOutputs sw = ops::Switch(v.merge.output, cond, name + "/Switch");
  return {ops::Identity(sw.output_true, name + "/Identity"), ops::Exit(sw.output_false, name + "/Exit")};
}
void CloseLoopVar(const LoopVar& v, Output next, const std::string& name) {
  v.merge.output.graph()->UpdateInput(v.merge.output.op(), 1,
                                      ops::NextIteration(next, name + "/NextIteration"));
}
Output Invariant(Output value, const std::string& frame, int64_t parallel, const std::string& name) {
  return ops::Enter(value, frame, {.is_constant = true, .parallel_iterations = parallel}, name);
}

// while (i < limit) i += 1; returns the Exit.
Output CountingLoop(Output limit, const std::string& frame, int64_t parallel = 10) {
  LoopVar i = EnterLoopVar(ops::Const(0, frame + "/zero"), frame, parallel, frame + "/i");
  Output cond = ops::LoopCond(ops::Less(i.merge.output, Invariant(limit, frame, parallel, frame + "/limit")),
                              frame + "/LoopCond");
  Branches b = SwitchLoopVar(i, cond, frame + "/i");
  CloseLoopVar(i, ops::Add(b.body, Invariant(ops::Const(1), frame, parallel, frame + "/one")), frame + "/i");
  return b.exit;
}

TEST(ControlFlowExecutor, CondTakesEitherBranch) {
  Graph g;
  auto as_default = g.AsDefault();
  Output pred = ops::Placeholder(DT_BOOL);
  ops::SwitchOutputs sw = ops::Switch(ops::Const(3.0f), pred);
  ops::MergeOutputs merge =
      ops::Merge({ops::Add(sw.output_false, ops::Const(1.0f)), ops::Add(sw.output_true, ops::Const(10.0f))});
  for (int threads : {1, 4}) {
    Session sess(g, Threads(threads));
    std::vector<Tensor> t = sess.Run({{pred, Tensor::Scalar<bool>(true)}}, {merge.output, merge.value_index});
    EXPECT_EQ(t[0].scalar<float>(), 13.0f);
    EXPECT_EQ(t[1].scalar<int32_t>(), 1);
    t = sess.Run({{pred, Tensor::Scalar<bool>(false)}}, {merge.output, merge.value_index});
    EXPECT_EQ(t[0].scalar<float>(), 4.0f);
    EXPECT_EQ(t[1].scalar<int32_t>(), 0);
  }
}

TEST(ControlFlowExecutor, DeadnessPropagatesThroughAChainAndFetchingItFails) {
  Graph g;
  auto as_default = g.AsDefault();
  Output pred = ops::Placeholder(DT_BOOL);
  ops::SwitchOutputs sw = ops::Switch(ops::Const(3.0f), pred);
  Output chain = ops::Add(ops::Add(sw.output_true, ops::Const(1.0f)), ops::Const(1.0f), "chain_end");
  Session sess(g);
  EXPECT_EQ(sess.Run({{pred, Tensor::Scalar<bool>(true)}}, {chain})[0].scalar<float>(), 5.0f);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{pred, Tensor::Scalar<bool>(false)}}, {chain});
      },
      {"chain_end:0", "does not have value"});
}

TEST(ControlFlowExecutor, AMergeOfTwoDeadInputsIsDead) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::SwitchOutputs sw = ops::Switch(ops::Const(3.0f), ops::Const(false));
  ops::MergeOutputs merge = ops::Merge({sw.output_true, ops::Identity(sw.output_true)}, "dead_merge");
  Session sess(g);
  ExpectInvalidArgument([&] { sess.Run({}, {merge.output}); }, "dead_merge:0");
  EXPECT_EQ(sess.Run({}, {sw.output_false})[0].scalar<float>(), 3.0f);
}

TEST(ControlFlowExecutor, ControlTriggerRunsAfterDeadInputs) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::SwitchOutputs sw = ops::Switch(ops::Const(3.0f), ops::Const(false));
  Output dead = ops::Identity(sw.output_true, "dead");
  Operation trigger = NodeBuilder("ControlTrigger", "trigger").ControlInputs({dead.op()}).Finalize();
  Output after_trigger = ops::WithDependencies({trigger}, ops::Const(5.0f), "after_trigger");
  Output after_dead = ops::WithDependencies({dead.op()}, ops::Const(5.0f), "after_dead");
  Session sess(g);
  EXPECT_EQ(sess.Run({}, {after_trigger})[0].scalar<float>(), 5.0f);
  ExpectInvalidArgument([&] { sess.Run({}, {after_dead}); }, "after_dead:0");
}

TEST(ControlFlowExecutor, CountingLoopRunsTenIterations) {
  Graph g;
  auto as_default = g.AsDefault();
  Output exit = CountingLoop(ops::Const(10), "while");
  for (int threads : {1, 4}) {
    Session sess(g, Threads(threads));
    EXPECT_EQ(sess.Run({}, {exit})[0].scalar<int32_t>(), 10);
    EXPECT_EQ(sess.Run({}, {exit})[0].scalar<int32_t>(), 10);  // a second run of the plan
  }
}

TEST(ControlFlowExecutor, ParallelIterationsDoNotChangeResults) {
  for (int64_t parallel : {1, 2, 10}) {
    Graph g;
    auto as_default = g.AsDefault();
    Output limit = ops::Placeholder(DT_INT32);
    Output exit = CountingLoop(limit, "while", parallel);
    for (int threads : {1, 4}) {
      Session sess(g, Threads(threads));
      for (int n : {0, 1, 37}) {
        EXPECT_EQ(sess.Run({{limit, Tensor::Scalar<int32_t>(n)}}, {exit})[0].scalar<int32_t>(), n)
            << "parallel_iterations " << parallel << ", threads " << threads;
      }
    }
  }
}

// s = 0; for i < 10: s += x with x a loop invariant.
TEST(ControlFlowExecutor, LoopInvariantIsSeenInEveryIteration) {
  Graph g;
  auto as_default = g.AsDefault();
  LoopVar i = EnterLoopVar(ops::Const(0), "w", 10, "w/i");
  LoopVar s = EnterLoopVar(ops::Const(0.0f), "w", 10, "w/s");
  Output cond = ops::LoopCond(ops::Less(i.merge.output, Invariant(ops::Const(10), "w", 10, "w/limit")));
  Branches bi = SwitchLoopVar(i, cond, "w/i");
  Branches bs = SwitchLoopVar(s, cond, "w/s");
  CloseLoopVar(i, ops::Add(bi.body, Invariant(ops::Const(1), "w", 10, "w/one")), "w/i");
  CloseLoopVar(s, ops::Add(bs.body, Invariant(ops::Const(2.5f), "w", 10, "w/x")), "w/s");
  Session sess(g);
  std::vector<Tensor> t = sess.Run({}, {bi.exit, bs.exit});
  EXPECT_EQ(t[0].scalar<int32_t>(), 10);
  EXPECT_EQ(t[1].scalar<float>(), 25.0f);
}

// for i < 3: for j < 4: total += 1.
TEST(ControlFlowExecutor, NestedLoopsRunTwelveInnerIterations) {
  Graph g;
  auto as_default = g.AsDefault();
  LoopVar i = EnterLoopVar(ops::Const(0), "outer", 10, "outer/i");
  LoopVar total = EnterLoopVar(ops::Const(0), "outer", 10, "outer/total");
  Output cond =
      ops::LoopCond(ops::Less(i.merge.output, Invariant(ops::Const(3), "outer", 10, "outer/limit")));
  Branches bi = SwitchLoopVar(i, cond, "outer/i");
  Branches bt = SwitchLoopVar(total, cond, "outer/total");
  Output one = Invariant(ops::Const(1), "outer", 10, "outer/one");
  CloseLoopVar(i, ops::Add(bi.body, one), "outer/i");
  // The inner loop starts j at 0 in each outer iteration: 0 * the outer body's value.
  LoopVar j = EnterLoopVar(ops::Mul(bi.body, Invariant(ops::Const(0), "outer", 10, "outer/zero")), "inner",
                           10, "inner/j");
  LoopVar t = EnterLoopVar(bt.body, "inner", 10, "inner/t");
  Output inner_cond =
      ops::LoopCond(ops::Less(j.merge.output, Invariant(Invariant(ops::Const(4), "outer", 10, "outer/four"),
                                                        "inner", 10, "inner/limit")));
  Branches bj = SwitchLoopVar(j, inner_cond, "inner/j");
  Branches btt = SwitchLoopVar(t, inner_cond, "inner/t");
  Output inner_one = Invariant(one, "inner", 10, "inner/one");
  CloseLoopVar(j, ops::Add(bj.body, inner_one), "inner/j");
  CloseLoopVar(t, ops::Add(btt.body, inner_one), "inner/t");
  CloseLoopVar(total, btt.exit, "outer/total");
  for (int threads : {1, 4}) {
    Session sess(g, Threads(threads));
    std::vector<Tensor> out = sess.Run({}, {bi.exit, bt.exit});
    EXPECT_EQ(out[0].scalar<int32_t>(), 3);
    EXPECT_EQ(out[1].scalar<int32_t>(), 12);
  }
}

// for i < 10: s += i < 5 ? 1 : 10  (55).
TEST(ControlFlowExecutor, CondInsideALoop) {
  Graph g;
  auto as_default = g.AsDefault();
  LoopVar i = EnterLoopVar(ops::Const(0), "w", 10, "w/i");
  LoopVar s = EnterLoopVar(ops::Const(0), "w", 10, "w/s");
  Output cond = ops::LoopCond(ops::Less(i.merge.output, Invariant(ops::Const(10), "w", 10, "w/limit")));
  Branches bi = SwitchLoopVar(i, cond, "w/i");
  Branches bs = SwitchLoopVar(s, cond, "w/s");
  CloseLoopVar(i, ops::Add(bi.body, Invariant(ops::Const(1), "w", 10, "w/one")), "w/i");
  ops::SwitchOutputs pick =
      ops::Switch(bs.body, ops::Less(bi.body, Invariant(ops::Const(5), "w", 10, "w/five")));
  ops::MergeOutputs added =
      ops::Merge({ops::Add(pick.output_false, Invariant(ops::Const(10), "w", 10, "w/ten")),
                  ops::Add(pick.output_true, Invariant(ops::Const(1), "w", 10, "w/one_s"))});
  CloseLoopVar(s, added.output, "w/s");
  for (int threads : {1, 4}) {
    Session sess(g, Threads(threads));
    EXPECT_EQ(sess.Run({}, {bs.exit})[0].scalar<int32_t>(), 55);
  }
}

TEST(ControlFlowExecutor, RefSwitchRunsOnlyTheTakenBranchsAssign) {
  Graph g;
  auto as_default = g.AsDefault();
  Output v = ops::VariableV2(PartialTensorShape({}), DT_FLOAT, "v");
  Output init = ops::Assign(v, ops::Const(0.0f));
  Output pred = ops::Placeholder(DT_BOOL);
  ops::SwitchOutputs sw = ops::Switch(v, pred);
  EXPECT_EQ(sw.output_true.op().type(), "RefSwitch");
  Output set_one = ops::Assign(sw.output_true, ops::Const(1.0f), true, true, "set_one");
  Output set_two = ops::Assign(sw.output_false, ops::Const(2.0f), true, true, "set_two");
  Session sess(g);
  sess.Run({}, {init});
  sess.Run({{pred, Tensor::Scalar<bool>(true)}}, {}, {set_one.op(), set_two.op()});
  EXPECT_EQ(sess.Run({}, {v})[0].scalar<float>(), 1.0f);
  sess.Run({{pred, Tensor::Scalar<bool>(false)}}, {}, {set_one.op(), set_two.op()});
  EXPECT_EQ(sess.Run({}, {v})[0].scalar<float>(), 2.0f);
}

// A counter AssignAdd'ed in each iteration, through a RefEnter of the variable.
TEST(ControlFlowExecutor, StatefulOpRunsOncePerIteration) {
  Graph g;
  auto as_default = g.AsDefault();
  Output counter = ops::VariableV2(PartialTensorShape({}), DT_INT32, "counter");
  Output init = ops::Assign(counter, ops::Const(0));
  LoopVar i = EnterLoopVar(ops::Const(0), "w", 10, "w/i");
  Output cond = ops::LoopCond(ops::Less(i.merge.output, Invariant(ops::Const(7), "w", 10, "w/limit")));
  Branches bi = SwitchLoopVar(i, cond, "w/i");
  Output one = Invariant(ops::Const(1), "w", 10, "w/one");
  Output counter_in_loop = Invariant(counter, "w", 10, "w/counter");
  EXPECT_EQ(counter_in_loop.op().type(), "RefEnter");
  Output increment;
  {
    auto deps = g.ControlDependencies({bi.body.op()});  // runs only in iterations that happen
    increment = ops::AssignAdd(counter_in_loop, one, false, "w/increment");
  }
  CloseLoopVar(i, ops::WithDependencies({increment.op()}, ops::Add(bi.body, one)), "w/i");
  for (int threads : {1, 4}) {
    Session sess(g, Threads(threads));
    sess.Run({}, {init});
    EXPECT_EQ(sess.Run({}, {bi.exit})[0].scalar<int32_t>(), 7);
    EXPECT_EQ(sess.Run({}, {counter})[0].scalar<int32_t>(), 7);
  }
}

TEST(ControlFlowExecutor, RunawayLoopStopsAtTheDeadline) {
  Graph g;
  auto as_default = g.AsDefault();
  LoopVar i = EnterLoopVar(ops::Const(0), "w", 10, "w/i");
  // -1 < i: never false.
  Output cond = ops::LoopCond(ops::Less(Invariant(ops::Const(-1), "w", 10, "w/minus_one"), i.merge.output));
  Branches bi = SwitchLoopVar(i, cond, "w/i");
  CloseLoopVar(i, ops::Add(bi.body, Invariant(ops::Const(1), "w", 10, "w/one")), "w/i");
  for (int threads : {1, 4}) {
    Session sess(g, Threads(threads));
    RunOptions options;
    options.timeout_in_ms = 50;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(sess.Run({}, {bi.exit}, {}, &options), DeadlineExceededError);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
}

// Run states are pooled: one a failed run left mid-loop (iterations, frames, slots holding
// tensors) must start the next run clean, inline and on the pool.
TEST(ControlFlowExecutor, ARunAfterAFailedOneStartsClean) {
  Graph g;
  auto as_default = g.AsDefault();
  Output d = ops::Placeholder(DT_INT32, PartialTensorShape({}), "d");
  Output limit = ops::Placeholder(DT_INT32, PartialTensorShape({}), "limit");
  LoopVar i = EnterLoopVar(ops::Const(0), "w", 10, "w/i");
  Output cond = ops::LoopCond(ops::Less(i.merge.output, Invariant(limit, "w", 10, "w/limit")));
  Branches bi = SwitchLoopVar(i, cond, "w/i");
  Output d_in = Invariant(d, "w", 10, "w/d");
  CloseLoopVar(i, ops::Add(bi.body, ops::FloorDiv(d_in, d_in)), "w/i");  // d / d: fails for d = 0
  for (int threads : {1, 4}) {
    Session sess(g, Threads(threads));
    for (int round = 0; round < 5; ++round) {
      EXPECT_THROW(
          sess.Run({{d, Tensor::Scalar<int32_t>(0)}, {limit, Tensor::Scalar<int32_t>(100)}}, {bi.exit}),
          InvalidArgumentError);
      EXPECT_EQ(sess.Run({{d, Tensor::Scalar<int32_t>(1)}, {limit, Tensor::Scalar<int32_t>(100 + round)}},
                         {bi.exit})[0]
                    .scalar<int32_t>(),
                100 + round);
    }
  }
}

// Concurrent runs of one plan each take a run state of their own.
TEST(ControlFlowExecutor, ConcurrentRunsOfOneLoopDoNotMix) {
  Graph g;
  auto as_default = g.AsDefault();
  Output limit = ops::Placeholder(DT_INT32, PartialTensorShape({}), "limit");
  Output exit = CountingLoop(limit, "w");
  for (int threads : {1, 4}) {
    Session sess(g, Threads(threads));
    std::atomic<int> wrong{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t) {
      callers.emplace_back([&, t] {
        for (int r = 0; r < 20; ++r) {
          const int n = 50 + 10 * t + r;
          if (sess.Run({{limit, Tensor::Scalar<int32_t>(n)}}, {exit})[0].scalar<int32_t>() != n) ++wrong;
        }
      });
    }
    for (std::thread& c : callers) c.join();
    EXPECT_EQ(wrong.load(), 0) << threads << " inter-op threads";
  }
}

TEST(ControlFlowExecutor, FetchingInsideALoopIsRejected) {
  Graph g;
  auto as_default = g.AsDefault();
  LoopVar i = EnterLoopVar(ops::Const(0), "w", 10, "w/i");
  Session sess(g);
  ExpectInvalidArgument([&] { sess.Run({}, {i.merge.output}); }, {"w/i/Merge", "inside loop frame 'w'"});
}

TEST(ControlFlowExecutor, MalformedLoopsAreRejectedBeforeRunning) {
  {
    Graph g;
    auto as_default = g.AsDefault();
    Output x = ops::Identity(ops::NextIteration(ops::Const(1), "lost_next"), "after_next");
    Session sess(g);
    ExpectInvalidArgument([&] { sess.Run({}, {x}); }, {"lost_next", "Merge"});
  }
  {
    Graph g;
    auto as_default = g.AsDefault();
    Output x = ops::Exit(ops::Const(1), "stray_exit");
    Session sess(g);
    ExpectInvalidArgument([&] { sess.Run({}, {x}); }, {"stray_exit", "not inside any loop"});
  }
  {
    Graph g;
    auto as_default = g.AsDefault();
    Output x = ops::Add(ops::Enter(ops::Const(1), "f1"), ops::Enter(ops::Const(2), "f2"), "mixed");
    Output out = ops::Exit(x);
    Session sess(g);
    ExpectInvalidArgument([&] { sess.Run({}, {out}); }, {"mixed", "has inputs from different frames"});
  }
  {
    Graph g;
    auto as_default = g.AsDefault();
    Output a = ops::Enter(ops::Const(1), "f", {.parallel_iterations = 10}, "enter_a");
    Output b = ops::Enter(ops::Const(2), "f", {.parallel_iterations = 3}, "enter_b");
    Output out = ops::Exit(ops::Add(a, b));
    Session sess(g);
    ExpectInvalidArgument([&] { sess.Run({}, {out}); }, {"parallel_iterations"});
  }
  {
    // Frame "inner" entered from the root and from frame "outer".
    Graph g;
    auto as_default = g.AsDefault();
    Output outer = ops::Enter(ops::Const(1), "outer");
    Output from_outer = ops::Enter(outer, "inner", {}, "inner_from_outer");
    Output from_root = ops::Enter(ops::Const(2), "inner", {}, "inner_from_root");
    Output out = ops::Exit(ops::Exit(ops::Add(from_outer, from_root)));
    Session sess(g);
    try {
      sess.Run({}, {out});
      ADD_FAILURE() << "expected InvalidArgument";
    } catch (const InvalidArgumentError& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("mismatched parent frames") != std::string::npos ||
                  what.find("different frames") != std::string::npos)
          << what;
    }
  }
}

}  // namespace
}  // namespace flowtrain
