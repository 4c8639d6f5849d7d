#!/usr/bin/env bash
# A multi-host test bed on one machine: N network namespaces ("hosts" h1..hN, 2 or 3) joined by
# veth links to a bridge in a namespace of its own (the "switch"), on the private link
# 10.77.0.0/24 (h1 = 10.77.0.1, ...), loopback up in each. Nothing touches the machine's own
# network namespace: traffic between the hosts goes only to their own addresses.
#
#   ci/hosts.sh check              exit 0 when namespaces can be made here, else prints why (exit 3)
#   ci/hosts.sh up                 makes the bed (idempotent: an existing, complete one is kept)
#   ci/hosts.sh down               ends every process in the bed's namespaces (by pid) and removes them
#   ci/hosts.sh exec HOST CMD...   runs CMD on HOST (h1..hN): its network namespace, and a UTS
#                                  namespace whose host name is HOST (so reports name hosts apart)
#   ci/hosts.sh rsh HOST WORDS...  as ssh does: the words joined into one command for sh on HOST
#                                  (Open MPI's rsh agent: --mca plm_rsh_agent "ci/hosts.sh rsh")
#   ci/hosts.sh with CMD...        up, runs CMD, down on exit whatever happens (its exit code)
#   ci/hosts.sh link HOST up|down  takes HOST's link to the switch down or up (a partition)
#   ci/hosts.sh delay HOST MS      adds MS ms of delay on HOST's link (tc netem; 0 removes it);
#                                  exit 4 when the kernel has no netem (CONFIG_NET_SCH_NETEM)
#   ci/hosts.sh throttle HOST KBIT limits HOST's link to KBIT kbit/s each way (tc tbf; 0 removes it)
#   ci/hosts.sh addr HOST          prints HOST's address
#   ci/hosts.sh slurm              starts Slurm on the bed (slurmctld on h1, a slurmd per host,
#                                  auth/none, state in /tmp/<prefix>-slurm) and prints the SLURM_CONF
#                                  to export; exit 3 with the reason when it cannot. The bed's
#                                  down ends it with everything else.
#
#   DM_HOSTS (default 3)  how many hosts     DM_HOSTS_PREFIX (default dmh)  namespace name prefix
set -euo pipefail

count=${DM_HOSTS:-3}
prefix=${DM_HOSTS_PREFIX:-dmh}
switch="${prefix}-switch"
subnet=10.77.0

die() { echo "hosts.sh: $*" >&2; exit 2; }
[[ "$count" =~ ^[23]$ ]] || die "DM_HOSTS must be 2 or 3, got '$count'"
[[ "$prefix" =~ ^[a-z][a-z0-9]{0,11}$ ]] || die "DM_HOSTS_PREFIX must be a short lowercase name, got '$prefix'"

ns_of() {  # h2 -> dmh-h2
  [[ "$1" =~ ^h[1-9]$ ]] && (( ${1#h} <= count )) || die "unknown host '$1' (h1..h$count)"
  echo "${prefix}-$1"
}
addr_of() { echo "$subnet.${1#h}"; }
exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }

# Why this machine cannot make the bed, or nothing.
blocker() {
  [[ $(id -u) == 0 ]] || { echo "not root (network namespaces need CAP_SYS_ADMIN)"; return; }
  command -v ip >/dev/null || { echo "no 'ip' command (apt-get install iproute2)"; return; }
  command -v unshare >/dev/null || { echo "no 'unshare' command (util-linux)"; return; }
  local probe="${prefix}-probe$$"
  if ! ip netns add "$probe" 2>/dev/null; then echo "'ip netns add' fails here (no network namespaces in this container)"; return; fi
  local why=""
  ip -n "$probe" link add p0 type veth peer name p1 2>/dev/null || why="veth links cannot be made here"
  [[ -n "$why" ]] || ip -n "$probe" link add b0 type bridge 2>/dev/null || why="bridges cannot be made here"
  ip netns del "$probe" 2>/dev/null || true
  echo "$why"
}

# Every process in a namespace, ended by pid: TERM, up to 2 s, then KILL.
end_processes_in() {
  local ns=$1 pids i
  exists "$ns" || return 0
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  [[ -z "$pids" ]] && return 0
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true
  for i in $(seq 1 20); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -z "$pids" ]] && return 0
    sleep 0.1
  done
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
}

