#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# small_model_speed.sh: gpt-nano's training speed of two builds of `wafer`, measured in the same
# run, e.g. an older commit's binary against today's:
#
#   git worktree add --detach ../old 9ac877d && cmake -S ../old -B ../old/build -G Ninja \
#       -DCMAKE_BUILD_TYPE=Release && cmake --build ../old/build --target wafer
#   scripts/small_model_speed.sh --old-binary ../old/build/app/wafer
#
# Each round trains presets/gpt-nano.yaml with both binaries, one after the other (which goes first
# alternates), on 1 thread and on 2, every run in a fresh data and cache folder (XDG_DATA_HOME,
# XDG_CACHE_HOME) holding the same warm token cache, so the run store and the cache are equal for
# both. It prints, per binary and thread count, the median over the rounds of the training
# tokens/s `wafer train` reports at its end and of the whole process's wall and CPU seconds
# (start-up included), then the ratios: new / old on each thread count, and 2 threads / 1 thread
# for each binary. Pairs run back to back, so a slow moment of a shared machine hits both alike;
# on a busy machine give more --rounds. Figures from one machine only: its CPU is printed first.
#
# Options: --old-binary PATH (required), --new-binary PATH (default: build/app/wafer beside this
# script's checkout), --steps N (default 300), --rounds R (default 3), --threads "1 2".
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
old=""
new="$root/build/app/wafer"
steps=300
rounds=3
threads="1 2"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --old-binary) old="$2"; shift 2 ;;
    --new-binary) new="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "small_model_speed.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -z "$old" ]]; then
  echo "small_model_speed.sh: give the binary to compare with: --old-binary PATH" >&2
  exit 2
fi
for bin in "$old" "$new"; do
  if [[ ! -x "$bin" ]]; then
    echo "small_model_speed.sh: $bin is not an executable; build its wafer target first" >&2
    exit 2
  fi
done
preset="$root/presets/gpt-nano.yaml"
work=$(mktemp -d "${TMPDIR:-/tmp}/small-model-speed.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [[ ! -x /usr/bin/time ]]; then
  echo "small_model_speed.sh: needs GNU time at /usr/bin/time (Debian: apt-get install time)" >&2
  exit 2
fi
isa=$(grep -m1 '^flags' /proc/cpuinfo | grep -o -w -E 'sse4_2|avx|avx2|fma|avx512f' | tr '\n' ' ')
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores;" \
  "CPU ISA: ${isa:-x86-64 baseline}"
echo "old: $old"
echo "new: $new"
echo "gpt-nano, $steps steps, $rounds round(s); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# The token cache both use: built once, untimed.
mkdir -p "$work/warm"
XDG_DATA_HOME="$work/warm/data" XDG_CACHE_HOME="$work/warm/cache" XDG_CONFIG_HOME="$work/warm/config" \
  "$new" train "$preset" --max-steps 1 --threads 1 >/dev/null 2>&1 || {
  echo "small_model_speed.sh: $new could not train $preset" >&2
  exit 1
}

# One run: prints "tokens/s wall_s cpu_s".
run_one() {
  local bin=$1 nthreads=$2 dir
  dir=$(mktemp -d "$work/run.XXXXXX")
  mkdir -p "$dir/cache"
  cp -r "$work/warm/cache/." "$dir/cache/"
  local out start end
  start=$(date +%s.%N)
  out=$(XDG_DATA_HOME="$dir/data" XDG_CACHE_HOME="$dir/cache" XDG_CONFIG_HOME="$dir/config" \
    /usr/bin/time -f 'cpu %U %S' "$bin" train "$preset" --max-steps "$steps" \
    --threads "$nthreads" 2>&1) || { echo "run failed: $bin" >&2; echo "$out" >&2; exit 1; }
  end=$(date +%s.%N)
  local tps cpu
  tps=$(grep '^finished after' <<<"$out" | grep -o -E '[0-9.]+ tokens/s' | tail -1 | cut -d' ' -f1)
  cpu=$(grep -E '^cpu ' <<<"$out" | tail -1 | awk '{print $2 + $3}')
  rm -rf "$dir"
  echo "$tps $(awk -v a="$start" -v b="$end" 'BEGIN{print b - a}') $cpu"
}

declare -A results
for ((r = 1; r <= rounds; r++)); do
  for t in $threads; do
    if ((r % 2)); then order="old new"; else order="new old"; fi
    for which in $order; do
      bin=$old
      [[ $which == new ]] && bin=$new
      figures=$(run_one "$bin" "$t")
      results[$which,$t]+="$figures"$'\n'
      printf 'round %d, %d thread(s), %s: %8.0f tokens/s, %6.1f s wall, %6.1f s CPU\n' \
        "$r" "$t" "$which" $figures
    done
  done
done

median() {  # column $1 of the lines on stdin
  awk -v c="$1" 'NF {print $c}' | sort -g | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'
}
echo
printf '%-10s %-8s %12s %10s %10s\n' binary threads tokens/s "wall s" "CPU s"
declare -A tps
for which in old new; do
  for t in $threads; do
    lines=${results[$which,$t]}
    tps[$which,$t]=$(median 1 <<<"$lines")
    printf '%-10s %-8s %12.0f %10.1f %10.1f\n' "$which" "$t" "${tps[$which,$t]}" \
      "$(median 2 <<<"$lines")" "$(median 3 <<<"$lines")"
  done
done
echo
for t in $threads; do
  awk -v n="${tps[new,$t]}" -v o="${tps[old,$t]}" -v t="$t" \
    'BEGIN{printf "new / old, %s thread(s): %.2fx tokens/s\n", t, n / o}'
done
set -- $threads
if [[ $# -ge 2 ]]; then
  for which in old new; do
    awk -v a="${tps[$which,$2]}" -v b="${tps[$which,$1]}" -v w="$which" -v x="$2" -v y="$1" \
      'BEGIN{printf "%s: %s threads / %s thread(s): %.2fx tokens/s\n", w, x, y, a / b}'
  done
fi
