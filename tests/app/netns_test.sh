#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Training across separate hosts (issue 35): MPI ranks in network namespaces of this machine
# (netns_hosts.sh), each host with its own address and name, talking over TCP only. Compared with
# one process bit for bit, as the cli.mpi_* cases do on one host. Needs root (exit 77: skipped).
# Usage: netns_test.sh WAFER_BINARY SOURCE_DIR CASE
set -uo pipefail
wafer=$1
src=$(cd "$2" && pwd)  # absolute: the sweep file names the preset by it
case_name=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp/home" XDG_CACHE_HOME="$tmp/cache" XDG_DATA_HOME="$tmp/data"

. "$(dirname "${BASH_SOURCE[0]}")/../support/test_helpers.sh"  # fail, expect_in, same_tensors
. "$(dirname "${BASH_SOURCE[0]}")/netns_hosts.sh"              # netns_hosts, netns_mpirun, ...

# The tiny config of cli_test.sh, 3 systems.
tiny_args=(--set model.hidden_size=32 --set model.num_hidden_layers=1 --set model.num_heads=2
           --set model.filter_size=64 --set train_input.max_sequence_length=32
           --set train_input.batch_size=6 --set eval_input.batch_size=2
           --set runconfig.eval_frequency=2 --set runconfig.eval_steps=1 --set runconfig.log_steps=1
           --set runconfig.num_csx=3 --set model.dropout_rate=0.1 --threads 1)
hosts_list() { local n=$1; seq -s, -f 'nshost%g' 1 "$n"; }  # nshost1,...,nshostN

