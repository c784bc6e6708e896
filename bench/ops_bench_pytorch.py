#!/usr/bin/env python3
"""The PyTorch side of ops_bench: the workloads of bench/ops_bench_data.h in PyTorch.

    python3 bench/ops_bench_pytorch.py --threads 1 [--only W2,W3]

ops_bench runs it as a child process (1 and 2 threads, with and without the machine's
OPENBLAS_* settings) and reads its lines `RESULT <workload> pytorch <metric> <value>`.

The constants and the data generator below repeat bench/ops_bench_data.h (keep them in step):
element i of the tensor with seed s is splitmix64((s << 32) | i), turned into a float in
[-1, 1) with float32 steps that are exact, so every system starts from the same bits. Models
are written as a PyTorch user writes them (nn modules, autograd, torch.optim), with the
fastest idioms (zero_grad(set_to_none=True), inference_mode for plain tensor arithmetic).
"""
import argparse
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# ---- bench/ops_bench_data.h ----------------------------------------------------------------
W2_SEED, W3_SEED, W4_SEED, CNN_SEED, GEMM_SEED = 10000, 20000, 30000, 40000, 50000
WEIGHT_SEED_OFFSET = 1000
W1_ADDS, W1_STEPS = 10, (500, 4000, 1)
MLP_IN, MLP_CLASSES = 784, 10
W2_HIDDEN, W2_BATCH, W2_STEPS = 256, 64, (20, 400, 64)
SGD_LR, ADAM_LR = 0.1, 1e-3
W3_HIDDEN, W3_BATCH, W3_STEPS = 2048, 256, (2, 8, 8)
W3_MATMUL_FLOPS = 2.0 * W3_BATCH * (3.0 * (MLP_IN * W3_HIDDEN + W3_HIDDEN * W3_HIDDEN + W3_HIDDEN * MLP_CLASSES)
                                    - MLP_IN * W3_HIDDEN)
