#include "flowtrain/kernels/internal/dataset_function.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::data {

std::shared_ptr<const GraphDatasetFunction> GraphDatasetFunction::Instantiate(
    OpKernelContext* ctx, const tensorflow::NameAttrList& func, std::vector<Tensor> captured) {
  FunctionRuntime* runtime = ctx->function_runtime();
  if (runtime == nullptr || !runtime->HasFunction(func.name())) {
    NotFound("Dataset function '", func.name(),
             "' is neither a C++ function registered in this process nor a function of the graph's library");
  }
  std::shared_ptr<const InstantiatedFunction> function = runtime->Instantiate(func);
  return std::make_shared<GraphDatasetFunction>(runtime->shared_from_this(), std::move(function),
                                                std::move(captured));
}

std::vector<Tensor> GraphDatasetFunction::Call(const IteratorContext& ctx,
                                               const std::vector<Tensor>& element) const {
  std::vector<Tensor> args;
  args.reserve(element.size() + captured_.size());
  args.insert(args.end(), element.begin(), element.end());
  args.insert(args.end(), captured_.begin(), captured_.end());
  return function_->Run(args, {.cancellation = ctx.cancellation, .deadline = ctx.deadline});
}

DatasetRef GraphDatasetFunction::CallForDataset(const IteratorContext& ctx,
                                                const std::vector<Tensor>& element) const {
  std::vector<Tensor> out = Call(ctx, element);
  if (out.size() != 1 || out[0].dtype() != DT_VARIANT) {
    InvalidArgument("Function ", name(), " must return a single dataset, got ", out.size(), " results");
  }
  return DatasetFromTensor(out[0], name());
}

int NumCapturedInputs(const Node& node) {
  if (node.FindAttr("Targuments") == nullptr) return 0;
  return static_cast<int>(node.GetAttr<std::vector<DataType>>("Targuments").size());
}

std::vector<Tensor> CapturedInputs(OpKernelContext* ctx, int first) {
  const int n = NumCapturedInputs(ctx->node());
  std::vector<Tensor> captured;
  captured.reserve(n);
  for (int i = 0; i < n; ++i) captured.push_back(ctx->input(first + i));
  return captured;
}

}  // namespace flowtrain::data
