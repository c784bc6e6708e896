"""A checkpoint of flowtrain variables of every dtype: tf.train.load_checkpoint must read each
with flowtrain's dtype, shape and exact bits; a TF graph with variables of those dtypes and
shapes restores them through tf.compat.v1.train.Saver, equal again.

  check_dtypes.py --prefix DIR/dtypes.ckpt --expected DIR/expected.json
"""
import argparse

import numpy as np
import tensorflow as tf

import interop_common as ic


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--expected", required=True)
    args = parser.parse_args()
    expected = ic.load_tensors(args.expected)
    dtype_names = {name: e["dtype"] for name, e in ic.load_json(args.expected).items()}

    reader = tf.train.load_checkpoint(args.prefix)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    if set(shapes) != set(expected):
        ic.fail("checkpoint keys %s, flowtrain's variables %s" % (sorted(shapes), sorted(expected)))
    for name, value in expected.items():
        want = tf.string if dtype_names[name] == "string" else tf.as_dtype(value.dtype)
        if dtypes[name] != want:
            ic.fail("%s: TF reads dtype %s, flowtrain wrote %s" % (name, dtypes[name].name, want.name))
        if list(shapes[name]) != list(value.shape):
            ic.fail("%s: TF reads shape %s, flowtrain wrote %s" % (name, shapes[name], value.shape))
        ic.expect_exact("tensor " + name, reader.get_tensor(name), value)

    tf.compat.v1.disable_v2_behavior()
    with tf.Graph().as_default():
        variables = {}
        for name, value in expected.items():
            dtype = tf.string if dtype_names[name] == "string" else tf.as_dtype(value.dtype)
            variables[name] = tf.compat.v1.get_variable(
                name, shape=value.shape, dtype=dtype, use_resource=False,
                initializer=tf.compat.v1.zeros_initializer())
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            saver.restore(sess, args.prefix)
            for name, v in variables.items():
                ic.expect_exact("restored " + name, sess.run(v), expected[name])
    print("checked %d dtypes of %s" % (len(expected), args.prefix))


if __name__ == "__main__":
    ic.run(main)
