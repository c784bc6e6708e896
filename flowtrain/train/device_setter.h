// ReplicaDeviceSetter (TF's tf.train.replica_device_setter): a device function for
// between-graph replication. Variables (and the other ops TF keeps on parameter servers)
// go to the ps tasks in round-robin order, everything else to the worker's device. Fields a
// node or an enclosing scope already requested win over the setter's.
//
//   distributed::ClusterSpec cluster = distributed::ClusterSpec::Parse("ps=h:2222;worker=h:2223");
//   auto scope = g.Device(train::ReplicaDeviceSetter(
//       {.cluster = &cluster, .worker_device = "/job:worker/task:0"}));
//   Variable w(...);              // "/job:ps/task:0"
//   Output y = ops::MatMul(x, w); // "/job:worker/task:0"
//
// Optimizer slots are colocated with their variable, so they land on its ps task.
#ifndef FLOWTRAIN_TRAIN_DEVICE_SETTER_H_
#define FLOWTRAIN_TRAIN_DEVICE_SETTER_H_

#include <string>
#include <vector>

#include "flowtrain/distributed/cluster_spec.h"
#include "flowtrain/graph/graph.h"

namespace flowtrain::train {

struct ReplicaDeviceSetterOptions {
  // When set, the number of ps tasks is the size of its ps job (no ps job: no placement).
  const distributed::ClusterSpec* cluster = nullptr;
  // Number of ps tasks when there is no cluster; 0 places nothing.
  int ps_tasks = 0;
  std::string ps_device = "/job:ps";
  std::string worker_device = "/job:worker";
  // Op types placed on ps tasks; empty: TF's STANDARD_PS_OPS (VariableV2, VarHandleOp, ...).
  std::vector<std::string> ps_ops;
};

// Throws InvalidArgument for a malformed ps or worker device.
DeviceFunction ReplicaDeviceSetter(const ReplicaDeviceSetterOptions& options);

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_DEVICE_SETTER_H_
