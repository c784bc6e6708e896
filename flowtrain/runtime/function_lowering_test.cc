// The function lowering a Session runs before compiling (runtime/internal/function_lowering.h):
// calls, If, While and Case from a GraphDef's library run to the values TF computes; names,
// feeds, fetches and control dependencies of lowered nodes; attrs; nesting; errors; and the
// lowered graph holding only the body's nodes and the boundary Identity nodes.
#include "flowtrain/runtime/internal/function_lowering.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;

// f(x, y) = x * y + x; g(x) = f(x, x) called by op name; twice[T](x: T) = x + x.
constexpr char kLibrary[] = R"pb(
  library {
    function {
      signature {
        name: "mul_add"
        input_arg { name: "x" type: DT_FLOAT }
        input_arg { name: "y" type: DT_FLOAT }
        output_arg { name: "z" type: DT_FLOAT }
      }
      node_def {
        name: "m"
        op: "Mul"
        input: "x"
        input: "y"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      node_def {
        name: "a"
        op: "AddV2"
        input: "m:z:0"
        input: "x"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      ret { key: "z" value: "a:z:0" }
    }
    function {
      signature {
        name: "square_plus"
        input_arg { name: "x" type: DT_FLOAT }
        output_arg { name: "z" type: DT_FLOAT }
      }
      node_def { name: "inner" op: "mul_add" input: "x" input: "x" }
      ret { key: "z" value: "inner:z:0" }
    }
    function {
      signature {
        name: "twice"
        input_arg { name: "x" type_attr: "T" }
        output_arg { name: "y" type_attr: "T" }
        attr { name: "T" type: "type" }
      }
      node_def {
        name: "s"
        op: "AddV2"
        input: "x"
        input: "x"
        attr {
          key: "T"
          value { placeholder: "T" }
        }
      }
      ret { key: "y" value: "s:z:0" }
    }
    function {
      signature {
        name: "ten"
        output_arg { name: "y" type: DT_FLOAT }
      }
      node_def {
        name: "c"
        op: "Const"
        attr {
          key: "dtype"
          value { type: DT_FLOAT }
        }
        attr {
          key: "value"
          value {
            tensor {
              dtype: DT_FLOAT
              tensor_shape {}
              float_val: 10
            }
          }
        }
      }
      ret { key: "y" value: "c:output:0" }
    }
    function {
      signature {
        name: "neg"
        input_arg { name: "x" type: DT_FLOAT }
        output_arg { name: "y" type: DT_FLOAT }
      }
      node_def {
        name: "n"
        op: "Neg"
        input: "x"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      ret { key: "y" value: "n:y:0" }
    }
    function {
      signature {
        name: "less_than_10"
        input_arg { name: "i" type: DT_FLOAT }
        input_arg { name: "acc" type: DT_FLOAT }
        output_arg { name: "p" type: DT_BOOL }
      }
      node_def {
        name: "limit"
        op: "Const"
        attr {
          key: "dtype"
          value { type: DT_FLOAT }
        }
        attr {
          key: "value"
          value {
            tensor {
              dtype: DT_FLOAT
              tensor_shape {}
              float_val: 10
            }
          }
        }
      }
      node_def {
        name: "l"
        op: "Less"
        input: "i"
        input: "limit:output:0"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      ret { key: "p" value: "l:z:0" }
    }
    function {
      signature {
        name: "step"
        input_arg { name: "i" type: DT_FLOAT }
        input_arg { name: "acc" type: DT_FLOAT }
        output_arg { name: "i2" type: DT_FLOAT }
        output_arg { name: "acc2" type: DT_FLOAT }
      }
      node_def {
        name: "one"
        op: "Const"
        attr {
          key: "dtype"
          value { type: DT_FLOAT }
        }
        attr {
          key: "value"
          value {
            tensor {
              dtype: DT_FLOAT
              tensor_shape {}
              float_val: 1
            }
          }
        }
      }
      node_def {
        name: "next"
        op: "AddV2"
        input: "i"
        input: "one:output:0"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      node_def {
        name: "sum"
        op: "AddV2"
        input: "acc"
        input: "i"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      ret { key: "i2" value: "next:z:0" }
      ret { key: "acc2" value: "sum:z:0" }
    }
    function {
      signature {
        name: "step_with_cond"
        input_arg { name: "i" type: DT_FLOAT }
        input_arg { name: "acc" type: DT_FLOAT }
        output_arg { name: "i2" type: DT_FLOAT }
        output_arg { name: "acc2" type: DT_FLOAT }
      }
      node_def {
        name: "one"
        op: "Const"
        attr {
          key: "dtype"
          value { type: DT_FLOAT }
        }
        attr {
          key: "value"
          value {
            tensor {
              dtype: DT_FLOAT
              tensor_shape {}
              float_val: 1
            }
          }
        }
      }
      node_def {
        name: "five"
        op: "Const"
        attr {
          key: "dtype"
          value { type: DT_FLOAT }
        }
        attr {
          key: "value"
          value {
            tensor {
              dtype: DT_FLOAT
              tensor_shape {}
              float_val: 5
            }
          }
        }
      }
      node_def {
        name: "next"
        op: "AddV2"
        input: "i"
        input: "one:output:0"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      node_def {
        name: "small"
        op: "Less"
        input: "i"
        input: "five:output:0"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      node_def {
        name: "term"
        op: "StatelessIf"
        input: "small:z:0"
        input: "i"
        attr {
          key: "Tcond"
          value { type: DT_BOOL }
        }
        attr {
          key: "Tin"
          value { list { type: DT_FLOAT } }
        }
        attr {
          key: "Tout"
          value { list { type: DT_FLOAT } }
        }
        attr {
          key: "then_branch"
          value { func { name: "square_plus" } }
        }
        attr {
          key: "else_branch"
          value { func { name: "neg" } }
        }
      }
      node_def {
        name: "sum"
        op: "AddV2"
        input: "acc"
        input: "term:output:0"
        attr {
          key: "T"
          value { type: DT_FLOAT }
        }
      }
      ret { key: "i2" value: "next:z:0" }
      ret { key: "acc2" value: "sum:z:0" }
    }
    function {
      signature {
        name: "forever"
        input_arg { name: "x" type: DT_FLOAT }
        output_arg { name: "y" type: DT_FLOAT }
      }
      node_def { name: "again" op: "forever_too" input: "x" }
      ret { key: "y" value: "again:y:0" }
    }
    function {
      signature {
        name: "forever_too"
        input_arg { name: "x" type: DT_FLOAT }
        output_arg { name: "y" type: DT_FLOAT }
      }
      node_def { name: "back" op: "forever" input: "x" }
      ret { key: "y" value: "back:y:0" }
    }
    function {
      signature {
        name: "bump"
        input_arg { name: "v" type: DT_RESOURCE }
        input_arg { name: "delta" type: DT_FLOAT }
        output_arg { name: "before" type: DT_FLOAT }
        is_stateful: true
      }
      node_def {
        name: "read"
        op: "ReadVariableOp"
        input: "v"
        attr {
          key: "dtype"
          value { type: DT_FLOAT }
        }
      }
      node_def {
        name: "add"
        op: "AssignAddVariableOp"
        input: "v"
        input: "delta"
        input: "^read"
        attr {
          key: "dtype"
          value { type: DT_FLOAT }
        }
      }
      ret { key: "before" value: "read:value:0" }
      control_ret { key: "add" value: "add" }
    }
    function {
      signature {
        name: "add_to"
        input_arg { name: "v" type: DT_RESOURCE }
        input_arg { name: "delta" type: DT_FLOAT }
        is_stateful: true
      }
      node_def {
        name: "add"
        op: "AssignAddVariableOp"
        input: "v"
        input: "delta"
        attr {
          key: "dtype"
          value { type: DT_FLOAT }
        }
      }
      control_ret { key: "add" value: "add" }
    }
    function {
      signature {
        name: "do_nothing"
        input_arg { name: "v" type: DT_RESOURCE }
        input_arg { name: "delta" type: DT_FLOAT }
      }
    }
  }
)pb";

constexpr char kInputs[] = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "shape"
      value { shape { unknown_rank: true } }
    }
  }
  node {
    name: "y"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "shape"
      value { shape { unknown_rank: true } }
    }
  }
  node {
    name: "p"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "shape"
      value { shape { unknown_rank: true } }
    }
  }
)pb";

tensorflow::GraphDef ParseGraph(const std::string& nodes) {
  tensorflow::GraphDef def;
  const std::string text = std::string(kLibrary) + kInputs + nodes;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def)) << nodes;
  return def;
}

