// TF_CONFIG and Slurm environments resolved to a cluster and a task; the same cases against
// TF's own resolvers are in tests/tf/cluster_resolver_test.cc.
#include "flowtrain/distributed/cluster_resolver.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace flowtrain::distributed {
namespace {

using ::testing::ElementsAre;

EnvironmentLookup FakeEnvironment(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ClusterResolverTest, TfConfigGivesTheClusterAndTheTask) {
  std::optional<ResolvedCluster> resolved = ResolveTfConfig(R"({
      "cluster": {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"], "ps": ["p0:2222"]},
      "task": {"type": "worker", "index": 1}, "environment": "cloud"})");
  ASSERT_TRUE(resolved.has_value());
  EXPECT_EQ(resolved->cluster.ToString(), "chief=c0:2222;ps=p0:2222;worker=w0:2222,w1:2222");
  EXPECT_EQ(resolved->job_name, "worker");
  EXPECT_EQ(resolved->task_index, 1);
  EXPECT_EQ(resolved->source, "TF_CONFIG");
  EXPECT_FALSE(resolved->is_chief());
  // The index may come as a string; the chief job is the chief.
  resolved = ResolveTfConfig(R"({"cluster": {"chief": ["c0:1"], "worker": ["w0:1"]},
                                 "task": {"type": "chief", "index": "0"}, "rpc_layer": "grpc"})");
  EXPECT_TRUE(resolved->is_chief());
  // Without a chief job, worker 0 is.
  resolved = ResolveTfConfig(R"({"cluster": {"worker": ["w0:1", "w1:1"]}, "task": {"type": "worker"}})");
  EXPECT_EQ(resolved->task_index, 0);
  EXPECT_TRUE(resolved->is_chief());
  // TF's single-process default, and an evaluator beside its cluster.
  EXPECT_FALSE(ResolveTfConfig(R"({"task": {"type": "worker", "index": 0}})").has_value());
  EXPECT_FALSE(ResolveTfConfig(R"({"cluster": {}})").has_value());
  resolved =
      ResolveTfConfig(R"({"cluster": {"worker": ["w0:1"]}, "task": {"type": "evaluator", "index": 0}})");
  EXPECT_EQ(resolved->job_name, "evaluator");
}

TEST(ClusterResolverTest, MalformedTfConfigIsNamed) {
  testing::ExpectInvalidArgument([] { ResolveTfConfig("{\"cluster\": "); },
                                 {"TF_CONFIG is not a JSON object"});
  testing::ExpectInvalidArgument([] { ResolveTfConfig(R"({"cluster": ["w0:1"]})"); },
                                 {"cluster is not an object"});
  testing::ExpectInvalidArgument(
      [] { ResolveTfConfig(R"({"cluster": {"worker": {"0": "w0:1"}}, "task": {}})"); },
      {"cluster.worker is not a list"});
  testing::ExpectInvalidArgument([] { ResolveTfConfig(R"({"cluster": {"worker": [7]}})"); },
                                 {"cluster.worker holds something"});
  testing::ExpectInvalidArgument([] { ResolveTfConfig(R"({"cluster": {"worker": ["w0:1"]}})"); },
                                 {"no task"});
  testing::ExpectInvalidArgument(
      [] { ResolveTfConfig(R"({"cluster": {"worker": ["w0:1"]}, "task": {"type": "worker", "index": 1}})"); },
      {"task worker:1 is not in its cluster"});
  testing::ExpectInvalidArgument(
      [] {
        ResolveTfConfig(R"({"cluster": {"worker": ["w0:1"]}, "task": {"type": "worker", "index": -1}})");
      },
      {"task.index"});
  testing::ExpectInvalidArgument(
      [] {
        ResolveTfConfig(
            R"({"cluster": {"ps": ["p0:1"]}, "task": {"type": "ps"}, "rpc_layer": "grpc+verbs"})");
      },
      {"rpc_layer 'grpc+verbs'"});
  testing::ExpectInvalidArgument(
      [] { ResolveTfConfig(R"({"cluster": {"ps": ["p0"]}, "task": {"type": "ps"}})"); },
      {"is not host:port"});
}

TEST(ClusterResolverTest, SlurmHostlistsAndTaskCountsExpandAsSlurmWritesThem) {
  EXPECT_THAT(ExpandSlurmHostlist("n[1-2],m5,o[3-4,6,7-9]"),
              ElementsAre("n1", "n2", "m5", "o3", "o4", "o6", "o7", "o8", "o9"));
  EXPECT_THAT(ExpandSlurmHostlist("node[08-10]"), ElementsAre("node08", "node09", "node10"));
  EXPECT_THAT(ExpandSlurmHostlist("r[1-2]-n[1-2]"), ElementsAre("r1-n1", "r1-n2", "r2-n1", "r2-n2"));
  EXPECT_THAT(ExpandSlurmHostlist("single"), ElementsAre("single"));
  EXPECT_THAT(ExpandSlurmTasksPerNode("3(x2),2,1"), ElementsAre(3, 3, 2, 1));
  for (const char* bad : {"n[1-", "n]1", "n[2-1]", "n[a-b]", "n1,,n2", "n[1-100000000]", ""}) {
    testing::ExpectInvalidArgument([&] { ExpandSlurmHostlist(bad); }, {"Slurm hostlist"});
  }
  for (const char* bad : {"2(x", "x", "2(3)", "-1", "1(x1000000000)"}) {
    testing::ExpectInvalidArgument([&] { ExpandSlurmTasksPerNode(bad); }, {"tasks-per-node list"});
  }
}

