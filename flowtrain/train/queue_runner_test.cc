// Queue ops in a session, QueueRunner, StartQueueRunners and the batch/producer helpers.
#include "flowtrain/train/queue_runner.h"

#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "flowtrain/io/record_writer.h"
#include "flowtrain/proto/example.pb.h"
#include "flowtrain/proto/queue_runner.pb.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/data_flow_ops.h"
#include "flowtrain/ops/parsing_ops.h"
#include "flowtrain/ops/reader_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/train/input.h"
#include "flowtrain/train/meta_graph.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

using namespace std::chrono_literals;

TEST(QueueOps, EnqueueDequeueAndCloseInASession) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::FIFOQueue queue(10, {DT_FLOAT, DT_STRING},
                       {.shapes = {PartialTensorShape({2}), PartialTensorShape({})}});
  EXPECT_EQ(queue.name(), "fifo_queue");
  EXPECT_EQ(queue.handle().dtype(), DT_RESOURCE);
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({2}), "x");
  Output s = ops::Placeholder(DT_STRING, PartialTensorShape({}), "s");
  Operation enqueue = queue.Enqueue({x, s});
  EXPECT_EQ(enqueue.name(), "fifo_queue_enqueue");
  EXPECT_EQ(enqueue.type(), "QueueEnqueueV2");
  std::vector<Output> one = queue.Dequeue();
  std::vector<Output> two = queue.DequeueMany(2);
  EXPECT_EQ(two[0].shape().DebugString(), "[2,2]");
  EXPECT_EQ(one[0].shape().DebugString(), "[2]");
  Output size = queue.Size();
  Operation close = queue.Close();

  Session sess(g);
  for (int i = 0; i < 3; ++i) {
    sess.Run({{x, Tensor::FromVector<float>({float(i), float(i) + 0.5f})},
              {s, Tensor::Scalar<std::string>("e" + std::to_string(i))}},
             {}, {enqueue});
  }
  EXPECT_EQ(size.Eval(sess).scalar<int32_t>(), 3);
  std::vector<Tensor> first = sess.Run({}, one);
  EXPECT_EQ(first[0].flat<float>()[1], 0.5f);
  EXPECT_EQ(first[1].scalar<std::string>(), "e0");
  std::vector<Tensor> batch = sess.Run({}, two);
  EXPECT_EQ(batch[0].shape(), TensorShape({2, 2}));
  EXPECT_EQ(batch[1].flat<std::string>()[1], "e2");
  sess.Run({}, {}, {close});
  try {
    sess.Run({}, one);
    FAIL();
  } catch (const OutOfRangeError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "FIFOQueue 'fifo_queue' is closed and has insufficient elements (requested 1, "
                  "current size 0)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(
      sess.Run({{x, Tensor::FromVector<float>({0, 0})}, {s, Tensor::Scalar<std::string>("")}}, {}, {enqueue}),
      CancelledError);
}

TEST(QueueOps, SessionCloseAndTimeoutWakeABlockedDequeue) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::FIFOQueue queue(10, {DT_FLOAT});
  std::vector<Output> dequeue = queue.Dequeue();
  Session sess(g);
  RunOptions options;
  options.timeout_in_ms = 30;
  EXPECT_THROW(sess.Run({}, dequeue, {}, &options), DeadlineExceededError);
  std::exception_ptr error;
  std::thread blocked([&] {
    try {
      sess.Run({}, dequeue);
    } catch (...) {
      error = std::current_exception();
    }
  });
  std::this_thread::sleep_for(30ms);
  sess.Close();
  blocked.join();
  EXPECT_THROW(std::rethrow_exception(error), CancelledError);
}

TEST(QueueRunner, FillsTheQueueUntilTheCoordinatorStops) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::FIFOQueue queue(4, {DT_FLOAT}, {.shapes = {PartialTensorShape({})}});
  Operation enqueue = queue.Enqueue({ops::Const(1.0f)});
  QueueRunner qr(queue, {enqueue, enqueue});
  AddQueueRunner(qr);
  Output batch = queue.DequeueMany(3)[0];
  Session sess(g);
  Coordinator coord;
  ThreadList threads = StartQueueRunners(sess, coord);
  EXPECT_EQ(threads.size(), 3u);  // two enqueue threads and the close-on-stop thread
  // Threads for the same session are not created twice while they run.
  EXPECT_TRUE(qr.CreateThreads(sess, &coord).empty());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(batch.Eval(sess).NumElements(), 3);
  coord.RequestStop();
  coord.Join(threads, 5s);  // the cancel op unblocks enqueues stuck on the full queue
  for (const auto& t : threads) EXPECT_FALSE(t->IsAlive());
}

