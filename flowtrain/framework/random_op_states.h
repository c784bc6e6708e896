// The generators of a session's stateful random kernels (RandomUniform, and so dropout's
// masks, RandomStandardNormal, TruncatedNormal, RandomUniformInt, RandomShuffle), kept by node
// name in the session's ResourceMgr instead of inside each kernel, so that their positions can
// be saved in a checkpoint and put back (ops RandomOpStates and RestoreRandomOpStates, and
// ops::MakeSaveableRandomOpStates): a resumed run then draws the numbers an
// uninterrupted run would have drawn. TF 1.x restarts every generator from its seeds.
//
//   // In a random kernel's Compute:
//   GuardedPhilox& generator = generator_.Get(ctx);   // a RandomKernelGenerator member
//   PhiloxRandom base = generator.Reserve(blocks);
#ifndef FLOWTRAIN_FRAMEWORK_RANDOM_OP_STATES_H_
#define FLOWTRAIN_FRAMEWORK_RANDOM_OP_STATES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/framework/philox_random.h"
#include "flowtrain/framework/resource_mgr.h"

namespace flowtrain {

// One kernel's generator (TF's GuardedPhiloxRandom): runs reserve stretches of its counter
// space under a lock.
class GuardedPhilox {
 public:
  // Seeded from (seed, seed2); from a random device when both are 0, as TF.
  GuardedPhilox(int64_t seed, int64_t seed2);
  explicit GuardedPhilox(const random::PhiloxRandom& state) : generator_(state) {}

  // A generator positioned at the start of `blocks` fresh 128-bit blocks.
  random::PhiloxRandom Reserve(uint64_t blocks);
  random::PhiloxRandom state() const;
  void set_state(const random::PhiloxRandom& state);

 private:
  mutable absl::Mutex mu_;
  random::PhiloxRandom generator_ ABSL_GUARDED_BY(mu_);
};

// The session's generators by node name.
class RandomOpStates : public ResourceBase {
 public:
  // The session's registry (created on first use).
  static std::shared_ptr<RandomOpStates> Of(ResourceMgr* resource_mgr);

  // The generator of node `node`: a restored one if a state for it was restored before the
  // kernel first ran, otherwise a new one seeded from (seed, seed2).
  std::shared_ptr<GuardedPhilox> Generator(const std::string& node, int64_t seed, int64_t seed2);

  // Every generator's position, one "node<TAB>k0 k1 c0 c1 c2 c3" line each, sorted by node.
  std::string Serialize() const;
  // Puts the serialized positions back; nodes whose kernels have not run yet start from them.
  // DataLoss naming the line when `serialized` is not what Serialize writes.
  void Restore(std::string_view serialized);

  std::string DebugString() const override;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<GuardedPhilox>> generators_ ABSL_GUARDED_BY(mu_);
};

// A random kernel's handle on its generator, looked up in the session's RandomOpStates on the
// first run (kernels without a resource manager keep a private one).
class RandomKernelGenerator {
 public:
  explicit RandomKernelGenerator(OpKernelConstruction& c);
  GuardedPhilox& Get(OpKernelContext* ctx);

 private:
  const std::string node_;
  const int64_t seed_, seed2_;
  std::once_flag once_;
  std::shared_ptr<GuardedPhilox> generator_;
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_FRAMEWORK_RANDOM_OP_STATES_H_
