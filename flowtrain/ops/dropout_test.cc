// ops::Dropout: the keep rate, scaling, per-run draws, seeding, gradient and bad rates.
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/runtime/gradient_checker.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;

class DropoutTest : public ::testing::Test {
 protected:
  Graph g_;
  ScopeGuard as_default_ = g_.AsDefault();
};

TEST_F(DropoutTest, DropoutKeepsAboutOneMinusRateAndScales) {
  g_.set_seed(1);
  Output x = ops::Const(Tensor::FromVector<float>(std::vector<float>(4000, 2.0f)));
  Output y = ops::Dropout(x, 0.25f, /*seed=*/7);
  EXPECT_EQ(y.op().name(), "dropout/mul_1");
  EXPECT_EQ(y.shape().DebugString(), "[4000]");
  Output grad = ops::Gradients({y}, {x})[0];
  Session sess(g_);
  auto out = sess.Run({}, {y, grad});
  int64_t kept = 0;
  for (int64_t i = 0; i < 4000; ++i) {
    const float v = out[0].flat<float>()[i];
    if (v != 0) {
      ++kept;
      EXPECT_FLOAT_EQ(v, 2.0f / 0.75f);
    }
    // The gradient is the same mask and scale, from the same draw.
    EXPECT_FLOAT_EQ(out[1].flat<float>()[i], v / 2.0f);
  }
  EXPECT_NEAR(kept / 4000.0, 0.75, 0.03);
  // A new draw every run; the same sequence in a new session (seeded).
  Tensor second = sess.Run({}, {y})[0];
  Session again(g_);
  Tensor first_again = again.Run({}, {y})[0];
  int64_t differ = 0, same_as_first = 0;
  for (int64_t i = 0; i < 4000; ++i) {
    differ += second.flat<float>()[i] != out[0].flat<float>()[i];
    same_as_first += first_again.flat<float>()[i] == out[0].flat<float>()[i];
  }
  EXPECT_GT(differ, 100);
  EXPECT_EQ(same_as_first, 4000);
}

TEST_F(DropoutTest, DropoutWithFedRateAndBadRates) {
  Output x = ops::Placeholder(DT_DOUBLE, {3, 4}, "x");
  Output rate = ops::PlaceholderWithDefault(ops::Const(0.5), PartialTensorShape({}));
  Output y = ops::Dropout(x, rate);
  Tensor xv = RandomDoubles({3, 4}, 60);
  Session sess(g_);
  Tensor eval = sess.Run({{x, xv}, {rate, Tensor::Scalar<double>(0.0)}}, {y})[0];
  for (int i = 0; i < 12; ++i) EXPECT_EQ(eval.flat<double>()[i], xv.flat<double>()[i]);
  ExpectInvalidArgument([&] { ops::Dropout(x, 1.0f); }, {"range [0, 1)", "dropout"});
  ExpectInvalidArgument([&] { ops::Dropout(ops::Const<int32_t>({1, 2}), 0.5f); }, {"floating point"});
}

}  // namespace
}  // namespace flowtrain
