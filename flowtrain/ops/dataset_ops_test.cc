// tf.data ops (ops/dataset_ops.h, kernels/dataset_kernels.cc) run in a session.
#include "flowtrain/ops/dataset_ops.h"

#include <filesystem>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "flowtrain/io/record_writer.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/proto/resource_handle.pb.h"
#include "flowtrain/runtime/session.h"
#include "tests/test_util.h"

namespace flowtrain::data {
namespace {

using namespace std::chrono_literals;

// Runs `next` until OutOfRange and returns the first component of every element as int64.
std::vector<int64_t> Drain(Session& sess, const std::vector<Output>& next) {
  std::vector<int64_t> out;
  try {
    for (;;) {
      Tensor t = sess.Run({}, next)[0];
      for (int64_t v : t.flat<int64_t>()) out.push_back(v);
    }
  } catch (const OutOfRangeError& e) {
    EXPECT_NE(std::string(e.what()).find("End of sequence"), std::string::npos);
  }
  return out;
}

Tensor Range(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return Tensor::FromVector<int64_t>(v);
}

TEST(Dataset, SlicesMapsFiltersBatchesAndEnds) {
  Graph g;
  auto as_default = g.AsDefault();
  Tensor labels = Range(10);
  Tensor features(DT_FLOAT, TensorShape({10, 3}));
  for (int i = 0; i < 30; ++i) features.flat<float>()[i] = static_cast<float>(i);
  Dataset ds =
      Dataset::FromTensorSlices(std::vector<Tensor>{labels, features})
          .Filter([](const std::vector<Tensor>& e) { return e[0].scalar<int64_t>() % 2 == 0; })
          .Map(
              [](const std::vector<Tensor>& e) {
                return std::vector<Tensor>{Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() * 10), e[1]};
              },
              {.output_shapes = {PartialTensorShape({}), PartialTensorShape({3})}})
          .Batch(2);
  EXPECT_EQ(ds.variant().op().type(), "BatchDatasetV2");
  EXPECT_EQ(ds.output_shapes()[1].DebugString(), "[?,3]");
  Iterator it = ds.MakeInitializableIterator();
  std::vector<Output> next = it.GetNext();
  EXPECT_EQ(next[1].shape().DebugString(), "[?,3]");
  Session sess(g);
  EXPECT_THROW(sess.Run({}, next), FailedPreconditionError);  // not initialized
  sess.Run({}, {}, {it.initializer()});
  std::vector<Tensor> first = sess.Run({}, next);
  EXPECT_EQ(first[1].shape(), TensorShape({2, 3}));
  EXPECT_EQ(first[1].flat<float>()[3], 6.0f);                        // element 2's first feature
  EXPECT_EQ(Drain(sess, next), (std::vector<int64_t>{40, 60, 80}));  // last batch has 1
  // Re-running the initializer starts over.
  sess.Run({}, {}, {it.initializer()});
  EXPECT_EQ(Drain(sess, next), (std::vector<int64_t>{0, 20, 40, 60, 80}));
}

TEST(Dataset, ShuffleRepeatTakeSkip) {
  Graph g;
  auto as_default = g.AsDefault();
  Dataset base = Dataset::FromTensorSlices(std::vector<Tensor>{Range(20)});
  Iterator shuffled = base.Shuffle(20, 7).Repeat(2).MakeInitializableIterator();
  Iterator window = base.Skip(5).Take(3).MakeInitializableIterator();
  Iterator drop = base.Batch(6, /*drop_remainder=*/true).MakeInitializableIterator();
  auto next = shuffled.GetNext();
  auto window_next = window.GetNext();
  auto drop_next = drop.GetNext("drop_next");
  EXPECT_EQ(drop_next[0].shape().DebugString(), "[6]");
  Session sess(g);
  sess.Run({}, {}, {shuffled.initializer(), window.initializer(), drop.initializer()});
  std::vector<int64_t> values = Drain(sess, next);
  ASSERT_EQ(values.size(), 40u);
  std::vector<int64_t> epoch1(values.begin(), values.begin() + 20), epoch2(values.begin() + 20, values.end());
  EXPECT_EQ(std::set<int64_t>(epoch1.begin(), epoch1.end()).size(), 20u);
  EXPECT_EQ(std::set<int64_t>(epoch2.begin(), epoch2.end()).size(), 20u);
  EXPECT_NE(epoch1, epoch2);  // reshuffled each iteration
  EXPECT_EQ(Drain(sess, window_next), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(Drain(sess, drop_next).size(), 18u);  // three batches of 6, the 2 left dropped

  // The same seed gives the same order in another session.
  Session other(g);
  other.Run({}, {}, {shuffled.initializer()});
  EXPECT_EQ(Drain(other, next), values);
}

TEST(Dataset, ParallelMapKeepsOrderAndPrefetchRunsAhead) {
  Graph g;
  auto as_default = g.AsDefault();
  std::atomic<int> calls{0};
  Dataset ds = Dataset::FromTensorSlices(std::vector<Tensor>{Range(100)})
                   .Map(
                       [&](const std::vector<Tensor>& e) {
                         ++calls;
                         return std::vector<Tensor>{Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() + 1000)};
                       },
                       {.output_shapes = {PartialTensorShape({})}, .num_parallel_calls = 4})
                   .Batch(10)
                   .Prefetch(2);
  EXPECT_EQ(ds.variant().op().input(0).op().input(0).op().type(), "ParallelMapDataset");
  Iterator it = ds.MakeInitializableIterator();
  auto next = it.GetNext();
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  Tensor first = sess.Run({}, next)[0];
  EXPECT_EQ(first.flat<int64_t>()[9], 1009);
  std::this_thread::sleep_for(50ms);
  EXPECT_GE(calls.load(), 30);  // two more batches prefetched
  std::vector<int64_t> rest = Drain(sess, next);
  ASSERT_EQ(rest.size(), 90u);
  for (int i = 0; i < 90; ++i) ASSERT_EQ(rest[i], 1010 + i);
}

// Waits (up to 10 s, for loaded machines) until `count` reaches `expected`.
bool EventuallyEquals(const std::atomic<int>& count, int expected) {
  for (int i = 0; i < 1000 && count.load() < expected; ++i) std::this_thread::sleep_for(10ms);
  return count.load() == expected;
}

TEST(Dataset, PrefetchRefillsOnceHalfTheBufferIsTaken) {
  Graph g;
  auto as_default = g.AsDefault();
  std::atomic<int> calls{0};
  Dataset ds = Dataset::FromTensorSlices(std::vector<Tensor>{Range(100)})
                   .Map([&](const std::vector<Tensor>& e) {
                     ++calls;
                     return e;
                   })
                   .Prefetch(8);
  Iterator it = ds.MakeInitializableIterator();
  auto next = it.GetNext();
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  int64_t taken = 0;
  EXPECT_EQ(sess.Run({}, next)[0].scalar<int64_t>(), taken++);
  // The buffer fills up (8, or 9 produced if the first was taken before it was full).
  ASSERT_TRUE(EventuallyEquals(calls, 8) || calls.load() == 9);
  std::this_thread::sleep_for(30ms);
  const int produced = calls.load();
  // Taking elements while more than half of the buffer is left wakes no producer...
  while (produced - taken > 5) {
    EXPECT_EQ(sess.Run({}, next)[0].scalar<int64_t>(), taken++);
    std::this_thread::sleep_for(5ms);
    EXPECT_EQ(calls.load(), produced);
  }
  // ...taking the one that leaves half refills it to 8.
  EXPECT_EQ(sess.Run({}, next)[0].scalar<int64_t>(), taken++);
  EXPECT_TRUE(EventuallyEquals(calls, static_cast<int>(taken) + 8));
  std::vector<int64_t> rest = Drain(sess, next);
  ASSERT_EQ(rest.size(), static_cast<size_t>(100 - taken));
  for (size_t i = 0; i < rest.size(); ++i) ASSERT_EQ(rest[i], taken + static_cast<int64_t>(i));
}

TEST(Dataset, AutotunedPrefetchKeepsOrderAndBadBufferSizesAreRejected) {
  for (int64_t buffer_size : {kAutotune, int64_t{0}}) {
    Graph g;
    auto as_default = g.AsDefault();
    Iterator it = Dataset::FromTensorSlices(std::vector<Tensor>{Range(50)})
                      .Batch(4)
                      .Prefetch(buffer_size)
                      .MakeInitializableIterator();
    auto next = it.GetNext();
    Session sess(g);
    sess.Run({}, {}, {it.initializer()});
    std::vector<int64_t> all = Drain(sess, next);
    ASSERT_EQ(all.size(), 50u);
    for (int i = 0; i < 50; ++i) ASSERT_EQ(all[i], i);
  }
  Graph g;
  auto as_default = g.AsDefault();
  Iterator it =
      Dataset::FromTensorSlices(std::vector<Tensor>{Range(5)}).Prefetch(-2).MakeInitializableIterator();
  Session sess(g);
  try {
    sess.Run({}, {}, {it.initializer()});
    FAIL() << "a buffer size of -2 was accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("buffer_size must be >= 0"), std::string::npos) << e.what();
  }
}

TEST(Dataset, MapExceptionReachesSessionRunThroughPrefetch) {
  for (int parallel_calls : {1, 3}) {  // MapDataset and ParallelMapDataset
    SCOPED_TRACE(parallel_calls);
    Graph g;
    auto as_default = g.AsDefault();
    Dataset ds = Dataset::FromTensorSlices(std::vector<Tensor>{Range(10)})
                     .Map(
                         [](const std::vector<Tensor>& e) -> std::vector<Tensor> {
                           if (e[0].scalar<int64_t>() == 3) throw std::runtime_error("bad element 3");
                           return e;
                         },
                         {.num_parallel_calls = parallel_calls})
                     .Prefetch(4);
    Iterator it = ds.MakeInitializableIterator();
    auto next = it.GetNext();
    Session sess(g);
    sess.Run({}, {}, {it.initializer()});
    for (int i = 0; i < 3; ++i) EXPECT_EQ(sess.Run({}, next)[0].scalar<int64_t>(), i);
    try {
      sess.Run({}, next);
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bad element 3"), std::string::npos) << e.what();
    }
  }
}

TEST(Dataset, MapOutputOfTheWrongTypeIsAnError) {
  Graph g;
  auto as_default = g.AsDefault();
  Dataset ds = Dataset::FromTensorSlices(std::vector<Tensor>{Range(3)}).Map([](const std::vector<Tensor>&) {
    return std::vector<Tensor>{Tensor::Scalar<float>(1)};
  });
  Iterator it = ds.MakeInitializableIterator();
  auto next = it.GetNext();
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  EXPECT_THROW(sess.Run({}, next), InvalidArgumentError);
}

std::string WriteRecords(const std::string& path, int n) {
  io::RecordWriter writer(path);
  for (int i = 0; i < n; ++i) writer.WriteRecord("record-" + std::to_string(i));
  writer.Close();
  return path;
}

TEST(Dataset, TFRecordReadsFilesInOrderAndNamesACorruptRecord) {
  const std::string dir = testing::MakeTempDir("tfrecord_ds");
  const std::string a = WriteRecords(dir + "/a.tfrecord", 3);
  const std::string b = WriteRecords(dir + "/b.tfrecord", 4);
  Graph g;
  auto as_default = g.AsDefault();
  Iterator it = Dataset::TFRecord({a, b}).MakeInitializableIterator();
  Output next = it.GetNext()[0];
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  std::vector<std::string> records;
  try {
    for (;;) records.push_back(next.Eval(sess).scalar<std::string>());
  } catch (const OutOfRangeError&) {
  }
  EXPECT_EQ(records.size(), 7u);
  EXPECT_EQ(records[3], "record-0");
  // Damage the payload of b's record 2 (each record: 12 framing bytes, 8 payload, 4 crc).
  FILE* f = std::fopen(b.c_str(), "r+b");
  std::fseek(f, 2 * 24 + 12 + 2, SEEK_SET);
  std::fputc('#', f);
  std::fclose(f);
  sess.Run({}, {}, {it.initializer()});
  for (int i = 0; i < 5; ++i) next.Eval(sess);
  try {
    next.Eval(sess);
    FAIL();
  } catch (const DataLossError& e) {
    EXPECT_NE(std::string(e.what()).find("Record 2 of " + b), std::string::npos) << e.what();
  }
}

TEST(Dataset, TFRecordNamesATruncatedRecord) {
  const std::string dir = testing::MakeTempDir("tfrecord_truncated");
  const std::string path = WriteRecords(dir + "/t.tfrecord", 4);
  // Cut the file inside record 3's payload (each record takes 24 bytes).
  std::filesystem::resize_file(path, 3 * 24 + 12 + 3);
  Graph g;
  auto as_default = g.AsDefault();
  Iterator it = Dataset::TFRecord({path}).Batch(2).MakeInitializableIterator();
  Output next = it.GetNext()[0];
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  EXPECT_EQ(next.Eval(sess).NumElements(), 2);
  try {
    next.Eval(sess);
    FAIL();
  } catch (const DataLossError& e) {
    EXPECT_NE(std::string(e.what()).find("Record 3 of " + path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Truncated"), std::string::npos) << e.what();
  }
}

// A map function's error over records read from a file is preceded by the records' origin,
// through Shuffle and Prefetch, in sequential and parallel maps, for single records and batches.
TEST(Dataset, MapErrorOverFileRecordsNamesFileAndRecordIndex) {
  const std::string dir = testing::MakeTempDir("tfrecord_map_error");
  const std::string a = WriteRecords(dir + "/a.tfrecord", 3);
  const std::string b = WriteRecords(dir + "/b.tfrecord", 5);
  auto fail_on_b2 = [](const std::vector<Tensor>& e) -> std::vector<Tensor> {
    for (const std::string& record : e[0].flat<std::string>()) {
      if (record == "record-2" && e[0].dims() == 0) throw std::runtime_error("cannot map record-2");
      if (record == "record-4" && e[0].dims() == 1) InvalidArgument("cannot map a batch holding record-4");
    }
    return e;
  };
  for (int parallel_calls : {1, 3}) {
    SCOPED_TRACE(parallel_calls);
    Graph g;
    auto as_default = g.AsDefault();
    // Single records: a's record 2 fails as well, so read b alone.
    Iterator single = Dataset::TFRecord({b})
                          .Shuffle(3, 5)
                          .Prefetch(2)
                          .Map(fail_on_b2, {.num_parallel_calls = parallel_calls})
                          .MakeInitializableIterator();
    Iterator batched = Dataset::TFRecord({a, b})
                           .Batch(4)
                           .Prefetch(1)
                           .Map(fail_on_b2, {.num_parallel_calls = parallel_calls})
                           .MakeInitializableIterator();
    Output single_next = single.GetNext()[0], batched_next = batched.GetNext()[0];
    Session sess(g);
    sess.Run({}, {}, {single.initializer(), batched.initializer()});
    auto first_error = [&](Output next) -> std::string {
      try {
        for (;;) next.Eval(sess);
      } catch (const OutOfRangeError&) {
        return "no error";
      } catch (const Error& e) {
        return e.what();
      }
    };
    const std::string single_error = first_error(single_next);
    EXPECT_NE(single_error.find("In record 2 of " + b + ": cannot map record-2"), std::string::npos)
        << single_error;
    // Batches: a0 a1 a2 b0 | b1 b2 b3 b4.
    const std::string batch_error = first_error(batched_next);
    EXPECT_NE(batch_error.find("In a batch of 4 records, the first record 1 of " + b +
                               ": cannot map a batch holding record-4"),
              std::string::npos)
        << batch_error;
  }
}

TEST(Dataset, RestoredIteratorContinuesWithTheNextUnseenElement) {
  // Shuffle + repeat + prefetch: the saved state holds the shuffle buffer, its random state,
  // the epoch and the prefetched elements.
  auto build = [](Graph& g) {
    auto as_default = g.AsDefault();
    Dataset ds = Dataset::FromTensorSlices(std::vector<Tensor>{Range(30)})
                     .Shuffle(8, 11)
                     .Repeat(3)
                     .Map([](const std::vector<Tensor>& e) { return e; },
                          {.output_shapes = {PartialTensorShape({})}, .num_parallel_calls = 3})
                     .Batch(4)
                     .Prefetch(3);
    return ds.MakeInitializableIterator("pipeline");
  };
  Graph g1;
  Iterator it1 = build(g1);
  auto next1 = it1.GetNext();
  Output save1 = it1.Serialize();
  Session reference(g1);
  reference.Run({}, {}, {it1.initializer()});
  const std::vector<int64_t> all = Drain(reference, next1);
  ASSERT_EQ(all.size(), 90u);

  Session first_run(g1);
  first_run.Run({}, {}, {it1.initializer()});
  std::vector<int64_t> seen;
  for (int i = 0; i < 11; ++i) {  // into the second epoch
    // Held in a local: a range-for over Run(...)[0].flat() would read the batch after the
    // temporary Tensor released it (the prefetch thread reuses the memory for the next batch).
    const Tensor batch = first_run.Run({}, next1)[0];
    for (int64_t v : batch.flat<int64_t>()) seen.push_back(v);
  }
  const Tensor state = first_run.Run({}, {save1})[0];
  EXPECT_EQ(state.dtype(), DT_STRING);
  first_run.Close();

  // A new graph and session, as after a restart: restore, then continue.
  Graph g2;
  Iterator it2 = build(g2);
  auto next2 = it2.GetNext();
  Output state_in;
  Operation restore;
  {
    auto as_default = g2.AsDefault();
    state_in = ops::Placeholder(DT_STRING, PartialTensorShape({}), "state");
    restore = it2.Deserialize(state_in);
  }
  Session second_run(g2);
  second_run.Run({}, {}, {it2.initializer()});
  second_run.Run({{state_in, state}}, {}, {restore});
  std::vector<int64_t> rest = Drain(second_run, next2);
  seen.insert(seen.end(), rest.begin(), rest.end());
  EXPECT_EQ(seen, all);
}

TEST(Dataset, DeserializeRejectsGarbage) {
  Graph g;
  auto as_default = g.AsDefault();
  Iterator it = Dataset::FromTensorSlices(std::vector<Tensor>{Range(3)}).MakeInitializableIterator();
  Operation restore = it.Deserialize(ops::Const(std::string("not a state")));
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  EXPECT_THROW(sess.Run({}, {}, {restore}), DataLossError);
}

TEST(Dataset, SessionCloseWakesABlockedGetNext) {
  Graph g;
  auto as_default = g.AsDefault();
  std::atomic<bool> release{false};
  Dataset ds = Dataset::FromTensorSlices(std::vector<Tensor>{Range(3)})
                   .Map([&](const std::vector<Tensor>& e) {
                     while (!release.load()) std::this_thread::sleep_for(1ms);
                     return e;
                   })
                   .Prefetch(1);
  Iterator it = ds.MakeInitializableIterator();
  auto next = it.GetNext();
  Session sess(g);
  sess.Run({}, {}, {it.initializer()});
  RunOptions options;
  options.timeout_in_ms = 30;
  EXPECT_THROW(sess.Run({}, next, {}, &options), DeadlineExceededError);
  std::thread closer([&] {
    std::this_thread::sleep_for(30ms);
    sess.Close();
  });
  EXPECT_THROW(sess.Run({}, next), CancelledError);
  closer.join();
  release = true;
}

TEST(Dataset, IteratorFromStructureSwitchesDatasets) {
  Graph g;
  auto as_default = g.AsDefault();
  Dataset train = Dataset::FromTensorSlices(std::vector<Tensor>{Range(4)});
  Dataset eval =
      Dataset::FromTensorSlices(std::vector<Tensor>{Range(2)}).Map([](const std::vector<Tensor>& e) {
        return std::vector<Tensor>{Tensor::Scalar<int64_t>(-e[0].scalar<int64_t>())};
      });
  Iterator it = Iterator::FromStructure({DT_INT64}, {PartialTensorShape({})});
  Operation use_train = it.MakeInitializer(train);
  Operation use_eval = it.MakeInitializer(eval);
  auto next = it.GetNext();
  Session sess(g);
  sess.Run({}, {}, {use_train});
  EXPECT_EQ(Drain(sess, next).size(), 4u);
  sess.Run({}, {}, {use_eval});
  EXPECT_EQ(Drain(sess, next), (std::vector<int64_t>{0, -1}));
}

// The pipeline TF 1.x's Estimator builds around a dataset, node for node: TensorDataset
// (Dataset.from_tensors) under RepeatDataset, wrapped in OptimizeDataset and ModelDataset, read
// through IteratorV2 with its string handle.
class TensorFlowIteratorPipeline : public ::testing::Test {
 protected:
  Output TensorDataset(const std::vector<Output>& components) {
    std::vector<PartialTensorShape> shapes;
    for (const Output& c : components) shapes.push_back(c.shape());
    return NodeBuilder("TensorDataset", "TensorDataset")
        .Input(components)
        .Attr("output_shapes", shapes)
        .Finalize();
  }
  Output Wrapped(Output dataset, Output optimizations) {
    Output optimized = NodeBuilder("OptimizeDataset", "OptimizeDataset")
                           .Input(dataset)
                           .Input(optimizations)
                           .Attr("output_types", types_)
                           .Attr("output_shapes", shapes_)
                           .Finalize();
    return NodeBuilder("ModelDataset", "ModelDataset")
        .Input(optimized)
        .Attr("output_types", types_)
        .Attr("output_shapes", shapes_)
        .Finalize();
  }

  Graph g_;
  std::vector<DataType> types_ = {DT_INT64, DT_FLOAT};
  std::vector<PartialTensorShape> shapes_ = {PartialTensorShape({}), PartialTensorShape({2})};
};

TEST_F(TensorFlowIteratorPipeline, FromTensorsRepeatsThroughOptimizeAndModel) {
  auto as_default = g_.AsDefault();
  Output element = TensorDataset({ops::Const<int64_t>(7), ops::Const<float>({0.5f, -1.5f})});
  EXPECT_TRUE(g_.FindNode("TensorDataset")->op_def().is_stateful());  // as in TF's registry
  Output repeated = NodeBuilder("RepeatDataset", "RepeatDataset")
                        .Input(element)
                        .Input(ops::Const<int64_t>(3))
                        .Attr("output_types", types_)
                        .Attr("output_shapes", shapes_)
                        .Finalize();
  Output dataset = Wrapped(repeated, ops::Const<std::string>({"map_and_batch_fusion", "noop_elimination"}));
  Iterator it = Iterator::FromStructure(types_, shapes_);
  Operation make = NodeBuilder("MakeIterator", "MakeIterator").Input(dataset).Input(it.handle()).Finalize();
  Output string_handle =
      NodeBuilder("IteratorToStringHandle", "IteratorToStringHandle").Input(it.handle()).Finalize();
  std::vector<Output> next = it.GetNext();
  Session sess(g_);
  // The string handle names the iterator before it is initialized, as TF's does.
  tensorflow::ResourceHandleProto handle;
  ASSERT_TRUE(handle.ParseFromString(sess.Run({}, {string_handle})[0].scalar<std::string>()));
  EXPECT_EQ(handle.name(), it.handle().op().name());
  EXPECT_EQ(handle.maybe_type_name(), "Iterator");
  sess.Run({}, {}, {make});
  for (int i = 0; i < 3; ++i) {
    std::vector<Tensor> out = sess.Run({}, next);
    EXPECT_EQ(out[0].scalar<int64_t>(), 7);
    EXPECT_EQ(testing::Values<float>(out[1]), (std::vector<float>{0.5f, -1.5f}));
  }
  EXPECT_THROW(sess.Run({}, next), OutOfRangeError);
}

TEST_F(TensorFlowIteratorPipeline, FromTensorsSavesWhetherItsElementWasTaken) {
  auto as_default = g_.AsDefault();
  Output dataset = Wrapped(TensorDataset({ops::Const<int64_t>(7), ops::Const<float>({0.5f, -1.5f})}),
                           ops::Const(Tensor(DT_STRING, TensorShape({0}))));
  Iterator it = Iterator::FromStructure(types_, shapes_);
  Operation make = NodeBuilder("MakeIterator", "MakeIterator").Input(dataset).Input(it.handle()).Finalize();
  std::vector<Output> next = it.GetNext();
  Output saved = it.Serialize();
  Output state = ops::Placeholder(DT_STRING);
  Operation restore = it.Deserialize(state);
  Session sess(g_);
  sess.Run({}, {}, {make});
  const Tensor before = sess.Run({}, {saved})[0];
  EXPECT_EQ(sess.Run({}, next)[0].scalar<int64_t>(), 7);
  const Tensor after = sess.Run({}, {saved})[0];
  EXPECT_THROW(sess.Run({}, next), OutOfRangeError);
  sess.Run({{state, before}}, {}, {restore});
  EXPECT_EQ(sess.Run({}, next)[0].scalar<int64_t>(), 7);
  sess.Run({{state, after}}, {}, {restore});
  EXPECT_THROW(sess.Run({}, next), OutOfRangeError);
}

TEST_F(TensorFlowIteratorPipeline, OptimizationsMustBeAVector) {
  auto as_default = g_.AsDefault();
  Output dataset = Wrapped(TensorDataset({ops::Const<int64_t>(7), ops::Const<float>({0.5f, -1.5f})}),
                           ops::Const<std::string>("noop_elimination"));
  Iterator it = Iterator::FromStructure(types_, shapes_);
  Operation make = NodeBuilder("MakeIterator", "MakeIterator").Input(dataset).Input(it.handle()).Finalize();
  Session sess(g_);
  testing::ExpectInvalidArgument([&] { sess.Run({}, {}, {make}); },
                                 {"OptimizeDataset", "optimizations must be a vector"});
}

}  // namespace
}  // namespace flowtrain::data
