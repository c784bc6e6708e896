"""Writes the TensorFlow corpus that flowtrain's conformance test runs (tests/tf/conformance_test.cc).

Usage: generate.py --out DIR [--only MODEL[,MODEL...]]

Every model is built by real TensorFlow in TF1 graph mode (tf.compat.v1 with v2 behaviour
disabled, ref variables, control flow v1), with fixed seeds, so two runs write the same numbers.
oneDNN's rewrites are turned off (TF_ENABLE_ONEDNN_OPTS=0) so that TF's arithmetic is its plain
Eigen kernels'.

Layout: DIR/<model>/ holds
  graph.pb, graph.pbtxt     the GraphDef (binary and text format)
  model.meta, model.pbtxt   the MetaGraphDef with TF's SaverDef and collections (binary, text)
  ckpt/model.ckpt.*         a V2 checkpoint of every global variable at the start (TF's Saver)
  data.index, data.data-*   a tensor bundle (written by SaveV2) of the values below
  manifest.txt              what to do with them, one directive per line

manifest.txt: lines of whitespace-separated words; '#' starts a comment line.
  graph FILE                the binary GraphDef (relative to the model's folder)
  meta FILE                 the binary MetaGraphDef
  checkpoint PREFIX         the checkpoint prefix (relative)
  feed TENSOR               a forward input; its value is data key "input/<i>" (i counts feeds)
  fetch TENSOR              a forward output; TF's value is data key "output/<i>"
  loss TENSOR               the scalar loss
  var OP                    a trainable variable (VariableV2 op name); TF's gradient of the loss
                            w.r.t. it at the start is data key "grad/<i>", its value after
                            training "final/<i>" (i counts var lines)
  train_op OP               the op that runs one training step
  steps N                   training steps; TF's losses are data key "losses" (float32 [N])
  train_feed TENSOR         fed on every step; step s's value is "step/<s>/<j>" (j counts lines)
  note TEXT                 free text, ignored
Model-specific directives (read by that model's test) are documented beside the model below.

The corpus is rewritten from scratch on every run. It takes a few seconds beyond TF's import.
"""

import argparse
import contextlib
import os
import warnings
import shutil
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.protobuf import saved_model_pb2  # noqa: E402

warnings.filterwarnings("ignore")
v1 = tf.compat.v1
v1.disable_v2_behavior()
v1.logging.set_verbosity(v1.logging.ERROR)

STEPS = 20
SEED = 1234


def _write_bundle(prefix, tensors):
    """Writes {key: numpy array or bytes list} into a V2 tensor bundle with TF's own SaveV2."""
    keys = sorted(tensors)
    with tf.Graph().as_default():
        consts = []
        for k in keys:
            v = tensors[k]
            if isinstance(v, tuple):  # (value, dtype) for dtypes numpy cannot name
                consts.append(tf.constant(v[0], dtype=v[1]))
            else:
                consts.append(tf.constant(v))
        op = tf.raw_ops.SaveV2(prefix=prefix, tensor_names=keys,
                               shape_and_slices=[""] * len(keys), tensors=consts)
        with v1.Session() as s:
            s.run(op)


