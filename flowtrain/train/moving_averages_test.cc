// ExponentialMovingAverage and AssignMovingAverage: TF 1.15's names, the averages' values
// (decay, num_updates, zero debias), initialization from the variables' values, and restoring
// the averages into the variables through VariablesToRestore and the Saver.
#include "flowtrain/train/moving_averages.h"

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/saver.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

using testing::ExpectInvalidArgument;
using testing::Values;

struct Model {
  Graph g;
  ScopeGuard as_default = g.AsDefault();
  Variable w{Tensor::FromVector<float>({1, 2}), {.name = "w"}};
  Variable b{Tensor::FromVector<float>({10}), {.name = "b", .use_resource = true}};
  Variable step{Tensor::Scalar<int64_t>(0), {.name = "global_step", .trainable = false}};
  // Moves the variables: w += 1, b -= 2, step += 1.
  Operation move =
      ops::Group({w.AssignAdd(ops::Const<float>({1, 1})).op(), b.AssignSub(ops::Const<float>({2})).op(),
                  step.AssignAdd(ops::Const<int64_t>(1)).op()},
                 "move");
};

TEST(ExponentialMovingAverage, NamesAreTensorFlows) {
  Model m;
  ExponentialMovingAverage ema(0.9);
  Operation update = ema.Apply({m.w, m.b});
  EXPECT_EQ(update.name(), "ExponentialMovingAverage");
  EXPECT_EQ(ema.Average(m.w)->op().name(), "w/ExponentialMovingAverage");
  EXPECT_EQ(ema.Average(m.b)->op().name(), "b/ExponentialMovingAverage");
  EXPECT_TRUE(ema.Average(m.b)->is_resource());
  EXPECT_FALSE(ema.Average(m.w)->trainable());
  EXPECT_EQ(ema.AverageName(m.w), "w/ExponentialMovingAverage");
  EXPECT_EQ(ema.AverageName(m.step), "global_step/ExponentialMovingAverage");
  EXPECT_NE(m.g.FindNode("ExponentialMovingAverage/AssignMovingAvg"), nullptr);
  EXPECT_NE(m.g.FindNode("ExponentialMovingAverage/AssignMovingAvg_1"), nullptr);
  EXPECT_NE(m.g.FindNode("ExponentialMovingAverage/decay"), nullptr);
  EXPECT_EQ(m.g.GetCollection<Variable>(GraphKeys::kMovingAverageVariables).size(), 2u);
  // A second Apply reuses the shadows.
  ExponentialMovingAverage other(0.5, {.name = "Slow"});
  other.Apply({m.w});
  ema.Apply({m.w});
  EXPECT_EQ(ema.Average(m.w)->op().name(), "w/ExponentialMovingAverage");
  EXPECT_EQ(other.Average(m.w)->op().name(), "w/Slow");
  EXPECT_NE(m.g.FindNode("ExponentialMovingAverage_1"), nullptr);
}

