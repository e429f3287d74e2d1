#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Issue 19, disk and concurrency: the real `wafer` binary on a full disk, on read-only folders,
# with a run store whose folder disappears, several processes on one run store, and a diverging
# run resumed with a smaller learning rate. Usage: reliability_test.sh WAFER_BINARY SOURCE_DIR CASE
#
# A full disk is a small tmpfs filled to the last byte where this machine may mount one (root, no
# container restriction); elsewhere the file size limit (ulimit -f, with SIGXFSZ ignored so writes
# fail with EFBIG instead of killing the process) stands in for it. Read-only folders are
# read-only mounts where possible (root ignores permission bits); elsewhere permission bits, which
# a non-root user cannot bypass. A case that can test neither says "skipped" and why.
# WAFER_TEST_NO_MOUNT=1 takes the fallbacks even as root (to try them where mounts work).
set -uo pipefail
wafer=$1
src=$2
case_name=$3
tmp=$(mktemp -d)
mounts=()
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null; done
  chmod -R u+w "$tmp" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM  # the EXIT trap then unmounts and removes
export HOME="$tmp/home" XDG_CACHE_HOME="$tmp/cache" XDG_DATA_HOME="$tmp/data"
db="$tmp/runs.sqlite"

. "$(dirname "${BASH_SOURCE[0]}")/../support/test_helpers.sh"  # fail, expect_in, same_tensors
skip() { echo "skipped [$case_name]: $*"; exit 0; }
expect_not_in() { ! grep -q -- "$1" <<<"$2" || fail "did not expect '$1' in output:
$2"; }

tiny_args=(--set model.hidden_size=32 --set model.num_hidden_layers=1 --set model.num_heads=2
           --set model.filter_size=64 --set train_input.max_sequence_length=32
           --set train_input.batch_size=2 --set eval_input.batch_size=2
           --set runconfig.eval_frequency=5 --set runconfig.eval_steps=1 --set runconfig.log_steps=1)
preset="$src/presets/gpt-nano.yaml"

# Mounts a tmpfs of SIZE at DIR; fails (status 1) where this machine does not allow it.
small_fs() {  # dir size
  mkdir -p "$1"
  [[ $(id -u) -eq 0 && -z "${WAFER_TEST_NO_MOUNT:-}" ]] || return 1
  mount -t tmpfs -o "size=$2" tmpfs "$1" 2>/dev/null || return 1
  mounts+=("$1")
}
# Fills the file system holding DIR so that BYTES stay free.
leave_free() {  # dir bytes
  rm -f "$1/.filler"
  local avail
  avail=$(df -B1 --output=avail "$1" | tail -1)
  fallocate -l $((avail - $2)) "$1/.filler" 2>/dev/null \
    || dd if=/dev/zero of="$1/.filler" bs=4096 count=$(((avail - $2) / 4096)) status=none
}
fill_fs() { dd if=/dev/zero of="$1/.filler" bs=4k status=none 2>/dev/null; sync; true; }
free_fs() { rm -f "$1/.filler"; }
# Makes DIR read-only: a read-only bind mount as root, permission bits otherwise.
read_only() {  # dir
  if [[ $(id -u) -eq 0 && -n "${WAFER_TEST_NO_MOUNT:-}" ]]; then
    return 1
  elif [[ $(id -u) -eq 0 ]]; then
    mount --bind "$1" "$1" 2>/dev/null || return 1
    mounts+=("$1")
    mount -o remount,ro,bind "$1" 2>/dev/null || return 1
  else
    chmod a-w "$1"
  fi
}
writable_again() {  # dir
  if [[ $(id -u) -eq 0 ]]; then
    umount "$1" && unset 'mounts[${#mounts[@]}-1]'
  else
    chmod u+w "$1"
  fi
}

# Neither temp files nor partial checkpoint folders anywhere under DIR.
no_partial_files() {  # dir
  local left
  left=$(find "$1" \( -name '*.tmp*' -o -name '.*.partial' -o -name '*.partial' \) 2>/dev/null)
  [[ -z "$left" ]] || fail "partial files left behind: $left"
}
# Every checkpoint folder under DIR is complete (trainer_state.json is written last).
complete_checkpoints() {  # dir
  local c
  for c in "$1"/checkpoint-*; do
    [[ -e "$c" ]] || continue
    [[ -f "$c/trainer_state.json" && -s "$c/model.safetensors" && -s "$c/optimizer.safetensors" ]] \
      || fail "incomplete checkpoint folder $c: $(ls "$c")"
  done
}
status_of() {  # run-id store
  python3 - "$2" "$1" <<'PY'
import sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute("SELECT status FROM runs WHERE id = ?", (int(sys.argv[2]),)).fetchone()
print(row[0] if row else "none")
PY
}

case "$case_name" in
disk_full_checkpoint | disk_full_final_weights)
  # The disk holding the model folder fills up while a resumed run writes its next checkpoints
  # (room for a weights file, not for the optimizer state beside it) or, worse, has no room for
  # any weights file (the checkpoints and the final weights fail): a clear error naming the file
  # and the fix, the previous checkpoint intact, no partial files; with space back the run resumes
  # and ends exactly where an undisturbed continuation ends.
  # 1.1 MB of weights: far larger than the run store, so a file size limit hits the weights first.
  model=("${tiny_args[@]}" --set model.hidden_size=128 --set model.num_heads=4
         --set model.filter_size=512 --set runconfig.checkpoint_steps=5)
  "$wafer" train "$preset" --max-steps 10 --db "$tmp/ref.sqlite" "${model[@]}" \
      --set "runconfig.model_dir=$tmp/ref" >/dev/null 2>&1 || fail "reference: exit $?"
  "$wafer" train --resume 1 --max-steps 20 --allow-config-change --db "$tmp/ref.sqlite" \
      >/dev/null 2>&1 || fail "reference resume: exit $?"
  disk="$tmp/disk"
  if small_fs "$disk" 16m; then how="tmpfs"; else how="ulimit"; mkdir -p "$disk"; fi
  "$wafer" train "$preset" --max-steps 10 --db "$db" "${model[@]}" \
      --set "runconfig.model_dir=$disk/model" >/dev/null 2>&1 || fail "first part: exit $?"
  before=$(cd "$disk/model/checkpoint-10" && sha256sum *)
  weights=$(stat -c %s "$disk/model/checkpoint-10/model.safetensors")
  if [[ $case_name == disk_full_checkpoint ]]; then room=$((weights * 3 / 2)); else room=$((weights / 2)); fi
  resume=("$wafer" train --resume 1 --max-steps 20 --allow-config-change --db "$db")
  if [[ $how == tmpfs ]]; then
    leave_free "$disk" "$room"
    out=$("${resume[@]}" 2>&1); code=$?
    reason="No space left on device"
  else
    out=$(trap '' XFSZ; ulimit -f $((room / 1024)); "${resume[@]}" 2>&1); code=$?
    reason="File too large"
  fi
  echo "--- full disk ($how, room for $room bytes, weights $weights): exit $code"
  grep "^error" <<<"$out" | head -4
  expect_in "$reason" "$out"
  expect_in "free some disk space" "$out"
  expect_in "checkpoint at step 15 not written: cannot write $disk/model/" "$out"
  expect_in "$disk/model/checkpoint-10 stays the newest complete checkpoint" "$out"
  if [[ $case_name == disk_full_checkpoint ]]; then
    [[ $code -eq 0 ]] || fail "expected the run to finish (only its checkpoints failed), got $code"
    expect_in "optimizer.safetensors" "$out"
    [[ $(status_of 1 "$db") == finished ]] || fail "status $(status_of 1 "$db"), expected finished"
  else
    [[ $code -eq 1 ]] || fail "expected exit 1 when the final weights cannot be written, got $code"
    expect_in "cannot write $disk/model/model.safetensors" "$out"
    expect_in "newest complete checkpoint $disk/model/checkpoint-10 once that is fixed: wafer train --resume 1" "$out"
    [[ $(status_of 1 "$db") == failed ]] || fail "status $(status_of 1 "$db"), expected failed"
  fi
  [[ "$before" == "$(cd "$disk/model/checkpoint-10" && sha256sum *)" ]] \
      || fail "checkpoint-10 changed on a full disk"
  no_partial_files "$disk/model"
  complete_checkpoints "$disk/model"
  [[ ! -e "$disk/model/checkpoint-15" && ! -e "$disk/model/checkpoint-20" ]] \
      || fail "a checkpoint folder was left on a full disk: $(ls "$disk/model")"
  # Space is back: the run resumes from checkpoint-10 and ends where the reference ends.
  [[ $how == tmpfs ]] && free_fs "$disk"
  out=$("${resume[@]}" 2>&1) || fail "resume with space back: exit $? $out"
  expect_in "resumed from $disk/model/checkpoint-10" "$out"
  [[ $(status_of 1 "$db") == finished ]] || fail "status $(status_of 1 "$db") after the resume"
  same_tensors "$tmp/ref/model.safetensors" "$disk/model/model.safetensors"
  same_tensors "$tmp/ref/checkpoint-20/optimizer.safetensors" \
      "$disk/model/checkpoint-20/optimizer.safetensors"
  complete_checkpoints "$disk/model"
  no_partial_files "$disk/model" ;;