class Model:
    """One model's folder: its graph files, checkpoint, data bundle and manifest."""

    def __init__(self, out, name):
        self.dir = os.path.join(out, name)
        os.makedirs(self.dir)
        self.lines = []
        self.data = {}

    def line(self, *words):
        self.lines.append(" ".join(str(w) for w in words))

    def write_graph(self, graph, saver=None, stem="graph", meta_stem="model"):
        gd = graph.as_graph_def(add_shapes=True)
        tf.io.write_graph(gd, self.dir, stem + ".pb", as_text=False)
        tf.io.write_graph(gd, self.dir, stem + ".pbtxt", as_text=True)
        self.line("graph", stem + ".pb")
        with graph.as_default():
            meta = v1.train.export_meta_graph(
                filename=os.path.join(self.dir, meta_stem + ".meta"),
                saver_def=saver.as_saver_def() if saver else None, graph=graph)
        tf.io.write_graph(meta, self.dir, meta_stem + ".pbtxt", as_text=True)
        self.line("meta", meta_stem + ".meta")

    def write_trained(self, graph, saver, feeds, fetches, loss, variables, train_op, steps,
                      train_feeds):
        """The graph files and the directives of a model trained from ckpt/model.ckpt: its feeds,
        fetches, loss, variables, train op, steps and the tensors fed on every step."""
        self.write_graph(graph, saver)
        self.line("checkpoint", "ckpt/model.ckpt")
        for t in feeds:
            self.line("feed", t.name)
        for t in fetches:
            self.line("fetch", t.name)
        self.line("loss", loss.name)
        for v in variables:
            self.line("var", v.op.name)
        self.line("train_op", train_op.name)
        self.line("steps", steps)
        for t in train_feeds:
            self.line("train_feed", t.name)

    def finish(self):
        if self.data:
            _write_bundle(os.path.join(self.dir, "data"), self.data)
        with open(os.path.join(self.dir, "manifest.txt"), "w") as f:
            f.write("\n".join(self.lines) + "\n")


@contextlib.contextmanager
def _seeded_graph():
    """A new graph, made the default, with the corpus's graph-level seed."""
    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(SEED)
        yield g


def standard_model(out, name, build, batches, note=""):
    """The common recipe: build() -> dict(loss, train_op, feeds, fetches, vars) in a fresh graph;
    batches(step) -> list of feed values (step -1: the forward inputs)."""
    m = Model(out, name)
    if note:
        m.line("note", note)
    with _seeded_graph() as g:
        spec = build()
        feeds, fetches, loss, train_op = spec["feeds"], spec["fetches"], spec["loss"], spec["train_op"]
        tvars = spec.get("vars") or v1.trainable_variables()
        grads = tf.gradients(loss, tvars)
        init = v1.global_variables_initializer()
        local_init = v1.local_variables_initializer()
        saver = v1.train.Saver()
    g.finalize()
    m.write_trained(g, saver, feeds, fetches, loss, tvars, train_op, STEPS, feeds)
    with v1.Session(graph=g) as sess:
        sess.run([init, local_init])
        saver.save(sess, os.path.join(m.dir, "ckpt", "model.ckpt"), write_meta_graph=False)
        inputs = batches(-1)
        fd = dict(zip(feeds, inputs))
        outs = sess.run(fetches, fd)
        gvals = sess.run(grads, fd)
        for i, x in enumerate(inputs):
            m.data["input/%d" % i] = x
        for i, x in enumerate(outs):
            m.data["output/%d" % i] = x
        for i, x in enumerate(gvals):
            m.data["grad/%d" % i] = _dense(x)
        losses = []
        for s in range(STEPS):
            inputs = batches(s)
            for j, x in enumerate(inputs):
                m.data["step/%d/%d" % (s, j)] = x
            l, _ = sess.run([loss, train_op], dict(zip(feeds, inputs)))
            losses.append(l)
        m.data["losses"] = np.asarray(losses, np.float32)
        for i, x in enumerate(sess.run(tvars)):
            m.data["final/%d" % i] = x
    m.finish()


def _dense(g):
    """A gradient value as a dense array (IndexedSlices summed into their dense shape)."""
    if hasattr(g, "indices") and hasattr(g, "dense_shape"):
        d = np.zeros(g.dense_shape, g.values.dtype)
        np.add.at(d, g.indices, g.values)
        return d
    return np.asarray(g)


def _rng(name, step):
    """A generator seeded by the model's tag and the step (-1: the forward inputs)."""
    return np.random.RandomState(sum(map(ord, name)) * 100 + step + 7)


