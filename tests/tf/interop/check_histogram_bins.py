"""flowtrain's uniform histogram bins (summary/histogram_bins.h, what `flowtrain events --html`
draws) against TensorBoard's own on the same event file: TensorBoard's plugin EventAccumulator
reads the histograms flowtrain wrote (turning TF1 histograms into the [left, right, count]
buckets its histogram plugin serves), and the histogram dashboard's re-binning, the JavaScript
function in tensorboard's webfiles.zip, runs under node on those buckets. The bins must agree up
to the float32 rounding of TensorBoard's buckets.

  check_histogram_bins.py --expected DIR/expected.json
"""
import json
import os
import re
import shutil
import subprocess
import zipfile

import numpy as np
import tensorboard
from tensorboard.backend.event_processing import plugin_event_accumulator as pea
from tensorboard.util import tensor_util

import interop_common as ic

# The dashboard's functions, in TensorBoard 2.21's minified bundle: one turns a served
# [wall_time, step, buckets] triple into {min, max, buckets}, one re-bins a histogram over
# [min, max] onto n=30 bins, and one applies both over a series with its overall min and max.
# They call d3's min and max, which the bundle defines as two-argument functions.
CONVERT = r"function (\w+)\(e\)\{let\[t,r,n\]=e;return\{wall_time:t,step:r,min:(\w+)\(.*?\}\}"
REBIN = r"function (\w+)\(e,t,r,n=30\)\{.*?return a\}"
SERIES = r"function (\w+)\(e\)\{let t=e\.map\(%s\),r=(\w+)\(t,i=>i\.min\),n=(\w+)\(t,i=>i\.max\);.*?\}\)\)\}"


def function_named(bundle, name):
    """The whole `function name(...) {...}` of the bundle, by brace matching."""
    start = bundle.index("function %s(" % name)
    depth = 0
    for i in range(bundle.index("{", start), len(bundle)):
        depth += {"{": 1, "}": -1}.get(bundle[i], 0)
        if depth == 0:
            return bundle[start:i + 1]
    ic.fail("unbalanced braces in %s" % name)


def dashboard_rebinning_js():
    webfiles = os.path.join(os.path.dirname(tensorboard.__file__), "webfiles.zip")
    with zipfile.ZipFile(webfiles) as z:
        bundle = z.read("index.js").decode("utf-8")
    convert = re.search(CONVERT, bundle)
    rebin = re.search(REBIN, bundle)
    if not convert or not rebin:
        ic.fail("TensorBoard's histogram re-binning is not where it was in %s: update the patterns" % webfiles)
    series = re.search(SERIES % convert.group(1), bundle)
    if not series:
        ic.fail("TensorBoard's series re-binning is not where it was in %s" % webfiles)
    d3_min, d3_max = series.group(2), series.group(3)
    return "\n".join([function_named(bundle, d3_min), function_named(bundle, d3_max),
                      convert.group(0), rebin.group(0), series.group(0),
                      "const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));",
                      "console.log(JSON.stringify(%s(input)));" % series.group(1)])


def main():
    flags = ic.parse_flags("expected")
    expected = ic.load_json(flags.expected)
    node = shutil.which("node")
    if node is None:
        ic.fail("node is not installed (scripts/tf-env installs it): cannot run TensorBoard's re-binning")
    acc = pea.EventAccumulator(expected["logdir"], size_guidance={pea.TENSORS: 0})
    acc.Reload()
    served = [[e.wall_time, e.step, tensor_util.make_ndarray(e.tensor_proto).tolist()]
              for e in acc.Tensors(expected["tag"])]
    if [s[1] for s in served] != [h["step"] for h in expected["histograms"]]:
        ic.fail("TensorBoard has steps %s, flowtrain %s" % ([s[1] for s in served],
                                                            [h["step"] for h in expected["histograms"]]))
    run = subprocess.run([node, "-e", dashboard_rebinning_js()], input=json.dumps(served),
                         capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        ic.fail("node failed on TensorBoard's re-binning:\n" + run.stderr)
    tensorboard_bins = json.loads(run.stdout)
    for tb, ours in zip(tensorboard_bins, expected["histograms"]):
        what = "step %d" % ours["step"]
        if len(tb["bins"]) != len(ours["bins"]):
            ic.fail("%s: TensorBoard has %d bins, flowtrain %d" % (what, len(tb["bins"]), len(ours["bins"])))
        for field, key in [("left", "x"), ("width", "dx")]:
            ic.expect_close(what + " bin " + field + "s", [b[key] for b in tb["bins"]],
                            [b[field] for b in ours["bins"]], rtol=1e-6, atol=1e-6)
        # Counts move between neighbouring bins only as far as the float32 edges moved.
        ic.expect_close(what + " bin counts", [b["y"] for b in tb["bins"]],
                        [b["count"] for b in ours["bins"]], rtol=1e-4, atol=1e-3)
        print("%s: %d bins agree, largest %.6g" % (what, len(tb["bins"]), max(b["y"] for b in tb["bins"])))


if __name__ == "__main__":
    ic.run(main)
