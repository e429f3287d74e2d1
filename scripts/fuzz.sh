#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Fuzzes every reader of outside input with libFuzzer (clang, ASan + UBSan; tests/fuzz), one
# target after the other, each for the given time, and prints a table: executions, coverage,
# new inputs found, findings (crash, leak, timeout and out-of-memory files).
#
# Usage: scripts/fuzz.sh [--merge] [--cpu] [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET  default 60; the issue's campaign is `scripts/fuzz.sh --cpu 600`
#   --cpu               count SECONDS as the fuzzer's own CPU time (user + system) rather than
#                       wall time, so a busy, shared machine still gives each target its share;
#                       the table's cpu_s column is measured either way
#   TARGET              default all (tests/fuzz/targets.cmake): safetensors torch_checkpoint
#                       peft_adapter config tokenizer token_cache trainer_state checkpoint_folder
#                       hf_config run_store lesson chat_json_records csv_records zip_records
#                       chat_template hdf5_dataset
#   --merge             afterwards, add the new inputs that grow coverage to the committed seed
#                       corpus (tests/fuzz/corpus/<target>/, libFuzzer's -merge=1)
# Environment: WAFER_FUZZ_BUILD (default build-fuzz), WAFER_FUZZ_OUT (default /tmp/wafer-fuzz:
# new inputs in <out>/<target>/new, findings in <out>/<target>/findings, the log in
# <out>/<target>/log). Runs under `nice -n 10`, one process at a time. Exits 1 when anything was
# found. A finding is replayed with `build-fuzz/tests/fuzz/fuzz_<target> FILE`; once the reader
# is fixed, copy FILE into tests/fuzz/regressions/<target>/ so ./test.sh replays it for good.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${WAFER_FUZZ_BUILD:-$root/build-fuzz}
out=${WAFER_FUZZ_OUT:-/tmp/wafer-fuzz}

merge=0
cpu_budget=0
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --merge) merge=1 ;;
    --cpu) cpu_budget=1 ;;
    *) echo "fuzz: unknown option '$1' (options: --merge, --cpu)" >&2; exit 2 ;;
  esac
  shift
done
seconds=60
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
fi
all_targets=$(sed -n 's/^ *"\([a-z0-9_]*\)|.*/\1/p' "$root/tests/fuzz/targets.cmake")
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  read -r -a targets <<<"$(echo $all_targets)"
fi
for t in "${targets[@]}"; do
  if ! grep -qx "$t" <<<"$all_targets"; then
    echo "fuzz: unknown target '$t'; the targets are: $(echo $all_targets)" >&2
    exit 2
  fi
done

# clang with libFuzzer's runtime (Debian: clang, libclang-rt-14-dev), installed here rather than
# by installer/deps.sh, which ./test.sh runs and which needs neither.
if ! printf 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }\n' |
  clang++ -x c++ -fsanitize=fuzzer,address,undefined -o /dev/null - 2>/dev/null; then
  echo "fuzz: clang++ cannot link libFuzzer; installing clang and its runtime" >&2
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    clang libclang-rt-14-dev >/dev/null
fi

"$root/installer/deps.sh"
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  # -O1 with line tables and assertions on: quick to compile with the sanitizers, and an
  # engine assert is a finding too.
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" -DWAFER_BUILD_FUZZERS=ON -DWAFER_BUILD_GUI=OFF -DWAFER_BUILD_TESTS=OFF \
    -DWAFER_BUILD_BENCHMARKS=OFF >/dev/null
fi
cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]/#/fuzz_}"

# Scratch files of the targets (files they write per input) on tmpfs when there is one.
if [[ -d /dev/shm && -w /dev/shm ]]; then
  export TMPDIR=/dev/shm
fi

# Stack traces for UBSan reports too (ASan prints them anyway).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat.
cpu_seconds_of() {
  local fields
  read -r -a fields <<<"$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ ${#fields[@]} -gt 13 ]] || return 1
  echo $(((fields[11] + fields[12]) / $(getconf CLK_TCK)))
}

