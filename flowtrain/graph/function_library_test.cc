// FunctionLibrary: well-formedness checks on FunctionDefs, identical re-adds, gradients, and
// the library passing through a GraphDef unchanged.
#include "flowtrain/graph/function_library.h"

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/graph/op_registry.h"
#include "tests/test_util.h"

namespace flowtrain {
namespace {

using testing::ExpectInvalidArgument;

FT_REGISTER_OP("FunctionLibraryTestNeg").Input("x: float").Output("y: float");

// f(x) = Neg(x), in the text format TF writes.
tensorflow::FunctionDef NegFunction(const std::string& name = "neg_fn") {
  tensorflow::FunctionDef def;
  const std::string text = R"pb(
    signature {
      input_arg { name: "x" type: DT_FLOAT }
      output_arg { name: "y" type: DT_FLOAT }
    }
    node_def { name: "neg" op: "FunctionLibraryTestNeg" input: "x" }
    node_def { name: "after" op: "FunctionLibraryTestNeg" input: "neg:y:0" input: "^neg" }
    ret { key: "y" value: "after:y:0" }
    control_ret { key: "done" value: "after" }
  )pb";
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def));
  def.mutable_signature()->set_name(name);
  return def;
}

TEST(FunctionLibrary, AddsFindsAndListsFunctions) {
  FunctionLibrary library;
  EXPECT_TRUE(library.empty());
  library.AddFunction(NegFunction("b_fn"));
  library.AddFunction(NegFunction("a_fn"));
  library.AddFunction(NegFunction("a_fn"));  // identical: allowed, as when TF merges graphs
  ASSERT_NE(library.Find("a_fn"), nullptr);
  EXPECT_EQ(library.Find("a_fn")->node_def_size(), 2);
  EXPECT_EQ(library.Find("missing"), nullptr);
  EXPECT_EQ(library.ListFunctions(), (std::vector<std::string>{"a_fn", "b_fn"}));
  library.AddGradient("a_fn", "b_fn");
  library.AddGradient("a_fn", "b_fn");
  EXPECT_EQ(library.FindGradient("a_fn"), "b_fn");
  EXPECT_EQ(library.FindGradient("b_fn"), "");
  ExpectInvalidArgument([&] { library.AddGradient("a_fn", "c_fn"); },
                        {"'a_fn'", "already has gradient function 'b_fn'"});

  const tensorflow::FunctionDefLibrary proto = library.ToProto();
  ASSERT_EQ(proto.function_size(), 2);
  EXPECT_EQ(proto.function(0).signature().name(), "a_fn");
  ASSERT_EQ(proto.gradient_size(), 1);
  EXPECT_EQ(proto.gradient(0).gradient_func(), "b_fn");
}

TEST(FunctionLibrary, RejectsMalformedFunctions) {
  FunctionLibrary library;
  library.AddFunction(NegFunction());
  tensorflow::FunctionDef changed = NegFunction();
  changed.mutable_node_def(1)->set_op("Other");
  ExpectInvalidArgument([&] { library.AddFunction(changed); },
                        {"'neg_fn'", "different function with the same name"});

  ExpectInvalidArgument([&] { library.AddFunction(NegFunction("FunctionLibraryTestNeg")); },
                        "an op with the same name already exists");
  ExpectInvalidArgument([&] { library.AddFunction(NegFunction("bad name")); }, "not a valid function name");

  tensorflow::FunctionDef bad_input = NegFunction("f1");
  bad_input.mutable_node_def(1)->set_input(0, "nowhere:y:0");
  ExpectInvalidArgument([&] { library.AddFunction(bad_input); }, {"'f1'", "'after'", "'nowhere:y:0'"});

  tensorflow::FunctionDef bad_control = NegFunction("f2");
  bad_control.mutable_node_def(1)->set_input(1, "^x");  // an argument, not a node
  ExpectInvalidArgument([&] { library.AddFunction(bad_control); }, "'^x'");

  tensorflow::FunctionDef no_ret = NegFunction("f3");
  no_ret.mutable_ret()->clear();
  ExpectInvalidArgument([&] { library.AddFunction(no_ret); }, "result 'y' has no ret entry");

  tensorflow::FunctionDef extra_ret = NegFunction("f4");
  (*extra_ret.mutable_ret())["z"] = "neg:y:0";
  ExpectInvalidArgument([&] { library.AddFunction(extra_ret); }, "'z' is not a result");

  tensorflow::FunctionDef repeated = NegFunction("f5");
  repeated.mutable_node_def(1)->set_name("x");
  ExpectInvalidArgument([&] { library.AddFunction(repeated); }, "repeats");

  tensorflow::FunctionDef bad_control_ret = NegFunction("f6");
  (*bad_control_ret.mutable_control_ret())["done"] = "ghost";
  ExpectInvalidArgument([&] { library.AddFunction(bad_control_ret); }, "'ghost'");
  EXPECT_EQ(library.ListFunctions(), std::vector<std::string>{"neg_fn"});
}

TEST(FunctionLibrary, AddLibraryIsAllOrNothing) {
  FunctionLibrary library;
  tensorflow::FunctionDefLibrary incoming;
  *incoming.add_function() = NegFunction("good");
  *incoming.add_function() = NegFunction("bad name");
  EXPECT_THROW(library.AddLibrary(incoming), InvalidArgumentError);
  EXPECT_TRUE(library.empty());

  incoming.mutable_function()->RemoveLast();
  auto* gradient = incoming.add_gradient();
  gradient->set_function_name("good");
  gradient->set_gradient_func("good_grad");
  library.AddLibrary(incoming);
  EXPECT_NE(library.Find("good"), nullptr);
  EXPECT_EQ(library.FindGradient("good"), "good_grad");
}

TEST(FunctionLibrary, TravelsWithTheGraphDef) {
  Graph g;
  g.library().AddFunction(NegFunction());
  tensorflow::GraphDef def = g.ToGraphDef();
  ASSERT_EQ(def.library().function_size(), 1);

  Graph copy;
  ImportGraphDef(def, &copy);
  ASSERT_NE(copy.library().Find("neg_fn"), nullptr);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(copy.ToGraphDef(), def));
  EXPECT_FALSE(Graph().ToGraphDef().has_library());  // no library, no field: TF 1.x's graphs

  // A second import of the same functions is fine; a different one of the same name is not.
  ImportGraphDef(def, &copy, "again");
  (*def.mutable_library()->mutable_function(0)->mutable_node_def(0)->mutable_attr())["note"].set_s("x");
  ExpectInvalidArgument([&] { ImportGraphDef(def, &copy, "third"); },
                        "different function with the same name");
}

}  // namespace
}  // namespace flowtrain
