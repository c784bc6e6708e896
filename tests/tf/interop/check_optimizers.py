"""flowtrain's Adadelta, ProximalGradientDescent, ProximalAdagrad, Ftrl (and FtrlV2) and
AdagradDA against TF's own tf.compat.v1.train optimizers. For each case of --configs (a JSON
list of {name, class, kwargs, init, prefix, expected}):
  1. TF builds interop_test.cc's model with its own optimizer `class(**kwargs)` (AdagradDA
     also gets the global step) and a Saver, and restores flowtrain's initial checkpoint
     `init`: TF's global variables, slots included, must be exactly flowtrain's by name;
  2. 5 steps from there give flowtrain's losses and final variables and slots (1e-5);
  3. flowtrain's .meta beside `prefix` imports, restores `prefix`, and its "train_op" continues
     with flowtrain's losses (1e-5): TF runs flowtrain's update ops.

  check_optimizers.py --configs C.json
"""

import numpy as np
import tensorflow as tf

import interop_common as ic

v1 = tf.compat.v1


def build_model(case):
    x = v1.placeholder(tf.float32, [None, 3], name="x")
    y = v1.placeholder(tf.float32, [None, 1], name="y")
    h = v1.layers.dense(x, 4, activation=tf.nn.relu)
    pred = v1.layers.dense(h, 1)
    loss = tf.identity(tf.reduce_mean(tf.math.squared_difference(pred, y)), name="loss")
    step = v1.train.get_or_create_global_step()
    kwargs = dict(case["kwargs"])
    if case["class"] == "AdagradDAOptimizer":
        kwargs["global_step"] = step
    opt = getattr(v1.train, case["class"])(**kwargs)
    return loss, opt.minimize(loss, global_step=step)


def losses_of_steps(sess, loss, train, feed, steps):
    losses = []
    for _ in range(steps):
        losses.append(sess.run(loss, feed))
        sess.run(train, feed)
    losses.append(sess.run(loss, feed))
    return np.array(losses, np.float32)


def check(case):
    name = case["name"]
    expected = ic.load_tensors(case["expected"])
    feed_values = {k[len("feed/"):]: v for k, v in expected.items() if k.startswith("feed/")}
    final = {k[len("final/"):]: v for k, v in expected.items() if k.startswith("final/")}

    with tf.Graph().as_default() as graph:
        loss, train = build_model(case)
        names = sorted(v.op.name for v in v1.global_variables())
        if names != sorted(final):
            ic.fail("%s: TF's variables %s, flowtrain's %s" % (name, names, sorted(final)))
        saver = v1.train.Saver()
        feed = {graph.get_tensor_by_name(k): v for k, v in feed_values.items()}
        with v1.Session(graph=graph) as sess:
            saver.restore(sess, case["init"])
            losses = losses_of_steps(sess, loss, train, feed, 5)
            ic.expect_close("%s: TF's own optimizer's losses" % name, losses, expected["losses"], rtol=1e-5)
            for v in v1.global_variables():
                ic.expect_close("%s: %s after 5 steps of TF's own optimizer" % (name, v.op.name), sess.run(v),
                                final[v.op.name], rtol=1e-5, atol=1e-6)

    with tf.Graph().as_default() as graph:
        try:
            saver = v1.train.import_meta_graph(case["prefix"] + ".meta")
        except Exception as e:  # TF's own words say what it could not import
            ic.fail("%s: import_meta_graph failed: %s: %s" % (name, type(e).__name__, e))
        train_ops = v1.get_collection("train_op")
        if len(train_ops) != 1:
            ic.fail("%s: collection train_op holds %r" % (name, train_ops))
        feed = {graph.get_tensor_by_name(k): v for k, v in feed_values.items()}
        with v1.Session(graph=graph) as sess:
            saver.restore(sess, case["prefix"])
            losses = losses_of_steps(sess, graph.get_tensor_by_name("loss:0"), train_ops[0], feed, 3)
            ic.expect_close("%s: flowtrain's imported train op in TF" % name, losses, expected["continued_losses"],
                            rtol=1e-5)


def main():
    args = ic.parse_flags("configs")
    tf.compat.v1.disable_v2_behavior()
    cases = ic.load_json(args.configs)
    for case in cases:
        check(case)
    print("%d optimizers train as TF's own" % len(cases))


if __name__ == "__main__":
    ic.run(main)