concurrent_writers)
  # Two studios and a CLI run on one run store: three `wafer train` processes (each studio's run
  # and the CLI's) start together, while one process reads the store in a loop as a studio does
  # (`runs list`, `runs show`: open, list, read metrics) and another makes short runs and deletes
  # them again. Nothing may be lost, no "database is locked" may reach anyone, and every run is
  # listed with one loss row per step. About 30 s on two busy cores; WAFER_STRESS_STEPS scales it.
  steps=${WAFER_STRESS_STEPS:-3000}
  writers=3
  start=$(date +%s.%N)
  pids=()
  for i in $(seq 1 $writers); do
    timeout 300 "$wafer" train "$preset" --max-steps "$steps" --db "$db" --name "writer-$i" \
        "${tiny_args[@]}" --set runconfig.checkpoint_steps=20 \
        --set "runconfig.model_dir=$tmp/model-$i" >"$tmp/writer-$i.out" 2>&1 &
    pids+=($!)
  done
  (
    reads=0 errors=0
    alive() { local p; for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
    while alive "${pids[@]}"; do
      for cmd in "runs list" "runs show 1" "runs show 2" "runs show 3"; do
        # shellcheck disable=SC2086
        if ! out=$("$wafer" $cmd --db "$db" 2>&1); then
          # A run not created yet is no failure; anything else is.
          grep -q "has no run with id" <<<"$out" || { errors=$((errors + 1)); echo "$out" >>"$tmp/reader.err"; }
        fi
        grep -qi "locked\|busy" <<<"$out" && { errors=$((errors + 1)); echo "$out" >>"$tmp/reader.err"; }
        reads=$((reads + 1))
      done
    done
    echo "$reads $errors" >"$tmp/reader.count"
  ) &
  reader=$!
  # The other studio: starts short runs and deletes them again (createRun, a run's whole record,
  # deleteRun), all while the writers log.
  (
    made=0 errors=0
    alive() { local p; for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
    while alive "${pids[@]}"; do
      out=$("$wafer" train "$preset" --max-steps 3 --json --db "$db" --name scratch \
            "${tiny_args[@]}" --set "runconfig.model_dir=$tmp/scratch" 2>&1) \
        || { errors=$((errors + 1)); echo "$out" >>"$tmp/studio.err"; continue; }
      id=$(grep -o '"run_id":[0-9]*' <<<"$out" | tail -1 | cut -d: -f2)
      out=$("$wafer" runs delete "$id" --db "$db" 2>&1) \
        || { errors=$((errors + 1)); echo "$out" >>"$tmp/studio.err"; }
      rm -rf "$tmp/scratch"
      made=$((made + 1))
    done
    echo "$made $errors" >"$tmp/studio.count"
  ) &
  studio=$!
  codes=()
  for p in "${pids[@]}"; do wait "$p"; codes+=($?); done
  wait $reader
  wait $studio
  read -r scratch scratch_errors <"$tmp/studio.count"
  elapsed=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  read -r reads read_errors <"$tmp/reader.count"
  locked=$(cat "$tmp"/writer-*.out "$tmp/reader.err" "$tmp/studio.err" 2>/dev/null | grep -ci "database is locked\|busy" || true)
  report=$(python3 - "$db" "$steps" <<'PY'
import sqlite3, sys
db, steps = sqlite3.connect(sys.argv[1]), int(sys.argv[2])
problems, written = [], 0
runs = db.execute("SELECT id, name, status FROM runs ORDER BY id").fetchall()
leftover = [run for run, name, _ in runs if name == "scratch"]
if leftover: problems.append(f"scratch runs not deleted: {leftover}")
runs = [r for r in runs if r[1] != "scratch"]
for run, name, status in runs:
    loss = db.execute("SELECT COUNT(*), COUNT(DISTINCT step), MIN(step), MAX(step) FROM metrics "
                      "WHERE run = ? AND key = 'loss'", (run,)).fetchone()
    rows = db.execute("SELECT COUNT(*) FROM metrics WHERE run = ?", (run,)).fetchone()[0]
    written += loss[0]
    if status != "finished": problems.append(f"run {run} ({name}) is {status}")
    if loss != (steps, steps, 1, steps):
        problems.append(f"run {run} ({name}): {loss[0]} loss rows over steps {loss[2]}..{loss[3]}, expected {steps}")
    print(f"run {run} {name}: {status}, {loss[0]}/{steps} loss rows, {rows} metric rows in all")
check = db.execute("PRAGMA integrity_check").fetchone()[0]
if check != "ok": problems.append("integrity_check: " + check)
print(f"loss rows written {written} / expected {steps * len(runs)}; integrity_check {check}")
for p in problems: print("PROBLEM " + p)
PY
)
  echo "$report"
  echo "writers $writers + 1 reader + 1 create/delete process, ${elapsed} s, exits ${codes[*]}, reads $reads (failed $read_errors), scratch runs made and deleted $scratch (failed $scratch_errors), lock errors seen $locked"
  [[ "${codes[*]}" == "$(printf '0 %.0s' $(seq 1 $writers) | sed 's/ $//')" ]] \
      || fail "a writer failed: exits ${codes[*]}; $(tail -3 "$tmp"/writer-*.out)"
  [[ $locked -eq 0 ]] || fail "'database is locked' reached a user: $(grep -i "locked\|busy" "$tmp"/writer-*.out "$tmp/reader.err" "$tmp/studio.err" | head -5)"
  [[ $(grep -c '^run ' <<<"$report") -eq $writers ]] || fail "expected $writers runs: $report"
  expect_not_in "PROBLEM" "$report"
  [[ $read_errors -eq 0 ]] || fail "the reading process failed $read_errors times: $(head -20 "$tmp/reader.err")"
  [[ $reads -gt 0 ]] || fail "the reader never read"
  [[ $scratch_errors -eq 0 ]] || fail "the create/delete process failed $scratch_errors times: $(head -20 "$tmp/studio.err")" ;;
diverge_resume)
  # A learning rate that jumps to 1e30 at step 13 makes the loss of step 14 non-finite: the run
  # is shown and stopped as diverged (exit 3). Checkpoints are written every step, so
  # checkpoint-13 holds the blown-up weights that gave that loss: it is set aside
  # (checkpoint-13.diverged), checkpoint-12 is the last good one, and the run resumes from it with
  # a sane learning rate (a config change, so --allow-config-change) to a finite end.
  python3 - "$preset" "$tmp/diverge.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
start = text.index("    learning_rate:")
end = text.index("\n\n", start)
text = text[:start] + """    learning_rate:
        - {scheduler: "Constant", learning_rate: 3.0e-3, total_iters: 12}
        - {scheduler: "Constant", learning_rate: 1.0e+30}""" + text[end:]
open(sys.argv[2], "w").write(text)
PY
  out=$("$wafer" train "$tmp/diverge.yaml" --max-steps 30 --json --db "$db" "${tiny_args[@]}" \
        --set "train_input.data_dir=$src/resources/corpus" --set runconfig.checkpoint_steps=1 \
        --set "runconfig.model_dir=$tmp/model" 2>&1); code=$?
  [[ $code -eq 3 ]] || fail "expected exit 3 for a diverged run, got $code: $(tail -5 <<<"$out")"
  expect_in '"status":"diverged"' "$out"
  expect_in "loss became" "$out"
  [[ $(status_of 1 "$db") == diverged ]] || fail "store status $(status_of 1 "$db"), expected diverged"
  # The loss went non-finite and is stored as such (the studio plots it, never hides it).
  python3 - "$db" <<'PY' || fail "the non-finite loss was not recorded"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT step, value, special FROM metrics WHERE run = 1 AND key = 'loss' ORDER BY step").fetchall()
sys.exit(0 if rows and rows[-1][1] is None and rows[-1][2] in ("nan", "inf", "-inf") else 1)
PY
  complete_checkpoints "$tmp/model"
  no_partial_files "$tmp/model"
  newest=$(find "$tmp/model" -maxdepth 1 -regex '.*/checkpoint-[0-9]+' -printf '%f\n' | sed 's/checkpoint-//' | sort -n | tail -1)
  [[ $newest -eq 12 ]] || fail "expected checkpoint-12 as the last good one, newest is $newest"
  [[ -f "$tmp/model/checkpoint-13.diverged/model.safetensors" ]] \
      || fail "checkpoint-13, whose weights diverged, was not set aside: $(ls "$tmp/model")"
  expect_in "set checkpoint-13 aside as checkpoint-13.diverged" "$out"
  # Resumed as it was, the run diverges again (the same schedule from the same state).
  out=$("$wafer" train --resume 1 --json --db "$db" 2>&1); code=$?
  [[ $code -eq 3 ]] || fail "resumed unchanged, the run should diverge again (exit 3), got $code"
  # A new learning rate alters training: refused unless allowed.
  out=$("$wafer" train --resume 1 --set optimizer.learning_rate=1e-3 --db "$db" 2>&1); code=$?
  [[ $code -eq 1 ]] || fail "a learning-rate change without --allow-config-change: expected exit 1, got $code"
  expect_in "allow-config-change" "$out"
  out=$("$wafer" train --resume 1 --allow-config-change --set optimizer.learning_rate=1e-3 \
        --json --db "$db" 2>&1) || fail "resume with a smaller learning rate: exit $? $(tail -5 <<<"$out")"
  expect_in "resumed from $tmp/model/checkpoint-12" "$out"
  expect_in '"status":"finished"' "$out"
  [[ $(status_of 1 "$db") == finished ]] || fail "store status $(status_of 1 "$db") after the resume"
  python3 - "$db" <<'PY' || fail "the resumed run does not end with a finite loss at step 30"
import math, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT step, value FROM metrics WHERE run = 1 AND key = 'loss' ORDER BY step").fetchall()
steps = [s for s, _ in rows]
ok = steps == list(range(1, 31)) and all(v is not None and math.isfinite(v) for _, v in rows)
print(f"loss rows {len(rows)}, last {rows[-1] if rows else None}")
sys.exit(0 if ok else 1)
PY
  ;;
read_only_model_folder)
  # A model folder that cannot be written: a new run into it, and resuming a run whose folder
  # became read-only, both fail at once with the folder named; nothing is written, the existing
  # checkpoints stay as they were.
  mkdir -p "$tmp/ro"
  read_only "$tmp/ro" || skip "cannot make a folder read-only here"
  touch "$tmp/ro/probe" 2>/dev/null && skip "a read-only folder is writable here (root without mounts)"
  out=$("$wafer" train "$preset" --max-steps 4 --db "$db" "${tiny_args[@]}" \
        --set "runconfig.model_dir=$tmp/ro/model" 2>&1); code=$?
  echo "--- new run into a read-only folder: exit $code"; grep -i error <<<"$out" | head -3
  [[ $code -eq 1 ]] || fail "expected exit 1, got $code: $out"
  expect_in "$tmp/ro/model" "$out"
  [[ -z "$(ls -A "$tmp/ro")" ]] || fail "files were written into the read-only folder: $(ls -A "$tmp/ro")"
  writable_again "$tmp/ro"
  "$wafer" train "$preset" --max-steps 4 --db "$db" "${tiny_args[@]}" --set runconfig.checkpoint_steps=2 \
      --set "runconfig.model_dir=$tmp/ro/model" >/dev/null 2>&1 || fail "train into a writable folder: exit $?"
  before=$(cd "$tmp/ro/model" && find . -type f -exec sha256sum {} + | sort)
  read_only "$tmp/ro/model" || skip "cannot make the model folder read-only"
  out=$("$wafer" train --resume "$tmp/ro/model" --max-steps 8 --allow-config-change --db "$db" 2>&1); code=$?
  echo "--- resume into a read-only folder: exit $code"; grep -i error <<<"$out" | head -3
  [[ $code -eq 1 ]] || fail "expected exit 1 resuming into a read-only folder, got $code: $out"
  expect_in "$tmp/ro/model" "$out"
  expect_in "must be writable" "$out"
  [[ "$before" == "$(cd "$tmp/ro/model" && find . -type f -exec sha256sum {} + | sort)" ]] \
      || fail "files changed in the read-only folder"
  writable_again "$tmp/ro/model"
  out=$("$wafer" train --resume "$tmp/ro/model" --max-steps 8 --allow-config-change --db "$db" 2>&1) \
      || fail "resume once writable: exit $? $out"
  complete_checkpoints "$tmp/ro/model"
  no_partial_files "$tmp/ro/model" ;;
