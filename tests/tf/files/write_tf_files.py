#!/usr/bin/env python3
"""Writes, with a live TensorFlow, the kinds of files flowtrain's readers must read.

  write_tf_files.py --out DIR

DIR/ gets (each rewritten from scratch):
  model_dir/          a TF1 training run by tf.compat.v1.train.MonitoredTrainingSession, run
                      twice (steps 0..200, then resumed to 300): V2 checkpoints with a global
                      step, the `checkpoint` state file, two event files (scalars, graph, meta
                      graph, session logs), graph.pbtxt and .meta files
  saved_model_tf1/    a tf.compat.v1.saved_model.Builder export whose variables bundle holds
                      string, bool and integer tensors besides floats
  saved_model_tf2/    a TF2 tf.saved_model.save export (object-based checkpoint: the
                      _CHECKPOINTABLE_OBJECT_GRAPH string tensor)
  abs_state/          checkpoints of a plain tf.compat.v1.train.Saver, whose `checkpoint` file
                      names them by absolute path
  linear_model/       a linear model's .meta and checkpoint (unsharded Saver), with TF's
                      prediction for a batch and its variables after one training step
  events_tf1_graph/   one run per graph, written by tf.compat.v1.summary.FileWriter
  events_tf2_scalar/  tf.summary.scalar in a tf.summary.create_file_writer (TF2 tensor scalars)
  tf2_manager/        a tf.train.CheckpointManager's object-based checkpoints, and its
                      `checkpoint` file of relative paths with timestamps
  tfrecord/examples.tfrecord  tf.train.Example records
  expected/*.pb       what TF itself reads back from those files, for the C++ side to compare

Every expected/*.pb is a serialized tensorflow.Summary used as a list of named tensors: each
value's tag names the thing, its tensor holds TF's answer (a TensorProto from
tf.make_tensor_proto). The TF2 parts run in a child process of this script (--tf2-part), since
the TF1 parts disable TF2 behaviour for the whole process.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import summary_pb2  # noqa: E402
from tensorflow.core.util import event_pb2  # noqa: E402

tf1 = tf.compat.v1
tf.get_logger().setLevel("ERROR")  # TF1's deprecation and global-step warnings


class Expected:
    """Named tensors, written as one tensorflow.Summary."""

    def __init__(self):
        self.summary = summary_pb2.Summary()

    def add(self, name, value, dtype=None):
        v = self.summary.value.add()
        v.tag = name
        v.tensor.CopyFrom(tf.make_tensor_proto(value, dtype=dtype))

    def add_tensor_proto(self, name, proto):
        v = self.summary.value.add()
        v.tag = name
        v.tensor.CopyFrom(proto)

    def write(self, out, name):
        os.makedirs(os.path.join(out, "expected"), exist_ok=True)
        with open(os.path.join(out, "expected", name + ".pb"), "wb") as f:
            f.write(self.summary.SerializeToString())


def add_checkpoint(expected, label, prefix):
    """Every tensor of the checkpoint at `prefix` as TF reads it: `label/keys` lists the keys in
    TF's (sorted) order, `label/<key>` holds each tensor with its dtype and shape."""
    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    keys = sorted(dtypes)
    expected.add(label + "/keys", np.array([k.encode() for k in keys], dtype=object))
    for key in keys:
        value = reader.get_tensor(key)
        dtype = dtypes[key]
        if dtype == tf.string:
            value = np.array(value, dtype=object)
        expected.add(label + "/" + key, np.asarray(value), dtype=dtype)


def add_checkpoint_state(expected, label, directory):
    state = tf.train.get_checkpoint_state(directory)
    expected.add(label + "/model_checkpoint_path", state.model_checkpoint_path.encode())
    expected.add(label + "/all_model_checkpoint_paths",
                 np.array([p.encode() for p in state.all_model_checkpoint_paths], dtype=object))
    expected.add(label + "/latest_checkpoint", tf.train.latest_checkpoint(directory).encode())


def event_files(directory):
    return sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*")))


