"""A TF1 graph that calls functions of its library, as TF 1.14+ and 2.x write them: a
tf.function call reading a resource variable (StatefulPartitionedCall; op `init` sets it), a control-flow-v2 cond (If/StatelessIf) and while loop
(While/StatelessWhile), with TF's value of the output for a fixed input.

  functions.py write --out DIR
      writes DIR/graph.pb and DIR/expected.txt (the input x, then TF's value of out:0)
  functions.py run --graph FILE --expected DIR/expected.txt
      imports FILE (flowtrain's re-export) into a fresh graph and checks that TF computes the
      same out:0 from it (1e-6 relative)
"""

import argparse
import os
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import interop_common as ic  # noqa: E402

v1 = tf.compat.v1


def write(out):
    v1.disable_v2_behavior()
    v1.enable_control_flow_v2()
    with tf.Graph().as_default() as g:
        x = v1.placeholder(tf.float32, [3], name="x")
        w = v1.get_variable("w", initializer=2.0, use_resource=True)

        @tf.function
        def scale(t):
            return t * w + 1.0  # reads a resource variable: a StatefulPartitionedCall

        y = scale(x)
        z = tf.cond(tf.reduce_sum(y) > 0, lambda: y * 3.0, lambda: -y, name="cond")
        _, acc = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + z), [tf.constant(0), tf.zeros([3])],
                               name="while")
        tf.identity(acc, name="out")
        init = v1.variables_initializer([w], name="init")
        feed = np.array([1.0, -2.0, 3.0], np.float32)
        with v1.Session(graph=g) as sess:
            sess.run(init)
            value = sess.run("out:0", {x: feed})
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "graph.pb"), "wb") as f:
        f.write(g.as_graph_def().SerializeToString())
    with open(os.path.join(out, "expected.txt"), "w") as f:
        f.write(" ".join("%.9g" % v for v in feed) + "\n")
        f.write(" ".join("%.9g" % v for v in value) + "\n")


def run(graph_file, expected_file):
    v1.disable_v2_behavior()
    with open(expected_file) as f:
        feed, want = [np.array([float(w) for w in line.split()], np.float32) for line in f.read().splitlines()]
    graph_def = tf.compat.v1.GraphDef()
    with open(graph_file, "rb") as f:
        graph_def.ParseFromString(f.read())
    if not graph_def.library.function:
        ic.fail("%s has no function library" % graph_file)
    with tf.Graph().as_default() as g:
        try:
            tf.graph_util.import_graph_def(graph_def, name="")
        except Exception as e:  # TF's own words say what it could not import
            ic.fail("import_graph_def(%s) failed: %s: %s" % (graph_file, type(e).__name__, e))
        with v1.Session(graph=g) as sess:
            sess.run("init")
            got = sess.run("out:0", {"x:0": feed})
    if not np.allclose(got, want, rtol=1e-6, atol=0):
        ic.fail("out:0 is %s from the re-exported graph, TF computed %s from its own" % (got, want))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--graph", required=True)
    r.add_argument("--expected", required=True)
    args = parser.parse_args()
    if args.command == "write":
        write(args.out)
    else:
        run(args.graph, args.expected)


if __name__ == "__main__":
    ic.run(main)