TEST(QueueRunner, EnqueueErrorsReachTheCoordinator) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::FIFOQueue queue(4, {DT_FLOAT}, {.shapes = {PartialTensorShape({})}});
  // A feed the runner never gives: every run fails with InvalidArgument.
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({}), "never_fed");
  QueueRunner qr(queue, {queue.Enqueue({x})});
  Session sess(g);
  Coordinator coord;
  ThreadList threads = qr.CreateThreads(sess, &coord, /*start=*/true);
  EXPECT_TRUE(coord.WaitForStop(5s));
  EXPECT_THROW(coord.Join(threads), InvalidArgumentError);
  // Without a coordinator the error is kept by the runner.
  ThreadList alone = qr.CreateThreads(sess, nullptr, true);
  for (auto& t : alone) t->Join();
  ASSERT_EQ(qr.exceptions_raised().size(), 1u);
}

TEST(QueueRunner, OutOfRangeClosesTheQueueAfterTheLastThread) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::FIFOQueue source(10, {DT_FLOAT}, {.shapes = {PartialTensorShape({})}, .name = "source"});
  ops::FIFOQueue sink(100, {DT_FLOAT}, {.shapes = {PartialTensorShape({})}, .name = "sink"});
  Output item = source.Dequeue()[0];
  QueueRunner qr(sink, {sink.Enqueue({item}), sink.Enqueue({item})});
  Operation fill = source.EnqueueMany({ops::Const<float>({1, 2, 3, 4, 5})});
  Operation close_source = source.Close();
  Output drained = sink.DequeueUpTo(100)[0];
  Session sess(g);
  sess.Run({}, {}, {fill, close_source});
  Coordinator coord;
  ThreadList threads = qr.CreateThreads(sess, &coord, true);
  // Both threads see OutOfRange from the source; the last one closes the sink.
  Tensor all = drained.Eval(sess);
  std::multiset<float> values(all.flat<float>().begin(), all.flat<float>().end());
  EXPECT_EQ(values, (std::multiset<float>{1, 2, 3, 4, 5}));
  EXPECT_THROW(drained.Eval(sess), OutOfRangeError);
  coord.RequestStop();
  EXPECT_NO_THROW(coord.Join(threads, 5s));
}

TEST(QueueRunner, RequiresEnqueueOps) {
  Graph g;
  auto as_default = g.AsDefault();
  ops::FIFOQueue queue(4, {DT_FLOAT});
  EXPECT_THROW(QueueRunner(queue, {}), InvalidArgumentError);
}

std::vector<std::string> WriteRecordFiles(const std::string& dir, int files, int records) {
  std::vector<std::string> paths;
  for (int f = 0; f < files; ++f) {
    paths.push_back(dir + "/part-" + std::to_string(f) + ".tfrecord");
    io::RecordWriter writer(paths.back());
    for (int r = 0; r < records; ++r) writer.WriteRecord("f" + std::to_string(f) + "r" + std::to_string(r));
    writer.Close();
  }
  return paths;
}

