#!/bin/bash
# Faults in a real cluster: one ps (`flowtrain server`) and two workers (cluster_trainer), each
# in its own network namespace with its own address, joined by veth pairs to a bridge, as on
# separate hosts. In each case — kill -9 of the ps, of a worker and of the chief, each
# restarted a second later; the ps's link down for 10 s; 20 ms of latency on it — training must
# reach its last step with no one acting, the chief's global step must never go back except to
# the checkpoint it restores (never behind the checkpoint that was latest when the fault hit),
# and every checkpoint the `checkpoint` file lists must be whole and readable.
#
#   cluster_faults_test.sh FLOWTRAIN_CLI CLUSTER_TRAINER [CASE...]
#
# Needs root (network namespaces); exits 77 (skipped) with a message otherwise, and skips the
# latency case where the kernel has no netem.
set -u
cli=$1
trainer=$2
shift 2
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(kill_ps kill_worker kill_chief link_down latency)

skip() {
  echo "SKIPPED: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root"
command -v ip > /dev/null || skip "the ip command (iproute2) is not installed"

id=$$
bridge=ftbr$id
subnet=10.$((200 + id % 50)).$((id / 50 % 250)).0
prefix=${subnet%.0}
namespaces=(ftps$id ftw0$id ftw1$id)
addresses=($prefix.2 $prefix.3 $prefix.4)
work=$(mktemp -d)
pids=()

cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2> /dev/null; done
  wait 2> /dev/null
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2> /dev/null; done
  ip link del "$bridge" 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT

ip link add "$bridge" type bridge 2> /dev/null || skip "cannot create a bridge (not allowed here)"
ip link set "$bridge" up
for i in 0 1 2; do
  ns=${namespaces[$i]}
  ip netns add "$ns" || skip "cannot create network namespaces"
  ip link add "veth$i$id" type veth peer name eth0 netns "$ns"
  ip link set "veth$i$id" master "$bridge" up
  ip -n "$ns" addr add "${addresses[$i]}/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
done
ps_link=veth0$id
cluster="ps=${addresses[0]}:2222;worker=${addresses[1]}:2222,${addresses[2]}:2222"
steps=300

failures=0
fail() {
  echo "FAIL [$current]: $*"
  failures=$((failures + 1))
}

start_ps() {
  ip netns exec "${namespaces[0]}" "$cli" server --cluster "$cluster" --job ps >> "$run/ps.log" 2>&1 &
  ps_pid=$!
  pids+=($ps_pid)
}
start_worker() {  # task
  ip netns exec "${namespaces[$((1 + $1))]}" "$trainer" --cluster "$cluster" --task "$1" --steps $steps \
    --model-dir "$run/model" >> "$run/worker$1.log" 2>&1 &
  eval "worker$1_pid=$!"
  pids+=($!)
}
# The chief's last global step so far.
chief_step() { grep -o '^step [0-9]*' "$run/worker0.log" 2> /dev/null | tail -1 | cut -d' ' -f2; }
wait_for_step() {  # step, seconds
  for ((t = 0; t < $2 * 10; t++)); do
    s=$(chief_step)
    [ -n "$s" ] && [ "$s" -ge "$1" ] && return 0
    sleep 0.1
  done
  return 1
}
# The step of the checkpoint the `checkpoint` file names as latest, or 0.
latest_checkpoint_step() {
  sed -n 's/^model_checkpoint_path: ".*-\([0-9]*\)"$/\1/p' "$run/model/checkpoint" 2> /dev/null | tail -1 | grep . || echo 0
}

for current in "${cases[@]}"; do
  run=$work/$current
  mkdir -p "$run"
  if [ "$current" = latency ]; then
    if ! tc qdisc add dev "$ps_link" root netem delay 20ms 2> "$run/tc.log"; then
      echo "SKIPPED [latency]: this kernel has no netem ($(cat "$run/tc.log"))"
      continue
    fi
  fi
  start_ps
  start_worker 1
  start_worker 0
  if ! wait_for_step 80 120; then
    fail "training did not reach step 80 ($(tail -3 "$run/worker0.log" | tr '\n' ' '))"
  fi
  floor=$(latest_checkpoint_step)  # a rollback may not go behind this
  fault_at=$(chief_step)
  case $current in
    kill_ps)
      kill -9 "$ps_pid"
      sleep 1
      start_ps
      ;;
    kill_worker)
      kill -9 "$worker1_pid"
      sleep 1
      start_worker 1
      ;;
    kill_chief)
      kill -9 "$worker0_pid"
      echo "--- killed" >> "$run/worker0.log"
      sleep 1
      start_worker 0
      ;;
    link_down)
      ip link set "$ps_link" down
      sleep 10
      ip link set "$ps_link" up
      ;;
    latency) ;;
  esac
  # The chief reaches its last step by itself.
  finished=0
  for ((t = 0; t < 1800; t++)); do
    if grep -q '^done' "$run/worker0.log"; then
      finished=1
      break
    fi
    sleep 0.1
  done
  [ $finished -eq 1 ] || fail "the chief did not finish within 180 s ($(tail -3 "$run/worker0.log" | tr '\n' ' '))"
  done_step=$(sed -n 's/^done //p' "$run/worker0.log")
  [ -n "$done_step" ] && [ "$done_step" -ge $steps ] || fail "the chief ended at step '$done_step', not $steps"

  # Global steps as the chief saw them: a step lower than the one before is a rollback, allowed
  # only after the fault, only once per fault, and never behind the checkpoint latest then.
  rollbacks=0
  previous=0
  while read -r word value; do
    [ "$word" = step ] || continue
    if [ "$value" -lt "$previous" ]; then
      rollbacks=$((rollbacks + 1))
      [ "$previous" -ge "$fault_at" ] || fail "the global step went back from $previous to $value before the fault"
      [ "$value" -ge "$floor" ] || fail "the global step went back to $value, behind checkpoint $floor"
    fi
    previous=$value
  done < <(grep -E '^(step|done) ' "$run/worker0.log")
  [ $rollbacks -le 1 ] || fail "$rollbacks rollbacks for one fault"

  # Every listed checkpoint is whole: its index and data files, read by flowtrain.
  listed=$(sed -n 's/^all_model_checkpoint_paths: "\(.*\)"$/\1/p' "$run/model/checkpoint")
  [ -n "$listed" ] || fail "no checkpoint listed"
  for prefix_path in $listed; do
    [[ $prefix_path = /* ]] || prefix_path=$run/model/$prefix_path
    [ -f "$prefix_path.index" ] && [ -f "$prefix_path.data-00000-of-00001" ] ||
      fail "checkpoint $prefix_path is listed but its files are missing"
    "$cli" inspect-checkpoint "$prefix_path" > /dev/null 2>&1 || fail "checkpoint $prefix_path does not read"
  done
  last_saved=$(latest_checkpoint_step)
  [ "$last_saved" -ge $steps ] || fail "the last checkpoint is of step $last_saved, not $steps"
  echo "[$current] fault at step $fault_at, $rollbacks rollback(s) (floor $floor), done at $done_step," \
    "last checkpoint $last_saved"

  for pid in "${pids[@]}"; do kill -9 "$pid" 2> /dev/null; done
  wait 2> /dev/null
  pids=()
  [ "$current" = latency ] && tc qdisc del dev "$ps_link" root 2> /dev/null
  if [ $failures -gt 0 ]; then
    for log in "$run"/*.log; do
      echo "--- $log"
      tail -20 "$log"
    done
  fi
done
[ $failures -eq 0 ] && echo "all cases passed"
exit $((failures > 0))
