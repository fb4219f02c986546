#!/usr/bin/env bash
# ci/slurm.sh — ferry under Slurm's `srun --mpi=pmi2`, on a one-node cluster
# made on this machine for the run.
#
# 1. Installs Debian's slurmctld, slurmd, slurm-client and munge (through
#    ci/lib/packages.sh) and builds ferry-conformance and ferry-bench.
# 2. Writes a one-node configuration into a temporary directory: this host
#    (hostname -s) with this machine's CPUs, proctrack/linuxproc and
#    task/none (no systemd or cgroup needed), spool and state in the temp
#    directory, private ports, munge on a private socket. Starts munged,
#    slurmctld and slurmd directly (we are root in a container without
#    systemd) and waits for the node to be idle; on a timeout it prints the
#    daemons' logs.
# 3. Runs real jobs, every one with --mpi=pmi2 and --overcommit (4 tasks
#    on 2 cores): every conformance body on 4 ranks (message exchange
#    across all ranks, results checked by the bodies), each rank checked to
#    have spoken PMI-2; then `ferry-bench latency --sizes 8` on 2 ranks.
# 4. Reports what `srun --mpi=list` offers (PMIx among it or not); ferry
#    has no PMIx client, so nothing runs over it.
#
# The daemons are stopped and the directory removed on every exit path.
# Env: FERRY_SLURM_KEEP=1 keeps the directory (logs) for a look afterwards;
# FERRY_SLURM_BODIES="a b" runs only those conformance bodies.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh
ci_fail_trap ci/slurm.sh