rows=()
found=0
for t in "${targets[@]}"; do
  dir="$out/$t"
  mkdir -p "$dir/new" "$dir/findings"
  wall_limit=$seconds
  ((cpu_budget)) && wall_limit=$((seconds * 20))  # the CPU budget below ends it first
  args=(-max_total_time="$wall_limit" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1
        -artifact_prefix="$dir/findings/")
  [[ -f "$root/tests/fuzz/$t.dict" ]] && args+=(-dict="$root/tests/fuzz/$t.dict")
  corpora=("$dir/new" "$root/tests/fuzz/corpus/$t")
  [[ -d "$root/tests/fuzz/regressions/$t" ]] && corpora+=("$root/tests/fuzz/regressions/$t")
  before=$(ls "$dir/findings")
  echo "fuzz: $t for ${seconds}s$( ((cpu_budget)) && echo ' of CPU time') (log: $dir/log)" >&2
  status=0
  TIMEFORMAT='%U %S'
  {
    time {
      nice -n 10 "$build/tests/fuzz/fuzz_$t" "${args[@]}" "${corpora[@]}" >"$dir/log" 2>&1 &
      pid=$!
      interrupted=0
      if ((cpu_budget)); then
        # libFuzzer has no CPU-time limit: interrupt it (it prints its final stats) once spent.
        while kill -0 "$pid" 2>/dev/null; do
          used=$(cpu_seconds_of "$pid") || break
          if ((used >= seconds)); then
            kill -INT "$pid" 2>/dev/null && interrupted=1
            break
          fi
          sleep 2
        done
      fi
      wait "$pid" || status=$?
      # libFuzzer exits 72 when interrupted (clang 14 has no -interrupted_exit_code)
      ((interrupted && status == 72)) && status=0
    }
  } 2>"$dir/cpu_time"
  cpu_s=$(tail -1 "$dir/cpu_time" | awk '{ printf "%d", $1 + $2 }' 2>/dev/null || echo "?")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  if [[ -z "$execs" ]]; then  # stopped by a finding before the final stats: the last status line
    execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$dir/log" | tail -1)
  fi
  cov_start=$(sed -n 's/.*INITED.* cov: \([0-9]*\).*/\1/p' "$dir/log" | head -1)
  cov_end=$(sed -n 's/^#.* cov: \([0-9]*\).*/\1/p' "$dir/log" | tail -1)
  corpus_end=$(sed -n 's/^#.* corp: \([0-9]*\)\/.*/\1/p' "$dir/log" | tail -1)
  added=$(sed -n 's/^stat::new_units_added: *//p' "$dir/log" | tail -1)
  crash_files=$(ls "$dir/findings" | grep -vxF -f <(printf '%s\n' "$before") | tr '\n' ' ' || true)
  findings=$(wc -w <<<"$crash_files")
  if ((findings > 0 || status != 0)); then
    found=1
    [[ $findings -eq 0 ]] && crash_files="exit status $status, see the log"
  fi
  rows+=("$(printf '%-18s %6s %12s %10s %14s %10s %8s  %s' "$t" "$cpu_s" "${execs:-?}" \
    "${cov_start:-?}->${cov_end:-?}" "${corpus_end:-?}" "${added:-?}" "$findings" \
    "${crash_files:-}")")
  if ((merge)); then
    nice -n 10 "$build/tests/fuzz/fuzz_$t" -merge=1 "$root/tests/fuzz/corpus/$t" "$dir/new" \
      >"$dir/merge.log" 2>&1 || echo "fuzz: merge of $t failed (see $dir/merge.log)" >&2
  fi
done

echo
echo "Fuzzing: ${seconds}s $( ((cpu_budget)) && echo 'of CPU time ')per target, $(clang++ --version | head -1), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf '%-18s %6s %12s %10s %14s %10s %8s  %s\n' target cpu_s executions coverage corpus_size new_inputs findings files
for row in "${rows[@]}"; do echo "$row"; done
echo "(findings in $out/<target>/findings; logs in $out/<target>/log)"
exit "$found"
