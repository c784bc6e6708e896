#!/usr/bin/env bash
# Runs the examples end to end on a slice of Fashion-MNIST, as a user would: TFRecord files
# written, trained from through queues and through tf.data, and a CNN trained while the
# evaluator job watches its checkpoints. With a Python that has TensorBoard, it also checks that
# TensorBoard loads the trainer's summaries.
# Usage: examples_test.sh <dir with the example binaries> [python with tensorboard]
set -euo pipefail
bin="$1"
tb_python="${2:-}"
data_dir=/usr/share/datasets/fashion-mnist
[ -f "$data_dir/t10k-labels-idx1-ubyte.gz" ] ||
  { echo "examples_test: $data_dir is missing (scripts/setup installs dataset-fashion-mnist)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
expect() {  # expect <file> <text>: the file contains the text
  grep -qF -- "$2" "$1" || { echo "examples_test: expected '$2' in $1:" >&2; cat "$1" >&2; exit 1; }
}

"$bin/fashion_mnist_to_tfrecords" --out-dir "$work/data" --limit 2000 > "$work/convert.out"
expect "$work/convert.out" "Wrote 2000 examples to $work/data/train.tfrecords"

# 2 epochs of 2000 examples in batches of 100: 40 steps, then OutOfRange ends the run cleanly.
for pipeline in queue_pipeline dataset_pipeline; do
  "$bin/$pipeline" --records "$work/data/train.tfrecords" --model-dir "$work/$pipeline" --epochs 2 \
    > "$work/$pipeline.out" 2>&1
  expect "$work/$pipeline.out" "Trained 40 steps"
  expect "$work/$pipeline/checkpoint" "model_checkpoint_path: \"$work/$pipeline/model.ckpt-40\""
done

# The evaluator job watches the trainer's directory and evaluates its final checkpoint.
"$bin/evaluate_fashion_mnist" --model-dir "$work/cnn" --timeout 10 > "$work/eval.out" 2>&1 &
evaluator=$!
# 120 steps: global_step/sec is first written at step 101.
"$bin/fashion_mnist" --steps 120 --histogram-steps 10 --model-dir "$work/cnn" > "$work/train.out" 2>&1
expect "$work/train.out" "Test accuracy after step 120"
wait "$evaluator"
expect "$work/eval.out" "$work/cnn/model.ckpt-120: step 120, accuracy"
ls "$work/cnn/eval/"events.out.tfevents.* > /dev/null
# What a TF user looks at in TensorBoard, loaded by TensorBoard itself: the training scalars,
# weight histograms and input images in the run, eval's scalars in its eval/ subdirectory.
if [ -n "$tb_python" ]; then
  "$tb_python" - "$work/cnn" > "$work/tensorboard.out" 2>&1 <<'PY' ||
import sys
from tensorboard.backend.event_processing import event_accumulator as ea
def tags(logdir):
    acc = ea.EventAccumulator(logdir, size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0})
    acc.Reload()
    return acc.Tags()
train, evaluation = tags(sys.argv[1]), tags(sys.argv[1] + "/eval")
want = {"scalars": ["loss", "accuracy", "learning_rate", "global_step/sec"],
        "histograms": ["weights/conv2d/kernel", "weights/dense_1/bias"], "images": ["images/image/0"]}
missing = [t for kind, ts in want.items() for t in ts if t not in train[kind]]
missing += ["eval/" + t for t in ("accuracy", "loss") if t not in evaluation["scalars"]]
print("missing tags:", missing, "\ntrain:", train, "\neval:", evaluation)
sys.exit(1 if missing else 0)
PY
    { echo "examples_test: TensorBoard does not see the demo's summaries:" >&2; cat "$work/tensorboard.out" >&2; exit 1; }
else
  echo "examples_test: no Python with TensorBoard given; the TensorBoard check did not run" >&2
fi