# --- 1. the seed's program -------------------------------------------------------------------
# Directives: "graph2 FILE" (g2's GraphDef); data "output/0" is c1 through TF's
# MonitoredTrainingSession, "output/1" c2 through a plain Session over g2; "cross_graph_error
# TEXT" is what TF said when c2 was run in the monitored session over g1.
def seed_program(out):
    m = Model(out, "seed_program")
    g1 = tf.Graph()
    with g1.as_default():
        c1 = tf.constant(42, name="c1")
    g2 = tf.Graph()
    with g2.as_default():
        c2 = tf.constant(3.14, name="c2")
    m.write_graph(g1)
    tf.io.write_graph(g2.as_graph_def(add_shapes=True), m.dir, "graph2.pb", as_text=False)
    tf.io.write_graph(g2.as_graph_def(add_shapes=True), m.dir, "graph2.pbtxt", as_text=True)
    m.line("graph2", "graph2.pb")
    m.line("fetch", c1.name)
    m.line("fetch2", c2.name)
    with g1.as_default():
        with v1.train.MonitoredTrainingSession() as sess:
            v = sess.run(c1)
            try:
                sess.run(c2)
                err = "none"
            except (ValueError, TypeError) as e:
                err = type(e).__name__ + ": " + str(e).splitlines()[0]
    with v1.Session(graph=g2) as s2:
        v2 = s2.run(c2)
    m.data["output/0"] = np.asarray(v, np.int32)
    m.data["output/1"] = np.asarray(v2, np.float32)
    m.line("cross_graph_error", err)
    m.finish()


# --- 2. logistic regression, plain SGD -------------------------------------------------------
def logistic_regression(out):
    def build():
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        y = v1.placeholder(tf.float32, [None, 1], name="y")
        w = v1.get_variable("w", [4, 1], initializer=v1.random_normal_initializer(stddev=0.5))
        b = v1.get_variable("b", [1], initializer=v1.zeros_initializer())
        logits = tf.add(tf.matmul(x, w), b, name="logits")
        prob = tf.sigmoid(logits, name="prob")
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits),
                              name="loss")
        train = v1.train.GradientDescentOptimizer(0.5).minimize(loss, name="train")
        return dict(feeds=[x, y], fetches=[logits, prob, loss], loss=loss, train_op=train)

    true_w = np.array([[1.5], [-2.0], [0.5], [1.0]], np.float32)

    def batches(step):
        r = _rng("lr", step)
        x = r.randn(16, 4).astype(np.float32)
        y = (x @ true_w + 0.1 * r.randn(16, 1) > 0).astype(np.float32)
        return [x, y]

    standard_model(out, "logistic_regression", build, batches)


# --- 3. MLP, Adam with exponential_decay -----------------------------------------------------
def mlp_adam(out):
    def build():
        x = v1.placeholder(tf.float32, [None, 8], name="x")
        y = v1.placeholder(tf.int64, [None], name="y")
        gs = v1.train.get_or_create_global_step()
        h = v1.layers.dense(x, 16, activation=tf.nn.relu, name="hidden")
        h = v1.layers.dense(h, 16, activation=tf.nn.tanh, name="hidden2")
        logits = v1.layers.dense(h, 3, name="logits")
        loss = v1.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
        lr = v1.train.exponential_decay(0.01, gs, decay_steps=5, decay_rate=0.8, staircase=True)
        train = v1.train.AdamOptimizer(lr).minimize(loss, global_step=gs, name="train")
        probs = tf.nn.softmax(logits, name="probs")
        return dict(feeds=[x, y], fetches=[logits, probs, loss, tf.identity(lr, name="lr")],
                    loss=loss, train_op=train)

    def batches(step):
        r = _rng("mlp", step)
        x = r.randn(32, 8).astype(np.float32)
        y = (np.argmax(x[:, :3] + 0.2 * r.randn(32, 3), axis=1)).astype(np.int64)
        return [x, y]

    standard_model(out, "mlp_adam", build, batches)


