// TensorArray: TF's node names, the kernels' values and rules (write once, read once unless
// clear_after_read is off, gradient arrays aggregate, unwritten elements read as zeros),
// errors naming the array, per-run lifetime, and gradients against finite differences.
#include "flowtrain/ops/tensor_array_ops.h"

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/stack_ops.h"
#include "flowtrain/runtime/gradient_checker.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;
using testing::Values;

template <typename ErrorT, typename Fn>
void ExpectError(const Fn& fn, std::string_view needle) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing: " << needle;
  } catch (const ErrorT& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what() << "\n  lacks: " << needle;
  }
}

class TensorArrayTest : public ::testing::Test {
 protected:
  Graph g_;
  ScopeGuard as_default_ = g_.AsDefault();
};

TEST_F(TensorArrayTest, NodeNamesAndAttrsAreTfs) {
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({2, 3}), "x");
  ops::TensorArray ta(DT_FLOAT, {.size = 3, .element_shape = PartialTensorShape({2})});
  EXPECT_EQ(ta.handle().op().name(), "TensorArray");
  EXPECT_EQ(ta.handle().op().type(), "TensorArrayV3");
  EXPECT_EQ(ta.handle().op().input(0).op().name(), "TensorArray/size");
  EXPECT_TRUE(ta.handle().op().GetAttr<bool>("identical_element_shapes"));  // infer_shape
  EXPECT_TRUE(ta.handle().op().GetAttr<bool>("clear_after_read"));
  EXPECT_FALSE(ta.handle().op().GetAttr<bool>("dynamic_size"));
  EXPECT_EQ(ta.handle().shape().DebugString(), "[2]");
  EXPECT_EQ(ta.flow().index(), 1);

  Output r = ta.Read(0);
  EXPECT_EQ(r.op().name(), "TensorArrayReadV3");
  EXPECT_EQ(r.op().input(1).op().name(), "TensorArrayReadV3/index");
  EXPECT_EQ(r.shape().DebugString(), "[2]");
  ops::TensorArray w = ta.Write(1, ops::Const({1.0f, 2.0f}));
  EXPECT_EQ(w.flow().op().name(), "TensorArrayWrite/TensorArrayWriteV3");
  EXPECT_EQ(w.flow().op().input(1).op().name(), "TensorArrayWrite/TensorArrayWriteV3/index");
  Output stacked = w.Stack();
  EXPECT_EQ(stacked.op().name(), "TensorArrayStack/TensorArrayGatherV3");
  EXPECT_EQ(stacked.op().input(1).op().name(), "TensorArrayStack/range");
  EXPECT_EQ(stacked.shape().DebugString(), "[?,2]");

  ops::TensorArray u = ops::TensorArray(DT_FLOAT, {.size = 2}).Unstack(x);
  EXPECT_EQ(u.handle().op().name(), "TensorArray_1");
  EXPECT_EQ(u.flow().op().name(), "TensorArrayUnstack/TensorArrayScatter/TensorArrayScatterV3");
  EXPECT_EQ(u.element_shape().DebugString(), "[3]");
  ops::TensorArray s = ops::TensorArray(DT_FLOAT, {.size = 2}).Split(x, ops::Const({1, 1}));
  EXPECT_EQ(s.flow().op().name(), "TensorArraySplit/TensorArraySplitV3");
  EXPECT_EQ(s.flow().op().input(2).op().name(), "TensorArraySplit/Cast");
  EXPECT_EQ(s.element_shape().DebugString(), "[1,3]");
  EXPECT_EQ(s.Concat().op().name(), "TensorArrayConcatV3");
  EXPECT_EQ(s.Concat().shape().DebugString(), "[?,3]");
  ops::TensorArray grad = ta.Grad("gradients");
  EXPECT_EQ(grad.handle().op().name(), "TensorArrayGrad/TensorArrayGradV3");
  EXPECT_EQ(grad.handle().op().GetAttr<std::string>("source"), "gradients");
  EXPECT_EQ(grad.flow().op().name(), "TensorArrayGrad/gradient_flow");
  EXPECT_EQ(ta.Size().op().name(), "TensorArraySizeV3");
  EXPECT_EQ(ta.Close().name(), "TensorArrayCloseV3");
}

