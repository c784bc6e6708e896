// Feeds the input to the worker service's handlers, called in process as gRPC would call them
// for a remote client (no network): a RegisterGraphRequest, then a SendTensorsRequest and a
// RunStepRequest for the graph it registered, then DeregisterGraph. The input is
//   uint16 LE a | uint16 LE b | a bytes RegisterGraph | b bytes SendTensors | RunStep
// (each a serialized request; lengths past the end are cut). The harness sets what a client
// cannot get wrong without being refused anyway: RunStep's handle is the one RegisterGraph
// returned and both requests use step 1. It also drops the stages' pushes to other tasks (they
// would dial out) and caps RunStep's timeout at 20 ms (a step that awaits tensors nobody sends
// waits until its timeout, as it should). A gRPC status is the service's answer, except
// INTERNAL: that is an exception other than flowtrain::Error, or a flowtrain bug, escaping to
// a client.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "flowtrain/distributed/cluster_spec.h"
#include "flowtrain/distributed/internal/worker.h"
#include "grpcpp/server_context.h"

namespace {

using flowtrain::distributed::Worker;

void CheckStatus(const char* method, const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::INTERNAL) {
    std::fprintf(stderr, "%s answered INTERNAL: %s\n", method, status.error_message().c_str());
    std::abort();
  }
}

// The next `n` bytes of the input (fewer at its end).
std::string Take(const uint8_t*& data, size_t& size, size_t n) {
  n = std::min(n, size);
  std::string bytes(reinterpret_cast<const char*>(data), n);
  data += n;
  size -= n;
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint16_t lengths[2] = {0, 0};
  std::memcpy(lengths, data, std::min<size_t>(size, sizeof(lengths)));
  Take(data, size, sizeof(lengths));
  flowtrain::distributed::RegisterGraphRequest register_request;
  flowtrain::distributed::SendTensorsRequest send_request;
  flowtrain::distributed::RunStepRequest run_request;
  if (!register_request.ParseFromString(Take(data, size, lengths[0])) ||
      !send_request.ParseFromString(Take(data, size, lengths[1])) ||
      !run_request.ParseFromString(Take(data, size, size))) {
    return 0;
  }
  for (flowtrain::distributed::Stage& stage : *register_request.mutable_stages()) {
    stage.clear_control_pushes();
    for (flowtrain::distributed::StageOutput& output : *stage.mutable_outputs()) output.clear_pushes();
  }

  Worker worker(flowtrain::distributed::ClusterSpec::Parse("worker=localhost:1"), "worker", 0,
                /*intra_op_threads=*/1);
  grpc::ServerContext context;
  flowtrain::distributed::RegisterGraphResponse registered;
  const grpc::Status status = worker.RegisterGraph(&context, &register_request, &registered);
  CheckStatus("RegisterGraph", status);
  if (!status.ok()) return 0;

  send_request.set_step_id(1);
  flowtrain::distributed::SendTensorsResponse sent;
  CheckStatus("SendTensors", worker.SendTensors(&context, &send_request, &sent));

  run_request.set_handle(registered.handle());
  run_request.set_step_id(1);
  run_request.set_timeout_in_ms(std::clamp<int64_t>(run_request.timeout_in_ms(), 1, 20));
  flowtrain::distributed::RunStepResponse ran;
  CheckStatus("RunStep", worker.RunStep(&context, &run_request, &ran));

  flowtrain::distributed::DeregisterGraphRequest deregister_request;
  deregister_request.add_handles(registered.handle());
  flowtrain::distributed::DeregisterGraphResponse deregistered;
  CheckStatus("DeregisterGraph", worker.DeregisterGraph(&context, &deregister_request, &deregistered));
  return 0;
}
