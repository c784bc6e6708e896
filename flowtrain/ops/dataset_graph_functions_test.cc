// The dataset builders over functions that build ops (MapGraph, FilterGraph, FlatMap,
// Interleave, ParallelInterleave), Window and MakeOneShotIterator run in a session: values,
// captured tensors, errors, and a save/restore of the iterator's position mid-stream.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/parsing_ops.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain::data {
namespace {

using Rows = std::vector<std::vector<int64_t>>;

std::vector<int64_t> Row(Session& sess, const std::vector<Output>& next) {
  std::vector<int64_t> row;
  for (const Tensor& t : sess.Run({}, next))
    for (int64_t v : t.flat<int64_t>()) row.push_back(v);
  return row;
}

// Every element's components, flattened to int64 values, until OutOfRange.
Rows DrainAll(Session& sess, const std::vector<Output>& next) {
  Rows out;
  try {
    for (;;) out.push_back(Row(sess, next));
  } catch (const OutOfRangeError&) {
  }
  return out;
}

Rows RunToEnd(const Dataset& ds) {
  Iterator it = ds.MakeInitializableIterator();
  auto next = it.GetNext();
  Session sess(*ds.variant().graph());
  sess.Run({}, {}, {it.initializer()});
  return DrainAll(sess, next);
}

// Runs the pipeline `build` makes to the end; then again in a fresh graph and session,
// saving after `taken` elements and restoring into a third: the restored run must produce the
// same rest.
void ExpectRestoreContinues(const std::function<Dataset()>& build, int taken) {
  Rows all, seen;
  Tensor state;
  {
    Graph g;
    auto as_default = g.AsDefault();
    all = RunToEnd(build());
    ASSERT_GT(static_cast<int>(all.size()), taken);
  }
  {
    Graph g;
    auto as_default = g.AsDefault();
    Iterator it = build().MakeInitializableIterator();
    auto next = it.GetNext();
    Output save = it.Serialize();
    Session sess(g);
    sess.Run({}, {}, {it.initializer()});
    for (int i = 0; i < taken; ++i) seen.push_back(Row(sess, next));
    state = sess.Run({}, {save})[0];
  }
  Graph g;
  auto as_default = g.AsDefault();
  Iterator it = build().MakeInitializableIterator();
  auto next = it.GetNext();
  Output state_in = ops::Placeholder(DT_STRING, PartialTensorShape({}), "state");
  Operation restore = it.Deserialize(state_in);
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  sess.Run({{state_in, state}}, {}, {restore});
  Rows rest = DrainAll(sess, next);
  seen.insert(seen.end(), rest.begin(), rest.end());
  EXPECT_EQ(seen, all);
}

// x -> the dataset {x + 10, x + 20}, over a tensor captured from the graph around it.
Dataset PlusTensAndTwenties(const std::vector<Output>& e, Output tens) {
  return Dataset::FromTensorSlices(std::vector<Output>{ops::Add(tens, e[0])});
}

TEST(DatasetGraphFunctions, MapGraphRunsOpsAndCapturesOuterTensors) {
  Graph g;
  auto as_default = g.AsDefault();
  Output scale = ops::Const(int64_t{10}, "scale");
  Dataset ds = Dataset::Range(0, 4).MapGraph([&](const std::vector<Output>& e) {
    return std::vector<Output>{ops::Add(ops::Mul(e[0], scale), ops::Const(int64_t{1})), e[0]};
  });
  EXPECT_EQ(ds.output_types(), (std::vector<DataType>{DT_INT64, DT_INT64}));
  EXPECT_EQ(RunToEnd(ds), (Rows{{1, 0}, {11, 1}, {21, 2}, {31, 3}}));
  // The capture is an other_arguments input, the function one of the graph's library.
  const Node& map = *ds.variant().node();
  EXPECT_EQ(map.type(), "MapDataset");
  ASSERT_EQ(map.num_inputs(), 2);
  EXPECT_EQ(map.input(1).node, scale.node());
  EXPECT_EQ(map.GetAttr<std::vector<DataType>>("Targuments"), std::vector<DataType>{DT_INT64});
  const tensorflow::FunctionDef* f = g.library().Find(map.GetAttrValue("f").func().name());
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->signature().input_arg_size(), 2);  // the element, then the capture
  EXPECT_EQ(f->signature().input_arg(0).name(), "args_0");
}