def add_events(expected, label, directory):
    """What TF's summary_iterator reads from the run's event files, in file order: per scalar tag
    its steps, values and wall times (simple_value and TF2 tensor scalars alike), the session
    logs, and the node count of every graph."""
    scalars = {}
    session_logs = []
    graph_nodes = []
    meta_graphs = 0
    files = event_files(directory)
    expected.add(label + "/files", np.array([os.path.basename(f).encode() for f in files],
                                            dtype=object))
    for path in files:
        for event in tf1.train.summary_iterator(path):
            kind = event.WhichOneof("what")
            if kind == "graph_def":
                graph = tf1.GraphDef()
                graph.ParseFromString(event.graph_def)
                graph_nodes.append(len(graph.node))
            elif kind == "meta_graph_def":
                meta_graphs += 1
            elif kind == "session_log":
                session_logs.append((event.session_log.status, event.step))
            elif kind == "summary":
                for value in event.summary.value:
                    if value.HasField("simple_value"):
                        number = value.simple_value
                    elif (value.HasField("tensor") and
                          value.metadata.plugin_data.plugin_name == "scalars"):
                        number = float(tf.make_ndarray(value.tensor))
                    else:
                        continue
                    steps, values, walls = scalars.setdefault(value.tag, ([], [], []))
                    steps.append(event.step)
                    values.append(number)
                    walls.append(event.wall_time)
    tags = sorted(scalars)
    expected.add(label + "/scalar_tags", np.array([t.encode() for t in tags], dtype=object))
    for tag in tags:
        steps, values, walls = scalars[tag]
        expected.add(label + "/scalar/" + tag + "/steps", np.array(steps, np.int64))
        expected.add(label + "/scalar/" + tag + "/values", np.array(values, np.float32))
        expected.add(label + "/scalar/" + tag + "/wall_times", np.array(walls, np.float64))
    expected.add(label + "/session_log_statuses",
                 np.array([s for s, _ in session_logs], np.int32).reshape([-1]))
    expected.add(label + "/session_log_steps",
                 np.array([step for _, step in session_logs], np.int64).reshape([-1]))
    expected.add(label + "/graph_nodes", np.array(graph_nodes, np.int32).reshape([-1]))
    expected.add(label + "/meta_graphs", np.int32(meta_graphs))


# ---- TF1: a MonitoredTrainingSession model dir ---------------------------------------------

def train(model_dir, last_step):
    """Two dense layers trained with Adam, as the Estimator-era model dirs were."""
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(7)
        global_step = tf1.train.get_or_create_global_step()
        rng = np.random.RandomState(3)
        x = tf.constant(rng.uniform(-1, 1, size=[16, 2]).astype(np.float32))
        y = tf.matmul(x, tf.constant([[2.0], [-3.0]])) + 1.0
        with tf1.variable_scope("dense"):
            kernel = tf1.get_variable("kernel", [2, 4])
            bias = tf1.get_variable("bias", [4], initializer=tf1.zeros_initializer())
        hidden = tf.nn.relu(tf.matmul(x, kernel) + bias)
        with tf1.variable_scope("dense_1"):
            kernel_1 = tf1.get_variable("kernel", [4, 1])
            bias_1 = tf1.get_variable("bias", [1], initializer=tf1.zeros_initializer())
        prediction = tf.matmul(hidden, kernel_1) + bias_1
        loss = tf1.losses.mean_squared_error(y, prediction)
        tf1.summary.scalar("loss", loss)
        train_op = tf1.train.AdamOptimizer(0.05).minimize(loss, global_step=global_step)
        hooks = [tf1.train.StopAtStepHook(last_step=last_step)]
        with tf1.train.MonitoredTrainingSession(checkpoint_dir=model_dir, hooks=hooks,
                                                save_checkpoint_steps=100,
                                                save_summaries_steps=20,
                                                log_step_count_steps=50) as sess:
            while not sess.should_stop():
                sess.run(train_op)
    tf1.summary.FileWriterCache.clear()