TEST_F(TensorArrayTest, BuildTimeChecks) {
  ops::TensorArray ta(DT_FLOAT, {.size = 2});
  ExpectInvalidArgument([&] { ta.Write(0, ops::Const(1)); },
                        "TensorArray dtype is float but Op is trying to write dtype int32");
  ops::TensorArray w = ta.Write(0, ops::Const({1.0f, 2.0f}));
  ExpectInvalidArgument(
      [&] {
        w.Write(1, ops::Const({1.0f, 2.0f, 3.0f}));
      },
      "Inconsistent shapes: saw [3] but expected [2]");
  ExpectInvalidArgument([&] { ops::TensorArray::FromHandle(DT_FLOAT, ops::Const(1.0f), ta.flow()); },
                        "DT_RESOURCE");
}

TEST_F(TensorArrayTest, WriteReadStackUnstackGatherScatterConcatSplit) {
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({3, 2}), "x");
  ops::TensorArray ta(DT_FLOAT, {.size = 3, .clear_after_read = false});
  ta = ta.Unstack(x);
  Output r1 = ta.Read(1);
  Output stacked = ta.Stack();
  Output gathered = ta.Gather(ops::Const({2, 0}));
  Output size = ta.Size();
  ops::TensorArray sc =
      ops::TensorArray(DT_FLOAT, {.size = 4, .infer_shape = false})
          .Scatter(ops::Const({3, 1}), ops::Const<float>({5, 6, 7, 8}, TensorShape({2, 2})));
  Output sc_read = sc.Read(3);
  ops::TensorArray sp =
      ops::TensorArray(DT_FLOAT, {.size = 2, .clear_after_read = false, .infer_shape = false})
          .Split(x, ops::Const({1, 2}));
  Output concat = sp.Concat();
  Output lengths = concat.op().output(1);
  Output second = sp.Read(1);

  Session sess(g_);
  Tensor xv = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  auto out = sess.Run({{x, xv}}, {r1, stacked, gathered, size, sc_read, concat, lengths, second}, {});
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{3, 4}));
  EXPECT_EQ(out[1].shape().DebugString(), "[3,2]");
  EXPECT_EQ(Values<float>(out[1]), Values<float>(xv));
  EXPECT_EQ(Values<float>(out[2]), (std::vector<float>{5, 6, 1, 2}));
  EXPECT_EQ(out[3].scalar<int32_t>(), 3);
  EXPECT_EQ(Values<float>(out[4]), (std::vector<float>{5, 6}));
  EXPECT_EQ(Values<float>(out[5]), Values<float>(xv));
  EXPECT_EQ(Values<int64_t>(out[6]), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(out[7].shape().DebugString(), "[2,2]");
  EXPECT_EQ(Values<float>(out[7]), (std::vector<float>{3, 4, 5, 6}));
}

TEST_F(TensorArrayTest, DynamicSizeGrowsAndEmptyStacksNeedAShape) {
  ops::TensorArray ta(DT_FLOAT, {.size = 0, .dynamic_size = true});
  ops::TensorArray w = ta.Write(4, ops::Const(2.0f));
  Output size = w.Size();
  Output empty = ops::TensorArray(DT_FLOAT, {.size = 0, .element_shape = PartialTensorShape({3})}).Stack();
  Output unknown = ops::TensorArray(DT_FLOAT, {.size = 0}).Stack();
  Output n = ops::Placeholder(DT_INT32, PartialTensorShape({}), "n");
  Output sized = ops::TensorArray(DT_FLOAT, {.size_tensor = n, .name = "sized"}).Size();
  Session sess(g_);
  EXPECT_EQ(sess.Run({{n, Tensor::Scalar<int32_t>(7)}}, {sized}, {})[0].scalar<int32_t>(), 7);
  ExpectInvalidArgument(
      [&] {
        sess.Run({{n, Tensor::Scalar<int32_t>(-1)}}, {sized}, {});
      },
      "Size should be >= 0.");
  auto out = sess.Run({}, {size, empty}, {});
  EXPECT_EQ(out[0].scalar<int32_t>(), 5);
  EXPECT_EQ(out[1].shape().DebugString(), "[0,3]");
  ExpectInvalidArgument([&] { sess.Run({}, {unknown}, {}); },
                        "has size zero, but element shape <unknown> is not fully defined");
}

