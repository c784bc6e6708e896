// GraphFunctionRuntime (runtime/graph_function_runtime.h) and the datasets over functions of
// the graph's library it serves (MapDataset, ParallelMapDatasetV2, FilterDataset,
// FlatMapDataset, InterleaveDataset, ParallelInterleaveDatasetV4): attrs, nested calls,
// captured inputs, errors naming the function, and each iterator's save/restore.
#include "flowtrain/runtime/graph_function_runtime.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectError;
using testing::ExpectInvalidArgument;
using testing::Values;

// twice[T](x) = x + x; mul_add(x, y) = x * y + x; square_plus(x) = mul_add(x, x) (a nested
// call by op name); bad_reshape(x) reshapes a scalar to [7]; scale_shift(x, c) = x * c + 1;
// is_even(x) = x mod 2 == 0; repeat_self(x) = Dataset.from_tensors(x).repeat(x + 1);
// upto(x) = Dataset.range(0, x + 1).
constexpr char kLibrary[] = R"pb(
  function {
    signature {
      name: "twice"
      input_arg { name: "x" type_attr: "T" }
      output_arg { name: "y" type_attr: "T" }
      attr { name: "T" type: "type" }
    }
    node_def {
      name: "a"
      op: "AddV2"
      input: "x"
      input: "x"
      attr {
        key: "T"
        value { placeholder: "T" }
      }
    }
    ret { key: "y" value: "a:z:0" }
  }
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
      output_arg { name: "y" type: DT_FLOAT }
    }
    node_def { name: "call" op: "mul_add" input: "x" input: "x" }
    ret { key: "y" value: "call:z:0" }
  }
  function {
    signature {
      name: "bad_reshape"
      input_arg { name: "x" type: DT_INT64 }
      output_arg { name: "y" type: DT_INT64 }
    }
    node_def {
      name: "shape"
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
            tensor_shape { dim { size: 1 } }
            int_val: 7
          }
        }
      }
    }
    node_def {
      name: "r"
      op: "Reshape"
      input: "x"
      input: "shape:output:0"
      attr {
        key: "T"
        value { type: DT_INT64 }
      }
      attr {
        key: "Tshape"
        value { type: DT_INT32 }
      }
    }
    ret { key: "y" value: "r:output:0" }
  }
  function {
    signature {
      name: "scale_shift"
      input_arg { name: "x" type: DT_INT64 }
      input_arg { name: "c" type: DT_INT64 }
      output_arg { name: "y" type: DT_INT64 }
    }
    node_def {
      name: "one"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_INT64 }
      }
      attr {
        key: "value"
        value {
          tensor {
            dtype: DT_INT64
            tensor_shape {}
            int64_val: 1
          }
        }
      }
    }
    node_def {
      name: "m"
      op: "Mul"
      input: "x"
      input: "c"
      attr {
        key: "T"
        value { type: DT_INT64 }
      }
    }
    node_def {
      name: "a"
      op: "AddV2"
      input: "m:z:0"
      input: "one:output:0"
      attr {
        key: "T"
        value { type: DT_INT64 }
      }
    }
    ret { key: "y" value: "a:z:0" }
  }
  function {
    signature {
      name: "is_even"
      input_arg { name: "x" type: DT_INT64 }
      output_arg { name: "keep" type: DT_BOOL }
    }
    node_def {
      name: "two"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_INT64 }
      }
      attr {
        key: "value"
        value {
          tensor {
            dtype: DT_INT64
            tensor_shape {}
            int64_val: 2
          }
        }
      }
    }
    node_def {
      name: "zero"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_INT64 }
      }
      attr {
        key: "value"
        value {
          tensor {
            dtype: DT_INT64
            tensor_shape {}
            int64_val: 0
          }
        }
      }
    }
    node_def {
      name: "mod"
      op: "FloorMod"
      input: "x"
      input: "two:output:0"
      attr {
        key: "T"
        value { type: DT_INT64 }
      }
    }
    node_def {
      name: "eq"
      op: "Equal"
      input: "mod:z:0"
      input: "zero:output:0"
      attr {
        key: "T"
        value { type: DT_INT64 }
      }
    }
    ret { key: "keep" value: "eq:z:0" }
  }
  function {
    signature {
      name: "repeat_self"
      input_arg { name: "x" type: DT_INT64 }
      output_arg { name: "ds" type: DT_VARIANT }
    }
    node_def {
      name: "one"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_INT64 }
      }
      attr {
        key: "value"
        value {
          tensor {
            dtype: DT_INT64
            tensor_shape {}
            int64_val: 1
          }
        }
      }
    }
    node_def {
      name: "count"
      op: "AddV2"
      input: "x"
      input: "one:output:0"
      attr {
        key: "T"
        value { type: DT_INT64 }
      }
    }
    node_def {
      name: "t"
      op: "TensorDataset"
      input: "x"
      attr {
        key: "Toutput_types"
        value { list { type: DT_INT64 } }
      }
      attr {
        key: "output_shapes"
        value { list { shape {} } }
      }
    }
    node_def {
      name: "r"
      op: "RepeatDataset"
      input: "t:handle:0"
      input: "count:z:0"
      attr {
        key: "output_types"
        value { list { type: DT_INT64 } }
      }
      attr {
        key: "output_shapes"
        value { list { shape {} } }
      }
    }
    ret { key: "ds" value: "r:handle:0" }
  }
  function {
    signature {
      name: "upto"
      input_arg { name: "x" type: DT_INT64 }
      output_arg { name: "ds" type: DT_VARIANT }
    }
    node_def {
      name: "one"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_INT64 }
      }
      attr {
        key: "value"
        value {
          tensor {
            dtype: DT_INT64
            tensor_shape {}
            int64_val: 1
          }
        }
      }
    }
    node_def {
      name: "zero"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_INT64 }
      }
      attr {
        key: "value"
        value {
          tensor {
            dtype: DT_INT64
            tensor_shape {}
            int64_val: 0
          }
        }
      }
    }
    node_def {
      name: "stop"
      op: "AddV2"
      input: "x"
      input: "one:output:0"
      attr {
        key: "T"
        value { type: DT_INT64 }
      }
    }
    node_def {
      name: "r"
      op: "RangeDataset"
      input: "zero:output:0"
      input: "stop:z:0"
      input: "one:output:0"
      attr {
        key: "output_types"
        value { list { type: DT_INT64 } }
      }
      attr {
        key: "output_shapes"
        value { list { shape {} } }
      }
    }
    ret { key: "ds" value: "r:handle:0" }
  }
)pb";