void Import(const std::string& nodes, Graph* g) { ImportGraphDef(ParseGraph(nodes), g); }

float RunScalar(Session& s, const std::string& fetch, std::vector<std::pair<std::string, Tensor>> feeds) {
  return s.Run(feeds, {fetch}, {})[0].scalar<float>();
}

constexpr char kCall[] = R"pb(
  node {
    name: "call"
    op: "PartitionedCall"
    input: "x"
    input: "y"
    attr {
      key: "Tin"
      value { list { type: DT_FLOAT type: DT_FLOAT } }
    }
    attr {
      key: "Tout"
      value { list { type: DT_FLOAT } }
    }
    attr {
      key: "f"
      value { func { name: "mul_add" } }
    }
  }
  node {
    name: "after"
    op: "Neg"
    input: "call"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

TEST(FunctionLowering, PartitionedCallRunsAndIsFetchedAndFedByItsName) {
  Graph g;
  Import(kCall, &g);
  const int nodes = g.num_nodes();
  Session s(g);
  EXPECT_FLOAT_EQ(RunScalar(s, "call:0", {{"x:0", Tensor::Scalar(3.0f)}, {"y:0", Tensor::Scalar(4.0f)}}),
                  15.0f);
  EXPECT_FLOAT_EQ(RunScalar(s, "after", {{"x:0", Tensor::Scalar(3.0f)}, {"y:0", Tensor::Scalar(4.0f)}}),
                  -15.0f);
  EXPECT_FLOAT_EQ(RunScalar(s, "after", {{"call:0", Tensor::Scalar(2.0f)}}), -2.0f);  // x and y not needed
  // The user's graph is not rewritten.
  EXPECT_EQ(g.num_nodes(), nodes);
  EXPECT_EQ(g.GetOperationByName("call").type(), "PartitionedCall");
}

TEST(FunctionLowering, LoweredGraphHoldsTheBodyAndTheBoundaryIdentitiesOnly) {
  const tensorflow::GraphDef def = ParseGraph(kCall);
  const tensorflow::GraphDef lowered = LowerFunctionCalls(def);
  // mul_add's 2 nodes, 2 input and 1 output Identity, the IdentityN standing for the call.
  EXPECT_EQ(lowered.node_size(), def.node_size() - 1 + 2 + 2 + 1 + 1);
  std::map<std::string, std::string> op_of;
  for (const auto& n : lowered.node()) {
    EXPECT_TRUE(n.op() != "PartitionedCall" && n.op() != "mul_add") << n.name();
    op_of[n.name()] = n.op();
  }
  EXPECT_EQ(op_of["call"], "IdentityN");
  EXPECT_EQ(op_of["call/m"], "Mul");
  EXPECT_EQ(op_of["call/a"], "AddV2");
  EXPECT_EQ(op_of["call/input/_0"], "Identity");
  EXPECT_EQ(op_of["call/input/_1"], "Identity");
  EXPECT_EQ(op_of["call/output/_0"], "Identity");
}

TEST(FunctionLowering, NestedCallsByOpNameAndPolymorphicAttrs) {
  Graph g;
  Import(R"pb(
           node {
             name: "sq"
             op: "PartitionedCall"
             input: "x"
             attr {
               key: "Tin"
               value { list { type: DT_FLOAT } }
             }
             attr {
               key: "Tout"
               value { list { type: DT_FLOAT } }
             }
             attr {
               key: "f"
               value { func { name: "square_plus" } }
             }
           }
           node {
             name: "two_f"
             op: "PartitionedCall"
             input: "sq"
             attr {
               key: "Tin"
               value { list { type: DT_FLOAT } }
             }
             attr {
               key: "Tout"
               value { list { type: DT_FLOAT } }
             }
             attr {
               key: "f"
               value {
                 func {
                   name: "twice"
                   attr {
                     key: "T"
                     value { type: DT_FLOAT }
                   }
                 }
               }
             }
           }
           node {
             name: "seven"
             op: "Const"
             attr {
               key: "dtype"
               value { type: DT_INT32 }
             }
             attr {
               key: "value"
               value {
                 tensor {
                   dtype: DT_INT32
                   tensor_shape {}
                   int_val: 7
                 }
               }
             }
           }
           node {
             name: "two_i"
             op: "PartitionedCall"
             input: "seven"
             attr {
               key: "Tin"
               value { list { type: DT_INT32 } }
             }
             attr {
               key: "Tout"
               value { list { type: DT_INT32 } }
             }
             attr {
               key: "f"
               value {
                 func {
                   name: "twice"
                   attr {
                     key: "T"
                     value { type: DT_INT32 }
                   }
                 }
               }
             }
           }
         )pb",
         &g);
  Session s(g);
  EXPECT_FLOAT_EQ(RunScalar(s, "two_f", {{"x:0", Tensor::Scalar(3.0f)}}), 24.0f);  // 2 * (3 * 3 + 3)
  const std::vector<std::pair<std::string, Tensor>> no_feeds;
  EXPECT_EQ(s.Run(no_feeds, {"two_i"}, {})[0].scalar<int32_t>(), 14);
  // The call by op name inside square_plus is lowered too, and named under its caller.
  std::map<std::string, std::string> op_of;
  const tensorflow::GraphDef lowered = LowerFunctionCalls(g.ToGraphDef());
  for (const auto& n : lowered.node()) op_of[n.name()] = n.op();
  EXPECT_EQ(op_of["sq/inner"], "IdentityN");
  EXPECT_EQ(op_of["sq/inner/m"], "Mul");
}

