#include "flowtrain/framework/resource_mgr.h"

#include "flowtrain/core/str_util.h"

namespace flowtrain {

std::string Var::DebugString() const {
  absl::MutexLock lock(&mu);
  if (!initialized) return StrCat("Var ", name, " <uninitialized>");
  return StrCat("Var ", name, " ", DataTypeString(tensor.dtype()), " ", tensor.shape().DebugString());
}

Tensor Var::Read() const {
  absl::MutexLock lock(&mu);
  if (!initialized) FailedPrecondition("Attempting to use uninitialized value ", name);
  return tensor;
}

void Var::PrepareForInPlaceUpdate() {
  if (!tensor.RefCountIsOne()) tensor = tensor.DeepCopy();
}

bool ResourceMgr::Delete(const std::string& container, const std::string& name) {
  absl::MutexLock lock(&mu_);
  return resources_.erase({ContainerName(container), name}) > 0;
}

void ResourceMgr::Cleanup(const std::string& container) {
  absl::MutexLock lock(&mu_);
  const std::string name = ContainerName(container);
  // Keys sort by container first, so its resources are one range (found in O(log n): the
  // executor drops the per-step container after every run).
  auto it = resources_.lower_bound({name, std::string()});
  while (it != resources_.end() && it->first.first == name) it = resources_.erase(it);
}

}  // namespace flowtrain