TEST(InputHelpers, ReaderBatchesEveryRecordOfEveryEpochThenEnds) {
  const std::vector<std::string> paths = WriteRecordFiles(testing::MakeTempDir("reader"), 3, 4);
  Graph g;
  auto as_default = g.AsDefault();
  ops::FIFOQueue files = StringInputProducer(paths, {.num_epochs = 2, .seed = 3});
  ops::TFRecordReader reader;
  auto [key, value] = reader.Read(files);
  std::vector<Output> batch = Batch({key, value}, 5, {.allow_smaller_final_batch = true});
  EXPECT_EQ(g.GetCollection<QueueRunner>(GraphKeys::kQueueRunners).size(), 2u);
  // TF's input_producer graph: a shuffle, and the epochs counted by a local variable.
  EXPECT_EQ(g.GetOperationByName("input_producer/RandomShuffle").type(), "RandomShuffle");
  EXPECT_EQ(g.GetOperationByName("input_producer/limit_epochs/CountUpTo").type(), "CountUpTo");
  EXPECT_EQ(g.GetOperationByName("input_producer/limit_epochs").type(), "Identity");
  ASSERT_EQ(ops::LocalVariables().size(), 1u);
  EXPECT_EQ(ops::LocalVariables()[0].op().name(), "input_producer/limit_epochs/epochs");
  Session sess(g);
  sess.Run({}, {}, {ops::LocalVariablesInitializer()});  // as tf.local_variables_initializer()
  Coordinator coord;
  ThreadList threads = StartQueueRunners(sess, coord);
  std::multiset<std::string> values;
  std::set<std::string> keys;
  std::vector<int64_t> sizes;
  try {
    for (;;) {
      std::vector<Tensor> out = sess.Run({}, batch);
      sizes.push_back(out[1].NumElements());
      for (const std::string& v : out[1].flat<std::string>()) values.insert(v);
      for (const std::string& k : out[0].flat<std::string>()) keys.insert(k);
    }
  } catch (const OutOfRangeError&) {
  }
  coord.RequestStop();
  coord.Join(threads, 5s);
  EXPECT_EQ(values.size(), 24u);  // 3 files x 4 records x 2 epochs
  EXPECT_EQ(values.count("f1r3"), 2u);
  EXPECT_EQ(keys.count(paths[2] + ":0"), 1u);
  EXPECT_EQ(sizes, (std::vector<int64_t>{5, 5, 5, 5, 4}));
}

// The queue runners go into the MetaGraph as TF's QueueRunnerDefs and come back from it: the
// imported pipeline reads every record of its one epoch, then ends.
TEST(InputHelpers, QueueRunnersRoundTripThroughTheMetaGraph) {
  const std::vector<std::string> paths = WriteRecordFiles(testing::MakeTempDir("reader_meta"), 2, 3);
  tensorflow::MetaGraphDef meta;
  std::string values_name;
  {
    Graph g;
    auto as_default = g.AsDefault();
    ops::FIFOQueue files = StringInputProducer(paths, {.num_epochs = 1, .shuffle = false});
    ops::TFRecordReader reader;
    auto [key, value] = reader.Read(files);
    values_name = Batch({key, value}, 4, {.allow_smaller_final_batch = true})[1].name();
    meta = ExportMetaGraph(g);
  }
  ASSERT_EQ(meta.collection_def().count("queue_runners"), 1u);
  const auto& runners_def = meta.collection_def().at("queue_runners").bytes_list();
  ASSERT_EQ(runners_def.value_size(), 2);
  tensorflow::QueueRunnerDef first;
  ASSERT_TRUE(first.ParseFromString(runners_def.value(0)));
  EXPECT_EQ(first.queue_name(), "input_producer/fifo_queue");
  EXPECT_EQ(first.enqueue_op_name_size(), 1);
  EXPECT_EQ(first.queue_closed_exception_types(0), 11);  // OUT_OF_RANGE

  Graph g;
  ImportMetaGraph(meta, &g);
  const std::vector<QueueRunner> runners = g.GetCollection<QueueRunner>(GraphKeys::kQueueRunners);
  ASSERT_EQ(runners.size(), 2u);
  EXPECT_EQ(runners[0].name(), first.queue_name());
  Session sess(g);
  sess.Run({}, {}, {ops::LocalVariablesInitializer(&g)});
  Coordinator coord;
  ThreadList threads = StartQueueRunners(sess, coord);
  const Output values = g.GetTensorByName(values_name);
  std::multiset<std::string> read;
  try {
    for (;;) {
      // Held, not iterated as a temporary: the span would outlive the Tensor it points into.
      const Tensor batch = sess.Run({}, {values})[0];
      for (const std::string& v : batch.flat<std::string>()) read.insert(v);
    }
  } catch (const OutOfRangeError&) {
  }
  coord.RequestStop();
  coord.Join(threads, 5s);
  EXPECT_EQ(read, (std::multiset<std::string>{"f0r0", "f0r1", "f0r2", "f1r0", "f1r1", "f1r2"}));
}

