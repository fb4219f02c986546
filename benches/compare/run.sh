#!/bin/bash
# Run ferry and every peer side by side, in ALTERNATING repetitions: each
# repetition runs every peer once, in turn (A B C ... A B C ...), so slow
# drifts in machine load hit all of them alike.  Every run waits for an idle
# machine first (wait_quiet.sh) and is pinned to cores 0 and 1.
#
# Usage: run.sh [--suite p2p|coll] [--reps N] [--quick] [--out DIR] [--peers "id id ..."]
#   --suite p2p (default): latency, bandwidth, message rate;
#   --suite coll: the collectives (barrier ... ialltoall, see COLL_BENCHES).
#   writes DIR/rep<N>/<peer>.<bench>.txt (bench: lat, bw, mr; or a
#   collective's name), each in the
#   ferry-bench format ('#' headers, the last one naming the columns, then
#   rows `size value ...`), plus DIR/runs.log (commands, waits, failures).
# Needs: ${CARGO_TARGET_DIR:-target}/release/{ferry-bench,ferryrun}, build/*.ompi|*.mpich (make),
#        ucx_perftest, fi_pingpong; for the ferry_mpi peer, build/*.ferry
#        (make ferry FERRY_MPICC=PREFIX/bin/mpicc) and FERRY_MPI_PREFIX=PREFIX
#        (ci/mpi-install.sh PREFIX), whose mpiexec runs them.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
REPS=5 QUICK=0 OUT=$ROOT/docs/perf/raw PEERS="" SUITE=p2p
while [ $# -gt 0 ]; do
  case $1 in
    --reps) REPS=$2; shift 2;;
    --quick) QUICK=1; shift;;
    --out) OUT=$2; shift 2;;
    --peers) PEERS=$2; shift 2;;
    --suite) SUITE=$2; shift 2;;
    *) echo "run.sh: unknown option $1" >&2; exit 2;;
  esac
