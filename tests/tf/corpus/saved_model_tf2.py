"""Writes the corpus's TF2 SavedModel: tf.saved_model.save of a tf.Module whose serving
signature is a tf.function. The corpus (generate.py) runs with TF2 behaviour disabled, so it
runs this script in a process of its own.

Usage: saved_model_tf2.py --dir EXPORT_DIR --input IN.npy --output OUT.npy
Reads the signature's input from IN.npy and writes TF's output for it to OUT.npy.
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


class Scorer(tf.Module):
    """softmax(relu(x·w1 + b1)·w2) with two dense layers' resource variables."""

    def __init__(self):
        super().__init__()
        rng = np.random.RandomState(19)
        self.w1 = tf.Variable(rng.randn(3, 4).astype(np.float32), name="w1")
        self.b1 = tf.Variable(np.full([4], 0.125, np.float32), name="b1")
        self.w2 = tf.Variable(rng.randn(4, 2).astype(np.float32), name="w2")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def serve(self, x):
        hidden = tf.nn.relu(tf.matmul(x, self.w1) + self.b1)
        return {"scores": tf.nn.softmax(tf.matmul(hidden, self.w2))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    module = Scorer()
    module.b1.assign([0.5, -0.25, 0.0, 0.125])  # not the initial value: the load must restore it
    tf.saved_model.save(module, args.dir, signatures={"serving_default": module.serve})
    x = np.load(args.input)
    np.save(args.output, module.serve(tf.constant(x))["scores"].numpy())


if __name__ == "__main__":
    main()