case "$case_name" in
netns_train)
  # `wafer train` with 3 systems over 2 and 3 hosts (one rank each) ends with the one-process
  # run's tensors, bit for bit; every rank names its own host, and the run store keeps them. With
  # MemoryX in 3 shards on 3 hosts too (checkpoints, optimizer state included). A sweep over 3
  # hosts records the same sweep as one process.
  netns_hosts 3
  args=("${tiny_args[@]}" --set runconfig.checkpoint_steps=2 --max-steps 4)
  "$wafer" train "$src/presets/gpt-nano.yaml" --db "$tmp/one.sqlite" "${args[@]}" \
      --set "runconfig.model_dir=$tmp/one" >/dev/null 2>&1 || fail "one process: exit $?"
  for run in 2:1 3:1 3:3; do
    np=${run%:*} shards=${run#*:} dir="$tmp/np${np}s${shards}"
    out=$(netns_mpirun --host "$(hosts_list "$np")" -np "$np" "$wafer" train \
          "$src/presets/gpt-nano.yaml" --db "$dir.sqlite" "${args[@]}" \
          --set memoryx.shards=$shards --set "runconfig.model_dir=$dir" 2>&1) \
        || fail "$np hosts, $shards shards: exit $?: $out"
    expect_in "finished after 4 steps" "$out"
    for rank in $(seq 0 $((np - 1))); do expect_in "rank $rank of $np on nshost$((rank + 1)):" "$out"; done
    same_tensors "$tmp/one/model.safetensors" "$dir/model.safetensors"
    for c in 2 4; do
      same_tensors "$tmp/one/checkpoint-$c/model.safetensors" "$dir/checkpoint-$c/model.safetensors"
      same_tensors "$tmp/one/checkpoint-$c/optimizer.safetensors" \
                   "$dir/checkpoint-$c/optimizer.safetensors"
    done
    out=$("$wafer" runs show 1 --db "$dir.sqlite" 2>&1) || fail "runs show: exit $?: $out"
    expect_in "rank $((np - 1)) *on nshost$np " "$out"
    [[ $shards -gt 1 ]] && expect_in "MemoryX shard on rank $((shards - 1)): " "$out"
  done
  # A sweep: rank 0 hands trials to the workers on the other hosts (point-to-point over TCP).
  write_small_sweep "$tmp/sweep.yaml" "$src/presets/gpt-nano.yaml" 10 "{values: [0.002, 0.004]}"
  sweep_args=(--set model.num_hidden_layers=1 --set model.num_heads=2
              --set train_input.max_sequence_length=32 --set train_input.batch_size=2
              --set eval_input.batch_size=2 --set runconfig.eval_steps=1 --set runconfig.log_steps=1
              --set wafer.emulate=false --set runconfig.eval_frequency=0
              --set runconfig.num_threads=1 --json)
  "$wafer" sweep "$tmp/sweep.yaml" --db "$tmp/sweep1.sqlite" "${sweep_args[@]}" >"$tmp/sweep1.log" 2>&1 \
      || fail "sweep in one process: exit $?: $(tail -3 "$tmp/sweep1.log")"
  out=$(netns_mpirun --host "$(hosts_list 3)" -np 3 "$wafer" sweep "$tmp/sweep.yaml" \
        --db "$tmp/sweep3.sqlite" "${sweep_args[@]}" 2>&1) || fail "sweep on 3 hosts: exit $?: $out"
  expect_in "rank 2 of 3 on nshost3: sweep trials" "$out"
  sweep_dump "$tmp/sweep1.sqlite" >"$tmp/sweep1.txt"
  sweep_dump "$tmp/sweep3.sqlite" >"$tmp/sweep3.txt"
  [[ $(grep -c "^trial .* finished steps 10 " "$tmp/sweep1.txt") -eq 4 ]] \
      || fail "expected 4 finished trials: $(cat "$tmp/sweep1.txt")"
  diff "$tmp/sweep1.txt" "$tmp/sweep3.txt" >"$tmp/diff" \
      || fail "3 hosts recorded another sweep than one process: $(head -20 "$tmp/diff")" ;;
netns_link_down)
  # Host 2's link goes down after the first checkpoint (no reset: its packets are dropped).
  # Rank 0's peer watch (WAFER_PEER_TIMEOUT, here 2 s) names rank 1 and its host in one message;
  # mpirun ends the job once TCP keepalive gives the host up (netns_mpirun: 5 + 3 x 2 s), within
  # 60 s in all; the run shows interrupted, and `--resume` on the remaining host (mpirun -np 1
  # there) and in one process ends with the uninterrupted run's tensors.
  netns_hosts 2
  args=("${tiny_args[@]}" --set runconfig.num_csx=2 --set train_input.batch_size=4
        --set runconfig.checkpoint_steps=100 --set runconfig.log_steps=100
        --set runconfig.eval_frequency=100 --max-steps 1500)
  "$wafer" train "$src/presets/gpt-nano.yaml" --db "$tmp/ref.sqlite" "${args[@]}" \
      --set "runconfig.model_dir=$tmp/ref" >/dev/null 2>&1 || fail "ref: exit $?"
  netns_mpirun --host nshost1,nshost2 -np 2 -x WAFER_PEER_TIMEOUT=2 "$wafer" train \
      "$src/presets/gpt-nano.yaml" --db "$tmp/a.sqlite" "${args[@]}" \
      --set "runconfig.model_dir=$tmp/a" >"$tmp/a.log" 2>&1 &
  job=$!
  for _ in $(seq 1 1500); do [[ -d "$tmp/a/checkpoint-100" ]] && break; sleep 0.02; done
  [[ -d "$tmp/a/checkpoint-100" ]] || { kill -9 "$job"; fail "no checkpoint-100 within 30 s"; }
  netns_link nshost2 down
  down_at=$(date +%s)
  for _ in $(seq 1 600); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$job" 2>/dev/null && { kill -9 "$job"; fail "the job still ran 60 s after nshost2's link went down: $(cat "$tmp/a.log")"; }
  wait "$job" && fail "the job ended well with a host cut off: $(cat "$tmp/a.log")"
  echo "the job ended $(( $(date +%s) - down_at )) s after nshost2's link went down"
  [[ -f "$tmp/a/model.safetensors" ]] && fail "the job finished before the link went down"
  log=$(cat "$tmp/a.log")
  [[ $(grep -c "has not answered for" <<<"$log") -eq 1 ]] \
      || fail "expected one message naming the silent rank: $log"
  expect_in "wafer: rank 0 on nshost1: rank 1 on nshost2 has not answered for [0-9.]* s: its host is down or the network to it is cut" "$log"
  expect_in "ORTE has lost communication with a remote daemon" "$log"
  expect_in "Remote daemon: .* on node nshost2" "$log"
  # Cut off, host 2's daemon gives mpirun up the same way and ends its rank (for the record).
  for waited in $(seq 0 30); do
    [[ -z $(ip netns pids "$(netns_name nshost2)") ]] && break
    sleep 1
  done
  echo "processes left in nshost2's namespace $waited s after the job ended: $(ip netns pids "$(netns_name nshost2)" | wc -l)"
  # The run store says which rank ran on that host.
  out=$("$wafer" runs show 1 --db "$tmp/a.sqlite" 2>&1)
  expect_in "interrupted" "$out"
  expect_in "rank 1   on nshost2 " "$out"
  expect_in "interrupted" "$("$wafer" runs list --db "$tmp/a.sqlite" 2>&1)"
  newest=$(ls -d "$tmp/a"/checkpoint-* | sort -t- -k2 -n | tail -1)
  cp -r "$tmp/a" "$tmp/b"
  cp "$tmp/a.sqlite" "$tmp/b.sqlite"
  out=$(netns_mpirun --host nshost1 -np 1 "$wafer" train --resume "$tmp/a" --db "$tmp/a.sqlite" \
        --threads 1 2>&1) || fail "resume on nshost1: exit $?: $out"
  expect_in "finished after 1500 steps" "$out"
  same_tensors "$tmp/ref/model.safetensors" "$tmp/a/model.safetensors"
  out=$("$wafer" train --resume "$tmp/b/$(basename "$newest")" --db "$tmp/b.sqlite" --threads 1 \
        --set "runconfig.model_dir=$tmp/b" 2>&1) || fail "resume in one process: exit $?: $out"
  same_tensors "$tmp/ref/model.safetensors" "$tmp/b/model.safetensors" ;;
