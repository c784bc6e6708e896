// How long a checkpoint holds up training, synchronous against asynchronous: a 400 MB model
// (40 float32 variables of 2.5M) whose training step updates every variable in place
// (ApplyGradientDescent). The stall of a save is the time the training thread spends in it plus
// what it adds to the next step: Saver::Save is waited for whole; AsyncCheckpointSaver::Save
// only while it fetches the model, but the next step's updates then copy the buffers the
// snapshot holds (copy on write) while the write runs beside them. Also printed, from the same
// run: the plain step, the disk's plain write (+ fsync) of the same bytes, and how long the
// background write took.
//
//   async_checkpoint_bench [dir]     (default: a fresh directory under $TMPDIR or /tmp)
//
// Each figure is the median of 5 saves, sync and async taking turns.
#include <cstdio>
#include <string>
#include <vector>

#include "flowtrain/core/file_util.h"
#include "flowtrain/core/tensor.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/training_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/async_checkpoint_saver.h"
#include "flowtrain/train/saver.h"
#include "checkpoint_bench_util.h"

namespace {

namespace ft = flowtrain;
using bench::Clock;
using bench::Seconds;

constexpr int kVariables = 40;
constexpr int32_t kFloatsPerVariable = 2'500'000;
constexpr int kRepeats = 5;

void Result(const char* system, const char* metric, double value) {
  std::printf("RESULT checkpoint_stall %s %s %.4g\n", system, metric, value);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = bench::BenchDirectory(argc, argv, "async_checkpoint_bench");
  ft::Graph g;
  ft::Operation train_step;
  {
    auto as_default = g.AsDefault();
    std::vector<ft::Operation> updates;
    for (int i = 0; i < kVariables; ++i) {
      char name[32];
      std::snprintf(name, sizeof(name), "layer_%02d/kernel", i);
      ft::Variable v(
          [i] {
            return ft::ops::Fill(ft::ops::Const<int32_t>({kFloatsPerVariable}),
                                 ft::ops::Const(0.001f * static_cast<float>(i + 1)));
          },
          ft::VariableOptions{.name = name});
      ft::Output grad = ft::ops::Fill(ft::ops::Const<int32_t>({kFloatsPerVariable}), ft::ops::Const(1e-6f));
      updates.push_back(ft::ops::ApplyGradientDescent(v.ref(), ft::ops::Const(0.1f), grad).op());
    }
    train_step = ft::ops::Group(updates, "train");
  }
  ft::train::Saver saver({.max_to_keep = 2, .graph = &g});
  ft::Session sess(g);
  sess.Run({}, {}, {ft::ops::GlobalVariablesInitializer(&g)});
  std::vector<ft::Tensor> plain_model;
  for (const ft::Variable& v : ft::ops::GlobalVariables(&g)) {
    plain_model.push_back(sess.Run({}, {v.value()}, {})[0].DeepCopy());
  }
  auto timed_step = [&] {
    const Clock::time_point start = Clock::now();
    sess.Run({}, {}, {train_step});
    return Seconds(start);
  };
  for (int i = 0; i < 3; ++i) timed_step();  // warm up

  ft::train::AsyncCheckpointSaver async(saver);
  std::vector<double> step_s, sync_s, async_s, background_s, plain_s;
  int step = 0;
  for (int r = 0; r < kRepeats; ++r) {
    const double plain_step = timed_step();
    step_s.push_back(plain_step);

    Clock::time_point start = Clock::now();
    saver.Save(sess, dir + "/model.ckpt", ++step);
    const double save = Seconds(start);
    sync_s.push_back(save + timed_step() - plain_step);

    start = Clock::now();
    async.Save(sess, dir + "/model.ckpt", ++step);
    const double snapshot = Seconds(start);
    async_s.push_back(snapshot + timed_step() - plain_step);
    async.Wait();
    background_s.push_back(Seconds(start));

    plain_s.push_back(bench::PlainWrite(dir + "/plain.bin", plain_model));
  }
  const double sync = bench::Median(sync_s), stall = bench::Median(async_s);
  Result("flowtrain", "step_ms", 1e3 * bench::Median(step_s));
  Result("flowtrain", "sync_stall_ms", 1e3 * sync);
  Result("flowtrain", "async_stall_ms", 1e3 * stall);
  Result("flowtrain", "async_write_ms", 1e3 * bench::Median(background_s));
  Result("disk", "plain_write_ms", 1e3 * bench::Median(plain_s));
  Result("flowtrain", "sync_over_async_stall", sync / stall);
  for (const std::string& name : ft::ListDirectory(dir)) ft::DeleteFileIfExists(dir + "/" + name);
  return 0;
}
