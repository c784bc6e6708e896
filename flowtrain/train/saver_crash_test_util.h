// Test helper shared by saver_crash_test.cc (a few kills, default run) and saver_soak_test.cc
// (many kills, label `slow`): a forked child saves checkpoints in a loop and is killed with
// SIGKILL; after each kill the checkpoint the `checkpoint` state file names must restore, with
// values consistent with its step.
//
// Where the kills land is measured, not hoped for: the child reports through shared memory
// when its setup is done and when each Save starts and ends, and the parent aims each kill at
// a chosen point of a chosen save — spread over the first few saves and over the whole length
// of a save (bundle, index, renames, state file, meta graph, deletion of old checkpoints) —
// then records where it actually landed and checks the spread. In the asynchronous variant a
// save runs from its snapshot to the end of its background write, while the child keeps
// updating the variables in place.
#ifndef FLOWTRAIN_TRAIN_SAVER_CRASH_TEST_UTIL_H_
#define FLOWTRAIN_TRAIN_SAVER_CRASH_TEST_UTIL_H_

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <new>
#include <random>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/async_checkpoint_saver.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/saver.h"

namespace flowtrain::train::crash_test {

// 256K floats (1 MB) and a step: big enough that kills land inside writes.
inline constexpr int64_t kWeights = 256 * 1024;

struct CrashModel {
  CrashModel(bool sharded) {
    auto as_default = graph.AsDefault();
    w = Variable(
        [] { return ops::Fill(ops::Const<int32_t>({static_cast<int32_t>(kWeights)}), ops::Const(0.0f)); },
        {.name = "w"});
    step = Variable(Tensor::Scalar<int64_t>(0), {.name = "step", .trainable = false});
    w_in = ops::Placeholder(DT_FLOAT, {kWeights}, "w_in");
    step_in = ops::Placeholder(DT_INT64, {}, "step_in");
    set = {w.Assign(w_in).op(), step.Assign(step_in).op()};
    bump = w.AssignAdd(ops::Fill(ops::Const<int32_t>({static_cast<int32_t>(kWeights)}), ops::Const(1000.0f)))
               .op();
    saver = std::make_unique<Saver>(SaverOptions{.sharded = sharded, .max_to_keep = 3, .graph = &graph});
  }
  Graph graph;
  Variable w, step;
  Output w_in, step_in;
  std::vector<Operation> set;
  Operation bump;  // w += 1000, in place
  std::unique_ptr<Saver> saver;
};

// What the child tells the parent, in memory shared across the fork (steady-clock ns).
struct Progress {
  std::atomic<int64_t> ready_ns{0};  // setup (graph, session, resume) done
  std::atomic<int64_t> save_started_ns{0};
  std::atomic<int64_t> last_save_ns{0};  // duration of the last complete save
  std::atomic<int64_t> saves_done{0};
  std::atomic<int> in_save{0};
};

inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The child: resumes from the directory's latest checkpoint, then saves step after step, with
// w filled with the step number, until it is killed. With `async`, each save is an
// AsyncCheckpointSaver's, during whose write w is bumped in place.
[[noreturn]] inline void SaveForever(const std::string& dir, bool sharded, bool async, Progress* progress) {
  try {
    CrashModel m(sharded);
    Session sess(m.graph);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer(&m.graph)});
    int64_t step = 0;
    if (auto latest = LatestCheckpoint(dir)) {
      const std::optional<tensorflow::CheckpointState> state = GetCheckpointState(dir);  // kept alive
      const auto& listed = state->all_model_checkpoint_paths();
      m.saver->RecoverLastCheckpoints(std::vector<std::string>(listed.begin(), listed.end()));
      m.saver->Restore(sess, *latest);
      step = sess.Run({}, {m.step.value()}, {})[0].scalar<int64_t>();
    }
    Tensor w(DT_FLOAT, TensorShape({kWeights}));
    AsyncCheckpointSaver async_saver(*m.saver);
    progress->ready_ns = NowNs();
    for (;;) {
      ++step;
      for (float& x : w.flat<float>()) x = static_cast<float>(step);
      sess.Run({{m.w_in, w}, {m.step_in, Tensor::Scalar<int64_t>(step)}}, {}, m.set);
      progress->save_started_ns = NowNs();
      progress->in_save = 1;
      if (async) {
        async_saver.Save(sess, dir + "/model.ckpt", step);
        for (int i = 0; i < 3; ++i) sess.Run({}, {}, {m.bump});
        async_saver.Wait();
      } else {
        m.saver->Save(sess, dir + "/model.ckpt", step);
      }
      progress->in_save = 0;
      progress->last_save_ns = NowNs() - progress->save_started_ns;
      ++progress->saves_done;
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

// Kills `kills` save loops. Kill i aims at save number (i / 4) % saves_spanned of its child
// (the first is 0) and at a point in the quarter i % 4 of it (random within the quarter), using
// the save duration measured so far. Checks after each kill that
// the latest checkpoint restores, and at the end that the kills landed inside saves, in
// several different saves and in every quarter of a save's duration. Save durations wander on
// a loaded machine, so a kill can land in another quarter than the one aimed at: up to
// 2 * `kills` more kills then aim at the quarters still missing.
inline void RunKillLoop(const std::string& dir, int kills, int saves_spanned, uint32_t seed,
                        bool async = false) {
  void* shared = mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  Progress* progress = new (shared) Progress;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> within_quarter(0.0, 1.0);
  double save_ns = 0;  // running estimate of one Save's duration
  int restored = 0, in_save = 0;
  int64_t last_step = -1;
  std::set<int64_t> saves_hit;        // saves_done when killed inside a save
  std::array<int, 4> quarters_hit{};  // which quarter of that save's duration
  auto covered = [&] {
    return in_save >= kills / 2 && saves_hit.size() >= std::min<size_t>(3, saves_spanned) &&
           std::all_of(quarters_hit.begin(), quarters_hit.end(), [](int hits) { return hits > 0; });
  };
  auto aimed_quarter = [&](int i) {
    if (i < kills) return i % 4;
    for (int q = 0; q < 4; ++q) {
      if (quarters_hit[q] == 0) return q;
    }
    return i % 4;
  };
  int made = 0;  // kills made, beyond the calibration child
  // A calibration child first: the save duration is measured over three saves.
  for (int i = -1; i < 3 * kills; ++i) {
    if (i >= kills && covered()) break;
    const bool sharded = (i % 2) != 0;
    progress->~Progress();
    progress = new (shared) Progress;
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) SaveForever(dir, sharded, async, progress);
    const int64_t deadline = NowNs() + int64_t{60} * 1'000'000'000;
    const int64_t saves_to_wait = i < 0 ? 3 : 0;
    while ((progress->ready_ns == 0 || progress->saves_done < saves_to_wait) && NowNs() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (i >= 0) {
      // Waits for the aimed-at save to start, then for the aimed-at point of it.
      const int64_t target_save = (i / 4) % saves_spanned;
      while (!(progress->saves_done == target_save && progress->in_save) &&
             progress->saves_done <= target_save && NowNs() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      const double fraction = (aimed_quarter(i) + within_quarter(rng)) / 4.0;
      const int64_t kill_at = progress->save_started_ns + static_cast<int64_t>(fraction * save_ns);
      while (NowNs() < kill_at) std::this_thread::sleep_for(std::chrono::nanoseconds(kill_at - NowNs()));
    }
    const int64_t killed_ns = NowNs();
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    if (i >= 0) ++made;
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the save loop exited on its own with status " << status;
    ASSERT_GT(progress->ready_ns.load(), 0)
        << "the child never finished its setup (signal " << WTERMSIG(status) << ")";
    if (progress->saves_done > 0) {
      const double last = static_cast<double>(progress->last_save_ns.load());
      save_ns = save_ns == 0 ? last : 0.8 * save_ns + 0.2 * last;
    }
    if (i < 0) {
      ASSERT_GT(save_ns, 0) << "the calibration child completed no save within a minute";
    }
    if (i >= 0 && progress->in_save) {
      ++in_save;
      saves_hit.insert(progress->saves_done);
      const double into = static_cast<double>(killed_ns - progress->save_started_ns) / save_ns;
      ++quarters_hit[std::clamp(static_cast<int>(into * 4), 0, 3)];
    }
    const int64_t step = CheckLatest(dir, sharded);
    if (::testing::Test::HasFailure()) return;
    if (step >= 0) {
      ++restored;
      EXPECT_GE(step, last_step) << "the state file went back in time";
      last_step = step;
    }
  }
  std::printf(
      "crash test (seed %u%s): %d kills, %d inside a save (in %zu different saves; quarters %d/%d/%d/%d), "
      "save %.1f ms, %d restores, last step %lld\n",
      seed, async ? ", async" : "", made, in_save, saves_hit.size(), quarters_hit[0], quarters_hit[1],
      quarters_hit[2], quarters_hit[3], save_ns / 1e6, restored, static_cast<long long>(last_step));
  munmap(shared, sizeof(Progress));
  // Aimed inside saves: most kills land there (the rest between two saves), in several of
  // them, and in every quarter of a save's duration.
  EXPECT_GE(in_save, kills / 2);
  EXPECT_GE(saves_hit.size(), std::min<size_t>(3, saves_spanned));
  for (int q = 0; q < 4; ++q) EXPECT_GE(quarters_hit[q], 1) << "no kill in quarter " << q << " of a save";
  EXPECT_GE(restored, kills / 2);
}

}  // namespace flowtrain::train::crash_test

#endif  // FLOWTRAIN_TRAIN_SAVER_CRASH_TEST_UTIL_H_