# Run again, the trainer resumes; --once evaluates the latest checkpoint and exits.
"$bin/fashion_mnist" --steps 10 --model-dir "$work/cnn" > "$work/train2.out" 2>&1
expect "$work/train2.out" "Resuming from $work/cnn/model.ckpt-120"
expect "$work/train2.out" "Test accuracy after step 130"
"$bin/evaluate_fashion_mnist" --model-dir "$work/cnn" --once > "$work/eval2.out" 2>&1
expect "$work/eval2.out" "model.ckpt-130: step 130, accuracy"
# SIGTERM mid-run (a scheduler preempting the job): the trainer stops after the step in flight,
# saves, exits with 128 + 15, and the next run resumes from there. Its checkpoints are written
# in the background; the last one is complete before the trainer exits.
"$bin/fashion_mnist" --steps 100000 --async-checkpoints --model-dir "$work/preempt" > "$work/preempt.out" 2>&1 &
trainer=$!
for _ in $(seq 600); do
  grep -q "model.ckpt-0" "$work/preempt/checkpoint" 2>/dev/null && break
  sleep 0.1
done
sleep 1
kill -TERM "$trainer"
status=0
wait "$trainer" || status=$?
[ "$status" -eq 143 ] || { echo "examples_test: preempted trainer exited with $status, expected 143" >&2; cat "$work/preempt.out" >&2; exit 1; }
expect "$work/preempt.out" "Stopped by Terminated; saved $work/preempt/model.ckpt-"
saved="$(sed -n 's/^model_checkpoint_path: "\(.*\)"$/\1/p' "$work/preempt/checkpoint")"
[ "$saved" != "$work/preempt/model.ckpt-0" ] || { echo "examples_test: no step was saved at the stop" >&2; exit 1; }
"$bin/fashion_mnist" --steps 5 --model-dir "$work/preempt" > "$work/preempt2.out" 2>&1
expect "$work/preempt2.out" "Resuming from $saved"

# Distributed: a ps task (`flowtrain server`) and two workers on loopback ports. The chief
# trains with a worker beside it; then the ps is killed with SIGKILL mid-run and restarted,
# and the chief recovers by itself: it restores the latest checkpoint into the new ps and
# finishes; with --end-job it then tells the cluster that the job ended, and the ps exits by
# itself.
free_port() {  # a port nothing listens on (bash's /dev/tcp connects, so failure means free)
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
}
flowtrain="$bin/../tools/flowtrain"
cluster="ps=localhost:$(free_port);worker=localhost:$(free_port),localhost:$(free_port)"
"$flowtrain" server --cluster "$cluster" --job ps --task 0 > "$work/ps.out" 2>&1 &
ps=$!
"$bin/distributed_fashion_mnist" --cluster "$cluster" --task 1 --steps 40 > "$work/worker1.out" 2>&1 &
worker1=$!
"$bin/distributed_fashion_mnist" --cluster "$cluster" --task 0 --steps 40 --model-dir "$work/dist" \
  > "$work/worker0.out" 2>&1
wait "$worker1"
expect "$work/worker0.out" "Test accuracy at global step"
expect "$work/worker1.out" "Worker 1 ran"
expect "$work/dist/checkpoint" "model_checkpoint_path:"

"$bin/distributed_fashion_mnist" --cluster "$cluster" --task 0 --steps 400 --model-dir "$work/dist" \
  --end-job > "$work/recover.out" 2>&1 &
chief=$!
# Kill the ps once the chief has saved a checkpoint beyond the first run's.
for _ in $(seq 600); do
  grep -q "model.ckpt-[2-9][0-9][0-9]" "$work/dist/checkpoint" 2>/dev/null && break
  sleep 0.1
done
kill -9 "$ps"
wait "$ps" 2>/dev/null || true
sleep 1
"$flowtrain" server --cluster "$cluster" --job ps --task 0 > "$work/ps2.out" 2>&1 &
ps=$!
wait "$chief"
expect "$work/recover.out" "Test accuracy at global step 400"
# The ps exits by itself once the grace period the chief gave (2 s) has passed.
for _ in $(seq 300); do
  kill -0 "$ps" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$ps" 2>/dev/null; then
  echo "examples_test: the ps did not exit after the job ended"
  kill -9 "$ps"
  exit 1
fi
wait "$ps" || { echo "examples_test: the ps exited with an error"; exit 1; }
expect "$work/ps2.out" "The job ended (the chief trained and evaluated): stopping server for /job:ps/task:0"
echo "examples_test: all examples ran"
