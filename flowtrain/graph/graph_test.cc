#include "flowtrain/graph/graph.h"

#include <functional>
#include <thread>

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/op_registry.h"
#include "flowtrain/graph/shape_inference.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

// Ops private to this test, so the graph layer is tested without the ops layer.
FT_REGISTER_OP("GraphTestConst")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape = []")
    .SetShapeFn(shape_fns::ShapeFromShapeAttr);
FT_REGISTER_OP("GraphTestAdd")
    .Input("x: T")
    .Input("y: T")
    .Output("z: T")
    .Attr("T: {float, double, int32}")
    .SetShapeFn(shape_fns::BroadcastBinaryOpShape);
FT_REGISTER_OP("GraphTestConcat")
    .Input("values: N * T")
    .Output("output: T")
    .Attr("N: int >= 2")
    .Attr("T: type")
    .Attr("note: string = 'x'");
FT_REGISTER_OP("GraphTestNoOutputs");
FT_REGISTER_OP("GraphTestSplit").Input("x: float").Output("a: float").Output("b: float");

Output TestConst(DataType dtype, PartialTensorShape shape = PartialTensorShape({}),
                 std::string_view name = "Const", Graph* g = nullptr) {
  NodeBuilder b("GraphTestConst", name);
  if (g != nullptr) b.Graph(g);
  return b.Attr("dtype", dtype).Attr("shape", shape).Finalize();
}

Output TestAdd(Output x, Output y, std::string_view name = "add") {
  return NodeBuilder("GraphTestAdd", name).Input(x).Input(y).Finalize();
}

TEST(OpRegistry, ParsesSpecs) {
  const tensorflow::OpDef& def = OpRegistry::Global()->Get("GraphTestConcat").def;
  ASSERT_EQ(def.input_arg_size(), 1);
  EXPECT_EQ(def.input_arg(0).number_attr(), "N");
  EXPECT_EQ(def.input_arg(0).type_attr(), "T");
  ASSERT_EQ(def.attr_size(), 3);
  EXPECT_TRUE(def.attr(0).has_minimum());
  EXPECT_EQ(def.attr(0).minimum(), 2);
  EXPECT_EQ(def.attr(2).default_value().s(), "x");
  const tensorflow::OpDef& add = OpRegistry::Global()->Get("GraphTestAdd").def;
  EXPECT_EQ(add.attr(0).allowed_values().list().type_size(), 3);
  EXPECT_THROW(OpRegistry::Global()->Get("NoSuchOp"), NotFoundError);
  EXPECT_THROW(OpRegistry::Global()->Register(OpDefBuilder("GraphTestAdd").Build()), AlreadyExistsError);
  // Before: std::invalid_argument "stoll" / std::out_of_range, not a flowtrain error.
  testing::ExpectInvalidArgument([] { OpDefBuilder("GraphTestBad").Attr("N: int >= x"); },
                                 {"GraphTestBad", "'x'"});
  testing::ExpectInvalidArgument([] { OpDefBuilder("GraphTestBad").Attr("N: int >= 99999999999999999999"); },
                                 {"99999999999999999999"});
  EXPECT_EQ(OpDefBuilder("GraphTestMin").Attr("N: int >= 2").Build().def.attr(0).minimum(), 2);
}

TEST(Graph, UniqueNamesAndScopes) {
  Graph g;
  auto as_default = g.AsDefault();
  EXPECT_EQ(TestConst(DT_FLOAT).op().name(), "Const");
  EXPECT_EQ(TestConst(DT_FLOAT).op().name(), "Const_1");
  EXPECT_EQ(TestConst(DT_FLOAT, {}, "const").op().name(), "const_2");  // case-insensitive, as TF
  {
    auto scope = g.NameScope("dense");
    EXPECT_EQ(g.CurrentNameScope(), "dense/");
    EXPECT_EQ(TestConst(DT_FLOAT, {}, "kernel").op().name(), "dense/kernel");
    {
      auto inner = g.NameScope("inner");
      EXPECT_EQ(TestConst(DT_FLOAT).op().name(), "dense/inner/Const");
    }
  }
  {
    auto scope = g.NameScope("dense");
    EXPECT_EQ(TestConst(DT_FLOAT, {}, "kernel").op().name(), "dense_1/kernel");
    auto reenter = g.NameScope("dense/");
    EXPECT_EQ(TestConst(DT_FLOAT, {}, "bias").op().name(), "dense/bias");
  }
  EXPECT_EQ(g.CurrentNameScope(), "");
  Output a = TestConst(DT_FLOAT, {}, "add");
  Output b = TestAdd(a, a);
  EXPECT_EQ(b.op().name(), "add_1");
  EXPECT_EQ(b.name(), "add_1:0");
  EXPECT_THROW(TestConst(DT_FLOAT, {}, "bad name!"), InvalidArgumentError);
}

