#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Issue 35: the studio's Run on Cluster → Slurm against a real Slurm cluster of this machine
# (tests/support/slurm_cluster.sh: munged, slurmctld, two slurmd as the nodes n1 and n2), with
# the real `wafer` running the job's tasks. Starts the cluster, runs the Qt test
# (cluster_slurm_test.cpp) with SLURM_CONF pointing at it, and stops every daemon and job it
# started when it ends, also on failure.
# Usage: slurm_gui_test.sh GUI_TEST_BINARY [Qt Test arguments, e.g. one test function]
# Exits 77 (ctest's skip) naming what is missing where the daemons cannot run.
set -uo pipefail
binary=$1
case_name=ui_cluster_slurm_test
tmp=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/../../support/test_helpers.sh"  # fail
skip() { echo "skipped [$case_name]: $*"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/../../support/slurm_cluster.sh"  # start_cluster, cleanup
start_watchdog 280
start_cluster
# The studio's sbatch passes its environment to the job: the marker reaches every task, so the
# cleanup finds whatever a failed test leaves running.
env "$marker" QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}" "$binary" "${@:2}"
