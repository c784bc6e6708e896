// Builds and runs a small graph through the installed flowtrain package.
#include <cstdio>

#include <flowtrain/flowtrain.h>

namespace ft = flowtrain;

int main() {
  ft::Graph g;
  auto as_default = g.AsDefault();
  ft::Output x = ft::ops::Placeholder(ft::DT_FLOAT, ft::PartialTensorShape({2}), "x");
  ft::Variable w(ft::Tensor::FromVector<float>({3, 4}), {.name = "w"});
  ft::Output y = ft::ops::Mul(x, w);
  ft::Session sess(g);
  sess.Run({}, {}, {ft::ops::GlobalVariablesInitializer()});
  ft::Tensor out = sess.Run({{x, ft::Tensor::FromVector<float>({1, 2})}}, {y})[0];
  const bool ok = out.flat<float>()[0] == 3.0f && out.flat<float>()[1] == 8.0f;
  std::printf("consumer: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
