"""The MetaGraph flowtrain exported beside its checkpoint: TF's import_meta_graph must accept it,
restore the checkpoint through the imported SaverDef, compute the same "pred" and "loss" as
flowtrain on the same batch (1e-5 relative), and the train op of the "train_op" collection must
continue training as flowtrain did from the same checkpoint: the loss before each of 10 steps
and after them within 1e-4 relative, and the final variables within 1e-4, in each of three
sessions.

  check_meta_graph.py --meta DIR/model.ckpt-5.meta --prefix DIR/model.ckpt-5 --expected E.json
"""

import numpy as np
import tensorflow as tf

import interop_common as ic


def main():
    args = ic.parse_flags("meta", "prefix", "expected")
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
        trainable = [v.op.name for v in tf.compat.v1.trainable_variables()]
        if not trainable or any(not name.endswith(("/kernel", "/bias")) for name in trainable):
            ic.fail("imported trainable_variables collection: %s" % trainable)
        global_variables = tf.compat.v1.global_variables()
        names = sorted(v.op.name for v in global_variables)
        want = sorted(k[len("final/"):] for k in expected if k.startswith("final/"))
        if names != want:
            ic.fail("imported global variables %s, flowtrain's %s" % (names, want))
        step = tf.compat.v1.train.get_global_step()
        if step is None:
            ic.fail("the imported graph has no global step")
        feed = {k[len("feed/"):]: v for k, v in expected.items() if k.startswith("feed/")}
        fetches = sorted(k[len("fetch/"):] for k in expected if k.startswith("fetch/"))
        start_step = int(expected["start_step"])
        summary_ops = tf.compat.v1.get_collection("summary_op")
        if "summary_op_count" in expected and len(summary_ops) != int(expected["summary_op_count"]):
            ic.fail("collection summary_op holds %r, expected %d op(s)" % (summary_ops, int(expected["summary_op_count"])))
        # Three times from a fresh restore: TF runs independent ops in parallel, so a graph
        # whose updates may race its gradients' reads (no gating) differs from run to run.
        for attempt in range(3):
            with tf.compat.v1.Session(graph=graph) as sess:
                saver.restore(sess, args.prefix)
                if sess.run(step) != start_step:
                    ic.fail("restored global_step %s, flowtrain's %d" % (sess.run(step), start_step))
                for name, value in zip(fetches, sess.run(fetches, feed)):
                    ic.expect_close("%s at the checkpoint" % name, value, expected["fetch/" + name],
                                    rtol=1e-5, atol=1e-7)
                for op in summary_ops:  # MonitoredTrainingSession's merged summaries
                    summary = tf.compat.v1.Summary.FromString(sess.run(op, feed))
                    values = {v.tag: v for v in summary.value}
                    tag = expected["summary_loss_tag"].item().decode()
                    if tag not in values:
                        ic.fail("the imported summary op gives tags %s, no %s" % (sorted(values), tag))
                    ic.expect_close("the summary op's loss", values[tag].simple_value,
                                    expected["fetch/loss:0"], rtol=1e-5)
                losses = []
                for _ in range(10):
                    losses.append(sess.run("loss:0", feed))
                    sess.run(train_op, feed)
                losses.append(sess.run("loss:0", feed))
                for i, (tf_loss, ft_loss) in enumerate(zip(losses, expected["continued_losses"])):
                    ic.expect_close("run %d: loss after %d continued steps" % (attempt, i), tf_loss,
                                    ft_loss, rtol=1e-4)
                if sess.run(step) != start_step + 10:
                    ic.fail("global_step after 10 more steps is %s, not %d" % (sess.run(step), start_step + 10))
                for v in global_variables:
                    ic.expect_close("variable %s after 10 more steps" % v.op.name, sess.run(v),
                                    expected["final/" + v.op.name], rtol=1e-4, atol=1e-6)
    print("losses TF %s" % np.array(losses))
    print("losses ft %s" % expected["continued_losses"])


if __name__ == "__main__":
    ic.run(main)