TEST(ExponentialMovingAverage, AveragesFollowWithTheDecayAndNumUpdates) {
  Model m;
  ExponentialMovingAverage ema(0.9);
  ExponentialMovingAverage early(0.9, {.num_updates = m.step.value(), .name = "Early"});
  Operation update = ema.Apply({m.w, m.b});
  Operation update_early = early.Apply({m.w});
  Session sess(m.g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  EXPECT_EQ(Values<float>(sess.Run({}, {ema.Average(m.w)->value()})[0]), (std::vector<float>{1, 2}));
  float s0 = 1, e0 = 1, sb = 10;
  for (int k = 1; k <= 3; ++k) {
    sess.Run({}, {}, {m.move});
    sess.Run({}, {}, {update, update_early});
    const float w0 = 1.0f + k;
    s0 = 0.9f * s0 + 0.1f * w0;
    sb = 0.9f * sb + 0.1f * (10.0f - 2 * k);
    const float d = std::min(0.9f, (1.0f + k) / (10.0f + k));
    e0 = d * e0 + (1 - d) * w0;
    auto out =
        sess.Run({}, {ema.Average(m.w)->value(), ema.Average(m.b)->value(), early.Average(m.w)->value()});
    EXPECT_NEAR(out[0].flat<float>()[0], s0, 1e-5);
    EXPECT_NEAR(out[1].flat<float>()[0], sb, 1e-5);
    EXPECT_NEAR(out[2].flat<float>()[0], e0, 1e-5);
  }
}

TEST(ExponentialMovingAverage, ShadowsStartAtTheVariablesCurrentValues) {
  Model m;
  Session sess(m.g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  sess.Run({}, {}, {m.move});  // w = [2, 3], as if restored or trained before the average exists
  ExponentialMovingAverage ema(0.9);
  ema.Apply({m.w});
  sess.Run({}, {}, {ema.Average(m.w)->initializer()});
  EXPECT_EQ(Values<float>(sess.Run({}, {ema.Average(m.w)->value()})[0]), (std::vector<float>{2, 3}));
}

TEST(ExponentialMovingAverage, ZeroDebiasedAverageOfATensor) {
  Model m;
  Output loss = ops::ReduceSum(m.w.value(), std::vector<int64_t>{0}, false, "loss");
  ExponentialMovingAverage ema(0.9, {.zero_debias = true});
  Operation update = ema.ApplyToTensors({loss});
  EXPECT_EQ(ema.Average(loss)->op().name(), "loss/ExponentialMovingAverage");
  EXPECT_NE(m.g.FindNode("loss/ExponentialMovingAverage/biased"), nullptr);
  EXPECT_NE(m.g.FindNode("loss/ExponentialMovingAverage/local_step"), nullptr);
  Session sess(m.g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  // Debiased, the first average is the value itself, not 0.1 of it.
  sess.Run({}, {}, {update});
  EXPECT_NEAR(sess.Run({}, {ema.Average(loss)->value()})[0].scalar<float>(), 3.0f, 1e-6);
  sess.Run({}, {}, {m.move});
  sess.Run({}, {}, {update});
  // biased = 0.9 * 0.3 + 0.1 * 5 = 0.77, over 1 - 0.81.
  EXPECT_NEAR(sess.Run({}, {ema.Average(loss)->value()})[0].scalar<float>(), 0.77f / 0.19f, 1e-5);
}

TEST(ExponentialMovingAverage, AnEvaluationJobRestoresTheAverages) {
  const std::string dir = testing::MakeTempDir("ema_restore");
  std::string path;
  {
    Model m;
    ExponentialMovingAverage ema(0.5);
    Operation update = ema.Apply({m.w, m.b});
    Session sess(m.g);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
    sess.Run({}, {}, {m.move});
    sess.Run({}, {}, {update});  // averages: w [1.5, 2.5], b [9]; w is [2, 3], b [8]
    Saver saver({.graph = &m.g});
    path = saver.Save(sess, dir + "/model.ckpt");
  }
  Model eval;
  ExponentialMovingAverage ema(0.5);
  const std::map<std::string, Variable> to_restore = ema.VariablesToRestore();
  ASSERT_EQ(to_restore.size(), 3u);
  EXPECT_TRUE(to_restore.at("w/ExponentialMovingAverage") == eval.w);
  EXPECT_TRUE(to_restore.at("b/ExponentialMovingAverage") == eval.b);
  EXPECT_TRUE(to_restore.at("global_step") == eval.step);
  Saver saver({.var_map = to_restore, .graph = &eval.g});
  Session sess(eval.g);
  saver.Restore(sess, path);
  auto out = sess.Run({}, {eval.w.value(), eval.b.value(), eval.step.value()});
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{1.5f, 2.5f}));
  EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{9}));
  EXPECT_EQ(out[2].scalar<int64_t>(), 1);
}

TEST(ExponentialMovingAverage, BadArgumentsAreInvalidArguments) {
  Model m;
  ExponentialMovingAverage ema(0.9);
  ExpectInvalidArgument([&] { ema.Apply({m.step}); }, {"half, float, or double", "global_step"});
  ExpectInvalidArgument(
      [&] {
        AssignMovingAverage(m.w, ops::Const<double>({1, 2}), ops::Const(0.9f));
      },
      {"w", "double", "float"});
  ExpectInvalidArgument([&] { ExponentialMovingAverage(0.9, {.name = ""}); }, "needs a name");
}

}  // namespace
}  // namespace flowtrain::train