read_only_store)
  # A run store on a read-only disk: training with it fails with the file named and the way out,
  # never "attempt to write a readonly database" alone; listing and showing it work (read-only);
  # nothing is written.
  "$wafer" train "$preset" --max-steps 2 --db "$tmp/store/runs.sqlite" "${tiny_args[@]}" \
      --set "runconfig.model_dir=$tmp/model" >/dev/null 2>&1 || fail "train exit $?"
  read_only "$tmp/store" || skip "cannot make a folder read-only here"
  touch "$tmp/store/probe" 2>/dev/null && skip "a read-only folder is writable here (root without mounts)"
  before=$(cd "$tmp/store" && find . -type f -exec sha256sum {} + | sort)
  out=$("$wafer" train "$preset" --max-steps 2 --db "$tmp/store/runs.sqlite" "${tiny_args[@]}" \
        --set "runconfig.model_dir=$tmp/model2" 2>&1); code=$?
  echo "--- train with a read-only store: exit $code"; grep -i "error\|store" <<<"$out" | head -3
  [[ $code -eq 1 ]] || fail "expected exit 1, got $code: $out"
  expect_in "$tmp/store/runs.sqlite" "$out"
  expect_in "read-only\|not writable" "$out"
  expect_in "with --db" "$out"
  [[ ! -e "$tmp/model2/model.safetensors" ]] || fail "a run trained without its record"
  # Listing and showing read it read-only (immutable: no -wal is left), saying so once.
  out=$("$wafer" runs list --db "$tmp/store/runs.sqlite" 2>&1); code=$?
  echo "--- runs list on a read-only store: exit $code"; head -3 <<<"$out"
  [[ $code -eq 0 ]] || fail "runs list on a read-only store: exit $code: $out"
  expect_in "note: run store $tmp/store/runs.sqlite is .*; it is read without a change" "$out"
  expect_in "gpt" "$out"
  out=$("$wafer" runs show 1 --json --db "$tmp/store/runs.sqlite" 2>/dev/null) \
      || fail "runs show on a read-only store: exit $?"
  expect_in '"status":"finished"' "$out"
  # Changing it still fails with the way out.
  out=$("$wafer" runs delete 1 --db "$tmp/store/runs.sqlite" 2>&1) && fail "deleted from a read-only store: $out"
  expect_in "read-only\|not writable" "$out"
  # `store check` does not call a store it cannot read for want of writing damaged.
  out=$("$wafer" store check --db "$tmp/store/runs.sqlite" 2>&1); code=$?
  echo "--- store check on a read-only store: exit $code"; head -3 <<<"$out"
  expect_not_in "damaged" "$out"
  [[ $code -eq 0 ]] || expect_in "read-only\|not writable" "$out"
  [[ "$before" == "$(cd "$tmp/store" && find . -type f -exec sha256sum {} + | sort)" ]] \
      || fail "files changed in the read-only store folder" ;;
