// AsString against TF 2.21's tf.strings.as_string (each expectation was run there).
#include "flowtrain/ops/string_ops.h"

#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/ops/array_ops.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain::ops {
namespace {

std::vector<std::string> Format(const Tensor& input, const AsStringOptions& options = {}) {
  Graph g;
  auto as_default = g.AsDefault();
  Output text = AsString(Const(input), options);
  Session sess(g);
  return testing::Values<std::string>(sess.Run({}, {text})[0]);
}

TEST(AsString, FormatsAsTensorFlowDoes) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Format(Tensor::FromVector<float>({1.5f, -2.25f, 1e10f, 1e-7f, inf})),
            (std::vector<std::string>{"1.500000", "-2.250000", "10000000000.000000", "0.000000", "inf"}));
  EXPECT_EQ(Format(Tensor::FromVector<float>({1.5f, -2.25f, 1e10f, 1e-7f, 0.1f}), {.shortest = true}),
            (std::vector<std::string>{"1.5", "-2.25", "1e+10", "1e-07", "0.1"}));
  EXPECT_EQ(Format(Tensor::FromVector<float>({1.5f, -2.25f}), {.scientific = true}),
            (std::vector<std::string>{"1.500000e+00", "-2.250000e+00"}));
  EXPECT_EQ(Format(Tensor::FromVector<float>({1.5f, -2.25f}), {.precision = 2, .width = 8}),
            (std::vector<std::string>{"    1.50", "   -2.25"}));
  EXPECT_EQ(Format(Tensor::FromVector<float>({1.5f, -2.25f}), {.precision = 2, .width = 8, .fill = "0"}),
            (std::vector<std::string>{"00001.50", "-0002.25"}));
  EXPECT_EQ(Format(Tensor::FromVector<int64_t>({7, -3}), {.width = 5}),
            (std::vector<std::string>{"    7", "   -3"}));
  EXPECT_EQ(Format(Tensor::FromVector<int32_t>({7, -3}), {.width = 5, .fill = "0"}),
            (std::vector<std::string>{"00007", "-0003"}));
  EXPECT_EQ(Format(Tensor::FromVector<uint8_t>({255})), (std::vector<std::string>{"255"}));
  EXPECT_EQ(Format(Tensor::FromVector<bool>({true, false})), (std::vector<std::string>{"true", "false"}));
  EXPECT_EQ(Format(Tensor::FromVector<std::string>({"ab"})), (std::vector<std::string>{"ab"}));
  EXPECT_EQ(Format(Tensor::FromVector<double>({0.1}), {.shortest = true}), (std::vector<std::string>{"0.1"}));
  // A width beyond the stack buffer.
  EXPECT_EQ(Format(Tensor::FromVector<int32_t>({1}), {.width = 300})[0].size(), 300u);
}

TEST(AsString, BadOptionsAreTfsErrors) {
  testing::ExpectInvalidArgument(
      [] { Format(Tensor::FromVector<float>({1.5f}), {.scientific = true, .shortest = true}); },
      "Cannot select both scientific and shortest notation");
  testing::ExpectInvalidArgument([] { Format(Tensor::FromVector<int32_t>({7}), {.precision = 2}); },
                                 "precision not supported for datatype int32");
  testing::ExpectInvalidArgument([] { Format(Tensor::FromVector<int32_t>({7}), {.fill = "ab"}); },
                                 "Fill string must be one or fewer characters");
  testing::ExpectInvalidArgument([] { Format(Tensor::FromVector<int32_t>({7}), {.width = 4, .fill = "x"}); },
                                 "Fill argument not supported: \"x\"");
  // A width printf cannot honour (its output would pass INT_MAX bytes) is an error, not a
  // std::length_error from a negative length.
  testing::ExpectInvalidArgument([] { Format(Tensor::FromVector<int32_t>({7}), {.width = 3'000'000'000}); },
                                 "the width or precision asks for more than 2^31 characters");
}

}  // namespace
}  // namespace flowtrain::ops
