"""Helpers shared by the interop checkers: reading expected.json (as the C++ test writes it)
and failing with a message that names the mismatch."""
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
