"""TensorFlow's ps/worker runtime on distributed_bench's workloads (bench/distributed_bench.cc).

Usage: distributed_bench_tf.py transfer|step. For each session thread setting it starts a ps
and a worker tf.distribute.Server on fresh loopback ports in this process, builds the workload
with replica_device_setter and prints "<median ms> <check value> intra_op=I,inter_op=J":
  transfer: a 100 MB float variable on the ps read by a Slice on the worker;
  step:     a 784x10 logistic-regression SGD step, batch 64, variables on the ps.
"""
import os
import socket
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

tf.disable_v2_behavior()

TENSOR_FLOATS = 100 * 1000 * 1000 // 4
TRANSFER_RUNS = 10
STEP_WARMUP = 50
STEPS = 500


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def median_ms(runs, fn):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times)[len(times) // 2]


def run(workload, intra, inter):
    ps_port, worker_port = free_ports(2)
    cluster = tf.train.ClusterSpec({"ps": ["localhost:%d" % ps_port], "worker": ["localhost:%d" % worker_port]})
    config = tf.ConfigProto(intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter)
    tf.distribute.Server(cluster, job_name="ps", task_index=0, config=config)
    worker = tf.distribute.Server(cluster, job_name="worker", task_index=0, config=config)
    graph = tf.Graph()
    with graph.as_default():
        if workload == "transfer":
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(tf.fill([TENSOR_FLOATS], 1.0), name="v")
            with tf.device("/job:worker/task:0"):
                first = tf.reduce_sum(tf.slice(v, [0], [1]))
            with tf.Session(worker.target, config=config) as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(first)
                ms = median_ms(TRANSFER_RUNS, lambda: sess.run(first))
                return ms, float(sess.run(first))
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            step = tf.train.get_or_create_global_step()
            x = tf.placeholder(tf.float32, [64, 784])
            labels = tf.placeholder(tf.int64, [64])
            w = tf.Variable(tf.zeros([784, 10]), name="w")
            b = tf.Variable(tf.zeros([10]), name="b")
            logits = tf.matmul(x, w) + b
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
            train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        feed = {x: (np.arange(64 * 784) % 255).reshape(64, 784).astype(np.float32) / 255,
                labels: np.arange(64) % 10}
        with tf.Session(worker.target, config=config) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(STEP_WARMUP):
                sess.run(train_op, feed)
            ms = median_ms(STEPS, lambda: sess.run(train_op, feed))
            return ms, float(sess.run(loss, feed))


def main():
    workload = sys.argv[1]
    for intra, inter in [(0, 0), (1, 1), (2, 2)]:
        ms, check = run(workload, intra, inter)
        print("%f %f intra_op=%d,inter_op=%d" % (ms, check, intra, inter), flush=True)


if __name__ == "__main__":
    main()
