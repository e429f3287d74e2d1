#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The gradient reduce in a tree of ranks against the gather into rank 0, with the network as the
# bottleneck (issue 35). Eight hosts made of network namespaces (tests/app/netns_hosts.sh), one
# rank and one system each, ranks talking TCP only; rank 0's host link limited to RATE both ways
# (tc tbf). Per layer and step, memoryx.reduce_fan_in 0 (the gather) brings 7 gradient slices
# into rank 0's link and 4 (SwarmX's fan-in) brings 4: ranks 1-3 send theirs, rank 4 sums ranks
# 4-7 into SwarmX's second group and sends one. The two run in turn, ROUNDS times; each run
# prints rank 0's wall time sending gradients out (the session's own split) and the whole job's
# wall time, and the end prints the medians and their ratio. Root only (namespaces).
# Usage: bench/netns_reduce_bench.sh WAFER [RATE (default 8mbit)] [ROUNDS (default 3)]
set -uo pipefail
wafer=$(realpath "$1")
rate=${2:-8mbit}
rounds=${3:-3}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp/home" XDG_CACHE_HOME="$tmp/cache" XDG_DATA_HOME="$tmp/data"
. "$src/tests/support/test_helpers.sh"  # fail
. "$src/tests/app/netns_hosts.sh"       # netns_hosts, netns_mpirun, netns_exec, netns_veth

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'); $(nproc) threads; rank 0's link: $rate"
netns_hosts 8
for end in "netns_exec nshost1 tc qdisc add dev eth0" "tc qdisc add dev $(netns_veth nshost1)"; do
  $end root tbf rate "$rate" burst 16kb latency 5s || fail "tc cannot limit nshost1's link"
done
args=(--set model.hidden_size=32 --set model.num_hidden_layers=1 --set model.num_heads=2
      --set model.filter_size=64 --set train_input.max_sequence_length=32
      --set train_input.batch_size=8 --set runconfig.num_csx=8 --set runconfig.eval_frequency=0
      --set wafer.emulate=false --max-steps 5 --threads 1)
declare -A out_s wall_s
for round in $(seq 1 "$rounds"); do
  for fan in 0 4; do
    start=$(date +%s.%N)
    log=$(netns_mpirun --host "$(seq -s, -f 'nshost%g' 1 8)" -np 8 "$wafer" train \
          "$src/presets/gpt-nano.yaml" --db "$tmp/r$round-f$fan.sqlite" "${args[@]}" \
          --set memoryx.reduce_fan_in=$fan --set "runconfig.model_dir=$tmp/r$round-f$fan" 2>&1) \
        || fail "fan-in $fan: exit $?: $log"
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    line=$(grep "^wall time of rank 0's systems" <<<"$log") || fail "no wall-time line: $log"
    sent=$(grep -o "^reduce tree .*" <<<"$log")
    secs=$(sed -E 's/.* ([0-9.]+ (s|ms|µs)) sending gradients out.*/\1/' <<<"$line")
    secs=$(awk '{ v = $1; if ($2 == "ms") v /= 1e3; if ($2 == "µs") v /= 1e6; print v }' <<<"$secs")
    out_s[$fan]+="$secs "
    wall_s[$fan]+="$wall "
    printf 'round %d  fan-in %d  gradients out on rank 0 %6.2f s  job %6.2f s  | %s\n' \
        "$round" "$fan" "$secs" "$wall" "${sent#reduce tree }"
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
g_out=$(median <<<"${out_s[0]}") t_out=$(median <<<"${out_s[4]}")
g_wall=$(median <<<"${wall_s[0]}") t_wall=$(median <<<"${wall_s[4]}")
printf 'median over %d rounds: gradients out on rank 0: gather %.2f s, tree %.2f s (%.2fx); job: gather %.2f s, tree %.2f s (%.2fx)\n' \
    "$rounds" "$g_out" "$t_out" "$(echo "$g_out / $t_out" | bc -l)" "$g_wall" "$t_wall" \
    "$(echo "$g_wall / $t_wall" | bc -l)"
