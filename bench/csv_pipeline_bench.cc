// Issue #20's input-pipeline target: TextLineDataset -> map(parse a CSV line) -> batch(256),
// drained to the end, in flowtrain and in tf.data (bench/csv_pipeline_bench_tf.py) over the same
// file of 200,000 lines (4 float, 2 int32, 1 int64 and 1 string columns). Each system runs its
// map on 1 and on several threads (flowtrain: num_parallel_calls 2; TF: AUTOTUNE), TF also under
// oneDNN on/off and glibc/jemalloc; the fastest configuration of each is compared. Each figure
// is the best of 3 passes after a warm-up pass (the file is in the page cache). Target: >= 2x.
//
//   build/bench/csv_pipeline_bench    # RESULT lines; the TF peer needs FLOWTRAIN_TF_PYTHON
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "flowtrain/flowtrain.h"
#include "flowtrain/io/csv_record.h"
#include "peer_bench_util.h"

namespace ft = flowtrain;

namespace {

constexpr int kLines = 200'000;
constexpr int kBatch = 256;

void WriteCsv(const std::string& path) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> real(-100, 100);
  std::uniform_int_distribution<int> small(0, 1000);
  std::ofstream out(path);
  for (int i = 0; i < kLines; ++i) {
    char line[256];
    std::snprintf(line, sizeof line, "%.4f,%.4f,%.4f,%.4f,%d,%d,%lld,item-%d\n", real(rng), real(rng),
                  real(rng), real(rng), small(rng), small(rng), static_cast<long long>(i) * 1'000'003,
                  small(rng));
    out << line;
  }
}

// Elements per second of the best of 3 passes, with the map on `threads` threads.
double Flowtrain(const std::string& path, int threads) {
  ft::Graph g;
  auto as_default = g.AsDefault();
  auto decoder = std::make_shared<ft::io::CsvDecoder>(
      ft::io::CsvOptions{},
      std::vector<ft::Tensor>{ft::Tensor::Scalar<float>(0), ft::Tensor::Scalar<float>(0),
                              ft::Tensor::Scalar<float>(0), ft::Tensor::Scalar<float>(0),
                              ft::Tensor::Scalar<int32_t>(0), ft::Tensor::Scalar<int32_t>(0),
                              ft::Tensor::Scalar<int64_t>(0), ft::Tensor::Scalar<std::string>("")});
  ft::data::MapOptions options{
      .output_types = {ft::DT_FLOAT, ft::DT_FLOAT, ft::DT_FLOAT, ft::DT_FLOAT, ft::DT_INT32, ft::DT_INT32,
                       ft::DT_INT64, ft::DT_STRING},
      .output_shapes = std::vector<ft::PartialTensorShape>(8, ft::PartialTensorShape({})),
      .num_parallel_calls = threads};
  ft::data::Iterator it =
      ft::data::Dataset::TextLine({path})
          .Map([decoder](const std::vector<ft::Tensor>& e) { return decoder->Decode(e[0]); }, options)
          .Batch(kBatch)
          .MakeInitializableIterator();
  std::vector<ft::Output> next = it.GetNext();
  ft::Session sess(g);
  double best = 0;
  for (int pass = 0; pass < 4; ++pass) {
    sess.Run({}, {}, {it.initializer()});
    int64_t elements = 0;
    const auto start = std::chrono::steady_clock::now();
    try {
      for (;;) elements += sess.Run({}, {next[0]})[0].dim_size(0);
    } catch (const ft::OutOfRangeError&) {
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elements != kLines) {
      std::fprintf(stderr, "csv_pipeline_bench: flowtrain gave %lld elements, not %d\n",
                   static_cast<long long>(elements), kLines);
      std::exit(1);
    }
    if (pass > 0) best = std::max(best, elements / seconds);
  }
  return best;
}

}  // namespace

int main() {
  const std::string scratch =
      bench::MakeScratchDir(std::filesystem::temp_directory_path(), "csv_pipeline_bench");
  if (scratch.empty()) return 1;
  const std::string path = scratch + "/data.csv";
  WriteCsv(path);
  double ours = 0;
  for (int threads : {1, 2}) {
    const double rate = Flowtrain(path, threads);
    std::fprintf(stderr, "flowtrain (num_parallel_calls=%d): %.0f elements/s\n", threads, rate);
    ours = std::max(ours, rate);
  }
  std::printf("RESULT csv_pipeline flowtrain elements_per_s %.0f\n", ours);
#ifdef FLOWTRAIN_CSV_BENCH_TF_PYTHON
  double best = 0;
  std::string best_label;
  for (const bench::PeerEnv& env : bench::TensorFlowEnvs()) {
    for (const bench::PeerLine& line : bench::RunPeerLines(
             env.env + "TF_CPP_MIN_LOG_LEVEL=3 " + std::string(FLOWTRAIN_CSV_BENCH_TF_PYTHON) + " " +
                 bench::ShellQuote(FLOWTRAIN_CSV_BENCH_TF_SCRIPT) + " " + bench::ShellQuote(path) +
                 " 2>/dev/null",
             1)) {
      std::fprintf(stderr, "tf.data (%s,%s): %.0f elements/s\n", env.label.c_str(), line.config.c_str(),
                   line.values[0]);
      if (line.values[0] > best) {
        best = line.values[0];
        best_label = env.label + "," + line.config;
      }
    }
  }
  if (best > 0) {
    std::fprintf(stderr, "tf.data's fastest configuration: %s\n", best_label.c_str());
    std::printf("RESULT csv_pipeline tensorflow elements_per_s %.0f\n", best);
    std::printf("RESULT csv_pipeline flowtrain_vs_tensorflow speedup %.3g\n", ours / best);
  } else {
    std::fprintf(stderr, "csv_pipeline_bench: the TensorFlow peer printed nothing\n");
  }
#else
  std::fprintf(stderr, "csv_pipeline_bench: built without FLOWTRAIN_TF_PYTHON: no TensorFlow peer\n");
#endif
  std::filesystem::remove_all(scratch);
  return 0;
}
