#!/usr/bin/env bash
# Exact resume of the README's demo: fashion_mnist (a small configuration on a slice of
# Fashion-MNIST) killed with SIGKILL at random moments and resumed from its latest checkpoint,
# again and again, must end with bitwise the same variables as a run that went straight
# through. Nothing is registered by the demo: MonitoredTrainingSession's default saver keeps the
# input pipeline's position (shuffle and prefetch buffers) in every checkpoint.
# Usage: exact_resume_test.sh <dir with the example binaries> [trials] [kills per trial]
set -euo pipefail
bin="$1"
trials="${2:-1}"
kills="${3:-3}"
flowtrain="$bin/../tools/flowtrain"
source_dir=/usr/share/datasets/fashion-mnist
[ -f "$source_dir/train-images-idx3-ubyte.gz" ] ||
  { echo "exact_resume_test: $source_dir is missing (scripts/setup installs dataset-fashion-mnist)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# The first n images and labels of a split, as IDX files of n items (big-endian counts).
be32() { printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))"
         printf "\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"; }
slice() (  # slice <split> <n>; zcat and tail end on SIGPIPE once head has its bytes
  set +o pipefail
  { be32 2051; be32 "$2"; be32 28; be32 28; zcat "$source_dir/$1-images-idx3-ubyte.gz" | tail -c +17 |
      head -c $(($2 * 784)); } | gzip -1 > "$work/data/$1-images-idx3-ubyte.gz"
  { be32 2049; be32 "$2"; zcat "$source_dir/$1-labels-idx1-ubyte.gz" | tail -c +9 | head -c "$2"; } |
    gzip -1 > "$work/data/$1-labels-idx1-ubyte.gz"
)
mkdir -p "$work/data"
slice train 1000
slice t10k 200

steps=40
# train <model dir> <steps>: the demo, checkpointing every 5 steps. It replaces the (sub)shell
# it runs in, so that `train ... &` makes $! the trainer itself, which SIGKILL then hits.
train() {
  exec "$bin/fashion_mnist" --steps "$2" --batch-size 32 --checkpoint-steps 5 --histogram-steps 1000 \
    --data-dir "$work/data" --model-dir "$1"
}
latest_step() {  # the step of the checkpoint the state file of <model dir> names, 0 if none
  local path
  path="$(sed -n 's/^model_checkpoint_path: "\(.*\)"$/\1/p' "$1/checkpoint" 2>/dev/null || true)"
  echo "${path:+${path##*-}}" | sed 's/^$/0/'
}
# One line per variable of a checkpoint: its name and a hash of its exact value (shortest
# round-trip decimals). The iterator's position is left out: what its prefetch buffer held at
# the last save depends on timing; equal weights show that the batches came in one order.
fingerprint() {
  local name
  "$flowtrain" inspect-checkpoint "$1" | sed -n 's/^\([^ ]*\) (DT_.*$/\1/p' | grep -v -- '-state$' |
    while read -r name; do
      echo "$name $("$flowtrain" inspect-checkpoint "$1" --tensor "$name" | sha256sum | cut -c1-16)"
    done
}

(train "$work/straight" "$steps") > "$work/straight.out" 2>&1
grep -q "Test accuracy after step $steps" "$work/straight.out" ||
  { echo "exact_resume_test: the uninterrupted run failed:" >&2; cat "$work/straight.out" >&2; exit 1; }
fingerprint "$work/straight/model.ckpt-$steps" > "$work/straight.txt"
variables=$(wc -l < "$work/straight.txt")
grep -q "Iterator:0-state" <("$flowtrain" inspect-checkpoint "$work/straight/model.ckpt-$steps") ||
  { echo "exact_resume_test: the demo's checkpoint holds no iterator position" >&2; exit 1; }

exact=0
killed=0
for trial in $(seq "$trials"); do
  dir="$work/trial$trial"
  resumed_from=()
  for _ in $(seq "$kills"); do
    from=$(latest_step "$dir")
    # A run that got to the end before its kill leaves nothing to resume (a run resumed at
    # the last step would still train one step: at least one step always runs).
    [ "$from" -lt "$steps" ] || break
    resumed_from+=("$from")
    train "$dir" $((steps - from)) > "$work/kill.out" 2>&1 &
    trainer=$!
    # Once the trainer has its graph (its first log line), a kill at a random moment of the
    # next 1.5 s (setting up the session and training, ~2 s for 40 steps): at a step, inside a
    # save, or between the checkpoint and the state file.
    for _ in $(seq 300); do
      [ -s "$work/kill.out" ] && break
      sleep 0.02
    done
    delay=$((RANDOM % 1500))
    sleep "$((delay / 1000)).$(printf %03d $((delay % 1000)))"
    if kill -9 "$trainer" 2>/dev/null; then killed=$((killed + 1)); fi
    wait "$trainer" 2>/dev/null || true
  done
  from=$(latest_step "$dir")
  if [ "$from" -lt "$steps" ]; then
    resumed_from+=("$from")
    (train "$dir" $((steps - from))) > "$work/final.out" 2>&1 ||
      { echo "exact_resume_test: trial $trial: the last run failed:" >&2; cat "$work/final.out" >&2; exit 1; }
  fi
  fingerprint "$dir/model.ckpt-$steps" > "$work/trial.txt"
  if cmp -s "$work/straight.txt" "$work/trial.txt"; then
    exact=$((exact + 1))
    echo "exact_resume_test: trial $trial (runs from steps ${resumed_from[*]}) exact"
  else
    echo "exact_resume_test: trial $trial (runs from steps ${resumed_from[*]}) differs in" \
      "$(diff "$work/straight.txt" "$work/trial.txt" | grep -c '^>') of $variables variables" >&2
  fi
  rm -rf "$dir"
done
echo "exact_resume_test: $exact of $trials trials ended bitwise equal to the uninterrupted run" \
  "($killed SIGKILLs, $variables variables compared, $steps steps)"
[ "$exact" -eq "$trials" ]
