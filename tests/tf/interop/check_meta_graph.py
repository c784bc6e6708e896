"""The MetaGraph flowtrain exported beside its checkpoint: TF's import_meta_graph must accept it,
restore the checkpoint through the imported SaverDef, compute the same "pred" and "loss" as
flowtrain on the same batch (1e-5 relative), and the train op of the "train_op" collection must
continue training as flowtrain did from the same checkpoint: the loss before each of 10 steps
and after them within 1e-4 relative, and the final variables within 1e-4.

  check_meta_graph.py --meta DIR/model.ckpt-5.meta --prefix DIR/model.ckpt-5 --expected E.json
"""
import argparse

import numpy as np
import tensorflow as tf

import interop_common as ic


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--meta", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--expected", required=True)
    args = parser.parse_args()
    expected = ic.load_tensors(args.expected)
    tf.compat.v1.disable_v2_behavior()

    with tf.Graph().as_default() as graph:
        try:
            saver = tf.compat.v1.train.import_meta_graph(args.meta)
        except Exception as e:  # TF's own words say what it could not import
            ic.fail("import_meta_graph(%s) failed: %s: %s" % (args.meta, type(e).__name__, e))
        if saver is None:
            ic.fail("the meta graph has no SaverDef")
        train_ops = tf.compat.v1.get_collection("train_op")
        if len(train_ops) != 1:
            ic.fail("collection train_op holds %r, expected flowtrain's one train op" % train_ops)
        train_op = train_ops[0]
        trainable = sorted(v.op.name for v in tf.compat.v1.trainable_variables())
        if trainable != ["dense/bias", "dense/kernel", "dense_1/bias", "dense_1/kernel"]:
            ic.fail("imported trainable_variables collection: %s" % trainable)
        global_variables = tf.compat.v1.global_variables()
        names = sorted(v.op.name for v in global_variables)
        want = sorted(k[len("final/"):] for k in expected if k.startswith("final/"))
        if names != want:
            ic.fail("imported global variables %s, flowtrain's %s" % (names, want))
        step = tf.compat.v1.train.get_global_step()
        if step is None:
            ic.fail("the imported graph has no global step")
        feed = {"x:0": expected["x"], "y:0": expected["y"]}
        with tf.compat.v1.Session(graph=graph) as sess:
            saver.restore(sess, args.prefix)
            pred, loss = sess.run(["pred:0", "loss:0"], feed)
            ic.expect_close("pred at the checkpoint", pred, expected["pred"], rtol=1e-5, atol=1e-7)
            ic.expect_close("loss at the checkpoint", loss, expected["loss"], rtol=1e-5)
            losses = []
            for _ in range(10):
                losses.append(sess.run("loss:0", feed))
                sess.run(train_op, feed)
            losses.append(sess.run("loss:0", feed))
            for i, (tf_loss, ft_loss) in enumerate(zip(losses, expected["continued_losses"])):
                ic.expect_close("loss after %d continued steps" % i, tf_loss, ft_loss, rtol=1e-4)
            if sess.run(step) != 15:
                ic.fail("global_step after 10 more steps is %s, not 15" % sess.run(step))
            for v in global_variables:
                ic.expect_close("variable %s after 10 more steps" % v.op.name, sess.run(v),
                                expected["final/" + v.op.name], rtol=1e-4, atol=1e-6)
    print("losses TF %s" % np.array(losses))
    print("losses ft %s" % expected["continued_losses"])


if __name__ == "__main__":
    ic.run(main)
