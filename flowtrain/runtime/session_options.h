// Options of a Session and of one Run, after TF's ConfigProto and RunOptions, as structs
// rather than protos, like every other option set in flowtrain. RunMetadata is TF's proto,
// so traces can go straight into event files.
//
//   SessionOptions options;
//   options.config.inter_op_parallelism_threads = 2;
//   RunOptions run_options;
//   run_options.timeout_in_ms = 1000;
//   run_options.trace_level = RunOptions::kFullTrace;
#ifndef FLOWTRAIN_RUNTIME_SESSION_OPTIONS_H_
#define FLOWTRAIN_RUNTIME_SESSION_OPTIONS_H_

#include <cstdint>
#include <string>

#include "flowtrain/proto/step_stats.pb.h"

namespace flowtrain {

struct ConfigProto {
  // Threads running independent nodes; 0 = one per core.
  int inter_op_parallelism_threads = 0;
  // Threads a single kernel may split its work across; 0 = one per core.
  int intra_op_parallelism_threads = 0;
  // Default deadline of every Run without its own timeout; 0 = none.
  int64_t operation_timeout_in_ms = 0;
  // Place ops that ask for a device this process lacks (a GPU) on the CPU instead of failing.
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  // Fuse nodes when a run's plan is compiled (runtime/graph_rewrite.h), on the executable copy
  // only: the graph, its names and checkpoints stay as built. TF's remapper fusion, MatMul +
  // BiasAdd (+ Relu) -> _FusedMatMul, and flowtrain's own: MatMul + ApplyGradientDescent (a
  // weight gradient applied straight to its variable) and MatMul + ReluGrad. false is TF's
  // graph_options.rewrite_options.remapping = OFF and turns off all of them, in a grpc://
  // session's tasks too.
  bool remapping = true;
  // Skip, when a run's plan is compiled, the kernels of nodes whose outputs no running kernel
  // reads: nodes reached only through control edges, such as the gradient of a network's
  // input images, which the tuple grouping a layer's gradients waits for (as TF's
  // dependency optimizer turns them into NoOps). Stateful ops and ops on variables always run.
  // false is TF's graph_options.rewrite_options.dependency_optimization = OFF: every needed
  // node's kernel runs (and may fail), in a grpc:// session's tasks too.
  bool dependency_optimization = true;
};

struct SessionOptions {
  // "" for an in-process session; "grpc://host:port" for a server's master.
  std::string target;
  ConfigProto config;
};

struct RunOptions {
  enum TraceLevel { kNoTrace = 0, kSoftwareTrace = 1, kHardwareTrace = 2, kFullTrace = 3 };
  TraceLevel trace_level = kNoTrace;
  // Deadline of this run; 0 = the session's operation_timeout_in_ms.
  int64_t timeout_in_ms = 0;
};

using RunMetadata = tensorflow::RunMetadata;

// The name of the in-process CPU device, as TF names it.
inline constexpr const char* kLocalCpuDevice = "/job:localhost/replica:0/task:0/device:CPU:0";

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_SESSION_OPTIONS_H_
