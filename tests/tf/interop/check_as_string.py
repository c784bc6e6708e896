"""AsString nodes flowtrain built (as_string.pb: one per case, over constants of several dtypes
and formatting options): TF imports the GraphDef, runs each node and must give the strings
flowtrain gave (expected.json: {"<node>": ["<hex of each string>", ...]}).

  check_as_string.py --dir DIR
"""
import json
import os

import tensorflow.compat.v1 as tf

import interop_common as ic

tf.disable_v2_behavior()


def main():
    args = ic.parse_flags("dir")
    with open(os.path.join(args.dir, "expected.json")) as f:
        expected = json.load(f)
    graph_def = tf.GraphDef()
    with open(os.path.join(args.dir, "as_string.pb"), "rb") as f:
        graph_def.ParseFromString(f.read())
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            for node, want in sorted(expected.items()):
                got = [v.hex() for v in sess.run(g.get_tensor_by_name(node + ":0")).ravel()]
                if got != want:
                    ic.fail("%s: TF gives %s, flowtrain %s" % (
                        node, [bytes.fromhex(v) for v in got], [bytes.fromhex(v) for v in want]))
    print("%d AsString nodes agree" % len(expected))


if __name__ == "__main__":
    ic.run(main)
