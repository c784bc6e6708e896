#include "flowtrain/proto/tensor_proto_util.h"

#include <gtest/gtest.h>

#include "flowtrain/core/str_util.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

tensorflow::TensorProto FloatProto(std::initializer_list<int64_t> dims) {
  tensorflow::TensorProto proto;
  proto.set_dtype(tensorflow::DT_FLOAT);
  for (int64_t d : dims) proto.mutable_tensor_shape()->add_dim()->set_size(d);
  return proto;
}

TEST(TensorFromProto, BroadcastsOneValueAsTFDoes) {
  tensorflow::TensorProto proto = FloatProto({2, 3});
  proto.add_float_val(1.5f);
  proto.add_float_val(2.5f);
  EXPECT_EQ(testing::Values<float>(TensorFromProto(proto)),
            std::vector<float>({1.5f, 2.5f, 2.5f, 2.5f, 2.5f, 2.5f}));
  EXPECT_EQ(testing::Values<float>(TensorFromProto(FloatProto({3}))), std::vector<float>({0, 0, 0}));
}

// [2^31, 2^31] floats are 2^64 bytes: the byte count wrapped to 0 and the fill wrote 2^62
// elements into a 64-byte block.
TEST(TensorFromProto, ShapeWhoseBytesOverflowIsInvalidArgument) {
  tensorflow::TensorProto proto = FloatProto({int64_t{1} << 31, int64_t{1} << 31});
  proto.add_float_val(1.0f);
  testing::ExpectInvalidArgument([&] { TensorFromProto(proto); }, {"[2147483648,2147483648]", "float"});
  proto.clear_float_val();
  proto.set_tensor_content(std::string(4, '\0'));
  testing::ExpectInvalidArgument([&] { TensorFromProto(proto); }, {"tensor_content has 4 bytes"});
}

// A Const of [2^40] from one value would be 4 TiB; [6e8] (2.4 GB) from a 10-byte proto is refused
// as well, without allocating.
TEST(TensorFromProto, FillBeyondTheCapIsInvalidArgument) {
  for (int64_t n : {int64_t{1} << 40, int64_t{600'000'000}}) {
    tensorflow::TensorProto proto = FloatProto({n});
    proto.add_float_val(3.0f);
    testing::ExpectInvalidArgument([&] { TensorFromProto(proto); },
                                   {StrCat("[", n, "]"), "at most 2147483648"});
  }
  tensorflow::TensorProto strings;
  strings.set_dtype(tensorflow::DT_STRING);
  strings.mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 40);
  testing::ExpectInvalidArgument([&] { TensorFromProto(strings); }, {"string", "at most"});
}

TEST(ShapeFromProto, DimsWhoseProductOverflowsAreInvalidArgument) {
  tensorflow::TensorShapeProto shape;
  shape.add_dim()->set_size(int64_t{1} << 32);
  shape.add_dim()->set_size(int64_t{1} << 32);
  testing::ExpectInvalidArgument([&] { ShapeFromProto(shape); }, "too many elements");
  shape.add_dim()->set_size(-3);
  testing::ExpectInvalidArgument([&] { ShapeFromProto(shape); }, "-3");
}

}  // namespace
}  // namespace flowtrain
