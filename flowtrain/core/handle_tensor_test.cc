// DT_RESOURCE and DT_VARIANT tensors: elements are constructed, copied and destroyed.
#include <any>
#include <memory>

#include <gtest/gtest.h>

#include "flowtrain/core/tensor.h"

namespace flowtrain {
namespace {

TEST(HandleTensor, ResourceScalarHoldsAHandle) {
  Tensor t(DT_RESOURCE, TensorShape());
  t.scalar<ResourceHandle>() = {.container = "c", .name = "queue", .type_name = "Queue"};
  Tensor copy = t.DeepCopy();
  EXPECT_FALSE(copy.SharesBufferWith(t));
  EXPECT_EQ(copy.scalar<ResourceHandle>().name, "queue");
  EXPECT_EQ(copy.scalar<ResourceHandle>().DebugString(), "c/queue");
  EXPECT_NE(t.DebugString().find("c/queue"), std::string::npos);
  EXPECT_THROW(t.scalar<std::string>(), InvalidArgumentError);
}

TEST(HandleTensor, VariantElementsAreDestroyedWithTheBuffer) {
  auto payload = std::make_shared<int>(7);
  {
    Tensor t(DT_VARIANT, TensorShape({2}));
    t.flat<std::any>()[1] = payload;
    EXPECT_EQ(payload.use_count(), 2);
    Tensor slice = t.Slice(1, 2);
    EXPECT_EQ(*std::any_cast<std::shared_ptr<int>>(slice.scalar<std::any>()), 7);
    Tensor copy = t.DeepCopy();
    EXPECT_EQ(payload.use_count(), 3);
  }
  EXPECT_EQ(payload.use_count(), 1);
}

}  // namespace
}  // namespace flowtrain
