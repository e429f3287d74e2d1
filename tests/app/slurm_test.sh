#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Issue 35: `wafer` inside a real Slurm allocation. Each case starts a single-machine Slurm
# cluster of its own (munged, slurmctld, and two slurmd as the nodes n1 and n2, both aliases of
# this host) with its own key, config, free ports, state and logs in a temp dir, submits jobs
# with sbatch, and stops every daemon it started when it ends, also on failure.
# Usage: slurm_test.sh WAFER_BINARY SOURCE_DIR CASE
#   slurm_train          a 2-task `wafer train` job, once with `srun --mpi=pmix` and once with
#                        `mpirun` in the batch script, ends with the one-process tensors bit for
#                        bit; srun without PMIx is refused by one task with the fix
#   slurm_sweep          a 2-task `srun --mpi=pmix wafer sweep` records the one-process sweep
#   slurm_cancel_resume  scancel after a checkpoint: Slurm shows CANCELLED, wafer stops after the
#                        step in flight with a checkpoint (Slurm's SIGTERMs); a new job resumes
#                        it with mpirun and is cancelled too (stopped or interrupted: a race with
#                        Open MPI's daemons), a third (srun) ends with the uninterrupted run's
#                        tensors
#   slurm_rank_killed    rank 1 killed (SIGKILL): srun --kill-on-bad-exit ends the step, Slurm
#                        shows FAILED, wafer's store interrupted, and one process resumes it to
#                        the uninterrupted run's tensors
# Exits 77 (ctest's skip) naming what is missing where the daemons cannot run: not root, a
# Slurm or munge program missing (installer/deps.sh installs them), or daemons that do not come
# up. Accounting is off (AccountingStorageType none): sacct has nothing; squeue and scontrol
# give a job's state (scontrol for 5 minutes after its end, MinJobAge).
set -uo pipefail
wafer=$1
src=$2
case_name=$3
tmp=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/../support/test_helpers.sh"  # fail, expect_in, same_tensors
skip() { echo "skipped [$case_name]: $*"; exit 77; }

. "$(dirname "${BASH_SOURCE[0]}")/../support/slurm_cluster.sh"  # start_cluster, cleanup
start_watchdog 250

# Writes $tmp/NAME.sbatch, a 2-node job of one task per node running COMMAND (shell-quoted
# here), its output in $tmp/NAME.out, and submits it; sets $job to its id.
submit() {  # NAME COMMAND...
  local name=$1
  shift
  {
    echo '#!/bin/bash'
    echo "#SBATCH --job-name=$name"
    echo '#SBATCH --nodes=2'
    echo '#SBATCH --ntasks-per-node=1'
    echo '#SBATCH --time=5'
    echo "#SBATCH --output=$tmp/$name.out"
    printf '%q ' "$@"
    echo
  } >"$tmp/$name.sbatch"
  job=$(env "$marker" sbatch --parsable "$tmp/$name.sbatch") || fail "sbatch $name: exit $?: $job"
}
job_state() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
# Waits up to SECONDS for the job to end; prints its final state.
wait_job() {  # ID SECONDS
  local state="" i
  for ((i = 0; i < $2 * 5; i++)); do
    state=$(job_state "$1")
    case $state in
      "" | PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED) sleep 0.2 ;;
      *) echo "$state"; return ;;
    esac
  done
  echo "still $state after $2 s"
}
expect_job() {  # ID STATE SECONDS NAME
  local state
  state=$(wait_job "$1" "$3")
  [[ $state == "$2" ]] || fail "job $1 ($4) ended $state, expected $2: $(cat "$tmp/$4.out" 2>&1)"
}
# The pid of the job's wafer task of rank RANK (Open MPI's rank, from srun's PMIx).
task_of_rank() {  # JOB RANK
  local p
  for p in $(marked_processes); do
    [[ $(readlink "/proc/$p/exe") == "$(readlink -f "$wafer")" ]] \
        && grep -qxzF "SLURM_JOB_ID=$1" "/proc/$p/environ" 2>/dev/null \
        && grep -qxzF "PMIX_RANK=$2" "/proc/$p/environ" 2>/dev/null && echo "$p"
  done
}
wait_for_dir() {  # DIR JOB NAME: waits up to 60 s for DIR while the job runs
  local i state
  for ((i = 0; i < 600; i++)); do
    [[ -d $1 ]] && return
    state=$(job_state "$2")
    [[ $state == RUNNING || $state == PENDING || $state == CONFIGURING || -z $state ]] \
        || fail "job $2 ($3) ended $state before $1: $(cat "$tmp/$3.out" 2>&1)"
    sleep 0.1
  done
  fail "no $1 within 60 s: $(cat "$tmp/$3.out" 2>&1)"
}

