#include "flowtrain/train/global_step.h"

#include <cmath>
#include <string>

#include "flowtrain/core/error.h"

namespace flowtrain::train {

int64_t ReadGlobalStep(SessionInterface& session, const Output& global_step_tensor) {
  if (!global_step_tensor) InvalidArgument("global_step: global_step_tensor is null");
  const std::string name = global_step_tensor.name();
  Tensor value = session.Run({}, {global_step_tensor}, {})[0];
  if (value.NumElements() != 1) {
    InvalidArgument("global_step: ", name, " must hold one value, got shape ", value.shape().DebugString());
  }
  switch (value.dtype()) {
    case DT_INT8:
      return value.flat<int8_t>()[0];
    case DT_INT16:
      return value.flat<int16_t>()[0];
    case DT_INT32:
      return value.flat<int32_t>()[0];
    case DT_INT64:
      return value.flat<int64_t>()[0];
    case DT_UINT8:
      return value.flat<uint8_t>()[0];
    case DT_UINT16:
      return value.flat<uint16_t>()[0];
    case DT_FLOAT:
    case DT_DOUBLE: {
      const double v = value.dtype() == DT_FLOAT ? value.flat<float>()[0] : value.flat<double>()[0];
      // 2^63 is the first double past int64's range.
      if (!std::isfinite(v) || std::fabs(v) >= 9223372036854775808.0) {
        InvalidArgument("global_step: ", name, " is ", v, ", not an integer step");
      }
      return static_cast<int64_t>(v);
    }
    default:
      InvalidArgument("global_step: ", name, " is a ", DataTypeString(value.dtype()), ", not a number");
  }
}

}  // namespace flowtrain::train
