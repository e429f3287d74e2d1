#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Open MPI's launch agent (plm_rsh_agent) for the netns_* tests, standing in for ssh: mpirun calls
# `netns_agent.sh HOST COMMAND...` to start its daemon on HOST. Here HOST (nshost1, ...) is a
# network namespace of this test run (WAFER_NETNS_ID, set by netns_hosts.sh): the daemon runs in
# it under its own UTS namespace whose host name is HOST, so every rank reports its host's name.
# The command is joined and run by a shell, as ssh does on the remote side.
host=$1
shift
[ -n "$WAFER_NETNS_ID" ] || { echo "netns_agent.sh: WAFER_NETNS_ID is not set" >&2; exit 1; }
case $host in
nshost[0-9]*) ;;
*) echo "netns_agent.sh: unknown host '$host' (expected nshost1, nshost2, ...)" >&2; exit 1 ;;
esac
exec ip netns exec "wafer-$WAFER_NETNS_ID-$host" unshare --uts -- \
    /bin/sh -c 'hostname "$1" && eval "$2"' sh "$host" "$*"