# --- 4. CNN: conv, max-pool, dropout, batch_normalization (UPDATE_OPS), Momentum -------------
def cnn(out):
    def build():
        x = v1.placeholder(tf.float32, [None, 8, 8, 1], name="x")
        y = v1.placeholder(tf.int32, [None], name="y")
        h = v1.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu, name="conv")
        h = v1.layers.max_pooling2d(h, 2, 2, name="pool")
        h = v1.layers.batch_normalization(h, training=True, name="bn")
        h = tf.nn.dropout(h, rate=0.25, seed=7, name="dropout")
        h = v1.layers.flatten(h, name="flat")
        logits = v1.layers.dense(h, 3, name="logits")
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
        update_ops = v1.get_collection(v1.GraphKeys.UPDATE_OPS)
        with tf.control_dependencies(update_ops):
            train = v1.train.MomentumOptimizer(0.05, 0.9).minimize(loss, name="train")
        return dict(feeds=[x, y], fetches=[logits, loss], loss=loss, train_op=train)

    def batches(step):
        r = _rng("cnn", step)
        return [r.rand(8, 8, 8, 1).astype(np.float32), r.randint(0, 3, size=8).astype(np.int32)]

    standard_model(out, "cnn", build, batches,
                   note="dropout draws from RandomUniform(seed=1234, seed2=7) on every run")


# --- 5. control flow: tf.cond and tf.while_loop (Switch/Merge/Enter/Exit/NextIteration) ------
def control_flow(out):
    def build():
        x = v1.placeholder(tf.float32, [4], name="x")
        w = v1.get_variable("w", [4], initializer=v1.constant_initializer([0.5, -0.2, 0.1, 0.3]))
        s = tf.reduce_sum(x * w)
        c = tf.cond(s > 0, lambda: tf.square(s), lambda: -s, name="cond")
        i0 = tf.constant(0)

        def body(i, acc):
            return i + 1, acc * 0.9 + w

        _, acc = tf.while_loop(lambda i, acc: i < 3, body, [i0, tf.zeros([4])], name="while")
        loss = tf.add(c, tf.reduce_sum(tf.square(acc)), name="loss")
        train = v1.train.GradientDescentOptimizer(0.05).minimize(loss, name="train")
        return dict(feeds=[x], fetches=[c, acc, loss], loss=loss, train_op=train)

    def batches(step):
        return [_rng("cf", step).randn(4).astype(np.float32)]

    standard_model(out, "control_flow", build, batches)


# --- 6. LSTM through dynamic_rnn -------------------------------------------------------------
def lstm(out):
    def build():
        x = v1.placeholder(tf.float32, [2, 5, 3], name="x")
        y = v1.placeholder(tf.float32, [2, 4], name="y")
        cell = v1.nn.rnn_cell.LSTMCell(4, initializer=v1.glorot_uniform_initializer(seed=3))
        outputs, state = v1.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        last = tf.identity(outputs[:, -1, :], name="last")
        loss = tf.reduce_mean(tf.square(last - y), name="loss")
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        return dict(feeds=[x, y], fetches=[last, loss], loss=loss, train_op=train)

    def batches(step):
        r = _rng("lstm", step)
        return [r.randn(2, 5, 3).astype(np.float32), r.randn(2, 4).astype(np.float32)]

    standard_model(out, "lstm", build, batches)


# --- 7. embeddings: sparse gradients (IndexedSlices) and Adagrad -----------------------------
def embedding_adagrad(out):
    def build():
        ids = v1.placeholder(tf.int32, [None], name="ids")
        y = v1.placeholder(tf.float32, [None], name="y")
        emb = v1.get_variable("emb", [10, 3], initializer=v1.random_uniform_initializer(-1, 1))
        w = v1.get_variable("w", [3], initializer=v1.ones_initializer())
        e = tf.nn.embedding_lookup(emb, ids)
        pred = tf.reduce_sum(e * w, axis=1, name="pred")
        loss = tf.reduce_mean(tf.square(pred - y), name="loss")
        train = v1.train.AdagradOptimizer(0.3).minimize(loss, name="train")
        return dict(feeds=[ids, y], fetches=[pred, loss], loss=loss, train_op=train)

    def batches(step):
        r = _rng("emb", step)
        ids = r.randint(0, 10, size=6).astype(np.int32)
        return [ids, (ids % 3 - 1).astype(np.float32)]

    standard_model(out, "embedding_adagrad", build, batches)


