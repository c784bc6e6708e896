"""Event files flowtrain wrote (scalars, histograms, images, audio, text, the graph): TensorBoard
must see flowtrain's tags, steps and values, both through its EventAccumulator (keeping every
event) and through a real `tensorboard --logdir` server on 127.0.0.1 queried over its HTTP data
API. Values are compared with what flowtrain computed or was fed: the scalar flowtrain's session
computed, histogram statistics and bucket counts recomputed from the raw values, images decoded
from PNG and audio decoded from WAV back to flowtrain's pixels and samples, the text, and the
graph's nodes; and the histograms and WAV clips equal those TF's own tf.summary ops make of the
same values.

  check_events.py --expected DIR/expected.json
"""
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import numpy as np
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator as ea

import interop_common as ic

SCALAR_TAG = "loss"
HISTOGRAM_TAG = "weights"
IMAGE_TAGS = ["pixels/image/0", "pixels/image/1"]
AUDIO_TAGS = ["sound/audio/0", "sound/audio/1"]
TEXT_TAG = "note"
SERVER_TIMEOUT_SECS = 90
HTTP_TIMEOUT_SECS = 20


def steps_of(expected):
    return [s["step"] for s in expected["steps"]]


def expect_steps(what, events_steps, expected):
    if list(events_steps) != steps_of(expected):
        ic.fail("%s: TensorBoard has steps %s, flowtrain wrote %s" % (what, list(events_steps), steps_of(expected)))


def raw_bucket_counts(values, lefts, rights):
    """How many of `values` fall in each [left, right) bucket (the last one closed)."""
    counts = []
    for i, (left, right) in enumerate(zip(lefts, rights)):
        if i == len(lefts) - 1:
            counts.append(int(np.sum((values >= left) & (values <= right))))
        else:
            counts.append(int(np.sum((values >= left) & (values < right))))
    return counts


def check_histogram(what, lefts, rights, counts, values):
    values = np.asarray(values, dtype=np.float64)
    if abs(sum(counts) - len(values)) > 0:
        ic.fail("%s: bucket counts add up to %s, flowtrain fed %d values" % (what, sum(counts), len(values)))
    want = raw_bucket_counts(values, lefts, rights)
    if [int(c) for c in counts] != want:
        ic.fail("%s: bucket counts %s, the raw values give %s" % (what, list(counts), want))


def decoded_png(data):
    return tf.io.decode_png(data, channels=0).numpy()


def decoded_wav(data):
    audio, rate = tf.audio.decode_wav(data)
    return audio.numpy(), int(rate.numpy())


def check_image(what, png, want):
    got = decoded_png(png)
    ic.expect_exact(what, got, want)


def check_audio(what, wav, want, sample_rate):
    got, rate = decoded_wav(wav)
    if rate != sample_rate:
        ic.fail("%s: sample rate %d, flowtrain's %d" % (what, rate, sample_rate))
    # 16-bit PCM: within one quantisation step of flowtrain's float samples.
    ic.expect_close(what, got[:, 0], want, rtol=0, atol=1.0 / 32767)


def markdown_html(text):
    return re.sub(r"\*\*(.*?)\*\*", r"<strong>\1</strong>", text)


def tf_summaries(expected):
    """Per step, TF's own tf.compat.v1.summary histogram and audio of the values flowtrain was
    fed, as {tag: Summary.Value}: flowtrain's must equal them field for field."""
    with tf.Graph().as_default():
        weights = tf.compat.v1.placeholder(tf.float32, [None])
        sound = tf.compat.v1.placeholder(tf.float32, [2, None])
        merged = tf.compat.v1.summary.merge([
            tf.compat.v1.summary.histogram(HISTOGRAM_TAG, weights),
            tf.compat.v1.summary.audio("sound", sound, expected["sample_rate"], max_outputs=2)])
        with tf.compat.v1.Session() as sess:
            out = []
            for s in expected["steps"]:
                summary = tf.compat.v1.Summary.FromString(sess.run(merged, {
                    weights: ic.array_from_json(s["weights"]), sound: ic.array_from_json(s["sound"])}))
                out.append({v.tag: v for v in summary.value})
            return out


# ---- EventAccumulator ----

