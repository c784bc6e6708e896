// The kernel of FilterDataset: the elements a predicate keeps. The predicate is a C++ function
// registered in this process or, failing that, a function of the graph's library given the
// element and the op's captured inputs, returning a bool scalar.
#include <memory>
#include <string>

#include "flowtrain/core/error.h"
#include "flowtrain/kernels/internal/dataset_function.h"
#include "flowtrain/kernels/internal/dataset_op_kernel.h"

namespace flowtrain::data {
namespace {

class FilterDataset : public DatasetBase {
 public:
  // Exactly one of `cpp` and `graph_fn` is set.
  FilterDataset(DatasetRef input, const PredicateFunction* cpp,
                std::shared_ptr<const GraphDatasetFunction> graph_fn)
      : input_(std::move(input)), cpp_(cpp), graph_fn_(std::move(graph_fn)) {}
  std::string DebugString() const override { return "FilterDataset"; }

  bool Keeps(const IteratorContext& ctx, const Element& element) const {
    if (cpp_ != nullptr) return (*cpp_)(element);
    const std::vector<Tensor> out = graph_fn_->Call(ctx, element);
    if (out.size() != 1 || out[0].dtype() != DT_BOOL || out[0].NumElements() != 1) {
      InvalidArgument("Filter predicate ", graph_fn_->name(), " must return a scalar bool");
    }
    return out[0].flat<bool>()[0];
  }

  class Iter : public IteratorBase {
   public:
    Iter(const FilterDataset& ds, std::string prefix)
        : IteratorBase(prefix), ds_(ds), input_(ds.input_->MakeIterator(prefix)) {}
    bool GetNext(IteratorContext& ctx, Element* out) override {
      while (input_->GetNext(ctx, out)) {
        if (ds_.Keeps(ctx, *out)) return true;
      }
      return false;
    }
    const RecordOrigins& origins() const override { return input_->origins(); }
    void Save(IteratorState& state) override { input_->Save(state); }
    void Restore(IteratorState& state) override { input_->Restore(state); }

   private:
    const FilterDataset& ds_;
    std::unique_ptr<IteratorBase> input_;
  };
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override {
    return std::make_unique<Iter>(*this, prefix + "::Filter");
  }

 private:
  DatasetRef input_;
  const PredicateFunction* cpp_;                          // never removed from the registry
  std::shared_ptr<const GraphDatasetFunction> graph_fn_;  // when cpp_ is null
};

struct FilterDatasetOp : DatasetOpKernel {
  explicit FilterDatasetOp(OpKernelConstruction& c)
      : DatasetOpKernel(c),
        func_(c.node().GetAttrValue("predicate").func()),
        cpp_(FindPredicateFunction(func_.name())) {}
  DatasetRef MakeDataset(OpKernelContext* ctx) override {
    std::shared_ptr<const GraphDatasetFunction> graph_fn;
    if (cpp_ == nullptr) graph_fn = GraphDatasetFunction::Instantiate(ctx, func_, CapturedInputs(ctx, 1));
    return std::make_shared<FilterDataset>(Input(ctx), cpp_, std::move(graph_fn));
  }
  tensorflow::NameAttrList func_;
  const PredicateFunction* cpp_;  // null: a function of the graph's library
};
FT_REGISTER_KERNEL("FilterDataset", FilterDatasetOp);

}  // namespace
}  // namespace flowtrain::data
