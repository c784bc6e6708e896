// String formatting ops with TF's names: AsString (tf.strings.as_string).
//
//   Output text = ops::AsString(x, {.precision = 2, .width = 8});   // 1.5f -> "    1.50"
#ifndef FLOWTRAIN_OPS_STRING_OPS_H_
#define FLOWTRAIN_OPS_STRING_OPS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "flowtrain/graph/graph.h"

namespace flowtrain::ops {

// tf.strings.as_string's arguments, with its defaults.
struct AsStringOptions {
  int64_t precision = -1;   // digits after the point, floats only; -1: printf's default (6)
  bool scientific = false;  // floats as "1.500000e+00"
  bool shortest = false;    // floats as printf's %g ("1.5", "1e+10"); not with scientific
  int64_t width = -1;       // pad to this many characters; -1: no padding
  std::string fill;         // "" or one printf flag: ' ', '0', '+', '-', '#'
  std::string name = "AsString";
};

// Each element of `input` (a number, bool or string tensor) as a string, formatted as TF's
// AsString does with printf ("%f" for floats by default, "true"/"false" for bools). Bad options
// are InvalidArgumentError at run time in TF's words ("precision not supported for datatype
// int32", "Cannot select both scientific and shortest notation", "Fill argument not
// supported: \"x\"").
Output AsString(Output input, const AsStringOptions& options = {});

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_STRING_OPS_H_