TEST(Graph, ShapeInferenceAndErrors) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = TestConst(DT_FLOAT, PartialTensorShape({2, 3}));
  Output b = TestConst(DT_FLOAT, PartialTensorShape({3}));
  EXPECT_EQ(TestAdd(a, b).shape().DebugString(), "[2,3]");
  Output c = TestConst(DT_FLOAT, PartialTensorShape({4}));
  try {
    TestAdd(a, c, "bad_add");
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(),
                 "Dimensions must be equal, but are 3 and 4 for 'bad_add' (op: 'GraphTestAdd') "
                 "with input shapes: [2,3], [4].");
  }
  Output i = TestConst(DT_INT64);
  try {
    TestAdd(i, i);
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("not in the list of allowed values"), std::string::npos);
  }
  Output d = TestConst(DT_DOUBLE);
  EXPECT_THROW(TestAdd(a, d), InvalidArgumentError);
}

TEST(Graph, ListInputsAndAttrDefaults) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = TestConst(DT_INT32);
  Operation cat = NodeBuilder("GraphTestConcat").Input(std::vector<Output>{a, a, a}).Finalize();
  EXPECT_EQ(cat.GetAttr<int64_t>("N"), 3);
  EXPECT_EQ(cat.GetAttr<DataType>("T"), DT_INT32);
  EXPECT_EQ(cat.GetAttr<std::string>("note"), "x");
  EXPECT_THROW(NodeBuilder("GraphTestConcat").Input(std::vector<Output>{a}).Finalize(),
               InvalidArgumentError);  // N >= 2
  EXPECT_THROW(NodeBuilder("GraphTestConcat").Input(a).Finalize(), InvalidArgumentError);
  Operation split = NodeBuilder("GraphTestSplit").Input(TestConst(DT_FLOAT)).Finalize();
  EXPECT_EQ(split.num_outputs(), 2);
  EXPECT_EQ(split.output(1).name(), "GraphTestSplit:1");
  EXPECT_THROW(split.output(2), InvalidArgumentError);
}

TEST(Graph, InputsFromTwoGraphsAreRejected) {
  Graph g1, g2;
  Output a = TestConst(DT_FLOAT, {}, "Const", &g1);
  Output b = TestConst(DT_FLOAT, {}, "Const_1", &g2);
  try {
    TestAdd(a, b);
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(),
                 "Tensor(\"Const_1:0\", shape=(), dtype=float32) must be from the same graph as "
                 "Tensor(\"Const:0\", shape=(), dtype=float32).");
  }
  // An op with inputs goes to its inputs' graph, whatever the default.
  auto as_default = g2.AsDefault();
  EXPECT_EQ(TestAdd(a, a).graph(), &g1);
}

