// The tf.data breadth datasets (issue #20) run in a session: Range, Zip, Concatenate, Shard,
// Unbatch, PaddedBatch, Cache, ShuffleAndRepeat and feedable iterators, with their errors and a
// save/restore of each iterator's position.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowtrain/core/file_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/proto/resource_handle.pb.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain::data {
namespace {

// Every element's components, flattened to int64 values, until OutOfRange.
std::vector<std::vector<int64_t>> DrainAll(Session& sess, const std::vector<Output>& next) {
  std::vector<std::vector<int64_t>> out;
  try {
    for (;;) {
      std::vector<int64_t> row;
      for (const Tensor& t : sess.Run({}, next))
        for (int64_t v : t.flat<int64_t>()) row.push_back(v);
      out.push_back(row);
    }
  } catch (const OutOfRangeError&) {
  }
  return out;
}

// Runs the pipeline `build` makes to the end; then again, saving after `taken` elements and
// restoring into a fresh graph and session: the restored run must produce the same rest.
void ExpectRestoreContinues(const std::function<Dataset()>& build, int taken) {
  Graph g1;
  std::vector<std::vector<int64_t>> all, seen;
  Tensor state;
  {
    auto as_default = g1.AsDefault();
    Iterator it = build().MakeInitializableIterator();
    auto next = it.GetNext();
    Output save = it.Serialize();
    Session sess(g1);
    sess.Run({}, {}, {it.initializer()});
    all = DrainAll(sess, next);
    ASSERT_GT(static_cast<int>(all.size()), taken);
    sess.Run({}, {}, {it.initializer()});
    for (int i = 0; i < taken; ++i) {
      std::vector<int64_t> row;
      for (const Tensor& t : sess.Run({}, next))
        for (int64_t v : t.flat<int64_t>()) row.push_back(v);
      seen.push_back(row);
    }
    state = sess.Run({}, {save})[0];
  }
  Graph g2;
  auto as_default = g2.AsDefault();
  Iterator it = build().MakeInitializableIterator();
  auto next = it.GetNext();
  Output state_in = ops::Placeholder(DT_STRING, PartialTensorShape({}), "state");
  Operation restore = it.Deserialize(state_in);
  Session sess(g2);
  sess.Run({}, {}, {it.initializer()});
  sess.Run({{state_in, state}}, {}, {restore});
  auto rest = DrainAll(sess, next);
  seen.insert(seen.end(), rest.begin(), rest.end());
  EXPECT_EQ(seen, all);
}

std::vector<std::vector<int64_t>> RunToEnd(const Dataset& ds) {
  Iterator it = ds.MakeInitializableIterator();
  auto next = it.GetNext();
  Session sess(*ds.variant().graph());
  sess.Run({}, {}, {it.initializer()});
  return DrainAll(sess, next);
}

using Rows = std::vector<std::vector<int64_t>>;

TEST(RangeDataset, CountsUpAndDownAndRejectsAZeroStep) {
  Graph g;
  auto as_default = g.AsDefault();
  EXPECT_EQ(RunToEnd(Dataset::Range(0, 10, 3)), (Rows{{0}, {3}, {6}, {9}}));
  EXPECT_EQ(RunToEnd(Dataset::Range(10, 0, -3)), (Rows{{10}, {7}, {4}, {1}}));
  EXPECT_TRUE(RunToEnd(Dataset::Range(5, 5)).empty());
  EXPECT_EQ(Dataset::Range(0, 1).variant().op().type(), "RangeDataset");
  testing::ExpectInvalidArgument([] { Dataset::Range(0, 5, 0); }, "step must be a non-zero integer");
  ExpectRestoreContinues([] { return Dataset::Range(3, 20, 2); }, 3);
}

TEST(ZipDataset, PairsElementsAndEndsWithTheShortest) {
  Graph g;
  auto as_default = g.AsDefault();
  Dataset zipped = Dataset::Zip({Dataset::Range(0, 5), Dataset::Range(10, 13)});
  EXPECT_EQ(zipped.output_types().size(), 2u);
  EXPECT_EQ(RunToEnd(zipped), (Rows{{0, 10}, {1, 11}, {2, 12}}));
  ExpectRestoreContinues([] { return Dataset::Zip({Dataset::Range(0, 8), Dataset::Range(0, 16, 2)}); }, 2);
}

TEST(ConcatenateDataset, RunsOneThenTheOtherAndChecksTypes) {
  Graph g;
  auto as_default = g.AsDefault();
  EXPECT_EQ(RunToEnd(Dataset::Range(0, 2).Concatenate(Dataset::Range(7, 9))), (Rows{{0}, {1}, {7}, {8}}));
  Dataset strings = Dataset::FromTensorSlices(std::vector<Tensor>{Tensor::FromVector<std::string>({"a"})});
  testing::ExpectInvalidArgument([&] { Dataset::Range(0, 2).Concatenate(strings); }, "different types");
  ExpectRestoreContinues([] { return Dataset::Range(0, 3).Concatenate(Dataset::Range(10, 14)); }, 2);
  ExpectRestoreContinues([] { return Dataset::Range(0, 3).Concatenate(Dataset::Range(10, 14)); }, 5);
}

TEST(ShardDataset, TakesEveryNthElementAndChecksItsArguments) {
  Graph g;
  auto as_default = g.AsDefault();
  EXPECT_EQ(RunToEnd(Dataset::Range(0, 10).Shard(3, 1)), (Rows{{1}, {4}, {7}}));
  ExpectRestoreContinues([] { return Dataset::Range(0, 20).Shard(4, 3); }, 2);
  Session sess(g);
  auto run_init = [&](const Dataset& ds) {
    Iterator it = ds.MakeInitializableIterator();
    auto next = it.GetNext();
    Session s(g);
    s.Run({}, {}, {it.initializer()});
    DrainAll(s, next);
  };
  testing::ExpectInvalidArgument([&] { run_init(Dataset::Range(0, 5).Shard(0, 0)); },
                                 "Number of shards must be greater than zero (currently num_shards = 0).");
  testing::ExpectInvalidArgument([&] { run_init(Dataset::Range(0, 5).Shard(2, 2)); },
                                 "Index must be between 0 and 1 (currently index = 2).");
  testing::ExpectInvalidArgument([&] { run_init(Dataset::Range(0, 1).Shard(2, 0, true)); },
                                 "Could not apply FILE based sharding");
}

TEST(UnbatchDataset, SplitsBatchesBackIntoElements) {
  Graph g;
  auto as_default = g.AsDefault();
  Dataset ds = Dataset::Range(0, 7).Batch(3).Unbatch();
  EXPECT_EQ(ds.output_shapes()[0].DebugString(), "[]");
  EXPECT_EQ(RunToEnd(ds), (Rows{{0}, {1}, {2}, {3}, {4}, {5}, {6}}));
  ExpectRestoreContinues([] { return Dataset::Range(0, 10).Batch(4).Unbatch(); }, 5);
  Dataset scalars = Dataset::FromTensorSlices(std::vector<Tensor>{Tensor::FromVector<int64_t>({1, 2})});
  testing::ExpectInvalidArgument([&] { scalars.Unbatch(); },
                                 "Cannot unbatch an input with scalar components.");
}

TEST(PaddedBatchDataset, PadsToTheBatchMaximumWithThePaddingValue) {
  Graph g;
  auto as_default = g.AsDefault();
  // Elements [], [1], [2, 2], [3, 3, 3]: Range mapped to a vector of n copies of n.
  auto fill = [] {
    return Dataset::Range(0, 4).Map(
        [](const std::vector<Tensor>& e) {
          const int64_t n = e[0].scalar<int64_t>();
          return std::vector<Tensor>{Tensor::FromVector<int64_t>(std::vector<int64_t>(n, n))};
        },
        {.output_shapes = {PartialTensorShape({-1})}});
  };
  Dataset ds = fill().PaddedBatch(3, {PartialTensorShape({-1})}, {Tensor::Scalar<int64_t>(-1)});
  EXPECT_EQ(ds.output_shapes()[0].DebugString(), "[?,?]");
  Iterator it = ds.MakeInitializableIterator();
  auto next = it.GetNext();
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  Tensor first = sess.Run({}, next)[0];
  EXPECT_EQ(first.shape(), TensorShape({3, 2}));
  EXPECT_EQ(testing::Values<int64_t>(first), (std::vector<int64_t>{-1, -1, 1, -1, 2, 2}));
  Tensor second = sess.Run({}, next)[0];
  EXPECT_EQ(second.shape(), TensorShape({1, 3}));
  EXPECT_THROW(sess.Run({}, next), OutOfRangeError);
  // A fixed padded shape, and drop_remainder.
  EXPECT_EQ(RunToEnd(fill().PaddedBatch(2, {PartialTensorShape({4})}, {}, true)),
            (Rows{{0, 0, 0, 0, 1, 0, 0, 0}, {2, 2, 0, 0, 3, 3, 3, 0}}));
  // Too small a padded shape is an error at run time.
  Iterator small = fill().PaddedBatch(4, {PartialTensorShape({2})}).MakeInitializableIterator();
  auto small_next = small.GetNext();
  sess.Run({}, {}, {small.initializer()});
  testing::ExpectInvalidArgument([&] { sess.Run({}, small_next); }, "larger than the padded shape");
  testing::ExpectInvalidArgument(
      [&] {
        fill().PaddedBatch(2, {PartialTensorShape({2, 2})});
      },
      "is not compatible with its shape");
  ExpectRestoreContinues([&] { return fill().Repeat(3).PaddedBatch(5); }, 1);
}

// Range(0, n) through a map that counts its calls in `*calls`.
Dataset Counted(int64_t n, std::shared_ptr<std::atomic<int>> calls) {
  return Dataset::Range(0, n).Map([calls](const std::vector<Tensor>& e) {
    ++*calls;
    return e;
  });
}

TEST(CacheDataset, InMemoryTheInputRunsOnceAndAnIncompletePassKeepsNothing) {
  Graph g;
  auto as_default = g.AsDefault();
  auto calls = std::make_shared<std::atomic<int>>(0);
  EXPECT_EQ(RunToEnd(Counted(4, calls).Cache().Repeat(3)),
            (Rows{{0}, {1}, {2}, {3}, {0}, {1}, {2}, {3}, {0}, {1}, {2}, {3}}));
  EXPECT_EQ(*calls, 4);
  // Take(2) stops each pass early: nothing is cached, every epoch reads the input again.
  *calls = 0;
  EXPECT_EQ(RunToEnd(Counted(4, calls).Cache().Take(2).Repeat(2)), (Rows{{0}, {1}, {0}, {1}}));
  EXPECT_EQ(*calls, 4);
  // Restores while filling (the cached part travels in the state) and while replaying.
  ExpectRestoreContinues([] { return Dataset::Range(0, 5).Cache().Repeat(2); }, 2);
  ExpectRestoreContinues([] { return Dataset::Range(0, 5).Cache().Repeat(2); }, 7);
}

TEST(CacheDataset, InAFileItIsReadByTheNextPipelineWithTfsKeys) {
  const std::string dir = testing::MakeTempDir("cache");
  const std::string prefix = dir + "/sub/cache";
  {
    Graph g;
    auto as_default = g.AsDefault();
    auto calls = std::make_shared<std::atomic<int>>(0);
    EXPECT_EQ(RunToEnd(Counted(3, calls).Cache(prefix).Repeat(2)), (Rows{{0}, {1}, {2}, {0}, {1}, {2}}));
    EXPECT_EQ(*calls, 3);  // the second epoch read the file
  }
  io::BundleReader reader(prefix);
  EXPECT_EQ(reader.ListKeys(), (std::vector<std::string>{"      0_0", "      1_0", "      2_0"}));
  EXPECT_FALSE(FileExists(prefix + "_0.lockfile"));
  {
    // Another pipeline over other data with the same cache replays the file, as TF does.
    Graph g;
    auto as_default = g.AsDefault();
    EXPECT_EQ(RunToEnd(Dataset::Range(50, 60).Cache(prefix)), (Rows{{0}, {1}, {2}}));
    // A cache of another dtype is refused, naming the file.
    Dataset strings = Dataset::FromTensorSlices(std::vector<Tensor>{Tensor::FromVector<std::string>({"a"})});
    testing::ExpectInvalidArgument([&] { RunToEnd(strings.Cache(prefix)); }, prefix);
  }
  ExpectRestoreContinues([&] { return Dataset::Range(0, 9).Cache(prefix); }, 1);  // replaying
}

TEST(CacheDataset, InAFileAnIncompletePassOrASecondWriterLeavesNoCache) {
  const std::string dir = testing::MakeTempDir("cache_partial");
  Graph g;
  auto as_default = g.AsDefault();
  EXPECT_EQ(RunToEnd(Dataset::Range(0, 5).Cache(dir + "/c").Take(2)), (Rows{{0}, {1}}));
  EXPECT_TRUE(ListDirectory(dir).empty()) << ListDirectory(dir)[0];
  WriteFileAtomically(dir + "/d_0.lockfile", "Created at: 0");
  testing::ExpectError<AlreadyExistsError>([&] { RunToEnd(Dataset::Range(0, 5).Cache(dir + "/d")); },
                                           {"concurrent caching iterator", dir + "/d_0.lockfile"});
  EXPECT_FALSE(FileExists(dir + "/d.index"));
  // Saved while writing, the restored iterator yields the rest and the next full pass writes.
  ExpectRestoreContinues([&] { return Dataset::Range(0, 6).Cache(dir + "/e"); }, 2);
  EXPECT_EQ(RunToEnd(Dataset::Range(0, 6).Cache(dir + "/e")), (Rows{{0}, {1}, {2}, {3}, {4}, {5}}));
  EXPECT_TRUE(FileExists(dir + "/e.index"));
}

TEST(ShuffleAndRepeatDataset, RepeatsCountTimesEpochByEpoch) {
  Graph g;
  auto as_default = g.AsDefault();
  Rows all = RunToEnd(Dataset::Range(0, 10).ShuffleAndRepeat(5, 3, 7));
  ASSERT_EQ(all.size(), 30u);
  EXPECT_EQ(RunToEnd(Dataset::Range(0, 10).ShuffleAndRepeat(5, 3, 7)), all);  // seeded
  // As in TF 2.21, an epoch drains before the next fills the buffer: each run of ten elements
  // is one epoch's ten values, and with reshuffle_each_iteration each epoch has its own order.
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::set<int64_t> values;
    for (int i = 0; i < 10; ++i) values.insert(all[epoch * 10 + i][0]);
    EXPECT_EQ(values.size(), 10u) << epoch;
  }
  EXPECT_NE(Rows(all.begin(), all.begin() + 10), Rows(all.begin() + 10, all.begin() + 20));
  // Without it, every epoch repeats the first one's order.
  Rows fixed = RunToEnd(Dataset::Range(0, 10).ShuffleAndRepeat(5, 2, 7, /*reshuffle_each_iteration=*/false));
  ASSERT_EQ(fixed.size(), 20u);
  EXPECT_EQ(Rows(fixed.begin(), fixed.begin() + 10), Rows(fixed.begin() + 10, fixed.end()));
  EXPECT_TRUE(RunToEnd(Dataset::Range(0, 0).ShuffleAndRepeat(4)).empty());  // ends, not forever
  EXPECT_TRUE(RunToEnd(Dataset::Range(0, 3).ShuffleAndRepeat(4, 0)).empty());
  ExpectRestoreContinues([] { return Dataset::Range(0, 6).ShuffleAndRepeat(4, 3, 11); }, 8);
}