constexpr char kIf[] = R"pb(
  node {
    name: "cond"
    op: "If"
    input: "p"
    input: "x"
    attr {
      key: "Tcond"
      value { type: DT_INT32 }
    }
    attr {
      key: "Tin"
      value { list { type: DT_FLOAT } }
    }
    attr {
      key: "Tout"
      value { list { type: DT_FLOAT } }
    }
    attr {
      key: "then_branch"
      value { func { name: "square_plus" } }
    }
    attr {
      key: "else_branch"
      value { func { name: "neg" } }
    }
  }
  node {
    name: "bool_cond"
    op: "StatelessIf"
    input: "b"
    attr {
      key: "Tcond"
      value { type: DT_BOOL }
    }
    attr {
      key: "Tin"
      value { list {} }
    }
    attr {
      key: "Tout"
      value { list { type: DT_FLOAT } }
    }
    attr {
      key: "then_branch"
      value { func { name: "ten" } }
    }
    attr {
      key: "else_branch"
      value { func { name: "ten" } }
    }
  }
  node {
    name: "b"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_BOOL }
    }
    attr {
      key: "shape"
      value { shape {} }
    }
  }
)pb";

TEST(FunctionLowering, IfTakesTheBranchOfItsPredicatesTruth) {
  Graph g;
  Import(kIf, &g);
  Session s(g);
  const Tensor x = Tensor::Scalar(3.0f);
  EXPECT_FLOAT_EQ(RunScalar(s, "cond", {{"p:0", Tensor::Scalar<int32_t>(5)}, {"x:0", x}}), 12.0f);
  EXPECT_FLOAT_EQ(RunScalar(s, "cond", {{"p:0", Tensor::Scalar<int32_t>(0)}, {"x:0", x}}), -3.0f);
  // Not a scalar: true when it has elements, as TF's If.
  EXPECT_FLOAT_EQ(RunScalar(s, "cond", {{"p:0", Tensor::FromVector<int32_t>({0, 0})}, {"x:0", x}}), 12.0f);
  EXPECT_FLOAT_EQ(RunScalar(s, "cond", {{"p:0", Tensor::FromVector<int32_t>({})}, {"x:0", x}}), -3.0f);
  // Branches without inputs: their constants run only behind the branch's pivot.
  EXPECT_FLOAT_EQ(RunScalar(s, "bool_cond", {{"b:0", Tensor::Scalar(true)}}), 10.0f);
  EXPECT_FLOAT_EQ(RunScalar(s, "bool_cond", {{"b:0", Tensor::Scalar(false)}}), 10.0f);
}

