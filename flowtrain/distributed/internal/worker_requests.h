// Checks and decoding of what the worker service's messages carry (internal to
// flowtrain/distributed): tensor names, transfer keys and tensors, checked before the worker
// looks anything up or allocates (and tensors the master gets back, before it allocates).
// Any client on the network can send these requests, so a malformed one is an
// InvalidArgument naming the offending field, never an uncaught exception or an allocation of
// whatever a header claims. Pure functions, callable without a server (the fuzz harness of
// request decoding calls them).
//
//   auto [node, index] = ParseTensorName(output.tensor(), "Stage output");   // "c:0" -> ("c", 0)
//   CheckTransferKey(request.keys(i), "SendTensors key");                   // "c:0" or "^c"
//   const int64_t bytes = DecodedTensorBytes(request.tensors(i), "SendTensors tensor 'c:0'");
//   Tensor t = DecodeTensor(request.tensors(i), "SendTensors tensor 'c:0'");
#ifndef FLOWTRAIN_DISTRIBUTED_INTERNAL_WORKER_REQUESTS_H_
#define FLOWTRAIN_DISTRIBUTED_INTERNAL_WORKER_REQUESTS_H_

#include <cstdint>
#include <string_view>
#include <utility>

#include "flowtrain/core/tensor.h"
#include "flowtrain/proto/tensor.pb.h"

namespace flowtrain::distributed {

// Splits "node:index" (a non-empty node name, a decimal index in [0, 2^31)); InvalidArgument
// "<what> '<name>' ..." otherwise. The view points into `name`.
std::pair<std::string_view, int> ParseTensorName(std::string_view name, std::string_view what);

// A key a step's values travel under between tasks: a tensor name, or "^node" for a control
// token. InvalidArgument naming `what` and the key otherwise.
void CheckTransferKey(std::string_view key, std::string_view what);

// The bytes the tensor `proto` describes takes once decoded (its elements; for strings also
// their characters), computed from the proto alone: InvalidArgument naming `what` for a dtype
// flowtrain does not hold, an unknown or negative dimension, a size that overflows int64, or
// tensor_content whose length is not the shape's.
int64_t DecodedTensorBytes(const tensorflow::TensorProto& proto, std::string_view what);

// TensorFromProto after DecodedTensorBytes's checks; its errors name `what`.
Tensor DecodeTensor(const tensorflow::TensorProto& proto, std::string_view what);

}  // namespace flowtrain::distributed

#endif  // FLOWTRAIN_DISTRIBUTED_INTERNAL_WORKER_REQUESTS_H_
