"""TF's side of csv_pipeline_bench: TextLineDataset -> map(decode_csv) -> batch(256) over the
file the C++ driver wrote, iterated to the end in eager mode (tf.data's fastest way to drain a
pipeline from Python). Prints one line per configuration, "<seconds> <elements/s> <config>",
each the best of 3 passes after a warm-up pass.

  python3 csv_pipeline_bench_tf.py FILE
"""
import sys
import time

import tensorflow as tf

DEFAULTS = [[0.0], [0.0], [0.0], [0.0], [0], [0], [tf.constant(0, tf.int64)], [""]]
BATCH = 256


def pipeline(path, parallel):
    ds = tf.data.TextLineDataset([path])
    ds = ds.map(lambda line: tf.io.decode_csv(line, DEFAULTS), num_parallel_calls=parallel)
    return ds.batch(BATCH)


def main():
    path = sys.argv[1]
    lines = sum(1 for _ in open(path, "rb"))
    for label, parallel in (("map_parallel=1", None), ("map_parallel=autotune", tf.data.AUTOTUNE)):
        ds = pipeline(path, parallel)
        best = None
        for i in range(4):
            start = time.perf_counter()
            for _ in ds:
                pass
            seconds = time.perf_counter() - start
            if i > 0 and (best is None or seconds < best):
                best = seconds
        print("%.4f %.1f %s" % (best, lines / best, label), flush=True)


if __name__ == "__main__":
    main()
