// Reads IDX files, the format of MNIST and Fashion-MNIST (`train-images-idx3-ubyte.gz` ...),
// gzip-compressed or not, into a tensor of the file's element type and shape.
//
//   Tensor images = io::ReadIdxFile(".../train-images-idx3-ubyte.gz");   // uint8 [60000,28,28]
//   Tensor labels = io::ReadIdxFile(".../train-labels-idx1-ubyte.gz");   // uint8 [60000]
//   auto ds = data::Dataset::FromTensorSlices({images, labels});
//
// An IDX file is a big-endian header — two zero bytes, a type code (0x08 uint8, 0x09 int8,
// 0x0B int16, 0x0C int32, 0x0D float, 0x0E double), the number of dimensions, then each
// dimension as a 32-bit integer — followed by the values in row-major order. A missing file is
// NotFound; a bad header or a file shorter than its header says is DataLoss naming the file.
#ifndef FLOWTRAIN_IO_IDX_FILE_H_
#define FLOWTRAIN_IO_IDX_FILE_H_

#include <string>

#include "flowtrain/core/tensor.h"

namespace flowtrain::io {

Tensor ReadIdxFile(const std::string& path);

// Writes `tensor` (uint8, int8, int16, int32, float or double) as an uncompressed IDX file.
void WriteIdxFile(const std::string& path, const Tensor& tensor);

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_IDX_FILE_H_