// Range(0, 10) under TF 2.x's ShuffleDatasetV3 (buffer 4, seeds (87654321, 7)) whose seed
// generator `generator_op` makes, repeated twice.
Dataset ShuffleV3(const char* generator_op) {
  Dataset in = Dataset::Range(0, 10);
  Output generator = NodeBuilder(generator_op, generator_op).Finalize();
  Output variant = NodeBuilder("ShuffleDatasetV3", "ShuffleDatasetV3")
                       .Input(in.variant())
                       .Input(ops::Const<int64_t>(4))
                       .Input(ops::Const<int64_t>(87654321))
                       .Input(ops::Const<int64_t>(7))
                       .Input(generator)
                       .Attr("output_types", in.output_types())
                       .Attr("output_shapes", in.output_shapes())
                       .Finalize();
  return Dataset::FromVariant(variant, in.output_types(), in.output_shapes()).Repeat(2);
}

TEST(ShuffleDatasetV3, OverADummySeedGeneratorShufflesAsShuffleDataset) {
  {
    Graph g;
    auto as_default = g.AsDefault();
    const Rows v3 = RunToEnd(ShuffleV3("DummySeedGenerator"));
    ASSERT_EQ(v3.size(), 20u);
    EXPECT_EQ(v3, RunToEnd(Dataset::Range(0, 10).Shuffle(4, 7).Repeat(2)));
  }
  ExpectRestoreContinues([] { return ShuffleV3("DummySeedGenerator"); }, 13);
  // Another generator's state would outlive the dataset, which flowtrain does not model.
  Graph g;
  auto as_default = g.AsDefault();
  testing::ExpectError<UnimplementedError>([] { RunToEnd(ShuffleV3("DummyMemoryCache")); },
                                           {"ShuffleDatasetV3", "DummySeedGenerator"});
}

