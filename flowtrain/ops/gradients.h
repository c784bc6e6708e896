// Symbolic differentiation: Gradients() adds to the graph the ops that compute d(sum ys)/d(xs),
// walking backwards from `ys` and calling each op's registered gradient function, as TF's
// `tf.gradients`. Gradient ops go under the name scope "gradients/<op>_grad/".
//
//   std::vector<Output> grads = ops::Gradients({loss}, {w, b});
//
// Every differentiable op registers its gradient next to its definition:
//
//   FT_REGISTER_GRADIENT("Square", [](const Operation& op, const std::vector<Output>& dy) {
//     return std::vector<Output>{dy[0] * ops::Const(2.0f) * op.input(0)};
//   });
//   FT_REGISTER_NO_GRADIENT("Shape");
//
// A gradient function receives the gradients of the op's outputs (an empty Output where an
// output has none) and returns one Output per input (empty: no gradient for that input).
//
// Sparse gradients (ops/indexed_slices.h): an op whose gradient may be or may pass on
// IndexedSlices registers a sparse-aware function instead, which receives and returns
// GradientValues; every other function receives dense gradients (sparse ones are converted
// first, as TF's ops convert IndexedSlices they are given):
//
//   FT_REGISTER_SPARSE_GRADIENT("Identity", [](const Operation&, const std::vector<ops::GradientValue>& dy) {
//     return std::vector<ops::GradientValue>{dy[0]};
//   });
#ifndef FLOWTRAIN_OPS_GRADIENTS_H_
#define FLOWTRAIN_OPS_GRADIENTS_H_

#include <functional>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/indexed_slices.h"

namespace flowtrain {

using GradientFunction =
    std::function<std::vector<Output>(const Operation& op, const std::vector<Output>& grad_outputs)>;
using SparseGradientFunction = std::function<std::vector<ops::GradientValue>(
    const Operation& op, const std::vector<ops::GradientValue>& grad_outputs)>;

class GradientRegistry {
 public:
  static GradientRegistry* Global();
  void Register(std::string op_type, GradientFunction fn);
  // A sparse-aware gradient function (see above); an op may have one besides its dense one,
  // which Gradients then leaves unused. Without a dense one, Lookup() returns this one with
  // its results converted to dense.
  void RegisterSparse(std::string op_type, SparseGradientFunction fn);
  // Marks an op as having no gradient (its inputs get none, silently).
  void RegisterNoGradient(std::string op_type);
  // nullptr when the op type is registered as non-differentiable; throws NotFound (TF's
  // "No gradient defined for operation ...") when nothing is registered.
  const GradientFunction* Lookup(const Operation& op) const;
  // The op's sparse-aware gradient function, nullptr when it has none.
  const SparseGradientFunction* LookupSparse(const Operation& op) const;

 private:
  GradientRegistry() = default;
  struct Entry {
    bool differentiable = true;
    bool dense_registered = false;
    GradientFunction fn;
    SparseGradientFunction sparse_fn;
  };
  mutable absl::Mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_ ABSL_GUARDED_BY(mu_);
};

namespace gradient_registry_internal {
struct GradientRegistrar {
  GradientRegistrar(const char* op_type, GradientFunction fn) {
    GradientRegistry::Global()->Register(op_type, std::move(fn));
  }
  GradientRegistrar(const char* op_type, SparseGradientFunction fn) {
    GradientRegistry::Global()->RegisterSparse(op_type, std::move(fn));
  }
  explicit GradientRegistrar(const char* op_type) { GradientRegistry::Global()->RegisterNoGradient(op_type); }
};
}  // namespace gradient_registry_internal

#define FT_GRADIENT_UNIQ_HELPER(ctr, ...) FT_GRADIENT_UNIQ(ctr, __VA_ARGS__)
#define FT_GRADIENT_UNIQ(ctr, ...)                                                                    \
  static const ::flowtrain::gradient_registry_internal::GradientRegistrar ft_gradient_registrar_##ctr \
      [[maybe_unused]] (__VA_ARGS__)
#define FT_REGISTER_GRADIENT(op_type, ...) FT_GRADIENT_UNIQ_HELPER(__COUNTER__, op_type, __VA_ARGS__)
#define FT_REGISTER_NO_GRADIENT(op_type) FT_GRADIENT_UNIQ_HELPER(__COUNTER__, op_type)
#define FT_REGISTER_SPARSE_GRADIENT(op_type, ...) \
  FT_GRADIENT_UNIQ_HELPER(__COUNTER__, op_type, ::flowtrain::SparseGradientFunction(__VA_ARGS__))

namespace ops {

// d(sum of ys)/d(x) for each x (an empty Output where x does not affect ys). `grad_ys`, when
// given, weights each y (default: ones of y's shape). With `gate_gradients` (TF's
// gate_gradients=True, which optimizers use), the gradients of an op's inputs are passed
// through ops::Tuple ("<op>_grad/tuple/...") when it has more than one that is used (TF gates
// unused ones too, which makes a run compute them), so none is used
// before all are computed: in TF's runtime a variable read aliases the variable, and without
// the gate an optimizer could update a weight while the gradient of another input of the
// same op still reads it.
std::vector<Output> Gradients(const std::vector<Output>& ys, const std::vector<Output>& xs,
                              const std::vector<Output>& grad_ys = {}, std::string_view name = "gradients",
                              bool gate_gradients = false);
// Gradients, keeping the gradients that are sparse IndexedSlices (tf.gradients' result): the
// gradient of a table read by a gather names only the rows read. Optimizers use this.
std::vector<GradientValue> GradientsWithIndexedSlices(const std::vector<Output>& ys,
                                                      const std::vector<Output>& xs,
                                                      const std::vector<Output>& grad_ys = {},
                                                      std::string_view name = "gradients",
                                                      bool gate_gradients = false);

// Helpers for gradient functions.
// The gradient of an op that broadcast `x` and `y` into its output, summed back to each
// input's shape (TF's BroadcastGradientArgs + Sum + Reshape pattern).
std::pair<Output, Output> ReduceBroadcastGradients(const Output& x, const Output& y, const Output& grad_x,
                                                   const Output& grad_y);

}  // namespace ops
}  // namespace flowtrain

#endif  // FLOWTRAIN_OPS_GRADIENTS_H_