constexpr char kWhile[] = R"pb(
  node {
    name: "zero"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape {}
          float_val: 0
        }
      }
    }
  }
  node {
    name: "loop"
    op: "StatelessWhile"
    input: "x"
    input: "zero"
    attr {
      key: "T"
      value { list { type: DT_FLOAT type: DT_FLOAT } }
    }
    attr {
      key: "cond"
      value { func { name: "less_than_10" } }
    }
    attr {
      key: "body"
      value { func { name: "step" } }
    }
    attr {
      key: "parallel_iterations"
      value { i: 3 }
    }
  }
  node {
    name: "loop_with_cond"
    op: "While"
    input: "x"
    input: "zero"
    attr {
      key: "T"
      value { list { type: DT_FLOAT type: DT_FLOAT } }
    }
    attr {
      key: "cond"
      value { func { name: "less_than_10" } }
    }
    attr {
      key: "body"
      value { func { name: "step_with_cond" } }
    }
  }
)pb";

TEST(FunctionLowering, WhileLoopsUntilItsCondIsFalse) {
  Graph g;
  Import(kWhile, &g);
  Session s(g);
  std::vector<Tensor> out = s.Run({{"x:0", Tensor::Scalar(0.0f)}}, {"loop:0", "loop:1"}, {});
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 10.0f);
  EXPECT_FLOAT_EQ(out[1].scalar<float>(), 45.0f);                           // 0 + 1 + ... + 9
  out = s.Run({{"x:0", Tensor::Scalar(12.0f)}}, {"loop:0", "loop:1"}, {});  // no iteration
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 12.0f);
  EXPECT_FLOAT_EQ(out[1].scalar<float>(), 0.0f);
  // An If in the body, calling a function that calls a function: i*i+i for i < 5, else -i.
  float expected = 0;
  for (int i = 0; i < 10; ++i) expected += i < 5 ? i * i + i : -i;
  EXPECT_FLOAT_EQ(RunScalar(s, "loop_with_cond:1", {{"x:0", Tensor::Scalar(0.0f)}}), expected);

  const tensorflow::GraphDef lowered = LowerFunctionCalls(ParseGraph(kWhile));
  int enters = 0;
  for (const auto& n : lowered.node()) {
    if (n.op() != "Enter" || n.name().rfind("loop/", 0) != 0) continue;
    ++enters;
    EXPECT_EQ(n.attr().at("frame_name").s(), "loop");
    EXPECT_EQ(n.attr().at("parallel_iterations").i(), 3);
  }
  EXPECT_EQ(enters, 2);
}

