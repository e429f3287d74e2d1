# SPDX-License-Identifier: GPL-3.0-or-later
# Separate hosts on one machine, for the netns_* tests (sourced by netns_test.sh): each host is a
# network namespace with its own address, its own host name and only loopback besides one veth
# into a bridge, so MPI ranks on two hosts can reach each other only over TCP between distinct
# addresses. mpirun runs in a head namespace on the same bridge and starts its daemons through
# netns_agent.sh (Open MPI's plm_rsh_agent), which enters the host's namespace.
#
#   netns_hosts N            makes hosts nshost1..nshostN (10.213.0.1..N) and the head (.254);
#                            exits 77 (ctest: skipped) naming what is missing when it cannot.
#   netns_mpirun ARGS...     mpirun in the head namespace, TCP only, on the hosts' bridge
#   netns_link HOST up|down  takes a host's link up or down (its veth, seen from the bridge)
#   netns_exec HOST CMD...   a command inside a host's namespace (e.g. tc)
# Every namespace, link and file made here goes away on exit (netns_teardown, trapped), also
# on failure. Names carry a per-run id, so parallel test runs do not collide; each run has its
# own bridge, so the same subnet in two runs is two separate networks.
# Needs: $tmp (the test's folder; the exit trap set here removes it too) and fail
# (test_helpers.sh).

netns_subnet=10.213.0.0/24
netns_id=""

netns_skip() {
  echo "skipped: this test makes hosts of network namespaces, veth pairs and a bridge, but $*"
  exit 77
}

netns_name() { echo "wafer-$netns_id-$1"; }  # a host's (or the head's) namespace
# A host's link, its bridge end (15 characters at most): wsv<id>1 for nshost1, wsv<id>h the head.
netns_veth() { local n=${1#nshost}; [[ $1 == nshead ]] && n=h; echo "wsv$netns_id$n"; }

netns_teardown() {
  [[ -n $netns_id ]] || return 0
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^wafer-$netns_id-"); do
    # Whatever still runs in this run's namespaces was started by this test (a daemon cut off by
    # a downed link): end it by id before the namespace goes.
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    rm -rf "/etc/netns/$ns"
  done
  # The links too: a namespace lives on, unnamed, while a killed rank's TCP sockets still
  # retransmit to a cut-off peer, and its veth with it (deleting one end deletes the pair).
  local link
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' \
                | grep "^wsv$netns_id"); do
    ip link del "$link" 2>/dev/null
  done
  ip link del "wsb$netns_id" 2>/dev/null  # the bridge
  netns_id=""
}

# netns_add_host NAME ADDRESS: a namespace with loopback up and eth0 on the bridge.
netns_add_host() {
  local name=$1 address=$2 ns veth
  ns=$(netns_name "$name")
  veth=$(netns_veth "$name")
  ip netns add "$ns" || fail "ip netns add $ns failed"
  ip link add "$veth" type veth peer name eth0 netns "$ns" || fail "ip link add $veth failed"
  ip link set "$veth" master "wsb$netns_id" up || fail "cannot attach $veth to the bridge"
  ip -n "$ns" link set lo up || fail "loopback in $ns"
  ip -n "$ns" addr add "$address/24" dev eth0 || fail "address $address in $ns"
  ip -n "$ns" link set eth0 up || fail "eth0 up in $ns"
}

netns_hosts() {
  local n=$1 i
  [[ $EUID -eq 0 ]] || netns_skip "it is not root (they need root)"
  command -v ip >/dev/null || netns_skip "there is no ip command (install iproute2)"
  command -v unshare >/dev/null || netns_skip "there is no unshare command (install util-linux)"
  # A short id (interface names have 15 characters at most), claimed by making the run's
  # bridge: making a link is atomic, so a parallel run that drew the same id draws again.
  local id attempt
  for attempt in $(seq 1 20); do
    id=$(printf '%04x' $(( (RANDOM << 1 ^ $$ ^ attempt) & 0xffff )))
    ip link add "wsb$id" type bridge 2>"$tmp/netns.err" && break
    grep -q "File exists" "$tmp/netns.err" || netns_skip "ip link add type bridge failed: $(cat "$tmp/netns.err")"
    id=""
  done
  [[ -n $id ]] || fail "no free bridge name wsb<id> in 20 tries"
  netns_id=$id
  trap 'netns_teardown; rm -rf "$tmp"' EXIT
  ip link set "wsb$netns_id" up
  if ! ip netns add "$(netns_name probe)" 2>"$tmp/netns.err"; then
    netns_skip "ip netns add failed: $(cat "$tmp/netns.err")"
  fi
  ip netns del "$(netns_name probe)"
  netns_add_host nshead 10.213.0.254
  for i in $(seq 1 "$n"); do netns_add_host "nshost$i" "10.213.0.$i"; done
  # Host names resolve through each namespace's own /etc/hosts (ip netns exec binds
  # /etc/netns/NS/hosts over /etc/hosts), so mpirun's messages name nshost1, not an address.
  {
    echo "127.0.0.1 localhost"
    echo "10.213.0.254 nshead"
    for i in $(seq 1 "$n"); do echo "10.213.0.$i nshost$i"; done
  } >"$tmp/netns.hosts"
  for i in head $(seq 1 "$n"); do
    local ns; ns=$(netns_name "nshost$i"); [[ $i == head ]] && ns=$(netns_name nshead)
    mkdir -p "/etc/netns/$ns" && cp "$tmp/netns.hosts" "/etc/netns/$ns/hosts" \
        || netns_skip "/etc/netns/$ns/hosts (each namespace's /etc/hosts) cannot be written"
  done
}

netns_exec() {
  local host=$1; shift
  ip netns exec "$(netns_name "$host")" "$@"
}

netns_link() {  # HOST up|down
  local veth; veth=$(netns_veth "$1")
  ip link set "$veth" "$2" || fail "ip link set $veth $2 failed"
}

# mpirun in the head namespace (host name nshead); ranks go to the hosts given with --host
# (nshost1,...). TCP only, on the bridge's subnet: no shared memory (the self BTL is a rank
# talking to itself). Open MPI notices a host that vanished (no reset, packets just dropped) only
# through TCP keepalive on its daemons' connections, after oob_tcp_keepalive_time (300 s) plus
# keepalive_probes (9) x keepalive_intvl (20 s) by default: here 5 + 3 x 2 s.
netns_mpirun() {
  local mpirun=${WAFER_MPIEXEC:-mpirun}
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 WAFER_NETNS_ID=$netns_id \
      ip netns exec "$(netns_name nshead)" unshare --uts -- \
      /bin/sh -c 'hostname nshead && exec "$@"' sh "$mpirun" \
      --mca plm_rsh_agent "$src/tests/app/netns_agent.sh" --mca plm_rsh_no_tree_spawn 1 \
      --mca btl tcp,self --mca btl_tcp_if_include "$netns_subnet" \
      --mca oob_tcp_if_include "$netns_subnet" --mca oob_tcp_keepalive_time 5 \
      --mca oob_tcp_keepalive_intvl 2 --mca oob_tcp_keepalive_probes 3 --bind-to none "$@"
}
