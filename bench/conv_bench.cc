// The three convolution ops of the CNN workload's second layer (ops_bench CNN: 64 images of
// 14x14x32, a 5x5x32x64 filter, SAME, stride 1), each timed alone in a Session on 2 threads:
//
//   conv_bench [--reps 50] [--size 14] [--in 32] [--out 64] [--filter 5]
//   TF_ENABLE_WINOGRAD_NONFUSED=0 conv_bench    # the same on im2col + GEMM
//
// Prints `RESULT conv_layer2 flowtrain <op>_ms <median>` and the equivalent GFLOP/s of a
// direct convolution (2 * 642M flops per op), so that the Winograd kernels (which do fewer
// flops) compare with the machine's FMA peak and with im2col. --size/--in/--out/--filter
// change the image side, channel counts and filter side (where Winograd starts to win).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <random>
#include <vector>

#include "flowtrain/flowtrain.h"

namespace ft = flowtrain;

namespace {

ft::Tensor RandomTensor(const ft::TensorShape& shape, uint64_t seed) {
  ft::Tensor t(ft::DT_FLOAT, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 50;
  int64_t size = 14, in = 32, out = 64, filter = 5;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0)
      reps = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--size") == 0)
      size = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--in") == 0)
      in = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--out") == 0)
      out = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--filter") == 0)
      filter = std::atoi(argv[++i]);
  }
  const ft::TensorShape input_shape({64, size, size, in}), filter_shape({filter, filter, in, out}),
      output_shape({64, size, size, out});
  const double flops = 2.0 * 64 * size * size * out * in * filter * filter;
  ft::Graph graph;
  ft::Output y, dx, dw, x, w, dy;
  {
    auto as_default = graph.AsDefault();
    x = ft::ops::Placeholder(ft::DT_FLOAT, ft::PartialTensorShape(input_shape), "x");
    w = ft::ops::Placeholder(ft::DT_FLOAT, ft::PartialTensorShape(filter_shape), "w");
    dy = ft::ops::Placeholder(ft::DT_FLOAT, ft::PartialTensorShape(output_shape), "dy");
    y = ft::ops::Conv2D(x, w, {1, 1, 1, 1}, "SAME");
    auto dims = [](const ft::TensorShape& shape) {
      return ft::ops::Const(ft::Tensor::FromVector<int32_t>(
          std::vector<int32_t>(shape.dim_sizes().begin(), shape.dim_sizes().end())));
    };
    dx = ft::ops::Conv2DBackpropInput(dims(input_shape), w, dy, {1, 1, 1, 1}, "SAME");
    dw = ft::ops::Conv2DBackpropFilter(x, dims(filter_shape), dy, {1, 1, 1, 1}, "SAME");
  }
  ft::SessionOptions options;
  options.config.intra_op_parallelism_threads = 2;
  options.config.inter_op_parallelism_threads = 2;
  ft::Session session(graph, options);
  const ft::FeedList feeds = {{x, RandomTensor(input_shape, 1)},
                              {w, RandomTensor(filter_shape, 2)},
                              {dy, RandomTensor(output_shape, 3)}};
  struct Op {
    const char* name;
    ft::Output output;
  };
  for (const Op& op : {Op{"Conv2D", y}, Op{"Conv2DBackpropInput", dx}, Op{"Conv2DBackpropFilter", dw}}) {
    for (int i = 0; i < 5; ++i) session.Run(feeds, {op.output});  // warm up
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) {
      const auto start = std::chrono::steady_clock::now();
      session.Run(feeds, {op.output});
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
    const double median = ms[reps / 2];
    std::printf("RESULT conv_layer2 flowtrain %s_ms %.3f\n", op.name, median);
    std::printf("RESULT conv_layer2 flowtrain %s_direct_equivalent_gflops %.1f\n", op.name,
                flops / median / 1e6);
  }
  return 0;
}
