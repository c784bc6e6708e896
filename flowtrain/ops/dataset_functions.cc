#include "flowtrain/ops/dataset_functions.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

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
    std::lock_guard<std::mutex> lock(mu_);
    functions_.emplace(name, std::make_unique<Fn>(std::move(fn)));
    return name;
  }
  const Fn& Get(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = functions_.find(name);
    if (it == functions_.end()) {
      NotFound("Dataset function '", name,
               "' is not registered in this process (dataset functions are C++ callables "
               "registered when the pipeline is built)");
    }
    return *it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Fn>> functions_;
};

Registry<MapFunction>& MapRegistry() {
  static auto* registry = new Registry<MapFunction>();
  return *registry;
}

Registry<PredicateFunction>& PredicateRegistry() {
  static auto* registry = new Registry<PredicateFunction>();
  return *registry;
}

}  // namespace

std::string RegisterMapFunction(std::string_view hint, MapFunction fn) {
  return MapRegistry().Add(hint, std::move(fn));
}

std::string RegisterPredicateFunction(std::string_view hint, PredicateFunction fn) {
  return PredicateRegistry().Add(hint, std::move(fn));
}

const MapFunction& LookupMapFunction(const std::string& name) { return MapRegistry().Get(name); }

const PredicateFunction& LookupPredicateFunction(const std::string& name) {
  return PredicateRegistry().Get(name);
}

}  // namespace flowtrain::data
