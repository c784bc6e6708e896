// ResourceMgr: the state a session keeps between runs — variables, queues, iterators — looked
// up by (container, name) as TF's resource manager does. Separate sessions have separate
// managers, hence separate variable values; sessions on one server share that server's.
//
//   auto var = rm->LookupOrCreate<Var>("", "dense/kernel", [] { return std::make_shared<Var>(); });
//   absl::MutexLock lock(&var->mu);
//   if (!var->initialized) ...
#ifndef FLOWTRAIN_FRAMEWORK_RESOURCE_MGR_H_
#define FLOWTRAIN_FRAMEWORK_RESOURCE_MGR_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/tensor.h"

namespace flowtrain {

class ResourceBase {
 public:
  virtual ~ResourceBase() = default;
  virtual std::string DebugString() const = 0;
};

// A TF1 (VariableV2) variable: a tensor that persists across runs, guarded by `mu`.
class Var : public ResourceBase {
 public:
  explicit Var(std::string name) : name(std::move(name)) {}
  std::string DebugString() const override;
  // A copy of the current value (sharing the buffer); FailedPrecondition if uninitialized.
  Tensor Read() const ABSL_LOCKS_EXCLUDED(mu);
  // Called with `mu` held by every kernel about to write `tensor`'s buffer in place: when
  // another holder shares the buffer (a fetched value, a checkpoint snapshot), the variable
  // first takes a copy of its own, so that what they hold never changes under them.
  void PrepareForInPlaceUpdate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  const std::string name;
  mutable absl::Mutex mu;
  Tensor tensor ABSL_GUARDED_BY(mu);
  bool initialized ABSL_GUARDED_BY(mu) = false;
};

class ResourceMgr {
 public:
  // TF's default container name.
  static constexpr const char* kDefaultContainer = "localhost";

  template <typename T>
  std::shared_ptr<T> LookupOrCreate(const std::string& container, const std::string& name,
                                    const std::function<std::shared_ptr<T>()>& create);
  // nullptr if missing.
  template <typename T>
  std::shared_ptr<T> Lookup(const std::string& container, const std::string& name) const;
  // Drops the resource (container, name) if present; false when there was none. Kernels
  // holding it keep their reference, so it dies when the last user is done.
  bool Delete(const std::string& container, const std::string& name);
  // Drops every resource of `container` (an empty name means the default container).
  void Cleanup(const std::string& container);
  // Resources of type T, for tests and debugging.
  template <typename T>
  std::vector<std::shared_ptr<T>> All() const;

 private:
  using Key = std::pair<std::string, std::string>;
  static std::string ContainerName(const std::string& container) {
    return container.empty() ? kDefaultContainer : container;
  }
  mutable absl::Mutex mu_;
  std::map<Key, std::shared_ptr<ResourceBase>> resources_ ABSL_GUARDED_BY(mu_);
};

template <typename T>
std::shared_ptr<T> ResourceMgr::LookupOrCreate(const std::string& container, const std::string& name,
                                               const std::function<std::shared_ptr<T>()>& create) {
  absl::MutexLock lock(&mu_);
  auto& slot = resources_[{ContainerName(container), name}];
  if (slot == nullptr) slot = create();
  auto typed = std::dynamic_pointer_cast<T>(slot);
  if (typed == nullptr) {
    InvalidArgument("Resource ", ContainerName(container), "/", name,
                    " exists with another type: ", slot->DebugString());
  }
  return typed;
}

template <typename T>
std::shared_ptr<T> ResourceMgr::Lookup(const std::string& container, const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find({ContainerName(container), name});
  return it == resources_.end() ? nullptr : std::dynamic_pointer_cast<T>(it->second);
}

template <typename T>
std::vector<std::shared_ptr<T>> ResourceMgr::All() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<T>> out;
  for (const auto& [key, resource] : resources_) {
    if (auto typed = std::dynamic_pointer_cast<T>(resource)) out.push_back(typed);
  }
  return out;
}

}  // namespace flowtrain

#endif  // FLOWTRAIN_FRAMEWORK_RESOURCE_MGR_H_
