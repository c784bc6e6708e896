"""TF's side of data_functions_test's FlowtrainBuiltPipelines: imports a GraphDef flowtrain built
with its dataset builders over functions (tf.compat.v1.import_graph_def), runs each pipeline
listed in PIPELINES and writes the elements TF yields to OUT, in tf_data_functions.py's
expected.txt format.

PIPELINES has a line per pipeline: "NAME INITIALIZER GET_NEXT COMPONENTS", INITIALIZER "-"
for a one-shot iterator (which needs none).
"""
import argparse

import numpy as np
import tensorflow as tf


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--graph", required=True)
    parser.add_argument("--pipelines", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    graph_def = tf.compat.v1.GraphDef()
    with open(args.graph, "rb") as f:
        graph_def.ParseFromString(f.read())
    with open(args.pipelines) as f:
        pipelines = [line.split() for line in f if line.strip()]
    graph = tf.Graph()
    lines = []
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=graph) as sess:
            for name, initializer, get_next, components in pipelines:
                lines.append("pipeline %s %s %s %s" % (name, initializer, get_next, components))
                if initializer != "-":
                    sess.run(graph.get_operation_by_name(initializer))
                fetches = [graph.get_tensor_by_name("%s:%d" % (get_next, i)) for i in range(int(components))]
                index = 0
                while True:
                    try:
                        values = sess.run(fetches)
                    except tf.errors.OutOfRangeError:
                        break
                    for c, v in enumerate(values):
                        v = np.asarray(v)
                        dims = ",".join(str(d) for d in v.shape) or "-"
                        flat = " ".join(repr(float(x)) if v.dtype.kind == "f" else str(int(x)) for x in v.ravel())
                        lines.append("element %d %d %s %s %s" % (index, c, v.dtype.name, dims, flat))
                    index += 1
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