// Default-constructed handles and indices past an op's outputs throw InvalidArgument from
// every public accessor instead of dereferencing null or reading past the node's outputs.
TEST(Graph, NullAndOutOfRangeHandlesThrow) {
  const auto expect_invalid = [](const std::function<void()>& fn, std::string_view part) {
    try {
      fn();
      ADD_FAILURE() << "no InvalidArgumentError; expected one with: " << part;
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string_view(e.what()).find(part), std::string_view::npos) << e.what();
    }
  };
  const Operation null_op;
  expect_invalid([&] { null_op.name(); }, "Operation is null");
  expect_invalid([&] { null_op.type(); }, "Operation is null");
  expect_invalid([&] { null_op.graph(); }, "Operation is null");
  expect_invalid([&] { null_op.num_inputs(); }, "Operation is null");
  expect_invalid([&] { null_op.num_outputs(); }, "Operation is null");
  expect_invalid([&] { null_op.input(0); }, "Operation is null");
  expect_invalid([&] { null_op.output(0); }, "Operation is null");
  expect_invalid([&] { null_op.control_inputs(); }, "Operation is null");
  expect_invalid([&] { null_op.device(); }, "Operation is null");
  expect_invalid([&] { null_op.GetAttr<DataType>("dtype"); }, "Operation is null");
  const Output null_out;
  EXPECT_FALSE(null_out.valid());
  for (auto* f : std::initializer_list<void (*)(const Output&)>{
           [](const Output& o) { o.graph(); }, [](const Output& o) { o.dtype(); },
           [](const Output& o) { o.is_ref(); }, [](const Output& o) { o.shape(); },
           [](const Output& o) { o.name(); }, [](const Output& o) { o.DebugString(); }}) {
    expect_invalid([&] { f(null_out); }, "null Output");
  }
  expect_invalid([&] { null_out.op().name(); }, "Operation is null");

  Graph g;
  auto as_default = g.AsDefault();
  Output a = TestConst(DT_FLOAT, {}, "a");
  EXPECT_TRUE(a.valid());
  expect_invalid([&] { a.op().output(1); }, "has 1 outputs, asked for output 1");
  expect_invalid([&] { a.op().input(0); }, "has 0 inputs, asked for input 0");
  const Operation none = NodeBuilder("GraphTestNoOutputs", "none").Finalize();
  const Output none_out = none;  // the implicit conversion still compiles
  EXPECT_FALSE(none_out.valid());
  EXPECT_EQ(none_out.graph(), &g);
  expect_invalid([&] { none_out.dtype(); }, "'none:0' names an output of operation 'none'");
  expect_invalid([&] { none_out.shape(); }, "which has no outputs");
  expect_invalid([&] { none_out.name(); }, "pass it as a target");
  const Output past(a.node(), 2);
  expect_invalid([&] { past.DebugString(); },
                 "'a:2' is out of range: operation 'a' (op: \"GraphTestConst\") has 1 output");
  expect_invalid([&] { past.CheckValid("Fetch"); }, "Fetch 'a:2' is out of range");
  // As an input of a new op.
  expect_invalid([&] { TestAdd(a, none_out); }, "no outputs");
  expect_invalid([&] { TestAdd(a, Output()); }, "is an empty Output");
}

TEST(Graph, ControlDependencies) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = TestConst(DT_FLOAT);
  Output b = TestConst(DT_FLOAT);
  {
    auto deps = g.ControlDependencies({a.op()});
    Output c = TestConst(DT_FLOAT);
    ASSERT_EQ(c.op().control_inputs().size(), 1u);
    EXPECT_EQ(c.op().control_inputs()[0], a.op());
    // A dependency that is already a data input is not duplicated.
    Output d = TestAdd(a, b);
    EXPECT_TRUE(d.op().control_inputs().empty());
    {
      auto more = g.ControlDependencies({b.op()});
      EXPECT_EQ(TestConst(DT_FLOAT).op().control_inputs().size(), 2u);
      auto none = g.ClearControlDependencies();
      EXPECT_TRUE(TestConst(DT_FLOAT).op().control_inputs().empty());
    }
  }
  EXPECT_TRUE(TestConst(DT_FLOAT).op().control_inputs().empty());
}

TEST(Graph, DevicesAndColocation) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a;
  {
    auto device = g.Device("/job:ps/task:0");
    a = TestConst(DT_FLOAT);
    EXPECT_EQ(a.op().device(), "/job:ps/task:0");
  }
  {
    auto fn = g.Device([](std::string_view type, std::string_view, std::string_view) {
      return std::string(type == "GraphTestConst" ? "/job:ps/task:1" : "/job:worker");
    });
    EXPECT_EQ(TestConst(DT_FLOAT).op().device(), "/job:ps/task:1");
  }
  auto colocate = g.ColocateWith(a.op());
  Output b = TestConst(DT_FLOAT);
  EXPECT_EQ(b.op().device(), "/job:ps/task:0");
  EXPECT_EQ(b.op().node()->GetAttr<std::vector<std::string>>("_class"),
            std::vector<std::string>{"loc:@Const"});
}