def check_accumulator(expected):
    acc = ea.EventAccumulator(expected["logdir"], size_guidance={
        ea.COMPRESSED_HISTOGRAMS: 0, ea.IMAGES: 0, ea.AUDIO: 0, ea.SCALARS: 0,
        ea.HISTOGRAMS: 0, ea.TENSORS: 0})
    acc.Reload()
    tags = acc.Tags()
    for kind, want in [("scalars", [SCALAR_TAG]), ("histograms", [HISTOGRAM_TAG]),
                       ("images", IMAGE_TAGS), ("audio", AUDIO_TAGS), ("tensors", [TEXT_TAG])]:
        if sorted(tags[kind]) != sorted(want):
            ic.fail("EventAccumulator %s tags %s, flowtrain's summaries %s" % (kind, tags[kind], want))
    if not tags["graph"]:
        ic.fail("EventAccumulator finds no graph")
    steps = expected["steps"]

    scalars = acc.Scalars(SCALAR_TAG)
    expect_steps("scalar " + SCALAR_TAG, [e.step for e in scalars], expected)
    for e, s in zip(scalars, steps):
        ic.expect_exact("scalar %s at step %d" % (SCALAR_TAG, e.step), np.float32(e.value),
                        ic.array_from_json(s["loss"]))

    tf_values = tf_summaries(expected)
    histograms = acc.Histograms(HISTOGRAM_TAG)
    expect_steps("histogram", [e.step for e in histograms], expected)
    for e, s in zip(histograms, steps):
        h = e.histogram_value
        values = ic.array_from_json(s["weights"]).astype(np.float64)
        what = "histogram %s at step %d" % (HISTOGRAM_TAG, e.step)
        if h.num != len(values) or h.min != values.min() or h.max != values.max():
            ic.fail("%s: num/min/max %s/%s/%s, the raw values give %s/%s/%s" % (
                what, h.num, h.min, h.max, len(values), values.min(), values.max()))
        ic.expect_close(what + " sum", h.sum, values.sum(), rtol=1e-9, atol=1e-9)
        ic.expect_close(what + " sum_squares", h.sum_squares, (values ** 2).sum(), rtol=1e-9)
        limits = list(h.bucket_limit)
        check_histogram(what, [-np.inf] + limits[:-1], limits, list(h.bucket), values)
        want = tf_values[steps.index(s)][HISTOGRAM_TAG].histo
        got = (h.min, h.max, h.num, h.sum, h.sum_squares, list(h.bucket_limit), list(h.bucket))
        tf_histo = (want.min, want.max, want.num, want.sum, want.sum_squares, list(want.bucket_limit),
                    list(want.bucket))
        if got != tf_histo:
            ic.fail("%s differs from tf.summary.histogram of the same values:\n flowtrain %s\n TF        %s" % (
                what, got, tf_histo))

    for i, tag in enumerate(IMAGE_TAGS):
        images = acc.Images(tag)
        expect_steps("image " + tag, [e.step for e in images], expected)
        for e, s in zip(images, steps):
            want = ic.array_from_json(s["pixels"])[i]
            if (e.height, e.width) != want.shape[:2]:
                ic.fail("image %s: %dx%d, flowtrain's %s" % (tag, e.height, e.width, want.shape))
            check_image("image %s at step %d" % (tag, e.step), e.encoded_image_string, want)

    for i, tag in enumerate(AUDIO_TAGS):
        clips = acc.Audio(tag)
        expect_steps("audio " + tag, [e.step for e in clips], expected)
        for e, s in zip(clips, steps):
            want = ic.array_from_json(s["sound"])[i]
            if e.content_type != "audio/wav" or e.length_frames != len(want):
                ic.fail("audio %s: %s of %d frames" % (tag, e.content_type, e.length_frames))
            check_audio("audio %s at step %d" % (tag, e.step), e.encoded_audio_string, want,
                        expected["sample_rate"])
            tf_audio = tf_values[steps.index(s)][tag].audio
            if e.encoded_audio_string != tf_audio.encoded_audio_string:
                ic.fail("audio %s at step %d: flowtrain's WAV (%d bytes) differs from tf.summary.audio's (%d bytes)" % (
                    tag, e.step, len(e.encoded_audio_string), len(tf_audio.encoded_audio_string)))
            if (e.sample_rate, e.length_frames) != (tf_audio.sample_rate, tf_audio.length_frames):
                ic.fail("audio %s at step %d: rate/frames %s, TF's %s" % (
                    tag, e.step, (e.sample_rate, e.length_frames),
                    (tf_audio.sample_rate, tf_audio.length_frames)))

    texts = acc.Tensors(TEXT_TAG)
    expect_steps("text", [e.step for e in texts], expected)
    for e, s in zip(texts, steps):
        got = tf.make_ndarray(e.tensor_proto)
        if got.shape != () or got.item() != s["note"].encode():
            ic.fail("text at step %d: %r, flowtrain's %r" % (e.step, got, s["note"]))
    if acc.SummaryMetadata(TEXT_TAG).plugin_data.plugin_name != "text":
        ic.fail("text summary's plugin is %r" % acc.SummaryMetadata(TEXT_TAG).plugin_data.plugin_name)

    graph = acc.Graph()
    got = sorted((n.name, n.op) for n in graph.node)
    want = sorted(tuple(n) for n in expected["graph_nodes"])
    if got != want:
        ic.fail("EventAccumulator's graph nodes %s, flowtrain's %s" % (got, want))
    print("EventAccumulator: %d steps of %d tags, graph of %d nodes" % (
        len(steps), 1 + 1 + len(IMAGE_TAGS) + len(AUDIO_TAGS) + 1, len(got)))


