"""tf.data's caches, feedable iterators and ShuffleAndRepeat both ways between flowtrain and TF.

--mode write_tf: TF writes, into --dir,
  tf_cache.*      a complete file cache of (x * 10, "tf-<x>") for x in 0..4;
  feedable.meta   a v1 MetaGraph: two initializable iterators (the first over a memory-cached
                  Range(3), the second over Range(100, 102)) and a feedable iterator fed by a
                  string placeholder;
  map_and_batch.meta, map_and_batch.txt
                  a map_and_batch over a function with a captured tensor; the text holds the
                  initializer and the two next tensors, then each batch TF gave
                  ("<int64s> | <floats as %g>");
  feedable.txt    lines: the two initializers, the two string handles, the placeholder and
                  the next element; the order in which the test feeds the two handles ("a",
                  "b"); the values TF's session gave in that order ("end" for OutOfRange).
--mode check: TF reads flowtrain's file cache (ft_cache.*) through a dataset over other data
and must see ft_expected.json's elements; it imports flowtrain's GraphDef (ft_graph.pb: a
ShuffleAndRepeat over Range(6), count 3, and a feedable iterator over it and a second
dataset) and runs it in the order ft_expected.json gives, to the values flowtrain saw.
"""
import json
import os

import tensorflow.compat.v1 as tf

from interop_common import fail, run, parse_flags

tf.disable_v2_behavior()

# Which handle the test feeds at each step: the first iterator's ("a") or the second's ("b").
FEED_ORDER = ["a", "a", "b", "a", "b", "b", "a"]


def next_or_none(sess, fetch, feed):
    try:
        return int(sess.run(fetch, feed))
    except tf.errors.OutOfRangeError:
        return None


def write_tf(directory):
    with tf.Graph().as_default():
        ds = tf.data.Dataset.range(5).map(lambda x: (x * 10, tf.strings.join(["tf-", tf.as_string(x)])))
        ds = ds.cache(os.path.join(directory, "tf_cache"))
        it = tf.data.make_one_shot_iterator(ds)
        nxt = it.get_next()
        with tf.Session() as sess:
            for _ in range(5):
                sess.run(nxt)
            try:
                sess.run(nxt)
                fail("TF's cached dataset did not end after 5 elements")
            except tf.errors.OutOfRangeError:
                pass
    g = tf.Graph()
    with g.as_default():
        a = tf.data.Dataset.range(3).cache()
        b = tf.data.Dataset.range(100, 102)
        ia = tf.data.make_initializable_iterator(a)
        ib = tf.data.make_initializable_iterator(b)
        handle = tf.placeholder(tf.string, [], name="handle")
        feedable = tf.data.Iterator.from_string_handle(handle, tf.data.get_output_types(a),
                                                       tf.data.get_output_shapes(a))
        nxt = feedable.get_next()
        ha, hb = ia.string_handle(), ib.string_handle()
        with tf.Session() as sess:
            sess.run([ia.initializer, ib.initializer])
            handles = dict(zip("ab", sess.run([ha, hb])))
            values = [next_or_none(sess, nxt, {handle: handles[k]}) for k in FEED_ORDER]
        tf.train.export_meta_graph(filename=os.path.join(directory, "feedable.meta"))
    # map_and_batch over a graph function with a captured tensor.
    with tf.Graph().as_default():
        scale = tf.constant(3, tf.int64, name="scale")
        ds = tf.data.Dataset.range(10).apply(tf.data.experimental.map_and_batch(
            lambda x: (x * scale, tf.cast(x, tf.float32) / 2), 4, num_parallel_calls=2))
        mb_it = tf.data.make_initializable_iterator(ds)
        mb_next = mb_it.get_next()
        batches = []
        with tf.Session() as sess:
            sess.run(mb_it.initializer)
            while True:
                try:
                    numbers, halves = sess.run(mb_next)
                except tf.errors.OutOfRangeError:
                    break
                batches.append(" ".join(str(v) for v in numbers) + " | " +
                               " ".join("%g" % v for v in halves))
        tf.train.export_meta_graph(filename=os.path.join(directory, "map_and_batch.meta"))
    with open(os.path.join(directory, "map_and_batch.txt"), "w") as f:
        f.write("%s %s %s\n" % (mb_it.initializer.name, mb_next[0].name, mb_next[1].name))
        for line in batches:
            f.write(line + "\n")
    with open(os.path.join(directory, "feedable.txt"), "w") as f:
        f.write("%s %s\n" % (ia.initializer.name, ib.initializer.name))
        f.write("%s %s\n" % (ha.name, hb.name))
        f.write("%s %s\n" % (handle.name, nxt.name))
        f.write(" ".join(FEED_ORDER) + "\n")
        f.write(" ".join("end" if v is None else str(v) for v in values) + "\n")


