// A Tensor's values as NumPy's str() of the array prints them: what TF's inspect_checkpoint and
// saved_model_cli print (they print numpy arrays), so flowtrain's tools print the same text.
//
//   NumpyString(Tensor::FromVector<float>({0.25f, 1, 2}))   // "[0.25 1.   2.  ]"
//   NumpyString(big)                                       // "[0 1 2 ... 7 8 9]" past 1000 values
//   NumpyPrintOptions options = ParsePrintOptions("threshold=100000", {});
//
// Covered: numpy's summarization (threshold, edgeitems), line wrapping (linewidth), the float
// formatting of its default floatmode "maxprec" (shortest round-trip digits, at most
// `precision` after the point, padded to align; scientific when the magnitudes call for it),
// integers right-aligned, bools as True/False, strings as Python bytes literals. A 0-d tensor
// prints as its scalar, as numpy's str() does.
#ifndef FLOWTRAIN_TOOLS_NUMPY_PRINT_H_
#define FLOWTRAIN_TOOLS_NUMPY_PRINT_H_

#include <cstdint>
#include <limits>
#include <string>

#include "flowtrain/core/tensor.h"

namespace flowtrain::tools {

// numpy.set_printoptions()' options flowtrain honours, with numpy's defaults.
struct NumpyPrintOptions {
  // Arrays with more elements than this are summarized with "...".
  int64_t threshold = 1000;
  // Items shown at the start and end of each summarized axis.
  int64_t edgeitems = 3;
  // Characters per line before wrapping.
  int64_t linewidth = 75;
  // Most digits after the decimal point of a float.
  int64_t precision = 8;
};

// `options` with the "k=v" setting `spec` applied (TF's --printoptions). InvalidArgument naming
// `spec` when it is not of the form k=v, names an option not listed above, or its value is not
// a non-negative integer ("inf" is taken for threshold: never summarize).
NumpyPrintOptions ParsePrintOptions(const std::string& spec, NumpyPrintOptions options);

// `tensor` as print(numpy_array) shows it. InvalidArgument for DT_RESOURCE and DT_VARIANT,
// which have no numpy form.
std::string NumpyString(const Tensor& tensor, const NumpyPrintOptions& options = {});

}  // namespace flowtrain::tools

#endif  // FLOWTRAIN_TOOLS_NUMPY_PRINT_H_
