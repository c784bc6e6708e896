// Graphs and sessions: the seed example of the project, in C++.
//
// Two graphs each hold a constant. A session runs the graph it was created on; asking it for a
// tensor of the other graph fails with TensorFlow's error ("... is not an element of this
// graph."): first with a MonitoredTrainingSession on g1, then with a plain Session on g2.
#include <cstdio>

#include "flowtrain/flowtrain.h"
#include "report_errors.h"

namespace ft = flowtrain;

namespace {

int Main(int, char**) {
  ft::Graph g1;
  ft::Output c1;
  {
    auto as_default = g1.AsDefault();  // `with g1.as_default():`
    c1 = ft::ops::Const(int32_t{42});
  }
  ft::Graph g2;
  ft::Output c2;
  {
    auto as_default = g2.AsDefault();
    c2 = ft::ops::Const(3.14f);
  }
  std::printf("c1 belongs to g1: %s\n", c1.graph() == &g1 ? "true" : "false");
  std::printf("c2 belongs to g2: %s\n", c2.graph() == &g2 ? "true" : "false");

  // MonitoredTrainingSession on g1 (`with g1.as_default(): MonitoredTrainingSession()`).
  {
    ft::train::MonitoredTrainingSessionOptions options;
    options.graph = &g1;
    auto sess = ft::train::MonitoredTrainingSession(options);
    std::printf("c1 = %d\n", sess->Run({}, {c1})[0].scalar<int32_t>());
    try {
      sess->Run({}, {c2});
    } catch (const ft::InvalidArgumentError& e) {
      std::printf("%s\n", e.what());
    }
    sess->Close();
  }
  // A session on g2.
  {
    ft::Session sess(g2);
    std::printf("c2 = %g\n", c2.Eval(sess).scalar<float>());
    try {
      c1.Eval(sess);
    } catch (const ft::InvalidArgumentError& e) {
      std::printf("%s\n", e.what());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::ReportErrors(Main, argc, argv); }
