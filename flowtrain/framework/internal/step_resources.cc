#include "flowtrain/framework/internal/step_resources.h"

#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace flowtrain {
namespace {

struct StepResourceOps {
  absl::Mutex mu;
  std::set<std::string, std::less<>> ops ABSL_GUARDED_BY(mu);
};

// Built on first use, so registrars in any translation unit may run first.
StepResourceOps& Ops() {
  static StepResourceOps* ops = new StepResourceOps();
  return *ops;
}

}  // namespace

void RegisterStepResourceOp(std::string op_type) {
  StepResourceOps& ops = Ops();
  absl::MutexLock lock(&ops.mu);
  ops.ops.insert(std::move(op_type));
}

bool CreatesStepResources(std::string_view op_type) {
  StepResourceOps& ops = Ops();
  absl::MutexLock lock(&ops.mu);
  return ops.ops.find(op_type) != ops.ops.end();
}

}  // namespace flowtrain
