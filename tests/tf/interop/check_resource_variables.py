"""Resource variables (use_resource=True) as TF writes and reads them, against flowtrain's.

TF builds the same program as the C++ test (a 2-layer regression on constants, w1 and w2
resource variables, Adam(0.05), a Saver) and then:
  1. its variable nodes (VarHandleOp, <v>/IsInitialized/VarIsInitializedOp, <v>/Assign,
     <v>/Read/ReadVariableOp, <v>/Initializer/...) and ResourceApplyAdam nodes must be exactly
     flowtrain's (--nodes: "name op" lines);
  2. flowtrain's checkpoint (--prefix) must restore into it by TF's keys with every variable's
     exact value (--expected), and 3 more Adam steps must give flowtrain's losses (1e-5);
  3. TF trains 3 steps from its own initialization and saves --tf_prefix, which the C++ test
     then restores into flowtrain.

  check_resource_variables.py --nodes N --prefix P --expected E.json --tf_prefix T
"""

import numpy as np
import tensorflow as tf

import interop_common as ic

v1 = tf.compat.v1


def build():
    x = tf.constant(np.array([0.5, -1, 2, 0.25, 1.5, -0.5], np.float32).reshape(3, 2))
    y = tf.constant(np.array([1, -1, 0.5], np.float32).reshape(3, 1))
    w1 = v1.Variable(np.array([0.1, -0.2, 0.3, 0.4, -0.5, 0.6], np.float32).reshape(2, 3), name="w1",
                     use_resource=True)
    w2 = v1.Variable(np.array([0.2, -0.1, 0.3], np.float32).reshape(3, 1), name="w2", use_resource=True)
    h = tf.tanh(tf.matmul(x, w1))
    loss = tf.reduce_mean(tf.square(tf.matmul(h, w2) - y))
    train = v1.train.AdamOptimizer(0.05).minimize(loss)
    return loss, train


def variable_nodes(graph_def):
    out = set()
    for n in graph_def.node:
        if (n.op in ("VarHandleOp", "VarIsInitializedOp", "ResourceApplyAdam")
                or n.name.endswith(("/Assign", "/Read/ReadVariableOp")) or "/Initializer/" in n.name):
            out.add((n.name, n.op))
    return out


def main():
    args = ic.parse_flags("nodes", "prefix", "expected", "tf_prefix")
    expected = ic.load_tensors(args.expected)
    tf.compat.v1.disable_v2_behavior()
    with tf.Graph().as_default() as graph:
        loss, train = build()
        saver = v1.train.Saver()
        init = v1.global_variables_initializer()
        tf_nodes = variable_nodes(graph.as_graph_def())
        ft_nodes = set()
        with open(args.nodes) as f:
            for line in f:
                if line.strip():
                    name, op = line.split()
                    ft_nodes.add((name, op))
        if tf_nodes != ft_nodes:
            ic.fail("variable nodes differ: only TF's %s; only flowtrain's %s"
                    % (sorted(tf_nodes - ft_nodes), sorted(ft_nodes - tf_nodes)))
        if not all(v.op.type == "VarHandleOp" for v in v1.global_variables()):
            ic.fail("TF built ref variables: %s" % [v.op.type for v in v1.global_variables()])

        with v1.Session(graph=graph) as sess:
            saver.restore(sess, args.prefix)
            for v in v1.global_variables():
                ic.expect_exact("restored " + v.op.name, sess.run(v), expected["final/" + v.op.name])
            losses = []
            for _ in range(3):
                losses.append(sess.run(loss))
                sess.run(train)
            ic.expect_close("losses continued from flowtrain's checkpoint", np.array(losses, np.float32),
                            expected["continued_losses"], rtol=1e-5)

        with v1.Session(graph=graph) as sess:
            sess.run(init)
            for _ in range(3):
                sess.run(train)
            saver.save(sess, args.tf_prefix)


if __name__ == "__main__":
    ic.run(main)