tensorflow::FunctionDefLibrary Library() {
  tensorflow::FunctionDefLibrary library;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kLibrary, &library));
  return library;
}

std::shared_ptr<GraphFunctionRuntime> MakeRuntime(std::shared_ptr<ResourceMgr> resources) {
  FunctionLibrary library;
  library.AddLibrary(Library());
  return GraphFunctionRuntime::Create(library, std::move(resources));
}

tensorflow::NameAttrList Func(const std::string& name) {
  tensorflow::NameAttrList f;
  f.set_name(name);
  return f;
}

TEST(GraphFunctionRuntime, BindsTheFunctionsAttrs) {
  auto resources = std::make_shared<ResourceMgr>();
  auto runtime = MakeRuntime(resources);
  tensorflow::NameAttrList f = Func("twice");
  (*f.mutable_attr())["T"].set_type(tensorflow::DT_FLOAT);
  auto twice_float = runtime->Instantiate(f);
  EXPECT_EQ(twice_float->input_types(), std::vector<DataType>{DT_FLOAT});
  EXPECT_EQ(twice_float->Run({Tensor::Scalar<float>(1.5f)})[0].scalar<float>(), 3.f);
  EXPECT_EQ(runtime->Instantiate(f), twice_float);  // cached while held
  (*f.mutable_attr())["T"].set_type(tensorflow::DT_INT32);
  auto twice_int = runtime->Instantiate(f);
  EXPECT_EQ(twice_int->output_types(), std::vector<DataType>{DT_INT32});
  EXPECT_EQ(twice_int->Run({Tensor::Scalar<int32_t>(21)})[0].scalar<int32_t>(), 42);
  // Without T the signature has no dtype.
  ExpectInvalidArgument([&] { runtime->Instantiate(Func("twice")); }, {"twice", "'T'"});
}

