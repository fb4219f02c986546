#!/usr/bin/env bash
# ci/cluster.sh — a throw-away cluster of "hosts" on this machine, and ferry's
# multi-host jobs on it, launched by MPICH's Hydra over its real multi-host
# path (host list, one proxy per host, PMI across hosts).
#
# Each host is a Linux network namespace plus a UTS namespace (its own
# hostname, ferry-h0, ferry-h1, ...), with one veth link (eth0, 10.77.0.N/24)
# to a bridge in a switch namespace. The addresses exist only inside those
# namespaces. Hydra runs on the first host; its ssh launcher is pointed at
# ci/cluster/ns-ssh, which enters the target host's namespaces instead of
# logging in. The hosts share this machine's file systems (binaries, /dev/shm)
# but not their network or hostname, so ferry sees different nodes by itself
# (FERRY_DEVICE=auto, no FERRY_RANKS_PER_NODE): shared memory inside a host,
# libfabric tcp;ofi_rxm across the veth link.
#
# Usage: ci/cluster.sh [--hosts N] [--ppn K] [test | shell | run CMD...]
#   test (default)  build ferry with ofi, bring the cluster up, run ferry-info
#                   on each host and as a job, the conformance suite (it holds
#                   the collectives and communicators) with K ranks per host,
#                   and a bench across hosts; tear the cluster down.
#   run CMD...      bring the cluster up, run CMD with FERRY_CLUSTER_DIR set
#                   (ci/cluster/mpiexec -n 4 PROGRAM starts a job), tear down.
#   shell           the same with an interactive shell.
# --hosts N (default 2), --ppn K ranks per host (default 2).
#
# Needs root (network namespaces), iproute2 and util-linux (ip, nsenter,
# unshare), mpich (mpiexec.hydra), and what the ofi feature needs; it
# installs the packages that are missing. The cluster is torn down on every
# exit path, failures included (namespaces, veth links, processes left in
# them, the UTS bind mounts). Honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh
ci_fail_trap ci/cluster.sh
ROOT=$PWD

HOSTS=2 PPN=2 ACTION=test
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) HOSTS=$2; shift 2 ;;
    --ppn) PPN=$2; shift 2 ;;
    test|shell) ACTION=$1; shift ;;
    run) ACTION=run; shift; break ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "cluster: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case $HOSTS in ''|*[!0-9]*) echo "cluster: --hosts takes a number" >&2; exit 2 ;; esac