# --- 8. trained by TF's own MonitoredTrainingSession -----------------------------------------
# The graph and checkpoint are those MonitoredTrainingSession's Scaffold made; TF's hooks read
# global_step through a cond (training_util's _get_or_create_global_step_read).
def monitored_training(out):
    m = Model(out, "monitored_training")
    with _seeded_graph() as g:
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        y = v1.placeholder(tf.float32, [None, 1], name="y")
        gs = v1.train.get_or_create_global_step()
        w = v1.get_variable("w", [3, 1], initializer=v1.random_normal_initializer(seed=5))
        pred = tf.matmul(x, w, name="pred")
        loss = tf.reduce_mean(tf.square(pred - y), name="loss")
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs, name="train")
        grads = tf.gradients(loss, [w])
        saver = v1.train.Saver()
        hooks = [v1.train.StopAtStepHook(last_step=STEPS)]
        ckpt_dir = os.path.join(m.dir, "mts")
        losses, data = [], {}
        with v1.train.MonitoredTrainingSession(checkpoint_dir=ckpt_dir, hooks=hooks,
                                               save_checkpoint_steps=None,
                                               save_checkpoint_secs=None,
                                               save_summaries_steps=None,
                                               save_summaries_secs=None,
                                               log_step_count_steps=None) as sess:
            raw = sess._tf_sess()
            saver.save(raw, os.path.join(m.dir, "ckpt", "model.ckpt"), write_meta_graph=False)
            fx = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
            fy = np.array([[1], [0], [2], [1]], np.float32)
            data["input/0"], data["input/1"] = fx, fy
            data["output/0"], data["output/1"] = raw.run([pred, loss], {x: fx, y: fy})
            data["grad/0"] = raw.run(grads, {x: fx, y: fy})[0]
            s = 0
            while not sess.should_stop():
                r = _rng("mts", s)
                bx, by = r.randn(4, 3).astype(np.float32), r.randn(4, 1).astype(np.float32)
                data["step/%d/0" % s], data["step/%d/1" % s] = bx, by
                l, _ = sess.run([loss, train], {x: bx, y: by})
                losses.append(l)
                s += 1
            data["final/0"] = raw.run(w)
            data["final_step"] = np.asarray(raw.run(gs), np.int64)
        data["losses"] = np.asarray(losses, np.float32)
    m.write_trained(g, saver, [x, y], [pred, loss], loss, [w], train, len(losses), [x, y])
    m.line("note", "data final_step: TF's global_step after training")
    m.data = data
    m.finish()


# --- 9. SavedModel (tf.compat.v1.saved_model.Builder) with a serving signature ---------------
# Directives: "saved_model DIR" (relative); "signature KEY"; "sig_input NAME TENSOR" and
# "sig_output NAME TENSOR" (input/<i> and output/<i> in data count these).
def saved_model(out):
    m = Model(out, "saved_model")
    with _seeded_graph() as g:
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        w = v1.get_variable("w", [3, 2], initializer=v1.random_normal_initializer(seed=9))
        b = v1.get_variable("b", [2], initializer=v1.constant_initializer(0.25))
        scores = tf.nn.softmax(tf.matmul(x, w) + b, name="scores")
        with v1.Session(graph=g) as sess:
            sess.run(v1.global_variables_initializer())
            path = os.path.join(m.dir, "saved")
            builder = v1.saved_model.Builder(path)
            sig = v1.saved_model.predict_signature_def(inputs={"x": x}, outputs={"scores": scores})
            builder.add_meta_graph_and_variables(
                sess, [v1.saved_model.tag_constants.SERVING],
                signature_def_map={"serving_default": sig})
            builder.save()
            fx = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
            m.data["input/0"] = fx
            m.data["output/0"] = sess.run(scores, {x: fx})
    m.line("saved_model", "saved")
    m.line("tag", "serve")
    m.line("signature", "serving_default")
    m.line("sig_input", "x", x.name)
    m.line("sig_output", "scores", scores.name)
    m.finish()


