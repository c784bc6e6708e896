"""Partitioned variables between TF and flowtrain (driven by partitioned_variables_test.cc).

write:   TF1 saves "w" [10, 4] in fixed_size_partitioner(3) parts and "m" [7, 5] in
         min_max_variable_partitioner(4, min_slice_size=48) parts (3 of them), with known values.
restore: TF restores flowtrain's checkpoint --prefix into those partitionings and into none, and
         finds the values exact; tf.train.list_variables lists the same keys and shapes for it
         as for TF's own checkpoint --tf_prefix.
"""
import os

import numpy as np
import tensorflow.compat.v1 as v1

import interop_common

v1.disable_v2_behavior()

# The values both sides put in the variables: exact in float32.
W = (np.arange(40, dtype=np.float32) * 0.5).reshape(10, 4)
M = (np.arange(35, dtype=np.float32) + 100.0).reshape(7, 5)


def build(partitioned):
    """w and m as full tensors, partitioned as TF's test model or not at all."""
    w = v1.get_variable("w", [10, 4], initializer=v1.zeros_initializer(),
                        partitioner=v1.fixed_size_partitioner(3) if partitioned else None)
    m = v1.get_variable("m", [7, 5], initializer=v1.zeros_initializer(),
                        partitioner=v1.min_max_variable_partitioner(4, min_slice_size=48)
                        if partitioned else None)
    return w, m


def write(args):
    with v1.Graph().as_default(), v1.Session() as sess:
        w, m = build(partitioned=True)
        if len(list(m)) != 3:
            interop_common.fail("min_max_variable_partitioner gave %d parts, the test expects 3" % len(list(m)))
        sess.run(v1.global_variables_initializer())
        for variable, value in ((w, W), (m, M)):
            for part in variable:
                info = part._save_slice_info
                rows = slice(info.var_offset[0], info.var_offset[0] + info.var_shape[0])
                sess.run(part.assign(value[rows]))
        os.makedirs(os.path.dirname(args.tf_prefix), exist_ok=True)
        v1.train.Saver().save(sess, args.tf_prefix, write_meta_graph=False)


def restore(args):
    for partitioned in (True, False):
        with v1.Graph().as_default(), v1.Session() as sess:
            w, m = build(partitioned)
            v1.train.Saver().restore(sess, args.prefix)
            full = [v.as_tensor() if partitioned else v for v in (w, m)]
            for name, got, want in zip(("w", "m"), sess.run(full), (W, M)):
                if not np.array_equal(got, want):
                    interop_common.fail("%s restored by TF (%s) differs from flowtrain's:\n%s" %
                                        (name, "partitioned" if partitioned else "unpartitioned", got))
    ours = v1.train.list_variables(args.prefix)
    theirs = v1.train.list_variables(args.tf_prefix)
    if ours != theirs:
        interop_common.fail("list_variables: flowtrain's checkpoint %s, TF's %s" % (ours, theirs))
    print("list_variables:", ours)


def main():
    args = interop_common.parse_flags("mode", "tf_prefix", optional=("prefix",))
    {"write": write, "restore": restore}[args.mode](args)


if __name__ == "__main__":
    interop_common.run(main)