say() { printf '[slurm] %s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || { say "error: the daemons run as root here (SlurmUser=root); run as root"; exit 1; }

say "packages"
ci_packages_ensure slurmctld slurmd slurm-client munge \
  || { say "error: cannot install Slurm and munge (see above)"; exit 1; }
for tool in munged slurmctld slurmd srun sinfo scontrol; do
  command -v "$tool" >/dev/null || { say "error: $tool is not on PATH after installing Slurm"; exit 1; }
done

say "build: ferry-conformance and ferry-bench (release)"
export CARGO_PROFILE_RELEASE_LTO=${CARGO_PROFILE_RELEASE_LTO:-false}
cargo build --release --locked -p ferry-tests --bin ferry-conformance -p ferry-bench --bin ferry-bench
target=${CARGO_TARGET_DIR:-target}
conformance=$(realpath "$target/release/ferry-conformance")
bench=$(realpath "$target/release/ferry-bench")

dir=$(mktemp -d /tmp/ferry-slurm.XXXXXX)
chmod 755 "$dir"
pids=()
cleanup() {
  local rc=$? p
  # Killing a daemon that is already gone is not a failure of the script.
  trap - ERR
  set +e
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  if [ "${FERRY_SLURM_KEEP:-0}" = 1 ]; then
    say "kept $dir"
  else
    rm -rf "$dir"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

logs() {
  local f
  for f in "$dir"/munged.log "$dir"/slurmctld.log "$dir"/slurmd.log; do
    [ -f "$f" ] || continue
    printf '\n----- %s (last 60 lines)\n' "$f" >&2
    tail -n 60 "$f" >&2
  done
}

host=$(hostname -s)
cpus=$(nproc)
# Private ports, so that a Slurm already on this machine is not disturbed.
ctld_port=${FERRY_SLURM_CTLD_PORT:-16817}
slurmd_port=${FERRY_SLURM_SLURMD_PORT:-16818}
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
# munged wants its socket directory reachable by every user (the key file
# itself stays 0400).
chmod 755 "$dir/munge"

say "munged (socket $dir/munge/socket)"
# The package's key if it made one, else a fresh one for this run.
if [ -r /etc/munge/munge.key ]; then
  install -m 400 /etc/munge/munge.key "$dir/munge/key"
else
  dd if=/dev/urandom of="$dir/munge/key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/key"
fi
munged --force --foreground --socket="$dir/munge/socket" --key-file="$dir/munge/key" \
  --pid-file="$dir/munge/pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed" \
  >>"$dir/munged.log" 2>&1 &
pids+=($!)

cat >"$dir/slurm.conf" <<EOF
ClusterName=ferryci
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No systemd or cgroup here: plain /proc process tracking, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=ferry Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF="$dir/slurm.conf"

for _ in $(seq 50); do [ -S "$dir/munge/socket" ] && break; sleep 0.1; done
[ -S "$dir/munge/socket" ] || { say "error: munged did not create its socket"; logs; exit 1; }

say "slurmctld and slurmd ($host, $cpus CPUs)"
slurmctld -D -i -f "$SLURM_CONF" >>"$dir/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" >>"$dir/slurmd.out" 2>&1 &
pids+=($!)

say "waiting for node $host to be idle"
state=""
for _ in $(seq 120); do
  state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
  [ "$state" = idle ] && break
  for p in "${pids[@]}"; do
    kill -0 "$p" 2>/dev/null || { say "error: a daemon (pid $p) exited during startup"; logs; cat "$dir"/*.out >&2 || true; exit 1; }
  done
  sleep 0.5
done
if [ "$state" != idle ]; then
  say "error: node $host is '${state:-unknown}' after 60 s, not idle"
  scontrol show node "$host" >&2 || true
  logs
  cat "$dir"/*.out >&2 || true
  exit 1
fi
say "node $host is idle"

say "srun --mpi=list"
srun --mpi=list 2>&1 | sed 's/^/[slurm]   /' >&2 || true

# Every job: PMI-2, 4 tasks may share 2 cores, a time limit in minutes.
run() { srun --mpi=pmi2 --overcommit --time=5 --kill-on-bad-exit=1 "$@"; }

say "PMI-2 is chosen by itself: every rank sees PMI_JOBID and speaks PMI-2"
out=$(run -n 4 env FERRY_LOG=debug "$conformance" p2p_blocking 2>&1) \
  || { printf '%s\n' "$out" >&2; say "error: the first job failed"; logs; exit 1; }
printf '%s\n' "$out" | grep -c 'rank [0-3] of 4: ok' | grep -qx 4 \
  || { printf '%s\n' "$out" >&2; say "error: not every rank of p2p_blocking passed"; exit 1; }
printf '%s\n' "$out" | grep 'launched by a PMI server' | grep -c 'version=V2' | grep -qx 4 \
  || { printf '%s\n' "$out" >&2; say "error: not every rank chose PMI-2 by itself"; exit 1; }
printf '%s\n' "$out" | grep 'launched by a PMI server' | head -n 1 | sed 's/^/[slurm]   /' >&2
run -n 4 sh -c 'echo "rank $PMI_RANK: PMI_JOBID=${PMI_JOBID:-unset} SLURM_MPI_TYPE=${SLURM_MPI_TYPE:-unset} PMI_FD=${PMI_FD:-unset}"' \
  | sort | sed 's/^/[slurm]   /' >&2

bodies=${FERRY_SLURM_BODIES:-}
if [ -z "$bodies" ]; then
  # The runner names its bodies when asked for one it does not know.
  bodies=$("$conformance" __list__ 2>&1 | sed -n 's/.*; bodies: //p' || true)
  [ -n "$bodies" ] || { say "error: ferry-conformance did not list its bodies"; exit 1; }
fi
passed=0 failed=0 failed_names=()
for body in $bodies; do
  start=$SECONDS
  if out=$(run -n 4 "$conformance" "$body" 2>&1) \
    && [ "$(printf '%s\n' "$out" | grep -cE "$body rank [0-3] of 4: (ok|skip)")" = 4 ]; then
    passed=$((passed + 1))
    printf '[slurm]   %-32s ok (%d s)%s\n' "$body" $((SECONDS - start)) \
      "$(printf '%s\n' "$out" | grep -q ': skip:' && echo ', skipped by capability' || true)" >&2
  else
    failed=$((failed + 1))
    failed_names+=("$body")
    printf '[slurm]   %-32s FAILED\n' "$body" >&2
    printf '%s\n' "$out" | tail -n 20 | sed 's/^/[slurm]     /' >&2
  fi
done
say "conformance under srun --mpi=pmi2 -n 4: $passed passed, $failed failed"

say "ferry-bench latency --sizes 8 on 2 ranks"
bench_out=$(run -n 2 "$bench" latency --sizes 8 2>&1) \
  || { printf '%s\n' "$bench_out" >&2; say "error: the bench job failed"; logs; exit 1; }
printf '%s\n' "$bench_out" | sed 's/^/[slurm]   /' >&2

if [ "$failed" -gt 0 ]; then
  say "error: conformance bodies failed under srun: ${failed_names[*]}"
  logs
  exit 1
fi
printf '%d passed, %d failed\n' "$passed" "$failed"
