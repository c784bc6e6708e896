#!/usr/bin/env python3
"""The TensorFlow side of wide_deep_bench: writes the wide-and-deep training graph and times TF on it.

    wide_deep_bench_tf.py write DIR ROWS   # DIR/model.meta, DIR/model.ckpt.*, the data (*.bin)
    wide_deep_bench_tf.py time DIR ROWS    # lines "<ms_per_step> <loss> <table_l1> <wide_l1> intra_op=I,inter_op=J"

The model (TF1 graph code: get_variable makes reference variables, as TF1 jobs have them):
ids int64 [BATCH, FEATURES] index ONE shared table "embeddings" [ROWS, DIM]; the deep part
looks them up (embedding_lookup -> [BATCH, FEATURES, DIM]), flattens to [BATCH, FEATURES * DIM]
and runs dense 256 relu, dense 128 relu, dense 1; the wide part looks the same ids up in
"wide_weights" [ROWS, 1] and sums over the features, plus "wide_bias". Loss: the mean sigmoid
cross-entropy against labels float [BATCH, 1]; Adagrad (LEARNING_RATE, TF's initial accumulator
0.1). The graph has a Saver (save/restore_all); `write` runs "init" once and saves those
initial variables as DIR/model.ckpt, and writes for the other systems the initial weights
(float32, C order: embeddings.bin, dense*_kernel.bin [in, out], dense*_bias.bin) and
NUM_BATCHES batches (ids.bin int64 [NUM_BATCHES, BATCH, FEATURES], uniform in [0, ROWS);
labels.bin float32 [NUM_BATCHES, BATCH, 1], 0 or 1). Step i trains on batch i % NUM_BATCHES,
for every system. Every system runs CHECK_STEPS steps from the checkpoint, reports the loss
of the last (computed before that step's update) and how far the check steps moved the two
tables (table_l1 = sum |embeddings - initial embeddings|, wide_l1 = sum |wide_weights|: the
loss alone barely depends on the tables' sparse updates, as the next batches mostly look up
other rows), then times TIMED_STEPS more.
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

# wide_deep_bench.cc's and wide_deep_bench_pytorch.py's constants (keep them in step).
BATCH, FEATURES, DIM = 512, 26, 64
HIDDEN = (256, 128)
LEARNING_RATE = 0.05
INITIAL_ACCUMULATOR = 0.1
NUM_BATCHES = 20
CHECK_STEPS, TIMED_STEPS = 5, 30
SEED = 2026
DENSE_LAYERS = ("dense", "dense_1", "dense_2")


def build(rows):
    ids = v1.placeholder(tf.int64, [BATCH, FEATURES], name="ids")
    labels = v1.placeholder(tf.float32, [BATCH, 1], name="labels")
    table = v1.get_variable("embeddings", [rows, DIM], initializer=v1.random_uniform_initializer(-0.05, 0.05))
    deep = tf.reshape(v1.nn.embedding_lookup(table, ids), [BATCH, FEATURES * DIM])
    for units in HIDDEN:
        deep = v1.layers.dense(deep, units, activation=tf.nn.relu)
    deep = v1.layers.dense(deep, 1)
    wide_table = v1.get_variable("wide_weights", [rows, 1], initializer=v1.zeros_initializer())
    wide_bias = v1.get_variable("wide_bias", [1], initializer=v1.zeros_initializer())
    wide = tf.reduce_sum(v1.nn.embedding_lookup(wide_table, ids), axis=1) + wide_bias
    logits = deep + wide
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits), name="loss")
    v1.train.AdagradOptimizer(LEARNING_RATE, initial_accumulator_value=INITIAL_ACCUMULATOR).minimize(
        loss, name="train")
    v1.global_variables_initializer()  # "init"
    return v1.train.Saver()  # save/Const, save/restore_all


def write(out, rows):
    rng = np.random.RandomState(SEED)
    ids = rng.randint(0, rows, (NUM_BATCHES, BATCH, FEATURES)).astype(np.int64)
    labels = rng.randint(0, 2, (NUM_BATCHES, BATCH, 1)).astype(np.float32)
    with tf.Graph().as_default() as g:
        v1.set_random_seed(SEED)
        saver = build(rows)
        saver.export_meta_graph(os.path.join(out, "model.meta"))
        with v1.Session(graph=g) as s:
            s.run("init")
            saver.save(s, os.path.join(out, "model.ckpt"), write_meta_graph=False, write_state=False)
            s.run("embeddings:0").tofile(os.path.join(out, "embeddings.bin"))
            for layer in DENSE_LAYERS:
                for part in ("kernel", "bias"):
                    s.run("%s/%s:0" % (layer, part)).tofile(os.path.join(out, "%s_%s.bin" % (layer, part)))
    ids.tofile(os.path.join(out, "ids.bin"))
    labels.tofile(os.path.join(out, "labels.bin"))


def time_configs(out, rows):
    initial = np.fromfile(os.path.join(out, "embeddings.bin"), np.float32).reshape(rows, DIM)
    ids = np.fromfile(os.path.join(out, "ids.bin"), np.int64).reshape(NUM_BATCHES, BATCH, FEATURES)
    labels = np.fromfile(os.path.join(out, "labels.bin"), np.float32).reshape(NUM_BATCHES, BATCH, 1)
    feeds = [{"ids:0": ids[b], "labels:0": labels[b]} for b in range(NUM_BATCHES)]
    for intra, inter in [(1, 1), (2, 2), (1, 2), (2, 1), (0, 0)]:
        with tf.Graph().as_default() as g:
            saver = v1.train.import_meta_graph(os.path.join(out, "model.meta"))
            config = v1.ConfigProto(intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter)
            with v1.Session(graph=g, config=config) as s:
                saver.restore(s, os.path.join(out, "model.ckpt"))
                step = 0
                for _ in range(CHECK_STEPS):
                    loss, _ = s.run(["loss:0", "train"], feeds[step % NUM_BATCHES])
                    step += 1
                table, wide = s.run(["embeddings:0", "wide_weights:0"])
                table_l1 = np.abs(table - initial).sum(dtype=np.float64)
                wide_l1 = np.abs(wide).sum(dtype=np.float64)
                del table, wide
                times = []
                for _ in range(TIMED_STEPS):
                    feed = feeds[step % NUM_BATCHES]
                    t = time.perf_counter()
                    s.run("train", feed)
                    times.append(time.perf_counter() - t)
                    step += 1
                print("%.4f %.7g %.7g %.7g intra_op=%d,inter_op=%d"
                      % (np.median(times) * 1e3, loss, table_l1, wide_l1, intra, inter), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("write", "time"):
        sys.exit(__doc__)
    (write if sys.argv[1] == "write" else time_configs)(sys.argv[2], int(sys.argv[3]))
