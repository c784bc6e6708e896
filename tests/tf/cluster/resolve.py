"""Resolves clusters the way TensorFlow does, for tests/tf/cluster_resolver_test.cc.

Usage: resolve.py CASES_JSON. CASES_JSON holds a list of cases, each
{"env": {VARIABLE: value}, "slurm_jobs": {job: count} (optional), "port_base": N (optional)}:
a case with TF_CONFIG in its environment goes through TFConfigClusterResolver, the others
through SlurmClusterResolver. Prints one line per case: "ok <cluster> <job> <index>", the
cluster in flowtrain's ClusterSpec syntax (jobs sorted), or "error <message>".
"""
import json
import os
import sys

from tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver import (
    SlurmClusterResolver, expand_tasks_per_node)
from tensorflow.python.distribute.cluster_resolver.tfconfig_cluster_resolver import (
    TFConfigClusterResolver)

MANAGED = ("TF_CONFIG", "SLURM_")


def spec_text(cluster_spec):
    jobs = cluster_spec.as_dict()
    return ";".join("%s=%s" % (job, ",".join(jobs[job])) for job in sorted(jobs))


def resolve(case):
    for name in list(os.environ):
        if name.startswith(MANAGED):
            del os.environ[name]
    os.environ.update(case["env"])
    if "TF_CONFIG" in case["env"]:
        resolver = TFConfigClusterResolver()
    else:
        counts = expand_tasks_per_node(os.environ.get("SLURM_STEP_TASKS_PER_NODE", "1"))
        # No GPUs: one "GPU" per task keeps TF's port loop from stopping early.
        resolver = SlurmClusterResolver(jobs=case.get("slurm_jobs"), port_base=case.get("port_base", 8888),
                                        gpus_per_node=max(counts), gpus_per_task=1, auto_set_gpu=False)
    spec = spec_text(resolver.cluster_spec())
    return "ok %s %s %s" % (spec, resolver.task_type, resolver.task_id)


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    for case in cases:
        try:
            print(resolve(case))
        except Exception as e:  # TF raises ValueError, RuntimeError, KeyError...
            print("error %s" % str(e).replace("\n", " "))


if __name__ == "__main__":
    main()
