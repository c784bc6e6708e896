#!/usr/bin/env python3
"""Checks the graphs export_workloads.py wrote: TF imports each DIR/<workload>.meta into a fresh
graph, runs `init` and 3 training steps (the train_op collection's op, fed batches 0, 1, 2 of
the workload's data) and requires every loss to be finite; for the workloads with variables
it also requires the steps to change them (the train op trains) and the loss before the
first update to be the one the initial weights give (ln 10 within 20% for the 10-class
models, ln 2 for W4's logistic regression); W1's loss must be x + 27.5 exactly.

    check_workloads.py --dir DIR

Exits 1, naming what failed, if any check failed.
"""
import argparse
import json
import math
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_workloads as wl  # noqa: E402  (the data generator)

STEPS = 3


def check_workload(tf, directory, workload, spec):
    v1 = tf.compat.v1
    problems = []
    with tf.Graph().as_default() as graph:
        v1.train.import_meta_graph(os.path.join(directory, spec["meta_graph"]))
        train_ops = v1.get_collection("train_op")
        if len(train_ops) != 1:
            return [f"{workload}: collection train_op holds {len(train_ops)} ops"]
        x = graph.get_tensor_by_name("x:0")
        loss = graph.get_tensor_by_name("loss:0")
        y = graph.get_tensor_by_name("y:0") if spec["y"] else None
        if list(x.shape) != spec["x"]["shape"]:
            problems.append(f"{workload}: x has shape {x.shape}, workloads.json says {spec['x']['shape']}")
        variables = v1.global_variables()
        with v1.Session(graph=graph, config=v1.ConfigProto(intra_op_parallelism_threads=2,
                                                           inter_op_parallelism_threads=2)) as sess:
            sess.run(graph.get_operation_by_name("init"))
            before = sess.run(variables)
            losses = []
            for b in range(STEPS):
                xs, ys = wl.batch(workload, b)
                feeds = {x: xs} if y is None else {x: xs, y: ys}
                _, value = sess.run([train_ops[0], loss], feeds)
                losses.append(float(value))
            after = sess.run(variables)
    print(f"{workload}: {len(variables)} variables, losses {losses}", flush=True)
    if not all(math.isfinite(v) for v in losses):
        problems.append(f"{workload}: losses {losses} are not all finite")
    if workload == "W1":
        if losses != [27.5 + 1.0] * STEPS:
            problems.append(f"{workload}: loss {losses}, expected 1 + 27.5")
        return problems
    if not variables:
        problems.append(f"{workload}: no variables")
    changed = [v.op.name for v, a, b in zip(variables, before, after) if not np.array_equal(a, b)]
    if not changed:
        problems.append(f"{workload}: {STEPS} steps changed no variable")
    expected = math.log(2.0) if workload == "W4" else math.log(10.0)
    if not abs(losses[0] - expected) <= 0.2 * expected:
        problems.append(f"{workload}: first loss {losses[0]}, expected about {expected:.3f}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", required=True)
    args = parser.parse_args()
    import tensorflow as tf
    tf.compat.v1.disable_v2_behavior()
    with open(os.path.join(args.dir, "workloads.json")) as f:
        manifest = json.load(f)
    problems = []
    missing = sorted(set(wl.WORKLOADS) - set(manifest))
    if missing:
        problems.append(f"workloads.json lacks {missing}")
    for workload, spec in manifest.items():
        problems += check_workload(tf, args.dir, workload, spec)
    for p in problems:
        print("FAIL:", p)
    print("FAILED" if problems else "OK", f"({len(manifest)} workloads, {len(problems)} problems)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