TEST(FeedableIterator, RunsWhicheverIteratorItsStringHandleNames) {
  Graph g;
  auto as_default = g.AsDefault();
  Dataset train = Dataset::Range(0, 100);
  Dataset eval = Dataset::Range(1000, 1002);
  Iterator train_it = train.MakeInitializableIterator();
  Iterator eval_it = eval.MakeInitializableIterator();
  Output handle = ops::Placeholder(DT_STRING, PartialTensorShape({}), "handle");
  Iterator feedable = Iterator::FromStringHandle(handle, train.output_types(), train.output_shapes());
  EXPECT_EQ(feedable.handle().op().type(), "IteratorFromStringHandleV2");
  auto next = feedable.GetNext();
  Dataset floats = Dataset::FromTensorSlices(std::vector<Tensor>{Tensor::FromVector<float>({1.5f})});
  Iterator float_it = floats.MakeInitializableIterator();
  Session sess(g);
  sess.Run({}, {}, {train_it.initializer(), eval_it.initializer(), float_it.initializer()});
  const auto handles =
      sess.Run({}, {train_it.StringHandle(), eval_it.StringHandle(), float_it.StringHandle()});
  auto next_of = [&](const Tensor& h) { return sess.Run({{handle, h}}, next)[0].scalar<int64_t>(); };
  EXPECT_EQ(next_of(handles[0]), 0);
  EXPECT_EQ(next_of(handles[0]), 1);
  EXPECT_EQ(next_of(handles[1]), 1000);
  EXPECT_EQ(next_of(handles[0]), 2);
  EXPECT_EQ(next_of(handles[1]), 1001);
  EXPECT_THROW(next_of(handles[1]), OutOfRangeError);
  EXPECT_EQ(next_of(handles[0]), 3);
  testing::ExpectInvalidArgument([&] { next_of(handles[2]); }, "data type mismatch at component 0");
  testing::ExpectInvalidArgument([&] { next_of(Tensor::Scalar<std::string>("\xff garbage")); },
                                 "could not parse string_handle");
  tensorflow::ResourceHandleProto missing;
  missing.set_name("no_such_iterator");
  testing::ExpectError<NotFoundError>(
      [&] { next_of(Tensor::Scalar<std::string>(missing.SerializeAsString())); }, {"no_such_iterator"});
}

