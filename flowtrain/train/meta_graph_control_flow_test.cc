// A MetaGraphDef's cond_context and while_context collections, imported: the rebuilt contexts
// let ops::Gradients differentiate through the imported graph's conds and loops, giving the
// gradients of the original graph, and are exported again as they were read.
#include <gtest/gtest.h>

#include "google/protobuf/util/message_differencer.h"

#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow.h"
#include "flowtrain/ops/gradients.h"
#include "flowtrain/ops/io_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/proto/control_flow.pb.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/meta_graph.h"

namespace flowtrain {
namespace {

using Vars = std::vector<Output>;

TEST(MetaGraphControlFlow, ImportedLoopsAndCondsCanBeDifferentiated) {
  Graph g;
  tensorflow::MetaGraphDef meta;
  double want = 0;
  {
    auto as_default = g.AsDefault();
    Output x = ops::Placeholder(DT_DOUBLE, PartialTensorShape({}), "x");
    Vars out = ops::WhileLoop([](const Vars& v) { return ops::Less(v[0], ops::Const(3)); },
                              [&](const Vars& v) {
                                Output r = ops::Cond(
                                    ops::Less(v[0], ops::Const(1)), [&] { return ops::Mul(v[1], x); },
                                    [&] { return ops::Sin(v[1]); });
                                return Vars{ops::AddV2(v[0], ops::Const(1)), r};
                              },
                              {ops::Const(0, "i0"), x});
    Output y = ops::Identity(out[1], "y");
    meta = train::ExportMetaGraph(g);
    Output dx = ops::Gradients({y}, {x})[0];
    Session session(g);
    want = session.Run({{x, Tensor::Scalar<double>(0.7)}}, {dx}, {})[0].scalar<double>();
  }
  ASSERT_EQ(meta.collection_def().count("while_context"), 1u);
  ASSERT_EQ(meta.collection_def().count("cond_context"), 0u);  // the cond is nested in the loop

  Graph imported;
  train::ImportMetaGraph(meta, &imported);
  // The contexts read back are written again as they were (TF's Python reads them).
  tensorflow::MetaGraphDef again = train::ExportMetaGraph(imported);
  tensorflow::WhileContextDef read, written;
  ASSERT_TRUE(read.ParseFromString(meta.collection_def().at("while_context").bytes_list().value(0)));
  ASSERT_TRUE(written.ParseFromString(again.collection_def().at("while_context").bytes_list().value(0)));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(read, written))
      << read.DebugString() << "\nvs\n"
      << written.DebugString();
  auto as_default = imported.AsDefault();
  Output x = imported.GetTensorByName("x:0");
  Output dx = ops::Gradients({imported.GetTensorByName("y:0")}, {x})[0];
  ASSERT_TRUE(dx.valid());
  Session session(imported);
  EXPECT_NEAR(session.Run({{x, Tensor::Scalar<double>(0.7)}}, {dx}, {})[0].scalar<double>(), want, 1e-12);
}

}  // namespace
}  // namespace flowtrain
