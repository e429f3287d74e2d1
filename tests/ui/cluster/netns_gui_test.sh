#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Issue 35: the studio's Run on Cluster → Open MPI on separate hosts made of network namespaces
# (tests/app/netns_hosts.sh: nshost1 and nshost2, TCP only). The Qt test
# (cluster_netns_test.cpp) runs in the head namespace, as mpirun does in netns_mpirun, and its
# mpirun reaches the hosts through the same settings, given as Open MPI's environment variables
# (the studio passes its environment to mpirun): the launch agent that enters a host's
# namespace, TCP only, on the hosts' bridge. Every namespace and link goes away at the end.
# Usage: netns_gui_test.sh GUI_TEST_BINARY [Qt Test arguments]
# Exits 77 (ctest's skip) naming what is missing where namespaces cannot be made (not root).
set -uo pipefail
binary=$1
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
case_name=ui_cluster_netns_test
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/support/test_helpers.sh"  # fail
. "$src/tests/app/netns_hosts.sh"       # netns_hosts, netns_name, netns_subnet
netns_hosts 2
OMPI_MCA_plm_rsh_agent="$src/tests/app/netns_agent.sh" OMPI_MCA_plm_rsh_no_tree_spawn=1 \
OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=$netns_subnet \
OMPI_MCA_oob_tcp_if_include=$netns_subnet WAFER_NETNS_ID=$netns_id \
WAFER_TEST_NETNS_HOSTS=nshost1,nshost2 QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}" \
    ip netns exec "$(netns_name nshead)" unshare --uts -- \
    /bin/sh -c 'hostname nshead && exec "$@"' sh "$binary" "${@:2}"