TEST_F(TensorArrayTest, RunTimeErrorsNameTheArray) {
  Output v = ops::Placeholder(DT_FLOAT, PartialTensorShape::Unknown(), "v");
  Output i = ops::Placeholder(DT_INT32, PartialTensorShape({}), "i");
  ops::TensorArray ta(DT_FLOAT, {.size = 2, .infer_shape = false, .element_shape = PartialTensorShape({2})});
  ops::TensorArray once = ta.Write(0, ops::Const({1.0f, 2.0f}));
  Output twice = once.Write(0, ops::Const({1.0f, 2.0f})).flow();
  Output out_of_range = ta.Write(i, v).flow();
  // An unwritten element reads as zeros when the element shape is known, else fails (TF's rule).
  Output zeros = ta.Read(1);
  Output unwritten = ops::TensorArray(DT_FLOAT, {.size = 2, .infer_shape = false}).Read(1);
  Output read_twice = ops::Add(once.Read(0), ops::Identity(once.Read(0, "second")));
  Output bad_shape = ta.Write(1, v).flow();
  Operation close = once.Close();
  Session sess(g_);
  const Tensor pair = Tensor::FromVector<float>({1, 2});
  ExpectInvalidArgument([&] { sess.Run({}, {twice}, {}); },
                        "Could not write to TensorArray index 0 because it has already been written to.");
  ExpectInvalidArgument(
      [&] {
        sess.Run({{v, pair}, {i, Tensor::Scalar<int32_t>(2)}}, {out_of_range}, {});
      },
      "Tried to write to index 2 but array is not resizeable and size is: 2");
  ExpectError<OutOfRangeError>(
      [&] {
        sess.Run({{v, pair}, {i, Tensor::Scalar<int32_t>(-1)}}, {out_of_range}, {});
      },
      "Writing to negative indices (index -1) is not allowed.");
  EXPECT_EQ(Values<float>(sess.Run({}, {zeros}, {})[0]), (std::vector<float>{0, 0}));
  ExpectInvalidArgument(
      [&] { sess.Run({}, {unwritten}, {}); },
      "Could not read from TensorArray index 1.  Furthermore, the element shape is not fully defined");
  ExpectInvalidArgument([&] { sess.Run({}, {read_twice}, {}); },
                        "twice because it was cleared after a previous read");
  ExpectInvalidArgument(
      [&] {
        sess.Run({{v, Tensor::FromVector<float>({1, 2, 3})}}, {bad_shape}, {});
      },
      "because the value shape is [3] which is incompatible with the TensorArray's inferred element "
      "shape: [2]");
  // The message names the run-time array ("TensorArray_<n>").
  ExpectInvalidArgument([&] { sess.Run({}, {unwritten}, {}); }, "TensorArray TensorArray_");

  // Reading after close, in one run (the closed array lives until the run ends).
  {
    auto deps = g_.ControlDependencies({close});
    Output after_close =
        ops::TensorArray::FromHandle(DT_FLOAT, ta.handle(), once.flow()).Read(0, "after_close");
    ExpectInvalidArgument([&] { sess.Run({}, {after_close}, {}); }, "has already been closed.");
  }
  // A handle of another kind, and an array read as another dtype.
  Output stack = ops::StackV2(DT_FLOAT);
  Output wrong_kind = ops::TensorArray::FromHandle(DT_FLOAT, stack, ta.flow()).Read(0, "wrong_kind");
  ExpectInvalidArgument([&] { sess.Run({}, {wrong_kind}, {}); }, "expects a TensorArray handle, but");
  Output wrong_dtype =
      ops::TensorArray::FromHandle(DT_INT32, ta.handle(), once.flow()).Read(0, "wrong_dtype");
  ExpectInvalidArgument([&] { sess.Run({}, {wrong_dtype}, {}); },
                        "TensorArray dtype is float but Op requested dtype int32.");
}

TEST_F(TensorArrayTest, GradientArraysAggregateAndReadZeros) {
  ops::TensorArray ta(DT_FLOAT, {.size = 3, .element_shape = PartialTensorShape({2})});
  ops::TensorArray g = ta.Grad("gradients");
  g = g.Write(0, ops::Const({1.0f, 2.0f})).Write(0, ops::Const({10.0f, 20.0f}));
  Output stacked = g.Stack();
  ops::TensorArray unknown(DT_FLOAT, {.size = 1});
  Output unknown_read = unknown.Grad("gradients").Read(0);
  // Two sources make two gradient arrays; one source shares its array.
  ops::TensorArray g1 = ta.Grad("gradients_1").Write(1, ops::Const({3.0f, 4.0f}));
  Output other =
      ops::TensorArray::FromHandle(DT_FLOAT, ta.Grad("gradients_1", g1.flow()).handle(), g1.flow()).Read(1);
  Session sess(g_);
  auto out = sess.Run({}, {stacked, other}, {});
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{11, 22, 0, 0, 0, 0}));
  EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{3, 4}));
  ExpectInvalidArgument([&] { sess.Run({}, {unknown_read}, {}); }, "the element shape is not fully defined");
}