netns_slow_link)
  # Host 2's link limited to 2 Mbit/s both ways (tc tbf: this machine's kernel has no netem, so
  # no added delay). The run still ends with the one-process tensors, and its timing puts the
  # time where it went: rank 0 waits for host 2's gradients in the reduce, which the run reports
  # as sending gradients out (log line and the store's wall_stream_out_s), not as compute.
  # Rank 1 sends 5 steps x 20896 gradients x 4 bytes = 418 KB through 250 KB/s: at least 1.6 s
  # on the wire, whatever the machine's load; the tiny model computes 5 steps in milliseconds.
  command -v tc >/dev/null || netns_skip "there is no tc command (install iproute2)"
  netns_hosts 2
  args=("${tiny_args[@]}" --set runconfig.num_csx=2 --set train_input.batch_size=4
        --set runconfig.eval_frequency=0 --max-steps 5)
  for end in "netns_exec nshost2 tc qdisc add dev eth0" "tc qdisc add dev $(netns_veth nshost2)"; do
    $end root tbf rate 2mbit burst 4kb latency 2s 2>"$tmp/tc.err" \
        || netns_skip "tc cannot add a tbf qdisc (the rate limit): $(cat "$tmp/tc.err")"
  done
  "$wafer" train "$src/presets/gpt-nano.yaml" --db "$tmp/one.sqlite" "${args[@]}" \
      --set "runconfig.model_dir=$tmp/one" >/dev/null 2>&1 || fail "one process: exit $?"
  out=$(netns_mpirun --host nshost1,nshost2 -np 2 "$wafer" train "$src/presets/gpt-nano.yaml" \
        --db "$tmp/slow.sqlite" "${args[@]}" --set "runconfig.model_dir=$tmp/slow" 2>&1) \
      || fail "2 hosts, a slow link: exit $?: $out"
  same_tensors "$tmp/one/model.safetensors" "$tmp/slow/model.safetensors"
  line=$(grep "^wall time of rank 0's systems over this session's 5 steps: " <<<"$out") \
      || fail "no wall-time line: $out"
  echo "$line"
  expect_in "sending gradients out (the reduce across processes" "$line"
  show=$("$wafer" runs show 1 --db "$tmp/slow.sqlite" 2>&1) || fail "runs show: exit $?: $show"
  metric() { awk -v k="$1" '$1 == k {print $2}' <<<"$show"; }
  compute=$(metric wall_compute_s) gather=$(metric wall_stream_out_s)
  [[ -n $compute && -n $gather ]] || fail "runs show has no wall_compute_s and wall_stream_out_s: $show"
  python3 -c "import sys; c, g = map(float, sys.argv[1:]); sys.exit(0 if g >= 1.0 and c < g / 10 else 1)" \
      "$compute" "$gather" \
      || fail "expected over 1 s sending gradients out and a tenth of that computing, got $gather s and $compute s" ;;
*)
  fail "unknown case $case_name" ;;
esac