TEST(Graph, CollectionsAndLookup) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = TestConst(DT_FLOAT, {}, "a");
  g.AddToCollection(GraphKeys::kSummaries, a);
  g.AddToCollection(GraphKeys::kSummaries, std::string("not an output"));
  EXPECT_EQ(g.GetCollection<Output>(GraphKeys::kSummaries).size(), 1u);
  EXPECT_EQ(g.GetCollectionItems("summaries").size(), 2u);
  EXPECT_TRUE(g.GetCollection<Output>("nothing").empty());
  EXPECT_EQ(g.CollectionKeys(), std::vector<std::string>{"summaries"});
  g.ClearCollection("summaries");
  EXPECT_TRUE(g.GetCollectionItems("summaries").empty());
  EXPECT_EQ(g.GetOperationByName("a"), a.op());
  EXPECT_EQ(g.GetTensorByName("a:0"), a);
  EXPECT_THROW(g.GetTensorByName("a:1"), InvalidArgumentError);
  EXPECT_THROW(g.GetTensorByName("a"), InvalidArgumentError);
  EXPECT_THROW(g.GetOperationByName("b"), InvalidArgumentError);
  EXPECT_STREQ(std::string(GraphKeys::kGlobalVariables).c_str(), "variables");
  EXPECT_STREQ(GraphKeys::kTrainableVariables, "trainable_variables");
  EXPECT_STREQ(GraphKeys::kQueueRunners, "queue_runners");
}

TEST(Graph, FinalizeRejectsChanges) {
  Graph g;
  auto as_default = g.AsDefault();
  TestConst(DT_FLOAT);
  g.Finalize();
  try {
    TestConst(DT_FLOAT);
    FAIL();
  } catch (const FailedPreconditionError& e) {
    EXPECT_STREQ(e.what(), "Graph is finalized and cannot be modified.");
  }
  g.Unfinalize();
  EXPECT_NO_THROW(TestConst(DT_FLOAT));
}

TEST(Graph, DefaultGraphStack) {
  Graph& process_default = GetDefaultGraph();
  Graph g1, g2;
  {
    auto d1 = g1.AsDefault();
    EXPECT_EQ(&GetDefaultGraph(), &g1);
    {
      auto d2 = g2.AsDefault();
      EXPECT_EQ(&GetDefaultGraph(), &g2);
      EXPECT_THROW(ResetDefaultGraph(), FailedPreconditionError);
    }
    EXPECT_EQ(&GetDefaultGraph(), &g1);
    // Each thread has its own stack.
    Graph* seen = nullptr;
    std::thread([&] { seen = &GetDefaultGraph(); }).join();
    EXPECT_EQ(seen, &process_default);
  }
  EXPECT_EQ(&GetDefaultGraph(), &process_default);
  ResetDefaultGraph();
  EXPECT_EQ(GetDefaultGraph().num_nodes(), 0);
}

TEST(Graph, ConcurrentBuildingGivesUniqueNames) {
  Graph g;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) TestConst(DT_FLOAT, {}, "c", &g);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(g.num_nodes(), 800);
  std::set<std::string> names;
  for (const Operation& op : g.operations()) names.insert(op.name());
  EXPECT_EQ(names.size(), 800u);
}

TEST(Graph, UpdateInputReplacesAnInputAndRelaxesTheShape) {
  Graph g;
  auto as_default = g.AsDefault();
  Output a = TestConst(DT_FLOAT, PartialTensorShape({2}), "a");
  Output b = TestConst(DT_FLOAT, PartialTensorShape({3}), "b");
  Output sum = TestAdd(a, a, "sum");
  EXPECT_EQ(sum.shape().DebugString(), "[2]");
  const int64_t before = g.version();
  Output c = TestConst(DT_FLOAT, PartialTensorShape({1}), "c");
  g.UpdateInput(sum.op(), 1, c);
  EXPECT_EQ(sum.op().input(1).node(), c.node());
  EXPECT_EQ(sum.shape().DebugString(), "[2]");  // [2] + [1] broadcasts to [2]
  EXPECT_GT(g.version(), before + 1);           // the update counts, not only the new node
  EXPECT_THROW(g.UpdateInput(sum.op(), 1, b), InvalidArgumentError);  // [2] + [3] do not broadcast
}

