// Test helper shared by saver_crash_test.cc (a few kills, default run) and saver_soak_test.cc
// (many kills, label `slow`): a forked child saves checkpoints in a loop and is killed with
// SIGKILL at random moments; after each kill the checkpoint the `checkpoint` state file names
// must restore, with values consistent with its step.
#ifndef FLOWTRAIN_TRAIN_SAVER_CRASH_TEST_UTIL_H_
#define FLOWTRAIN_TRAIN_SAVER_CRASH_TEST_UTIL_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/saver.h"

namespace flowtrain::train::crash_test {

// 256K floats (1 MB) and a step: big enough that kills land inside writes.
inline constexpr int64_t kWeights = 256 * 1024;

struct CrashModel {
  CrashModel(bool sharded) {
    auto as_default = graph.AsDefault();
    w = Variable([] { return ops::Fill(ops::Const<int32_t>({static_cast<int32_t>(kWeights)}), ops::Const(0.0f)); },
                 {.name = "w"});
    step = Variable(Tensor::Scalar<int64_t>(0), {.name = "step", .trainable = false});
    w_in = ops::Placeholder(DT_FLOAT, {kWeights}, "w_in");
    step_in = ops::Placeholder(DT_INT64, {}, "step_in");
    set = {w.Assign(w_in).op(), step.Assign(step_in).op()};
    saver = std::make_unique<Saver>(SaverOptions{.sharded = sharded, .max_to_keep = 3, .graph = &graph});
  }
  Graph graph;
  Variable w, step;
  Output w_in, step_in;
  std::vector<Operation> set;
  std::unique_ptr<Saver> saver;
};

// The child: resumes from the directory's latest checkpoint, then saves step after step, with
// w filled with the step number, until it is killed.
[[noreturn]] inline void SaveForever(const std::string& dir, bool sharded) {
  try {
    CrashModel m(sharded);
    Session sess(m.graph);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer(&m.graph)});
    int64_t step = 0;
    if (auto latest = LatestCheckpoint(dir)) {
      const auto& listed = GetCheckpointState(dir)->all_model_checkpoint_paths();
      m.saver->RecoverLastCheckpoints(std::vector<std::string>(listed.begin(), listed.end()));
      m.saver->Restore(sess, *latest);
      step = sess.Run({}, {m.step.value()}, {})[0].scalar<int64_t>();
    }
    Tensor w(DT_FLOAT, TensorShape({kWeights}));
    for (;;) {
      ++step;
      for (float& x : w.flat<float>()) x = static_cast<float>(step);
      sess.Run({{m.w_in, w}, {m.step_in, Tensor::Scalar<int64_t>(step)}}, {}, m.set);
      m.saver->Save(sess, dir + "/model.ckpt", step);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "save loop failed: %s\n", e.what());
    _exit(3);
  }
}

// Checks that the checkpoint the state file names restores with consistent values; returns
// its step, or -1 if there is none yet.
inline int64_t CheckLatest(const std::string& dir, bool sharded) {
  std::optional<std::string> latest = LatestCheckpoint(dir);
  if (!latest) return -1;
  const int64_t named_step = std::stoll(latest->substr(latest->rfind('-') + 1));
  CrashModel m(sharded);
  Session sess(m.graph);
  m.saver->Restore(sess, *latest);  // TF's strict path: the named checkpoint must be intact
  std::vector<Tensor> out = sess.Run({}, {m.w.value(), m.step.value()}, {});
  EXPECT_EQ(out[1].scalar<int64_t>(), named_step) << *latest;
  for (float x : out[0].flat<float>()) {
    if (x != static_cast<float>(named_step)) {
      ADD_FAILURE() << *latest << " holds w = " << x << ", expected " << named_step;
      break;
    }
  }
  return named_step;
}

// Kills `kills` save loops at random moments up to `max_delay_ms` after they start.
inline void RunKillLoop(const std::string& dir, int kills, int max_delay_ms, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_us(0, max_delay_ms * 1000);
  int restored = 0;
  int64_t last_step = -1;
  for (int i = 0; i < kills; ++i) {
    const bool sharded = (i % 2) == 1;
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) SaveForever(dir, sharded);
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the save loop exited on its own with status " << status;
    const int64_t step = CheckLatest(dir, sharded);
    if (::testing::Test::HasFailure()) return;
    if (step >= 0) {
      ++restored;
      EXPECT_GE(step, last_step) << "the state file went back in time";
      last_step = step;
    }
  }
  // Most kills must come after at least one complete save.
  EXPECT_GE(restored, kills / 2);
  std::printf("crash test (seed %u): %d kills, %d restores, last step %lld\n", seed, kills, restored,
              static_cast<long long>(last_step));
}

}  // namespace flowtrain::train::crash_test

#endif  // FLOWTRAIN_TRAIN_SAVER_CRASH_TEST_UTIL_H_
