// signature_def_utils: TensorInfos as TF builds them, the three TF Serving signatures with TF's
// checks, and is_valid_signature.
#include "flowtrain/saved_model/signature_def_utils.h"

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/saved_model/signature_constants.h"
#include "tests/test_util.h"

namespace flowtrain::saved_model {
namespace {

using flowtrain::testing::ExpectInvalidArgument;

class SignatureDefUtilsTest : public ::testing::Test {
 protected:
  SignatureDefUtilsTest() {
    auto as_default = graph_.AsDefault();
    floats_ = ops::Placeholder(DT_FLOAT, PartialTensorShape({-1, 3}), "floats");
    strings_ = ops::Placeholder(DT_STRING, PartialTensorShape({-1}), "strings");
    ints_ = ops::Placeholder(DT_INT32, PartialTensorShape::Unknown(), "ints");
  }
  Graph graph_;
  Output floats_, strings_, ints_;
};

TEST_F(SignatureDefUtilsTest, TensorInfoHasNameDtypeAndShape) {
  const tensorflow::TensorInfo info = BuildTensorInfo(floats_);
  EXPECT_EQ(info.name(), "floats:0");
  EXPECT_EQ(info.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(info.tensor_shape().dim_size(), 2);
  EXPECT_EQ(info.tensor_shape().dim(0).size(), -1);
  EXPECT_EQ(info.tensor_shape().dim(1).size(), 3);
  EXPECT_TRUE(BuildTensorInfo(ints_).tensor_shape().unknown_rank());
  ExpectInvalidArgument([] { BuildTensorInfo(Output()); }, "null Output");
}

TEST_F(SignatureDefUtilsTest, PredictTakesAnyTensorsButNotNone) {
  const tensorflow::SignatureDef sig =
      PredictSignatureDef({{"a", floats_}, {"b", ints_}}, {{"out", strings_}});
  EXPECT_EQ(sig.method_name(), "tensorflow/serving/predict");
  EXPECT_EQ(sig.inputs().at("b").name(), "ints:0");
  EXPECT_EQ(sig.outputs().at("out").dtype(), tensorflow::DT_STRING);
  EXPECT_TRUE(IsValidSignature(sig));
  ExpectInvalidArgument(
      [&] {
        PredictSignatureDef({}, {{"out", floats_}});
      },
      "Prediction `inputs` cannot be None or empty.");
  ExpectInvalidArgument(
      [&] {
        PredictSignatureDef({{"a", floats_}}, {});
      },
      "Prediction `outputs` cannot be None or empty.");
}

TEST_F(SignatureDefUtilsTest, ClassificationChecksDtypesAndAllowsEitherOutput) {
  const tensorflow::SignatureDef both = ClassificationSignatureDef(strings_, strings_, floats_);
  EXPECT_EQ(both.method_name(), kClassifyMethodName);
  EXPECT_EQ(both.inputs().at(kClassifyInputs).name(), "strings:0");
  EXPECT_EQ(both.outputs().at(kClassifyOutputClasses).name(), "strings:0");
  EXPECT_EQ(both.outputs().at(kClassifyOutputScores).name(), "floats:0");
  EXPECT_TRUE(IsValidSignature(both));
  EXPECT_EQ(ClassificationSignatureDef(strings_, {}, floats_).outputs().size(), 1u);
  EXPECT_EQ(ClassificationSignatureDef(strings_, strings_, {}).outputs().size(), 1u);

  ExpectInvalidArgument([&] { ClassificationSignatureDef({}, strings_, floats_); },
                        "Classification `examples` cannot be None.");
  ExpectInvalidArgument([&] { ClassificationSignatureDef(strings_, {}, {}); },
                        "Classification `classes` and `scores` cannot both be None.");
  ExpectInvalidArgument([&] { ClassificationSignatureDef(floats_, strings_, floats_); },
                        {"Classification input tensors must be of type string", "float", "floats:0"});
  ExpectInvalidArgument([&] { ClassificationSignatureDef(strings_, ints_, floats_); },
                        {"Classification classes must be of type string Tensor", "int32"});
  ExpectInvalidArgument([&] { ClassificationSignatureDef(strings_, strings_, ints_); },
                        "Classification scores must be a float Tensor.");
}

TEST_F(SignatureDefUtilsTest, RegressionChecksDtypes) {
  const tensorflow::SignatureDef sig = RegressionSignatureDef(strings_, floats_);
  EXPECT_EQ(sig.method_name(), kRegressMethodName);
  EXPECT_EQ(sig.inputs().at(kRegressInputs).name(), "strings:0");
  EXPECT_EQ(sig.outputs().at(kRegressOutputs).name(), "floats:0");
  EXPECT_TRUE(IsValidSignature(sig));
  ExpectInvalidArgument([&] { RegressionSignatureDef({}, floats_); },
                        "Regression `examples` cannot be None.");
  ExpectInvalidArgument([&] { RegressionSignatureDef(strings_, {}); },
                        "Regression `predictions` cannot be None.");
  ExpectInvalidArgument([&] { RegressionSignatureDef(ints_, floats_); },
                        "Regression input tensors must be of type string");
  ExpectInvalidArgument([&] { RegressionSignatureDef(strings_, ints_); },
                        "Regression output tensors must be of type float");
}

TEST_F(SignatureDefUtilsTest, IsValidSignatureFollowsTfServingRules) {
  EXPECT_FALSE(IsValidSignature(BuildSignatureDef({}, {}, "some/other/method")));
  // Predict needs an input and an output.
  EXPECT_FALSE(
      IsValidSignature(BuildSignatureDef({{"a", BuildTensorInfo(floats_)}}, {}, kPredictMethodName)));
  // Regress: exactly the keys "inputs" (string) and "outputs" (float).
  EXPECT_FALSE(
      IsValidSignature(BuildSignatureDef({{"x", BuildTensorInfo(strings_)}},
                                         {{kRegressOutputs, BuildTensorInfo(floats_)}}, kRegressMethodName)));
  EXPECT_FALSE(
      IsValidSignature(BuildSignatureDef({{kRegressInputs, BuildTensorInfo(strings_)}},
                                         {{kRegressOutputs, BuildTensorInfo(ints_)}}, kRegressMethodName)));
  // Classify: outputs only among "classes" (string) and "scores" (float).
  EXPECT_FALSE(
      IsValidSignature(BuildSignatureDef({{kClassifyInputs, BuildTensorInfo(strings_)}},
                                         {{"extra", BuildTensorInfo(floats_)}}, kClassifyMethodName)));
  EXPECT_FALSE(IsValidSignature(BuildSignatureDef({{kClassifyInputs, BuildTensorInfo(strings_)}},
                                                  {{kClassifyOutputScores, BuildTensorInfo(ints_)}},
                                                  kClassifyMethodName)));
  EXPECT_FALSE(IsValidSignature(
      BuildSignatureDef({{kClassifyInputs, BuildTensorInfo(strings_)}}, {}, kClassifyMethodName)));
}

}  // namespace
}  // namespace flowtrain::saved_model