TEST(Graph, UpdateInputRejectsBadArguments) {
  Graph g, other;
  auto as_default = g.AsDefault();
  Output a = TestConst(DT_FLOAT, PartialTensorShape({2}), "a");
  Output i = TestConst(DT_INT32, PartialTensorShape({2}), "i");
  Output elsewhere = TestConst(DT_FLOAT, PartialTensorShape({2}), "x", &other);
  Output sum = TestAdd(a, a, "sum");
  testing::ExpectInvalidArgument([&] { g.UpdateInput(sum.op(), 2, a); }, "has 2 inputs, not input 2");
  testing::ExpectInvalidArgument([&] { g.UpdateInput(sum.op(), 0, i); }, "is float, not int32");
  testing::ExpectInvalidArgument([&] { g.UpdateInput(sum.op(), 0, elsewhere); },
                                 "not an output of this graph");
  testing::ExpectInvalidArgument([&] { other.UpdateInput(sum.op(), 0, a); }, "not in this graph");
  g.Finalize();
  EXPECT_THROW(g.UpdateInput(sum.op(), 0, a), FailedPreconditionError);
}

TEST(Graph, AddControlInputAndSetOutputShape) {
  Graph g, other;
  auto as_default = g.AsDefault();
  Output a = TestConst(DT_FLOAT, PartialTensorShape({2}), "a");
  Output b = TestConst(DT_FLOAT, PartialTensorShape({2}), "b");
  g.AddControlInput(b.op(), a.op());
  g.AddControlInput(b.op(), a.op());  // once only
  ASSERT_EQ(b.op().control_inputs().size(), 1u);
  EXPECT_EQ(b.op().control_inputs()[0], a.op());
  Output elsewhere = TestConst(DT_FLOAT, PartialTensorShape({2}), "x", &other);
  testing::ExpectInvalidArgument([&] { g.AddControlInput(b.op(), elsewhere.op()); }, "not in this graph");
  g.SetOutputShape(a.op(), 0, PartialTensorShape({-1}));
  EXPECT_EQ(a.shape().DebugString(), "[?]");
  EXPECT_EQ(TestAdd(a, a).shape().DebugString(), "[?]");  // later ops see it
  testing::ExpectInvalidArgument(
      [&] {
        g.SetOutputShape(a.op(), 0, PartialTensorShape({2, 2}));
      },
      "not compatible");
  testing::ExpectInvalidArgument([&] { g.SetOutputShape(a.op(), 1, PartialTensorShape({2})); },
                                 "no output 1");
  g.Finalize();
  EXPECT_THROW(g.AddControlInput(a.op(), b.op()), FailedPreconditionError);
}

TEST(Graph, OnNodeAddedSeesEveryNodeOfItsScopeInnermostFirst) {
  Graph g;
  auto as_default = g.AsDefault();
  std::vector<std::string> outer_seen, inner_seen;
  {
    auto outer = g.OnNodeAdded([&](Operation op) { outer_seen.push_back(op.name()); });
    TestConst(DT_FLOAT, PartialTensorShape({}), "first");
    {
      auto inner = g.OnNodeAdded([&](Operation op) {
        inner_seen.push_back(op.name());
        // A callback may build nodes; they are passed to it too.
        if (op.name() == "second") TestConst(DT_FLOAT, PartialTensorShape({}), "helper");
      });
      TestConst(DT_FLOAT, PartialTensorShape({}), "second");
    }
    TestConst(DT_FLOAT, PartialTensorShape({}), "third");
  }
  TestConst(DT_FLOAT, PartialTensorShape({}), "unseen");
  EXPECT_EQ(outer_seen, (std::vector<std::string>{"first", "third"}));
  EXPECT_EQ(inner_seen, (std::vector<std::string>{"second", "helper"}));
}