store_vanishes)
  # The run store's folder (with the run's folder inside it, the default place) is deleted while
  # the run trains: the run stops at its next checkpoint (training on with nowhere to save would
  # only lose more work) with errors naming what is gone, and leaves no half-written files
  # anywhere (nothing is recreated in a folder the user removed).
  mkdir -p "$tmp/gone"
  "$wafer" train "$preset" --max-steps 100000 --json --db "$tmp/gone/runs.sqlite" "${tiny_args[@]}" \
      --set runconfig.checkpoint_steps=5 >"$tmp/out.jsonl" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    ls "$tmp/gone/runs/run-1"/checkpoint-* >/dev/null 2>&1 && break
    sleep 0.1
  done
  ls "$tmp/gone/runs/run-1"/checkpoint-* >/dev/null 2>&1 || { kill -9 $pid; fail "no checkpoint within 60 s"; }
  # The writer may create a checkpoint folder while rm walks the tree: remove until gone.
  for _ in $(seq 1 50); do rm -rf "$tmp/gone" 2>/dev/null; [[ -e "$tmp/gone" ]] || break; done
  [[ ! -e "$tmp/gone" ]] || fail "could not remove $tmp/gone"
  # With nowhere left to save, the run stops by itself at its next checkpoint.
  for _ in $(seq 1 300); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  kill -0 $pid 2>/dev/null && { kill -9 $pid; fail "the run went on training with its folder gone"; }
  wait $pid; code=$?
  out=$(cat "$tmp/out.jsonl")
  echo "--- store folder removed mid-run: exit $code"; grep -i '"error"' <<<"$out" | head -5
  [[ $code -eq 1 ]] || fail "expected exit 1 (failed), got $code"
  expect_in "folder $tmp/gone/runs/run-1 was deleted while the run was running" "$out"
  expect_in "run store $tmp/gone/runs.sqlite was deleted" "$out"
  expect_in '"status":"failed"' "$out"
  [[ ! -e "$tmp/gone" ]] || fail "the removed folder was recreated: $(find "$tmp/gone")" ;;