TEST(DatasetGraphFunctions, MapGraphDecodesCsvInParallel) {
  Graph g;
  auto as_default = g.AsDefault();
  Dataset lines = Dataset::FromTensorSlices({Tensor::FromVector<std::string>({"1,2", "3,4", "5,"})});
  Dataset ds = lines.MapGraph(
      [](const std::vector<Output>& e) {
        return ops::DecodeCSV(e[0], {ops::Const(int64_t{0}), ops::Const(int64_t{-1})});
      },
      {.num_parallel_calls = 2});
  EXPECT_EQ(ds.variant().node()->type(), "ParallelMapDataset");
  EXPECT_EQ(RunToEnd(ds), (Rows{{1, 2}, {3, 4}, {5, -1}}));
}

TEST(DatasetGraphFunctions, FilterGraphKeepsWhatThePredicateAccepts) {
  Graph g;
  auto as_default = g.AsDefault();
  Output three = ops::Const(int64_t{3});
  Dataset ds = Dataset::Range(0, 10).FilterGraph([&](const std::vector<Output>& e) {
    return ops::Equal(ops::FloorMod(e[0], three), ops::Const(int64_t{0}));
  });
  EXPECT_EQ(RunToEnd(ds), (Rows{{0}, {3}, {6}, {9}}));
  testing::ExpectInvalidArgument(
      [&] { Dataset::Range(0, 3).FilterGraph([](const std::vector<Output>& e) { return e[0]; }); },
      "must return a scalar bool");
}

TEST(DatasetGraphFunctions, FlatMapInterleaveAndParallelInterleave) {
  Graph g;
  auto as_default = g.AsDefault();
  Output tens = ops::Const({int64_t{10}, int64_t{20}}, "tens");
  auto fn = [&](const std::vector<Output>& e) { return PlusTensAndTwenties(e, tens); };
  Dataset input = Dataset::Range(1, 4);
  EXPECT_EQ(RunToEnd(input.FlatMap(fn)), (Rows{{11}, {21}, {12}, {22}, {13}, {23}}));
  EXPECT_EQ(RunToEnd(input.Interleave(fn, 2)), (Rows{{11}, {12}, {21}, {22}, {13}, {23}}));
  EXPECT_EQ(RunToEnd(input.Interleave(fn, 2, 2)), (Rows{{11}, {21}, {12}, {22}, {13}, {23}}));
  Dataset parallel = input.ParallelInterleave(fn, 2, 1, 2);
  EXPECT_EQ(parallel.variant().node()->type(), "ParallelInterleaveDatasetV4");
  EXPECT_EQ(RunToEnd(parallel), (Rows{{11}, {12}, {21}, {22}, {13}, {23}}));
  testing::ExpectInvalidArgument([&] { input.Interleave(fn, 0); }, "cycle_length");
  testing::ExpectInvalidArgument(
      [&] {
        input.FlatMap([](const std::vector<Output>&) -> Dataset { return Dataset::Range(0, 1).Window(0); });
      },
      "size must be positive");
}

TEST(DatasetGraphFunctions, NestedFunctionsCaptureThroughEachLevel) {
  Graph g;
  auto as_default = g.AsDefault();
  Output hundred = ops::Const(int64_t{100}, "hundred");
  // The inner map's capture of `hundred` becomes a capture of the flat_map function too.
  Dataset ds = Dataset::Range(1, 3).FlatMap([&](const std::vector<Output>& e) {
    return Dataset::FromTensorSlices(
               std::vector<Output>{ops::Mul(ops::Const({int64_t{1}, int64_t{2}}), e[0])})
        .MapGraph([&](const std::vector<Output>& x) { return std::vector<Output>{ops::Add(x[0], hundred)}; });
  });
  EXPECT_EQ(RunToEnd(ds), (Rows{{101}, {102}, {102}, {104}}));
  EXPECT_EQ(ds.variant().node()->input(1).node, hundred.node());
  // The GraphDef carries both functions and runs after an import.
  Graph copy;
  ImportGraphDef(g.ToGraphDef(), &copy);
  auto in_copy = copy.AsDefault();
  Dataset imported =
      Dataset::FromVariant(copy.GetTensorByName(ds.variant().name()), ds.output_types(), ds.output_shapes());
  EXPECT_EQ(RunToEnd(imported), (Rows{{101}, {102}, {102}, {104}}));
}

