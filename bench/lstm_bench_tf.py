#!/usr/bin/env python3
"""The TensorFlow side of lstm_bench: writes the LSTM training graph and times TF on it.

    lstm_bench_tf.py write DIR     # DIR/model.meta and the data (*.bin, float32, C order)
    lstm_bench_tf.py time DIR      # lines "<ms_per_step> <loss> intra_op=I,inter_op=J"

The model is tf.compat.v1.nn.dynamic_rnn over an LSTMCell (batch 32, 50 steps, 128 inputs,
128 units), loss mean((outputs - y)^2), one GradientDescent step per run. Its initial weights
are constants in the graph (the variables' initializers), also written to kernel.bin (TF's
[inputs + units, 4 * units] layout, gates i, j, f, o) for the PyTorch side; the bias starts at
zero and the cell adds forget_bias 1 to f. Every system runs CHECK_STEPS steps from the
initial weights, reports the loss of the last of them, then times TIMED_STEPS more.
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1
v1.disable_v2_behavior()
v1.logging.set_verbosity(v1.logging.ERROR)

BATCH, STEPS, INPUTS, UNITS = 32, 50, 128, 128
LEARNING_RATE = 0.5
CHECK_STEPS, TIMED_STEPS = 5, 30


def write(out):
    rng = np.random.RandomState(2026)
    x = rng.uniform(-1, 1, (BATCH, STEPS, INPUTS)).astype(np.float32)
    y = rng.uniform(-0.5, 0.5, (BATCH, STEPS, UNITS)).astype(np.float32)
    kernel = rng.uniform(-0.1, 0.1, (INPUTS + UNITS, 4 * UNITS)).astype(np.float32)
    with tf.Graph().as_default() as g:
        xp = v1.placeholder(tf.float32, [BATCH, STEPS, INPUTS], name="x")
        yp = v1.placeholder(tf.float32, [BATCH, STEPS, UNITS], name="y")
        cell = v1.nn.rnn_cell.LSTMCell(UNITS, initializer=v1.constant_initializer(kernel))
        outputs, _ = v1.nn.dynamic_rnn(cell, xp, dtype=tf.float32)
        loss = tf.reduce_mean(tf.square(outputs - yp), name="loss")
        v1.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss, name="train")
        v1.global_variables_initializer()  # "init"
        v1.train.export_meta_graph(os.path.join(out, "model.meta"), graph=g)
    for name, value in (("x", x), ("y", y), ("kernel", kernel)):
        value.tofile(os.path.join(out, name + ".bin"))


def time_configs(out):
    x = np.fromfile(os.path.join(out, "x.bin"), np.float32).reshape(BATCH, STEPS, INPUTS)
    y = np.fromfile(os.path.join(out, "y.bin"), np.float32).reshape(BATCH, STEPS, UNITS)
    for intra, inter in [(1, 1), (2, 2), (1, 2), (2, 1), (0, 0)]:
        with tf.Graph().as_default() as g:
            v1.train.import_meta_graph(os.path.join(out, "model.meta"))
            config = v1.ConfigProto(intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter)
            with v1.Session(graph=g, config=config) as s:
                s.run("init")
                feed = {"x:0": x, "y:0": y}
                for _ in range(CHECK_STEPS):
                    loss, _ = s.run(["loss:0", "train"], feed)
                times = []
                for _ in range(TIMED_STEPS):
                    t = time.perf_counter()
                    s.run("train", feed)
                    times.append(time.perf_counter() - t)
                print("%.4f %.7g intra_op=%d,inter_op=%d" % (np.median(times) * 1e3, loss, intra, inter), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "time"):
        sys.exit(__doc__)
    (write if sys.argv[1] == "write" else time_configs)(sys.argv[2])
