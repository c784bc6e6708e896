// Window geometry shared by the shape functions and kernels of the convolution and pooling
// ops: parsing their "padding" and 4-entry NHWC "strides"/"ksize" attrs, and the output size
// and leading padding of one spatial dimension, with TF's rules and messages.
//
//   const Padding padding = ParsePadding(node.GetAttr<std::string>("padding"));
//   const WindowDim rows = ComputeWindowDim(/*input=*/28, /*window=*/5, /*stride=*/2, padding);
//   // rows.output == 14, rows.pad_before == 1
#ifndef FLOWTRAIN_OPS_INTERNAL_NN_WINDOW_H_
#define FLOWTRAIN_OPS_INTERNAL_NN_WINDOW_H_

#include <cstdint>
#include <string_view>
#include <vector>

namespace flowtrain {

enum class Padding { kSame, kValid };

// Throws InvalidArgument unless `padding` is "SAME" or "VALID".
Padding ParsePadding(std::string_view padding);

// Throws InvalidArgument unless `data_format` is "NHWC" (the only CPU layout supported).
void CheckNhwc(std::string_view data_format);

// Checks a 4-entry NHWC window attr ("strides", "ksize", "dilations"): every entry >= 1 and
// the batch and depth entries 1. Throws InvalidArgument naming the attr.
void CheckWindowAttr(const std::vector<int64_t>& values, std::string_view attr_name);

// One spatial dimension of a windowed op. SAME: output = ceil(input / stride) and the total
// padding max((output - 1) * stride + window - input, 0), the smaller half before. VALID:
// output = ceil((input - window + 1) / stride), no padding.
struct WindowDim {
  int64_t output;
  int64_t pad_before;
};

// Throws InvalidArgument ("Computed output size would be negative ...") when the window does
// not fit. An unknown input (-1) gives an unknown output (-1).
WindowDim ComputeWindowDim(int64_t input, int64_t window, int64_t stride, Padding padding);

}  // namespace flowtrain

#endif  // FLOWTRAIN_OPS_INTERNAL_NN_WINDOW_H_
