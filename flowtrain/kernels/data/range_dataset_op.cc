// The kernel of RangeDataset: start, start + step, ... up to (not including) stop, as scalars
// of output_types[0] (int64 in TF 1.15; TF 2.x also casts to other numeric types).
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class RangeDataset : public DatasetBase {
 public:
  RangeDataset(int64_t start, int64_t stop, int64_t step, DataType dtype)
      : start_(start), stop_(stop), step_(step), dtype_(dtype) {}
  std::string DebugString() const override {
    return StrCat("RangeDataset(", start_, ", ", stop_, ", ", step_, ")");
  }

  class Iter : public IteratorBase {
   public:
    Iter(const RangeDataset& ds, std::string prefix)
        : IteratorBase(std::move(prefix)), ds_(ds), next_(ds.start_) {}
    bool GetNext(IteratorContext&, Element* out) override {
      if (ds_.step_ > 0 ? next_ >= ds_.stop_ : next_ <= ds_.stop_) return false;
      const int64_t value = next_;
      next_ += ds_.step_;
      if (ds_.dtype_ == DT_INT64) {
        out->assign(1, Tensor::Scalar<int64_t>(value));
      } else {
        Tensor t(ds_.dtype_, TensorShape());
        DispatchNumericType(ds_.dtype_, "RangeDataset", [&]<typename T>() {
          if constexpr (std::is_arithmetic_v<T>) {
            t.scalar<T>() = static_cast<T>(value);
          } else {
            t.scalar<T>() = T(static_cast<float>(value));  // half, bfloat16
          }
        });
        out->assign(1, std::move(t));
      }
      return true;
    }
    void Save(IteratorState& state) override { state.WriteInt(Key("next"), next_); }
    void Restore(IteratorState& state) override { next_ = state.ReadInt(Key("next")); }

   private:
    const RangeDataset& ds_;
    int64_t next_;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Range");
  }

 private:
  int64_t start_, stop_, step_;
  DataType dtype_;
};

struct RangeDatasetOp : DatasetOpKernel {
  explicit RangeDatasetOp(OpKernelConstruction& c) : DatasetOpKernel(c) {
    const auto types = c.GetAttr<std::vector<DataType>>("output_types");
    if (types.size() != 1)
      InvalidArgument("RangeDataset produces one component, output_types has ", types.size());
    dtype_ = types[0];
    if (dtype_ != DT_INT64) DispatchNumericType(dtype_, "RangeDataset", []<typename T>() {});
  }
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    const int64_t step = ScalarInt(ctx, 2);
    if (step == 0) InvalidArgument("step must be a non-zero integer.");
    return std::make_shared<RangeDataset>(ScalarInt(ctx, 0), ScalarInt(ctx, 1), step, dtype_);
  }
  DataType dtype_;
};
FT_REGISTER_KERNEL("RangeDataset", RangeDatasetOp);

}  // namespace
}  // namespace flowtrain::data
