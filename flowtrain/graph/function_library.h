// FunctionLibrary: the functions a graph carries (a GraphDef's `library`): TensorFlow
// FunctionDefs by name, and which function computes which one's gradient. TF 1.14+ and 2.x
// write them for functional control flow (If, While, Case), tf.function calls
// (PartitionedCall, StatefulPartitionedCall) and tf.data functions; ImportGraphDef fills a
// graph's library and Graph::ToGraphDef writes it back, so a graph passes through flowtrain
// with its functions intact.
//
//   const tensorflow::FunctionDef* f = graph.library().Find("__inference_add_12");
//   if (f != nullptr) std::cout << f->signature().input_arg_size() << " arguments\n";
//
// Thread safety: all methods may be called concurrently.
#ifndef FLOWTRAIN_GRAPH_FUNCTION_LIBRARY_H_
#define FLOWTRAIN_GRAPH_FUNCTION_LIBRARY_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "flowtrain/proto/function.pb.h"

namespace flowtrain {

class FunctionLibrary {
 public:
  FunctionLibrary() = default;
  FunctionLibrary(const FunctionLibrary&) = delete;
  FunctionLibrary& operator=(const FunctionLibrary&) = delete;

  // Adds `def` after checking that it is well formed: a valid name that no registered op
  // has, argument and body node names unique, every body input naming an argument or an
  // output of a body node ("node:output_arg:index"), every result given by exactly one `ret`
  // entry naming an argument or body output, and every `control_ret` a body node. A function
  // of the same name already present must be identical (as when TF merges graphs). Throws
  // InvalidArgument naming the function and what is wrong; the library is then unchanged.
  void AddFunction(const tensorflow::FunctionDef& def);
  // Records that `gradient_function` computes the gradient of `function` (a GradientDef).
  // InvalidArgument if `function` already has a different gradient.
  void AddGradient(std::string_view function, std::string_view gradient_function);
  // Adds every function and gradient of `library`; on an error nothing of it is added.
  void AddLibrary(const tensorflow::FunctionDefLibrary& library);

  // nullptr if there is no such function. The pointer stays valid while the library lives
  // (functions are never removed).
  const tensorflow::FunctionDef* Find(std::string_view name) const;
  // The gradient function of `function`, or "" if none was recorded.
  std::string FindGradient(std::string_view function) const;
  std::vector<std::string> ListFunctions() const;  // sorted
  bool empty() const;

  // Every function (sorted by name) and gradient, as a GraphDef's `library`.
  tensorflow::FunctionDefLibrary ToProto() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, tensorflow::FunctionDef, std::less<>> functions_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string, std::less<>> gradients_ ABSL_GUARDED_BY(mu_);
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_GRAPH_FUNCTION_LIBRARY_H_
