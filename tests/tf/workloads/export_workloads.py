#!/usr/bin/env python3
"""Exports ops_bench's training workloads (bench/ops_bench.cc, bench/ops_bench_data.h) as
TensorFlow graphs, so that TF can be measured as a peer on the very graphs flowtrain runs.

    export_workloads.py --out DIR [--only W2,CNN]

writes, per workload, DIR/<workload>.meta: a binary MetaGraphDef built with tf.compat.v1
exactly as the workload is defined (layer sizes, activations, loss, optimizer and its
hyper-parameters, initial weights), and DIR/workloads.json describing them all. Each graph has

  x:0      placeholder, the batch's inputs (float32)
  y:0      placeholder, the batch's labels (int64 class ids, or float32 0/1 for W4)
  loss:0   the mean loss of the batch (computed before the step's update)
  collection "train_op"  the op one training step runs (the optimizer's update)
  init                   the variables' initializer (also in collection "init_op")

Workloads (batch b of a workload: inputs from seed S + 2b, labels from S + 2b + 1; layer l's
kernel from seed S + 1000 + l, glorot-uniform's range; biases zero; the generator is
ops_bench_data.h's, so the initial weights and the batches are bit for bit flowtrain's):
  W1   x: float32 scalar; loss = x + 0.5 + 1.0 + ... + 5.0 (10 Adds, one per constant); no
       variables and no y; "train_op" holds the last Add (running it is W1's step)
  W2   MLP 784-256-256-10, ReLU, softmax cross-entropy, SGD 0.1, batch 64        S = 10000
  W2b  the same with Adam 1e-3 (beta1 0.9, beta2 0.999, epsilon 1e-8)           S = 10000
  W3   MLP 784-2048-2048-10, ReLU, softmax cross-entropy, SGD 0.1, batch 256    S = 20000
  W4   logistic regression, 1000 features, sigmoid cross-entropy, SGD 0.1,
       batch 1024, y float32 [1024, 1]                                           S = 30000
  CNN  28x28x1 -> conv 5x5 32 SAME, ReLU -> max-pool 2x2 -> conv 5x5 64 SAME, ReLU ->
       max-pool 2x2 -> flatten -> dense 128 ReLU -> dense 10, softmax cross-entropy,
       SGD 0.01, batch 64, NHWC                                                  S = 40000

Use (TF 1.x style):
    saver = tf.compat.v1.train.import_meta_graph("DIR/W2.meta")
    train_op = tf.compat.v1.get_collection("train_op")[0]
    sess.run("init"); sess.run([train_op, "loss:0"], {"x:0": xs, "y:0": ys})
workloads.json gives each workload's x and y shapes and dtypes, its data seed and its step
counts (warmup, timed, distinct batches), and `batch(workload, b)` below makes batch b.
"""
import argparse
import json
import math
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np

