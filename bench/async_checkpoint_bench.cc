// How long a checkpoint holds up training, synchronous against asynchronous: a 400 MB model
// (40 float32 variables of 2.5M) saved by Saver::Save, which the training thread waits for
// whole, and by AsyncCheckpointSaver::Save, which it waits for only while the model is copied
// into memory; plus, in the same run, the disk's plain write (+ fsync) of the same bytes and
// how long the background write took.
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
  {
    auto as_default = g.AsDefault();
    for (int i = 0; i < kVariables; ++i) {
      char name[32];
      std::snprintf(name, sizeof(name), "layer_%02d/kernel", i);
      ft::Variable(
          [i] {
            return ft::ops::Fill(ft::ops::Const<int32_t>({kFloatsPerVariable}),
                                 ft::ops::Const(0.001f * static_cast<float>(i + 1)));
          },
          ft::VariableOptions{.name = name});
    }
  }
  ft::train::Saver saver({.max_to_keep = 2, .graph = &g});
  ft::Session sess(g);
  sess.Run({}, {}, {ft::ops::GlobalVariablesInitializer(&g)});
  std::vector<ft::Tensor> plain_model;
  for (const ft::Variable& v : ft::ops::GlobalVariables(&g)) {
    plain_model.push_back(sess.Run({}, {v.value()}, {})[0].DeepCopy());
  }

  ft::train::AsyncCheckpointSaver async(saver);
  std::vector<double> sync_s, stall_s, background_s, plain_s;
  int step = 0;
  for (int r = 0; r < kRepeats; ++r) {
    Clock::time_point start = Clock::now();
    saver.Save(sess, dir + "/model.ckpt", ++step);
    sync_s.push_back(Seconds(start));

    start = Clock::now();
    async.Save(sess, dir + "/model.ckpt", ++step);
    stall_s.push_back(Seconds(start));
    async.Wait();
    background_s.push_back(Seconds(start));

    plain_s.push_back(bench::PlainWrite(dir + "/plain.bin", plain_model));
  }
  const double sync = bench::Median(sync_s), stall = bench::Median(stall_s);
  Result("flowtrain", "sync_save_ms", 1e3 * sync);
  Result("flowtrain", "async_stall_ms", 1e3 * stall);
  Result("flowtrain", "async_total_ms", 1e3 * bench::Median(background_s));
  Result("disk", "plain_write_ms", 1e3 * bench::Median(plain_s));
  Result("flowtrain", "sync_over_async_stall", sync / stall);
  for (const std::string& name : ft::ListDirectory(dir)) ft::DeleteFileIfExists(dir + "/" + name);
  return 0;
}