# ---- A real TensorBoard server ----

def die_with_parent():
    """In the server's process: be killed when the checker dies (even by its watchdog)."""
    import ctypes
    import signal
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, logdir):
        self.port = free_port()
        self.log_path = os.path.join(os.path.dirname(logdir), "tensorboard.log")
        self.log = open(self.log_path, "w")
        tensorboard = os.path.join(os.path.dirname(sys.executable), "tensorboard")
        self.process = subprocess.Popen(
            [tensorboard, "--logdir", logdir, "--host", "127.0.0.1", "--port", str(self.port),
             "--load_fast=false", "--reload_interval=1",
             # Enough for every step (0 would make the data provider downsample to nothing).
             "--samples_per_plugin=scalars=100,histograms=100,images=100,audio=100,text=100"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent)

    def url(self, path, **params):
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        return "http://127.0.0.1:%d%s%s" % (self.port, path, query)

    def get(self, path, **params):
        with urllib.request.urlopen(self.url(path, **params), timeout=HTTP_TIMEOUT_SECS) as r:
            return r.read()

    def get_json(self, path, **params):
        return json.loads(self.get(path, **params))

    def log_text(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()[-3000:]

    def wait_until_loaded(self, run, expected_tags):
        """Until the scalars plugin lists the run's tag (the run's events are loaded)."""
        deadline = time.monotonic() + SERVER_TIMEOUT_SECS
        last = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                ic.fail("tensorboard exited with %s:\n%s" % (self.process.returncode, self.log_text()))
            try:
                tags = self.get_json("/data/plugin/scalars/tags")
                last = tags
                if set(tags.get(run, {})) >= set(expected_tags):
                    # The last step is in too (a reload reads the whole file at once).
                    return
            except (urllib.error.URLError, ConnectionError, socket.timeout, ValueError) as e:
                last = e
            time.sleep(0.5)
        ic.fail("tensorboard did not serve run %r within %ds (last answer %r):\n%s" % (
            run, SERVER_TIMEOUT_SECS, last, self.log_text()))

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
        self.log.close()


def http_samples(server, run, plugin, tags, expected):
    """The samples that `plugin` (images or audio) serves: fails unless it lists exactly `tags`
    for `run` and, per tag, flowtrain's steps; yields (i, tag, entry, s) for sample 0 of tags[i]
    at each step, `entry` the plugin's JSON for it and `s` flowtrain's values at that step."""
    listed = server.get_json("/data/plugin/%s/tags" % plugin)
    if sorted(listed.get(run, {})) != sorted(tags):
        ic.fail("HTTP %s tags %s, flowtrain's %s" % (plugin, listed, tags))
    for i, tag in enumerate(tags):
        entries = server.get_json("/data/plugin/%s/%s" % (plugin, plugin), run=run, tag=tag, sample=0)
        expect_steps("HTTP %s %s" % (plugin, tag), [e["step"] for e in entries], expected)
        for entry, s in zip(entries, expected["steps"]):
            yield i, tag, entry, s


def check_server(expected):
    server = Server(expected["logdir"])
    try:
        run = "."
        server.wait_until_loaded(run, [SCALAR_TAG])
        runs = server.get_json("/data/runs")
        if runs != [run]:
            ic.fail("/data/runs is %s, expected the one run %r" % (runs, run))
        steps = expected["steps"]

        scalars = server.get_json("/data/plugin/scalars/scalars", run=run, tag=SCALAR_TAG)
        expect_steps("HTTP scalars", [p[1] for p in scalars], expected)
        for (_, step, value), s in zip(scalars, steps):
            ic.expect_exact("HTTP scalar at step %d" % step, np.float32(value), ic.array_from_json(s["loss"]))

        tags = server.get_json("/data/plugin/histograms/tags")
        if list(tags.get(run, {})) != [HISTOGRAM_TAG]:
            ic.fail("HTTP histogram tags %s" % tags)
        histograms = server.get_json("/data/plugin/histograms/histograms", run=run, tag=HISTOGRAM_TAG)
        expect_steps("HTTP histograms", [h[1] for h in histograms], expected)
        for (_, step, buckets), s in zip(histograms, steps):
            values = ic.array_from_json(s["weights"]).astype(np.float64)
            lefts = [b[0] for b in buckets]
            rights = [b[1] for b in buckets]
            if lefts[0] != values.min() or rights[-1] != values.max():
                ic.fail("HTTP histogram at step %d spans [%s, %s], the values [%s, %s]" % (
                    step, lefts[0], rights[-1], values.min(), values.max()))
            check_histogram("HTTP histogram at step %d" % step, lefts, rights, [b[2] for b in buckets], values)

        for i, tag, im, s in http_samples(server, run, "images", IMAGE_TAGS, expected):
            png = server.get("/data/plugin/images/individualImage?" + im["query"])
            check_image("HTTP image %s at step %d" % (tag, im["step"]), png,
                        ic.array_from_json(s["pixels"])[i])

        for i, tag, c, s in http_samples(server, run, "audio", AUDIO_TAGS, expected):
            if c["contentType"] != "audio/wav":
                ic.fail("HTTP audio %s content type %r" % (tag, c["contentType"]))
            wav = server.get("/data/plugin/audio/individualAudio?" + c["query"])
            check_audio("HTTP audio %s at step %d" % (tag, c["step"]), wav,
                        ic.array_from_json(s["sound"])[i], expected["sample_rate"])

        tags = server.get_json("/data/plugin/text/tags")
        if tags.get(run) != [TEXT_TAG]:
            ic.fail("HTTP text tags %s" % tags)
        texts = server.get_json("/data/plugin/text/text", run=run, tag=TEXT_TAG)
        expect_steps("HTTP text", [t["step"] for t in texts], expected)
        for t, s in zip(texts, steps):
            if markdown_html(s["note"]) not in t["text"]:
                ic.fail("HTTP text at step %d renders %r, flowtrain's text %r" % (t["step"], t["text"], s["note"]))

        graph_text = server.get("/data/plugin/graphs/graph", run=run, conceptual="false").decode()
        from google.protobuf import text_format
        from tensorboard.compat.proto import graph_pb2
        graph = text_format.Parse(graph_text, graph_pb2.GraphDef())
        got = sorted((n.name, n.op) for n in graph.node)
        want = sorted(tuple(n) for n in expected["graph_nodes"])
        if got != want:
            ic.fail("HTTP graph nodes %s, flowtrain's %s" % (got, want))
        print("tensorboard server on 127.0.0.1:%d: %d steps of every plugin, graph of %d nodes" % (
            server.port, len(steps), len(got)))
    finally:
        server.stop()


def main():
    args = ic.parse_flags("expected")
    expected = ic.load_json(args.expected)
    check_accumulator(expected)
    check_server(expected)


if __name__ == "__main__":
    ic.run(main)
