# SPDX-License-Identifier: GPL-3.0-or-later
# A single-machine Slurm cluster for the tests that need a real one (tests/app/slurm_test.sh,
# tests/ui/cluster/slurm_gui_test.sh). Sourced, with `tmp` (a fresh temp dir), `case_name` and
# skip() (exits 77 with a message) set by the caller. start_cluster starts munged, slurmctld and
# two slurmd (the nodes n1 and n2, both aliases of this host; partition "test", MaxTime 10
# minutes) with their own key, config, free ports, state and logs under $tmp/slurm, and exports
# SLURM_CONF for sbatch, srun, squeue, scancel, scontrol and sinfo. The EXIT trap it sets stops
# every daemon it started and every process that carries $marker (the jobs' tasks), also on
# failure; start_watchdog SECONDS ends the test cleanly before ctest's TIMEOUT would kill it.
# shellcheck shell=bash
export HOME="$tmp/home" XDG_CACHE_HOME="$tmp/cache" XDG_DATA_HOME="$tmp/data"
export TMPDIR="$tmp/tmp"  # Open MPI's session folders (mpirun), anything else's temp files
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export SLURM_CONF="$tmp/slurm/slurm.conf"  # sbatch, srun, squeue, scancel, scontrol, sinfo
mkdir -p "$TMPDIR"
# Every process this test starts through Slurm carries this variable: the daemons (and the
# slurmstepd they fork), and every job's processes (sbatch passes its environment on). The
# cleanup ends whatever still carries it, by process id; the test's own shell does not.
marker="WAFER_SLURM_TEST_CLUSTER=$tmp"
daemons=()   # munged, slurmctld, slurmd n1, slurmd n2: started in the foreground, in the background
cluster_up=""
slurmctld=""
watchdog=""

alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $s != Z* ]]; }
marked_processes() {
  local f p
  for f in $(grep -lxzF -- "$marker" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}
    p=${p%/environ}
    [[ $p != "$$" ]] && echo "$p"
  done
}
show_logs() {
  local f
  for f in "$tmp"/slurm/log/* "$tmp"/*.out; do
    [[ -f $f ]] || continue
    echo "---- $f (last 25 lines)" >&2
    tail -n 25 "$f" >&2
  done
}
cleanup() {
  local code=$? pid i
  [[ -n $watchdog ]] && kill "$watchdog" 2>/dev/null
  if [[ -n $cluster_up ]]; then
    [[ $code -ne 0 && $code -ne 77 ]] && show_logs
    # Jobs first, as scancel ends them (SIGTERM to their steps); then the daemons; then
    # whatever of this test still runs (a slurmstepd, a task), by id.
    # (Slurm's clients retry a slurmctld that is not there for a minute: ask only a live one.)
    local queued=""
    [[ -n $slurmctld ]] && alive "$slurmctld" && queued=$(timeout 10 squeue -h -o %i 2>/dev/null)
    if [[ -n $queued ]]; then
      timeout 10 scancel $queued 2>/dev/null
      for ((i = 0; i < 50; i++)); do
        [[ -z $(timeout 10 squeue -h -o %i 2>/dev/null) ]] && break
        sleep 0.2
      done
    fi
    for ((i = ${#daemons[@]} - 1; i >= 0; i--)); do kill -TERM "${daemons[i]}" 2>/dev/null; done
    for pid in "${daemons[@]}"; do
      for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
    done
    for pid in $(marked_processes); do kill -KILL "$pid" 2>/dev/null; done
    for pid in "${daemons[@]}"; do wait "$pid" 2>/dev/null; done
    for pid in $(marked_processes); do echo "cleanup: process $pid outlived the test" >&2; code=1; done
  fi
  rm -rf "$tmp"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 1' INT TERM  # the EXIT trap then stops the cluster
# ctest ends a test past its TIMEOUT with SIGKILL, which no trap sees: end first, cleanly.
start_watchdog() {  # SECONDS
  ( sleep "$1" & s=$!; trap 'kill $s; exit 0' TERM; wait $s; kill -TERM $$ ) >/dev/null 2>&1 &
  watchdog=$!
}

# Three free TCP ports on this machine: slurmctld's and the two slurmd's.
free_ports() {
  python3 -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])'
}

start_cluster() {
  [[ $(id -u) -eq 0 ]] || skip "needs root: slurmd starts every job as its user"
  local c
  for c in munged munge unmunge slurmctld slurmd sbatch srun squeue scancel scontrol sinfo; do
    command -v "$c" >/dev/null \
        || skip "no $c here: installer/deps.sh installs slurmctld slurmd slurm-client munge"
  done
  local s="$tmp/slurm" host ports cpus i
  host=$(hostname)
  cpus=$(nproc)
  mkdir -p "$s"/{state,log,key,munge} "$s"/spool/{n1,n2} "$s"/tmp/{n1,n2}
  # munged serves only a socket every user can reach (its folders world-executable); its key
  # stays readable by root alone.
  chmod 755 "$tmp" "$s" "$s/munge"
  chmod 700 "$s/key"
  head -c 1024 /dev/urandom >"$s/key/munge.key"
  chmod 400 "$s/key/munge.key"
  cluster_up=1
  env "$marker" munged --foreground --socket="$s/munge/socket" --key-file="$s/key/munge.key" \
      --pid-file="$s/munge/munged.pid" --log-file="$s/log/munged.log" \
      --seed-file="$s/munge/seed" >"$s/log/munged.out" 2>&1 &
  daemons+=($!)
  # The socket first (munge itself retries a missing one for many seconds), then a credential.
  for ((i = 0; i < 50; i++)); do
    [[ -S $s/munge/socket ]] && break
    alive "${daemons[0]}" || break
    sleep 0.2
  done
  [[ -S $s/munge/socket ]] \
      && munge -n -S "$s/munge/socket" 2>/dev/null | unmunge -S "$s/munge/socket" >/dev/null 2>&1 \
      || skip "munged did not start: $(tail -n 3 "$s/log/munged.out" 2>&1)"
  read -r -a ports < <(free_ports)
  # Two nodes, both this host (NodeHostname, one slurmd each with -N): a 2-task job with one task
  # per node is placed as on two machines. No cgroups (a container): processes tracked by
  # parent id, no task binding. TmpFS per node: Slurm's PMIx plugin makes its client folders
  # there, which the two nodes of one host would otherwise share under /tmp and collide in.
  # KillWait: the seconds between a cancelled step's SIGTERM and SIGKILL (30 by default).
  cat >"$SLURM_CONF" <<EOF
ClusterName=wafertest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=${ports[0]}
AuthType=auth/munge
AuthInfo=socket=$s/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool/%n
TmpFS=$s/tmp/%n
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd-%n.pid
SlurmctldLogFile=$s/log/slurmctld.log
SlurmdLogFile=$s/log/slurmd-%n.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
KillWait=5
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=${ports[1]} CPUs=$cpus State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=${ports[2]} CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=n1,n2 Default=YES MaxTime=10 State=UP
EOF
  env "$marker" slurmctld -D -i -f "$SLURM_CONF" >"$s/log/slurmctld.out" 2>&1 &
  slurmctld=$!
  daemons+=($!)
  for node in n1 n2; do
    env "$marker" slurmd -D -N "$node" -f "$SLURM_CONF" >"$s/log/slurmd-$node.out" 2>&1 &
    daemons+=($!)
  done
  for ((i = 0; i < 150; i++)); do
    [[ $(timeout 10 sinfo -h -N -o '%N %t' 2>/dev/null | sort | tr '\n' ' ') == "n1 idle n2 idle " ]] \
        && break
    alive "$slurmctld" || break
    sleep 0.2
  done
  if ((i == 150)) || ! alive "$slurmctld"; then
    skip "the Slurm daemons did not come up within 30 s: $(timeout 10 sinfo -N 2>&1 | tail -n 3)
$(grep -h -iE 'error|fatal' "$s"/log/* 2>/dev/null | tail -n 8)"
  fi
  srun --mpi=list 2>&1 | grep -qw pmix \
      || skip "this Slurm has no PMIx plugin (srun --mpi=list): $(srun --mpi=list 2>&1 | tr '\n' ' ')"
}

