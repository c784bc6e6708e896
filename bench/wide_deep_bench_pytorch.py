#!/usr/bin/env python3
"""The PyTorch side of wide_deep_bench: the same wide-and-deep training step in nn.EmbeddingBag.

    wide_deep_bench_pytorch.py DIR ROWS --threads N    # a line "<ms_per_step> <loss> <table_l1> <wide_l1>"

DIR is what wide_deep_bench_tf.py wrote. The deep part is an nn.EmbeddingBag(ROWS, DIM,
mode="sum", sparse=True) with bags of one id each (the ids [BATCH, FEATURES] flattened to
[BATCH * FEATURES, 1]: the same rows TF's embedding_lookup gathers), the wide part an
nn.EmbeddingBag(ROWS, 1, mode="sum", sparse=True) whose bag is an example's FEATURES ids, plus a
bias. Weights start at TF's initial values (TF's dense kernel is [in, out], nn.Linear's weight
[out, in]); the wide table and the biases start at zero as TF's do. Loss BCEWithLogitsLoss
(mean). torch.optim.Adagrad with initial_accumulator_value 0.1 and eps 1e-10 does TF's update
(accum += g^2; var -= lr * g / (sqrt(accum) + eps)), the sparse gradients of the tables
coalesced (duplicate ids summed) as TF's optimizer sums them. Step i trains on batch
i % NUM_BATCHES; the loss reported is the one of the last check step, before its update,
and table_l1, wide_l1 how far the check steps moved the tables (see wide_deep_bench_tf.py).
"""
import argparse
import time

import numpy as np
import torch
from torch import nn

# wide_deep_bench_tf.py's constants (keep them in step).
BATCH, FEATURES, DIM = 512, 26, 64
HIDDEN = (256, 128)
LEARNING_RATE = 0.05
INITIAL_ACCUMULATOR = 0.1
EPS = 1e-10
NUM_BATCHES = 20
CHECK_STEPS, TIMED_STEPS = 5, 30
DENSE_LAYERS = ("dense", "dense_1", "dense_2")


class WideDeep(nn.Module):
    def __init__(self, rows, embeddings, dense):
        super().__init__()
        self.deep_table = nn.EmbeddingBag(rows, DIM, mode="sum", sparse=True)
        self.wide_table = nn.EmbeddingBag(rows, 1, mode="sum", sparse=True)
        self.wide_bias = nn.Parameter(torch.zeros(1))
        sizes = (FEATURES * DIM,) + HIDDEN + (1,)
        self.layers = nn.ModuleList(nn.Linear(sizes[i], sizes[i + 1]) for i in range(len(sizes) - 1))
        with torch.no_grad():
            self.deep_table.weight.copy_(torch.from_numpy(embeddings))
            self.wide_table.weight.zero_()
            for layer, (kernel, bias) in zip(self.layers, dense):
                layer.weight.copy_(torch.from_numpy(np.ascontiguousarray(kernel.T)))
                layer.bias.copy_(torch.from_numpy(bias))

    def forward(self, ids):
        deep = self.deep_table(ids.reshape(BATCH * FEATURES, 1)).reshape(BATCH, FEATURES * DIM)
        for i, layer in enumerate(self.layers):
            deep = layer(deep)
            if i + 1 < len(self.layers):
                deep = torch.relu(deep)
        return deep + self.wide_table(ids) + self.wide_bias


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("rows", type=int)
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    d = args.dir
    ids = torch.from_numpy(np.fromfile(d + "/ids.bin", np.int64).reshape(NUM_BATCHES, BATCH, FEATURES))
    labels = torch.from_numpy(np.fromfile(d + "/labels.bin", np.float32).reshape(NUM_BATCHES, BATCH, 1))
    embeddings = np.fromfile(d + "/embeddings.bin", np.float32).reshape(args.rows, DIM)
    sizes = (FEATURES * DIM,) + HIDDEN + (1,)
    dense = [(np.fromfile("%s/%s_kernel.bin" % (d, name), np.float32).reshape(sizes[i], sizes[i + 1]),
              np.fromfile("%s/%s_bias.bin" % (d, name), np.float32))
             for i, name in enumerate(DENSE_LAYERS)]
    model = WideDeep(args.rows, embeddings, dense)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=LEARNING_RATE,
                                    initial_accumulator_value=INITIAL_ACCUMULATOR, eps=EPS)
    loss_fn = nn.BCEWithLogitsLoss()

    def step(i):
        b = i % NUM_BATCHES
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(ids[b]), labels[b])
        loss.backward()
        optimizer.step()
        return loss

    i = 0
    for _ in range(CHECK_STEPS):
        loss = step(i).item()
        i += 1
    with torch.no_grad():
        table_l1 = (model.deep_table.weight - torch.from_numpy(embeddings)).abs().sum(dtype=torch.float64).item()
        wide_l1 = model.wide_table.weight.abs().sum(dtype=torch.float64).item()
    del embeddings
    times = []
    for _ in range(TIMED_STEPS):
        t = time.perf_counter()
        step(i)
        times.append(time.perf_counter() - t)
        i += 1
    print("%.4f %.7g %.7g %.7g" % (np.median(times) * 1e3, loss, table_l1, wide_l1), flush=True)


if __name__ == "__main__":
    main()
