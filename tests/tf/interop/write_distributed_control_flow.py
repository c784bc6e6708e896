"""Writes TF1 GraphDefs (control flow v1) whose conds and loops are placed across the tasks of
a cluster with one worker and two ps tasks, for flowtrain's grpc:// session to run:

  DIR/cond.pb      x (fed, float scalar) > 0 on ps:0; the true branch 3x^2 on ps:1, the false
                   branch -x - 1 on the worker; the result is "cond/Merge:0".
  DIR/while.pb     a loop on ps:0 counting to n (fed, int32 scalar on the worker) and adding
                   v's value (a variable on ps:1, 1.5, read before the loop) each iteration;
                   results "while/Exit:0" and "while/Exit_1:0", v's initializer "init".
  DIR/spanning.pb  a loop whose condition runs on the worker and whose body on ps:0; the
                   result is "while/Exit:0".

  write_distributed_control_flow.py --dir DIR
"""

import tensorflow as tf

import interop_common as ic

v1 = tf.compat.v1


def write(graph, path):
    with open(path, "wb") as f:
        f.write(graph.as_graph_def().SerializeToString())


def build_cond():
    x = v1.placeholder(tf.float32, [], name="x")
    with tf.device("/job:ps/task:0"):
        pred = tf.greater(x, tf.constant(0.0))

        def true_fn():
            with tf.device("/job:ps/task:1"):
                return tf.multiply(tf.square(x), tf.constant(3.0))

        def false_fn():
            with tf.device("/job:worker/task:0"):
                return tf.subtract(tf.negative(x), tf.constant(1.0))

        v1.cond(pred, true_fn, false_fn)


def build_while():
    n = v1.placeholder(tf.int32, [], name="n")
    with tf.device("/job:ps/task:1"):
        v = v1.Variable(1.5, name="v")
        read = tf.identity(v, name="read")
    with tf.device("/job:ps/task:0"):
        v1.while_loop(lambda i, s: tf.less(i, n), lambda i, s: (tf.add(i, 1), tf.add(s, read)),
                      [tf.constant(0), tf.constant(0.0)])
    v1.global_variables_initializer()


def build_spanning():
    def body(i):
        with tf.device("/job:ps/task:0"):
            return tf.add(i, 1)

    v1.while_loop(lambda i: tf.less(i, 3), body, [tf.constant(0)])


def main():
    flags = ic.parse_flags("dir")
    v1.disable_v2_behavior()
    v1.disable_control_flow_v2()
    for name, build in (("cond", build_cond), ("while", build_while), ("spanning", build_spanning)):
        graph = tf.Graph()
        with graph.as_default():
            build()
        write(graph, "%s/%s.pb" % (flags.dir, name))


if __name__ == "__main__":
    ic.run(main)