case $PPN in ''|*[!0-9]*) echo "cluster: --ppn takes a number" >&2; exit 2 ;; esac
[ "$HOSTS" -ge 2 ] && [ "$HOSTS" -le 200 ] || { echo "cluster: --hosts must be 2..200" >&2; exit 2; }
[ "$ACTION" != run ] || [ $# -gt 0 ] || { echo "cluster: run needs a command" >&2; exit 2; }

step() { printf '\n=== %s\n' "$*"; }

if [ "$(id -u)" != 0 ]; then
  echo "cluster: network namespaces need root; run as root or through sudo" >&2
  exit 1
fi

step "system packages"
ci_packages_ensure iproute2 util-linux mpich
for tool in ip nsenter unshare mpiexec.hydra; do
  command -v "$tool" >/dev/null || { echo "cluster: $tool is missing after the package install" >&2; exit 1; }
done

# One cluster per run: its namespaces carry this run's id, so two runs (or a
# leftover of a killed one) never collide.
ID=fc$$
DIR=$(mktemp -d "/run/ferry-cluster-$ID.XXXXXX" 2>/dev/null || mktemp -d "/tmp/ferry-cluster-$ID.XXXXXX")
SWITCH=$ID-sw
export FERRY_CLUSTER_DIR=$DIR FERRY_CLUSTER_PPN=$PPN

teardown() {
  local rc=$? ns
  set +e
  for ns in $(ip netns list 2>/dev/null | awk -v p="$ID-" 'index($1, p) == 1 { print $1 }'); do
    # Processes still in a host (a hung rank, a Hydra proxy) die with it.
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns delete "$ns" 2>/dev/null || echo "cluster: could not delete namespace $ns" >&2
  done
  for f in "$DIR"/*.uts; do
    [ -e "$f" ] && { umount "$f" 2>/dev/null || echo "cluster: could not unmount $f" >&2; }
  done
  rm -rf "$DIR"
  return $rc
}
trap teardown EXIT
trap 'exit 130' INT TERM

step "cluster $ID: $HOSTS hosts, $PPN ranks each, in $DIR"
ip netns add "$SWITCH"
# No spanning tree: a port forwards as soon as its link is up.
ip -n "$SWITCH" link add br0 type bridge stp_state 0
ip -n "$SWITCH" link set br0 up
: >"$DIR/hosts"
for ((i = 0; i < HOSTS; i++)); do
  name=ferry-h$i ns=$ID-h$i uts=$DIR/h$i.uts addr=10.77.$((i / 250)).$((i % 250 + 1))
  ip netns add "$ns"
  ip -n "$SWITCH" link add "p$i" type veth peer name eth0 netns "$ns"
  ip -n "$SWITCH" link set "p$i" master br0 up
  ip -n "$ns" addr add "$addr/16" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  # A UTS namespace kept alive by a bind mount, so every process started
  # in this host later sees its hostname.
  : >"$uts"
  unshare --uts="$uts" hostname "$name"
  echo "$name $ns $uts $addr" >>"$DIR/hosts"
  echo "  $name: $addr (namespace $ns)"
done
ci/cluster/ns-ssh ferry-h1 'hostname; ip -brief addr show eth0'

case $ACTION in
  run) "$@"; exit ;;
  shell) PS1='cluster$ ' bash -i; exit ;;
esac

step "build ferry with the ofi device"
ci_packages_ensure libfabric-dev libfabric-bin clang libclang-dev pkg-config
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
cargo build --locked -p ferry --features ofi --bin ferry-info
cargo build --locked -p ferry-bench --features ofi --release --bin ferry-bench
BIN=$TARGET/debug
export FERRY_DEVICE=auto FERRY_OFI_PROVIDER='tcp;ofi_rxm'

step "ferry-info on each host"
for ((i = 0; i < HOSTS; i++)); do
  ci/cluster/ns-ssh "ferry-h$i" "echo '--- ferry-h$i'; '$BIN/ferry-info' | sed -n '/^devices/,/^shm segment/p'"
done

step "ferry-info as a job: $((HOSTS * PPN)) ranks, $PPN per host"
info=$(MPIEXEC_TIMEOUT=120 ci/cluster/mpiexec -n $((HOSTS * PPN)) "$BIN/ferry-info")
echo "$info"
# Every host appears, with its own ranks on shm and the others on ofi.
for ((i = 0; i < HOSTS; i++)); do
  echo "$info" | grep -q " ferry-h$i " || { echo "cluster: no rank reported host ferry-h$i" >&2; exit 1; }
done
echo "$info" | awk '$2 ~ /^ferry-h/ && $4 != "shm+ofi" { bad = 1; print "cluster: rank " $1 " runs on " $4 ", not shm+ofi" > "/dev/stderr" } END { exit bad }'

step "conformance suite across hosts (Hydra, $((HOSTS * PPN)) ranks, shm inside a host, tcp;ofi_rxm across)"
FERRY_TEST_HYDRA=$ROOT/ci/cluster/mpiexec FERRY_CLUSTER_RANKS=$((HOSTS * PPN)) \
  cargo test --locked -p ferry-tests --features ofi,cluster --test cluster -- --test-threads=1

step "bench across hosts: 8 B and 1 MiB between ferry-h0 and ferry-h1"
FERRY_CLUSTER_PPN=1 MPIEXEC_TIMEOUT=120 ci/cluster/mpiexec -n 2 \
  "$TARGET/release/ferry-bench" latency --sizes 8,65536 --iters 2000
FERRY_CLUSTER_PPN=1 MPIEXEC_TIMEOUT=120 ci/cluster/mpiexec -n 2 \
  "$TARGET/release/ferry-bench" bw --sizes 8,1048576 --iters 200 --validate

step "cluster: all passed"