TEST(GraphFunctionRuntime, InlinesNestedCallsAndRunsFromManyThreads) {
  auto resources = std::make_shared<ResourceMgr>();
  auto runtime = MakeRuntime(resources);
  EXPECT_EQ(runtime->Run("square_plus", {Tensor::Scalar<float>(3.f)})[0].scalar<float>(), 12.f);
  auto f = runtime->Instantiate(Func("mul_add"));
  std::vector<std::thread> threads;
  std::vector<float> results(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 50; ++k) {
        results[i] = f->Run({Tensor::Scalar<float>(float(i)), Tensor::Scalar<float>(2.f)})[0].scalar<float>();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(results[i], 3.f * i);
}

TEST(GraphFunctionRuntime, RefusesWrongArgumentsAndMissingFunctions) {
  auto resources = std::make_shared<ResourceMgr>();
  auto runtime = MakeRuntime(resources);
  auto f = runtime->Instantiate(Func("mul_add"));
  ExpectInvalidArgument([&] { f->Run({Tensor::Scalar<float>(1.f)}); },
                        {"Function mul_add takes 2 arguments [float, float], got 1"});
  ExpectInvalidArgument(
      [&] {
        f->Run({Tensor::Scalar<float>(1.f), Tensor::Scalar<int32_t>(1)});
      },
      {"mul_add", "argument 1 must be float, got int32"});
  ExpectError<NotFoundError>([&] { runtime->Instantiate(Func("no_such_fn")); },
                             {"Function no_such_fn is not in the graph's function library"});
  // An error of the body keeps its code and names the function and the node.
  ExpectInvalidArgument([&] { runtime->Run("bad_reshape", {Tensor::Scalar<int64_t>(1)}); },
                        {"In function bad_reshape: ", "bad_reshape/r"});
  // Once the resources it was given are gone, the runtime says so.
  resources.reset();
  ExpectError<FailedPreconditionError>(
      [&] {
        f->Run({Tensor::Scalar<float>(1.f), Tensor::Scalar<float>(1.f)});
      },
      {"mul_add", "session"});
}

// ---- The datasets over library functions, in a session.

AttrValue FuncAttr(const std::string& name) {
  AttrValue v;
  v.mutable_func()->set_name(name);
  return v;
}

const std::vector<PartialTensorShape> kScalar = {PartialTensorShape({})};

// A dataset op over library function `function` on `input`, with `captured` and then `extra`
// inputs, yielding int64 scalars.
data::Dataset Over(const std::string& op, const data::Dataset& input, const std::string& function,
                   const std::vector<Output>& captured, const std::vector<Output>& extra = {},
                   const std::string& func_attr = "f") {
  std::vector<DataType> captured_types;
  for (const Output& c : captured) captured_types.push_back(c.dtype());
  NodeBuilder b(op, op);
  b.Input(input.variant()).Input(captured);
  for (const Output& e : extra) b.Input(e);
  Output v = b.SetAttr(func_attr, FuncAttr(function))
                 .Attr("Targuments", captured_types)
                 .Attr("output_types", std::vector<DataType>{DT_INT64})
                 .Attr("output_shapes", kScalar)
                 .Finalize();
  return data::Dataset::FromVariant(v, {DT_INT64}, kScalar);
}

using Rows = std::vector<int64_t>;

Rows Drain(Session& sess, const std::vector<Output>& next, int limit = 1000) {
  Rows out;
  try {
    for (int i = 0; i < limit; ++i) out.push_back(sess.Run({}, next)[0].scalar<int64_t>());
  } catch (const OutOfRangeError&) {
  }
  return out;
}

// The elements of the pipeline `build` makes in a graph holding the library; then the same
// pipeline saved after `taken` elements and restored into a fresh graph and session must
// give the same rest.
Rows RunAndCheckRestore(const std::function<data::Dataset()>& build, int taken) {
  Rows all, seen;
  Tensor state;
  {
    Graph g;
    g.library().AddLibrary(Library());
    auto as_default = g.AsDefault();
    data::Iterator it = build().MakeInitializableIterator();
    auto next = it.GetNext();
    Output save = it.Serialize();
    Session sess(g);
    sess.Run({}, {}, {it.initializer()});
    all = Drain(sess, next);
    sess.Run({}, {}, {it.initializer()});
    seen = Drain(sess, next, taken);
    state = sess.Run({}, {save})[0];
  }
  Graph g;
  g.library().AddLibrary(Library());
  auto as_default = g.AsDefault();
  data::Iterator it = build().MakeInitializableIterator();
  auto next = it.GetNext();
  Output state_in = ops::Placeholder(DT_STRING, PartialTensorShape({}), "state");
  Operation restore = it.Deserialize(state_in);
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  sess.Run({{state_in, state}}, {}, {restore});
  Rows rest = Drain(sess, next);
  seen.insert(seen.end(), rest.begin(), rest.end());
  EXPECT_EQ(seen, all) << "after restoring at element " << taken;
  return all;
}

TEST(LibraryFunctionDatasets, MapPassesTheCapturedInputsAfterTheElement) {
  Rows rows = RunAndCheckRestore(
      [] { return Over("MapDataset", data::Dataset::Range(0, 5), "scale_shift", {ops::Const(int64_t{10})}); },
      2);
  EXPECT_EQ(rows, (Rows{1, 11, 21, 31, 41}));
  // ParallelMapDatasetV2 keeps the order.
  rows = RunAndCheckRestore(
      [] {
        return Over("ParallelMapDatasetV2", data::Dataset::Range(0, 40), "scale_shift",
                    {ops::Const(int64_t{3})}, {ops::Const(int64_t{4})});
      },
      17);
  ASSERT_EQ(rows.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(rows[i], 3 * i + 1);
}

TEST(LibraryFunctionDatasets, FilterKeepsWhatThePredicateFunctionAccepts) {
  Rows rows = RunAndCheckRestore(
      [] { return Over("FilterDataset", data::Dataset::Range(0, 9), "is_even", {}, {}, "predicate"); }, 2);
  EXPECT_EQ(rows, (Rows{0, 2, 4, 6, 8}));
}

TEST(LibraryFunctionDatasets, FlatMapRunsEachDatasetToItsEnd) {
  Rows rows =
      RunAndCheckRestore([] { return Over("FlatMapDataset", data::Dataset::Range(0, 4), "upto", {}); }, 4);
  EXPECT_EQ(rows, (Rows{0, 0, 1, 0, 1, 2, 0, 1, 2, 3}));
}

// TF 2.21's own outputs for range(4).interleave(lambda v: from_tensors(v).repeat(v + 1), ...).
TEST(LibraryFunctionDatasets, InterleaveCyclesInBlocksAsTensorFlowDoes) {
  auto interleave = [](const std::string& op, int64_t block, std::vector<Output> extra = {}) {
    std::vector<Output> inputs = {ops::Const(int64_t{2}), ops::Const(block)};
    inputs.insert(inputs.end(), extra.begin(), extra.end());
    return Over(op, data::Dataset::Range(0, 4), "repeat_self", {}, inputs);
  };
  for (int taken : {3, 6}) {
    EXPECT_EQ(RunAndCheckRestore([&] { return interleave("InterleaveDataset", 2); }, taken),
              (Rows{0, 1, 1, 2, 2, 2, 3, 3, 3, 3}));
    EXPECT_EQ(RunAndCheckRestore(
                  [&] {
                    return interleave(
                        "ParallelInterleaveDatasetV4", 1,
                        {ops::Const(int64_t{-1}), ops::Const(int64_t{-1}), ops::Const(int64_t{2})});
                  },
                  taken),
              (Rows{0, 1, 1, 2, 2, 3, 2, 3, 3, 3}));
  }
  Graph g;
  g.library().AddLibrary(Library());
  auto as_default = g.AsDefault();
  data::Iterator it = interleave("InterleaveDataset", 0).MakeInitializableIterator();
  Session sess(g);
  ExpectInvalidArgument([&] { sess.Run({}, {}, {it.initializer()}); },
                        "block_length must be greater than zero.");
}

TEST(LibraryFunctionDatasets, ErrorsNameTheFunction) {
  Graph g;
  g.library().AddLibrary(Library());
  auto as_default = g.AsDefault();
  data::Iterator bad =
      Over("MapDataset", data::Dataset::Range(0, 3), "bad_reshape", {}).MakeInitializableIterator();
  data::Iterator missing =
      Over("MapDataset", data::Dataset::Range(0, 3), "not_a_function", {}).MakeInitializableIterator();
  auto next = bad.GetNext();
  Session sess(g);
  sess.Run({}, {}, {bad.initializer()});
  ExpectInvalidArgument([&] { sess.Run({}, next); }, {"In function bad_reshape: ", "bad_reshape/r"});
  ExpectError<NotFoundError>([&] { sess.Run({}, {}, {missing.initializer()}); },
                             {"'not_a_function' is neither a C++ function registered in this process nor a "
                              "function of the graph's library"});
}

TEST(LibraryFunctionDatasets, CppFunctionsStillWinByName) {
  Graph g;
  auto as_default = g.AsDefault();
  data::Dataset ds = data::Dataset::Range(0, 3).Map([](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{Tensor::Scalar<int64_t>(in[0].scalar<int64_t>() * 7)};
  });
  data::Iterator it = ds.MakeInitializableIterator();
  auto next = it.GetNext();
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  EXPECT_EQ(Drain(sess, next), (Rows{0, 7, 14}));
}

}  // namespace
}  // namespace flowtrain
