// Writes valid inputs for every harness into <out>/<harness>/, made by flowtrain's own
// writers (the files the tests write): the fuzzers start from them and the replay tests run
// them, so that a harness that no longer reaches its reader on a valid input is noticed.
//
//   fuzz_seeds build/fuzz-seeds    # build/fuzz-seeds/record/..., .../worker/...
//
// Deterministic: the same files on every run. Throws (and exits non-zero) if a writer fails.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "flowtrain/core/file_util.h"
#include "flowtrain/core/tensor.h"
#include "flowtrain/distributed/worker_service.pb.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/io/event_file_writer.h"
#include "flowtrain/io/idx_file.h"
#include "flowtrain/io/npy_file.h"
#include "flowtrain/io/record_writer.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/proto/example.pb.h"
#include "flowtrain/proto/tensor_proto_util.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/saver.h"
#include "google/protobuf/text_format.h"

namespace flowtrain {
namespace {

class SeedWriter {
 public:
  SeedWriter(std::string root, std::string scratch) : root_(std::move(root)), scratch_(std::move(scratch)) {}

  void Write(const std::string& harness, const std::string& name, std::string_view bytes) const {
    const std::string dir = JoinPath(root_, harness);
    CreateDirectories(dir);
    WriteFileAtomically(JoinPath(dir, name), bytes);
  }
  // A scratch path for the writers that want one.
  std::string Scratch(const std::string& name) const { return JoinPath(scratch_, name); }

 private:
  std::string root_, scratch_;
};

std::string Uint32Le(uint32_t v) {
  std::string out(4, '\0');
  std::memcpy(out.data(), &v, 4);
  return out;
}

void Records(const SeedWriter& seeds) {
  for (const auto& [harness, compression] : std::vector<std::pair<std::string, std::string>>{
           {"record", ""}, {"record_gzip", "GZIP"}, {"record_zlib", "ZLIB"}}) {
    const std::string path = seeds.Scratch(harness + ".tfrecord");
    {
      io::RecordWriter writer(path, {.compression_type = compression});
      writer.WriteRecord("first record");
      writer.WriteRecord("");
      writer.WriteRecord(std::string(300, 'x'));
    }
    seeds.Write(harness, "three_records", ReadFileToString(path));
    {
      io::RecordWriter writer(path, {.compression_type = compression});
      writer.WriteRecord("only");
    }
    seeds.Write(harness, "one_record", ReadFileToString(path));
  }
}

void Checkpoints(const SeedWriter& seeds) {
  const std::string prefix = seeds.Scratch("model.ckpt-1");
  {
    io::BundleWriter writer(prefix);
    writer.Add("dense/kernel", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})));
    writer.Add("global_step", Tensor::Scalar<int64_t>(1200));
    writer.Add("vocabulary", Tensor::FromVector<std::string>({"a", "", "ccc"}));
    writer.Add("empty", Tensor(DT_DOUBLE, TensorShape({0, 4})));
    writer.Finish();
  }
  const std::string index = ReadFileToString(prefix + ".index");
  seeds.Write("checkpoint", "four_tensors",
              Uint32Le(static_cast<uint32_t>(index.size())) + index +
                  ReadFileToString(prefix + ".data-00000-of-00001"));
}

void Events(const SeedWriter& seeds) {
  const std::string logdir = seeds.Scratch("events");
  std::string path;
  {
    io::EventFileWriter writer(logdir, ".seed");
    path = writer.path();
    tensorflow::Event event;
    event.set_step(1);
    event.set_wall_time(1.5);
    auto* scalar = event.mutable_summary()->add_value();
    scalar->set_tag("loss");
    scalar->set_simple_value(0.25f);
    auto* tensor = event.mutable_summary()->add_value();
    tensor->set_tag("weights");
    tensor->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
    *tensor->mutable_tensor() = TensorToProto(Tensor::FromVector<std::string>({"hello", "world"}));
    auto* histo = event.mutable_summary()->add_value();
    histo->set_tag("activations");
    auto* h = histo->mutable_histo();
    h->set_min(-1);
    h->set_max(2);
    h->set_num(3);
    h->set_sum(1);
    h->set_sum_squares(6);
    for (double limit : {-1.0, 0.5, 2.0}) h->add_bucket_limit(limit);
    for (double count : {1.0, 1.0, 1.0}) h->add_bucket(count);
    writer.WriteEvent(event);
    tensorflow::Event log;
    log.set_step(2);
    log.mutable_session_log()->set_status(tensorflow::SessionLog::START);
    writer.WriteEvent(log);
    writer.Close();
  }
  seeds.Write("event", "summaries", ReadFileToString(path));
}

