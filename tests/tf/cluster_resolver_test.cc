// The cluster managers' environments resolved by TF's TFConfigClusterResolver and
// SlurmClusterResolver (cluster/resolve.py) and by flowtrain's resolver: the same cluster, the
// same task, and an error where TF raises one.
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/distributed/cluster_resolver.h"
#include "tests/test_util.h"
#include "tests/tf/tf_test_util.h"

namespace flowtrain {
namespace {

struct ResolverCase {
  std::map<std::string, std::string> env;
  distributed::SlurmOptions slurm;
};

const std::vector<ResolverCase>& Cases() {
  static const auto* cases = new std::vector<ResolverCase>{
      {.env = {{"TF_CONFIG",
                R"({"cluster": {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"], "ps": ["p0:2222"]},
                    "task": {"type": "worker", "index": 1}, "environment": "cloud"})"}}},
      {.env = {{"TF_CONFIG",
                R"({"cluster": {"ps": ["p0:1", "p1:1"]}, "task": {"type": "ps", "index": "1"}})"}}},
      {.env = {{"TF_CONFIG", R"({"cluster": {"worker": ["w0:1", "w1:1"]}, "task": {"type": "worker"}})"}}},
      {.env = {{"SLURM_PROCID", "2"},
               {"SLURM_STEP_NODELIST", "t[02-03],t01"},
               {"SLURM_STEP_TASKS_PER_NODE", "2,1(x2)"},
               {"SLURM_STEP_NUM_TASKS", "4"}}},
      {.env = {{"SLURM_PROCID", "0"},
               {"SLURM_STEP_NODELIST", "n[1-4]"},
               {"SLURM_STEP_TASKS_PER_NODE", "1(x4)"},
               {"SLURM_STEP_NUM_TASKS", "4"}},
       .slurm = {.jobs = {{"ps", 1}, {"worker", 3}}, .port_base = 2222}},
      {.env = {{"SLURM_PROCID", "5"},
               {"SLURM_STEP_NODELIST", "gpu[08-10],cpu1"},
               {"SLURM_STEP_TASKS_PER_NODE", "3,2(x2),1"},
               {"SLURM_STEP_NUM_TASKS", "8"}},
       .slurm = {.jobs = {{"ps", 2}, {"worker", 5}, {"evaluator", 1}}}},
      {.env = {{"SLURM_PROCID", "1"},
               {"SLURM_STEP_NODELIST", "n[1-2]"},
               {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
               {"SLURM_STEP_NUM_TASKS", "2"}},
       .slurm = {.jobs = {{"ps", 1}}}},
  };
  return *cases;
}

// The case list as resolve.py reads it.
std::string CasesJson() {
  google::protobuf::ListValue list;
  for (const ResolverCase& c : Cases()) {
    google::protobuf::Struct* entry = list.add_values()->mutable_struct_value();
    google::protobuf::Struct* env = (*entry->mutable_fields())["env"].mutable_struct_value();
    for (const auto& [name, value] : c.env) (*env->mutable_fields())[name].set_string_value(value);
    if (!c.slurm.jobs.empty()) {
      google::protobuf::Struct* jobs = (*entry->mutable_fields())["slurm_jobs"].mutable_struct_value();
      for (const auto& [job, count] : c.slurm.jobs) (*jobs->mutable_fields())[job].set_number_value(count);
    }
    (*entry->mutable_fields())["port_base"].set_number_value(c.slurm.port_base);
  }
  std::string json;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(list, &json).ok());
  return json;
}

// flowtrain's answer in resolve.py's form ("error" alone for an error: the messages differ).
std::string Resolve(const ResolverCase& c) {
  auto env = [&](const std::string& name) -> std::optional<std::string> {
    auto it = c.env.find(name);
    if (it == c.env.end()) return std::nullopt;
    return it->second;
  };
  try {
    std::optional<distributed::ResolvedCluster> resolved =
        distributed::ResolveClusterFromEnvironment(c.slurm, env);
    if (!resolved) return "none";
    return StrCat("ok ", resolved->cluster.ToString(), " ", resolved->job_name, " ", resolved->task_index);
  } catch (const InvalidArgumentError&) {
    return "error";
  }
}

TEST(ClusterResolverTfTest, EnvironmentsResolveAsTensorFlowResolvesThem) {
  const std::string cases_file = testing::MakeTempDir("resolver") + "/cases.json";
  WriteFileAtomically(cases_file, CasesJson());
  const testing::PythonRun run = testing::RunTfPython({testing::TfScript("cluster/resolve.py"), cases_file});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::vector<std::string> tf_answers;
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("ok ")) {
      // TF leaves the index of a TF_CONFIG task without one unset; flowtrain takes 0, as
      // TF's Estimator does.
      std::string answer(line);
      if (answer.ends_with(" None")) answer.replace(answer.size() - 4, 4, "0");
      tf_answers.push_back(answer);
    } else if (line.starts_with("error ")) {
      tf_answers.push_back("error");
    }
  }
  ASSERT_EQ(tf_answers.size(), Cases().size()) << run.output;
  for (size_t i = 0; i < Cases().size(); ++i) {
    EXPECT_EQ(Resolve(Cases()[i]), tf_answers[i]) << "case " << i << "; TF said:\n" << run.output;
  }
}

}  // namespace
}  // namespace flowtrain
