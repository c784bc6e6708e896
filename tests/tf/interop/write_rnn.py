"""TF 1.15's recurrent cells and dynamic_rnn, written for flowtrain to match (tests/tf/rnn_test.cc).

For each model below, TF builds tf.compat.v1.nn.dynamic_rnn (bidirectional_dynamic_rnn for
"bidirectional", its outputs concatenated) over inputs x [batch 3, time 5,
depth 4] with sequence_length [5, 3, 0], sets every variable to seeded random values, and writes
  DIR/<model>/model.ckpt     the variables under TF's names (flowtrain restores them by name);
  DIR/<model>/expected.ckpt  x, the outputs, the final state's tensors ("state_0", ...) and the
                             gradient of loss = sum(outputs^2) + sum_i (i + 1) sum(state_i)
                             w.r.t. every variable ("grad/<variable>").
Model "train" is an LSTM + dense head trained 10 steps by SGD (learning rate 0.1): its
expected.ckpt holds x, the targets y, the loss before each step ("loss", [10]) and every
variable after the last step ("final/<variable>").

  write_rnn.py --dir DIR
"""
import os

# tf.compat.v1.nn.rnn_cell lives in TF's legacy Keras (tf_keras).
os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np
import tensorflow as tf

import interop_common as ic

v1 = tf.compat.v1
rc = v1.nn.rnn_cell

# Runs two of its cells: outputs are the forward and backward ones concatenated along depth.
BIDIRECTIONAL = "bidirectional"
CELLS = {
    "basic_rnn": lambda: rc.BasicRNNCell(6),
    "gru": lambda: rc.GRUCell(6),
    "basic_lstm": lambda: rc.BasicLSTMCell(6, forget_bias=0.7),
    "lstm": lambda: rc.LSTMCell(6, use_peepholes=True, num_proj=3, cell_clip=0.9, forget_bias=1.0),
    "multi": lambda: rc.MultiRNNCell([rc.BasicLSTMCell(6), rc.GRUCell(5)]),
    "dropout": lambda: rc.DropoutWrapper(rc.BasicLSTMCell(6), input_keep_prob=1.0, output_keep_prob=1.0,
                                         state_keep_prob=1.0),
    BIDIRECTIONAL: lambda: rc.BasicLSTMCell(5),
}
SEQUENCE_LENGTH = [5, 3, 0]
STEPS = 10


def save_values(path, values):
    """Writes {name: array} as a TF checkpoint at `path`."""
    with tf.Graph().as_default():
        variables = [v1.Variable(value, name=name, use_resource=False) for name, value in values.items()]
        saver = v1.train.Saver(variables)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            saver.save(sess, path, write_meta_graph=False, write_state=False)


def randomize(sess, rng):
    for v in v1.global_variables():
        v.load(rng.uniform(-0.5, 0.5, v.shape.as_list()).astype(np.float32), sess)


def write_cell(out_dir, name, make_cell, rng):
    with tf.Graph().as_default():
        x_value = rng.normal(size=[3, 5, 4]).astype(np.float32)
        x = v1.placeholder(tf.float32, [3, 5, 4], name="x")
        if name == BIDIRECTIONAL:
            (fw, bw), state = v1.nn.bidirectional_dynamic_rnn(make_cell(), make_cell(), x,
                                                              sequence_length=SEQUENCE_LENGTH, dtype=tf.float32)
            outputs = tf.concat([fw, bw], 2)
        else:
            outputs, state = v1.nn.dynamic_rnn(make_cell(), x, sequence_length=SEQUENCE_LENGTH, dtype=tf.float32)
        flat_state = tf.nest.flatten(state)
        loss = tf.reduce_sum(tf.square(outputs))
        for i, s in enumerate(flat_state):
            loss += (i + 1) * tf.reduce_sum(s)
        variables = v1.global_variables()
        grads = tf.gradients(loss, variables)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            randomize(sess, rng)
            v1.train.Saver().save(sess, os.path.join(out_dir, name, "model.ckpt"), write_meta_graph=False,
                                  write_state=False)
            out, states, grad_values = sess.run([outputs, flat_state, grads], {x: x_value})
    expected = {"x": x_value, "outputs": out}
    expected.update({"state_%d" % i: s for i, s in enumerate(states)})
    expected.update({"grad/" + v.op.name: g for v, g in zip(variables, grad_values)})
    save_values(os.path.join(out_dir, name, "expected.ckpt"), expected)


def write_train(out_dir, rng):
    with tf.Graph().as_default():
        x_value = rng.normal(size=[3, 5, 4]).astype(np.float32)
        y_value = rng.normal(size=[3, 2]).astype(np.float32)
        x = v1.placeholder(tf.float32, [3, 5, 4], name="x")
        y = v1.placeholder(tf.float32, [3, 2], name="y")
        _, state = v1.nn.dynamic_rnn(rc.BasicLSTMCell(6), x, sequence_length=SEQUENCE_LENGTH, dtype=tf.float32)
        logits = v1.layers.dense(state.h, 2)
        loss = tf.reduce_mean(tf.square(logits - y))
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            randomize(sess, rng)
            v1.train.Saver().save(sess, os.path.join(out_dir, "train", "model.ckpt"), write_meta_graph=False,
                                  write_state=False)
            losses = [sess.run([loss, train], {x: x_value, y: y_value})[0] for _ in range(STEPS)]
            final = {"final/" + v.op.name: sess.run(v) for v in v1.global_variables()}
    expected = {"x": x_value, "y": y_value, "loss": np.array(losses, np.float32)}
    expected.update(final)
    save_values(os.path.join(out_dir, "train", "expected.ckpt"), expected)


def main():
    flags = ic.parse_flags("dir")
    v1.disable_v2_behavior()
    rng = np.random.default_rng(19)
    for name in list(CELLS) + ["train"]:
        os.makedirs(os.path.join(flags.dir, name), exist_ok=True)
    for name, make_cell in CELLS.items():
        write_cell(flags.dir, name, make_cell, rng)
    write_train(flags.dir, rng)


if __name__ == "__main__":
    ic.run(main)