TEST(DatasetGraphFunctions, SourcesOverOutputsReadTheElementsFiles) {
  const std::string dir = testing::MakeTempDir("graph_functions");
  WriteFileAtomically(dir + "/a.txt", "1\n2\n");
  WriteFileAtomically(dir + "/b.txt", "3\n");
  Graph g;
  auto as_default = g.AsDefault();
  auto to_int = [](const std::vector<Output>& e) { return ops::DecodeCSV(e[0], {ops::Const(int64_t{0})}); };
  Dataset files =
      Dataset::FromTensorSlices({Tensor::FromVector<std::string>({dir + "/a.txt", dir + "/b.txt"})});
  EXPECT_EQ(RunToEnd(files.FlatMap(
                [&](const std::vector<Output>& f) { return Dataset::TextLine(f[0]).MapGraph(to_int); })),
            (Rows{{1}, {2}, {3}}));
  // A file name tensor of the outer graph, captured by the source inside the lambda.
  Output b = ops::Const(dir + "/b.txt", "b_file");
  EXPECT_EQ(RunToEnd(Dataset::Range(0, 2)
                         .FlatMap([&](const std::vector<Output>&) { return Dataset::TextLine(b); })
                         .MapGraph(to_int)),
            (Rows{{3}, {3}}));
}

Dataset Batches(const std::vector<Output>& w) {
  return Dataset::FromVariant(w[0], {DT_INT64}, {PartialTensorShape({})}).Batch(5);
}

