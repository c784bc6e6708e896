// FunctionRuntime: how a kernel runs a function of its graph's library (a TensorFlow
// FunctionDef). The dataset kernels need it: TF serialises every tf.data function (the `f` of
// MapDataset, FlatMapDataset, InterleaveDataset, the `predicate` of FilterDataset) as a
// FunctionDef in GraphDef.library, and the dataset calls it once per element, long after the
// kernel that built the dataset returned. The session (and a distributed worker) gives the
// kernels it runs one through OpKernelContext::function_runtime(); the implementation is in
// runtime/ (runtime/graph_function_runtime.h), which kernels may not include.
//
//   std::shared_ptr<FunctionRuntime> runtime = ctx->function_runtime()->shared_from_this();
//   std::shared_ptr<const InstantiatedFunction> f = runtime->Instantiate(attr.func());
//   std::vector<Tensor> out = f->Run({element, captured});   // many times, from any thread
//
// Ownership: a FunctionRuntime is always owned by shared_ptrs (hence enable_shared_from_this),
// so that a dataset can keep the runtime, and the library and resources it holds, alive for as
// long as the dataset lives. An InstantiatedFunction keeps its runtime alive too.
// Thread safety: every method of both classes may be called concurrently.
#ifndef FLOWTRAIN_FRAMEWORK_FUNCTION_RUNTIME_H_
#define FLOWTRAIN_FRAMEWORK_FUNCTION_RUNTIME_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/core/tensor.h"
#include "flowtrain/core/types.h"
#include "flowtrain/framework/cancellation.h"
#include "flowtrain/proto/attr_value.pb.h"

namespace flowtrain {

// What one call may wait on: the cancellation and deadline of the run that asked for it.
struct FunctionCallOptions {
  CancellationManager* cancellation = nullptr;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// A function of the library with its attrs bound: compiled once, run many times.
class InstantiatedFunction {
 public:
  virtual ~InstantiatedFunction() = default;

  const std::string& name() const { return name_; }
  // The flattened dtypes of the signature's arguments and results under the bound attrs.
  const std::vector<DataType>& input_types() const { return input_types_; }
  const std::vector<DataType>& output_types() const { return output_types_; }

  // Runs the function once on `args`. InvalidArgument naming the function if their number or
  // dtypes differ from input_types(); an error of the body is rethrown with its code, its
  // message preceded by "In function <name>: ".
  virtual std::vector<Tensor> Run(const std::vector<Tensor>& args,
                                  const FunctionCallOptions& options = {}) const = 0;

 protected:
  InstantiatedFunction(std::string name, std::vector<DataType> input_types,
                       std::vector<DataType> output_types)
      : name_(std::move(name)),
        input_types_(std::move(input_types)),
        output_types_(std::move(output_types)) {}

 private:
  std::string name_;
  std::vector<DataType> input_types_;
  std::vector<DataType> output_types_;
};

class FunctionRuntime : public std::enable_shared_from_this<FunctionRuntime> {
 public:
  virtual ~FunctionRuntime() = default;

  // Whether the library has a function of this name.
  virtual bool HasFunction(std::string_view name) const = 0;

  // `function` (a func attr's value: name and attrs) ready to run; instantiating the same name
  // and attrs again returns the same object. NotFound naming the function if the library has
  // none of that name; InvalidArgument naming it if its body cannot be instantiated (a missing
  // attr, an op without a kernel...).
  virtual std::shared_ptr<const InstantiatedFunction> Instantiate(
      const tensorflow::NameAttrList& function) = 0;

  // Instantiate (without attrs) and Run in one call, for one-off calls.
  std::vector<Tensor> Run(const std::string& function, const std::vector<Tensor>& args,
                          const FunctionCallOptions& options = {}) {
    tensorflow::NameAttrList f;
    f.set_name(function);
    return Instantiate(f)->Run(args, options);
  }
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_FRAMEWORK_FUNCTION_RUNTIME_H_