def write_model_dir(out):
    model_dir = os.path.join(out, "model_dir")
    train(model_dir, 200)
    # TF1 event files are named by the second the writer opened them: a second run within the
    # same second would rewrite the first run's file.
    time.sleep(1.1)
    train(model_dir, 300)
    expected = Expected()
    state = tf.train.get_checkpoint_state(model_dir)
    add_checkpoint_state(expected, "state", model_dir)
    expected.add("checkpoints", np.array([os.path.basename(p).encode()
                                          for p in state.all_model_checkpoint_paths],
                                         dtype=object))
    for path in state.all_model_checkpoint_paths:
        add_checkpoint(expected, os.path.basename(path), os.path.join(model_dir, path))
    add_events(expected, "events", model_dir)
    with open(os.path.join(model_dir, "graph.pbtxt")) as f:
        from google.protobuf import text_format
        graph = text_format.Parse(f.read(), tf1.GraphDef())
    expected.add("graph_pbtxt_nodes", np.int32(len(graph.node)))
    meta = tf1.MetaGraphDef()
    latest = tf.train.latest_checkpoint(model_dir)
    with open(latest + ".meta", "rb") as f:
        meta.ParseFromString(f.read())
    saver_def = meta.saver_def
    expected.add("saver_def/filename_tensor_name", saver_def.filename_tensor_name.encode())
    expected.add("saver_def/save_tensor_name", saver_def.save_tensor_name.encode())
    expected.add("saver_def/restore_op_name", saver_def.restore_op_name.encode())
    expected.add("saver_def/sharded", saver_def.sharded)
    expected.add("meta_graph_nodes", np.int32(len(meta.graph_def.node)))
    expected.add("meta_tensorflow_version", meta.meta_info_def.tensorflow_version.encode())
    expected.write(out, "model_dir")


# ---- TF1: a SavedModel builder's variables, with strings -----------------------------------

def write_saved_model_tf1(out):
    export_dir = os.path.join(out, "saved_model_tf1")
    graph = tf.Graph()
    with graph.as_default():
        tf1.Variable(np.array([b"alpha", b"", b"b\x00c", "\u00fcn\u00ef".encode(), b"x" * 300],
                              dtype=object), name="words")
        tf1.Variable(b"a scalar string", name="title")
        tf1.Variable(np.arange(6, dtype=np.int32).reshape([2, 3]) - 2, name="counts")
        tf1.Variable(np.array([-(2 ** 40), 0, 2 ** 62], np.int64), name="big")
        tf1.Variable(np.array([[0.5, -1.25], [3.0, 1e-3]], np.float32), name="w")
        tf1.Variable(np.array([1.0 / 3, -2.5e300], np.float64), name="precise")
        tf1.Variable(np.array([True, False, True]), name="mask")
        tf1.Variable(np.array([-128, 0, 127], np.int8), name="small")
        tf1.Variable(np.array([0, 200, 255], np.uint8), name="bytes")
        tf1.Variable(np.array([-30000, 7], np.int16), name="shorts")
        tf1.Variable(np.array([0.5, -2.0, 65504.0], np.float16), name="halves")
        tf1.Variable(np.zeros([0, 3], np.float32), name="empty")
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            builder = tf1.saved_model.Builder(export_dir)
            builder.add_meta_graph_and_variables(sess, [tf1.saved_model.tag_constants.SERVING])
            builder.save()
    expected = Expected()
    add_checkpoint(expected, "variables", os.path.join(export_dir, "variables", "variables"))
    expected.write(out, "saved_model_tf1")


# ---- TF1: a Saver's checkpoints named by absolute path -------------------------------------

def write_abs_state(out):
    directory = os.path.join(out, "abs_state")
    os.makedirs(directory)
    graph = tf.Graph()
    with graph.as_default():
        v = tf1.Variable(np.array([1.0, 2.0], np.float32), name="v")
        step = tf1.Variable(np.int64(0), name="step")
        bump = tf.group(v.assign_add([1.0, 1.0]), step.assign_add(1))
        saver = tf1.train.Saver(max_to_keep=2)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            for i in range(3):
                sess.run(bump)
                saver.save(sess, os.path.join(directory, "ckpt"), global_step=i + 1)
    expected = Expected()
    add_checkpoint_state(expected, "state", directory)
    add_checkpoint(expected, "latest", tf.train.latest_checkpoint(directory))
    expected.write(out, "abs_state")