void Idx(const SeedWriter& seeds) {
  const std::string path = seeds.Scratch("seed.idx");
  std::vector<uint8_t> pixels(2 * 3 * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 9);
  io::WriteIdxFile(path, Tensor::FromVector<uint8_t>(pixels, TensorShape({2, 3, 4})));
  seeds.Write("idx", "uint8_2x3x4", ReadFileToString(path));
  io::WriteIdxFile(path, Tensor::FromVector<float>({0.5f, -1, 3}));
  seeds.Write("idx", "float_3", ReadFileToString(path));
}

// .npy files as numpy.save writes them, and a big-endian Fortran-order one and a UCS-4 one
// as numpy writes them on request (np.asfortranarray, astype('>i4'), np.array(['...'])).
void Npys(const SeedWriter& seeds) {
  seeds.Write("npy", "float_2x3",
              io::SerializeNpy(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}))));
  seeds.Write("npy", "int64_scalar", io::SerializeNpy(Tensor::Scalar<int64_t>(7)));
  seeds.Write("npy", "bytes", io::SerializeNpy(Tensor::FromVector<std::string>({"ab", "", "xyz"})));
  seeds.Write("npy", "bool", io::SerializeNpy(Tensor::FromVector<bool>({true, false})));
  const std::string big_fortran = "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 2), }";
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(big_fortran.size());
  bytes += '\0';
  bytes += big_fortran;
  bytes += std::string("\0\0\0\1\0\0\0\3\0\0\0\2\0\0\0\4", 16);
  seeds.Write("npy", "big_endian_fortran", bytes);
  const std::string unicode = "{'descr': '<U2', 'fortran_order': False, 'shape': (1,), }";
  bytes = "\x93NUMPY\x03";
  bytes += std::string(1, '\0') + static_cast<char>(unicode.size()) + std::string(3, '\0');
  bytes += unicode;
  bytes += std::string("h\0\0\0\xe9\0\0\0", 8);
  seeds.Write("npy", "unicode_v3", bytes);
}

// CSV records for csv_fuzz: the first byte is its options byte.
void Csvs(const SeedWriter& seeds) {
  seeds.Write("csv", "plain",
              std::string("\x00") + "1.5,2,3,abc\n-0.25, 7 ,99999999999,\"q,\"\"x\"\"\"\n,,,");
  seeds.Write("csv", "semicolon_na", std::string("\x05") + "inf;NA;3;x\n1e400;4;5;\"a;b\"");
  seeds.Write("csv", "selected_required", std::string("\x18") + "1,2,3,4,5,6\n0.5,1,2,3,4,5,junk");
  seeds.Write("csv", "bad_quotes", std::string("\x00") + "1,\"open,3,x\n1,a\"b,3,x\n\"ab\"c,1,2,3");
}

void Examples(const SeedWriter& seeds) {
  tensorflow::Example full;
  auto& features = *full.mutable_features()->mutable_feature();
  for (float v : {1.f, 2.f, 3.f, 4.f, 5.f}) features["image"].mutable_float_list()->add_value(v);
  features["label"].mutable_int64_list()->add_value(-7);
  features["name"].mutable_bytes_list()->add_value("seven");
  features["tags"].mutable_bytes_list()->add_value("a");
  features["tags"].mutable_bytes_list()->add_value("bb");
  features["ids"].mutable_int64_list()->add_value(1LL << 40);
  features["weights"].mutable_float_list()->add_value(0.5f);
  seeds.Write("example", "every_feature", full.SerializeAsString());
  tensorflow::Example minimal;
  auto& some = *minimal.mutable_features()->mutable_feature();
  for (float v : {0.f, 0.f, 0.f, 0.f, 1.f}) some["image"].mutable_float_list()->add_value(v);
  some["label"].mutable_int64_list()->add_value(3);
  seeds.Write("example", "defaults", minimal.SerializeAsString());
}

// A graph with a variable, so that its MetaGraphDef has collections and a SaverDef.
void Graphs(const SeedWriter& seeds) {
  Graph graph;
  auto as_default = graph.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({-1, 2}), "x");
  Variable w(Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})), {.name = "w"});
  Output y = ops::Add(ops::MatMul(x, w.value()), ops::Const({0.5f, -0.5f}, "bias"), "y");
  ops::Identity(y, "out");
  const tensorflow::GraphDef def = graph.ToGraphDef();
  seeds.Write("graph_def", "matmul", def.SerializeAsString());
  std::string text;
  google::protobuf::TextFormat::PrintToString(def, &text);
  seeds.Write("graph_def_text", "matmul.pbtxt", text);
  train::Saver saver;
  seeds.Write("meta_graph", "matmul.meta", saver.ExportMetaGraph().SerializeAsString());
}

