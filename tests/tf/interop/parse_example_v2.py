"""Writes what TF 2.21's tf.io.parse_example (the ParseExampleV2 op) gives, for
parse_example_v2_test.cc to run the same graphs in flowtrain.

For each case, OUT/<case>.pb is the tf.function's GraphDef, whose ParseExampleV2 node TF wrote
(sparse, dense with defaults, FixedLenSequenceFeature with padding, RaggedFeature with int32 and
int64 row splits; a batch and a scalar input). OUT/cases.txt has one line per case:
"<case> <input tensor> <ParseExampleV2 node> <number of outputs>". The V2 checkpoint OUT/results
holds "<case>/in" (the serialized Examples fed) and "<case>/out/<i>" (TF's output i, run in a
tf.compat.v1.Session on the same GraphDef). OUT/errors.txt has, per bad batch, the case, the
batch's key in results ("errors/<n>") and TF's error message, one per line.

  parse_example_v2.py --out DIR
"""
import os

import numpy as np
import tensorflow as tf

import interop_common as ic


def example(**features):
    f = {}
    for key, values in features.items():
        if all(isinstance(v, float) for v in values) and values:
            f[key] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        elif all(isinstance(v, int) for v in values) and values:
            f[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        else:
            f[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    return tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString()


FEATURES = {
    "a": tf.io.FixedLenFeature([2], tf.float32, default_value=[7.0, 8.0]),
    "i": tf.io.FixedLenFeature([], tf.int64),
    "name": tf.io.FixedLenFeature([], tf.string, default_value="none"),
    "s": tf.io.VarLenFeature(tf.string),
    "f": tf.io.VarLenFeature(tf.float32),
    "v": tf.io.FixedLenSequenceFeature([2], tf.float32, allow_missing=True, default_value=-1.0),
    "w": tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True),
    "r": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int32),
    "r64": tf.io.RaggedFeature(tf.string, row_splits_dtype=tf.int64),
}

RECORDS = [
    example(a=[1.0, 2.0], i=[3], name=[b"first"], s=[b"x", b"y"], f=[0.5], v=[1.0, 2.0, 3.0, 4.0],
            w=[9, 8, 7], r=[1, 2, 3], r64=[b"p"]),
    example(i=[4], r=[5], v=[5.0, 6.0]),
    example(i=[5], s=[b"z"], f=[1.5, 2.5, 3.5], r64=[b"q", b"r"], w=[1]),
]

# Bad batches and the case they are fed to; TF's message is recorded for each.
BAD = [
    ("batch", [RECORDS[0], example(i=[1], v=[1.0, 2.0, 3.0])]),     # not a multiple of the stride
    ("batch", [example(i=[1], a=[1.0, 2.0, 3.0])]),                 # wrong number of values
    ("batch", [example(i=[1], r=[1.5])]),                           # ragged of the wrong type
    ("batch", [example(i=[1], s=[1])]),                             # sparse of the wrong type
]


def main():
    flags = ic.parse_flags("out")
    os.makedirs(flags.out, exist_ok=True)
    results, cases, errors = {}, [], []
    graphs = {}
    for case, shape, feed in [("batch", [None], RECORDS), ("single", [], RECORDS[0]),
                              ("empty", [None], [])]:
        fn = tf.function(lambda x: tf.io.parse_example(x, FEATURES),
                         input_signature=[tf.TensorSpec(shape, tf.string, name="serialized")])
        cf = fn.get_concrete_function()
        parse = [op for op in cf.graph.get_operations() if op.type == "ParseExampleV2"]
        if len(parse) != 1:
            ic.fail("%s: %d ParseExampleV2 nodes" % (case, len(parse)))
        graph_def = cf.graph.as_graph_def()
        with open(os.path.join(flags.out, case + ".pb"), "wb") as f:
            f.write(graph_def.SerializeToString())
        op = parse[0]
        input_name = cf.inputs[0].name
        cases.append("%s %s %s %d" % (case, input_name, op.name, len(op.outputs)))
        graphs[case] = (graph_def, input_name, op)
        outs = run(graph_def, input_name, op, feed)
        results[case + "/in"] = np.array(feed, dtype=object)
        for i, value in enumerate(outs):
            results["%s/out/%d" % (case, i)] = np.asarray(value)
    for n, (case, batch) in enumerate(BAD):
        graph_def, input_name, op = graphs[case]
        try:
            run(graph_def, input_name, op, batch)
            ic.fail("TF parsed bad batch %d" % n)
        except tf.errors.InvalidArgumentError as e:
            # In a Session, TF's message follows "Graph execution error:" and the node's trace.
            message = [line.strip() for line in e.message.split("\n")
                       if line.strip().startswith(("Name:", "Key:", "Feature:"))][0]
        results["errors/%d" % n] = np.array(batch, dtype=object)
        errors.append("%s errors/%d %s" % (case, n, message))
    with open(os.path.join(flags.out, "cases.txt"), "w") as f:
        f.write("\n".join(cases) + "\n")
    with open(os.path.join(flags.out, "errors.txt"), "w") as f:
        f.write("\n".join(errors) + "\n")
    names = sorted(results)
    tf.raw_ops.SaveV2(prefix=os.path.join(flags.out, "results"), tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[constant(results[n]) for n in names])


def constant(value):
    # An empty object array has no strings to tell its dtype.
    if value.dtype == object:
        return tf.constant(value, dtype=tf.string)
    return tf.constant(value)


def run(graph_def, input_name, op, feed):
    with tf.Graph().as_default() as graph:
        tf.compat.v1.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=graph) as sess:
            return sess.run(["%s:%d" % (op.name, i) for i in range(len(op.outputs))],
                            {input_name: np.array(feed, dtype=object)})


if __name__ == "__main__":
    ic.run(main)
