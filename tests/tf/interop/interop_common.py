"""Helpers shared by the interop checkers: their command line, reading expected.json (as the C++
test writes it), checking a checkpoint against it, and failing with a message that names the
mismatch."""
import argparse
import faulthandler
import json
import sys

import numpy as np


class Mismatch(Exception):
    pass


def fail(message):
    raise Mismatch(message)


# Longest a checker may take: past it, the stacks are printed and the process exits (even from
# inside TF's C++ code), so a test never hangs.
CHECKER_TIMEOUT_SECS = 300


def run(main):
    """Runs main(); any Mismatch (or other error) becomes a non-zero exit with its message."""
    faulthandler.dump_traceback_later(CHECKER_TIMEOUT_SECS, exit=True)
    try:
        main()
    except Mismatch as e:
        print("MISMATCH: " + str(e), file=sys.stderr)
        sys.exit(1)
    print("OK")


def parse_flags(*flags, optional=()):
    """The checker's command line: each of `flags` ("prefix", ...) is a required --flag, each of
    `optional` a --flag that defaults to ""."""
    parser = argparse.ArgumentParser()
    for flag in flags:
        parser.add_argument("--" + flag, required=True)
    for flag in optional:
        parser.add_argument("--" + flag, default="")
    return parser.parse_args()


def _number(v):
    if isinstance(v, str):
        return float(v)  # "nan", "inf", "-inf"
    return v


def numpy_dtype(name):
    if name == "bfloat16":
        import tensorflow as tf
        return tf.bfloat16.as_numpy_dtype
    if name == "string":
        return object
    return np.dtype(name)


def array_from_json(entry):
    """The numpy array of a {"dtype", "shape", "values"} entry (strings are hex)."""
    dtype = entry["dtype"]
    shape = tuple(entry["shape"])
    if dtype == "string":
        values = [bytes.fromhex(v) for v in entry["values"]]
        return np.array(values, dtype=object).reshape(shape)
    values = [_number(v) for v in entry["values"]]
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        return np.array(values, dtype=np.float64).astype(numpy_dtype(dtype)).reshape(shape)
    if dtype == "bool":
        return np.array(values, dtype=np.int64).astype(bool).reshape(shape)
    return np.array(values, dtype=numpy_dtype(dtype)).reshape(shape)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def load_tensors(path):
    return {name: array_from_json(entry) for name, entry in load_json(path).items()}


def exactly_equal(a, b):
    """Same dtype, shape and bits (so -0.0 != 0.0 and NaNs with equal payloads match)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype == object or b.dtype == object:
        return a.dtype == b.dtype and all(x == y for x, y in zip(a.ravel(), b.ravel()))
    if a.dtype != b.dtype:
        return False
    if a.dtype == bool:
        return bool(np.array_equal(a, b))
    return a.tobytes() == b.tobytes()


def expect_exact(what, actual, expected):
    if not exactly_equal(actual, expected):
        fail("%s: TF has %r (dtype %s, shape %s), flowtrain wrote %r (dtype %s, shape %s)" % (
            what, actual, np.asarray(actual).dtype, np.shape(actual), expected,
            np.asarray(expected).dtype, np.shape(expected)))


def expect_close(what, actual, expected, rtol, atol=0.0):
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        fail("%s: TF's shape %s, flowtrain's %s" % (what, actual.shape, expected.shape))
    if not np.allclose(actual, expected, rtol=rtol, atol=atol):
        worst = np.max(np.abs(actual - expected) / np.maximum(np.abs(expected), 1e-30))
        fail("%s: TF has %r, flowtrain %r (largest relative difference %.3g > %g)" % (
            what, actual, expected, worst, rtol))


def tf_dtype(value):
    """The TF dtype of an array of load_tensors (strings are numpy objects)."""
    import tensorflow as tf
    return tf.string if value.dtype == object else tf.as_dtype(value.dtype)


def expect_checkpoint_holds(prefix, expected, extra=()):
    """tf.train.load_checkpoint(prefix) lists exactly the keys of `expected` ({name: array}), each
    with the array's dtype, shape and exact bits, and those of `extra` as string scalars;
    returns the reader."""
    import tensorflow as tf
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    if set(shapes) != set(expected) | set(extra):
        fail("checkpoint keys %s, flowtrain's variables %s and %s" % (sorted(shapes), sorted(expected),
                                                                     sorted(extra)))
    for name in extra:
        if dtypes[name] != tf.string or list(shapes[name]) != [] or not reader.get_tensor(name):
            fail("%s: TF reads %s %s, not a string scalar" % (name, dtypes[name].name, shapes[name]))
    for name, value in expected.items():
        want = tf_dtype(value)
        if dtypes[name] != want:
            fail("%s: TF reads dtype %s, flowtrain wrote %s" % (name, dtypes[name].name, want.name))
        if list(shapes[name]) != list(value.shape):
            fail("%s: TF reads shape %s, flowtrain wrote %s" % (name, shapes[name], value.shape))
        expect_exact("tensor " + name, reader.get_tensor(name), value)
    return reader


def expect_saver_restores(prefix, variables, expected):
    """A tf.compat.v1.train.Saver of the default graph restores `prefix` in a new session; then
    each of `variables` ({name: variable}) holds expected[name] exactly."""
    import tensorflow as tf
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session() as sess:
        saver.restore(sess, prefix)
        for name, v in variables.items():
            expect_exact("restored " + name, sess.run(v), expected[name])
