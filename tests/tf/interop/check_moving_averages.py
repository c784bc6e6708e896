"""flowtrain's ExponentialMovingAverage against TF's tf.compat.v1.train.ExponentialMovingAverage.

flowtrain trained the model below (w a ref variable, b a resource variable, the global step,
a zero-debiased average of a loss tensor) for STEPS steps, saved model.ckpt with its .meta,
and wrote every global variable's value (state.json) and the VariablesToRestore maps
(restore.json: checkpoint key -> variable) of that graph ("train") and of an evaluation graph
without averages ("eval"). Then:
  1. TF imports flowtrain's .meta, initializes and runs "train" STEPS times: every variable
     ends at flowtrain's values (TF runs flowtrain's graph);
  2. TF builds the same model with its own ExponentialMovingAverage: the same global
     variables by name, the same values, and the same variables_to_restore maps;
  3. an evaluation graph of TF restores flowtrain's checkpoint through
     ema.variables_to_restore(): w and b hold flowtrain's averages.
Values within 1e-6 relative (TF's and flowtrain's float kernels may round an ulp apart).

  check_moving_averages.py --dir DIR --steps N
"""

import numpy as np
import tensorflow as tf

import interop_common as ic

v1 = tf.compat.v1


def build():
    """The C++ test's model, averaged by TF's own class; returns (train_op, ema)."""
    w = v1.Variable(np.array([[1, 2, 3], [4, 5, 6]], np.float32), name="w", use_resource=False)
    b = v1.Variable(np.array([0.5, -0.5, 2], np.float32), name="b", use_resource=True)
    step = v1.Variable(np.int64(0), name="global_step", trainable=False, use_resource=False)
    loss = tf.identity(tf.reduce_sum(w * w) + tf.reduce_sum(b), name="loss")
    with tf.control_dependencies([loss]):  # the loss of the values before the step, in TF too
        move = tf.group(v1.assign_add(w, tf.fill([2, 3], 0.5)), b.assign_sub([0.25, 1.0, -0.5]),
                        v1.assign_add(step, 1), name="move")
    with tf.control_dependencies([move]):
        ema = v1.train.ExponentialMovingAverage(0.99, num_updates=step)
        averages = ema.apply([w, b])
        loss_average = v1.train.ExponentialMovingAverage(0.9, zero_debias=True, name="LossAverage").apply([loss])
    train = tf.group(averages, loss_average, name="train")
    return train, ema


def values_of(sess, variables):
    return {v.op.name: sess.run(v) for v in variables}


def compare(what, actual, expected):
    if sorted(actual) != sorted(expected):
        ic.fail("%s: variables %s, flowtrain's %s" % (what, sorted(actual), sorted(expected)))
    for name in expected:
        ic.expect_close("%s: %s" % (what, name), actual[name], expected[name], rtol=1e-6, atol=1e-7)


def main():
    args = ic.parse_flags("dir", "steps")
    steps = int(args.steps)
    expected = ic.load_tensors(args.dir + "/state.json")
    restore_map = ic.load_json(args.dir + "/restore.json")
    prefix = args.dir + "/model.ckpt"
    v1.disable_v2_behavior()  # TF1 semantics: ref variables, control flow v1

    with tf.Graph().as_default():
        v1.train.import_meta_graph(prefix + ".meta")
        train = v1.get_default_graph().get_operation_by_name("train")
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(steps):
                sess.run(train)
            compare("TF running flowtrain's graph", values_of(sess, v1.global_variables()), expected)

    with tf.Graph().as_default():
        train, ema = build()
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(steps):
                sess.run(train)
            compare("TF's own ExponentialMovingAverage", values_of(sess, v1.global_variables()), expected)
        train_map = {key: v.op.name for key, v in ema.variables_to_restore().items()}
        if train_map != restore_map["train"]:
            ic.fail("variables_to_restore of the training graph: TF's %s, flowtrain's %s" % (
                train_map, restore_map["train"]))

    # The evaluation job: a model without averages restores them into its variables.
    with tf.Graph().as_default():
        w = v1.Variable(np.zeros([2, 3], np.float32), name="w", use_resource=False)
        b = v1.Variable(np.zeros([3], np.float32), name="b", use_resource=True)
        v1.Variable(np.int64(0), name="global_step", trainable=False, use_resource=False)
        eval_ema = v1.train.ExponentialMovingAverage(0.99)
        eval_map = {key: v.op.name for key, v in eval_ema.variables_to_restore().items()}
        if eval_map != restore_map["eval"]:
            ic.fail("variables_to_restore of the evaluation graph: TF's %s, flowtrain's %s" % (
                eval_map, restore_map["eval"]))
        saver = v1.train.Saver(eval_ema.variables_to_restore())
        with v1.Session() as sess:
            saver.restore(sess, prefix)
            ic.expect_exact("w restored from its average", sess.run(w), expected["w/ExponentialMovingAverage"])
            ic.expect_exact("b restored from its average", sess.run(b), expected["b/ExponentialMovingAverage"])
    print("%d variables agree after %d steps, and both variables_to_restore maps (%d and %d keys); the "
          "evaluation graph restores the averages" % (len(expected), steps, len(train_map), len(eval_map)))


if __name__ == "__main__":
    ic.run(main)
