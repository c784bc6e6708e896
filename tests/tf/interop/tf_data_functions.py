"""TF's side of data_functions_test: input pipelines whose map, filter, flat_map and interleave
functions TF serialises as FunctionDefs, written as a GraphDef (tf.compat.v1 graph mode,
make_initializable_iterator, tf.io.write_graph) with the elements TF yields, for flowtrain to
import and run.

  tf_data_functions.py --out DIR

DIR gets: d0.tfrecord, d1.tfrecord (tf.train.Examples); pipelines.pb (the GraphDef);
expected.txt: per pipeline a line
"pipeline NAME INITIALIZER GET_NEXT COMPONENTS", then per element component a line
"element INDEX COMPONENT DTYPE DIM,DIM,... VALUE VALUE ..." ("-" for the dims of a scalar).
"""

import argparse
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()


def write_records(out):
    files = []
    for k in range(2):
        path = os.path.join(out, "d%d.tfrecord" % k)
        files.append(path)
        with tf.io.TFRecordWriter(path) as w:
            for i in range(7):
                feature = {
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i + 10.0 * k, 0.5 * i])),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[i + 7 * k])),
                }
                w.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return files


def build(files):
    pipelines = []
    scale = tf.constant(2.5, name="scale")
    features = {"x": tf.io.FixedLenFeature([2], tf.float32), "y": tf.io.FixedLenFeature([], tf.int64)}
    ds = tf.data.TFRecordDataset(files)
    ds = ds.map(lambda s: tf.io.parse_single_example(s, features))
    # Arithmetic with a captured tensor; a row of y % 3 + 1 values, so padded_batch pads.
    ds = ds.map(lambda d: (tf.fill(tf.reshape(d["y"] % 3 + 1, [1]), d["x"][0] * scale + d["x"][1]),
                           d["y"] * 3))
    # In graph mode `==` is Python's identity: the predicate spells out tf.equal.
    ds = ds.filter(lambda x, y: tf.not_equal(y % 2, 0))
    ds = ds.shuffle(4, seed=7)
    ds = ds.padded_batch(2, padded_shapes=([None], []), padding_values=(-1.0, tf.constant(0, tf.int64)))
    ds = ds.prefetch(2)
    pipelines.append(("main", ds))
    pipelines.append(("flat_map", tf.data.Dataset.range(4).flat_map(
        lambda v: tf.data.Dataset.from_tensor_slices(tf.range(v + 1) * 10 + v))))
    repeat = lambda v: tf.data.Dataset.from_tensors(v).repeat(v + 1)
    pipelines.append(("interleave", tf.data.Dataset.range(5).interleave(repeat, cycle_length=2, block_length=2)))
    pipelines.append(("parallel_interleave", tf.data.Dataset.range(5).interleave(
        repeat, cycle_length=3, block_length=1, num_parallel_calls=2, deterministic=True)))
    # A parallel map over the interleave's output (ParallelMapDatasetV2).
    pipelines.append(("parallel_map", tf.data.Dataset.range(12).map(lambda v: v * v - 1, num_parallel_calls=3)))
    # Shuffles inside a function, which TF 2.x writes as ShuffleDatasetV3 over a
    # DummySeedGenerator: each inner dataset is new, so each starts the same sequence of orders.
    pipelines.append(("shuffle_in_flat_map", tf.data.Dataset.range(1, 4).flat_map(
        lambda v: tf.data.Dataset.range(v * 5).shuffle(3, seed=5).repeat(2))))
    pipelines.append(("fixed_shuffle_in_flat_map", tf.data.Dataset.range(1, 3).flat_map(
        lambda v: tf.data.Dataset.range(v * 6).shuffle(4, seed=2, reshuffle_each_iteration=False).repeat(2))))
    return pipelines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    out = parser.parse_args().out
    os.makedirs(out, exist_ok=True)
    files = write_records(out)
    graph = tf.Graph()
    lines = []
    with graph.as_default():
        iterators = []
        for name, ds in build(files):
            it = tf.compat.v1.data.make_initializable_iterator(ds)
            nxt = it.get_next(name="next_" + name)
            nxt = list(nxt) if isinstance(nxt, tuple) else [nxt]
            iterators.append((name, it, nxt))
        graph_def = graph.as_graph_def()
        # Binary: TF 2.21's NodeDefs carry full-type fields flowtrain's protos lack, which a
        # binary parse skips and a text parse refuses.
        tf.io.write_graph(graph_def, out, "pipelines.pb", as_text=False)
        with tf.compat.v1.Session(graph=graph) as sess:
            for name, it, nxt in iterators:
                lines.append("pipeline %s %s %s %d" % (name, it.initializer.name, nxt[0].op.name, len(nxt)))
                sess.run(it.initializer)
                index = 0
                while True:
                    try:
                        values = sess.run(nxt)
                    except tf.errors.OutOfRangeError:
                        break
                    for c, v in enumerate(values):
                        v = np.asarray(v)
                        dims = ",".join(str(d) for d in v.shape) or "-"
                        flat = " ".join(repr(float(x)) if v.dtype.kind == "f" else str(int(x)) for x in v.ravel())
                        lines.append("element %d %d %s %s %s" % (index, c, v.dtype.name, dims, flat))
                    index += 1
    with open(os.path.join(out, "expected.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