TEST(MapAndBatchDataset, MapsThenBatchesOnAnyNumberOfThreads) {
  Graph g;
  auto as_default = g.AsDefault();
  auto twice = [](const std::vector<Tensor>& e) {
    return std::vector<Tensor>{Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() * 2)};
  };
  const MapOptions scalars = {.output_shapes = {PartialTensorShape({})}};
  Dataset ds = Dataset::Range(0, 10).MapAndBatch(twice, 4, scalars);
  EXPECT_EQ(ds.variant().op().type(), "MapAndBatchDataset");
  EXPECT_EQ(ds.output_shapes()[0].DebugString(), "[?]");
  EXPECT_EQ(RunToEnd(ds), (Rows{{0, 2, 4, 6}, {8, 10, 12, 14}, {16, 18}}));
  Dataset parallel = Dataset::Range(0, 10).MapAndBatch(
      twice, 4, {.output_shapes = {PartialTensorShape({})}, .num_parallel_calls = 2}, true);
  EXPECT_EQ(parallel.output_shapes()[0].DebugString(), "[4]");
  EXPECT_EQ(RunToEnd(parallel), (Rows{{0, 2, 4, 6}, {8, 10, 12, 14}}));
  testing::ExpectInvalidArgument([&] { Dataset::Range(0, 3).MapAndBatch(twice, 0); },
                                 "batch size must be at least 1");
  ExpectRestoreContinues([&] { return Dataset::Range(0, 11).MapAndBatch(twice, 3); }, 2);
  ExpectRestoreContinues(
      [&] { return Dataset::Range(0, 11).MapAndBatch(twice, 3, {.num_parallel_calls = 2}); }, 1);
}

}  // namespace
}  // namespace flowtrain::data
