// DeviceSpec: a parsed device name such as "/job:ps/replica:0/task:1/device:CPU:0" (or the
// short forms "/cpu:0", "/device:GPU:1"), with TF's merge rule for nested device scopes.
//
//   DeviceSpec spec = DeviceSpec::Parse("/job:ps/task:0");
//   spec.job == "ps"; spec.task == 0; spec.ToString() == "/job:ps/task:0"
#ifndef FLOWTRAIN_RUNTIME_DEVICE_SPEC_H_
#define FLOWTRAIN_RUNTIME_DEVICE_SPEC_H_

#include <optional>
#include <string>
#include <string_view>

namespace flowtrain {

struct DeviceSpec {
  std::string job;  // empty: unspecified
  std::optional<int> replica;
  std::optional<int> task;
  std::string device_type;  // "CPU", "GPU" or empty
  std::optional<int> device_index;

  // Throws InvalidArgument for a malformed name.
  static DeviceSpec Parse(std::string_view name);
  // Fields set in `other` override this one's (TF's DeviceSpec.merge_from).
  void MergeFrom(const DeviceSpec& other);
  std::string ToString() const;
  bool empty() const { return job.empty() && !replica && !task && device_type.empty() && !device_index; }
};

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_DEVICE_SPEC_H_
