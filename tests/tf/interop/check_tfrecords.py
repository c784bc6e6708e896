"""TFRecord files of tf.train.Examples flowtrain wrote, uncompressed, ZLIB and GZIP:
tf.data.TFRecordDataset must yield flowtrain's serialized records byte for byte, and
tf.io.parse_example (FixedLenFeature for scalar and fixed-length features, VarLenFeature for the
others) must give the values flowtrain put into each Example.

  check_tfrecords.py --expected DIR/expected.json
"""

import numpy as np
import tensorflow as tf

import interop_common as ic

FEATURES = {
    "label": tf.io.FixedLenFeature([], tf.int64),
    "weights": tf.io.FixedLenFeature([3], tf.float32),
    "name": tf.io.FixedLenFeature([], tf.string),
    "tokens": tf.io.VarLenFeature(tf.int64),
    "scores": tf.io.VarLenFeature(tf.float32),
    "blobs": tf.io.VarLenFeature(tf.string),
}
DTYPES = {"label": np.int64, "weights": np.float32, "tokens": np.int64, "scores": np.float32}


def expected_values(example, key):
    if key in ("name", "blobs"):
        return [bytes.fromhex(v) for v in example[key]]
    return np.array(example[key], dtype=np.float64).astype(DTYPES[key])


def main():
    args = ic.parse_flags("expected")
    expected = ic.load_json(args.expected)
    examples = expected["examples"]
    for f in expected["files"]:
        where = "%s (compression %r)" % (f["path"], f["compression"])
        dataset = tf.data.TFRecordDataset(f["path"], compression_type=f["compression"])
        records = [r.numpy() for r in dataset]
        if len(records) != len(examples):
            ic.fail("%s: TF reads %d records, flowtrain wrote %d" % (where, len(records), len(examples)))
        for i, (record, example) in enumerate(zip(records, examples)):
            if record != bytes.fromhex(example["serialized"]):
                ic.fail("%s: record %d differs from the bytes flowtrain wrote" % (where, i))
        batch = next(iter(dataset.batch(len(examples)).map(lambda s: tf.io.parse_example(s, FEATURES))))
        for i, example in enumerate(examples):
            for key in FEATURES:
                value = batch[key]
                if isinstance(value, tf.SparseTensor):
                    rows = value.indices.numpy()[:, 0]
                    got = value.values.numpy()[rows == i]
                else:
                    got = value.numpy()[i]
                want = expected_values(example, key)
                if key in ("name", "blobs"):
                    got = list(np.atleast_1d(got))
                    if got != want:
                        ic.fail("%s: example %d feature %s: TF parses %r, flowtrain wrote %r" % (where, i, key, got, want))
                else:
                    ic.expect_exact("%s: example %d feature %s" % (where, i, key),
                                    np.atleast_1d(got).astype(want.dtype), np.atleast_1d(want))
        print("%s: %d examples parsed equal" % (where, len(records)))


if __name__ == "__main__":
    ic.run(main)