# ---- TF1: a graph for flowtrain to import, run and train -------------------------------------

def write_linear_model(out):
    """A linear model's .meta and checkpoint from a plain (unsharded) Saver, with what TF
    computes from them: the prediction for a batch, and the variables after one training step."""
    directory = os.path.join(out, "linear_model")
    os.makedirs(directory)
    rng = np.random.RandomState(5)
    batch = rng.randn(4, 3).astype(np.float32)
    target = rng.randn(4, 1).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        t = tf1.placeholder(tf.float32, [None, 1], name="t")
        w = tf1.Variable(rng.randn(3, 1).astype(np.float32), name="w")
        b = tf1.Variable(np.array([0.25], np.float32), name="b")
        y = tf.identity(tf.matmul(x, w) + b, name="y")
        loss = tf.reduce_mean(tf.square(y - t), name="loss")
        # minimize adds the train op to the TRAIN_OP collection itself.
        train_op = tf1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        saver = tf1.train.Saver()
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            prefix = saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=1)
            prediction = sess.run(y, {x: batch})
            sess.run(train_op, {x: batch, t: target})
            w_after, b_after = sess.run([w, b])
    expected = Expected()
    expected.add("prefix", prefix.encode())
    expected.add("batch", batch)
    expected.add("target", target)
    expected.add("prediction", prediction)
    expected.add("w_after_step", w_after)
    expected.add("b_after_step", b_after)
    add_checkpoint(expected, "checkpoint", prefix)
    expected.write(out, "linear_model")


# ---- TF1: graphs in event files ------------------------------------------------------------

def write_graph_events(out):
    root = os.path.join(out, "events_tf1_graph")
    expected = Expected()

    def power(g):
        x = tf1.placeholder(tf.float32, [None], name="x")
        tf.pow(x, 3.0, name="cube")

    def converter(g):
        celsius = tf1.placeholder(tf.float32, [None, 1], name="celsius")
        fahrenheit = tf1.placeholder(tf.float32, [None, 1], name="fahrenheit")
        w = tf1.Variable(tf1.zeros([1, 1]), name="w")
        b = tf1.Variable(tf1.zeros([1]), name="b")
        loss = tf.reduce_mean(tf.square(tf.matmul(celsius, w) + b - fahrenheit))
        tf1.train.GradientDescentOptimizer(0.01).minimize(loss)

    runs = [("power", power), ("converter", converter)]
    for name, build in runs:
        graph = tf.Graph()
        with graph.as_default():
            build(graph)
            writer = tf1.summary.FileWriter(os.path.join(root, name), graph=graph)
            writer.add_meta_graph(tf1.train.export_meta_graph(graph=graph))
            writer.close()
        add_events(expected, name, os.path.join(root, name))
    expected.add("runs", np.array([name.encode() for name, _ in sorted(runs)], dtype=object))
    expected.write(out, "events_tf1_graph")


# ---- TF1: tf.train.Example records and what TF parses from them ----------------------------

ANIMALS = [b"chicken", b"goat", b"horse", b"dog", b"cat"]


