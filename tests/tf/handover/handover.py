#!/usr/bin/env python3
"""TensorFlow's side of the hand-over test (tests/tf/handover_test.cc, issue 16).

One training job is run by two systems in turn: TF trains to step 100, flowtrain continues
from TF's model directory to step 200, TF continues from flowtrain's checkpoint to step 300.
A second TF job trains 0 -> 300 without interruption as the reference.

    handover.py [--optimizer adam|momentum] --data DIR --model-dir D --last-step N --losses FILE

The model (flowtrain's side builds the same, with the same names; keep them in step):
  x [32, 8] float32, y [32, 1] float32, fed per step
  dense   8 -> 16, tanh   (dense/kernel, dense/bias)
  dense_1 16 -> 1         (dense_1/kernel, dense_1/bias)
  loss = mean((prediction - y)^2) ("mean_squared_error"), tf.compat.v1.summary.scalar("loss")
  (an op named "loss" would make the summary op, and so its tag, "loss_1")
  --optimizer adam: Adam 0.01 (slots .../Adam, .../Adam_1, beta1_power, beta2_power)
  --optimizer momentum: Momentum 0.01, momentum 0.9 (slots .../Momentum)
  global step int64

Step s trains on batch s of the data set the test writes (DIR/x.bin [300, 32, 8] and
DIR/y.bin [300, 32, 1], raw little-endian float32), so a job resumed at any step sees the
batch an uninterrupted one sees. The step is read through the raw session of run_step_fn
before each step (no hook sees that read); FILE gets a line "<step> <loss>" for every step
this job ran, the loss computed before that step's update.

It runs tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir=D,
hooks=[StopAtStepHook(last_step=N)], save_summaries_steps=10, save_checkpoint_steps=30) with
TF's other defaults (a Saver keeping 5 checkpoints, a checkpoint when the session starts and
when it ends); it resumes from D's latest checkpoint when D holds one. Checkpoints every 30
steps make each system delete the other's old checkpoints.
"""
import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np

STEPS, BATCH, FEATURES, HIDDEN = 300, 32, 8, 16
LEARNING_RATE = 0.01
MOMENTUM = 0.9
SUMMARY_STEPS = 10
CHECKPOINT_STEPS = 30


def read_data(data_dir):
    x = np.fromfile(os.path.join(data_dir, "x.bin"), dtype="<f4").reshape(STEPS, BATCH, FEATURES)
    y = np.fromfile(os.path.join(data_dir, "y.bin"), dtype="<f4").reshape(STEPS, BATCH, 1)
    return x, y


def initial_kernel(fan_in, fan_out, seed):
    """Fixed initial weights (glorot-uniform's range), the same in every TF job."""
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return np.random.default_rng(seed).uniform(-limit, limit, size=(fan_in, fan_out)).astype(np.float32)


def make_optimizer(name):
    import tensorflow as tf
    if name == "adam":
        return tf.compat.v1.train.AdamOptimizer(LEARNING_RATE)
    return tf.compat.v1.train.MomentumOptimizer(LEARNING_RATE, momentum=MOMENTUM)


def build_model(optimizer):
    """The model in the default graph: (x, y, loss, global_step, train_op)."""
    import tensorflow as tf
    v1 = tf.compat.v1
    x = v1.placeholder(tf.float32, [BATCH, FEATURES], name="x")
    y = v1.placeholder(tf.float32, [BATCH, 1], name="y")
    h = v1.layers.dense(x, HIDDEN, activation=tf.tanh,
                        kernel_initializer=v1.constant_initializer(initial_kernel(FEATURES, HIDDEN, 1)))
    prediction = v1.layers.dense(h, 1, kernel_initializer=v1.constant_initializer(initial_kernel(HIDDEN, 1, 2)))
    loss = tf.reduce_mean(tf.square(prediction - y), name="mean_squared_error")
    v1.summary.scalar("loss", loss)
    global_step = v1.train.get_or_create_global_step()
    train_op = make_optimizer(optimizer).minimize(loss, global_step=global_step)
    return x, y, loss, global_step, train_op


def train(optimizer, data_dir, model_dir, last_step, losses_path):
    import tensorflow as tf
    tf.compat.v1.disable_v2_behavior()
    v1 = tf.compat.v1
    xs, ys = read_data(data_dir)

    with tf.Graph().as_default():
        x, y, loss, global_step, train_op = build_model(optimizer)

        losses = {}

        def step_fn(step_context):
            step = int(step_context.session.run(global_step))
            if step >= STEPS:
                raise RuntimeError(f"global step {step} is past the data set's {STEPS} batches")
            _, value = step_context.run_with_hooks([train_op, loss], feed_dict={x: xs[step], y: ys[step]})
            losses[step] = float(value)

        with v1.train.MonitoredTrainingSession(
                checkpoint_dir=model_dir, save_summaries_steps=SUMMARY_STEPS, save_checkpoint_steps=CHECKPOINT_STEPS,
                hooks=[v1.train.StopAtStepHook(last_step=last_step)]) as sess:
            while not sess.should_stop():
                sess.run_step_fn(step_fn)

    with open(losses_path, "w") as f:
        for step, value in sorted(losses.items()):
            f.write(f"{step} {value:.9g}\n")
    print(f"trained steps {min(losses)}..{max(losses)} in {model_dir}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--optimizer", choices=["adam", "momentum"], default="adam")
    parser.add_argument("--data", required=True)
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--last-step", type=int, required=True)
    parser.add_argument("--losses", required=True)
    args = parser.parse_args()
    train(args.optimizer, args.data, args.model_dir, args.last_step, args.losses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