def check(directory):
    with open(os.path.join(directory, "ft_expected.json")) as f:
        expected = json.load(f)
    # flowtrain's cache, read by TF through a dataset of the same structure over other data.
    with tf.Graph().as_default():
        other = tf.data.Dataset.from_tensor_slices((tf.constant([7], tf.int64), ["other"]))
        nxt = tf.data.make_one_shot_iterator(other.cache(os.path.join(directory, "ft_cache"))).get_next()
        got = []
        with tf.Session() as sess:
            while True:
                try:
                    x, s = sess.run(nxt)
                except tf.errors.OutOfRangeError:
                    break
                got.append([int(x), s.decode()])
    if got != expected["cache"]:
        fail("TF read flowtrain's cache as %s, flowtrain wrote %s" % (got, expected["cache"]))
    # flowtrain's GraphDef: the ShuffleAndRepeat elements and the feedable iterator.
    graph_def = tf.GraphDef()
    with open(os.path.join(directory, "ft_graph.pb"), "rb") as f:
        graph_def.ParseFromString(f.read())
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            sess.run(expected["initializers"])
            handles = dict(zip("ab", sess.run(expected["handles"])))
            handle = g.get_tensor_by_name(expected["placeholder"])
            nxt = g.get_tensor_by_name(expected["next"])
            values = [next_or_none(sess, nxt, {handle: handles[k]}) for k in expected["order"]]
    want = expected["values"]
    if len(values) != len(want):
        fail("TF ran %d steps, flowtrain %d" % (len(values), len(want)))
    # ShuffleAndRepeat's order is each system's own (flowtrain's shuffle is not TF's
    # generator): the elements of the shuffled iterator must agree as a multiset, the second
    # iterator's in order.
    shuffled = sorted(v for k, v in zip(expected["order"], values) if k == "a" and v is not None)
    if shuffled != sorted(v for k, v in zip(expected["order"], want) if k == "a" and v is not None):
        fail("ShuffleAndRepeat gave %s in TF, flowtrain %s" % (values, want))
    plain = [v for k, v in zip(expected["order"], values) if k == "b"]
    if plain != [v for k, v in zip(expected["order"], want) if k == "b"]:
        fail("the feedable iterator gave %s in TF, flowtrain %s" % (values, want))


def check_csv(directory):
    """TF runs flowtrain's DecodeCSV GraphDef (csv_graph.pb: records fed to "records:0") on
    each record of csv_records.txt (hex) and must give flowtrain's result in csv_results.txt:
    "ok <int32> <float as %.9g> <string hex>" or "error <TF's message>"."""
    graph_def = tf.GraphDef()
    with open(os.path.join(directory, "csv_graph.pb"), "rb") as f:
        graph_def.ParseFromString(f.read())
    with open(os.path.join(directory, "csv_records.txt")) as f:
        records = [bytes.fromhex(line.strip()) for line in f]
    with open(os.path.join(directory, "csv_results.txt")) as f:
        results = [line.rstrip("\n") for line in f]
    if len(records) != len(results) or not records:
        fail("%d records but %d results" % (len(records), len(results)))
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        records_in = g.get_tensor_by_name("records:0")
        outputs = [g.get_tensor_by_name("DecodeCSV:%d" % i) for i in range(3)]
        with tf.Session() as sess:
            for i, (record, want) in enumerate(zip(records, results)):
                try:
                    a, b, c = sess.run(outputs, {records_in: [record]})
                    got = "ok %d %.9g %s" % (a[0], float(b[0]), c[0].hex())
                except tf.errors.InvalidArgumentError as e:
                    got = "error " + e.message
                if got.startswith("ok") != want.startswith("ok"):
                    fail("record %d %r: TF %s, flowtrain %s" % (i, record, got, want))
                if got.startswith("ok") and got != want:
                    fail("record %d %r: TF %s, flowtrain %s" % (i, record, got, want))
                if got.startswith("error") and want[len("error "):] not in got:
                    fail("record %d %r: TF's error %r lacks flowtrain's %r" % (i, record, got, want))


def main():
    args = parse_flags("mode", "dir")
    if args.mode == "write_tf":
        write_tf(args.dir)
    elif args.mode == "check":
        check(args.dir)
    elif args.mode == "check_csv":
        check_csv(args.dir)
    else:
        fail("unknown --mode " + args.mode)


if __name__ == "__main__":
    run(main)
