"""A checkpoint of flowtrain variables of every dtype: tf.train.load_checkpoint must read each
with flowtrain's dtype, shape and exact bits; a TF graph with variables of those dtypes and
shapes restores them through tf.compat.v1.train.Saver, equal again.

  check_dtypes.py --prefix DIR/dtypes.ckpt --expected DIR/expected.json
"""
import tensorflow as tf

import interop_common as ic


def main():
    args = ic.parse_flags("prefix", "expected")
    expected = ic.load_tensors(args.expected)
    ic.expect_checkpoint_holds(args.prefix, expected)

    tf.compat.v1.disable_v2_behavior()
    with tf.Graph().as_default():
        variables = {}
        for name, value in expected.items():
            variables[name] = tf.compat.v1.get_variable(
                name, shape=value.shape, dtype=ic.tf_dtype(value), use_resource=False,
                initializer=tf.compat.v1.zeros_initializer())
        ic.expect_saver_restores(args.prefix, variables, expected)
    print("checked %d dtypes of %s" % (len(expected), args.prefix))


if __name__ == "__main__":
    ic.run(main)
