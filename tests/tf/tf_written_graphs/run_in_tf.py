"""TF runs the graphs of the TF-written fixtures, as tf_written_graphs_test.cc runs them in
flowtrain, and saves what it got into a V2 checkpoint for the test to compare:

- "estimator/...": the Estimator's model.ckpt-2000.meta imported and restored from
  model.ckpt-2000; on a fixed batch fed to IteratorGetNext (its from_generator pipeline needs
  the writer's Python callback), the prediction and the L2 loss, then 5 steps of its train op
  with the loss before each, and every global variable after them.
- "fahrenheit/...": the GraphDef of the fahrenheit_converter event file with its variables
  initialized from fed random_normal values, 3 gradient-descent steps, the loss before each and
  the variables after.
- "half_plus_two/...": the SavedModel's MetaGraph restored from variables/variables, y for a
  fixed x.
- "feed/...": the feeds, so that flowtrain feeds exactly these.

  run_in_tf.py --fixtures DIR --out PREFIX
"""

import argparse
import glob
import os

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import graph_pb2
from tensorflow.core.protobuf import saved_model_pb2

tf1 = tf.compat.v1


def estimator(fixtures, results):
    prefix = os.path.join(fixtures, "tf1_estimator_model_dir", "model.ckpt-2000")
    rng = np.random.RandomState(18)
    features = rng.uniform(-2, 2, size=(20, 2)).astype(np.float32)
    labels = rng.uniform(-2, 2, size=(20, 1)).astype(np.float32)
    results["feed/estimator/features"] = features
    results["feed/estimator/labels"] = labels
    with tf.Graph().as_default() as graph:
        saver = tf1.train.import_meta_graph(prefix + ".meta")
        train_op = tf1.get_collection("train_op")[0]
        with tf1.Session(graph=graph) as sess:
            saver.restore(sess, prefix)
            feeds = {"IteratorGetNext:0": features, "IteratorGetNext:1": labels}
            pred, loss = sess.run(["dense_1/BiasAdd:0", "L2Loss:0"], feeds)
            results["estimator/pred"] = pred
            results["estimator/loss"] = np.float32(loss)
            losses = []
            for _ in range(5):
                losses.append(sess.run("L2Loss:0", feeds))
                sess.run(train_op, feeds)
            losses.append(sess.run("L2Loss:0", feeds))
            results["estimator/losses"] = np.array(losses, dtype=np.float32)
            for v in tf1.global_variables():
                results["estimator/final/" + v.op.name] = sess.run(v)


def fahrenheit(fixtures, results):
    path = glob.glob(os.path.join(fixtures, "events_tf1_graph", "fahrenheit_converter", "*tfevents*"))[0]
    graph_def = None
    for event in tf1.train.summary_iterator(path):
        if event.HasField("graph_def"):
            graph_def = graph_pb2.GraphDef()
            graph_def.ParseFromString(event.graph_def)
    celsius = np.array([[-40.0], [0.0], [37.0], [100.0]], dtype=np.float32)
    fahrenheit = celsius * np.float32(1.8) + np.float32(32.0)
    results["feed/fahrenheit/celsius"] = celsius
    results["feed/fahrenheit/fahrenheit"] = fahrenheit
    with tf.Graph().as_default() as graph:
        tf1.import_graph_def(graph_def, name="")
        with tf1.Session(graph=graph) as sess:
            sess.run("init", {"random_normal:0": np.array([[1.5]], np.float32),
                              "random_normal_1:0": np.array([0.25], np.float32)})
            feeds = {"Placeholder:0": celsius, "Placeholder_1:0": fahrenheit}
            losses = []
            for _ in range(3):
                losses.append(sess.run("Mean:0", feeds))
                sess.run("GradientDescent", feeds)
            results["fahrenheit/losses"] = np.array(losses, dtype=np.float32)
            results["fahrenheit/weight"], results["fahrenheit/bias"] = sess.run(["weight:0", "bias:0"])


def half_plus_two(fixtures, results):
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(fixtures, "tf1_half_plus_two_cpu", "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    meta = saved_model.meta_graphs[0]
    x = np.array([[0.0], [1.0], [-3.5], [1e6]], dtype=np.float32)
    results["feed/half_plus_two/x"] = x
    with tf.Graph().as_default() as graph:
        saver = tf1.train.import_meta_graph(meta)
        with tf1.Session(graph=graph) as sess:
            saver.restore(sess, os.path.join(fixtures, "tf1_half_plus_two_cpu", "variables", "variables"))
            results["half_plus_two/y"] = sess.run("y:0", {"x:0": x})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    tf1.disable_v2_behavior()
    results = {}
    estimator(args.fixtures, results)
    fahrenheit(args.fixtures, results)
    half_plus_two(args.fixtures, results)
    names = sorted(results)
    with tf.Graph().as_default():
        save = tf.raw_ops.SaveV2(prefix=args.out, tensor_names=names, shape_and_slices=[""] * len(names),
                                 tensors=[tf.constant(results[n]) for n in names])
        with tf1.Session() as sess:
            sess.run(save)
    print("TF ran %d results into %s" % (len(names), args.out))


if __name__ == "__main__":
    main()