done
BIN=${COMPARE_BUILD:-$HERE/build}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
case $TARGET in /*) ;; *) TARGET=$ROOT/$TARGET;; esac
FB=$TARGET/release/ferry-bench
FR=$TARGET/release/ferryrun
LOG=$OUT/runs.log
mkdir -p "$OUT"
: > "$LOG"

if [ $QUICK = 1 ]; then
  LAT_SIZES=8,1024,65536,1048576
  BW_SIZES=8,65536,1048576,4194304
  UCX_LAT=$LAT_SIZES UCX_BW=$BW_SIZES NET_LAT=8,65536 NET_BW=8,1048576 FI_SHM=8,65536 FI_TCP=8
  DIV=10
else
  LAT_SIZES=0,8,64,512,1024,4096,8192,16384,65536,262144,1048576,4194304
  BW_SIZES=8,64,512,4096,8192,65536,262144,1048576,4194304
  UCX_LAT=8,64,1024,8192,65536,262144,1048576,4194304
  UCX_BW=8,4096,65536,262144,1048576,4194304
  NET_LAT=8,1024,65536,1048576 NET_BW=8,65536,1048576,4194304
  FI_SHM=8,1024,65536,1048576,4194304 FI_TCP=8,65536,1048576
  DIV=1
fi
MR_SIZES=8

OMPI="mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core --map-by core"
MPICH="mpiexec.hydra -n 2 -bind-to core"
PIN='exec taskset -c $PMI_RANK "$0" "$@"'
UCX_PORT=${UCX_PORT:-13337}
FI_PORT=47592

log() { echo "$(date -u +%T) $*" >>"$LOG"; }
quiet() { "$HERE/wait_quiet.sh" 2>>"$LOG" || log "NOISY: $1 ran on a busy machine"; }

# run_to FILE CMD...: run a timed command, stdout to FILE, stderr to FILE.err
run_to() {
  local f=$1; shift
  echo "# cmd: $*" >"$f"
  log "run $(basename "$f"): $*"
  timeout 600 "$@" >>"$f" 2>"$f.err" || log "FAILED ($?): $(basename "$f")"
  [ -s "$f.err" ] || rm -f "$f.err"
}

# (grep without -q: it would close the pipe early, and pipefail would turn
# ferry-bench's SIGPIPE into "no")
have_mbw_mr() { "$FB" --help 2>&1 | grep '^ *mbw-mr' >/dev/null; }

# ---- peers -----------------------------------------------------------------
# each peer function takes: OUTDIR
ferry_common() { # label env...
  local d=$1 name=$2; shift 2
  quiet "$name.lat"; run_to "$d/$name.lat.txt" env "$@" "$FR" -n 2 --timeout 600 sh -c "$PIN" "$FB" latency --sizes "$LAT_SIZES"
  quiet "$name.bw";  run_to "$d/$name.bw.txt"  env "$@" "$FR" -n 2 --timeout 600 sh -c "$PIN" "$FB" bw --sizes "$BW_SIZES"
  if have_mbw_mr; then
    quiet "$name.mr"; run_to "$d/$name.mr.txt" env "$@" "$FR" -n 2 --timeout 600 sh -c "$PIN" "$FB" mbw-mr --sizes "$MR_SIZES"
  fi
}
peer_ferry()       { ferry_common "$1" ferry FERRY_DEVICE=shm; }  # CMA chosen by the setup-time probe
peer_ferry_cma()   { ferry_common "$1" ferry-cma FERRY_DEVICE=shm FERRY_SHM_CMA=1; }

mpi_common() { # dir name suffix launcher...
  local d=$1 name=$2 suf=$3; shift 3
  quiet "$name.lat"; run_to "$d/$name.lat.txt" "$@" "$BIN/mpi_latency.$suf" "$LAT_SIZES"
  quiet "$name.bw";  run_to "$d/$name.bw.txt"  "$@" "$BIN/mpi_bw.$suf" "$BW_SIZES"
  quiet "$name.mr";  run_to "$d/$name.mr.txt"  "$@" "$BIN/mpi_mbw_mr.$suf" "$MR_SIZES"
}
peer_ompi_vader() { mpi_common "$1" ompi-vader ompi $OMPI --mca pml ob1 --mca btl self,vader; }
peer_ompi_ucx()   { mpi_common "$1" ompi-ucx ompi $OMPI --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any; }
peer_mpich()      { mpi_common "$1" mpich mpich $MPICH; }
# The same C sources built with ferry's mpicc (libmpi_abi.so.1), run by its
# mpiexec (ferryrun) on shm, pinned as the ferry peer is: set against
# ferry-bench, the C layer's overhead.
ferry_mpiexec() {
  [ -x "${FERRY_MPI_PREFIX:-}/bin/mpiexec" ] || {
    echo "run.sh: the ferry_mpi peer needs FERRY_MPI_PREFIX=PREFIX (ci/mpi-install.sh PREFIX)" >&2; exit 2; }
  FERRY_MPIEXEC=(env FERRY_DEVICE=shm "$FERRY_MPI_PREFIX/bin/mpiexec" -n 2 --timeout 600 sh -c "$PIN")
}
peer_ferry_mpi()  { ferry_mpiexec; mpi_common "$1" ferry-mpi ferry "${FERRY_MPIEXEC[@]}"; }

wait_port() { # wait until a server listens on TCP port $1 (ss from iproute2; without it, just wait 1 s)
  command -v ss >/dev/null || { sleep 1; return 0; }
  for _ in $(seq 200); do ss -ltn 2>/dev/null | grep -q ":$1 " && return 0; sleep 0.05; done; return 1
}

ucx_iters() { # test size -> "-n N -w W"
  local n
  case $1 in
    tag_lat) if [ $2 -le 8192 ]; then n=100000; elif [ $2 -le 262144 ]; then n=10000; elif [ $2 -le 1048576 ]; then n=1000; else n=300; fi;;
    tag_bw)  if [ $2 -le 8192 ]; then n=200000; elif [ $2 -le 262144 ]; then n=20000; elif [ $2 -le 1048576 ]; then n=2000; else n=500; fi;;
  esac
  [ "$3" = tcp ] && n=$((n / 10))
  n=$((n / DIV)); [ $n -lt 50 ] && n=50
  echo "-n $n -w $((n / 10))"
}
# one ucx_perftest client/server pair per size; server on core 0, client on core 1
ucx_run() { # dir name tls test sizes
  local d=$1 name=$2 tls=$3 test=$4 sizes=$5 f
  if [ $test = tag_lat ]; then f=$d/$name.lat.txt; else f=$d/$name.bw.txt; fi
  echo "# ucx_perftest -t $test, UCX_TLS=$tls, server taskset -c 0, client taskset -c 1" >"$f"
  if [ $test = tag_lat ]; then echo "# size avg_us p50_us" >>"$f"; else echo "# size MB/s msgs/s" >>"$f"; fi
  local s
  for s in ${sizes//,/ }; do
    quiet "$name.$test.$s"
    local it; it=$(ucx_iters $test $s $tls)
    UCX_TLS=$tls timeout 120 taskset -c 0 ucx_perftest -p $UCX_PORT -c 0 >>"$LOG" 2>&1 &
    local spid=$!
    wait_port $UCX_PORT || log "ucx server did not listen ($name $test $s)"
    log "run $name $test $s: UCX_TLS=$tls taskset -c 1 ucx_perftest localhost -p $UCX_PORT -t $test -s $s $it -c 1 -f -v"
    local line
    line=$(UCX_TLS=$tls timeout 120 taskset -c 1 ucx_perftest localhost -p $UCX_PORT -t $test -s $s $it -c 1 -f -v 2>>"$LOG" | tail -1) \
      || log "ucx_perftest client failed ($name $test $s)"
    wait $spid || log "ucx_perftest server exited with $? ($name $test $s)"
    # iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw(MiB/s),overall_bw,avg_mr,overall_mr
    IFS=, read -r _ p50 _ overall _ obw _ omr <<<"$line"
    case "$overall" in ''|*[!0-9.]*) log "FAILED: $name $test $s: '$line'"; continue;; esac
    if [ $test = tag_lat ]; then
      echo "  $s $overall $p50" >>"$f"
    else
      awk -v s=$s -v b=$obw -v m=$omr 'BEGIN{printf "  %s %.1f %.1f\n", s, b*1.048576, m}' >>"$f"
    fi
  done
}
ucx_common() { # dir name tls latsizes bwsizes
  ucx_run "$1" "$2" "$3" tag_lat "$4"
  ucx_run "$1" "$2" "$3" tag_bw "$5"
}
peer_ucx_posix_cma() { ucx_common "$1" ucx-posix-cma posix,cma "$UCX_LAT" "$UCX_BW"; }
peer_ucx_sysv()      { ucx_common "$1" ucx-sysv sysv "$UCX_LAT" "$UCX_BW"; }
peer_ucx_tcp()       { ucx_common "$1" ucx-tcp tcp "$NET_LAT" "$NET_BW"; }

fi_iters() { local n; if [ $1 -le 8192 ]; then n=20000; elif [ $1 -le 262144 ]; then n=2000; elif [ $1 -le 1048576 ]; then n=200; else n=100; fi; n=$((n / DIV)); [ $n -lt 20 ] && n=20; echo $n; }
fi_run() { # dir name provider sizes
  local d=$1 name=$2 prov=$3 sizes=$4 f=$1/$2.lat.txt s
  echo "# fi_pingpong -p '$prov' -e rdm -m tagged; server taskset -c 0, client taskset -c 1 (no warm-up: setup is inside the timing)" >"$f"
  echo "# size avg_us" >>"$f"
  for s in ${sizes//,/ }; do
    quiet "$name.$s"
    local args=(-p "$prov" -e rdm -m tagged -I "$(fi_iters $s)" -S "$s")
    timeout 120 taskset -c 0 fi_pingpong "${args[@]}" >>"$LOG" 2>&1 &
    local spid=$!
    wait_port $FI_PORT || log "fi_pingpong server did not listen ($name $s)"
    log "run $name $s: taskset -c 1 fi_pingpong ${args[*]} 127.0.0.1"
    local line
    line=$(timeout 120 taskset -c 1 fi_pingpong "${args[@]}" 127.0.0.1 2>>"$LOG" | tail -1) \
      || log "fi_pingpong client failed ($name $s)"
    wait $spid || log "fi_pingpong server exited with $? ($name $s)"
    # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
    set -- $line
    case "${7:-}" in ''|*[!0-9.]*) log "FAILED: $name $s: '$line'"; continue;; esac
    echo "  $s $7" >>"$f"
  done
}
peer_fi_shm() { fi_run "$1" fi-shm shm "$FI_SHM"; }
peer_fi_tcp() { fi_run "$1" fi-tcp-rxm "tcp;ofi_rxm" "$FI_TCP"; }

# ---- collectives (--suite coll) ----------------------------------------------
# each coll_<peer> function takes: OUTDIR; writes <peer>.<bench>.txt per bench
COLL_BENCHES="barrier bcast reduce allreduce allgather alltoall ibarrier ibcast iallreduce ialltoall"
if [ $QUICK = 1 ]; then COLL_SIZES=8,1048576; else COLL_SIZES=8,64,512,4096,32768,262144,1048576; fi
BLOCK_SECS=2  # ibarrier: how long rank 0 stays blocked in the wait whose CPU share is measured
coll_sizes() { case $1 in barrier|ibarrier) echo 0;; *) echo "$COLL_SIZES";; esac; }

coll_ferry_common() { # dir name env-assignment... -- extra-ferry-bench-args...
  local d=$1 name=$2 b; shift 2
  local envs=(FERRY_DEVICE=shm)
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  for b in $COLL_BENCHES; do
    local extra=("$@")
    case $b in
      i*) [ ${#extra[@]} -gt 0 ] && continue  # the persistent form has no nonblocking subcommands
          extra=(--block-secs "$BLOCK_SECS");;
    esac
    quiet "$name.$b"
    run_to "$d/$name.$b.txt" env "${envs[@]}" "$FR" -n 2 --timeout 600 sh -c "$PIN" "$FB" "$b" \
      --sizes "$(coll_sizes "$b")" "${extra[@]}"
  done
}
coll_ferry()            { coll_ferry_common "$1" ferry; }
coll_ferry_persistent() { coll_ferry_common "$1" ferry-persistent -- --persistent; }
# every collective point-to-point, without the shm device's node collectives
coll_ferry_p2p()        { coll_ferry_common "$1" ferry-p2p FERRY_COLL_NODE=0; }
# with ferry's progress thread (it shares its rank's pinned core)
coll_ferry_async()      { coll_ferry_common "$1" ferry-async FERRY_ASYNC_PROGRESS=1; }

coll_mpi_common() { # dir name suffix launcher...
  local d=$1 name=$2 suf=$3 b; shift 3
  for b in $COLL_BENCHES; do
    quiet "$name.$b"
    case $b in
      i*) run_to "$d/$name.$b.txt" "$@" "$BIN/mpi_nbc.$suf" "$b" "$(coll_sizes "$b")" 0 -1 "$BLOCK_SECS";;
      *)  run_to "$d/$name.$b.txt" "$@" "$BIN/mpi_coll.$suf" "$b" "$(coll_sizes "$b")";;
    esac
  done
}
# the floor under any barrier here: two pinned threads, one cache line each
# way (no MPI; shown for reference next to the barrier target)
coll_floor() {
  quiet floor.barrier
  run_to "$1/floor.barrier.txt" "$BIN/floor_barrier" 0 1
}
coll_ompi()       { coll_mpi_common "$1" ompi ompi $OMPI; }
coll_ompi_vader() { coll_mpi_common "$1" ompi-vader ompi $OMPI --mca pml ob1 --mca btl vader,self; }
coll_mpich()      { coll_mpi_common "$1" mpich mpich $MPICH; }
coll_ferry_mpi()  { ferry_mpiexec; coll_mpi_common "$1" ferry-mpi ferry "${FERRY_MPIEXEC[@]}"; }
# Open MPI's UCC collectives, if this Open MPI has the coll/ucc component:
# probed once per run; without it, the peer is skipped and the reason logged
# (report.py reads the SKIPPED line).
OMPI_UCC=(--mca coll ucc,tuned,libnbc,basic,self --mca coll_ucc_enable 1 --mca coll_ucc_priority 100)
UCC_PROBED=""
coll_ompi_ucc() {
  if [ -z "$UCC_PROBED" ]; then
    local why
    if why=$(timeout 60 $OMPI "${OMPI_UCC[@]}" "$BIN/mpi_coll.ompi" barrier 0 10 1 2>&1); then
      UCC_PROBED=yes
    else
      UCC_PROBED=no
      local first comp
      first=$(grep -m1 "component was not found" <<<"$why" || grep -m1 -i "error" <<<"$why" || true)
      first=${first%%  This*}
      comp=$(grep -m2 -E "^(Framework|Component):" <<<"$why" | tr -s ' ' | paste -sd, - || true)
      log "SKIPPED: ompi_ucc: mpirun ${OMPI_UCC[*]} does not start here: ${first:-no message}${comp:+ ($comp)}"
    fi
  fi
  [ "$UCC_PROBED" = yes ] || return 0
  coll_mpi_common "$1" ompi-ucc ompi $OMPI "${OMPI_UCC[@]}"
}

case $SUITE in
  p2p)  ALL="ferry ferry_mpi ompi_vader ompi_ucx mpich ucx_posix_cma ucx_sysv ferry_cma fi_shm ucx_tcp fi_tcp" PREFIX=peer;;
  coll) ALL="ferry ferry_mpi ompi ompi_vader mpich ompi_ucc ferry_persistent ferry_p2p ferry_async floor" PREFIX=coll;;
  *) echo "run.sh: unknown suite '$SUITE' (p2p or coll)" >&2; exit 2;;
esac
PEERS=${PEERS:-$ALL}
for p in $PEERS; do
  declare -F "${PREFIX}_$p" >/dev/null || { echo "run.sh: no peer '$p' in suite $SUITE (known: $ALL)" >&2; exit 2; }
done
log "compare run: suite=$SUITE reps=$REPS quick=$QUICK peers: $PEERS"
for rep in $(seq "$REPS"); do
  d=$OUT/rep$rep; rm -rf "$d"; mkdir -p "$d"
  for p in $PEERS; do
    log "== rep $rep peer $p"
    "${PREFIX}_$p" "$d"
  done
  log "rep $rep done"
  echo "compare: repetition $rep/$REPS done $(date -u +%T)" >&2
done