# Waits for the job NAME's checkpoint-N in $tmp/a, then stops it as Slurm does at its time limit:
# scancel --signal=TERM to its steps, then scancel (SIGTERM to the steps again and to the batch
# script's srun or mpirun, which pass on theirs). Slurm shows CANCELLED; wafer stops after the
# step in flight with a final checkpoint (sets $stopped to its step), the repeated SIGTERMs
# notwithstanding.
cancel_after_checkpoint() {  # N NAME
  local out
  wait_for_dir "$tmp/a/checkpoint-$1" "$job" "$2"
  [[ $(squeue -h -j "$job" -o %T) == RUNNING ]] || fail "squeue: $(squeue -j "$job")"
  scancel --signal=TERM "$job" || fail "scancel --signal=TERM: exit $?"
  scancel "$job" || fail "scancel: exit $?"
  expect_job "$job" CANCELLED 60 "$2"
  out=$(cat "$tmp/$2.out")
  expect_in "CANCELLED AT" "$out"
  grep -q "stopped after [0-9]* steps" <<<"$out" || fail "$2: wafer did not stop cleanly: $out"
  stopped=$(grep -o "stopped after [0-9]* steps" <<<"$out" | grep -o "[0-9]*")
  ((stopped < 1500)) || fail "$2: the job finished before scancel"
  [[ -d $tmp/a/checkpoint-$stopped ]] || fail "$2: no final checkpoint-$stopped: $(ls "$tmp/a")"
}

preset="$src/presets/gpt-nano.yaml"
tiny_args=(--set model.hidden_size=32 --set model.num_hidden_layers=1 --set model.num_heads=2
           --set model.filter_size=64 --set train_input.max_sequence_length=32
           --set train_input.batch_size=2 --set eval_input.batch_size=2
           --set runconfig.eval_frequency=2 --set runconfig.eval_steps=1 --set runconfig.log_steps=1)