TEST(FunctionLowering, CaseRunsTheIndexedBranchAndTheLastForOthers) {
  Graph g;
  Import(R"pb(
           node {
             name: "case"
             op: "Case"
             input: "p"
             input: "x"
             attr {
               key: "Tin"
               value { list { type: DT_FLOAT } }
             }
             attr {
               key: "Tout"
               value { list { type: DT_FLOAT } }
             }
             attr {
               key: "branches"
               value {
                 list {
                   func { name: "neg" }
                   func { name: "square_plus" }
                   func {
                     name: "twice"
                     attr {
                       key: "T"
                       value { type: DT_FLOAT }
                     }
                   }
                 }
               }
             }
           }
         )pb",
         &g);
  Session s(g);
  auto run = [&](int index) {
    return RunScalar(s, "case", {{"p:0", Tensor::Scalar<int32_t>(index)}, {"x:0", Tensor::Scalar(3.0f)}});
  };
  EXPECT_FLOAT_EQ(run(0), -3.0f);
  EXPECT_FLOAT_EQ(run(1), 12.0f);
  EXPECT_FLOAT_EQ(run(2), 6.0f);
  EXPECT_FLOAT_EQ(run(7), 6.0f);
  EXPECT_FLOAT_EQ(run(-1), 6.0f);
}

