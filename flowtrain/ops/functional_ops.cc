// TF's functional ops: calls of a function from the graph's library (PartitionedCall,
// StatefulPartitionedCall) and functional control flow (If, StatelessIf, While,
// StatelessWhile, Case, StatelessCase) as TF 1.14+ and 2.x write them, and ToBool. Registered with TF's
// signatures (the stateful and stateless forms differ only in that flag) so that graphs
// holding them import, export and pass through MetaGraphs; their output shapes come from the
// `output_shapes` attr when it is set.
#include <string>

#include "flowtrain/graph/op_registry.h"
#include "flowtrain/graph/shape_inference.h"

namespace flowtrain {
namespace {

void OutputShapesFromAttr(InferenceContext& c) {
  const auto shapes = c.GetAttr<std::vector<PartialTensorShape>>("output_shapes");
  for (int i = 0; i < c.num_outputs(); ++i) {
    c.set_output(i, i < static_cast<int>(shapes.size()) ? shapes[i] : PartialTensorShape::Unknown());
  }
}

OpDefBuilder Stateful(OpDefBuilder builder, bool stateful) {
  if (stateful) builder.SetIsStateful();
  return builder;
}

OpDefBuilder CallOp(std::string name, bool stateful) {
  return Stateful(OpDefBuilder(std::move(name))
                      .Input("args: Tin")
                      .Output("output: Tout")
                      .Attr("Tin: list(type) >= 0")
                      .Attr("Tout: list(type) >= 0")
                      .Attr("f: func")
                      .Attr("config: string = ''")
                      .Attr("config_proto: string = ''")
                      .Attr("executor_type: string = ''")
                      .SetShapeFn(shape_fns::UnknownShape),
                  stateful);
}

OpDefBuilder IfOp(std::string name, bool stateful) {
  return Stateful(OpDefBuilder(std::move(name))
                      .Input("cond: Tcond")
                      .Input("input: Tin")
                      .Output("output: Tout")
                      .Attr("Tcond: type")
                      .Attr("Tin: list(type) >= 0")
                      .Attr("Tout: list(type) >= 0")
                      .Attr("then_branch: func")
                      .Attr("else_branch: func")
                      .Attr("output_shapes: list(shape) = []")
                      .SetShapeFn(OutputShapesFromAttr),
                  stateful);
}

OpDefBuilder WhileOp(std::string name, bool stateful) {
  return Stateful(OpDefBuilder(std::move(name))
                      .Input("input: T")
                      .Output("output: T")
                      .Attr("T: list(type) >= 0")
                      .Attr("cond: func")
                      .Attr("body: func")
                      .Attr("output_shapes: list(shape) = []")
                      .Attr("parallel_iterations: int = 10")
                      .SetShapeFn(OutputShapesFromAttr),
                  stateful);
}

OpDefBuilder CaseOp(std::string name, bool stateful) {
  return Stateful(OpDefBuilder(std::move(name))
                      .Input("branch_index: int32")
                      .Input("input: Tin")
                      .Output("output: Tout")
                      .Attr("Tin: list(type) >= 0")
                      .Attr("Tout: list(type) >= 0")
                      .Attr("branches: list(func) >= 1")
                      .Attr("output_shapes: list(shape) = []")
                      .SetShapeFn(OutputShapesFromAttr),
                  stateful);
}

using op_registry_internal::OpRegistrar;
// The truth of a tensor as If takes its predicate: a scalar is true when it is not zero (a
// string when it is not empty), any other tensor when it has elements. The function
// lowering converts a non-bool If predicate with it (runtime/internal/function_lowering.h).
const OpRegistrar kToBool = OpDefBuilder("ToBool")
                                .Input("input: T")
                                .Output("output: bool")
                                .Attr("T: type")
                                .SetShapeFn(shape_fns::ScalarShape);
const OpRegistrar kPartitionedCall = CallOp("PartitionedCall", false);
const OpRegistrar kStatefulPartitionedCall = CallOp("StatefulPartitionedCall", true);
const OpRegistrar kIf = IfOp("If", true);
const OpRegistrar kStatelessIf = IfOp("StatelessIf", false);
const OpRegistrar kWhile = WhileOp("While", true);
const OpRegistrar kStatelessWhile = WhileOp("StatelessWhile", false);
const OpRegistrar kCase = CaseOp("Case", true);
const OpRegistrar kStatelessCase = CaseOp("StatelessCase", false);

}  // namespace
}  // namespace flowtrain