down() {
  local h ns
  for h in $(seq 1 3); do
    ns="${prefix}-h$h"
    end_processes_in "$ns"
    exists "$ns" && ip netns del "$ns"
  done
  end_processes_in "$switch"
  exists "$switch" && ip netns del "$switch"
  return 0
}

complete() {
  local h
  exists "$switch" || return 1
  for h in $(seq 1 "$count"); do
    exists "${prefix}-h$h" || return 1
    ip -n "${prefix}-h$h" -4 addr show dev eth0 2>/dev/null | grep -q "inet $subnet.$h/" || return 1
  done
  # A bed of a larger count would leave a host the tests do not expect.
  (( count == 3 )) || ! exists "${prefix}-h3"
}

up() {
  local why
  why=$(blocker)
  [[ -z "$why" ]] || { echo "hosts.sh: cannot make the test bed: $why" >&2; exit 3; }
  if complete; then return 0; fi
  down  # a partial bed (an interrupted up): start over
  ip netns add "$switch"
  ip -n "$switch" link set lo up
  ip -n "$switch" link add br0 type bridge
  ip -n "$switch" link set br0 up
  local h ns
  for h in $(seq 1 "$count"); do
    ns="${prefix}-h$h"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # The veth pair is made in the host and its far end moved into the switch.
    ip -n "$ns" link add eth0 type veth peer name "p$h"
    ip -n "$ns" link set "p$h" netns "$switch"
    ip -n "$switch" link set "p$h" master br0
    ip -n "$switch" link set "p$h" up
    ip -n "$ns" addr add "$subnet.$h/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  # Every link is up at both ends (the tests themselves send the first traffic: no ping here).
  for h in $(seq 1 "$count"); do
    ip -n "${prefix}-h$h" link show eth0 | grep -q LOWER_UP &&
      ip -n "$switch" link show "p$h" | grep -q LOWER_UP ||
      { echo "hosts.sh: h$h's link to the switch did not come up" >&2; down; exit 3; }
  done
}

