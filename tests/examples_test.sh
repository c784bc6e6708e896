#!/usr/bin/env bash
# Runs the examples end to end on a slice of Fashion-MNIST, as a user would: TFRecord files
# written, trained from through queues and through tf.data, and a CNN trained while the
# evaluator job watches its checkpoints. Usage: examples_test.sh <dir with the example binaries>
set -euo pipefail
bin="$1"
data_dir=/usr/share/datasets/fashion-mnist
[ -f "$data_dir/t10k-labels-idx1-ubyte.gz" ] ||
  { echo "examples_test: $data_dir is missing (scripts/setup installs dataset-fashion-mnist)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
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
"$bin/fashion_mnist" --steps 30 --model-dir "$work/cnn" > "$work/train.out" 2>&1
expect "$work/train.out" "Test accuracy after step 30"
wait "$evaluator"
expect "$work/eval.out" "$work/cnn/model.ckpt-30: step 30, accuracy"
ls "$work/cnn/eval/"events.out.tfevents.* > /dev/null

# Run again, the trainer resumes; --once evaluates the latest checkpoint and exits.
"$bin/fashion_mnist" --steps 10 --model-dir "$work/cnn" > "$work/train2.out" 2>&1
expect "$work/train2.out" "Resuming from $work/cnn/model.ckpt-30"
expect "$work/train2.out" "Test accuracy after step 40"
"$bin/evaluate_fashion_mnist" --model-dir "$work/cnn" --once > "$work/eval2.out" 2>&1
expect "$work/eval2.out" "model.ckpt-40: step 40, accuracy"
echo "examples_test: all examples ran"