void CheckpointStates(const SeedWriter& seeds) {
  seeds.Write("checkpoint_state", "relative",
              train::CheckpointStateToText(train::GenerateCheckpointStateProto(
                  "model", "model/model.ckpt-200", {"model/model.ckpt-100", "model/model.ckpt-200"},
                  {10.5, 20.25}, 5.0)));
  seeds.Write(
      "checkpoint_state", "absolute",
      train::CheckpointStateToText(train::GenerateCheckpointStateProto("/tmp/m", "/tmp/m/model.ckpt-1")));
}

// The worker input: uint16 LE lengths of the RegisterGraph and SendTensors requests, then the
// three requests (fuzz/worker_fuzz.cc).
std::string WorkerInput(const distributed::RegisterGraphRequest& reg,
                        const distributed::SendTensorsRequest& send, const distributed::RunStepRequest& run) {
  const std::string a = reg.SerializeAsString(), b = send.SerializeAsString();
  const uint16_t lengths[2] = {static_cast<uint16_t>(a.size()), static_cast<uint16_t>(b.size())};
  return std::string(reinterpret_cast<const char*>(lengths), sizeof(lengths)) + a + b +
         run.SerializeAsString();
}

void WorkerRequests(const SeedWriter& seeds) {
  Graph graph;
  auto as_default = graph.AsDefault();
  Output x = ops::Placeholder(DT_FLOAT, PartialTensorShape({2}), "x");
  Output t = ops::Placeholder(DT_FLOAT, PartialTensorShape({2}), "t");
  Output y = ops::Mul(x, ops::Const({2.f, 3.f}, "c"), "y");
  ops::Add(y, t, "z");
  distributed::RegisterGraphRequest reg;
  *reg.mutable_graph_def() = graph.ToGraphDef();
  // Stage 0 computes y from a client feed and keeps it; stage 1 adds a pushed tensor to it.
  distributed::Stage& first = *reg.add_stages();
  first.add_inputs()->set_placeholder("x");
  first.mutable_inputs(0)->set_client_feed(0);
  first.add_targets("c");
  first.add_targets("y");
  first.add_outputs()->set_tensor("y:0");
  first.mutable_outputs(0)->set_local_key("y");
  first.mutable_outputs(0)->add_client_fetches(0);
  distributed::Stage& second = *reg.add_stages();
  second.add_inputs()->set_placeholder("y");
  second.mutable_inputs(0)->set_local_key("y");
  second.add_inputs()->set_placeholder("t");
  second.mutable_inputs(1)->set_transfer_key("t:0");
  second.add_awaited_controls("^ready");
  second.add_targets("z");
  second.add_outputs()->set_tensor("z:0");
  second.mutable_outputs(0)->add_client_fetches(1);
  distributed::SendTensorsRequest send;
  send.add_keys("t:0");
  *send.add_tensors() = TensorToProto(Tensor::FromVector<float>({10, 20}));
  send.add_keys("^ready");
  send.add_tensors();
  distributed::RunStepRequest run;
  run.add_feed_indices(0);
  *run.add_feeds() = TensorToProto(Tensor::FromVector<float>({1, 1}));
  run.set_timeout_in_ms(20);
  seeds.Write("worker", "two_stages", WorkerInput(reg, send, run));
  run.set_trace(true);
  seeds.Write("worker", "two_stages_traced", WorkerInput(reg, send, run));
}

}  // namespace
}  // namespace flowtrain

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  const std::string scratch = flowtrain::JoinPath(root, ".scratch");
  flowtrain::CreateDirectories(scratch);
  const flowtrain::SeedWriter seeds(root, scratch);
  flowtrain::Records(seeds);
  flowtrain::Checkpoints(seeds);
  flowtrain::Events(seeds);
  flowtrain::Idx(seeds);
  flowtrain::Npys(seeds);
  flowtrain::Csvs(seeds);
  flowtrain::Examples(seeds);
  flowtrain::Graphs(seeds);
  flowtrain::CheckpointStates(seeds);
  flowtrain::WorkerRequests(seeds);
  std::filesystem::remove_all(scratch);
  std::printf("fuzz_seeds: wrote the seeds of every harness under %s\n", root.c_str());
  return 0;
}