TEST(ClusterResolverTest, SlurmTasksTakeConsecutiveRanksOfSortedNodes) {
  const std::map<std::string, std::string> step = {{"SLURM_PROCID", "2"},
                                                   {"SLURM_STEP_NODELIST", "t[02-03],t01"},
                                                   {"SLURM_STEP_TASKS_PER_NODE", "2,1(x2)"},
                                                   {"SLURM_STEP_NUM_TASKS", "4"}};
  // Nodes sorted: t01 (1 task), t02 (2), t03 (1).
  ResolvedCluster all_workers = ResolveSlurm({}, FakeEnvironment(step));
  EXPECT_EQ(all_workers.cluster.ToString(), "worker=t01:8888,t02:8888,t02:8889,t03:8888");
  EXPECT_EQ(all_workers.job_name, "worker");
  EXPECT_EQ(all_workers.task_index, 2);
  EXPECT_EQ(all_workers.source, "Slurm");

  ResolvedCluster with_ps =
      ResolveSlurm({.jobs = {{"worker", 3}, {"ps", 1}}, .port_base = 2222}, FakeEnvironment(step));
  EXPECT_EQ(with_ps.cluster.ToString(), "ps=t01:2222;worker=t02:2222,t02:2223,t03:2222");
  EXPECT_EQ(with_ps.job_name, "worker");
  EXPECT_EQ(with_ps.task_index, 1);
  EXPECT_TRUE(
      ResolveSlurm({.jobs = {{"worker", 3}, {"ps", 1}}}, FakeEnvironment({{"SLURM_PROCID", "1"},
                                                                          {"SLURM_JOB_NODELIST", "t[1-4]"},
                                                                          {"SLURM_TASKS_PER_NODE", "1(x4)"}}))
          .is_chief());

  std::map<std::string, std::string> bad = step;
  bad["SLURM_STEP_NUM_TASKS"] = "5";
  testing::ExpectInvalidArgument([&] { ResolveSlurm({}, FakeEnvironment(bad)); }, {"the step has 5 tasks"});
  bad = step;
  bad["SLURM_STEP_TASKS_PER_NODE"] = "2,1";
  testing::ExpectInvalidArgument([&] { ResolveSlurm({}, FakeEnvironment(bad)); }, {"names 3 nodes"});
  bad = step;
  bad["SLURM_PROCID"] = "4";
  testing::ExpectInvalidArgument([&] { ResolveSlurm({}, FakeEnvironment(bad)); }, {"SLURM_PROCID 4"});
  bad.erase("SLURM_PROCID");
  testing::ExpectInvalidArgument([&] { ResolveSlurm({}, FakeEnvironment(bad)); },
                                 {"SLURM_PROCID is not set"});
  testing::ExpectInvalidArgument(
      [&] {
        ResolveSlurm({.jobs = {{"ps", 1}}}, FakeEnvironment(step));
      },
      {"ask for 1 tasks but the Slurm step has 4"});
  testing::ExpectInvalidArgument([&] { ResolveSlurm({.port_base = 65535}, FakeEnvironment(step)); },
                                 {"do not fit in ports"});
}

TEST(ClusterResolverTest, EnvironmentPrefersTfConfigThenSlurm) {
  EXPECT_FALSE(ResolveClusterFromEnvironment({}, FakeEnvironment({})).has_value());
  const std::map<std::string, std::string> slurm = {
      {"SLURM_PROCID", "0"}, {"SLURM_STEP_NODELIST", "h1"}, {"SLURM_STEP_TASKS_PER_NODE", "1"}};
  EXPECT_EQ(ResolveClusterFromEnvironment({}, FakeEnvironment(slurm))->source, "Slurm");
  std::map<std::string, std::string> both = slurm;
  both["TF_CONFIG"] = R"({"cluster": {"ps": ["p:1"]}, "task": {"type": "ps", "index": 0}})";
  EXPECT_EQ(ResolveClusterFromEnvironment({}, FakeEnvironment(both))->source, "TF_CONFIG");
  // A TF_CONFIG without a cluster leaves the choice to Slurm.
  both["TF_CONFIG"] = R"({"task": {"type": "ps", "index": 0}})";
  EXPECT_EQ(ResolveClusterFromEnvironment({}, FakeEnvironment(both))->source, "Slurm");
}

}  // namespace
}  // namespace flowtrain::distributed