TEST(InputHelpers, ShuffleBatchMixesElements) {
  Graph g;
  auto as_default = g.AsDefault();
  std::vector<float> values(100);
  for (int i = 0; i < 100; ++i) values[i] = i;
  ops::FIFOQueue source(100, {DT_FLOAT}, {.shapes = {PartialTensorShape({})}});
  Operation fill = source.EnqueueMany({ops::Const(values, TensorShape({100}))});
  Operation close = source.Close();
  Output item = source.Dequeue()[0];
  std::vector<Output> batch = ShuffleBatch({item}, 10, 50, 20, {.seed = 1});
  Session sess(g);
  sess.Run({}, {}, {fill, close});
  Coordinator coord;
  ThreadList threads = StartQueueRunners(sess, coord);
  std::vector<float> seen;
  for (int i = 0; i < 10; ++i) {
    Tensor t = batch[0].Eval(sess);
    seen.insert(seen.end(), t.flat<float>().begin(), t.flat<float>().end());
  }
  EXPECT_THROW(batch[0].Eval(sess), OutOfRangeError);
  coord.RequestStop();
  coord.Join(threads, 5s);
  EXPECT_EQ(std::set<float>(seen.begin(), seen.end()).size(), 100u);
  EXPECT_NE(seen, values);
}

TEST(InputHelpers, CorruptRecordNamesFileAndIndex) {
  const std::string dir = testing::MakeTempDir("corrupt");
  std::vector<std::string> paths = WriteRecordFiles(dir, 1, 3);
  {
    std::string bytes;
    FILE* f = std::fopen(paths[0].c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    // Records are 16 bytes of framing plus a 4-byte payload: damage record 1's payload.
    std::fseek(f, 20 + 12 + 1, SEEK_SET);
    std::fputc('X', f);
    std::fclose(f);
  }
  Graph g;
  auto as_default = g.AsDefault();
  ops::FIFOQueue files(4, {DT_STRING}, {.shapes = {PartialTensorShape({})}});
  Operation add = files.Enqueue({ops::Const(paths[0])});
  ops::TFRecordReader reader;
  Output value = reader.Read(files).second;
  Session sess(g);
  sess.Run({}, {}, {add});
  EXPECT_EQ(value.Eval(sess).scalar<std::string>(), "f0r0");
  try {
    value.Eval(sess);
    FAIL();
  } catch (const DataLossError& e) {
    EXPECT_NE(std::string(e.what()).find("Record 1 of " + paths[0]), std::string::npos) << e.what();
  }
}

// TF1's queue pattern: ParseSingleExample of what the reader read names the file and record
// of a bad Example.
TEST(InputHelpers, BadExampleFromAReaderNamesFileAndRecord) {
  const std::string path = testing::MakeTempDir("bad_example") + "/examples.tfrecord";
  {
    io::RecordWriter writer(path);
    for (int i = 0; i < 3; ++i) {
      tensorflow::Example example;
      auto& feature = (*example.mutable_features()->mutable_feature())["label"];
      if (i == 1) {
        feature.mutable_float_list()->add_value(1.5f);  // a float where an int64 belongs
      } else {
        feature.mutable_int64_list()->add_value(i);
      }
      writer.WriteRecord(example.SerializeAsString());
    }
    writer.Close();
  }
  Graph g;
  auto as_default = g.AsDefault();
  ops::FIFOQueue files(4, {DT_STRING}, {.shapes = {PartialTensorShape({})}});
  Operation add = files.Enqueue({ops::Const(path)});
  ops::TFRecordReader reader;
  Output label = ops::ParseSingleExample(reader.Read(files).second,
                                         {{"label", ops::FixedLenFeature{DT_INT64, TensorShape({})}}})
                     .dense.at("label");
  Session sess(g);
  sess.Run({}, {}, {add});
  EXPECT_EQ(label.Eval(sess).scalar<int64_t>(), 0);
  testing::ExpectInvalidArgument([&] { label.Eval(sess); },
                                 {"Name: record 1 of " + path, "Feature: label.  Data types don't match"});
}

}  // namespace
}  // namespace flowtrain::train