TEST(GraphDef, ExportAndImportRoundTrip) {
  Graph g;
  {
    auto as_default = g.AsDefault();
    Output a = TestConst(DT_FLOAT, PartialTensorShape({2}), "a");
    Output b = TestConst(DT_FLOAT, PartialTensorShape({2}), "b");
    auto deps = g.ControlDependencies({b.op()});
    auto device = g.Device("/job:worker/task:0");
    Output c = TestAdd(a, b, "c");
    Operation cat = NodeBuilder("GraphTestConcat", "cat").Input(std::vector<Output>{a, c}).Finalize();
    NodeBuilder("GraphTestSplit", "split").Input(cat.output(0)).Finalize();
  }
  tensorflow::GraphDef def = g.ToGraphDef(/*add_shapes=*/true);
  ASSERT_EQ(def.node_size(), 5);
  EXPECT_EQ(def.versions().producer(), kGraphDefProducer);
  const tensorflow::NodeDef& c = def.node(2);
  EXPECT_EQ(c.name(), "c");
  EXPECT_EQ(c.op(), "GraphTestAdd");
  ASSERT_EQ(c.input_size(), 2);  // b is a data input, so no ^b control input
  EXPECT_EQ(c.device(), "/job:worker/task:0");
  EXPECT_EQ(c.attr().at("T").type(), tensorflow::DT_FLOAT);
  EXPECT_EQ(c.attr().at("_output_shapes").list().shape(0).dim(0).size(), 2);
  EXPECT_EQ(def.node(3).input(2), "^b");

  // Import into a new graph, shuffled, and export again: the same GraphDef.
  tensorflow::GraphDef shuffled = g.ToGraphDef();
  std::reverse(shuffled.mutable_node()->begin(), shuffled.mutable_node()->end());
  Graph copy;
  ImportGraphDef(shuffled, &copy);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(copy.ToGraphDef(), g.ToGraphDef()));
  EXPECT_EQ(copy.GetTensorByName("c:0").shape().DebugString(), "[2]");

  Graph prefixed;
  ImportGraphDef(g.ToGraphDef(), &prefixed, "import");
  EXPECT_NE(prefixed.FindNode("import/c"), nullptr);
  EXPECT_EQ(prefixed.FindNode("import/c")->input(0).node->name(), "import/a");
}

TEST(GraphDef, ImportErrorsNameTheNode) {
  tensorflow::GraphDef def;
  auto* n = def.add_node();
  n->set_name("x");
  n->set_op("NotARealOp");
  Graph g;
  try {
    ImportGraphDef(def, &g);
    FAIL();
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("NotARealOp"), std::string::npos);
  }
  def.Clear();
  n = def.add_node();
  n->set_name("y");
  n->set_op("GraphTestAdd");
  n->add_input("missing");
  n->add_input("missing");
  EXPECT_THROW(ImportGraphDef(def, &g), InvalidArgumentError);
}