TEST(DatasetGraphFunctions, WindowFeedsFlatMap) {
  Graph g;
  auto as_default = g.AsDefault();
  Dataset input = Dataset::Range(0, 7);
  EXPECT_EQ(input.Window(3).output_types(), std::vector<DataType>{DT_VARIANT});
  EXPECT_EQ(RunToEnd(input.Window(3).FlatMap(Batches)), (Rows{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_EQ(RunToEnd(input.Window(3, 2).FlatMap(Batches)), (Rows{{0, 1, 2}, {2, 3, 4}, {4, 5, 6}, {6}}));
  EXPECT_EQ(RunToEnd(input.Window(3, 2, 1, true).FlatMap(Batches)), (Rows{{0, 1, 2}, {2, 3, 4}, {4, 5, 6}}));
  EXPECT_EQ(RunToEnd(input.Window(2, 4, 2).FlatMap(Batches)), (Rows{{0, 2}, {4, 6}}));
  EXPECT_EQ(RunToEnd(input.Window(2, 1, 3, true).FlatMap(Batches)), (Rows{{0, 3}, {1, 4}, {2, 5}, {3, 6}}));
  // Two components, a window dataset each.
  Dataset pairs = Dataset::Zip({input, input.MapGraph([](const std::vector<Output>& e) {
                                  return std::vector<Output>{ops::Neg(e[0])};
                                })});
  Dataset zipped = pairs.Window(4).FlatMap([](const std::vector<Output>& w) {
    return Dataset::Zip({Dataset::FromVariant(w[0], {DT_INT64}, {PartialTensorShape({})}).Batch(4),
                         Dataset::FromVariant(w[1], {DT_INT64}, {PartialTensorShape({})}).Batch(4)});
  });
  EXPECT_EQ(RunToEnd(zipped), (Rows{{0, 1, 2, 3, 0, -1, -2, -3}, {4, 5, 6, -4, -5, -6}}));
  testing::ExpectInvalidArgument([&] { input.Window(2, 0); }, "shift must be positive");
  testing::ExpectInvalidArgument([&] { input.Window(2, 1, 0); }, "stride must be positive");
  // A window whose span overflows an int64 (the kernel's check: the builder takes it).
  testing::ExpectInvalidArgument(
      [&] { RunToEnd(input.Window(int64_t{1} << 40, 1, int64_t{1} << 40).FlatMap(Batches)); },
      "spans more elements than an int64 counts");
}

TEST(DatasetGraphFunctions, IteratorsOverFunctionsRestoreMidStream) {
  auto tens = [] { return ops::Const({int64_t{10}, int64_t{20}}, "tens"); };
  ExpectRestoreContinues(
      [&] {
        Output t = tens();
        return Dataset::Range(1, 5).FlatMap(
            [&](const std::vector<Output>& e) { return PlusTensAndTwenties(e, t); });
      },
      3);
  ExpectRestoreContinues(
      [&] {
        Output t = tens();
        return Dataset::Range(1, 5).Interleave(
            [&](const std::vector<Output>& e) { return PlusTensAndTwenties(e, t); }, 3, 1);
      },
      4);
  ExpectRestoreContinues(
      [&] {
        Output scale = ops::Const(int64_t{3});
        return Dataset::Range(0, 9)
            .MapGraph(
                [&](const std::vector<Output>& e) { return std::vector<Output>{ops::Mul(e[0], scale)}; })
            .FilterGraph(
                [](const std::vector<Output>& e) { return ops::Greater(e[0], ops::Const(int64_t{4})); });
      },
      2);
  // The window iterator's buffer and pending skip.
  ExpectRestoreContinues([] { return Dataset::Range(0, 11).Window(3, 2).FlatMap(Batches); }, 2);
  ExpectRestoreContinues([] { return Dataset::Range(0, 11).Window(2, 4).FlatMap(Batches); }, 1);
  // Saved inside a window: the flat_map keeps the window it reads (a variant) in the state.
  ExpectRestoreContinues(
      [] {
        return Dataset::Range(0, 11).Window(3, 2).FlatMap([](const std::vector<Output>& w) {
          return Dataset::FromVariant(w[0], {DT_INT64}, {PartialTensorShape({})});
        });
      },
      4);
}

TEST(DatasetGraphFunctions, OneShotIteratorNeedsNoInitializerAndRestores) {
  Tensor state;
  std::vector<int64_t> seen;
  auto build = [] {
    Output two = ops::Const(int64_t{2});
    return Dataset::Range(0, 6)
        .MapGraph([&](const std::vector<Output>& e) { return std::vector<Output>{ops::Mul(e[0], two)}; })
        .MakeOneShotIterator();
  };
  {
    Graph g;
    auto as_default = g.AsDefault();
    Iterator it = build();
    EXPECT_EQ(it.handle().node()->type(), "OneShotIterator");
    EXPECT_FALSE(it.initializer());
    auto next = it.GetNext();
    Output save = it.Serialize();
    Session sess(g);
    seen.push_back(Row(sess, next)[0]);
    seen.push_back(Row(sess, next)[0]);
    state = sess.Run({}, {save})[0];
    EXPECT_EQ(DrainAll(sess, next), (Rows{{4}, {6}, {8}, {10}}));
  }
  Graph g;
  auto as_default = g.AsDefault();
  Iterator it = build();
  auto next = it.GetNext();
  Output state_in = ops::Placeholder(DT_STRING, PartialTensorShape({}), "state");
  Operation restore = it.Deserialize(state_in);
  Session sess(g);
  sess.Run({{state_in, state}}, {}, {restore});
  EXPECT_EQ(DrainAll(sess, next), (Rows{{4}, {6}, {8}, {10}}));
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 2}));

  Output fed = ops::Placeholder(DT_INT64, PartialTensorShape({3}), "fed");
  testing::ExpectInvalidArgument([&] { Dataset::FromTensorSlices({fed}).MakeOneShotIterator(); },
                                 "cannot be fed");
}

}  // namespace
}  // namespace flowtrain::data
