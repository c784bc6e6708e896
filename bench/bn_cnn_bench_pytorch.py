#!/usr/bin/env python3
"""The PyTorch side of bn_cnn_bench: the same batch-normalised CNN training step in torch.nn.

    bn_cnn_bench_pytorch.py DIR --threads N [--channels-last]   # a line "<ms_per_step> <loss>"

DIR is what bn_cnn_bench_tf.py wrote. The layers are TF's: nn.Conv2d(bias=False) ->
nn.BatchNorm2d -> relu -> max_pool2d(2) twice, then dense 128 relu and dense 10, from TF's
initial weights (conv kernels HWIO [3, 3, in, out] become OIHW, dense kernels [in, out] become
[out, in]). Batch norm takes TF's defaults: epsilon 0.001 and momentum 0.99, which is
PyTorch's momentum 0.01 (the weight of the new batch statistic); in training mode both
normalise with the batch's own (biased) variance. TF flattens NHWC activations, so the
activations are permuted to NHWC before the flatten and the first dense kernel is used as TF
stores it. Adam with TF1's defaults (betas 0.9/0.999, epsilon 1e-8). With --channels-last the
images and the model are in torch.channels_last memory format. Step i trains on batch
i % NUM_BATCHES; the loss reported is that of the last of CHECK_STEPS steps, computed before
its update, then TIMED_STEPS more are timed.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# bn_cnn_bench_tf.py's constants (keep them in step).
BATCH, SIZE, CLASSES = 64, 28, 10
FILTERS, HIDDEN = (32, 64), 128
LEARNING_RATE = 1e-3
ADAM_EPSILON = 1e-8
BN_EPSILON, BN_MOMENTUM = 1e-3, 0.01  # TF's epsilon 0.001, momentum 0.99
NUM_BATCHES = 8
CHECK_STEPS, TIMED_STEPS = 5, 30


class Model(nn.Module):
    def __init__(self, weights):
        super().__init__()
        convs, norms = [], []
        channels = 1
        for i, filters in enumerate(FILTERS):
            conv = nn.Conv2d(channels, filters, 3, padding=1, bias=False)
            hwio = weights["conv%d_kernel" % (i + 1)].reshape(3, 3, channels, filters)
            with torch.no_grad():
                conv.weight.copy_(torch.from_numpy(np.ascontiguousarray(hwio.transpose(3, 2, 0, 1))))
            convs.append(conv)
            norms.append(nn.BatchNorm2d(filters, eps=BN_EPSILON, momentum=BN_MOMENTUM))
            channels = filters
        self.convs, self.norms = nn.ModuleList(convs), nn.ModuleList(norms)
        flat = (SIZE // 4) * (SIZE // 4) * channels
        self.dense = nn.Linear(flat, HIDDEN)
        self.dense_1 = nn.Linear(HIDDEN, CLASSES)
        with torch.no_grad():
            for layer, name, fan_in, fan_out in ((self.dense, "dense_kernel", flat, HIDDEN),
                                                 (self.dense_1, "dense_1_kernel", HIDDEN, CLASSES)):
                kernel = weights[name].reshape(fan_in, fan_out)
                layer.weight.copy_(torch.from_numpy(np.ascontiguousarray(kernel.T)))
                layer.bias.zero_()

    def forward(self, x):
        for conv, norm in zip(self.convs, self.norms):
            x = F.max_pool2d(F.relu(norm(conv(x))), 2)
        x = torch.flatten(x.permute(0, 2, 3, 1), 1)  # TF's NHWC flatten order
        return self.dense_1(F.relu(self.dense(x)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--channels-last", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    images = np.fromfile(args.dir + "/images.bin", np.float32).reshape(NUM_BATCHES, BATCH, SIZE, SIZE, 1)
    labels = np.fromfile(args.dir + "/labels.bin", np.int64).reshape(NUM_BATCHES, BATCH)
    batches = [(torch.from_numpy(np.ascontiguousarray(images[b].transpose(0, 3, 1, 2)))
                .contiguous(memory_format=memory_format), torch.from_numpy(labels[b]))
               for b in range(NUM_BATCHES)]
    weights = {name: np.fromfile("%s/%s.bin" % (args.dir, name), np.float32)
               for name in ("conv1_kernel", "conv2_kernel", "dense_kernel", "dense_1_kernel")}
    model = Model(weights).to(memory_format=memory_format)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE, eps=ADAM_EPSILON)

    def step(i):
        x, y = batches[i % NUM_BATCHES]
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    for i in range(CHECK_STEPS):
        loss = step(i).item()
    times = []
    for i in range(CHECK_STEPS, CHECK_STEPS + TIMED_STEPS):
        t = time.perf_counter()
        step(i)
        times.append(time.perf_counter() - t)
    print("%.4f %.7g" % (np.median(times) * 1e3, loss), flush=True)


if __name__ == "__main__":
    main()