// A 52-byte GraphDef whose Const is [1e9] floats from one float_val made the importer allocate
// and fill 4 GB; [2^40] was an unnamed OOM.
TEST(GraphDef, HugeConstFromOneValueIsInvalidArgumentNamingTheNode) {
  for (const int64_t n : {int64_t{1} << 40, int64_t{1'000'000'000}}) {
    tensorflow::GraphDef def;
    auto* node = def.add_node();
    node->set_name("big");
    node->set_op("Const");
    (*node->mutable_attr())["dtype"].set_type(tensorflow::DT_FLOAT);
    auto* value = (*node->mutable_attr())["value"].mutable_tensor();
    value->set_dtype(tensorflow::DT_FLOAT);
    value->mutable_tensor_shape()->add_dim()->set_size(n);
    value->add_float_val(1.0f);
    ASSERT_LT(def.ByteSizeLong(), 60u);
    Graph g;
    testing::ExpectInvalidArgument([&] { ImportGraphDef(def, &g); }, {"'big'", StrCat("[", n, "]")});
  }
}

// A chain listed consumer first: the recursive import went 100k frames deep (SIGSEGV at ~20k).
TEST(GraphDef, LongChainListedConsumerFirstImports) {
#if defined(__SANITIZE_ADDRESS__)
  // A Debug ASan build imports ~40 times slower; its larger frames overflowed sooner too.
  constexpr int kNodes = 25000;
#else
  constexpr int kNodes = 100000;
#endif
  tensorflow::GraphDef def;
  tensorflow::AttrValue float_type;
  float_type.set_type(tensorflow::DT_FLOAT);
  for (int i = 0; i < kNodes; ++i) {
    auto* n = def.add_node();
    n->set_name(StrCat("n", i));
    if (i + 1 == kNodes) {
      n->set_op("GraphTestConst");
      (*n->mutable_attr())["dtype"] = float_type;
      continue;
    }
    n->set_op("GraphTestAdd");
    n->add_input(StrCat("n", i + 1));
    n->add_input(StrCat("n", i + 1));
    if (i % 2 == 0) n->add_input(StrCat("^n", i + 1));
    (*n->mutable_attr())["T"] = float_type;
  }
  Graph g;
  ImportGraphDef(def, &g);
  EXPECT_EQ(g.num_nodes(), kNodes);
  EXPECT_EQ(g.FindNode("n0")->input(0).node->name(), "n1");

  // A cycle is still one, however far round it goes.
  def.mutable_node(kNodes - 1)->set_op("GraphTestAdd");
  def.mutable_node(kNodes - 1)->add_input("n0");
  def.mutable_node(kNodes - 1)->add_input("n0");
  (*def.mutable_node(kNodes - 1)->mutable_attr())["T"] = float_type;
  Graph cyclic;
  testing::ExpectInvalidArgument([&] { ImportGraphDef(def, &cyclic); }, "cycle through node 'n0'");
}

// A newer TF's graph: GraphTestAdd as if TF had since given it a `fast: bool = false` attr
// (as TF 2.12 gave MatMul grad_a and grad_b), and the producer's OpDef saying so.
TEST(GraphDef, NewDefaultAttrsOfANewerProducerAreRemoved) {
  Graph g;
  Output a = TestConst(DT_FLOAT, PartialTensorShape({2}), "a", &g);
  NodeBuilder("GraphTestAdd", "c").Graph(&g).Input(a).Input(a).Finalize();
  tensorflow::GraphDef def = g.ToGraphDef();
  tensorflow::OpList producer;
  *producer.add_op() = OpRegistry::Global()->Get("GraphTestAdd").def;
  auto* fast = producer.mutable_op(0)->add_attr();
  fast->set_name("fast");
  fast->set_type("bool");
  fast->mutable_default_value()->set_b(false);
  tensorflow::NodeDef& c = *def.mutable_node(1);
  ASSERT_EQ(c.name(), "c");
  (*c.mutable_attr())["fast"].set_b(false);

  // Without the producer's ops the attr is unknown, as in TF.
  Graph unknown;
  testing::ExpectInvalidArgument([&] { ImportGraphDef(def, &unknown); }, "unknown attr 'fast'");
  // At its default it goes; the node keeps its other attrs.
  tensorflow::GraphDef cleaned = def;
  EXPECT_EQ(RemoveNewDefaultAttrs(producer, &cleaned), 1);
  EXPECT_FALSE(cleaned.node(1).attr().contains("fast"));
  EXPECT_TRUE(cleaned.node(1).attr().contains("T"));
  Graph imported;
  ImportGraphDef(cleaned, &imported);
  EXPECT_EQ(imported.GetTensorByName("c:0").shape().DebugString(), "[2]");
  // Any other value changes the op's meaning: it stays, and the import rejects it.
  (*c.mutable_attr())["fast"].set_b(true);
  EXPECT_EQ(RemoveNewDefaultAttrs(producer, &def), 0);
  EXPECT_TRUE(def.node(1).attr().contains("fast"));
  // Attrs flowtrain knows, and ops the producer list lacks, are left alone.
  EXPECT_EQ(RemoveNewDefaultAttrs(tensorflow::OpList(), &def), 0);
  EXPECT_TRUE(def.node(1).attr().contains("T"));

  // The node_defs of library functions (TF's tf.data functions) are cleaned the same way.
  tensorflow::GraphDef with_function;
  tensorflow::FunctionDef* f = with_function.mutable_library()->add_function();
  f->mutable_signature()->set_name("add_self");
  tensorflow::NodeDef* body = f->add_node_def();
  body->set_name("c");
  body->set_op("GraphTestAdd");
  (*body->mutable_attr())["fast"].set_b(false);
  (*body->mutable_attr())["T"].set_type(tensorflow::DT_FLOAT);
  EXPECT_EQ(RemoveNewDefaultAttrs(producer, &with_function), 1);
  EXPECT_FALSE(with_function.library().function(0).node_def(0).attr().contains("fast"));
  EXPECT_TRUE(with_function.library().function(0).node_def(0).attr().contains("T"));
}

}  // namespace
}  // namespace flowtrain
