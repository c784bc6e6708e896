// The kernel of AsString: printf formatting of each element, with the format TF builds from the
// op's attrs ("%" [fill] [width] [.precision] conversion).
#include <cstdio>
#include <string>
#include <type_traits>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

class AsStringOp : public OpKernel {
 public:
  explicit AsStringOp(OpKernelConstruction& c) : OpKernel(c) {
    const DataType dtype = c.GetAttr<DataType>("T");
    const int64_t precision = c.GetAttr<int64_t>("precision");
    const bool scientific = c.GetAttr<bool>("scientific");
    const bool shortest = c.GetAttr<bool>("shortest");
    const int64_t width = c.GetAttr<int64_t>("width");
    const std::string fill = c.GetAttr<std::string>("fill");
    const bool floating = IsFloatingType(dtype);
    // TF checks the attrs when the kernel is made; flowtrain's messages are TF's.
    if (scientific && shortest) InvalidArgument("Cannot select both scientific and shortest notation");
    if (fill.size() > 1) InvalidArgument("Fill string must be one or fewer characters");
    if (!floating && (precision > -1 || scientific || shortest)) {
      InvalidArgument(precision > -1 ? "precision"
                      : scientific   ? "scientific"
                                     : "shortest",
                      " not supported for datatype ", DataTypeString(dtype));
    }
    format_ = "%";
    if (!fill.empty()) {
      switch (fill[0]) {
        case ' ':
        case '+':
        case '-':
        case '0':
        case '#':
          format_ += fill;
          break;
        default:
          InvalidArgument("Fill argument not supported: \"", fill, "\"");
      }
    }
    if (width > -1) format_ += std::to_string(width);
    if (precision > -1) format_ += "." + std::to_string(precision);
    if (floating) {
      format_ += shortest ? "g" : scientific ? "e" : "f";
    } else if (dtype == DT_UINT8 || dtype == DT_UINT16 || dtype == DT_UINT32 || dtype == DT_UINT64) {
      format_ += "llu";
    } else {
      format_ += "lld";
    }
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    Tensor* out = ctx->allocate_output(0, in.shape());
    auto strings = out->flat<std::string>();
    const int64_t n = in.NumElements();
    switch (in.dtype()) {
      case DT_STRING:
        for (int64_t i = 0; i < n; ++i) strings[i] = in.flat<std::string>()[i];
        return;
      case DT_BOOL:
        for (int64_t i = 0; i < n; ++i) strings[i] = in.flat<bool>()[i] ? "true" : "false";
        return;
      default:
        DispatchNumericType(in.dtype(), name(), [&]<typename T>() {
          const T* values = in.flat<T>().data();
          for (int64_t i = 0; i < n; ++i) strings[i] = Format(values[i]);
        });
    }
  }

 private:
  template <typename T>
  std::string Format(T value) const {
    // printf of the value as the type format_ expects.
    auto print = [&](char* dst, size_t size) {
      if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
        return std::snprintf(dst, size, format_.c_str(), static_cast<unsigned long long>(value));
      } else if constexpr (std::is_integral_v<T>) {
        return std::snprintf(dst, size, format_.c_str(), static_cast<long long>(value));
      } else {
        return std::snprintf(dst, size, format_.c_str(), static_cast<double>(value));
      }
    };
    char buffer[128];
    const int length = print(buffer, sizeof buffer);
    // printf fails (EOVERFLOW) on a width or precision whose output would pass INT_MAX bytes.
    if (length < 0) InvalidArgument(name(), ": the width or precision asks for more than 2^31 characters");
    if (length < static_cast<int>(sizeof buffer)) return std::string(buffer, length);
    // A wide width or precision: again, into a buffer of the size printf asked for.
    std::string big(static_cast<size_t>(length) + 1, '\0');
    print(big.data(), big.size());
    big.resize(static_cast<size_t>(length));
    return big;
  }

  std::string format_;  // for one value of the input's type
};
FT_REGISTER_KERNEL("AsString", AsStringOp);

}  // namespace
}  // namespace flowtrain
