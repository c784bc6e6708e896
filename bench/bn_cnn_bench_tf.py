#!/usr/bin/env python3
"""The TensorFlow side of bn_cnn_bench: writes the batch-normalised CNN's training graph and times TF on it.

    bn_cnn_bench_tf.py write DIR     # DIR/model.meta, the initial weights and the data (*.bin)
    bn_cnn_bench_tf.py time DIR      # lines "<ms_per_step> <loss> intra_op=I,inter_op=J"

The model is the main example's CNN (examples/fashion_mnist_model.h) with batch normalisation
after each convolution, in TF1 graph code: images float [BATCH, 28, 28, 1] -> 2 x (conv2d 3x3
SAME without bias -> batch_normalization(training=True), which is fused (FusedBatchNormV3) for
4-D input -> relu -> max_pooling2d 2x2 stride 2), filters 32 then 64 -> flatten -> dense 128
relu -> dense 10. Loss: the mean sparse softmax cross-entropy against labels int64 [BATCH];
Adam (LEARNING_RATE) under a control dependency on the UPDATE_OPS (the moving averages), as TF1
code writes it. The initial weights are constants in the graph (the variables' initializers)
and are written for the PyTorch side (float32, C order, TF's layouts: conv*_kernel.bin HWIO
[3, 3, in, out], dense*_kernel.bin [in, out]); biases start at zero, batch norm's gamma at 1
and beta at 0. The data are the first NUM_BATCHES * BATCH images of Debian's Fashion-MNIST
training set, scaled to [0, 1]: images.bin float32 [NUM_BATCHES, BATCH, 28, 28, 1] and
labels.bin int64 [NUM_BATCHES, BATCH]. Step i trains on batch i % NUM_BATCHES, for every
system. Every system runs CHECK_STEPS steps from the initial weights, reports the loss of the
last of them (computed before that step's update), then times TIMED_STEPS more.
"""
import gzip
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

# bn_cnn_bench.cc's and bn_cnn_bench_pytorch.py's constants (keep them in step).
BATCH, SIZE, CLASSES = 64, 28, 10
FILTERS, HIDDEN = (32, 64), 128
LEARNING_RATE = 1e-3
NUM_BATCHES = 8
CHECK_STEPS, TIMED_STEPS = 5, 30
SEED = 2026
DATA_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path, header):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=header)


def glorot(rng, shape, fan_in, fan_out):
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, shape).astype(np.float32)


def write(out):
    n = NUM_BATCHES * BATCH
    images = read_idx(os.path.join(DATA_DIR, "train-images-idx3-ubyte.gz"), 16)[: n * SIZE * SIZE]
    images = (images.astype(np.float32) / 255.0).reshape(NUM_BATCHES, BATCH, SIZE, SIZE, 1)
    labels = read_idx(os.path.join(DATA_DIR, "train-labels-idx1-ubyte.gz"), 8)[:n]
    labels = labels.astype(np.int64).reshape(NUM_BATCHES, BATCH)
    rng = np.random.RandomState(SEED)
    weights = {}
    channels = 1
    for i, filters in enumerate(FILTERS):
        weights["conv%d_kernel" % (i + 1)] = glorot(rng, (3, 3, channels, filters), 9 * channels, 9 * filters)
        channels = filters
    flat = (SIZE // 4) * (SIZE // 4) * channels
    weights["dense_kernel"] = glorot(rng, (flat, HIDDEN), flat, HIDDEN)
    weights["dense_1_kernel"] = glorot(rng, (HIDDEN, CLASSES), HIDDEN, CLASSES)
    with tf.Graph().as_default() as g:
        x = v1.placeholder(tf.float32, [BATCH, SIZE, SIZE, 1], name="images")
        y = v1.placeholder(tf.int64, [BATCH], name="labels")
        for i, filters in enumerate(FILTERS):
            kernel = v1.constant_initializer(weights["conv%d_kernel" % (i + 1)])
            x = v1.layers.conv2d(x, filters, 3, padding="same", use_bias=False, kernel_initializer=kernel)
            x = v1.layers.batch_normalization(x, training=True)
            x = tf.nn.relu(x)
            x = v1.layers.max_pooling2d(x, 2, 2)
        x = v1.layers.flatten(x)
        x = v1.layers.dense(x, HIDDEN, activation=tf.nn.relu,
                            kernel_initializer=v1.constant_initializer(weights["dense_kernel"]))
        logits = v1.layers.dense(x, CLASSES, kernel_initializer=v1.constant_initializer(weights["dense_1_kernel"]))
        loss = tf.reduce_mean(v1.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
        with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            v1.train.AdamOptimizer(LEARNING_RATE).minimize(loss, name="train")
        v1.global_variables_initializer()  # "init"
        v1.train.export_meta_graph(os.path.join(out, "model.meta"), graph=g)
    images.tofile(os.path.join(out, "images.bin"))
    labels.tofile(os.path.join(out, "labels.bin"))
    for name, value in weights.items():
        value.tofile(os.path.join(out, name + ".bin"))


def time_configs(out):
    images = np.fromfile(os.path.join(out, "images.bin"), np.float32).reshape(NUM_BATCHES, BATCH, SIZE, SIZE, 1)
    labels = np.fromfile(os.path.join(out, "labels.bin"), np.int64).reshape(NUM_BATCHES, BATCH)
    feeds = [{"images:0": images[b], "labels:0": labels[b]} for b in range(NUM_BATCHES)]
    for intra, inter in [(1, 1), (2, 2), (1, 2), (2, 1), (0, 0)]:
        with tf.Graph().as_default() as g:
            v1.train.import_meta_graph(os.path.join(out, "model.meta"))
            config = v1.ConfigProto(intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter)
            with v1.Session(graph=g, config=config) as s:
                s.run("init")
                for i in range(CHECK_STEPS):
                    loss, _ = s.run(["loss:0", "train"], feeds[i % NUM_BATCHES])
                times = []
                for i in range(CHECK_STEPS, CHECK_STEPS + TIMED_STEPS):
                    feed = feeds[i % NUM_BATCHES]
                    t = time.perf_counter()
                    s.run("train", feed)
                    times.append(time.perf_counter() - t)
                print("%.4f %.7g intra_op=%d,inter_op=%d" % (np.median(times) * 1e3, loss, intra, inter), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "time"):
        sys.exit(__doc__)
    (write if sys.argv[1] == "write" else time_configs)(sys.argv[2])
