#!/usr/bin/env python3
"""Checks, with TensorFlow and TensorBoard, what the hand-over test's three phases left behind
(tests/tf/handover_test.cc: TF to step 100, flowtrain to 200, TF to 300, all in one model
directory D; and TF's uninterrupted reference job 0 -> 300 in R).

    check_handover.py --model-dir D --reference-dir R --reference-losses FILE --data DIR
                      --tf-checkpoint T --flowtrain-checkpoint F

with FILE the reference job's per-step losses (handover.py --losses), T a copy of TF's
model.ckpt-100 and F of flowtrain's model.ckpt-200, taken before the next phase re-saved
them (each system saves the step it resumed from when its session starts).

Prints one line per failed check and exits 1 if any failed:
  * TensorBoard sees one run in D (D itself, "."): every phase's event file sits in D.
  * EventAccumulator(D) has the scalar tag `loss` with strictly increasing steps (no restart
    of the curve at a hand-over) from 1 to the last 10 steps, no gap over 10 steps
    (save_summaries_steps), points in each phase's steps (0, 100], (100, 200] and (200, 300],
    and values within 1e-4 of the reference job's per-step losses (a summary at step S holds
    the loss of the step from S - 1 to S); the reference job's own summaries in R too.
  * flowtrain's checkpoint of step 200 holds the variables of TF's checkpoint of step 100
    under the same keys, dtypes and shapes, and its global step is 200.
  * TF imports flowtrain's model.ckpt-200.meta (F.meta) into a fresh graph, restores model.ckpt-200
    with the imported saver, and the imported graph's mean_squared_error on batch 200 is the reference
    job's loss at step 200.
"""
import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import handover  # noqa: E402  (the model's constants and the data reader)

# Phases 2 and 3 run on weights that went through flowtrain's float32 kernels for 100 steps,
# TF's through TF's (oneDNN) kernels: the two round differently in the last bits, and Adam
# passes those differences on. Measured on this model: within 2e-6 of the reference.
RELATIVE_TOLERANCE = 1e-4
PHASES = [(0, 100), (100, 200), (200, 300)]
SUMMARY_STEPS = handover.SUMMARY_STEPS

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message, flush=True)
    return condition


def close(a, b):
    return abs(a - b) <= RELATIVE_TOLERANCE * max(abs(a), abs(b))


def check_events(model_dir, reference_dir, reference_losses):
    from tensorboard.backend.event_processing import event_accumulator, plugin_event_multiplexer

    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(model_dir)
    runs = sorted(multiplexer.Runs())
    check(runs == ["."], f"TensorBoard's runs in {model_dir}: {runs}, expected one, '.'")

    def loss_points(path):
        accumulator = event_accumulator.EventAccumulator(path)
        accumulator.Reload()
        tags = accumulator.Tags()["scalars"]
        if not check("loss" in tags, f"{path}: no scalar tag 'loss' among {tags}"):
            return []
        return [(e.step, e.value) for e in accumulator.Scalars("loss")]

    # A summary written at global step S holds the loss of the run that took the step from
    # S - 1 to S: the loss the jobs record for step S - 1. Where TF's summaries fall is not
    # deterministic: its SummarySaverHook estimates the next step from a global step fetched
    # with the train op, and that read races the step's increment (TF's summaries land at
    # 71, 80, ... when the read came after it), so the steps are not compared with the
    # reference's; the values are compared with the reference's loss at each step.
    points = loss_points(model_dir)
    steps = [s for s, _ in points]
    print(f"loss in {model_dir}: {len(points)} points, steps {steps}")
    check(all(a < b for a, b in zip(steps, steps[1:])), f"loss steps are not strictly increasing: {steps}")
    check(steps and steps[0] == 1 and steps[-1] > 300 - SUMMARY_STEPS,
          f"loss steps {steps} do not run from 1 to the last {SUMMARY_STEPS} steps")
    gaps = [b - a for a, b in zip(steps, steps[1:])]
    check(all(g <= SUMMARY_STEPS for g in gaps), f"loss steps {steps} leave gaps over {SUMMARY_STEPS} steps")
    for first, last in PHASES:
        check(any(first < s <= last for s in steps), f"no loss point in steps ({first}, {last}]: {steps}")
    for path, label in ((model_dir, "hand-over job"), (reference_dir, "reference job")):
        for step, value in (points if path == model_dir else loss_points(reference_dir)):
            check(step - 1 in reference_losses and close(value, reference_losses[step - 1]),
                  f"{label}: loss summary at step {step}: {value!r}, reference job's loss at step {step - 1} "
                  f"{reference_losses.get(step - 1)!r}")