disk_full_store)
  # The disk holding the run store fills up while a run trains (its model folder is elsewhere):
  # the run goes on and ends with an error that says rows were lost, names the store and the fix;
  # its checkpoints are intact; with space back the store works again and the run can be resumed.
  small_fs "$tmp/storedisk" 2m || skip "cannot mount a small tmpfs here (the store's full disk is tested by RunStoreConcurrency.AFullDiskIsReportedAndTheStoreRecovers)"
  sdb="$tmp/storedisk/runs.sqlite"
  # Enough steps that the run is still training when the disk fills: the tiny model trains 40
  # steps in under 0.1 s, so a run of 40 could end before the poll below saw its checkpoint.
  "$wafer" train "$preset" --max-steps 1500 --json --db "$sdb" "${tiny_args[@]}" \
      --set runconfig.checkpoint_steps=500 --set "runconfig.model_dir=$tmp/model" \
      >"$tmp/out.jsonl" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    grep -q '"step":5,' "$tmp/out.jsonl" 2>/dev/null && break
    sleep 0.05
  done
  grep -q '"step":5,' "$tmp/out.jsonl" || { kill -9 $pid; fail "no step 5 within 30 s"; }
  fill_fs "$tmp/storedisk"
  wait $pid; code=$?
  out=$(cat "$tmp/out.jsonl")
  echo "--- store disk full mid-run: exit $code"; grep "\"level\":\"error\"" <<<"$out" | sort -u | cut -c1-400
  expect_in "$sdb" "$out"
  expect_in "record in the run store is incomplete" "$out"
  expect_in "free some disk space" "$out"
  # Every error the store gives on the full disk says what to do, not only SQLite's words.
  expect_not_in 'database or disk is full"' "$out"
  complete_checkpoints "$tmp/model"
  no_partial_files "$tmp/model"
  no_partial_files "$tmp/storedisk"
  [[ -s "$tmp/model/model.safetensors" ]] || fail "the final weights were not written"
  free_fs "$tmp/storedisk"
  out=$("$wafer" store check --db "$sdb" 2>&1) || fail "store check after the full disk: exit $? $out"
  out=$("$wafer" runs list --db "$sdb" 2>&1) || fail "runs list after the full disk: exit $? $out"
  expect_in "run-1\|gpt" "$out"
  # With space back the run continues from its newest checkpoint and its record is complete.
  out=$("$wafer" train --resume 1 --max-steps 1505 --allow-config-change --json --db "$sdb" 2>&1) \
      || fail "resume with space back: exit $? $(tail -5 <<<"$out")"
  expect_in '"status":"finished"' "$out"
  expect_not_in "incomplete" "$out"
  [[ $(status_of 1 "$sdb") == finished ]] || fail "status $(status_of 1 "$sdb") after the resume" ;;
*) fail "unknown case $case_name" ;;
esac
