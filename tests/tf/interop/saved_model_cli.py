"""TF's side of tests/tf/saved_model_cli_test.cc: TF's saved_model_cli and numpy against
`flowtrain saved-model` and flowtrain's .npy files.

--mode write --out OUT: TF1's Builder (tf.compat.v1) writes the SavedModel OUT/model (resource
variables, a "serving_default" signature x -> y, positive and a "two" signature x, k -> y,
total); numpy writes its inputs OUT/x.npy and OUT/k.npy; `saved_model_cli show --all` prints
the model into OUT/tf_show.txt and `saved_model_cli run ... --outdir OUT/tf_run/<signature>`
runs each signature. numpy also writes OUT/np/*.npy (see NPY_CASES) for flowtrain to read.
--mode compare --a DIR --b DIR: every .npy under DIR a has a twin under DIR b of the same dtype
and shape and allclose values (and DIR b no more files).
--mode check_npy --dir DIR: the .npy files flowtrain wrote into DIR hold NPY_CASES' values.
--mode print_checkpoint --prefix P --out FILE: for each tensor of checkpoint P (sorted by name),
"tensor_name:  <name>" and numpy's str() of the array tf.train.load_checkpoint gives, as TF's
inspect_checkpoint --all_tensors prints values.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from interop_common import fail, run

v1 = tf.compat.v1

# What numpy writes for flowtrain to read, and flowtrain writes for numpy to read.
NPY_CASES = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5,
    "i64": np.array([-3, 0, 2**40], dtype=np.int64),
    "bool": np.array([[True, False], [False, True]]),
    "scalar": np.array(2.5, dtype=np.float64),
    "fortran": np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)),
}

SIGNATURE_INPUTS = {"serving_default": ["x"], "two": ["k", "x"]}


def cli():
    return os.path.join(os.path.dirname(sys.executable), "saved_model_cli")


def write(out):
    model = os.path.join(out, "model")
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        k = v1.placeholder(tf.int64, [None], name="k")
        w = v1.get_variable("w", initializer=np.arange(6, dtype=np.float32).reshape(3, 2) / 10, use_resource=True)
        b = v1.get_variable("b", initializer=np.array([0.5, -0.5], dtype=np.float32), use_resource=True)
        y = tf.identity(tf.matmul(x, w) + b, name="y")
        positive = tf.identity(y > 0, name="positive")
        total = tf.identity(tf.reduce_sum(k) * 2, name="total")
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(model)
            predict = v1.saved_model.predict_signature_def
            builder.add_meta_graph_and_variables(
                sess, ["serve"], signature_def_map={
                    "serving_default": predict({"x": x}, {"y": y, "positive": positive}),
                    "two": predict({"x": x, "k": k}, {"y": y, "total": total})})
            builder.save()

    np.save(os.path.join(out, "x.npy"), np.array([[1, -2, 3], [0.5, 0, -4]], dtype=np.float32))
    np.save(os.path.join(out, "k.npy"), np.array([4, 5, -1], dtype=np.int64))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    shown = subprocess.run([cli(), "show", "--all", "--dir", model], capture_output=True, text=True, env=env)
    if shown.returncode != 0:
        fail(f"saved_model_cli show --all failed:\n{shown.stderr}")
    with open(os.path.join(out, "tf_show.txt"), "w") as f:
        f.write(shown.stdout)
    for signature, keys in SIGNATURE_INPUTS.items():
        inputs = ";".join(f"{key}={os.path.join(out, key + '.npy')}" for key in keys)
        ran = subprocess.run([cli(), "run", "--dir", model, "--tag_set", "serve", "--signature_def", signature,
                              "--inputs", inputs, "--outdir", os.path.join(out, "tf_run", signature)],
                             capture_output=True, text=True, env=env)
        if ran.returncode != 0:
            fail(f"saved_model_cli run --signature_def {signature} failed:\n{ran.stderr}")

    os.makedirs(os.path.join(out, "np"), exist_ok=True)
    for name, value in NPY_CASES.items():
        np.save(os.path.join(out, "np", name + ".npy"), value)


def npy_files(root):
    found = set()
    for dirpath, _, files in os.walk(root):
        found.update(os.path.relpath(os.path.join(dirpath, f), root) for f in files if f.endswith(".npy"))
    return found


def compare(a, b):
    a_files, b_files = npy_files(a), npy_files(b)
    if not a_files or a_files != b_files:
        fail(f"{a} holds {sorted(a_files)}, {b} holds {sorted(b_files)}")
    for name in sorted(a_files):
        x, y = np.load(os.path.join(a, name)), np.load(os.path.join(b, name))
        if x.dtype != y.dtype or x.shape != y.shape or not np.allclose(x, y):
            fail(f"{name}: {x.dtype} {x.shape} {x} in {a}, {y.dtype} {y.shape} {y} in {b}")
        print(f"{name}: {x.dtype} {x.shape} same")


def check_npy(directory):
    for name, expected in NPY_CASES.items():
        got = np.load(os.path.join(directory, name + ".npy"))
        if got.dtype != expected.dtype or got.shape != expected.shape or not np.array_equal(got, expected):
            fail(f"{name}.npy: numpy loads {got.dtype} {got.shape} {got}, expected {expected.dtype} "
                 f"{expected.shape} {expected}")


def print_checkpoint(prefix, out):
    reader = tf.train.load_checkpoint(prefix)
    with open(out, "w") as f:
        for name in sorted(reader.get_variable_to_shape_map()):
            f.write(f"tensor_name:  {name}\n{reader.get_tensor(name)}\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True, choices=["write", "compare", "check_npy", "print_checkpoint"])
    parser.add_argument("--out", default="")
    parser.add_argument("--a", default="")
    parser.add_argument("--b", default="")
    parser.add_argument("--dir", default="")
    parser.add_argument("--prefix", default="")
    flags = parser.parse_args()
    if flags.mode == "write":
        write(flags.out)
    elif flags.mode == "compare":
        compare(flags.a, flags.b)
    elif flags.mode == "check_npy":
        check_npy(flags.dir)
    else:
        print_checkpoint(flags.prefix, flags.out)


if __name__ == "__main__":
    v1.disable_eager_execution()
    run(main)