cmd=${1:-}
shift || true
case "$cmd" in
  check)
    why=$(blocker)
    if [[ -n "$why" ]]; then echo "$why"; exit 3; fi ;;
  up) up ;;
  down) down ;;
  exec)
    host=${1:?hosts.sh exec HOST CMD...}
    shift
    ns=$(ns_of "$host")
    exists "$ns" || die "no test bed (run: ci/hosts.sh up)"
    exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host" "$@" ;;
  rsh)
    host=${1:?hosts.sh rsh HOST WORDS...}
    shift
    ns=$(ns_of "$host")
    exists "$ns" || die "no test bed (run: ci/hosts.sh up)"
    exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*" ;;
  with)
    [[ $# -gt 0 ]] || die "hosts.sh with CMD..."
    trap down EXIT
    up
    set +e
    "$@"
    rc=$?
    exit "$rc" ;;
  link)
    ns=$(ns_of "${1:?hosts.sh link HOST up|down}")
    [[ "${2:-}" == up || "${2:-}" == down ]] || die "hosts.sh link HOST up|down"
    ip -n "$switch" link set "p${1#h}" "$2" ;;
  delay)
    ns=$(ns_of "${1:?hosts.sh delay HOST MS}")
    ms=${2:?hosts.sh delay HOST MS}
    [[ "$ms" =~ ^[0-9]+$ ]] || die "delay must be whole milliseconds, got '$ms'"
    ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null || true
    ip netns exec "$switch" tc qdisc del dev "p${1#h}" root 2>/dev/null || true
    if (( ms > 0 )); then
      # Both ways: the host's end of its link and the switch's.
      for at in "$ns eth0" "$switch p${1#h}"; do
        set -- $at
        if ! out=$(ip netns exec "$1" tc qdisc add dev "$2" root netem delay "${ms}ms" 2>&1); then
          [[ "$out" == *"qdisc kind is unknown"* ]] && { echo "hosts.sh: this kernel has no netem (CONFIG_NET_SCH_NETEM is not set): use throttle" >&2; exit 4; }
          die "tc netem: $out"
        fi
      done
    fi ;;
  throttle)
    ns=$(ns_of "${1:?hosts.sh throttle HOST KBIT}")
    kbit=${2:?hosts.sh throttle HOST KBIT}
    [[ "$kbit" =~ ^[0-9]+$ ]] || die "throttle must be whole kbit/s, got '$kbit'"
    port="p${1#h}"
    ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null || true
    ip netns exec "$switch" tc qdisc del dev "$port" root 2>/dev/null || true
    if (( kbit > 0 )); then
      ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "${kbit}kbit" burst 1600 latency 5s
      ip netns exec "$switch" tc qdisc add dev "$port" root tbf rate "${kbit}kbit" burst 1600 latency 5s
    fi ;;
  addr)
    ns_of "${1:?hosts.sh addr HOST}" >/dev/null
    addr_of "$1" ;;
  slurm)
    command -v slurmd >/dev/null && command -v slurmctld >/dev/null && command -v srun >/dev/null ||
      { echo "hosts.sh: Slurm is not installed (apt-get install slurmd slurmctld slurm-client)" >&2; exit 3; }
    complete || die "no test bed (run: ci/hosts.sh up)"
    dir="/tmp/${prefix}-slurm"
    rm -rf "$dir" && mkdir -p "$dir/state"
    {
      echo "ClusterName=$prefix"
      echo "SlurmctldHost=h1($subnet.1)"
      # No munge: only the bed's own hosts can reach it.
      echo "AuthType=auth/none"
      echo "CredType=cred/none"
      echo "SlurmUser=root"
      echo "SlurmctldPort=6917"
      echo "SlurmdPort=6918"
      echo "StateSaveLocation=$dir/state"
      echo "SlurmdSpoolDir=$dir/spool-%n"
      echo "SlurmctldPidFile=$dir/slurmctld.pid"
      echo "SlurmdPidFile=$dir/slurmd-%n.pid"
      echo "SlurmctldLogFile=$dir/slurmctld.log"
      echo "SlurmdLogFile=$dir/slurmd-%n.log"
      echo "ProctrackType=proctrack/linuxproc"
      echo "TaskPlugin=task/none"
      echo "MpiDefault=none"
      echo "ReturnToService=2"
      echo "SchedulerType=sched/builtin"
      echo "SelectType=select/linear"
      echo "JobAcctGatherType=jobacct_gather/none"
      echo "AccountingStorageType=accounting_storage/none"
      for h in $(seq 1 "$count"); do echo "NodeName=h$h NodeAddr=$subnet.$h CPUs=$(nproc) CoresPerSocket=$(nproc) State=UNKNOWN"; done
      echo "PartitionName=bed Nodes=$(seq -s, -f 'h%g' 1 "$count") Default=YES MaxTime=10 State=UP"
    } > "$dir/slurm.conf"
    # slurmd 22.05 needs cgroup hierarchies all of one version; this machine's processes sit in
    # v1 ones that are not mounted: each slurmd gets them mounted in a mount namespace of its own.
    printf 'CgroupPlugin=cgroup/v1\nIgnoreSystemd=yes\nCgroupAutomount=no\n' > "$dir/cgroup.conf"
    mounts='mount -t tmpfs none /sys/fs/cgroup && for c in freezer cpuset memory devices cpu cpuacct pids; do mkdir -p /sys/fs/cgroup/$c && mount -t cgroup -o $c none /sys/fs/cgroup/$c || exit 9; done'
    export SLURM_CONF="$dir/slurm.conf"
    bash "$0" exec h1 slurmctld -D -f "$SLURM_CONF" > "$dir/slurmctld.out" 2>&1 &
    for h in $(seq 1 "$count"); do
      bash "$0" exec "h$h" unshare -m sh -c "$mounts && exec slurmd -D -N h$h -f '$SLURM_CONF'" > "$dir/slurmd-h$h.out" 2>&1 &
    done
    # Until every node is idle (bounded: 30 s).
    for i in $(seq 1 60); do
      idle=$(bash "$0" exec h1 sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
      (( idle == count )) && { echo "$SLURM_CONF"; exit 0; }
      sleep 0.5
    done
    echo "hosts.sh: Slurm's nodes did not come up within 30 s: $(tail -n 2 "$dir"/slurmd-h*.out "$dir/slurmctld.out" 2>/dev/null | tr '\n' ' ')" >&2
    exit 3 ;;
  *) die "usage: hosts.sh check|up|down|exec HOST CMD...|with CMD...|link HOST up|down|delay HOST MS|throttle HOST KBIT|addr HOST|slurm" ;;
esac