# ---- bench/ops_bench_data.h (keep in step) ----------------------------------------------------
W2_SEED, W3_SEED, W4_SEED, CNN_SEED = 10000, 20000, 30000, 40000
WEIGHT_SEED_OFFSET = 1000
W1_ADDS = 10
MLP_IN, MLP_CLASSES = 784, 10
W2_HIDDEN, W2_BATCH = 256, 64
SGD_LR, ADAM_LR = 0.1, 1e-3
W3_HIDDEN, W3_BATCH = 2048, 256
W4_FEATURES, W4_BATCH = 1000, 1024
CNN_BATCH, CNN_SIDE, CNN_CONV1, CNN_CONV2, CNN_KERNEL, CNN_DENSE = 64, 28, 32, 64, 5, 128
CNN_FLAT = (CNN_SIDE // 4) * (CNN_SIDE // 4) * CNN_CONV2
CNN_LR = 0.01
STEPS = {"W1": (500, 4000, 1), "W2": (20, 400, 64), "W2b": (20, 400, 64), "W3": (2, 8, 8),
         "W4": (20, 400, 8), "CNN": (3, 12, 8)}
WORKLOADS = ["W1", "W2", "W2b", "W3", "W4", "CNN"]


def _hash(seed, n):
    """splitmix64((seed << 32) | i) for i in [0, n)."""
    with np.errstate(over="ignore"):
        z = (np.uint64(seed) << np.uint64(32)) | np.arange(n, dtype=np.uint64)
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def uniform(shape, seed, scale):
    """float32 scale * U[-1, 1) of the shared generator, in flowtrain's (and TF's) layout."""
    z = _hash(seed, math.prod(shape))
    f = (z >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -23) - np.float32(1.0)
    return (f * np.float32(scale)).reshape(shape)


def labels(n, seed, classes):
    return ((_hash(seed, n) >> np.uint64(40)) % np.uint64(classes)).astype(np.int64)


def glorot_limit(fan_in, fan_out):
    return float(np.float32(math.sqrt(6.0 / (fan_in + fan_out))))


# ---- The workloads ----------------------------------------------------------------------------
SPECS = {
    # workload: (seed, x shape, y shape, y dtype)
    "W1": (None, [], None, None),
    "W2": (W2_SEED, [W2_BATCH, MLP_IN], [W2_BATCH], "int64"),
    "W2b": (W2_SEED, [W2_BATCH, MLP_IN], [W2_BATCH], "int64"),
    "W3": (W3_SEED, [W3_BATCH, MLP_IN], [W3_BATCH], "int64"),
    "W4": (W4_SEED, [W4_BATCH, W4_FEATURES], [W4_BATCH, 1], "float32"),
    "CNN": (CNN_SEED, [CNN_BATCH, CNN_SIDE, CNN_SIDE, 1], [CNN_BATCH], "int64"),
}


def batch(workload, b):
    """Batch b of `workload` as ops_bench makes it: (x, y) numpy arrays."""
    seed, x_shape, y_shape, y_dtype = SPECS[workload]
    if workload == "W1":
        return np.float32(1.0), None
    x = uniform(x_shape, seed + 2 * b, 1.0)
    if workload == "W4":
        y = labels(W4_BATCH, seed + 2 * b + 1, 2).astype(np.float32).reshape(y_shape)
    else:
        y = labels(y_shape[0], seed + 2 * b + 1, MLP_CLASSES)
    return x, y


def build(workload):
    """Builds `workload` in the default graph; returns (loss, train_op)."""
    import tensorflow as tf
    v1 = tf.compat.v1
    seed, x_shape, y_shape, y_dtype = SPECS[workload]
    x = v1.placeholder(tf.float32, x_shape, name="x")
    if workload == "W1":
        total = x
        for k in range(1, W1_ADDS + 1):
            total = tf.add(total, tf.constant(0.5 * k, tf.float32))
        return tf.identity(total, name="loss"), total.op
    y = v1.placeholder(tf.as_dtype(y_dtype), y_shape, name="y")
    w = seed + WEIGHT_SEED_OFFSET

    def kernel(shape, layer_seed, fan_in, fan_out):
        return v1.constant_initializer(uniform(shape, layer_seed, glorot_limit(fan_in, fan_out)))

    def dense(h, fan_in, units, layer_seed, activation):
        return v1.layers.dense(h, units, activation=activation,
                               kernel_initializer=kernel([fan_in, units], layer_seed, fan_in, units))

    def softmax_loss(logits):
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss")

    if workload in ("W2", "W2b", "W3"):
        hidden = W3_HIDDEN if workload == "W3" else W2_HIDDEN
        h = dense(x, MLP_IN, hidden, w, tf.nn.relu)
        h = dense(h, hidden, hidden, w + 1, tf.nn.relu)
        loss = softmax_loss(dense(h, hidden, MLP_CLASSES, w + 2, None))
        optimizer = (v1.train.AdamOptimizer(ADAM_LR, beta1=0.9, beta2=0.999, epsilon=1e-8) if workload == "W2b"
                     else v1.train.GradientDescentOptimizer(SGD_LR))
    elif workload == "W4":
        z = dense(x, W4_FEATURES, 1, w, None)
        # TF's sigmoid cross-entropy is max(z, 0) - z * y + log(1 + exp(-|z|)), as ops_bench writes it.
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=z), name="loss")
        optimizer = v1.train.GradientDescentOptimizer(SGD_LR)
    else:  # CNN
        k = CNN_KERNEL

        def conv(h, fan_in, filters, layer_seed):
            h = v1.layers.conv2d(h, filters, [k, k], strides=[1, 1], padding="same", activation=tf.nn.relu,
                                 kernel_initializer=kernel([k, k, fan_in, filters], layer_seed,
                                                           k * k * fan_in, k * k * filters))
            return v1.layers.max_pooling2d(h, [2, 2], [2, 2])

        h = conv(x, 1, CNN_CONV1, w)
        h = conv(h, CNN_CONV1, CNN_CONV2, w + 1)
        h = dense(v1.layers.flatten(h), CNN_FLAT, CNN_DENSE, w + 2, tf.nn.relu)
        loss = softmax_loss(dense(h, CNN_DENSE, MLP_CLASSES, w + 3, None))
        optimizer = v1.train.GradientDescentOptimizer(CNN_LR)
    return loss, optimizer.minimize(loss)


def export(workload, out_dir):
    import tensorflow as tf
    v1 = tf.compat.v1
    with tf.Graph().as_default() as graph:
        loss, train_op = build(workload)
        init = v1.global_variables_initializer()  # named "init"
        assert init.name == "init", init.name
        # Optimizer.minimize puts its op in the collection itself (GraphKeys.TRAIN_OP); W1 has none.
        if train_op not in v1.get_collection("train_op"):
            v1.add_to_collection("train_op", train_op)
        assert v1.get_collection("train_op") == [train_op]
        v1.add_to_collection(v1.GraphKeys.INIT_OP, init)
        assert loss.name == "loss:0", loss.name
        path = os.path.join(out_dir, workload + ".meta")
        v1.train.export_meta_graph(filename=path, graph=graph, as_text=False)
    seed, x_shape, y_shape, y_dtype = SPECS[workload]
    warmup, timed, batches = STEPS[workload]
    return {"meta_graph": workload + ".meta", "x": {"shape": x_shape, "dtype": "float32"},
            "y": None if y_shape is None else {"shape": y_shape, "dtype": y_dtype},
            "data_seed": seed, "steps": {"warmup": warmup, "timed": timed, "batches": batches}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads")
    args = parser.parse_args()
    import tensorflow as tf
    tf.compat.v1.disable_v2_behavior()
    wanted = args.only.split(",")
    unknown = sorted(set(wanted) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workloads {unknown}; known: {WORKLOADS}")
    os.makedirs(args.out, exist_ok=True)
    manifest = {}
    for workload in wanted:
        manifest[workload] = export(workload, args.out)
        print(f"{workload}: {os.path.join(args.out, workload + '.meta')}", flush=True)
    with open(os.path.join(args.out, "workloads.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
