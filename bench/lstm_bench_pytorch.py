#!/usr/bin/env python3
"""The PyTorch side of lstm_bench: the same LSTM training step in nn.LSTM.

    lstm_bench_pytorch.py DIR --threads N    # a line "<ms_per_step> <loss>"

DIR is what lstm_bench_tf.py wrote. The weights are TF's initial ones: its kernel
[inputs + units, 4 * units] (gates i, j, f, o) becomes weight_ih/weight_hh (gates i, f, g, o),
TF's forget_bias of 1 goes into bias_ih's f part and bias_hh stays zero and untrained, so
the one trained bias moves as TF's does. Loss, learning rate and step counts are TF's.
"""
import argparse
import time

import numpy as np
import torch
from torch import nn

BATCH, STEPS, INPUTS, UNITS = 32, 50, 128, 128
LEARNING_RATE = 0.5
CHECK_STEPS, TIMED_STEPS = 5, 30


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    x = torch.from_numpy(np.fromfile(args.dir + "/x.bin", np.float32).reshape(BATCH, STEPS, INPUTS))
    y = torch.from_numpy(np.fromfile(args.dir + "/y.bin", np.float32).reshape(BATCH, STEPS, UNITS))
    kernel = np.fromfile(args.dir + "/kernel.bin", np.float32).reshape(INPUTS + UNITS, 4 * UNITS)
    i, j, f, o = np.split(kernel, 4, axis=1)
    torch_order = np.concatenate([i, f, j, o], axis=1)  # [inputs + units, 4 * units]
    lstm = nn.LSTM(INPUTS, UNITS, batch_first=True)
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(torch.from_numpy(np.ascontiguousarray(torch_order[:INPUTS].T)))
        lstm.weight_hh_l0.copy_(torch.from_numpy(np.ascontiguousarray(torch_order[INPUTS:].T)))
        lstm.bias_ih_l0.zero_()
        lstm.bias_ih_l0[UNITS:2 * UNITS] = 1.0
        lstm.bias_hh_l0.zero_()
    lstm.bias_hh_l0.requires_grad_(False)
    optimizer = torch.optim.SGD([p for p in lstm.parameters() if p.requires_grad], lr=LEARNING_RATE)

    def step():
        optimizer.zero_grad(set_to_none=True)
        outputs, _ = lstm(x)
        loss = torch.mean(torch.square(outputs - y))
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(CHECK_STEPS):
        loss = step().item()
    times = []
    for _ in range(TIMED_STEPS):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    print("%.4f %.7g" % (np.median(times) * 1e3, loss), flush=True)


if __name__ == "__main__":
    main()