# --- 9b. SavedModel of TF2 (tf.saved_model.save of a tf.Module, a tf.function signature) -------
# Directives as in 9; written by saved_model_tf2.py in a process of its own (TF2 behaviour).
def saved_model_tf2(out):
    m = Model(out, "saved_model_tf2")
    fx = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    np.save(os.path.join(m.dir, "input.npy"), fx)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "saved_model_tf2.py")
    subprocess.run([sys.executable, script, "--dir", os.path.join(m.dir, "saved"),
                    "--input", os.path.join(m.dir, "input.npy"),
                    "--output", os.path.join(m.dir, "output.npy")], check=True)
    m.data["input/0"] = fx
    m.data["output/0"] = np.load(os.path.join(m.dir, "output.npy"))
    m.line("saved_model", "saved")
    m.line("tag", "serve")
    m.line("signature", "serving_default")
    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(m.dir, "saved", "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    sig = saved.meta_graphs[0].signature_def["serving_default"]
    m.line("sig_input", "x", sig.inputs["x"].name)
    m.line("sig_output", "scores", sig.outputs["scores"].name)
    m.finish()


# --- 10. every dtype flowtrain supports ------------------------------------------------------
# One placeholder and one variable per dtype; outputs are identities, casts and arithmetic of
# each; a float64 variable is trained so that double gradients and Apply ops are checked too.
DTYPES = ["string", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "half", "bfloat16", "float32", "float64"]
# The unsigned types TF has few kernels for: fed, fetched, saved and restored only.
STORAGE_ONLY = ("uint16", "uint32", "uint64")


def _dtype_value(name, r, shape=(2, 3)):
    if name == "string":
        return np.array([b"a", b"", b"flow\x00train", b"\xff\xfe", b"tensor", b"x" * 300],
                        dtype=object).reshape(shape)
    if name == "bool":
        return r.rand(*shape) > 0.5
    if name in ("half", "bfloat16", "float32", "float64"):
        # numpy has no bfloat16: its values go as float32 and tf.constant rounds them.
        numpy_type = {"half": np.float16, "float64": np.float64}.get(name, np.float32)
        return (r.randn(*shape) * 3).astype(numpy_type)
    info = np.iinfo(name)
    lo, hi = max(info.min, -100), min(info.max, 100)
    v = r.randint(lo, hi, size=shape).astype(name)
    v.flat[0], v.flat[-1] = info.min, info.max
    return v.reshape(shape)


def all_dtypes(out):
    m = Model(out, "dtypes")
    r = np.random.RandomState(SEED)
    g = tf.Graph()
    feeds, fetches, inputs = [], [], []
    with g.as_default():
        for name in DTYPES:
            dt = tf.as_dtype(name)
            init = _dtype_value(name, r)
            p = v1.placeholder(dt, [2, 3], name="x_" + name)
            var = v1.Variable(tf.constant(init, dtype=dt), name="v_" + name, trainable=False)
            feeds.append(p)
            inputs.append((_dtype_value(name, r), dt))
            fetches.append(tf.identity(p, name="id_" + name))
            fetches.append(tf.identity(var, name="read_" + name))
            if name in STORAGE_ONLY:
                pass
            elif name == "string":
                fetches.append(tf.strings.join([p, var], separator="|", name="join"))
            elif name == "bool":
                fetches.append(tf.logical_and(p, var, name="and"))
                fetches.append(tf.cast(p, tf.float32, name="cast_bool"))
            else:
                fetches.append(tf.add(p, var, name="add_" + name))
                fetches.append(tf.cast(p, tf.float32, name="cast_" + name))
                fetches.append(tf.reduce_sum(p, axis=1, name="sum_" + name))
        xd = v1.placeholder(tf.float64, [3], name="xd")
        wd = v1.Variable(np.array([0.5, -1.0, 2.0]), dtype=tf.float64, name="wd")
        loss = tf.reduce_sum(tf.square(xd * wd - 1.0), name="loss")
        train = v1.train.GradientDescentOptimizer(0.05).minimize(loss, name="train")
        grads = tf.gradients(loss, [wd])
        saver = v1.train.Saver()
        init = v1.global_variables_initializer()
    m.write_trained(g, saver, feeds + [xd], fetches + [loss], loss, [wd], train, STEPS, [xd])
    xin = np.array([1.0, 0.25, -0.5])
    with v1.Session(graph=g) as sess:
        sess.run(init)
        saver.save(sess, os.path.join(m.dir, "ckpt", "model.ckpt"), write_meta_graph=False)
        fd = {p: v[0] for p, v in zip(feeds, inputs)}
        fd[xd] = xin
        outs = sess.run(fetches + [loss], fd)
        for i, (v, dt) in enumerate(inputs):
            m.data["input/%d" % i] = (v, dt)
        m.data["input/%d" % len(inputs)] = xin
        for i, (o, f) in enumerate(zip(outs, fetches + [loss])):
            m.data["output/%d" % i] = (o, f.dtype)
        m.data["grad/0"] = sess.run(grads, fd)[0]
        losses = []
        for s in range(STEPS):
            step_x = _rng("dt", s).randn(3)
            m.data["step/%d/0" % s] = step_x
            l, _ = sess.run([loss, train], {xd: step_x})
            losses.append(l)
        m.data["losses"] = np.asarray(losses, np.float32)
        m.data["final/0"] = sess.run(wd)
    m.finish()


# --- 11. partitioned variables ---------------------------------------------------------------
def partitioned(out):
    def build():
        x = v1.placeholder(tf.float32, [None, 6], name="x")
        y = v1.placeholder(tf.float32, [None, 1], name="y")
        w = v1.get_variable("w", [6, 1], initializer=v1.random_normal_initializer(seed=11),
                            partitioner=v1.fixed_size_partitioner(3))
        pred = tf.matmul(x, w, name="pred")
        loss = tf.reduce_mean(tf.square(pred - y), name="loss")
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        return dict(feeds=[x, y], fetches=[pred, loss], loss=loss, train_op=train)

    def batches(step):
        r = _rng("part", step)
        return [r.randn(5, 6).astype(np.float32), r.randn(5, 1).astype(np.float32)]

    standard_model(out, "partitioned", build, batches)


# --- resource variables (use_resource=True): an MLP trained by Adam ---------------------------
def resource_variables(out):
    def build():
        x = v1.placeholder(tf.float32, [None, 6], name="x")
        y = v1.placeholder(tf.float32, [None, 1], name="y")
        with v1.variable_scope("mlp", use_resource=True):
            w1 = v1.get_variable("w1", [6, 8], initializer=v1.glorot_uniform_initializer())
            b1 = v1.get_variable("b1", [8], initializer=v1.zeros_initializer())
            w2 = v1.get_variable("w2", [8, 1], initializer=v1.glorot_uniform_initializer())
        h = tf.nn.tanh(tf.matmul(x, w1) + b1, name="hidden")
        pred = tf.matmul(h, w2, name="pred")
        loss = tf.reduce_mean(tf.square(pred - y), name="loss")
        train = v1.train.AdamOptimizer(0.02).minimize(loss, name="train")
        return dict(feeds=[x, y], fetches=[pred, loss], loss=loss, train_op=train)

    def batches(step):
        r = _rng("resvar", step)
        x = r.randn(16, 6).astype(np.float32)
        y = np.sin(x[:, :1] - 0.5 * x[:, 1:2]).astype(np.float32)
        return [x, y]

    standard_model(out, "resource_variables", build, batches)


# --- every other TF1 optimizer, each on its own weights of one linear model -----------------
# Adadelta, ProximalGradientDescent, ProximalAdagrad, Ftrl, Ftrl with l2 shrinkage (ApplyFtrlV2)
# and AdagradDA (reading the global step, which nothing increments) each update their own
# weights of one shared linear model, all in one group "train".
def optimizers(out):
    def build():
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        y = v1.placeholder(tf.float32, [None, 1], name="y")
        gs = v1.train.get_or_create_global_step()
        opts = {
            "adadelta": v1.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
            "proximal_gd": v1.train.ProximalGradientDescentOptimizer(
                0.05, l1_regularization_strength=0.01, l2_regularization_strength=0.02),
            "proximal_adagrad": v1.train.ProximalAdagradOptimizer(
                0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.02),
            "ftrl": v1.train.FtrlOptimizer(0.1, l1_regularization_strength=0.001,
                                           l2_regularization_strength=0.01),
            "ftrl_v2": v1.train.FtrlOptimizer(0.1, learning_rate_power=-0.6, l1_regularization_strength=0.001,
                                              l2_shrinkage_regularization_strength=0.05, name="FtrlV2"),
            "adagrad_da": v1.train.AdagradDAOptimizer(0.1, gs, l2_regularization_strength=0.01),
        }
        ws = {k: v1.get_variable(k + "/w", [4, 1], initializer=v1.random_normal_initializer(stddev=0.3))
              for k in opts}
        pred = tf.add_n([tf.matmul(x, w) for w in ws.values()], name="pred")
        loss = tf.reduce_mean(tf.square(pred - y), name="loss")
        train = tf.group(*[opts[k].minimize(loss, var_list=[ws[k]]) for k in opts], name="train")
        return dict(feeds=[x, y], fetches=[pred, loss], loss=loss, train_op=train)

    def batches(step):
        r = _rng("optimizers", step)
        x = r.randn(16, 4).astype(np.float32)
        return [x, (x @ np.array([[1.0], [-2.0], [0.5], [0.0]], np.float32)).astype(np.float32)]

    standard_model(out, "optimizers", build, batches)


# --- TF2-style: control flow v2 (If/While calling functions) and resource variables ----------
# v2 cond and while_loop become StatelessIf/StatelessWhile nodes calling functions of the
# GraphDef's library; TF's gradient of the cond is an If over gradient functions (and the
# forward If gains outputs for its intermediates). The loop reads only the input, so no
# gradient flows through it.
def control_flow_v2(out):
    def build():
        v1.enable_control_flow_v2()
        x = v1.placeholder(tf.float32, [4], name="x")
        with v1.variable_scope("cf2", use_resource=True):
            w = v1.get_variable("w", [4], initializer=v1.constant_initializer([0.5, -0.2, 0.1, 0.3]))
            b = v1.get_variable("b", [], initializer=v1.constant_initializer(0.1))
        s = tf.reduce_sum(x * w) + b
        c = tf.cond(s > 0, lambda: tf.square(s) * w, lambda: tf.sin(w) - s, name="cond")

        def body(i, acc):
            return i + 1, acc * 0.9 + x

        _, acc = tf.while_loop(lambda i, acc: i < 3, body, [tf.constant(0), tf.zeros([4])], name="while")
        loss = tf.reduce_mean(tf.square(c * acc), name="loss")
        train = v1.train.GradientDescentOptimizer(0.005).minimize(loss, name="train")
        v1.disable_control_flow_v2()
        return dict(feeds=[x], fetches=[c, acc, loss], loss=loss, train_op=train)

    def batches(step):
        return [_rng("cf2", step).randn(4).astype(np.float32)]

    standard_model(out, "control_flow_v2", build, batches)


MODELS = {
    "seed_program": seed_program,
    "logistic_regression": logistic_regression,
    "mlp_adam": mlp_adam,
    "cnn": cnn,
    "control_flow": control_flow,
    "lstm": lstm,
    "embedding_adagrad": embedding_adagrad,
    "monitored_training": monitored_training,
    "saved_model": saved_model,
    "saved_model_tf2": saved_model_tf2,
    "dtypes": all_dtypes,
    "partitioned": partitioned,
    "resource_variables": resource_variables,
    "optimizers": optimizers,
    "control_flow_v2": control_flow_v2,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit("unknown model %r (have: %s)" % (n, ", ".join(MODELS)))
    if not args.only and os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out, exist_ok=True)
    for n in names:
        shutil.rmtree(os.path.join(args.out, n), ignore_errors=True)
        tf.compat.v1.reset_default_graph()
        MODELS[n](args.out)
        print("wrote", os.path.join(args.out, n))


if __name__ == "__main__":
    main()