W4_FEATURES, W4_BATCH, W4_STEPS = 1000, 1024, (20, 400, 8)
CNN_BATCH, CNN_SIDE, CNN_CONV1, CNN_CONV2, CNN_KERNEL, CNN_DENSE = 64, 28, 32, 64, 5, 128
CNN_FLAT = (CNN_SIDE // 4) * (CNN_SIDE // 4) * CNN_CONV2
CNN_LR, CNN_STEPS = 0.01, (3, 12, 8)
GEMM_SIZES = [(1024, 10), (2048, 4)]


def _hash(seed, n):
    with np.errstate(over="ignore"):
        z = (np.uint64(seed) << np.uint64(32)) | np.arange(n, dtype=np.uint64)
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def uniform(shape, seed, scale):
    """A float32 tensor of `shape` (flowtrain's layout) from the shared generator."""
    z = _hash(seed, math.prod(shape))
    f = (z >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -23) - np.float32(1.0)
    return torch.from_numpy((f * np.float32(scale)).reshape(shape))


def labels(n, seed, classes):
    return torch.from_numpy(((_hash(seed, n) >> np.uint64(40)) % np.uint64(classes)).astype(np.int64))


def glorot_limit(fan_in, fan_out):
    return float(np.float32(math.sqrt(6.0 / (fan_in + fan_out))))


# ---- Models ---------------------------------------------------------------------------------
def report(workload, metric, value):
    print(f"RESULT {workload} pytorch {metric} {value:.6g}", flush=True)


def make_linear(fan_in, fan_out, seed):
    layer = nn.Linear(fan_in, fan_out)
    with torch.no_grad():
        layer.weight.copy_(uniform((fan_in, fan_out), seed, glorot_limit(fan_in, fan_out)).t())
        layer.bias.zero_()
    return layer


def make_mlp(hidden, seed):
    w = seed + WEIGHT_SEED_OFFSET
    return nn.Sequential(make_linear(MLP_IN, hidden, w), nn.ReLU(), make_linear(hidden, hidden, w + 1), nn.ReLU(),
                         make_linear(hidden, MLP_CLASSES, w + 2))


def make_conv(fan_in, out, seed):
    k = CNN_KERNEL
    conv = nn.Conv2d(fan_in, out, k, padding=k // 2)
    with torch.no_grad():
        conv.weight.copy_(uniform((k, k, fan_in, out), seed, glorot_limit(k * k * fan_in, k * k * out))
                          .permute(3, 2, 0, 1))
        conv.bias.zero_()
    return conv


def make_cnn():
    """NCHW: filters become [out, in, kh, kw]; dense rows go from NHWC's (h, w, c) to (c, h, w)."""
    w = CNN_SEED + WEIGHT_SEED_OFFSET
    dense1 = nn.Linear(CNN_FLAT, CNN_DENSE)
    with torch.no_grad():
        kernel = uniform((CNN_FLAT, CNN_DENSE), w + 2, glorot_limit(CNN_FLAT, CNN_DENSE))
        dense1.weight.copy_(kernel.view(CNN_FLAT // CNN_CONV2, CNN_CONV2, CNN_DENSE).permute(1, 0, 2)
                            .reshape(CNN_FLAT, CNN_DENSE).t())
        dense1.bias.zero_()
    return nn.Sequential(make_conv(1, CNN_CONV1, w), nn.ReLU(), nn.MaxPool2d(2),
                         make_conv(CNN_CONV1, CNN_CONV2, w + 1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), dense1, nn.ReLU(), make_linear(CNN_DENSE, MLP_CLASSES, w + 3))


def train(workload, model, optimizer, xs, ys, steps, loss_fn):
    warmup, timed, _ = steps

    def step(i):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(xs[i % len(xs)]), ys[i % len(ys)])
        loss.backward()
        optimizer.step()
        return loss

    for i in range(warmup):
        step(i)
    start = time.perf_counter()
    for i in range(timed - 1):
        step(warmup + i)
    final_loss = step(warmup + timed - 1).item()
    per_sec = timed / (time.perf_counter() - start)
    report(workload, "examples_per_sec", per_sec * xs[0].shape[0])
    report(workload, "final_loss", final_loss)
    return per_sec


def run_w1():
    with torch.inference_mode():
        x = torch.tensor(1.0)
        addends = [torch.tensor(0.5 * k) for k in range(1, W1_ADDS + 1)]

        def step():
            y = x
            for c in addends:
                y = y + c
            return y

        warmup, timed, _ = W1_STEPS
        for _ in range(warmup):
            step()
        start = time.perf_counter()
        for _ in range(timed):
            y = step()
        per_sec = timed / (time.perf_counter() - start)
        report("W1", "steps_per_sec", per_sec)
        report("W1", "per_op_us", 1e6 / per_sec / W1_ADDS)
        report("W1", "final_loss", y.item())


def run_mlp(workload):
    w3, adam = workload == "W3", workload == "W2b"
    seed, batch, hidden, steps = (W3_SEED, W3_BATCH, W3_HIDDEN, W3_STEPS) if w3 else (W2_SEED, W2_BATCH, W2_HIDDEN, W2_STEPS)
    xs = [uniform((batch, MLP_IN), seed + 2 * b, 1.0) for b in range(steps[2])]
    ys = [labels(batch, seed + 2 * b + 1, MLP_CLASSES) for b in range(steps[2])]
    model = make_mlp(hidden, seed)
    optimizer = (torch.optim.Adam(model.parameters(), lr=ADAM_LR) if adam
                 else torch.optim.SGD(model.parameters(), lr=SGD_LR))
    per_sec = train(workload, model, optimizer, xs, ys, steps, F.cross_entropy)
    if w3:
        report(workload, "matmul_gflops", W3_MATMUL_FLOPS * per_sec / 1e9)


def run_w4():
    xs = [uniform((W4_BATCH, W4_FEATURES), W4_SEED + 2 * b, 1.0) for b in range(W4_STEPS[2])]
    ys = [labels(W4_BATCH, W4_SEED + 2 * b + 1, 2).float().view(-1, 1) for b in range(W4_STEPS[2])]
    model = make_linear(W4_FEATURES, 1, W4_SEED + WEIGHT_SEED_OFFSET)
    train("W4", model, torch.optim.SGD(model.parameters(), lr=SGD_LR), xs, ys, W4_STEPS,
          F.binary_cross_entropy_with_logits)


def run_cnn():
    # NHWC with one channel is NCHW with one channel: the same floats.
    xs = [uniform((CNN_BATCH, 1, CNN_SIDE, CNN_SIDE), CNN_SEED + 2 * b, 1.0) for b in range(CNN_STEPS[2])]
    ys = [labels(CNN_BATCH, CNN_SEED + 2 * b + 1, MLP_CLASSES) for b in range(CNN_STEPS[2])]
    model = make_cnn()
    train("CNN", model, torch.optim.SGD(model.parameters(), lr=CNN_LR), xs, ys, CNN_STEPS, F.cross_entropy)


def run_gemm():
    with torch.inference_mode():
        for n, reps in GEMM_SIZES:
            a, b = uniform((n, n), GEMM_SEED, 1.0), uniform((n, n), GEMM_SEED + 1, 1.0)
            c = torch.empty(n, n)
            torch.mm(a, b, out=c)
            start = time.perf_counter()
            for _ in range(reps):
                torch.mm(a, b, out=c)
            seconds = time.perf_counter() - start
            report(f"GEMM{n}", "gflops", 2.0 * n ** 3 * reps / seconds / 1e9)
            report(f"GEMM{n}", "mean_abs_c", c.abs().mean().item())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    only = set(filter(None, args.only.split(",")))

    def wanted(w):
        return not only or w in only

    print(f"# pytorch {torch.__version__} threads={torch.get_num_threads()}", flush=True)
    if wanted("W1"):
        run_w1()
    for w in ("W2", "W2b", "W3"):
        if wanted(w):
            run_mlp(w)
    if wanted("W4"):
        run_w4()
    if wanted("CNN"):
        run_cnn()
    if wanted("GEMM"):
        run_gemm()
    return 0


if __name__ == "__main__":
    sys.exit(main())
