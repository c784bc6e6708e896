"""A queue-based input pipeline flowtrain exported (train::StringInputProducer with 2 epochs,
TFRecordReader, train::Batch): TF's import_meta_graph must rebuild its queue runners from the
"queue_runners" collection, and running them must dequeue every record flowtrain wrote, once
per epoch, then end with OutOfRangeError.

  check_queue_pipeline.py --expected DIR/expected.json
"""
import collections

import tensorflow as tf

import interop_common as ic


def main():
    args = ic.parse_flags("expected")
    expected = ic.load_json(args.expected)
    want = collections.Counter(bytes.fromhex(r) for r in expected["records"])
    tf.compat.v1.disable_v2_behavior()
    with tf.Graph().as_default() as graph:
        try:
            tf.compat.v1.train.import_meta_graph(expected["meta"])
        except Exception as e:
            ic.fail("import_meta_graph failed: %s: %s" % (type(e).__name__, e))
        runners = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)
        if len(runners) != 2:
            ic.fail("TF rebuilt %d queue runners from the MetaGraph, expected 2 (file names, batch)" % len(runners))
        values = graph.get_tensor_by_name(expected["values"])
        got = collections.Counter()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = tf.compat.v1.train.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(sess, coord)
            try:
                for _ in range(100):
                    got.update(sess.run(values))
                ic.fail("the pipeline did not end after 100 batches")
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=10)
        if got != want:
            ic.fail("TF read %s, flowtrain wrote %s" % (sorted(got.items()), sorted(want.items())))
    print("TF read the %d records of 2 epochs through flowtrain's queue runners" % sum(got.values()))


if __name__ == "__main__":
    ic.run(main)
