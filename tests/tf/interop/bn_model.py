"""The batch-normalisation model of batch_norm_test.cc, built and trained by TF's own
tf.compat.v1.layers (legacy Keras) in graph mode.

The model: x [8, 6, 6, 2] -> conv2d(4, 3x3, same) -> batch_normalization (fused: 4-D, channels
last) -> relu -> flatten -> dense(5) -> batch_normalization_1 (not fused: 2-D) -> relu ->
dense_1(3) -> mean sparse softmax cross entropy; `training` a bool placeholder; the train op
Momentum(0.1, 0.9).minimize(loss) under control_dependencies(UPDATE_OPS), as TF1 code does.

  bn_model.py --mode write --dir DIR --steps N
      writes DIR/init.ckpt (the initial variables and slots), trains N steps (training fed True)
      and writes DIR/final.ckpt, and DIR/data.ckpt holding the batch (x, y), the N losses and
      the logits of the final variables with training fed True and False.
  bn_model.py --mode check --dir DIR
      restores flowtrain's DIR/ours.ckpt into TF's model (every key must be TF's) and checks
      that TF's logits of those variables are flowtrain's (DIR/ours_outputs.ckpt) to 1e-5.
"""

import numpy as np
import tensorflow as tf

import interop_common as ic

v1 = tf.compat.v1


def build():
    x = v1.placeholder(tf.float32, [8, 6, 6, 2], name="x")
    y = v1.placeholder(tf.int64, [8], name="y")
    training = v1.placeholder(tf.bool, [], name="training")
    h = v1.layers.conv2d(x, 4, [3, 3], padding="same")
    h = tf.nn.relu(v1.layers.batch_normalization(h, training=training, momentum=0.9))
    h = v1.layers.flatten(h)
    h = v1.layers.dense(h, 5)
    h = tf.nn.relu(v1.layers.batch_normalization(h, training=training, momentum=0.9))
    logits = v1.layers.dense(h, 3)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
        train = v1.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    return x, y, training, logits, loss, train


def save_tensors(path, tensors):
    """A checkpoint holding `tensors` ({name: array}) as variables of those names."""
    with tf.Graph().as_default():
        variables = [v1.Variable(value, name=name) for name, value in tensors.items()]
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            v1.train.Saver(variables).save(sess, path, write_meta_graph=False)


def write(directory, steps):
    rng = np.random.RandomState(3)
    batch_x = rng.uniform(-1, 2, [8, 6, 6, 2]).astype(np.float32)
    batch_y = rng.randint(0, 3, [8]).astype(np.int64)
    with tf.Graph().as_default():
        v1.set_random_seed(11)
        x, y, training, logits, loss, train = build()
        saver = v1.train.Saver()
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            saver.save(sess, directory + "/init.ckpt", write_meta_graph=False)
            feed = {x: batch_x, y: batch_y, training: True}
            losses = [sess.run([loss, train], feed)[0] for _ in range(steps)]
            saver.save(sess, directory + "/final.ckpt", write_meta_graph=False)
            logits_train = sess.run(logits, feed)
            logits_infer = sess.run(logits, {x: batch_x, training: False})
    if not losses[-1] < losses[0]:
        ic.fail("TF's model did not learn: losses %s" % losses)
    save_tensors(directory + "/data.ckpt", {
        "x": batch_x, "y": batch_y, "losses": np.array(losses, np.float32),
        "logits_train": logits_train, "logits_infer": logits_infer})
    print("TF trained %d steps: loss %.6f -> %.6f" % (steps, losses[0], losses[-1]))


def check(directory):
    data = tf.train.load_checkpoint(directory + "/data.ckpt")
    ours = tf.train.load_checkpoint(directory + "/ours_outputs.ckpt")
    with tf.Graph().as_default():
        x, _, training, logits, _, _ = build()
        keys = sorted(tf.train.load_checkpoint(directory + "/ours.ckpt").get_variable_to_shape_map())
        names = sorted(v.op.name for v in v1.global_variables())
        if keys != names:
            ic.fail("flowtrain's checkpoint keys %s, TF's variables %s" % (keys, names))
        with v1.Session() as sess:
            v1.train.Saver().restore(sess, directory + "/ours.ckpt")
            for mode, value in (("train", True), ("infer", False)):
                ic.expect_close("logits with training=%s" % value,
                                sess.run(logits, {x: data.get_tensor("x"), training: value}),
                                ours.get_tensor("logits_" + mode), rtol=1e-5, atol=1e-5)
    print("TF restored flowtrain's %d variables and computes flowtrain's logits" % len(keys))


def main():
    args = ic.parse_flags("mode", "dir", optional=("steps",))
    v1.disable_v2_behavior()
    if args.mode == "write":
        write(args.dir, int(args.steps))
    else:
        check(args.dir)


if __name__ == "__main__":
    ic.run(main)