TEST(FunctionLowering, StatefulCallUpdatesAResourceVariableBeforeItsControlOutputs) {
  Graph g;
  Import(R"pb(
           node {
             name: "v"
             op: "VarHandleOp"
             attr {
               key: "dtype"
               value { type: DT_FLOAT }
             }
             attr {
               key: "shape"
               value { shape {} }
             }
             attr {
               key: "shared_name"
               value { s: "v" }
             }
           }
           node {
             name: "init"
             op: "AssignVariableOp"
             input: "v"
             input: "x"
             attr {
               key: "dtype"
               value { type: DT_FLOAT }
             }
           }
           node {
             name: "call"
             op: "StatefulPartitionedCall"
             input: "v"
             input: "y"
             attr {
               key: "Tin"
               value { list { type: DT_RESOURCE type: DT_FLOAT } }
             }
             attr {
               key: "Tout"
               value { list { type: DT_FLOAT } }
             }
             attr {
               key: "f"
               value { func { name: "bump" } }
             }
           }
           node { name: "after_call" op: "NoOp" input: "^call" }
           node {
             name: "read"
             op: "ReadVariableOp"
             input: "v"
             attr {
               key: "dtype"
               value { type: DT_FLOAT }
             }
           }
         )pb",
         &g);
  Session s(g);
  s.Run({{"x:0", Tensor::Scalar(1.0f)}}, {}, {"init"});
  EXPECT_FLOAT_EQ(RunScalar(s, "call", {{"y:0", Tensor::Scalar(2.0f)}}), 1.0f);  // the value before
  EXPECT_FLOAT_EQ(RunScalar(s, "read", {}), 3.0f);
  s.Run({{"y:0", Tensor::Scalar(5.0f)}}, {}, {"after_call"});  // the control output runs the update
  EXPECT_FLOAT_EQ(RunScalar(s, "read", {}), 8.0f);
}

TEST(FunctionLowering, ControlInputsOfACallGateItsBody) {
  Graph g;
  Import(R"pb(
           node {
             name: "v"
             op: "VarHandleOp"
             attr {
               key: "dtype"
               value { type: DT_FLOAT }
             }
             attr {
               key: "shape"
               value { shape {} }
             }
             attr {
               key: "shared_name"
               value { s: "w" }
             }
           }
           node {
             name: "init"
             op: "AssignVariableOp"
             input: "v"
             input: "x"
             attr {
               key: "dtype"
               value { type: DT_FLOAT }
             }
           }
           node {
             name: "c"
             op: "PartitionedCall"
             input: "^init"
             attr {
               key: "Tin"
               value { list {} }
             }
             attr {
               key: "Tout"
               value { list { type: DT_FLOAT } }
             }
             attr {
               key: "f"
               value { func { name: "ten" } }
             }
           }
         )pb",
         &g);
  Session s(g);
  EXPECT_FLOAT_EQ(RunScalar(s, "c", {{"x:0", Tensor::Scalar(4.0f)}}), 10.0f);
  const tensorflow::GraphDef lowered = LowerFunctionCalls(g.ToGraphDef());
  bool gated = false;
  for (const auto& n : lowered.node()) {
    if (n.name() == "c/c") gated = n.input_size() == 1 && n.input(0) == "^c/input_control_node";
  }
  EXPECT_TRUE(gated);
}

