#include "flowtrain/distributed/end_job.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/distributed/cluster_spec.h"
#include "flowtrain/distributed/internal/rpc_util.h"
#include "flowtrain/distributed/transport_security.h"

namespace flowtrain::distributed {

std::vector<std::string> EndJob(const std::string& target, const std::string& reason,
                                const EndJobOptions& options) {
  const std::string own_address = TargetAddress(target, "EndJob:");
  if (options.grace_period.count() < 0 || options.call_timeout.count() <= 0) {
    InvalidArgument("EndJob: the grace period must not be negative and the call timeout must be positive");
  }
  const TransportSecurity security = ClientSecurityFor(target);
  const GetStatusResponse status =
      GetTaskStatus(*NewWorkerStub(own_address, security), target, options.call_timeout);
  const ClusterSpec cluster = ClusterSpec::Parse(status.cluster());
  const std::string own_task = TaskName(status.job_name(), status.task_index());

  std::vector<std::pair<std::string, std::string>> tasks;  // name, address; the target last
  for (const std::string& job : cluster.jobs()) {
    for (int i = 0; i < cluster.num_tasks(job); ++i) {
      if (TaskName(job, i) != own_task) tasks.emplace_back(TaskName(job, i), cluster.task_address(job, i));
    }
  }
  tasks.emplace_back(own_task, own_address);

  EndJobRequest request;
  request.set_reason(reason);
  request.set_grace_ms(options.grace_period.count());
  std::vector<std::string> missed;
  for (const auto& [name, address] : tasks) {
    auto stub = NewWorkerStub(address, security);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options.call_timeout);
    EndJobResponse response;
    const grpc::Status answer = stub->EndJob(&context, request, &response);
    if (!answer.ok()) {
      missed.push_back(StrCat(TaskPeer(name, address), ": ", answer.error_message()));
    }
  }
  return missed;
}

}  // namespace flowtrain::distributed