def write_tfrecord(out):
    directory = os.path.join(out, "tfrecord")
    os.makedirs(directory)
    path = os.path.join(directory, "examples.tfrecord")
    rng = np.random.RandomState(11)
    count = 37
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(count):
            feature = {
                "feature0": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2])),
                "feature1": tf.train.Feature(
                    int64_list=tf.train.Int64List(value=[int(rng.randint(-5, 2 ** 40))])),
                "feature2": tf.train.Feature(
                    bytes_list=tf.train.BytesList(value=[ANIMALS[rng.randint(len(ANIMALS))]])),
                "feature3": tf.train.Feature(
                    float_list=tf.train.FloatList(value=[float(rng.randn())])),
                "pair": tf.train.Feature(
                    float_list=tf.train.FloatList(value=rng.randn(2).tolist())),
            }
            if i % 3:
                feature["tags"] = tf.train.Feature(bytes_list=tf.train.BytesList(
                    value=[b"t%d" % j for j in range(i % 4)]))
                feature["ids"] = tf.train.Feature(int64_list=tf.train.Int64List(
                    value=list(range(i, i + i % 5))))
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    features = {
        "feature0": tf.io.FixedLenFeature([], tf.int64),
        "feature1": tf.io.FixedLenFeature([], tf.int64),
        "feature2": tf.io.FixedLenFeature([], tf.string),
        "feature3": tf.io.FixedLenFeature([], tf.float32),
        "pair": tf.io.FixedLenFeature([2], tf.float32),
        "missing": tf.io.FixedLenFeature([3], tf.float32, default_value=[7.0, 8.0, 9.0]),
        "tags": tf.io.VarLenFeature(tf.string),
        "ids": tf.io.VarLenFeature(tf.int64),
    }
    graph = tf.Graph()
    with graph.as_default():
        records = tf1.data.make_one_shot_iterator(
            tf.data.TFRecordDataset(path).batch(1000)).get_next()
        parsed = tf.io.parse_example(records, features)
        with tf1.Session(graph=graph) as sess:
            values = sess.run(parsed)
    expected = Expected()
    expected.add("count", np.int64(count))
    for name in sorted(features):
        value = values[name]
        if isinstance(value, tf1.SparseTensorValue):
            expected.add(name + "/indices", value.indices)
            expected.add(name + "/values", value.values)
            expected.add(name + "/dense_shape", value.dense_shape)
        else:
            expected.add(name, value)
    expected.write(out, "tfrecord")


# ---- TF2 (child process): tensor scalars and an object-based SavedModel ---------------------

def write_tf2_parts(out):
    logdir = os.path.join(out, "events_tf2_scalar")
    writer = tf.summary.create_file_writer(logdir)
    with writer.as_default():
        for step in range(60):
            tf.summary.scalar("my_metric", 0.5 * step, step=step)
            if step % 4 == 0:
                tf.summary.scalar("other/ratio", np.float32(1.0 / (step + 1)), step=step)
    writer.close()
    expected = Expected()
    add_events(expected, "events", logdir)
    expected.write(out, "events_tf2_scalar")

    class Half(tf.Module):
        def __init__(self):
            super().__init__()
            self.a = tf.Variable(0.5, name="a")
            self.b = tf.Variable(2.0, name="b")
            self.vocab = tf.Variable([b"the", b"", b"quick"], name="vocab")

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def __call__(self, x):
            return self.a * x + self.b

    # tf.train.CheckpointManager: relative paths, with timestamps in the `checkpoint` file.
    directory = os.path.join(out, "tf2_manager")
    step = tf.Variable(0, dtype=tf.int64, name="step")
    weights = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="weights")
    checkpoint = tf.train.Checkpoint(step=step, weights=weights)
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    for _ in range(3):
        step.assign_add(1)
        weights.assign_add(tf.ones([2, 2]) * 0.5)
        manager.save(checkpoint_number=int(step.numpy()))
    expected = Expected()
    add_checkpoint_state(expected, "state", directory)
    state = tf.train.get_checkpoint_state(directory)
    expected.add("state/all_model_checkpoint_timestamps",
                 np.array(state.all_model_checkpoint_timestamps, np.float64))
    expected.add("state/last_preserved_timestamp", np.float64(state.last_preserved_timestamp))
    add_checkpoint(expected, "latest", manager.latest_checkpoint)
    expected.write(out, "tf2_manager")

    export_dir = os.path.join(out, "saved_model_tf2")
    tf.saved_model.save(Half(), export_dir)
    expected = Expected()
    add_checkpoint(expected, "variables", os.path.join(export_dir, "variables", "variables"))
    expected.write(out, "saved_model_tf2")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--tf2-part", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    if args.tf2_part:
        write_tf2_parts(out)
        return
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    subprocess.run([sys.executable, os.path.abspath(__file__), "--tf2-part", "--out", out],
                   check=True)
    tf1.disable_v2_behavior()
    write_model_dir(out)
    write_saved_model_tf1(out)
    write_abs_state(out)
    write_linear_model(out)
    write_graph_events(out)
    write_tfrecord(out)
    print("write_tf_files: wrote", out)


if __name__ == "__main__":
    main()
