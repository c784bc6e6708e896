"""TF's side of tests/tf/saved_model_test.cc, in one process.

--flowtrain DIR: the SavedModel flowtrain wrote. TF loads it with tf.compat.v1.saved_model.load
and runs every signature; `saved_model_cli show --all` prints it into OUT/cli_flowtrain.txt.
--out OUT: TF writes two SavedModels there, OUT/tf1 (TF1's Builder: a ref and a resource
variable, an asset read by the main op, predict and regress signatures) and OUT/tf2
(tf.saved_model.save of a tf.Module with a variable and a tf.function input_signature), loads
each back and runs its signatures.
--fixtures DIR: every SavedModel under DIR (a folder with saved_model.pb) is run too.

For every model run, OUT/models.txt has a line "<model> <dir> <tags,...> <signature>...", and the
V2 checkpoint OUT/results holds, per signature, the inputs TF fed ("<model>/<sig>/in/<key>") and
the outputs TF computed ("<model>/<sig>/out/<key>"); flowtrain loads each model, feeds the same
inputs and compares its outputs.
"""
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from interop_common import fail, run, parse_flags

v1 = tf.compat.v1
OFFSET = np.array([0.5, -1.5, 2.0], dtype=np.float32)


def serialized_examples(features, batch):
    """`batch` tf.Examples; each feature name maps to its float width."""
    out = []
    for i in range(batch):
        feature = {}
        for name, width in sorted(features.items()):
            values = [0.5 * i + 0.25 * j - 1.0 for j in range(width)]
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        out.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return np.array(out, dtype=object)


def input_value(info, features):
    """A value for the signature input `info` (a TensorInfo): batch 3 where a dimension is
    unknown, strings as serialized tf.Examples with `features`."""
    if info.dtype == tf.string.as_datatype_enum:
        return serialized_examples(features, 3)
    if info.tensor_shape.unknown_rank:
        shape = [3]
    else:
        shape = [3 if d.size < 0 else d.size for d in info.tensor_shape.dim]
    n = int(np.prod(shape))
    dtype = tf.dtypes.as_dtype(info.dtype).as_numpy_dtype
    return (np.arange(n, dtype=np.float64) * 0.75 - 1.25).astype(dtype).reshape(shape)


def run_signatures(name, export_dir, tags, features, results, models):
    """Loads `export_dir` in a TF1 session, runs each of its signatures and records them."""
    with tf.Graph().as_default(), v1.Session() as sess:
        meta = v1.saved_model.load(sess, tags, export_dir)
        keys = sorted(k for k in meta.signature_def if not k.startswith("__"))
        for key in keys:
            sig = meta.signature_def[key]
            feeds = {}
            for in_key, info in sorted(sig.inputs.items()):
                value = input_value(info, features)
                feeds[info.name] = value
                results[f"{name}/{key}/in/{in_key}"] = value
            out_keys = sorted(sig.outputs)
            values = sess.run([sig.outputs[k].name for k in out_keys], feeds)
            for out_key, value in zip(out_keys, values):
                results[f"{name}/{key}/out/{out_key}"] = np.asarray(value)
        models.append(f"{name} {export_dir} {','.join(tags)} {' '.join(keys)}")


def write_tf1(export_dir, scratch):
    """TF1's Builder: x·w + b + offset, offset set by the main op from the asset file."""
    asset_source = os.path.join(scratch, "offset.tfrecord")
    with tf.io.TFRecordWriter(asset_source) as writer:
        writer.write(OFFSET.tobytes())
    with tf.Graph().as_default(), v1.Session() as sess:
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        w = v1.Variable(np.array([[1, -2, 0.5], [0.25, 3, -1], [2, 0.5, -0.75]], dtype=np.float32), name="w",
                        use_resource=False)
        b = v1.get_variable("b", initializer=tf.constant([0.1, 0.2, -0.3]), use_resource=True)
        offset = v1.get_variable("offset", initializer=tf.zeros([3]), trainable=False, use_resource=True)
        y = tf.identity(tf.matmul(x, w) + b + offset, name="y")
        examples = v1.placeholder(tf.string, [None], name="tf_example")
        parsed = v1.parse_example(examples, {"x": v1.FixedLenFeature([3], tf.float32)})
        predictions = tf.reduce_sum(tf.matmul(parsed["x"], w) + b + offset, axis=1, name="predictions")
        asset = tf.constant(asset_source, name="asset_path")
        v1.add_to_collection(v1.GraphKeys.ASSET_FILEPATHS, asset)
        it = v1.data.make_initializable_iterator(tf.data.TFRecordDataset(asset))
        with tf.control_dependencies([it.initializer]):
            record = it.get_next()
        main_op = tf.group(offset.assign(tf.reshape(tf.io.decode_raw(record, tf.float32), [3])), name="main_op")
        sess.run(v1.global_variables_initializer())
        builder = v1.saved_model.Builder(export_dir)
        builder.add_meta_graph_and_variables(
            sess, [tf.saved_model.SERVING],
            signature_def_map={
                "serving_default": v1.saved_model.predict_signature_def({"x": x}, {"y": y}),
                "regress": v1.saved_model.regression_signature_def(examples, predictions),
            },
            assets_collection=v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS),
            main_op=main_op)
        builder.save()
    os.remove(asset_source)  # the SavedModel must use its own copy


class Affine(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable([[1.0, -2.0], [0.5, 3.0]], name="w")
        self.b = tf.Variable([0.25, -0.5], name="b")

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
    def __call__(self, x):
        return {"y": tf.matmul(x, self.w) + self.b}

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
    def squared(self, x):
        return {"norm": tf.reduce_sum(tf.square(self.__call__(x)["y"]), axis=1)}


def write_tf2(export_dir):
    module = Affine()
    module.w.assign([[1.5, -2.0], [0.5, 2.5]])  # not the initial value: it must be restored
    tf.saved_model.save(module, export_dir,
                        signatures={"serving_default": module.__call__, "squared": module.squared})


def main():
    flags = parse_flags("flowtrain", "out", optional=("fixtures",))
    os.makedirs(flags.out, exist_ok=True)
    results, models = {}, []

    run_signatures("flowtrain", flags.flowtrain, ["serve"], {"x": 2}, results, models)
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    shown = subprocess.run([cli, "show", "--all", "--dir", flags.flowtrain], capture_output=True, text=True)
    if shown.returncode != 0:
        fail(f"saved_model_cli show --all --dir {flags.flowtrain} failed:\n{shown.stderr}")
    with open(os.path.join(flags.out, "cli_flowtrain.txt"), "w") as f:
        f.write(shown.stdout)

    write_tf1(os.path.join(flags.out, "tf1"), flags.out)
    run_signatures("tf1", os.path.join(flags.out, "tf1"), ["serve"], {"x": 3}, results, models)
    write_tf2(os.path.join(flags.out, "tf2"))
    run_signatures("tf2", os.path.join(flags.out, "tf2"), ["serve"], {}, results, models)

    if flags.fixtures and os.path.isdir(flags.fixtures):
        for entry in sorted(os.listdir(flags.fixtures)):
            path = os.path.join(flags.fixtures, entry)
            if os.path.isfile(os.path.join(path, "saved_model.pb")):
                run_signatures("fixture_" + entry, path, ["serve"], {"x": 1, "x2": 1}, results, models)

    names = sorted(results)
    tf.raw_ops.SaveV2(prefix=os.path.join(flags.out, "results"), tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(results[n]) for n in names])
    with open(os.path.join(flags.out, "models.txt"), "w") as f:
        f.write("\n".join(models) + "\n")


if __name__ == "__main__":
    run(main)
