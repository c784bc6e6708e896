// Reads and writes NumPy's .npy files (numpy.save / numpy.load), the inputs and outputs of
// `flowtrain saved-model run` as of TF's saved_model_cli.
//
//   io::WriteNpyFile("x.npy", Tensor::FromVector<float>({1, 2, 3}));   // np.load gives float32 [3]
//   Tensor x = io::ReadNpyFile("x.npy");
//
// A .npy file is the magic "\x93NUMPY", a format version (1.0, 2.0 or 3.0), a little-endian
// header length (2 bytes in 1.0, 4 in 2.0 and 3.0), a header that is a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }, then the values.
//
// Reading accepts byte orders '<', '>', '|' and '=', the dtypes b1 i1 i2 i4 i8 u1 u2 u4 u8 f2
// f4 f8 (as bool, int8..uint64, half, float, double), S<n> (bytes, NUL padding stripped as
// numpy does) and U<n> (UCS-4, turned into UTF-8) as DT_STRING, shape () as a scalar, and
// fortran_order True (the values are transposed into C order). Complex (c8, c16) files are
// refused with InvalidArgument, as a flowtrain Tensor cannot hold complex values; so are object
// arrays ('O', pickles) and structured dtypes. Errors name the file: NotFound for a missing
// one, DataLoss for bytes that are not a .npy file or end before the values its header
// promises, InvalidArgument for a well-formed file of a dtype flowtrain does not read.
// Trailing bytes after the values are ignored, as numpy.load ignores them.
//
// Writing produces what numpy.save produces: version 1.0 (2.0 when the header would exceed
// 65535 bytes), the header padded with spaces to a multiple of 64 bytes and ended by '\n',
// little-endian values ('|' for one-byte types), DT_STRING as 'S<longest>'. Thread-compatible:
// the functions hold no state.
#ifndef FLOWTRAIN_IO_NPY_FILE_H_
#define FLOWTRAIN_IO_NPY_FILE_H_

#include <string>
#include <string_view>

#include "flowtrain/core/tensor.h"

namespace flowtrain::io {

// The tensor held by the .npy file at `path`.
Tensor ReadNpyFile(const std::string& path);

// The tensor held by the .npy bytes `contents`; `name` (a path) names them in errors.
Tensor ParseNpy(std::string_view contents, const std::string& name);

// Writes `tensor` to `path` as numpy.save does (replacing an existing file atomically).
// InvalidArgument for a dtype .npy files cannot hold (bfloat16, resource, variant, quantized).
void WriteNpyFile(const std::string& path, const Tensor& tensor);

// The bytes WriteNpyFile writes.
std::string SerializeNpy(const Tensor& tensor);

// The .npy descr of `dtype` ("<f4", "|b1", ...); InvalidArgument when it has none. Strings
// have no fixed descr ('S<n>' depends on the values) and answer "|S".
std::string NpyDescr(DataType dtype);

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_NPY_FILE_H_
