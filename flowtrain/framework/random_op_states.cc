#include "flowtrain/framework/random_op_states.h"

#include <charconv>
#include <random>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {

using random::PhiloxRandom;

GuardedPhilox::GuardedPhilox(int64_t seed, int64_t seed2) {
  if (seed == 0 && seed2 == 0) {
    std::random_device device;
    auto word = [&] { return (static_cast<uint64_t>(device()) << 32) | device(); };
    generator_ = PhiloxRandom(word(), word());
  } else {
    generator_ = PhiloxRandom(static_cast<uint64_t>(seed), static_cast<uint64_t>(seed2));
  }
}

PhiloxRandom GuardedPhilox::Reserve(uint64_t blocks) {
  absl::MutexLock lock(&mu_);
  PhiloxRandom local = generator_;
  generator_.Skip(blocks);
  return local;
}

PhiloxRandom GuardedPhilox::state() const {
  absl::MutexLock lock(&mu_);
  return generator_;
}

void GuardedPhilox::set_state(const PhiloxRandom& state) {
  absl::MutexLock lock(&mu_);
  generator_ = state;
}

std::shared_ptr<RandomOpStates> RandomOpStates::Of(ResourceMgr* resource_mgr) {
  return resource_mgr->LookupOrCreate<RandomOpStates>("", "_random_op_states",
                                                      [] { return std::make_shared<RandomOpStates>(); });
}

std::shared_ptr<GuardedPhilox> RandomOpStates::Generator(const std::string& node, int64_t seed,
                                                         int64_t seed2) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<GuardedPhilox>& slot = generators_[node];
  if (slot == nullptr) slot = std::make_shared<GuardedPhilox>(seed, seed2);
  return slot;
}

std::string RandomOpStates::Serialize() const {
  absl::MutexLock lock(&mu_);
  std::string out;
  for (const auto& [node, generator] : generators_) {
    const PhiloxRandom state = generator->state();
    StrAppend(&out, node, "\t", state.key()[0], " ", state.key()[1]);
    for (uint32_t word : state.counter()) StrAppend(&out, " ", word);
    out += '\n';
  }
  return out;
}

namespace {

// Parses the uint32 that follows `separator` at `pos` in `text`, and moves `pos` past it.
bool NextWord(std::string_view text, char separator, size_t& pos, uint32_t& word) {
  if (pos >= text.size() || text[pos] != separator) return false;
  const char* begin = text.data() + pos + 1;
  const auto [end, error] = std::from_chars(begin, text.data() + text.size(), word);
  if (error != std::errc() || end == begin) return false;
  pos = static_cast<size_t>(end - text.data());
  return true;
}

}  // namespace

void RandomOpStates::Restore(std::string_view serialized) {
  std::map<std::string, PhiloxRandom> states;
  int line_number = 0;
  while (!serialized.empty()) {
    ++line_number;
    const size_t newline = serialized.find('\n');
    if (newline == std::string_view::npos) {
      DataLoss("Random op states: line ", line_number, " does not end");
    }
    const std::string_view line = serialized.substr(0, newline);
    serialized.remove_prefix(newline + 1);
    const size_t tab = line.find('\t');
    PhiloxRandom::Key key{};
    PhiloxRandom::Counter counter{};
    bool ok = tab != std::string_view::npos && tab > 0;
    // The node name, a tab, the two key words, then the four counter words, space-separated.
    size_t pos = tab;
    ok = ok && NextWord(line, '\t', pos, key[0]) && NextWord(line, ' ', pos, key[1]);
    for (uint32_t& word : counter) ok = ok && NextWord(line, ' ', pos, word);
    ok = ok && pos == line.size();
    if (!ok) DataLoss("Random op states: line ", line_number, " is not 'node<TAB>6 words': '", line, "'");
    states.emplace(std::string(line.substr(0, tab)), PhiloxRandom(counter, key));
  }
  absl::MutexLock lock(&mu_);
  for (const auto& [node, state] : states) {
    std::shared_ptr<GuardedPhilox>& slot = generators_[node];
    if (slot == nullptr) {
      slot = std::make_shared<GuardedPhilox>(state);
    } else {
      slot->set_state(state);
    }
  }
}

std::string RandomOpStates::DebugString() const {
  absl::MutexLock lock(&mu_);
  return StrCat("RandomOpStates of ", generators_.size(), " random ops");
}

RandomKernelGenerator::RandomKernelGenerator(OpKernelConstruction& c)
    : node_(c.name()), seed_(c.GetAttr<int64_t>("seed")), seed2_(c.GetAttr<int64_t>("seed2")) {}

GuardedPhilox& RandomKernelGenerator::Get(OpKernelContext* ctx) {
  std::call_once(once_, [&] {
    ResourceMgr* resource_mgr = ctx->resource_manager();
    generator_ = resource_mgr != nullptr ? RandomOpStates::Of(resource_mgr)->Generator(node_, seed_, seed2_)
                                         : std::make_shared<GuardedPhilox>(seed_, seed2_);
  });
  return *generator_;
}

namespace {

class RandomOpStatesOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    FT_REQUIRE(ctx->resource_manager() != nullptr, name(), ": needs a session's resource manager");
    Tensor* out = ctx->allocate_output(0, TensorShape({}));
    out->scalar<std::string>() = RandomOpStates::Of(ctx->resource_manager())->Serialize();
  }
};
FT_REGISTER_KERNEL("RandomOpStates", RandomOpStatesOp);

class RestoreRandomOpStatesOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    FT_REQUIRE(ctx->resource_manager() != nullptr, name(), ": needs a session's resource manager");
    const Tensor& states = ctx->input(0);
    if (states.dtype() != DT_STRING || states.dims() != 0) {
      InvalidArgument(name(), ": states must be a string scalar, got ", DataTypeString(states.dtype()), " ",
                      states.shape().DebugString());
    }
    RandomOpStates::Of(ctx->resource_manager())->Restore(states.scalar<std::string>());
  }
};
FT_REGISTER_KERNEL("RestoreRandomOpStates", RestoreRandomOpStatesOp);

}  // namespace
}  // namespace flowtrain
