"""TensorArrays both ways between flowtrain and TensorFlow (v1 graphs, TensorArrayV3 ops).

--mode write_tf: TF builds the model below with tf.TensorArray and tf.gradients and writes the
GraphDef (tf_graph.pb) and, in tf_values.txt, the tensor names and the values it computed.
--mode check: TF imports the GraphDef flowtrain exported (ft_graph.pb), runs it on the input
flowtrain used and compares with flowtrain's values (ft_values.txt); it also builds the model
itself and compares those values and gradients.

Values files: one line per tensor, "<key> <tensor name> <value> <value> ...".
"""
import os

import numpy as np
import tensorflow.compat.v1 as tf

from interop_common import fail, run, parse_flags

tf.disable_v2_behavior()

X = np.array([[0.5, -1.0], [2.0, 0.25], [-1.5, 3.0]], dtype=np.float32)


def build_model():
    """The model flowtrain's test builds too: each TensorArray op pair feeds the loss."""
    x = tf.placeholder(tf.float32, [3, 2], name="x")
    s1 = tf.TensorArray(tf.float32, size=3).unstack(x).stack()
    g2 = tf.TensorArray(tf.float32, size=3).scatter([2, 0, 1], x * 2.0).gather([1, 2])
    c3 = tf.TensorArray(tf.float32, size=2, infer_shape=False).split(x, [1, 2]).concat()
    ta4 = tf.TensorArray(tf.float32, size=2, clear_after_read=False)
    ta4 = ta4.write(0, x[0]).write(1, x[1] * 3.0)
    r4 = ta4.read(0) * ta4.read(1) + ta4.read(0)
    y = (tf.reduce_sum(tf.square(s1)) + tf.reduce_sum(tf.square(g2)) + tf.reduce_sum(c3 * c3 * c3)
         + tf.reduce_sum(r4))
    grad = tf.gradients(y, [x])[0]
    return x, {"y": y, "grad": grad, "stack": s1, "gather": g2, "concat": c3, "read": r4}


def read_values(path):
    values = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts:
                values[parts[0]] = (parts[1], np.array([float(v) for v in parts[2:]]))
    return values


def compare(what, got, want):
    got = np.asarray(got, dtype=np.float64).ravel()
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
        fail("%s: TensorFlow computed %s, flowtrain %s" % (what, got.tolist(), want.tolist()))


def write_tf(directory):
    with tf.Graph().as_default() as g:
        x, outputs = build_model()
        with tf.Session() as sess:
            values = sess.run(outputs, {x: X})
        with open(os.path.join(directory, "tf_graph.pb"), "wb") as f:
            f.write(g.as_graph_def().SerializeToString())
    with open(os.path.join(directory, "tf_values.txt"), "w") as f:
        f.write("x x:0 %s\n" % " ".join(repr(float(v)) for v in X.ravel()))
        for key, tensor in outputs.items():
            f.write("%s %s %s\n" % (key, tensor.name, " ".join(repr(float(v)) for v in values[key].ravel())))


def check(directory):
    expected = read_values(os.path.join(directory, "ft_values.txt"))
    x_name, x_value = expected.pop("x")
    feed = x_value.reshape(3, 2).astype(np.float32)
    graph_def = tf.GraphDef()
    with open(os.path.join(directory, "ft_graph.pb"), "rb") as f:
        graph_def.ParseFromString(f.read())
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            fetches = {key: g.get_tensor_by_name(name) for key, (name, _) in expected.items()}
            got = sess.run(fetches, {g.get_tensor_by_name(x_name): feed})
    for key, (name, want) in expected.items():
        compare("flowtrain's GraphDef run by TF, " + key + " (" + name + ")", got[key], want)
    with tf.Graph().as_default():
        x, outputs = build_model()
        with tf.Session() as sess:
            native = sess.run(outputs, {x: feed})
    for key, (name, want) in expected.items():
        compare("TF's own TensorArray model, " + key, native[key], want)


def main():
    args = parse_flags("mode", "dir")
    if args.mode == "write_tf":
        write_tf(args.dir)
    elif args.mode == "check":
        check(args.dir)
    else:
        fail("unknown --mode " + args.mode)


if __name__ == "__main__":
    run(main)
