#include "flowtrain/graph/function_capture.h"

#include <utility>
#include <vector>

namespace flowtrain {
namespace {

struct Capturing {
  const Graph* body;
  CaptureFunction capture;
};

// Per thread, as graph building and the default graph are.
std::vector<Capturing>& Stack() {
  thread_local std::vector<Capturing> stack;
  return stack;
}

}  // namespace

ScopeGuard CaptureExternalInputs(Graph& body, CaptureFunction capture) {
  Stack().push_back({&body, std::move(capture)});
  const size_t depth = Stack().size();
  return ScopeGuard([depth] { Stack().resize(depth - 1); });
}

CaptureFunction CaptureFunctionFor(const Graph& graph) {
  const std::vector<Capturing>& stack = Stack();
  if (stack.empty() || stack.back().body != &graph) return nullptr;
  return stack.back().capture;
}

}  // namespace flowtrain