TEST_F(TensorArrayTest, ArraysLiveForOneRun) {
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({2}), "x");
  ops::TensorArray ta = ops::TensorArray(DT_FLOAT, {.size = 1}).Write(0, x);
  Output read = ta.Read(0);
  Output pushed = ops::StackPushV2(ops::StackV2(DT_FLOAT), x);
  Session sess(g_);
  const size_t before = sess.resource_manager()->All<ResourceBase>().size();
  for (float value : {1.0f, 2.0f}) {
    auto out = sess.Run({{x, Tensor::FromVector<float>({value, value})}}, {read, pushed}, {});
    EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{value, value}));  // a fresh array each run
    EXPECT_EQ(sess.resource_manager()->All<ResourceBase>().size(), before);
  }
  // Also when the run fails.
  Output bad = ta.Read(1, "bad");
  ExpectInvalidArgument(
      [&] {
        sess.Run({{x, Tensor::FromVector<float>({1, 1})}}, {bad}, {});
      },
      "Tried to read from index 1");
  EXPECT_EQ(sess.resource_manager()->All<ResourceBase>().size(), before);
}

TEST_F(TensorArrayTest, GradientsMatchFiniteDifferences) {
  Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({3, 2}), "x");
  Output a = ops::Placeholder(DT_DOUBLE, PartialTensorShape({2}), "a");
  Output b = ops::Placeholder(DT_DOUBLE, PartialTensorShape({2}), "b");
  const Tensor xv = RandomDoubles({3, 2}, 1);
  const Tensor av = RandomDoubles({2}, 2);
  const Tensor bv = RandomDoubles({2}, 3);

  // write -> read, one element read twice (its gradients add up in the gradient array).
  ops::TensorArray w =
      ops::TensorArray(DT_DOUBLE, {.size = 2, .clear_after_read = false}).Write(0, a).Write(1, b);
  Output y1 = ops::Mul(ops::Mul(w.Read(0), w.Read(1)), w.Read(0));
  EXPECT_LT(ComputeGradientError({a, b}, {av, bv}, y1), 1e-8);

  // unstack -> stack.
  Output y2 = ops::Square(ops::TensorArray(DT_DOUBLE, {.size = 3}).Unstack(x).Stack());
  EXPECT_LT(ComputeGradientError({x}, {xv}, y2), 1e-8);

  // scatter -> gather, one element never gathered (its gradient reads as zeros).
  ops::TensorArray s = ops::TensorArray(DT_DOUBLE, {.size = 3, .element_shape = PartialTensorShape({2})})
                           .Scatter(ops::Const({2, 0, 1}), x);
  Output y3 = ops::Mul(s.Gather(ops::Const({0, 2})), ops::Const(3.0));
  EXPECT_LT(ComputeGradientError({x}, {xv}, y3), 1e-8);

  // split -> concat.
  Output y4 = ops::Square(
      ops::TensorArray(DT_DOUBLE, {.size = 2, .infer_shape = false}).Split(x, ops::Const({2, 1})).Concat());
  EXPECT_LT(ComputeGradientError({x}, {xv}, y4), 1e-8);
}

TEST_F(TensorArrayTest, GradientOpsUseTheGradientsScopeAsSource) {
  Output a = ops::Placeholder(DT_FLOAT, PartialTensorShape({2}), "a");
  ops::TensorArray w = ops::TensorArray(DT_FLOAT, {.size = 1}).Write(0, a);
  Output grad = ops::Gradients({w.Read(0)}, {a})[0];
  EXPECT_EQ(grad.op().type(), "TensorArrayReadV3");
  const Node* grad_array = g_.FindNode("gradients/TensorArrayReadV3_grad/TensorArrayGrad/TensorArrayGradV3");
  ASSERT_NE(grad_array, nullptr);
  EXPECT_EQ(grad_array->GetAttr<std::string>("source"), "gradients");
  Session sess(g_);
  EXPECT_EQ(Values<float>(sess.Run({{a, Tensor::FromVector<float>({1, 2})}}, {grad}, {})[0]),
            (std::vector<float>{1, 1}));
}

}  // namespace
}  // namespace flowtrain
