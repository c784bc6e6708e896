"""A checkpoint flowtrain trained and saved: tf.train.load_checkpoint must list the same keys,
dtypes, shapes and values as flowtrain's variables had, and the same model built in TF (same
variable names, same optimizer's slots) must restore from it through tf.compat.v1.train.Saver
with equal values. --extra names keys beside the variables (comma-separated string scalars
such as an input pipeline's position, "Iterator:0-state") that TF must list and ignore.

  check_checkpoint.py --prefix DIR/model.ckpt-5 --expected DIR/expected.json --optimizer adam
"""
import tensorflow as tf

import interop_common as ic


def build_model(optimizer):
    """The model of interop_test.cc's BuildModel, in TF1 graph mode."""
    x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
    y = tf.compat.v1.placeholder(tf.float32, [None, 1], name="y")
    h = tf.compat.v1.layers.dense(x, 4, activation=tf.nn.relu)
    pred = tf.compat.v1.layers.dense(h, 1)
    loss = tf.identity(tf.reduce_mean(tf.math.squared_difference(pred, y)), name="loss")
    step = tf.compat.v1.train.get_or_create_global_step()
    if optimizer == "adam":
        opt = tf.compat.v1.train.AdamOptimizer(0.05)
    else:
        opt = tf.compat.v1.train.MomentumOptimizer(0.05, 0.9)
    opt.minimize(loss, global_step=step)


def main():
    args = ic.parse_flags("prefix", "expected", "optimizer", optional=["extra"])
    expected = ic.load_tensors(args.expected)
    extra = [key for key in args.extra.split(",") if key]

    # 1. The checkpoint as tf.train.load_checkpoint lists it.
    reader = ic.expect_checkpoint_holds(args.prefix, expected, extra)
    shapes = reader.get_variable_to_shape_map()
    slot = "dense/kernel/Adam" if args.optimizer == "adam" else "dense/kernel/Momentum"
    for key in [slot, "global_step"]:
        if key not in shapes:
            ic.fail("checkpoint lacks %s" % key)
    if reader.get_tensor("global_step") != 5:
        ic.fail("global_step is %s, expected the 5 steps trained" % reader.get_tensor("global_step"))

    # 2. The same graph built in TF restores from it.
    tf.compat.v1.disable_v2_behavior()
    with tf.Graph().as_default():
        build_model(args.optimizer)
        variables = tf.compat.v1.global_variables()
        names = sorted(v.op.name for v in variables)
        if names != sorted(expected):
            ic.fail("TF's model has variables %s, flowtrain's %s" % (names, sorted(expected)))
        ic.expect_saver_restores(args.prefix, {v.op.name: v for v in variables}, expected)
    print("checked %d variables of %s" % (len(expected), args.prefix))


if __name__ == "__main__":
    ic.run(main)
