#!/bin/sh
# ci/vm/cluster-hosts.sh — inside the Soft-RoCE VM (ci/softroce.sh): two
# "hosts", ferry-h0 and ferry-h1, for jobs that MPICH's Hydra launches across
# hosts through ci/cluster/ns-ssh, as ci/cluster.sh does on the host machine;
# then runs the command given (the cluster test binary built with the
# `verbs` and `cluster` features).
#   sh ci/vm/cluster-hosts.sh COMMAND [ARGS...]
#
# Each host is a UTS namespace with its own hostname, so ferry sees two nodes
# (shared memory inside each, verbs between them). They share the VM's
# network namespace and its one rxe device, rxe0: the VM kernel's rxe (Linux
# 6.1) sends RoCE packets only from the initial network namespace (a QP of an
# rxe device whose netdev is in another namespace fails with "local QP
# operation error"), rxe devices cannot be moved into one ("rdma dev set ...
# netns": Operation not supported), and two rxe devices of one kernel do not
# reach each other (locally routed packets arrive on lo, which no rxe device
# serves). So the verbs traffic between the hosts is rxe0's loopback.
# Busybox's sh, awk, unshare and nsenter are enough.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
dir=/tmp/ferry-cluster
rm -rf "$dir"
mkdir -p "$dir"
: >"$dir/hosts"
for i in 0 1; do
  : >"$dir/h$i.uts"
  unshare --uts="$dir/h$i.uts" hostname "ferry-h$i"
  echo "ferry-h$i - $dir/h$i.uts $FERRY_VM_IP FERRY_VERBS_DEVICE=rxe0" >>"$dir/hosts"
done
echo "[cluster] hosts:"
sed 's/^/[cluster]   /' "$dir/hosts"
export FERRY_CLUSTER_DIR="$dir" FERRY_CLUSTER_IFACE=dummy0 FERRY_TEST_HYDRA="$here/cluster/mpiexec"
# Four ranks on the VM's two emulated vCPUs: the `communicators` body took
# 210 s here with the node collectives (69 s without them, 38 s on verbs
# alone) on a loaded host, past the harness's 90 s.
export FERRY_TEST_JOB_TIMEOUT=${FERRY_TEST_JOB_TIMEOUT:-400}
status=0
"$@" || status=$?
for i in 0 1; do umount "$dir/h$i.uts" 2>/dev/null || true; done
exit $status
