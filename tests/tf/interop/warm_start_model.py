"""TF's own warm starts of the models of warm_start_test.cc, in graph mode.

  warm_start_model.py --dir DIR
      builds the variables of old/hidden = dense(3 -> 5) and old/out = dense(5 -> 2) and writes their random
      initial values to DIR/old.ckpt; then, in a new graph, builds the same layers under "new"
      plus head/kernel [2, 2], calls tf.compat.v1.train.init_from_checkpoint(DIR/old.ckpt,
      {"old/": "new/"}), runs the init op and writes every variable to DIR/tf_new.ckpt; then, in
      a third graph with the old names, tf.compat.v1.train.warm_start(DIR/old.ckpt,
      vars_to_warm_start="old/hidden") and writes every variable to DIR/tf_warm.ckpt.
"""

import tensorflow as tf

import interop_common as ic

v1 = tf.compat.v1


def layers(scope):
    """The variables of dense layers hidden (3 -> 5) and out (5 -> 2), as tf.get_variable makes
    them (glorot_uniform kernels, zero biases)."""
    with v1.variable_scope(scope):
        for name, shape in (("hidden", [3, 5]), ("out", [5, 2])):
            with v1.variable_scope(name):
                v1.get_variable("kernel", shape)
                v1.get_variable("bias", shape[1:], initializer=v1.random_normal_initializer())


def initialize_and_save(path):
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        v1.train.Saver().save(sess, path, write_meta_graph=False, write_state=False)


def main():
    args = ic.parse_flags("dir")
    v1.disable_v2_behavior()
    old = args.dir + "/old.ckpt"
    with tf.Graph().as_default():
        v1.set_random_seed(1)
        layers("old")
        initialize_and_save(old)
    with tf.Graph().as_default():
        layers("new")
        v1.get_variable("head/kernel", [2, 2])
        v1.train.init_from_checkpoint(old, {"old/": "new/"})
        initialize_and_save(args.dir + "/tf_new.ckpt")
    with tf.Graph().as_default():
        v1.set_random_seed(2)
        layers("old")
        v1.train.warm_start(old, vars_to_warm_start="old/hidden")
        initialize_and_save(args.dir + "/tf_warm.ckpt")


if __name__ == "__main__":
    ic.run(main)
