#!/usr/bin/env python3
"""Checks the graphs export_workloads.py wrote: TF imports each DIR/<workload>.meta into a fresh
graph, runs `init` and 3 training steps (the train_op collection's op, fed batches 0, 1, 2 of
the workload's data) and requires every loss to be finite; for the workloads with variables
it also requires the steps to change them (the train op trains) and the loss before the
first update to be the loss of the workload's definition, computed here in numpy (float64)
from the same initial weights and batch 0, within 1e-4: a graph whose layers, activations,
loss or initial weights strayed from ops_bench's would not give it. W1's loss must be
x + 27.5 exactly.

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

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
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
    expected = reference_first_loss(workload)
    print(f"{workload}: the definition's first loss (numpy) {expected!r}", flush=True)
    if not abs(losses[0] - expected) <= 1e-4 * abs(expected):
        problems.append(f"{workload}: first loss {losses[0]!r}, the definition's (numpy) {expected!r}")
    return problems


def reference_first_loss(workload):
    """The mean loss of batch 0 on the initial weights, by the workload's definition."""
    x, y = wl.batch(workload, 0)
    x = x.astype(np.float64)
    seed = wl.SPECS[workload][0] + wl.WEIGHT_SEED_OFFSET

    def kernel(shape, layer_seed, fan_in, fan_out):
        return wl.uniform(shape, layer_seed, wl.glorot_limit(fan_in, fan_out)).astype(np.float64)

    def relu(v):
        return np.maximum(v, 0.0)

    def softmax_xent(logits):
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_z = np.log(np.exp(shifted).sum(axis=1))
        return float(np.mean(log_z - shifted[np.arange(len(y)), y]))

    if workload in ("W2", "W2b", "W3"):
        hidden = wl.W3_HIDDEN if workload == "W3" else wl.W2_HIDDEN
        h = relu(x @ kernel([wl.MLP_IN, hidden], seed, wl.MLP_IN, hidden))
        h = relu(h @ kernel([hidden, hidden], seed + 1, hidden, hidden))
        return softmax_xent(h @ kernel([hidden, wl.MLP_CLASSES], seed + 2, hidden, wl.MLP_CLASSES))
    if workload == "W4":
        z = x @ kernel([wl.W4_FEATURES, 1], seed, wl.W4_FEATURES, 1)
        return float(np.mean(relu(z) - z * y + np.log1p(np.exp(-np.abs(z)))))
    k = wl.CNN_KERNEL

    def conv_pool(h, fan_in, filters, layer_seed):  # conv k x k SAME, ReLU, max-pool 2x2
        w = kernel([k, k, fan_in, filters], layer_seed, k * k * fan_in, k * k * filters)
        padded = np.pad(h, ((0, 0), (k // 2, k // 2), (k // 2, k // 2), (0, 0)))
        patches = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(1, 2))  # n h w c i j
        out = relu(np.einsum("nhwcij,ijco->nhwo", patches, w, optimize=True))
        n, height, width, c = out.shape
        return out.reshape(n, height // 2, 2, width // 2, 2, c).max(axis=(2, 4))

    h = conv_pool(x, 1, wl.CNN_CONV1, seed)
    h = conv_pool(h, wl.CNN_CONV1, wl.CNN_CONV2, seed + 1)
    h = relu(h.reshape(len(h), -1) @ kernel([wl.CNN_FLAT, wl.CNN_DENSE], seed + 2, wl.CNN_FLAT, wl.CNN_DENSE))
    return softmax_xent(h @ kernel([wl.CNN_DENSE, wl.MLP_CLASSES], seed + 3, wl.CNN_DENSE, wl.MLP_CLASSES))


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