def check_checkpoints(tf_prefix, flowtrain_prefix, data_dir, reference_loss_200):
    import tensorflow as tf
    tf.compat.v1.disable_v2_behavior()

    ours = tf.train.load_checkpoint(flowtrain_prefix)
    theirs = tf.train.load_checkpoint(tf_prefix)
    ours_map, theirs_map = ours.get_variable_to_dtype_map(), theirs.get_variable_to_dtype_map()
    check(sorted(ours_map) == sorted(theirs_map),
          f"flowtrain's checkpoint keys {sorted(ours_map)} differ from TF's {sorted(theirs_map)}")
    shapes_ours, shapes_theirs = ours.get_variable_to_shape_map(), theirs.get_variable_to_shape_map()
    for key in sorted(set(ours_map) & set(theirs_map)):
        check(ours_map[key] == theirs_map[key], f"{key}: dtype {ours_map[key]} in flowtrain's, {theirs_map[key]} in TF's")
        check(shapes_ours[key] == shapes_theirs[key],
              f"{key}: shape {shapes_ours[key]} in flowtrain's, {shapes_theirs[key]} in TF's")
    if "global_step" in ours_map:
        check(int(ours.get_tensor("global_step")) == 200, f"global_step {ours.get_tensor('global_step')} in {flowtrain_prefix}")

    print(f"{flowtrain_prefix}: the {len(ours_map)} keys of {tf_prefix}, with their dtypes and shapes", flush=True)
    meta = flowtrain_prefix + ".meta"
    if not check(os.path.exists(meta), f"{meta} is missing"):
        return
    xs, ys = handover.read_data(data_dir)
    with tf.Graph().as_default() as graph:
        saver = tf.compat.v1.train.import_meta_graph(meta)
        check(saver is not None, f"{meta} has no saver")
        with tf.compat.v1.Session(graph=graph) as sess:
            saver.restore(sess, flowtrain_prefix)
            step = sess.run(graph.get_tensor_by_name("global_step:0"))
            check(int(step) == 200, f"imported graph's global_step after restore: {step}")
            loss = float(sess.run(graph.get_tensor_by_name("mean_squared_error:0"),
                                  {graph.get_tensor_by_name("x:0"): xs[200], graph.get_tensor_by_name("y:0"): ys[200]}))
            print(f"{meta} imported and restored: global step {step}, loss on batch 200 {loss!r} "
                  f"(reference {reference_loss_200!r})", flush=True)
            check(close(loss, reference_loss_200),
                  f"imported graph's loss on batch 200: {loss!r}, reference {reference_loss_200!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--reference-dir", required=True)
    parser.add_argument("--reference-losses", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--tf-checkpoint", required=True, help="a copy of TF's model.ckpt-100 (phase 1)")
    parser.add_argument("--flowtrain-checkpoint", required=True, help="a copy of flowtrain's model.ckpt-200 (phase 2)")
    args = parser.parse_args()
    with open(args.reference_losses) as f:
        reference_losses = {int(s): float(v) for s, v in (line.split() for line in f)}
    check_events(args.model_dir, args.reference_dir, reference_losses)
    check_checkpoints(args.tf_checkpoint, args.flowtrain_checkpoint, args.data, reference_losses[200])
    print("FAILED" if failures else "OK", f"({len(failures)} failed checks)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