TEST(FunctionLowering, IfWithoutOutputsRunsTheSideEffectsOfTheTakenBranchOnly) {
  Graph g;
  Import(R"pb(
           node {
             name: "v"
             op: "VarHandleOp"
             attr {
               key: "dtype"
               value { type: DT_FLOAT }
             }
             attr {
               key: "shape"
               value { shape {} }
             }
             attr {
               key: "shared_name"
               value { s: "u" }
             }
           }
           node {
             name: "init"
             op: "AssignVariableOp"
             input: "v"
             input: "x"
             attr {
               key: "dtype"
               value { type: DT_FLOAT }
             }
           }
           node {
             name: "maybe_add"
             op: "If"
             input: "b"
             input: "v"
             input: "y"
             attr {
               key: "Tcond"
               value { type: DT_BOOL }
             }
             attr {
               key: "Tin"
               value { list { type: DT_RESOURCE type: DT_FLOAT } }
             }
             attr {
               key: "Tout"
               value { list {} }
             }
             attr {
               key: "then_branch"
               value { func { name: "add_to" } }
             }
             attr {
               key: "else_branch"
               value { func { name: "do_nothing" } }
             }
           }
           node {
             name: "b"
             op: "Placeholder"
             attr {
               key: "dtype"
               value { type: DT_BOOL }
             }
             attr {
               key: "shape"
               value { shape {} }
             }
           }
           node {
             name: "read"
             op: "ReadVariableOp"
             input: "v"
             attr {
               key: "dtype"
               value { type: DT_FLOAT }
             }
           }
         )pb",
         &g);
  Session s(g);
  s.Run({{"x:0", Tensor::Scalar(1.0f)}}, {}, {"init"});
  s.Run({{"b:0", Tensor::Scalar(true)}, {"y:0", Tensor::Scalar(2.0f)}}, {}, {"maybe_add"});
  EXPECT_FLOAT_EQ(RunScalar(s, "read", {}), 3.0f);
  s.Run({{"b:0", Tensor::Scalar(false)}, {"y:0", Tensor::Scalar(2.0f)}}, {}, {"maybe_add"});
  EXPECT_FLOAT_EQ(RunScalar(s, "read", {}), 3.0f);
}

TEST(FunctionLowering, NodesAddedAfterAnEarlierRunAreLoweredToo) {
  Graph g;
  Import(kCall, &g);
  Session s(g);
  EXPECT_FLOAT_EQ(RunScalar(s, "call:0", {{"x:0", Tensor::Scalar(1.0f)}, {"y:0", Tensor::Scalar(2.0f)}}),
                  3.0f);
  {
    auto scope = g.AsDefault();
    NodeBuilder("Square", "squared").Input(g.GetTensorByName("call:0")).Finalize();
  }
  EXPECT_FLOAT_EQ(RunScalar(s, "squared", {{"x:0", Tensor::Scalar(1.0f)}, {"y:0", Tensor::Scalar(2.0f)}}),
                  9.0f);
  EXPECT_FLOAT_EQ(RunScalar(s, "call:0", {{"x:0", Tensor::Scalar(2.0f)}, {"y:0", Tensor::Scalar(2.0f)}}),
                  6.0f);
}

tensorflow::GraphDef WithNode(const std::string& node) { return ParseGraph(node); }

TEST(FunctionLowering, BadCallsAreInvalidArgumentsNamingNodeAndFunction) {
  ExpectInvalidArgument(
      [] {
        Graph g;
        Import(R"pb(node {
                      name: "loop"
                      op: "PartitionedCall"
                      input: "x"
                      attr {
                        key: "Tin"
                        value { list { type: DT_FLOAT } }
                      }
                      attr {
                        key: "Tout"
                        value { list { type: DT_FLOAT } }
                      }
                      attr {
                        key: "f"
                        value { func { name: "forever" } }
                      }
                    })pb",
               &g);
        Session s(g);
        s.Run({{"x:0", Tensor::Scalar(1.0f)}}, {"loop"}, {});
      },
      {"'forever'", "recursive"});
  ExpectInvalidArgument(
      [] {
        LowerFunctionCalls(WithNode(R"pb(node {
                                           name: "call"
                                           op: "PartitionedCall"
                                           input: "x"
                                           attr {
                                             key: "Tin"
                                             value { list { type: DT_FLOAT } }
                                           }
                                           attr {
                                             key: "Tout"
                                             value { list { type: DT_FLOAT } }
                                           }
                                           attr {
                                             key: "f"
                                             value { func { name: "missing" } }
                                           }
                                         })pb"));
      },
      {"'call'", "'missing'", "not in the graph's library"});
  ExpectInvalidArgument(
      [] {
        LowerFunctionCalls(WithNode(R"pb(node {
                                           name: "call"
                                           op: "PartitionedCall"
                                           input: "x"
                                           attr {
                                             key: "Tin"
                                             value { list { type: DT_FLOAT } }
                                           }
                                           attr {
                                             key: "Tout"
                                             value { list { type: DT_FLOAT } }
                                           }
                                           attr {
                                             key: "f"
                                             value { func { name: "mul_add" } }
                                           }
                                         })pb"));
      },
      {"'call'", "'mul_add'", "takes 2 inputs", "gives 1"});
  ExpectInvalidArgument(
      [] {
        LowerFunctionCalls(WithNode(R"pb(node {
                                           name: "call"
                                           op: "PartitionedCall"
                                           input: "p"
                                           attr {
                                             key: "Tin"
                                             value { list { type: DT_INT32 } }
                                           }
                                           attr {
                                             key: "Tout"
                                             value { list { type: DT_FLOAT } }
                                           }
                                           attr {
                                             key: "f"
                                             value { func { name: "neg" } }
                                           }
                                         })pb"));
      },
      {"'call'", "'neg'", "input dtypes [int32]", "[float]"});
  ExpectInvalidArgument(
      [] {
        LowerFunctionCalls(WithNode(R"pb(node {
                                           name: "call"
                                           op: "PartitionedCall"
                                           input: "x"
                                           attr {
                                             key: "Tin"
                                             value { list { type: DT_FLOAT } }
                                           }
                                           attr {
                                             key: "Tout"
                                             value { list { type: DT_FLOAT } }
                                           }
                                           attr {
                                             key: "f"
                                             value { func { name: "twice" } }
                                           }
                                         })pb"));
      },
      {"'call'", "'twice'", "attr 'T'"});
}