start_cluster  # first: a machine where it cannot run skips before any training
case "$case_name" in
slurm_train)
  # runconfig.num_csx = 3 systems over the 2 tasks (dropout on: the per-system seeds count too).
  args=("${tiny_args[@]}" --set runconfig.num_csx=3 --set train_input.batch_size=6
        --set model.dropout_rate=0.1 --max-steps 5 --threads 1)
  "$wafer" train "$preset" --db "$tmp/one.sqlite" "${args[@]}" \
      --set "runconfig.model_dir=$tmp/one" >/dev/null 2>&1 || fail "one process: exit $?"
  submit pmix srun --mpi=pmix "$wafer" train "$preset" --db "$tmp/pmix.sqlite" "${args[@]}" \
         --set "runconfig.model_dir=$tmp/pmix"
  pmix=$job
  # mpirun reads the allocation (2 slots on n1 and n2) and starts its daemons there with srun;
  # --bind-to none since both nodes are this one machine (each would bind its rank to core 0).
  submit mpirun mpirun --bind-to none "$wafer" train "$preset" --db "$tmp/mpirun.sqlite" "${args[@]}" \
           --set "runconfig.model_dir=$tmp/mpirun"
  mpirun=$job
  submit nopmix srun "$wafer" train "$preset" --db "$tmp/nopmix.sqlite" "${args[@]}" \
           --set "runconfig.model_dir=$tmp/nopmix"
  nopmix=$job
  expect_job "$pmix" COMPLETED 120 pmix
  expect_job "$mpirun" COMPLETED 120 mpirun
  expect_job "$nopmix" FAILED 60 nopmix
  host=$(hostname)
  for name in pmix mpirun; do
    same_tensors "$tmp/one/model.safetensors" "$tmp/$name/model.safetensors"
    out=$(cat "$tmp/$name.out")
    [[ $(grep -c "finished after 5 steps" <<<"$out") -eq 1 ]] || fail "$name: expected one summary: $out"
    expect_in "rank 0 of 2 on $host: system 0 of 3" "$out"
    expect_in "rank 1 of 2 on $host: systems 1-2 of 3" "$out"
    expect_in "cluster: 3 systems over 2 processes, MemoryX on rank 0" "$out"
    out=$("$wafer" runs show 1 --db "$tmp/$name.sqlite" 2>&1) || fail "runs show $name: $out"
    expect_in "placement (2 processes, MemoryX and SwarmX on rank 0):" "$out"
  done
  scontrol show job "$pmix" | grep -q "NodeList=n\[1-2\]" \
      || fail "the job did not run on n1 and n2: $(scontrol show job "$pmix")"
  # Plain srun (MpiDefault=none here): both tasks would train alone on the same files; task 0
  # says so with the fix, and nothing is written.
  out=$(cat "$tmp/nopmix.out")
  [[ $(grep -c "srun started 2 tasks of wafer without PMIx" <<<"$out") -eq 1 ]] \
      || fail "expected one refusal naming PMIx: $out"
  expect_in "srun --mpi=pmix wafer" "$out"
  [[ ! -e $tmp/nopmix.sqlite && ! -e $tmp/nopmix ]] || fail "srun without PMIx wrote a run" ;;
slurm_sweep)
  # As cli.mpi_sweep: 8 trials, parallel_trials 2; every trial's verdict, loss bit for bit,
  # metrics, log and final tensors (sweep_store_dump.py) as one process records them.
  write_small_sweep "$tmp/sweep.yaml" "$preset" 20
  sweep_args=("${tiny_args[@]:2}" --set wafer.emulate=false --set runconfig.eval_frequency=0
              --set runconfig.num_threads=1 --json)
  "$wafer" sweep "$tmp/sweep.yaml" --db "$tmp/one.sqlite" "${sweep_args[@]}" >/dev/null 2>&1 \
      || fail "one process: exit $?"
  sweep_dump "$tmp/one.sqlite" >"$tmp/one.txt"
  [[ $(grep -c "^trial .* finished steps 20 " "$tmp/one.txt") -eq 8 ]] \
      || fail "expected 8 finished trials: $(cat "$tmp/one.txt")"
  submit sweep srun --mpi=pmix "$wafer" sweep "$tmp/sweep.yaml" --db "$tmp/slurm.sqlite" \
      "${sweep_args[@]}"
  expect_job "$job" COMPLETED 150 sweep
  out=$(cat "$tmp/sweep.out")
  [[ $(grep -c '"event":"trial"' <<<"$out") -eq 8 ]] || fail "expected 8 trial lines: $out"
  expect_in "across 2 processes: one trial at a time on each rank" "$out"
  expect_in "rank 1 of 2 on .*: sweep trials" "$out"
  sweep_dump "$tmp/slurm.sqlite" >"$tmp/slurm.txt"
  diff "$tmp/one.txt" "$tmp/slurm.txt" >"$tmp/diff" \
      || fail "the Slurm job recorded another sweep than one process: $(head -20 "$tmp/diff")" ;;
