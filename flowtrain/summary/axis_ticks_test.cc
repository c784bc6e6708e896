#include "flowtrain/summary/axis_ticks.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"

namespace flowtrain::summary {
namespace {

std::vector<std::string> Labels(const AxisTicks& ticks) {
  std::vector<std::string> labels;
  for (double v : ticks.values) labels.push_back(FormatTick(v));
  return labels;
}

TEST(NiceTicks, LossCurveGetsHalvesFromZero) {
  const AxisTicks t = NiceTicks(0.0213, 2.3026);
  EXPECT_EQ(t.step, 0.5);
  EXPECT_EQ(t.lo, 0);
  EXPECT_EQ(t.hi, 2.5);
  EXPECT_EQ(Labels(t), (std::vector<std::string>{"0", "0.5", "1", "1.5", "2", "2.5"}));
}

TEST(NiceTicks, StepsOfFiveTwoAndOne) {
  EXPECT_EQ(Labels(NiceTicks(1, 201)), (std::vector<std::string>{"0", "50", "100", "150", "200", "250"}));
  EXPECT_EQ(Labels(NiceTicks(-0.37, 0.81)),
            (std::vector<std::string>{"-0.4", "-0.2", "0", "0.2", "0.4", "0.6", "0.8", "1"}));
  EXPECT_EQ(Labels(NiceTicks(0, 9)), (std::vector<std::string>{"0", "2", "4", "6", "8", "10"}));
  EXPECT_EQ(Labels(NiceTicks(0, 6)), (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6"}));
  EXPECT_EQ(NiceTicks(0, 3e6).step, 5e5);
  EXPECT_EQ(FormatTick(NiceTicks(0, 3e6).values.back()), "3e+06");
  EXPECT_EQ(NiceTicks(1e-7, 9e-7).step, 2e-7);
}

TEST(NiceTicks, BoundsOnATickAddNoExtraInterval) {
  const AxisTicks t = NiceTicks(0, 1);
  EXPECT_EQ(t.lo, 0);
  EXPECT_EQ(t.hi, 1);
  EXPECT_EQ(Labels(t), (std::vector<std::string>{"0", "0.2", "0.4", "0.6", "0.8", "1"}));
  // 0.1 * 3 is 0.30000000000000004 in binary; the axis still ends at 0.3.
  EXPECT_EQ(Labels(NiceTicks(0, 0.1 * 3)),
            (std::vector<std::string>{"0", "0.05", "0.1", "0.15", "0.2", "0.25", "0.3"}));
}

TEST(NiceTicks, ReversedBoundsAndSingleValues) {
  EXPECT_EQ(Labels(NiceTicks(10, 0)), Labels(NiceTicks(0, 10)));
  EXPECT_EQ(Labels(NiceTicks(0, 0)), (std::vector<std::string>{"-1", "-0.5", "0", "0.5", "1"}));
  const AxisTicks t = NiceTicks(5, 5);
  EXPECT_LE(t.lo, 4.5);
  EXPECT_GE(t.hi, 5.5);
  EXPECT_EQ(t.step, 0.2);
}

TEST(NiceTicks, SpansBeyondDoublePrecisionGetTheBoundsAsTicks) {
  const AxisTicks huge = NiceTicks(-1e308, 1e308);
  EXPECT_EQ(huge.values, (std::vector<double>{-1e308, 1e308}));
  const AxisTicks fine = NiceTicks(1e17, 1e17 + 16);
  EXPECT_EQ(fine.values, (std::vector<double>{1e17, 1e17 + 16}));
}

TEST(NiceTicks, BadArgumentsAreInvalidArgument) {
  EXPECT_THROW(NiceTicks(0, std::numeric_limits<double>::infinity()), InvalidArgumentError);
  EXPECT_THROW(NiceTicks(std::nan(""), 1), InvalidArgumentError);
  EXPECT_THROW(NiceTicks(0, 1, 0), InvalidArgumentError);
}

TEST(FormatTick, ZeroAndSixDigits) {
  EXPECT_EQ(FormatTick(-0.0), "0");
  EXPECT_EQ(FormatTick(0.1 * 3), "0.3");
  EXPECT_EQ(FormatTick(123456789), "1.23457e+08");
}

}  // namespace
}  // namespace flowtrain::summary
