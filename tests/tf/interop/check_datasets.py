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
--mode write_shuffles: for each case of SHUFFLE_CASES TF builds the pipeline in its own graph
with an initializable iterator, writes its GraphDef as shuffle_<name>.pb, and writes a line of
shuffles.txt: "<name> <graph seed|none> <op seed|none> <kind> <n> <buffer> <reshuffle 0|1>
<count> <take|-1> <initializer> <next> | <pass 1 elements> | <pass 2 elements>", pass 2 being
the elements after running the initializer again.
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


# (name, graph seed, op seed, kind, n, buffer_size, reshuffle_each_iteration, count, take):
# kind "shuffle" is Range(n).shuffle(buffer_size, seed, reshuffle).repeat(count), kind
# "shuffle_and_repeat" is Range(n).apply(shuffle_and_repeat(buffer_size, count, seed)), then
# take(take) unless take is -1. Buffers of 1 (no shuffle), smaller than, equal to and larger
# than the input; seeds at op and graph level, (0, 0) and one to truncate; several epochs.
SHUFFLE_CASES = [
    ("whole", None, 7, "shuffle", 10, 10, True, 1, -1),
    ("small_fixed", None, 7, "shuffle", 10, 3, False, 3, -1),
    ("one", None, 7, "shuffle", 10, 1, True, 2, -1),
    ("larger", None, 5, "shuffle", 20, 1000, True, 3, -1),
    ("long", None, 123, "shuffle", 100, 10, True, 2, -1),
    ("graph_and_op", 42, 7, "shuffle", 10, 4, True, 3, -1),
    ("graph_only", 42, None, "shuffle", 10, 4, True, 2, -1),
    ("zeros", 0, 0, "shuffle", 12, 5, True, 2, -1),
    ("truncated", None, 2**40 + 3, "shuffle", 12, 6, False, 2, -1),
    ("sar", None, 7, "shuffle_and_repeat", 6, 4, True, 3, -1),
    ("sar_larger", None, 3, "shuffle_and_repeat", 5, 100, True, 4, -1),
    ("sar_small", 9, 1, "shuffle_and_repeat", 10, 3, True, 2, -1),
    ("sar_forever", None, 11, "shuffle_and_repeat", 3, 2, True, -1, 25),
]


def elements(sess, init, nxt):
    sess.run(init)
    out = []
    while True:
        try:
            out.append(int(sess.run(nxt)))
        except tf.errors.OutOfRangeError:
            return out


def write_shuffles(directory):
    lines = []
    for name, graph_seed, op_seed, kind, n, buffer_size, reshuffle, count, take in SHUFFLE_CASES:
        with tf.Graph().as_default() as g:
            if graph_seed is not None:
                tf.set_random_seed(graph_seed)
            ds = tf.data.Dataset.range(n)
            if kind == "shuffle":
                ds = ds.shuffle(buffer_size, seed=op_seed, reshuffle_each_iteration=reshuffle).repeat(count)
            else:
                ds = ds.apply(tf.data.experimental.shuffle_and_repeat(buffer_size, count, seed=op_seed))
            if take != -1:
                ds = ds.take(take)
            it = tf.data.make_initializable_iterator(ds)
            nxt = it.get_next()
            with tf.Session() as sess:
                first = elements(sess, it.initializer, nxt)
                second = elements(sess, it.initializer, nxt)
            with open(os.path.join(directory, "shuffle_%s.pb" % name), "wb") as f:
                f.write(g.as_graph_def().SerializeToString())
        fields = [name, "none" if graph_seed is None else str(graph_seed), "none" if op_seed is None else str(op_seed),
                  kind, str(n), str(buffer_size), str(int(reshuffle)), str(count), str(take),
                  it.initializer.name, nxt.name]
        lines.append(" ".join(fields + ["|"] + [str(v) for v in first] + ["|"] + [str(v) for v in second]))
    with open(os.path.join(directory, "shuffles.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


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
    # flowtrain's shuffle is TF's: the shuffled iterator's elements agree in order too.
    if values != want:
        fail("flowtrain's ShuffleAndRepeat and feedable iterator gave %s in TF, %s in flowtrain" % (values, want))


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
    elif args.mode == "write_shuffles":
        write_shuffles(args.dir)
    elif args.mode == "check_csv":
        check_csv(args.dir)
    else:
        fail("unknown --mode " + args.mode)


if __name__ == "__main__":
    run(main)