slurm_cancel_resume | slurm_rank_killed)
  args=("${tiny_args[@]}" --set runconfig.num_csx=2 --set train_input.batch_size=4
        --set model.dropout_rate=0.1 --set runconfig.checkpoint_steps=100 --threads 1
        --set runconfig.log_steps=100 --set runconfig.eval_frequency=100)
  "$wafer" train "$preset" --max-steps 1500 --db "$tmp/ref.sqlite" "${args[@]}" \
      --set "runconfig.model_dir=$tmp/ref" >/dev/null 2>&1 || fail "ref: exit $?"
  if [[ $case_name == slurm_cancel_resume ]]; then
    # Cancelled with srun, resumed and cancelled again with mpirun, resumed with srun to the end.
    submit cancelled srun --mpi=pmix "$wafer" train "$preset" --max-steps 1500 \
        --db "$tmp/a.sqlite" "${args[@]}" --set "runconfig.model_dir=$tmp/a"
    cancel_after_checkpoint 100 cancelled
    expect_in "with a checkpoint (Slurm ends the job after its KillWait" "$(cat "$tmp/cancelled.out")"
    first=$stopped
    out=$("$wafer" runs list --db "$tmp/a.sqlite" 2>&1)
    grep -qE "^ +1 .* stopped " <<<"$out" || fail "the run is not shown stopped: $out"
    # With mpirun in the batch script Slurm's SIGTERM also reaches Open MPI's daemons (a step of
    # their own, started by srun), which end, and mpirun ends the job: whether rank 0 finished
    # its stop first is a race, so the run is left stopped or interrupted, and resumes from its
    # newest checkpoint either way.
    submit resumed mpirun --bind-to none "$wafer" train --resume "$tmp/a" --db "$tmp/a.sqlite" \
        --threads 1
    wait_for_dir "$tmp/a/checkpoint-$(((first / 100 + 1) * 100))" "$job" resumed
    scancel "$job" || fail "scancel: exit $?"
    expect_job "$job" CANCELLED 60 resumed
    expect_in "CANCELLED AT" "$(cat "$tmp/resumed.out")"
    out=$("$wafer" runs list --db "$tmp/a.sqlite" 2>&1)
    grep -qE "^ +1 .* (stopped|interrupted) " <<<"$out" \
        || fail "the run is neither stopped nor interrupted: $out"
    echo "mpirun's job, cancelled: the run is $(grep -oE "stopped|interrupted" <<<"$out" | head -1)"
    submit finished srun --mpi=pmix "$wafer" train --resume "$tmp/a" --db "$tmp/a.sqlite" --threads 1
    expect_job "$job" COMPLETED 150 finished
    expect_in "finished after 1500 steps" "$(cat "$tmp/finished.out")"
    same_tensors "$tmp/ref/model.safetensors" "$tmp/a/model.safetensors"
    exit 0
  fi
  # A task killed: srun --kill-on-bad-exit ends the step (SIGTERM to rank 0, which cannot finish
  # its step without rank 1, then SIGKILL after KillWait); the job fails and the run is left
  # interrupted, resumed by one process from its newest checkpoint.
  submit killed srun --mpi=pmix --kill-on-bad-exit=1 "$wafer" train "$preset" \
      --max-steps 1500 --db "$tmp/b.sqlite" "${args[@]}" --set "runconfig.model_dir=$tmp/b"
  wait_for_dir "$tmp/b/checkpoint-100" "$job" killed
  rank1=$(task_of_rank "$job" 1)
  [[ -n $rank1 ]] || fail "no task of rank 1 in job $job"
  kill -KILL "$rank1"
  expect_job "$job" FAILED 60 killed
  [[ -f $tmp/b/model.safetensors ]] && fail "the killed job finished before the kill"
  expect_in "task 1: Killed" "$(cat "$tmp/killed.out")"
  out=$("$wafer" runs list --db "$tmp/b.sqlite" 2>&1)
  expect_in "interrupted" "$out"
  out=$("$wafer" train --resume "$tmp/b" --db "$tmp/b.sqlite" --threads 1 2>&1) \
      || fail "resume with 1 process: exit $?: $out"
  expect_in "finished after 1500 steps" "$out"
  same_tensors "$tmp/ref/model.safetensors" "$tmp/b/model.safetensors" ;;
*)
  fail "unknown case" ;;
esac
exit 0