// A library of `depth` float functions f0 .. f<depth-1>, where each calls the next `calls`
// times (summing the results when it calls more than once) and the last returns its input;
// the graph calls f0 once by op name.
tensorflow::GraphDef ChainOfCalls(int depth, int calls) {
  tensorflow::GraphDef g;
  tensorflow::NodeDef* x = g.add_node();
  x->set_name("x");
  x->set_op("Placeholder");
  (*x->mutable_attr())["dtype"].set_type(tensorflow::DT_FLOAT);
  tensorflow::NodeDef* call = g.add_node();
  call->set_name("call");
  call->set_op("f0");
  call->add_input("x");
  for (int i = 0; i < depth; ++i) {
    tensorflow::FunctionDef* f = g.mutable_library()->add_function();
    f->mutable_signature()->set_name(StrCat("f", i));
    auto* in = f->mutable_signature()->add_input_arg();
    in->set_name("x");
    in->set_type(tensorflow::DT_FLOAT);
    auto* out = f->mutable_signature()->add_output_arg();
    out->set_name("y");
    out->set_type(tensorflow::DT_FLOAT);
    if (i + 1 == depth) {
      (*f->mutable_ret())["y"] = "x";
      continue;
    }
    std::string result;
    for (int c = 0; c < calls; ++c) {
      tensorflow::NodeDef* n = f->add_node_def();
      n->set_name(StrCat("c", c));
      n->set_op(StrCat("f", i + 1));
      n->add_input("x");
      const std::string y = StrCat("c", c, ":y:0");
      if (result.empty()) {
        result = y;
        continue;
      }
      tensorflow::NodeDef* sum = f->add_node_def();
      sum->set_name(StrCat("s", c));
      sum->set_op("AddV2");
      sum->add_input(result);
      sum->add_input(y);
      (*sum->mutable_attr())["T"].set_type(tensorflow::DT_FLOAT);
      result = StrCat("s", c, ":z:0");
    }
    (*f->mutable_ret())["y"] = result;
  }
  return g;
}

TEST(FunctionLowering, NestingIsBoundedNotAStackOverflow) {
  EXPECT_NO_THROW(LowerFunctionCalls(ChainOfCalls(50, 1)));
  ExpectInvalidArgument([] { LowerFunctionCalls(ChainOfCalls(10000, 1)); },
                        {"'call'", "more than 100 deep", "from 'f0' to 'f100'"});
}

TEST(FunctionLowering, InlinedSizeIsBoundedNotExponential) {
  // 2^12 bodies inline; 2^40 would not fit in memory.
  EXPECT_NO_THROW(LowerFunctionCalls(ChainOfCalls(12, 2)));
  testing::ExpectError<ResourceExhaustedError>([] { LowerFunctionCalls(ChainOfCalls(40, 2)); },
                                               {"more than 1048576 nodes (reached at node 'call')"});
}

}  // namespace
}  // namespace flowtrain
