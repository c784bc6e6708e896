#include "flowtrain/distributed/cluster_spec.h"

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "tests/test_util.h"

namespace flowtrain::distributed {
namespace {

using testing::ExpectInvalidArgument;

TEST(ClusterSpecTest, ParsesJobsAndTasksInOrder) {
  ClusterSpec cluster = ClusterSpec::Parse("ps=localhost:2222;worker=localhost:2223,localhost:2224");
  EXPECT_EQ(cluster.jobs(), (std::vector<std::string>{"ps", "worker"}));
  EXPECT_EQ(cluster.num_tasks("ps"), 1);
  EXPECT_EQ(cluster.num_tasks("worker"), 2);
  EXPECT_EQ(cluster.num_tasks("chief"), 0);
  EXPECT_EQ(cluster.task_address("worker", 1), "localhost:2224");
  EXPECT_TRUE(cluster.has_job("ps"));
  EXPECT_FALSE(cluster.has_job("evaluator"));
}

TEST(ClusterSpecTest, ToStringRoundTripsThroughParse) {
  ClusterSpec cluster = ClusterSpec::Parse(" worker = h1:1, h2:2 ; ps=[::1]:3;");
  EXPECT_EQ(cluster.ToString(), "ps=[::1]:3;worker=h1:1,h2:2");
  EXPECT_EQ(ClusterSpec::Parse(cluster.ToString()), cluster);
  ClusterSpec built({{"worker", {"a:1"}}, {"ps", {"b:2", "c:3"}}});
  EXPECT_EQ(ClusterSpec::Parse(built.ToString()), built);
}

TEST(ClusterSpecTest, MalformedSpecsNameWhatIsWrong) {
  ExpectInvalidArgument([] { ClusterSpec::Parse(""); }, "empty");
  ExpectInvalidArgument([] { ClusterSpec::Parse("ps"); }, {"'ps'", "job=host:port"});
  ExpectInvalidArgument([] { ClusterSpec::Parse("ps=localhost"); }, {"'localhost'", "host:port"});
  ExpectInvalidArgument([] { ClusterSpec::Parse("ps=localhost:port"); }, "'localhost:port'");
  ExpectInvalidArgument([] { ClusterSpec::Parse("ps=a:1,,b:2"); }, "empty address");
  ExpectInvalidArgument([] { ClusterSpec::Parse("=a:1"); }, "bad job name");
  ExpectInvalidArgument([] { ClusterSpec::Parse("ps=a:1;ps=b:2"); }, "'ps' repeated");
  ExpectInvalidArgument(
      [] {
        ClusterSpec(std::map<std::string, std::vector<std::string>>{{"ps", {}}});
      },
      "no tasks");
}

TEST(ClusterSpecTest, TaskAddressChecksTheTask) {
  ClusterSpec cluster = ClusterSpec::Parse("worker=a:1");
  ExpectInvalidArgument([&] { cluster.task_address("ps", 0); }, "'ps' is not in the cluster");
  ExpectInvalidArgument([&] { cluster.task_address("worker", 1); }, "Task 1 of job 'worker'");
  cluster.set_task_address("worker", 0, "a:5");
  EXPECT_EQ(cluster.task_address("worker", 0), "a:5");
  EXPECT_EQ(TaskName("ps", 3), "/job:ps/replica:0/task:3");
}

}  // namespace
}  // namespace flowtrain::distributed
