"""TF1's own training of an embedding model, for embedding_test.cc to match: a table of
1000 x 16 split in two partitions (emb_0, emb_1) looked up with tf.nn.embedding_lookup (ids
with duplicates, 32 examples of 3 ids, mean-pooled) into a dense layer, squared error. The
initial values and the data come from a fixed seed; for each partition strategy (mod, div)
and each of Adagrad, Adam, Momentum and GradientDescent, 20 steps from the same start.

Writes under --out, each tensor as whitespace-separated numbers in row-major order:
  init/{emb_0,emb_1,kernel,bias}.txt, data/{ids,y}.txt
  <strategy>_<optimizer>/losses.txt (21 losses: before each step and after the last)
  <strategy>_<optimizer>/{emb_0,emb_1,kernel,bias}.txt (the variables after 20 steps)

  write_embedding_training.py --out DIR
"""
import os

import numpy as np
import tensorflow as tf

import interop_common as ic

v1 = tf.compat.v1

OPTIMIZERS = {
    "adagrad": lambda: v1.train.AdagradOptimizer(0.1),
    "adam": lambda: v1.train.AdamOptimizer(0.01),
    "momentum": lambda: v1.train.MomentumOptimizer(0.05, 0.9),
    "sgd": lambda: v1.train.GradientDescentOptimizer(0.5),
}


def write(path, array):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.savetxt(path, np.asarray(array).reshape(-1), fmt="%.9g" if array.dtype.kind == "f" else "%d")


def main():
    args = ic.parse_flags("out")
    v1.disable_v2_behavior()
    rng = np.random.RandomState(19)
    init = {
        "emb_0": rng.uniform(-1, 1, (500, 16)).astype(np.float32),
        "emb_1": rng.uniform(-1, 1, (500, 16)).astype(np.float32),
        "kernel": rng.uniform(-0.5, 0.5, (16, 1)).astype(np.float32),
        "bias": np.array([0.1], np.float32),
    }
    ids = rng.randint(0, 1000, (32, 3)).astype(np.int32)
    ids[1] = ids[0]        # repeated across examples
    ids[2, 1] = ids[2, 0]  # repeated within one
    ids[3] = [0, 999, 500]  # the edges of both strategies
    y = rng.uniform(-1, 1, (32, 1)).astype(np.float32)
    for name, value in init.items():
        write(os.path.join(args.out, "init", name + ".txt"), value)
    write(os.path.join(args.out, "data", "ids.txt"), ids)
    write(os.path.join(args.out, "data", "y.txt"), y)
    for strategy in ("mod", "div"):
        for opt_name, make in OPTIMIZERS.items():
            with tf.Graph().as_default():
                variables = {n: v1.Variable(value, name=n) for n, value in init.items()}
                e = v1.nn.embedding_lookup([variables["emb_0"], variables["emb_1"]], tf.constant(ids),
                                           partition_strategy=strategy)
                pooled = tf.reduce_mean(e, axis=1)
                pred = tf.matmul(pooled, variables["kernel"]) + variables["bias"]
                loss = tf.reduce_mean(tf.square(pred - tf.constant(y)))
                train = make().minimize(loss)
                with v1.Session() as sess:
                    sess.run(v1.global_variables_initializer())
                    losses = []
                    for _ in range(20):
                        losses.append(sess.run(loss))
                        sess.run(train)
                    losses.append(sess.run(loss))
                    case = os.path.join(args.out, "%s_%s" % (strategy, opt_name))
                    write(os.path.join(case, "losses.txt"), np.array(losses, np.float32))
                    for n, v in variables.items():
                        write(os.path.join(case, n + ".txt"), sess.run(v))
    print("wrote %s" % args.out)


if __name__ == "__main__":
    ic.run(main)
