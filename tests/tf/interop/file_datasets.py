"""Writes text and fixed-length-record files and what TF 2.21's tf.data.TextLineDataset and
tf.data.FixedLengthRecordDataset read from them, for file_datasets_test.cc to read the same
files with flowtrain.

OUT/cases.txt has one line per case: "<case> <text|fixed> <compression or -> <header_bytes>
<record_bytes> <footer_bytes> <file>..."; the V2 checkpoint OUT/results holds "<case>", the
elements TF read (a string vector). OUT/errors.txt has one line per bad case (same fields),
then a line with TF's message.

  file_datasets.py --out DIR
"""
import gzip
import os
import zlib

import numpy as np
import tensorflow as tf

import interop_common as ic


def write(path, data, compression=""):
    if compression == "GZIP":
        data = gzip.compress(data)
    elif compression == "ZLIB":
        data = zlib.compress(data)
    with open(path, "wb") as f:
        f.write(data)
    return path


def main():
    flags = ic.parse_flags("out")
    os.makedirs(flags.out, exist_ok=True)
    out = flags.out
    text = b"".join(b"line %d\r\n" % i if i % 3 else b"l\ri\rne %d\n" % i for i in range(40)) + b"\nno newline"
    body = b"".join(b"rec%03d" % i for i in range(25))
    cases = [
        ("text_plain", "text", "", 0, 0, 0, [write(os.path.join(out, "a.txt"), text),
                                             write(os.path.join(out, "empty.txt"), b""),
                                             write(os.path.join(out, "b.txt"), b"x\n\n")]),
        ("text_gzip", "text", "GZIP", 0, 0, 0, [write(os.path.join(out, "a.txt.gz"), text, "GZIP")]),
        ("text_zlib", "text", "ZLIB", 0, 0, 0, [write(os.path.join(out, "a.txt.z"), text, "ZLIB")]),
        ("fixed_plain", "fixed", "", 5, 6, 3, [write(os.path.join(out, "a.bin"), b"HEADR" + body + b"FTR"),
                                               write(os.path.join(out, "b.bin"), b"HEADRFTR")]),
        ("fixed_gzip", "fixed", "GZIP", 5, 6, 3, [write(os.path.join(out, "a.bin.gz"), b"HEADR" + body + b"FTR",
                                                        "GZIP")]),
        ("fixed_zlib", "fixed", "ZLIB", 0, 6, 0, [write(os.path.join(out, "a.bin.z"), body, "ZLIB")]),
    ]
    bad = [("fixed_bad", "fixed", "", 5, 4, 3, [write(os.path.join(out, "bad.bin"), b"HEADR" + body + b"FTR")])]
    results, lines, error_lines = {}, [], []

    def dataset(kind, compression, header, record, footer, files):
        if kind == "text":
            return tf.data.TextLineDataset(files, compression_type=compression)
        return tf.data.FixedLengthRecordDataset(files, record, header_bytes=header, footer_bytes=footer,
                                                compression_type=compression)

    def line(case):
        name, kind, compression, header, record, footer, files = case
        return " ".join([name, kind, compression or "-", str(header), str(record), str(footer)] + files)

    for case in cases:
        elements = list(dataset(*case[1:]).as_numpy_iterator())
        results[case[0]] = np.array(elements, dtype=object)
        lines.append(line(case))
    for case in bad:
        try:
            list(dataset(*case[1:]).as_numpy_iterator())
            ic.fail("TF read " + case[0])
        except tf.errors.InvalidArgumentError as e:
            message = [m for m in e.message.split("\n") if "Excluding the header" in m][0].strip()
            message = message[message.index("Excluding"):].split(" [Op:")[0]
        error_lines += [line(case), message]
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "errors.txt"), "w") as f:
        f.write("\n".join(error_lines) + "\n")
    names = sorted(results)
    tf.raw_ops.SaveV2(prefix=os.path.join(out, "results"), tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(results[n], dtype=tf.string) for n in names])


if __name__ == "__main__":
    ic.run(main)
