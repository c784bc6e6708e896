// Requests to a task's worker service that the distributed tests send by hand, as a client
// without a GrpcSession (a stranger on the network, a fuzzer, a crashed client) would.
//
//   RegisterGraphRequest request = testing::FetchConstRequest();   // fetches c:0 = 3.0f
//   stub->RegisterGraph(&context, request, &response);
//
// Header-only: the test binaries that use it share no library of distributed test code.
#ifndef FLOWTRAIN_TESTS_WORKER_REQUESTS_H_
#define FLOWTRAIN_TESTS_WORKER_REQUESTS_H_

#include <string>

#include "flowtrain/distributed/worker_service.pb.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/proto/graph.pb.h"

namespace flowtrain::testing {

// The GraphDef of a graph of one Const `c` (3.0f) and y = Identity(p) of a float placeholder
// `p`, in that node order.
inline tensorflow::GraphDef ConstAndEchoGraphDef() {
  Graph g;
  auto as_default = g.AsDefault();
  ops::Const(Tensor::Scalar<float>(3), "c");
  ops::Identity(ops::Placeholder(DT_FLOAT, PartialTensorShape::Unknown(), "p"), "y");
  return g.ToGraphDef();
}

// A registration of ConstAndEchoGraphDef() with one stage that runs c and fetches `tensor`
// to the client (any call that changes what a server holds).
inline distributed::RegisterGraphRequest FetchConstRequest(const std::string& tensor = "c:0") {
  distributed::RegisterGraphRequest request;
  *request.mutable_graph_def() = ConstAndEchoGraphDef();
  distributed::Stage* stage = request.add_stages();
  stage->add_targets("c");
  distributed::StageOutput* output = stage->add_outputs();
  output->set_tensor(tensor);
  output->add_client_fetches(0);
  return request;
}

}  // namespace flowtrain::testing

#endif  // FLOWTRAIN_TESTS_WORKER_REQUESTS_H_
