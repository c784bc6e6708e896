#include "flowtrain/train/device_setter.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "flowtrain/runtime/device_spec.h"

namespace flowtrain::train {
namespace {

// TF 1.15's STANDARD_PS_OPS.
const std::vector<std::string>& StandardPsOps() {
  static const auto* ops = new std::vector<std::string>{"Variable",
                                                        "VariableV2",
                                                        "AutoReloadVariable",
                                                        "MutableHashTable",
                                                        "MutableHashTableV2",
                                                        "MutableHashTableOfTensors",
                                                        "MutableHashTableOfTensorsV2",
                                                        "MutableDenseHashTable",
                                                        "MutableDenseHashTableV2",
                                                        "VarHandleOp",
                                                        "BoostedTreesEnsembleResourceHandleOp",
                                                        "BoostedTreesQuantileStreamResourceHandleOp",
                                                        "ResourceConditionalAccumulator",
                                                        "DecisionTreeResource"};
  return *ops;
}

}  // namespace

DeviceFunction ReplicaDeviceSetter(const ReplicaDeviceSetterOptions& options) {
  const DeviceSpec ps_device = DeviceSpec::Parse(options.ps_device);
  const DeviceSpec worker_device = DeviceSpec::Parse(options.worker_device);
  int ps_tasks = options.ps_tasks;
  if (options.cluster != nullptr) ps_tasks = options.cluster->num_tasks(ps_device.job);
  if (ps_tasks == 0) {
    return
        [](std::string_view, std::string_view, std::string_view requested) { return std::string(requested); };
  }
  const std::vector<std::string> ps_ops = options.ps_ops.empty() ? StandardPsOps() : options.ps_ops;
  // Copies of the function share the round-robin position, as TF's chooser object does.
  auto next_task = std::make_shared<std::atomic<int>>(0);
  return [=](std::string_view op_type, std::string_view, std::string_view requested) {
    const DeviceSpec current = requested.empty() ? DeviceSpec{} : DeviceSpec::Parse(requested);
    DeviceSpec device = worker_device;
    if (std::find(ps_ops.begin(), ps_ops.end(), op_type) != ps_ops.end()) {
      device = ps_device;
      if (!ps_device.job.empty() && (current.job.empty() || current.job == ps_device.job)) {
        device.task = next_task->fetch_add(1) % ps_tasks;
      }
    }
    device.MergeFrom(current);
    return device.ToString();
  };
}

}  // namespace flowtrain::train
