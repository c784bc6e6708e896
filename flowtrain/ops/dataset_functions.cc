#include "flowtrain/ops/dataset_functions.h"

#include <atomic>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain::data {
namespace {

// Entries are heap-allocated and never removed, so references handed out stay valid.
template <typename Fn>
class Registry {
 public:
  std::string Add(std::string_view hint, Fn fn) {
    static std::atomic<int64_t> counter{0};
    std::string name = StrCat(hint, "_", counter.fetch_add(1));
    absl::MutexLock lock(&mu_);
    functions_.emplace(name, std::make_unique<Fn>(std::move(fn)));
    return name;
  }
  const Fn* Find(const std::string& name) const {
    absl::MutexLock lock(&mu_);
    auto it = functions_.find(name);
    return it == functions_.end() ? nullptr : it->second.get();
  }
  const Fn& Get(const std::string& name) const {
    absl::MutexLock lock(&mu_);
    auto it = functions_.find(name);
    if (it == functions_.end()) {
      NotFound("Dataset function '", name,
               "' is not registered in this process (dataset functions are C++ callables "
               "registered when the pipeline is built)");
    }
    return *it->second;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Fn>> functions_ ABSL_GUARDED_BY(mu_);
};

Registry<RegisteredMapFunction>& MapRegistry() {
  static auto* registry = new Registry<RegisteredMapFunction>();
  return *registry;
}

Registry<PredicateFunction>& PredicateRegistry() {
  static auto* registry = new Registry<PredicateFunction>();
  return *registry;
}

}  // namespace

std::string DescribeRecord(const RecordOrigin& origin) {
  return StrCat("record ", origin.index, " of ", origin.file != nullptr ? *origin.file : "<unknown file>");
}

std::string DescribeOrigins(const RecordOrigins& origins) {
  if (origins.size() == 1) return DescribeRecord(origins[0]);
  if (origins.empty()) return "an element of unknown origin";
  return StrCat("a batch of ", origins.size(), " records, the first ", DescribeRecord(origins[0]));
}

std::string RegisterMapFunction(std::string_view hint, MapFunction fn) {
  auto ignoring_origins = [fn = std::move(fn)](const std::vector<Tensor>& in, const RecordOrigins&) {
    return fn(in);
  };
  return MapRegistry().Add(hint, {.fn = std::move(ignoring_origins), .names_records = false});
}

std::string RegisterMapFunction(std::string_view hint, OriginAwareMapFunction fn) {
  return MapRegistry().Add(hint, {.fn = std::move(fn), .names_records = true});
}

std::string RegisterPredicateFunction(std::string_view hint, PredicateFunction fn) {
  return PredicateRegistry().Add(hint, std::move(fn));
}

const RegisteredMapFunction& LookupMapFunction(const std::string& name) { return MapRegistry().Get(name); }

const RegisteredMapFunction* FindMapFunction(const std::string& name) { return MapRegistry().Find(name); }

const PredicateFunction* FindPredicateFunction(const std::string& name) {
  return PredicateRegistry().Find(name);
}

const PredicateFunction& LookupPredicateFunction(const std::string& name) {
  return PredicateRegistry().Get(name);
}

}  // namespace flowtrain::data
