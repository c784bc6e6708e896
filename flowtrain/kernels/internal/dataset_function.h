// GraphDatasetFunction: a function of the graph's library that a dataset calls once per
// element, with the tensors it captured (the op's `other_arguments`). TF serialises every
// tf.data function so: MapDataset's `f`, FilterDataset's `predicate`, FlatMapDataset's and
// InterleaveDataset's `f`, each a FunctionDef whose arguments are the element's components
// followed by the captured tensors. The dataset keeps the function (and through it the
// session's FunctionRuntime) alive for as long as it lives.
//
//   auto fn = GraphDatasetFunction::Instantiate(ctx, node.GetAttrValue("f").func(),
//                                               CapturedInputs(ctx, 1));
//   Element out = fn->Call(iterator_ctx, element);
//
// The datasets first look a function name up among the C++ functions registered in this
// process (ops/dataset_functions.h), so that pipelines built with C++ lambdas keep working.
// Thread safety: Call may be called concurrently.
#ifndef FLOWTRAIN_KERNELS_INTERNAL_DATASET_FUNCTION_H_
#define FLOWTRAIN_KERNELS_INTERNAL_DATASET_FUNCTION_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/framework/dataset.h"
#include "flowtrain/framework/function_runtime.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/proto/attr_value.pb.h"

namespace flowtrain::data {

class GraphDatasetFunction {
 public:
  // `func` of the library of the graph `ctx`'s kernel runs in. NotFound naming the function
  // (and saying that no C++ function has its name either) when the graph has no library or
  // the library no such function; what FunctionRuntime::Instantiate throws otherwise.
  static std::shared_ptr<const GraphDatasetFunction> Instantiate(OpKernelContext* ctx,
                                                                 const tensorflow::NameAttrList& func,
                                                                 std::vector<Tensor> captured);

  // Runs the function on the element's components followed by the captured tensors.
  std::vector<Tensor> Call(const IteratorContext& ctx, const std::vector<Tensor>& element) const;
  // Call, for a function that returns a dataset (flat_map, interleave): its one result, a
  // DT_VARIANT scalar holding a dataset (InvalidArgument naming the function otherwise).
  DatasetRef CallForDataset(const IteratorContext& ctx, const std::vector<Tensor>& element) const;

  const std::string& name() const { return function_->name(); }

  GraphDatasetFunction(std::shared_ptr<FunctionRuntime> runtime,
                       std::shared_ptr<const InstantiatedFunction> function, std::vector<Tensor> captured)
      : runtime_(std::move(runtime)), function_(std::move(function)), captured_(std::move(captured)) {}

 private:
  std::shared_ptr<FunctionRuntime> runtime_;
  std::shared_ptr<const InstantiatedFunction> function_;
  std::vector<Tensor> captured_;
};

// The captured tensors of a dataset op over a function: as many inputs from `first` on as its
// `Targuments` attr has types (none when the op has no such attr).
std::vector<Tensor> CapturedInputs(OpKernelContext* ctx, int first);
// How many inputs CapturedInputs takes.
int NumCapturedInputs(const Node& node);

}  // namespace flowtrain::data

#endif  // FLOWTRAIN_KERNELS_INTERNAL_DATASET_FUNCTION_H_
